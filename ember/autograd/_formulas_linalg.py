"""Backward formulas for the ops in ember/_C/matmul.pyx and conv.pyx.

Each formula is ``backward(ctx, grad)`` (see ember/autograd/_table.py) and
returns one gradient per input (None where not needed or the input does not
require grad).  Formulas use only ember's public tensor API
and the linalg entry points, so they are differentiable themselves."""
from ember import _memory_format as _mf
from ember._C import conv as _conv_module
from ember._C import matmul as _matmul_module
from ember.autograd._table import formula


def _mm_mod():
    return _matmul_module


def _conv_mod():
    return _conv_module


def _rg(t):
    return t is not None and getattr(t, "requires_grad", False)


def _sum_to(g, shape):
    """reduce a broadcast gradient back to `shape`"""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    if lead > 0:
        g = g.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape)


def _mm(ctx, grad):
    inputs = ctx.inputs
    a, b = inputs
    L = _mm_mod()
    return (L.mm(grad, b.t()) if _rg(a) else None, L.mm(a.t(), grad) if _rg(b) else None)


def _bmm(ctx, grad):
    inputs = ctx.inputs
    a, b = inputs
    L = _mm_mod()
    return (L.bmm(grad, b.transpose(1, 2)) if _rg(a) else None,
            L.bmm(a.transpose(1, 2), grad) if _rg(b) else None)


def _matmul(ctx, grad):
    inputs = ctx.inputs
    a, b = inputs
    L = _mm_mod()
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g = grad
    if a.ndim == 1 and b.ndim == 1:       # a dot product: a 0-d grad
        g = g.reshape(1, 1)
    elif a.ndim == 1:
        g = g.unsqueeze(-2)
    elif b.ndim == 1:
        g = g.unsqueeze(-1)
    ga = gb = None
    if _rg(a):
        ga = _sum_to(L.matmul(g, b2.transpose(-1, -2)), a2.shape).reshape(a.shape)
    if _rg(b):
        gb = _sum_to(L.matmul(a2.transpose(-1, -2), g), b2.shape).reshape(b.shape)
    return ga, gb


def _addmm(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    i, a, b = inputs
    L = _mm_mod()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.mm(grad, b.t()) * alpha if _rg(a) else None,
            L.mm(a.t(), grad) * alpha if _rg(b) else None)


def _baddbmm(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    i, a, b = inputs
    L = _mm_mod()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.bmm(grad, b.transpose(1, 2)) * alpha if _rg(a) else None,
            L.bmm(a.transpose(1, 2), grad) * alpha if _rg(b) else None)


def _addmv(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    i, a, v = inputs
    L = _mm_mod()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.outer(grad, v) * alpha if _rg(a) else None,
            L.mv(a.t(), grad) * alpha if _rg(v) else None)


def _mv(ctx, grad):
    inputs = ctx.inputs
    a, v = inputs
    L = _mm_mod()
    return (L.outer(grad, v) if _rg(a) else None, L.mv(a.t(), grad) if _rg(v) else None)


def _dot(ctx, grad):
    inputs = ctx.inputs
    a, b = inputs
    return (b * grad if _rg(a) else None, a * grad if _rg(b) else None)


def _outer(ctx, grad):
    inputs = ctx.inputs
    a, b = inputs
    L = _mm_mod()
    return (L.mv(grad, b) if _rg(a) else None, L.mv(grad.t(), a) if _rg(b) else None)


def _linear(ctx, grad):
    inputs = ctx.inputs
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    L = _mm_mod()
    g2 = grad.reshape(-1, w.shape[0]) if w.ndim == 2 else grad.reshape(-1, 1)
    x2 = x.reshape(-1, x.shape[-1])
    w2 = w if w.ndim == 2 else w.unsqueeze(0)
    gx = L.mm(g2, w2).reshape(x.shape) if _rg(x) else None
    gw = L.mm(g2.t(), x2).reshape(w.shape) if _rg(w) else None
    gb = _sum_to(grad, bias.shape) if _rg(bias) else None
    return (gx, gw) if bias is None else (gx, gw, gb)


def _channels_last(*ts):
    """a conv's layout: channels-last when one of its operands is (torch's rule)"""
    return any(_mf.suggest(t) is not _mf.contiguous_format for t in ts)


def _conv(nd):
    def f(ctx, grad):
        inputs, attrs = ctx.inputs, ctx.attrs
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        L = _conv_mod()
        kw = dict(stride=attrs["stride"], padding=attrs["padding"],
                  dilation=attrs["dilation"], groups=attrs["groups"])
        if _rg(x) and (_rg(w) or _rg(bias)) and not (
                grad.dim() == 4 and grad.is_contiguous(memory_format=_mf.channels_last)):
            grad = grad.contiguous()  # both kernels need it so: copy an expanded grad once
        gx = L.conv2d_input_grad(tuple(x.shape), w, grad, **kw) if _rg(x) else None
        if gx is not None and gx.dim() == 4 and _channels_last(x, w):
            gx = gx.contiguous(memory_format=_mf.channels_last)   # torch's layout
        gw = gb = None
        if _rg(w) or _rg(bias):
            if bias is None:   # no pass over grad for a bias gradient
                gw = L.conv2d_weight_grad(x, tuple(w.shape), grad, **kw)
            else:
                gw, gb = L.conv2d_weight_grad(x, tuple(w.shape), grad, bias_grad=True, **kw)
        return (gx, gw) if bias is None else (gx, gw, gb)
    return f


def _conv_transpose(ctx, grad):
    # y = conv_transpose(x, w) is conv2d's input-grad with (x as grad_output):
    #   dx = conv2d(grad, w), dw = conv2d_weight_grad(grad, w.shape, x)
    inputs, attrs = ctx.inputs, ctx.attrs
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    L = _conv_mod()
    kw = dict(stride=attrs["stride"], padding=attrs["padding"], dilation=attrs["dilation"],
              groups=attrs["groups"])
    conv = L.conv2d if w.ndim == 4 else L.conv1d
    gx = conv(grad, w, None, **kw) if _rg(x) else None
    gw = L.conv2d_weight_grad(grad, tuple(w.shape), x, **kw) if _rg(w) else None
    gb = None
    if _rg(bias):
        dims = (0,) + tuple(range(2, grad.ndim)) if grad.ndim == w.ndim else \
            tuple(range(1, grad.ndim))
        gb = grad.sum(dim=dims)
    return (gx, gw) if bias is None else (gx, gw, gb)


def _conv_kw(attrs):
    return dict(stride=attrs["stride"], padding=attrs["padding"], dilation=attrs["dilation"],
                groups=attrs["groups"])


def _conv_of(w):
    L = _conv_mod()
    return L.conv2d if w.ndim == 4 else L.conv1d


def _conv_input_grad(ctx, grad):
    # dx = J_x^T dy is bilinear in (w, dy): <dx, G> = <dy, conv(G, w)>.
    inputs, attrs = ctx.inputs, ctx.attrs
    w, dy = inputs
    kw = _conv_kw(attrs)
    gw = _conv_mod().conv2d_weight_grad(grad, tuple(w.shape), dy, **kw) if _rg(w) else None
    gdy = _conv_of(w)(grad, w, None, **kw) if _rg(dy) else None
    return gw, gdy


def _conv_weight_grad(ctx, grad):
    # dw is bilinear in (x, dy): <dw, H> = <dy, conv(x, H)>.
    inputs, attrs = ctx.inputs, ctx.attrs
    x, dy = inputs
    kw = _conv_kw(attrs)
    gx = _conv_mod().conv2d_input_grad(tuple(x.shape), grad, dy, **kw) if _rg(x) else None
    gdy = _conv_of(grad)(x, grad, None, **kw) if _rg(dy) else None
    return gx, gdy


def _max_pool(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    (x,) = inputs
    # the window lets a device kernel gather per input element (the same sum)
    return (_conv_mod().max_pool2d_backward(
        grad, x, attrs["indices"], attrs.get("kernel_size"), attrs.get("stride"),
        attrs.get("padding", 0), attrs.get("dilation", 1), attrs.get("ceil_mode", False)),)


def _adaptive_max_pool(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    (x,) = inputs
    return (_conv_mod().adaptive_max_pool2d_backward(grad, x, attrs["indices"]),)


def _avg_pool(ctx, grad):
    inputs, attrs = ctx.inputs, ctx.attrs
    (x,) = inputs
    return (_conv_mod().avg_pool2d_backward(grad, x, attrs["kernel_size"], attrs["stride"],
                                     attrs["padding"], attrs["ceil_mode"],
                                     attrs["count_include_pad"], attrs["divisor_override"]),)


def _adaptive_avg_pool(ctx, grad):
    inputs = ctx.inputs
    (x,) = inputs
    return (_conv_mod().adaptive_avg_pool2d_backward(grad, x),)


# unfold (im2col) and fold (col2im) are each other's gradient.  Neither reads the
# input's values (saves=False: later in-place changes to it are fine, as in PyTorch)
# and each returns exactly the input's shape and dtype.
@formula("im2col", node_name="Im2ColBackward0", exact=True, saves=False)
def _im2col(ctx, grad):
    a = ctx.attrs
    return (_conv_mod().fold(grad, a["input_size"], a["kernel_size"], a["dilation"], a["padding"],
                      a["stride"]),)


@formula("col2im", node_name="Col2ImBackward0", exact=True, saves=False)
def _col2im(ctx, grad):
    a = ctx.attrs
    return (_conv_mod().unfold(grad, a["kernel_size"], a["dilation"], a["padding"], a["stride"]),)


for _name, _fn in {
    "mm": _mm, "bmm": _bmm, "matmul": _matmul, "addmm": _addmm, "baddbmm": _baddbmm,
    "addmv": _addmv, "mv": _mv, "dot": _dot, "outer": _outer,
    "conv2d": _conv(2), "conv1d": _conv(1),
    "conv_transpose2d": _conv_transpose, "conv_transpose1d": _conv_transpose,
    "conv2d_input_grad": _conv_input_grad, "conv2d_weight_grad": _conv_weight_grad,
    "max_pool2d": _max_pool, "adaptive_max_pool2d": _adaptive_max_pool,
    "avg_pool2d": _avg_pool, "adaptive_avg_pool2d": _adaptive_avg_pool,
}.items():
    formula(_name)(_fn)
# linear's gradients are reshaped/summed to each input's shape, and the op rejects mixed
# dtypes, so the engine's per-edge fix-up check can be skipped
formula("linear", exact=True)(_linear)


# ---------------------------------------------------------------------------
# factorizations (ember/_linalg.py records them)

def _LA():
    from ember import _linalg
    return _linalg


def _t(x):
    """The adjoint (conjugate transpose): torch's formulas for complex input are the real
    ones with every transpose an adjoint (plus the few terms added below)."""
    return x.transpose(-2, -1).conj() if x.is_complex() else x.transpose(-2, -1)


def _diag_embed(v):
    import ember
    return ember.diag_embed(v)


@formula("linalg_det", save_output=True)
def _det(ctx, grad):
    LA = _LA()
    A = ctx.input(0)
    d = ctx.output
    g = (grad * (d.conj() if d.is_complex() else d)).unsqueeze(-1).unsqueeze(-1)
    if bool((d != 0).all()):
        return (g * _t(LA.inv(A)),)
    # singular: the cofactor matrix from the SVD, det(U) det(V) V diag(prod_{j!=i} s_j) U^T
    U, S, Vh = LA.svd(A)
    n = S.shape[-1]
    import ember
    others = ember.stack([ember.cat([S[..., :i], S[..., i + 1:]], -1).prod(-1)
                          for i in range(n)], -1)
    sign = LA.det(U) * LA.det(Vh)
    if sign.is_complex():
        sign = sign.conj()
    adjT = (U * others.unsqueeze(-2)) @ Vh
    return ((grad * sign).unsqueeze(-1).unsqueeze(-1) * adjT,)


@formula("linalg_slogdet", save_output=True)
def _slogdet(ctx, grad):
    gs, g = grad
    A = ctx.input(0)
    if A.is_complex() and gs is not None:
        # the sign's phase moves with A too: (g + i Im(g_sign conj(sign))) A^{-H}
        import ember
        ph = ember.imag(gs * ctx.output[0].conj())
        g = (0 if g is None else g) + ember.complex(ember.zeros_like(ph), ph)
    if g is None:
        return (None,)
    return (g.unsqueeze(-1).unsqueeze(-1) * _t(_LA().inv(A)),)


@formula("linalg_inv", save_output=True)
def _inv(ctx, grad):
    Ai = _t(ctx.output)
    return (-(Ai @ grad @ Ai),)


@formula("linalg_solve", save_output=True)
def _solve(ctx, grad):
    LA = _LA()
    A, B = ctx.inputs
    X = ctx.output
    left, vector = ctx.attrs["left"], ctx.attrs["vector"]
    if vector:
        grad, X = grad.unsqueeze(-1), X.unsqueeze(-1)
    gB = LA.solve(_t(A), grad, left=left)
    gA = None
    if ctx.needs(0):
        gA = -(gB @ _t(X)) if left else -(_t(X) @ gB)
    return gA, (gB.squeeze(-1) if vector else gB) if ctx.needs(1) else None


@formula("linalg_solve_triangular", save_output=True)
def _solve_triangular(ctx, grad):
    LA = _LA()
    A, B = ctx.inputs
    upper, left, unit = ctx.attrs["upper"], ctx.attrs["left"], ctx.attrs["unitriangular"]
    gB = LA.solve_triangular(_t(A), grad, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if ctx.needs(0):
        X = ctx.output
        gA = -(gB @ _t(X)) if left else -(_t(X) @ gB)
        gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
    return gA, gB if ctx.needs(1) else None


@formula("linalg_cholesky_ex", save_output=True)
def _cholesky(ctx, grad):
    LA = _LA()
    gL = grad
    L = ctx.output
    if ctx.attrs["upper"]:
        L, gL = _t(L), _t(gL)
    # sym(L^{-H} phi L^{-1}), phi = tril(L^H gL) with its diagonal halved
    phi = (_t(L) @ gL).tril()
    phi = phi - 0.5 * _diag_embed(phi.diagonal(0, -2, -1))
    gA = LA.solve_triangular(_t(L), phi, upper=True, left=True)
    gA = LA.solve_triangular(L, gA, upper=False, left=False)
    return (0.5 * (gA + _t(gA)),)


@formula("cholesky_solve", save_output=True)
def _cholesky_solve(ctx, grad):
    B, L = ctx.inputs
    upper = ctx.attrs["upper"]
    gB = _LA().cholesky_solve(grad, L, upper)
    gL = None
    if ctx.needs(1):
        common = gB @ _t(ctx.output)
        common = common + _t(common)
        gL = -(L @ common) if upper else -(common @ L)
    return gB if ctx.needs(0) else None, gL


@formula("cholesky_inverse", save_output=True)
def _cholesky_inverse(ctx, grad):
    L = ctx.input(0)
    Ainv = ctx.output
    common = Ainv @ (grad + _t(grad)) @ Ainv
    return (-(L @ common) if ctx.attrs["upper"] else -(common @ L),)


def _copyltu(M):
    d = M.diagonal(0, -2, -1)
    return M.tril(-1) + _t(M.tril(-1)) + _diag_embed(d.real if d.is_complex() else d)


def _qr_square_deep(Q, R, gQ, gR, LA):
    """gA for A = QR with m >= n (Q m x n, R n x n)."""
    M = 0
    if gR is not None:
        M = R @ _t(gR)
    if gQ is not None:
        M = M - _t(gQ) @ Q
    b = Q @ _copyltu(M) if not isinstance(M, int) else 0
    if gQ is not None:
        b = b + gQ
    # b R^{-T}: solve X R^T = b with R^T lower triangular
    return LA.solve_triangular(_t(R), b, upper=False, left=False)


@formula("linalg_qr", save_output=True)
def _qr(ctx, grad):
    LA = _LA()
    mode = ctx.attrs["mode"]
    Q, R = ctx.output
    gQ, gR = grad
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if m >= n:
        return (_qr_square_deep(Q, R, gQ, gR, LA),)
    import ember
    A = ctx.input(0)
    Y = A[..., m:]
    U = R[..., :m]
    gU = gR[..., :m] if gR is not None else None
    gV = gR[..., m:] if gR is not None else None
    gQ2 = gQ if gQ is not None else ember.zeros_like(Q)
    if gV is not None:
        gQ2 = gQ2 + Y @ _t(gV)
    gX = _qr_square_deep(Q, U, gQ2, gU, LA)
    gY = Q @ gV if gV is not None else ember.zeros_like(Y)
    return (ember.cat([gX, gY], -1),)


@formula("linalg_eigh", save_output=True)
def _eigh(ctx, grad):
    w, V = ctx.output
    gw, gV = grad
    if gV is None:
        return ((V * gw.unsqueeze(-2)) @ _t(V),)
    E = w.unsqueeze(-2) - w.unsqueeze(-1)
    E = E + _diag_embed(1 - E.diagonal(0, -2, -1))
    VgV = _t(V) @ gV
    inner = 0.5 * (VgV - _t(VgV)) / E
    inner = inner - _diag_embed(inner.diagonal(0, -2, -1))
    if gw is not None:
        inner = inner + _diag_embed(gw)
    return (V @ inner @ _t(V),)


@formula("linalg_eig", save_output=True)
def _eig(ctx, grad):
    # torch's linalg_eig_backward: eigenvectors of unit norm, gauge-invariant losses
    LA = _LA()
    L, V = ctx.output
    gL, gV = grad
    Vh = _t(V)
    if gV is None:
        return (LA.solve(Vh, gL.unsqueeze(-1) * Vh),)
    VhgV = Vh @ gV
    VhgV = VhgV - Vh @ (V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
    Lc = L.conj()
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
    E = E + _diag_embed(1 - E.diagonal(0, -2, -1))
    r = VhgV / E
    r = r - _diag_embed(r.diagonal(0, -2, -1))
    if gL is not None:
        r = r + _diag_embed(gL)
    return (LA.solve(Vh, r @ Vh),)


@formula("linalg_svd", save_output=True)
def _svd(ctx, grad):
    U, S, Vh = ctx.output
    gU, gS, gVh = grad
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if ctx.attrs["full_matrices"]:
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    if gU is None and gVh is None:
        return ((U * gS.unsqueeze(-2)) @ Vh,)
    V = _t(Vh)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _diag_embed(1 - E.diagonal(0, -2, -1))
    gA = 0
    if gU is not None:
        UgU = _t(U) @ gU
        gA = (UgU - _t(UgU)) * S.unsqueeze(-2)
    if gVh is not None:
        gV = _t(gVh)
        VgV = _t(V) @ gV
        gA = gA + S.unsqueeze(-1) * (VgV - _t(VgV))
    gA = gA / E
    gA = gA - _diag_embed(gA.diagonal(0, -2, -1))
    if gS is not None:
        gA = gA + _diag_embed(gS)
    if U.is_complex() and gU is not None and gVh is not None:
        # the phase of each singular pair: i Im(diag(U^H gU)) / S
        gA = gA + _diag_embed(UgU.diagonal(0, -2, -1).imag * (1j) / S)
    if m > k and gU is not None:
        gA = U @ gA
        gUS = gU / S.unsqueeze(-2)
        gA = gA + gUS - U @ (_t(U) @ gUS)
        return (gA @ Vh,)
    if n > k and gVh is not None:
        gA = gA @ Vh
        SgVh = gVh / S.unsqueeze(-1)
        gA = gA + SgVh - (SgVh @ V) @ Vh
        return (U @ gA,)
    return (U @ gA @ Vh,)


def _pinv_backward(g, pinvA, A):
    pinvAh = _t(pinvA)
    gh = _t(g)
    m, n = A.shape[-2], A.shape[-1]
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return -_t(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh + \
            (pinvAh @ pinvA) @ (gh - K @ A)
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return -_t(K @ pinvA) + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK - (pinvAhK @ pinvA) @ A


@formula("linalg_pinv", save_output=True)
def _pinv(ctx, grad):
    return (_pinv_backward(grad, ctx.output, ctx.input(0)),)


@formula("linalg_lstsq")
def _lstsq(ctx, grad):
    LA = _LA()
    A, B = ctx.inputs
    vector = ctx.attrs["vector"]
    gX = grad.unsqueeze(-1) if vector else grad
    Bm = B.unsqueeze(-1) if vector else B
    pinvA = LA.pinv(A)
    gA = _pinv_backward(gX @ _t(Bm), pinvA, A) if ctx.needs(0) else None
    gB = None
    if ctx.needs(1):
        gB = _t(pinvA) @ gX
        gB = gB.squeeze(-1) if vector else gB
    return gA, gB


def _lu_parts(LU, piv):
    P, L, U = _LA().lu_unpack(LU, piv)
    return P, L, U


@formula("linalg_lu_factor_ex", save_output=True)
def _lu_factor(ctx, grad):
    import ember
    LA = _LA()
    LU = ctx.output
    P, L, U = _lu_parts(LU, ctx.attrs["pivots"])
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    gL = grad[..., :, :k].tril(-1)
    gU = grad[..., :k, :].triu()

    def core_(L1, U1, phi):
        g = LA.solve_triangular(_t(L1), phi, upper=True, left=True, unitriangular=True)
        return LA.solve_triangular(_t(U1), g, upper=False, left=False)

    if m == n:
        phi = (_t(L) @ gL).tril(-1) + (gU @ _t(U)).triu()
        return (P @ core_(L, U, phi),)
    if m > n:
        L1, L2, gL1, gL2 = L[..., :n, :], L[..., n:, :], gL[..., :n, :], gL[..., n:, :]
        phi = (_t(L1) @ gL1).tril(-1) + (gU @ _t(U) - _t(L2) @ gL2).triu()
        gA2 = LA.solve_triangular(_t(U), gL2, upper=False, left=False)
        return (P @ ember.cat([core_(L1, U, phi), gA2], -2),)
    U1, U2, gU1, gU2 = U[..., :m], U[..., m:], gU[..., :m], gU[..., m:]
    phi = (_t(L) @ gL - gU2 @ _t(U2)).tril(-1) + (gU1 @ _t(U1)).triu()
    gA2 = LA.solve_triangular(_t(L), gU2, upper=True, left=True, unitriangular=True)
    return (P @ ember.cat([core_(L, U1, phi), gA2], -1),)


@formula("linalg_lu_solve", save_output=True)
def _lu_solve(ctx, grad):
    LA = _LA()
    LU, piv, B = ctx.inputs
    left, adjoint = ctx.attrs["left"], ctx.attrs["adjoint"]
    X = ctx.output
    gB = LA.lu_solve(LU, piv, grad, left=left, adjoint=not adjoint)
    gLU = None
    if ctx.needs(0):
        if left:
            gA = -(X @ _t(gB)) if adjoint else -(gB @ _t(X))
        else:
            gA = -(_t(gB) @ X) if adjoint else -(_t(X) @ gB)
        P, L, U = _lu_parts(LU, piv)
        PtgA = _t(P) @ gA
        gLU = (PtgA @ _t(U)).tril(-1) + (_t(L) @ PtgA).triu()
    return gLU, None, gB if ctx.needs(2) else None
