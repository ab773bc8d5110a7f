# cython: freethreading_compatible = False
"""Convolution, fold/unfold and pooling over ember's kernels (src_c/conv.c, pool.c).

The kernels take contiguous NCHW float32/float64 operands.  Every op validates
its arguments once here, releases the GIL around the kernel and records
autograd through core.record with the op name and the attributes its backward
formula needs (see ember/autograd/_formulas_linalg.py)."""
from libc.stdint cimport int64_t
from libc.string cimport memset
import operator
from collections.abc import Iterable as _Iterable

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C.c_conv cimport *
from ember._C.layout cimport cl_order, from_cl, new_cl, to_cl
from ember._C.c_gemm cimport ember_gemm_isa, ember_gemm_set_isa


# ----------------------------------------------------------------------------
# convolution

# Sizes and parameters derived from user arguments stay below this bound, so
# the kernels' int64 index arithmetic (offset = o*stride + i*dilation - pad,
# products of extents) can never overflow.
cdef object _BIG = 1 << 62


cdef object _ival(object v, str name, str op):
    """an int argument (Python/NumPy int or integer 0-d tensor; not bool, not float)"""
    if isinstance(v, bool) or isinstance(v, float) or v is None or isinstance(v, str):
        raise TypeError(f"{op}(): argument '{name}' must be int or tuple of ints, not "
                        f"{type(v).__name__}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int or tuple of ints, not "
                        f"{type(v).__name__}") from None


cdef tuple _int_seq(object v, str name, str op):
    """v as a tuple of ints: an int gives (v,), a list/tuple is checked element-wise"""
    if isinstance(v, (list, tuple)):
        return tuple([_ival(e, name, op) for e in v])
    if isinstance(v, TensorBase) and (<TensorBase>v)._ndim == 1:
        return tuple([_ival(e, name, op) for e in v.tolist()])
    return (_ival(v, name, op),)


cdef tuple _tuple_n(object v, int n, str name, str op):
    cdef tuple t = _int_seq(v, name, op)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(t)}")
    return t


cdef int _check_size(str op, str what, object v) except -1:
    if v < 0 or v >= _BIG:
        raise RuntimeError(f"{op}: {what} {v} is out of range (expected 0 <= size < 2**62)")
    return 0


cdef int _check_numel(str op, tuple shape, int itemsize=8) except -1:
    """refuse shapes whose byte size does not fit (the allocator's size would wrap)"""
    n = 1
    for v in shape:
        _check_size(op, "size", v)
        n *= v
    if n * itemsize >= _BIG:
        raise RuntimeError(f"{op}: output of size {list(shape)} is too large "
                           f"({n} elements)")
    return 0


cdef TensorBase _float_contig(TensorBase t, int cdt):
    if t._dtype != cdt:
        return cast(t, cdt)
    return from_cl(t)


cdef int _conv_dtype(TensorBase x, str op) except -1:
    if x._dtype == EM_F64:
        return EM_F64
    if x._dtype in (EM_F32, EM_F16, EM_BF16):
        return EM_F32
    raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(x._dtype)}'")


cdef class _ConvArgs:
    cdef ember_conv2d_params p
    cdef int64_t pt, pb, pl, pr   # resolved (possibly asymmetric) padding
    cdef bint batched
    cdef int nd                   # 1 or 2 spatial dims


cdef _ConvArgs _conv_setup(str op, int nd, tuple xshape, tuple wshape, stride, padding,
                           dilation, groups, bint transposed=False, output_padding=0):
    """validate a conv's shapes (PyTorch's messages) and fill the 2-D params.
    xshape: the conv *input* shape (for transposed: the transposed conv's input)."""
    cdef _ConvArgs a = _ConvArgs()
    cdef int xnd = len(xshape)
    a.nd = nd
    if nd != 1 and nd != 2:
        raise RuntimeError(f"{op}: expected a 3-D (conv1d) or 4-D (conv2d) weight, but got "
                           f"weight of size {list(wshape)}")
    xshape = tuple([_ival(v, "input_size", op) for v in xshape])
    wshape = tuple([_ival(v, "weight_size", op) for v in wshape])
    for v in xshape + wshape:
        _check_size(op, "size", v)
    if xnd != nd + 1 and xnd != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(xshape)}")
    if len(wshape) != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional, but got weight of "
                           f"size {list(wshape)}")
    a.batched = xnd == nd + 2
    if not a.batched:
        xshape = (1,) + xshape
    groups = _ival(groups, "groups", op)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    s = _tuple_n(stride, nd, "stride", op)
    d = _tuple_n(dilation, nd, "dilation", op)
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    k = tuple(wshape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for i in range(nd):
                tot = d[i] * (k[i] - 1)
                pads.append((tot // 2, tot - tot // 2))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        if padding is None:
            raise TypeError(f"{op}(): argument 'padding' must be int, tuple of ints or str, "
                            f"not NoneType")
        pv = _tuple_n(padding, nd, "padding", op)
        if any(v < 0 for v in pv):
            raise RuntimeError("negative padding is not supported")
        pads = [(v, v) for v in pv]
    for v in s + d:
        _check_size(op, "stride/dilation", v)
    for pp in pads:
        _check_size(op, "padding", pp[0])
    N, C = xshape[0], xshape[1]
    spatial = tuple(xshape[2:])
    OC = wshape[0]
    if OC < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(wshape)} instead")
    if transposed:
        # weight (Cin, Cout/g, k...); x is (N, Cin, ...)
        if any(v == 0 for v in spatial) and N != 0 and C != 0:
            raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got "
                               f"input shape: {list(xshape)}")
        if wshape[0] % groups != 0:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(wshape)}] instead")
        if C != wshape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(wshape)}, expected "
                               f"input{list(xshape)} to have {wshape[0]} channels, but got {C} "
                               f"channels instead")
        op_ = _tuple_n(output_padding, nd, "output_padding", op)
        for i in range(nd):
            if op_[i] < 0:
                raise RuntimeError("negative output_padding is not supported")
            if op_[i] >= max(s[i], d[i]):
                raise RuntimeError(f"output padding must be smaller than either stride or "
                                   f"dilation, but got output_padding={list(op_)}, "
                                   f"stride={list(s)}, dilation={list(d)}")
        out_sp = [(spatial[i] - 1) * s[i] - pads[i][0] - pads[i][1] + d[i] * (k[i] - 1) +
                  op_[i] + 1 for i in range(nd)]
        if any(v <= 0 for v in out_sp):
            raise RuntimeError(f"Given input size per channel: {list(spatial)}. Calculated "
                               f"output size per channel: {out_sp}. Output size is too small")
        # the equivalent forward conv: input (N, Cout, out_sp), output (N, Cin, spatial)
        full_in = out_sp
        full_out = list(spatial)
        convC = wshape[1] * groups
        convOC = wshape[0]
    else:
        if OC % groups != 0:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(wshape)}] instead")
        if C != wshape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(wshape)}, expected "
                               f"input{list(xshape)} to have {wshape[1] * groups} channels, but "
                               f"got {C} channels instead")
        padded = [spatial[i] + pads[i][0] + pads[i][1] for i in range(nd)]
        eff = [d[i] * (k[i] - 1) + 1 for i in range(nd)]
        if any(padded[i] < eff[i] for i in range(nd)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, eff))}). Kernel size can't be greater "
                               f"than actual input size")
        if any(v == 0 for v in spatial) and N != 0 and C != 0:
            raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got "
                               f"input shape: {list(xshape)}")
        full_in = list(spatial)
        full_out = [(padded[i] - eff[i]) // s[i] + 1 for i in range(nd)]
        convC = C
        convOC = OC
    # every extent the kernels index with (padded input, output) must fit, and so
    # must the tensors allocated from them
    for i in range(nd):
        _check_size(op, "padded input size", full_in[i] + pads[i][0] + pads[i][1])
        _check_size(op, "output size", full_out[i])
    _check_numel(op, (N, convC) + tuple(full_in))
    _check_numel(op, (N, convOC) + tuple(full_out))
    _check_numel(op, (N, convC) + tuple([full_in[i] + pads[i][0] + pads[i][1]
                                         for i in range(nd)]))
    if nd == 1:
        full_in = [1] + full_in
        full_out = [1] + full_out
        s = (1,) + s
        d = (1,) + d
        k = (1,) + k
        pads = [(0, 0)] + pads
    a.p.N = N
    a.p.C = convC
    a.p.H = full_in[0]
    a.p.W = full_in[1]
    a.p.OC = convOC
    a.p.kh = k[0]
    a.p.kw = k[1]
    a.p.sh = s[0]
    a.p.sw = s[1]
    a.p.dh = d[0]
    a.p.dw = d[1]
    a.p.groups = groups
    a.p.Ho = full_out[0]
    a.p.Wo = full_out[1]
    a.pt, a.pb = pads[0]
    a.pl, a.pr = pads[1]
    a.p.ph = a.pt
    a.p.pw = a.pl
    return a


cdef tuple _sp(int nd, int64_t H, int64_t W):
    if nd == 1:
        return (W,)
    return (H, W)


cdef TensorBase _as4d(TensorBase t, int64_t N, int64_t C, int64_t H, int64_t W):
    """contiguous t viewed as (N, C, H, W)"""
    cdef int64_t sh[4]
    cdef int64_t st[4]
    sh[0] = N
    sh[1] = C
    sh[2] = H
    sh[3] = W
    st[3] = 1
    st[2] = W
    st[1] = H * W
    st[0] = C * H * W
    return plain_view(t, 4, sh, st, t._offset)


cdef TensorBase _pad_input(TensorBase x, _ConvArgs a):
    """explicitly zero-pad a contiguous (N, C, H, W) input for asymmetric padding"""
    cdef int64_t Hp = a.p.H + a.pt + a.pb, Wp = a.p.W + a.pl + a.pr
    cdef int64_t sh[4]
    sh[0] = a.p.N
    sh[1] = a.p.C
    sh[2] = Hp
    sh[3] = Wp
    cdef TensorBase xp = new_tensor(4, sh, x._dtype, x._device)
    fill_scalar(xp, 0)
    cdef int64_t st[4]
    st[0] = a.p.C * Hp * Wp
    st[1] = Hp * Wp
    st[2] = Wp
    st[3] = 1
    sh[2] = a.p.H
    sh[3] = a.p.W
    copy_into(plain_view(xp, 4, sh, st, a.pt * Wp + a.pl), x)
    return xp


cdef bint _asym(_ConvArgs a):
    return a.pt != a.pb or a.pl != a.pr


cdef TensorBase _shape_back(TensorBase y, tuple full_shape):
    """view contiguous y with the user-facing shape"""
    cdef int64_t sh[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int n = len(full_shape), i
    cdef int64_t s = 1
    check_ndim(n, "conv")
    for i in range(n - 1, -1, -1):
        sh[i] = full_shape[i]
        st[i] = s
        s *= sh[i]
    return plain_view(y, n, sh, st, y._offset)


cdef int _conv_rc(int rc, str op) except -1:
    if rc != 0:
        raise RuntimeError(f"{op}: DefaultCPUAllocator: can't allocate memory for the "
                           f"convolution workspace")
    return 0


cdef TensorBase _conv_forward_raw(_ConvArgs a, TensorBase x, TensorBase w, TensorBase b,
                                  int cdt):
    """x (N,C,H,W) contiguous compute dtype, w (OC,Cg,kh,kw) contiguous; -> y (N,OC,Ho,Wo)"""
    cdef ember_conv2d_params p = a.p
    if _asym(a):
        x = _pad_input(x, a)
        p.H = a.p.H + a.pt + a.pb
        p.W = a.p.W + a.pl + a.pr
        p.ph = 0
        p.pw = 0
    cdef int64_t sh[4]
    sh[0] = p.N
    sh[1] = p.OC
    sh[2] = p.Ho
    sh[3] = p.Wo
    cdef TensorBase y = new_tensor(4, sh, cdt, x._device)
    cdef char *bp = data_ptr(b) if b is not None else NULL
    cdef int nt = max_threads()
    cdef int rc = 0
    cdef int64_t bst[3]
    if numel_of(4, sh) == 0:
        return y
    if p.C == 0 or p.kh * p.kw == 0:
        if b is not None:
            sh[1] = sh[2] = 1
            sh[0] = p.OC
            bst[0] = b._strides[0]
            bst[1] = bst[2] = 0
            copy_into(y, plain_view(b, 3, sh, bst, b._offset))
        else:
            fill_scalar(y, 0)
        return y
    with nogil:
        if cdt == EM_F32:
            rc = ember_conv2d_fwd_f32(&p, <float *>data_ptr(x), <float *>data_ptr(w), <float *>bp,
                                      <float *>data_ptr(y), nt)
        else:
            rc = ember_conv2d_fwd_f64(&p, <double *>data_ptr(x), <double *>data_ptr(w),
                                      <double *>bp, <double *>data_ptr(y), nt)
    _conv_rc(rc, "conv2d")
    return y


cdef TensorBase _conv_input_grad_raw(_ConvArgs a, TensorBase dy, TensorBase w, int cdt):
    """dy (N,OC,Ho,Wo), w contiguous -> dx (N,C,H,W)"""
    cdef ember_conv2d_params p = a.p
    cdef bint asym = _asym(a)
    if asym:
        p.H = a.p.H + a.pt + a.pb
        p.W = a.p.W + a.pl + a.pr
        p.ph = 0
        p.pw = 0
    cdef int64_t sh[4]
    sh[0] = p.N
    sh[1] = p.C
    sh[2] = p.H
    sh[3] = p.W
    cdef TensorBase dx = new_tensor(4, sh, cdt, dy._device)
    cdef int nt = max_threads()
    cdef int rc = 0
    if numel_of(4, sh) == 0:
        return dx
    if p.OC == 0 or p.Ho * p.Wo == 0:
        fill_scalar(dx, 0)
    else:
        with nogil:
            if cdt == EM_F32:
                rc = ember_conv2d_bwd_input_f32(&p, <float *>data_ptr(dy), <float *>data_ptr(w),
                                                <float *>data_ptr(dx), nt)
            else:
                rc = ember_conv2d_bwd_input_f64(&p, <double *>data_ptr(dy), <double *>data_ptr(w),
                                                <double *>data_ptr(dx), nt)
        _conv_rc(rc, "conv2d_input_grad")
    cdef int64_t vsh[4]
    cdef int64_t vst[4]
    if asym:
        vsh[0] = a.p.N
        vsh[1] = a.p.C
        vsh[2] = a.p.H
        vsh[3] = a.p.W
        vst[0] = p.C * p.H * p.W
        vst[1] = p.H * p.W
        vst[2] = p.W
        vst[3] = 1
        dx = contig(plain_view(dx, 4, vsh, vst, a.pt * p.W + a.pl))
    return dx


cdef tuple _conv_weight_grad_raw(_ConvArgs a, TensorBase x, TensorBase dy, tuple wshape4,
                                 bint want_bias, int cdt):
    cdef ember_conv2d_params p = a.p
    if _asym(a):
        x = _pad_input(x, a)
        p.H = a.p.H + a.pt + a.pb
        p.W = a.p.W + a.pl + a.pr
        p.ph = 0
        p.pw = 0
    cdef int64_t sh[4]
    for i in range(4):
        sh[i] = wshape4[i]
    cdef TensorBase dw = new_tensor(4, sh, cdt, x._device)
    cdef TensorBase db = None
    cdef char *dbp = NULL
    if want_bias:
        sh[0] = p.OC
        db = new_tensor(1, sh, cdt, x._device)
        dbp = data_ptr(db)
    cdef int nt = max_threads()
    cdef int rc = 0
    with nogil:
        if cdt == EM_F32:
            rc = ember_conv2d_bwd_weight_f32(&p, <float *>data_ptr(x), <float *>data_ptr(dy),
                                             <float *>data_ptr(dw), <float *>dbp, nt)
        else:
            rc = ember_conv2d_bwd_weight_f64(&p, <double *>data_ptr(x), <double *>data_ptr(dy),
                                             <double *>data_ptr(dw), <double *>dbp, nt)
    _conv_rc(rc, "conv2d_weight_grad")
    return dw, db


cdef int _check_conv_dtypes(TensorBase x, TensorBase w, TensorBase b, str op) except -1:
    if x._dtype != w._dtype:
        raise RuntimeError(f"{op}: Input type ({c_type_name(x._dtype)}) and weight type "
                           f"({c_type_name(w._dtype)}) should be the same")
    if b is not None and b._dtype != x._dtype:
        raise RuntimeError(f"{op}: Input type ({c_type_name(x._dtype)}) and bias type "
                           f"({c_type_name(b._dtype)}) should be the same")
    return 0


include "conv_nhwc.pxi"


cdef object _conv_nd(str op, int nd, object input, object weight, object bias, object stride,
                     object padding, object dilation, object groups):
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    cdef TensorBase w = as_tensor(weight, op, "weight")
    cdef TensorBase b = None if bias is None else as_tensor(bias, op, "bias")
    cdef _ConvArgs a = _conv_setup(op, nd, tuple(x.shape), tuple(w.shape), stride, padding,
                                   dilation, groups)
    _check_conv_dtypes(x, w, b, op)
    check_same_device(x, w, op, "weight")
    if b is not None and (b._ndim != 1 or b._shape[0] != w._shape[0]):
        raise RuntimeError(f"Given weight of size {shape_list(w)}, expected bias to be "
                           f"1-dimensional with {w._shape[0]} elements, but got bias of size "
                           f"{shape_list(b)} instead")
    if category(x._dtype) == 3:
        from ember._C import cplx
        return cplx.conv(op, x, w, b, (stride, padding, dilation, groups))
    cdef int cdt = _conv_dtype(x, op)
    if _wino_nhwc(a, x, w, 0) or (_nhwc_ok(a, x, w, cdt) and (b is None or b._dtype == cdt)):
        yn = _conv_fwd_wino_nhwc(a, x, w, b) if _wino_nhwc(a, x, w, 0) else \
            _conv_fwd_nhwc(a, x, w, b)
        if any_grad((x, w, b)):
            record(op, (x, w, b) if b is not None else (x, w), yn,
                   {"stride": stride, "padding": padding, "dilation": dilation,
                    "groups": groups})
        return yn
    cdef TensorBase xc = _as4d(_float_contig(x, cdt), a.p.N, a.p.C, a.p.H, a.p.W)
    cdef TensorBase wc = _as4d(_float_contig(w, cdt), a.p.OC, a.p.C // a.p.groups, a.p.kh,
                               a.p.kw)
    cdef TensorBase bc = _float_contig(b, cdt) if b is not None else None
    cdef TensorBase y = _conv_forward_raw(a, xc, wc, bc, cdt)
    if y._dtype != x._dtype:
        y = cast(y, x._dtype)
    shp = (a.p.N, a.p.OC) + _sp(nd, a.p.Ho, a.p.Wo)
    if not a.batched:
        shp = shp[1:]
    y = _shape_back(y, shp)
    if y._ndim == 4 and (cl_order(x) or cl_order(w)):
        y = to_cl(y)        # torch: channels-last when the input or the weight is
    if any_grad((x, w, b)):
        record(op, (x, w, b) if b is not None else (x, w), y,
               {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups})
    return y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) over NCHW input; padding may be an int,
    a pair, "same" or "valid"."""
    if needs_slow((input, weight, bias)):
        return redispatch("conv2d", conv2d, (input, weight, bias, stride, padding, dilation,
                                             groups), None)
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) input: conv2d with H = 1."""
    if needs_slow((input, weight, bias)):
        return redispatch("conv1d", conv1d, (input, weight, bias, stride, padding, dilation,
                                             groups), None)
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d_input_grad(input_size, weight, grad_output, stride=1, padding=0, dilation=1,
                      groups=1):
    """Gradient of conv2d (or conv1d: 3-D weight) with respect to its input, like
    torch.nn.grad.conv2d_input; input_size is the input's shape."""
    cdef TensorBase w = as_tensor(weight, "conv2d_input_grad", "weight")
    cdef TensorBase dy = as_tensor(grad_output, "conv2d_input_grad", "grad_output")
    if needs_slow((w, dy)):
        return redispatch("conv2d_input_grad", conv2d_input_grad,
                          (input_size, weight, grad_output, stride, padding, dilation, groups),
                          None)
    cdef int nd = w._ndim - 2
    op = "conv2d_input_grad"
    input_size = tuple(input_size)
    cdef _ConvArgs a = _conv_setup(op, nd, input_size, tuple(w.shape), stride, padding,
                                   dilation, groups)
    oshape = (a.p.N, a.p.OC) + _sp(nd, a.p.Ho, a.p.Wo)
    if not a.batched:
        oshape = oshape[1:]
    if tuple(dy.shape) != oshape:
        raise RuntimeError(f"{op}: expected grad_output of size {list(oshape)}, but got "
                           f"{shape_list(dy)}")
    cdef int cdt = _conv_dtype(dy, op)
    attrs = {"input_size": input_size, "stride": stride, "padding": padding,
             "dilation": dilation, "groups": groups}
    if _wino_nhwc(a, dy, w, 1):
        return epilogue(op, (w, dy), _conv_input_grad_wino_nhwc(a, dy, w), attrs)
    cdef TensorBase dyc = _as4d(_float_contig(dy, cdt), a.p.N, a.p.OC, a.p.Ho, a.p.Wo)
    cdef TensorBase wc = _as4d(_float_contig(w, cdt), a.p.OC, a.p.C // a.p.groups, a.p.kh,
                               a.p.kw)
    cdef TensorBase dx = _conv_input_grad_raw(a, dyc, wc, cdt)
    if dx._dtype != dy._dtype:
        dx = cast(dx, dy._dtype)
    dx = _shape_back(dx, input_size)
    if dx._ndim == 4 and (cl_order(dy) or cl_order(w)):
        dx = to_cl(dx)
    return epilogue(op, (w, dy), dx, attrs)


cdef tuple _conv_weight_grad_nchw(_ConvArgs a, TensorBase x, TensorBase dy, bint bias_grad,
                                  int cdt):
    cdef TensorBase xc = _as4d(_float_contig(x, cdt), a.p.N, a.p.C, a.p.H, a.p.W)
    cdef TensorBase dyc = _as4d(_float_contig(dy, cdt), a.p.N, a.p.OC, a.p.Ho, a.p.Wo)
    w4 = (a.p.OC, a.p.C // a.p.groups, a.p.kh, a.p.kw)
    return _conv_weight_grad_raw(a, xc, dyc, w4, bias_grad, cdt)


def conv2d_weight_grad(input, weight_size, grad_output, stride=1, padding=0, dilation=1,
                       groups=1, *, bias_grad=False):
    """Gradient of conv2d (conv1d for 3-D input batches) with respect to the
    weight, like torch.nn.grad.conv2d_weight.  bias_grad=True also returns the
    bias gradient: (grad_weight, grad_bias)."""
    cdef TensorBase x = as_tensor(input, "conv2d_weight_grad", "input", 1)
    cdef TensorBase dy = as_tensor(grad_output, "conv2d_weight_grad", "grad_output")
    if needs_slow((x, dy)):
        return redispatch("conv2d_weight_grad", conv2d_weight_grad,
                          (input, weight_size, grad_output, stride, padding, dilation, groups),
                          {"bias_grad": bias_grad})
    weight_size = tuple(weight_size)
    cdef int nd = len(weight_size) - 2
    op = "conv2d_weight_grad"
    cdef _ConvArgs a = _conv_setup(op, nd, tuple(x.shape), weight_size, stride, padding,
                                   dilation, groups)
    oshape = (a.p.N, a.p.OC) + _sp(nd, a.p.Ho, a.p.Wo)
    if not a.batched:
        oshape = oshape[1:]
    if tuple(dy.shape) != oshape:
        raise RuntimeError(f"{op}: expected grad_output of size {list(oshape)}, but got "
                           f"{shape_list(dy)}")
    if x._dtype != dy._dtype:
        raise RuntimeError(f"{op}: expected input and grad_output to have the same dtype, but "
                           f"got {c_type_name(x._dtype)} and {c_type_name(dy._dtype)}")
    cdef int cdt = _conv_dtype(x, op)
    dw = None
    if _wino_nhwc(a, x, dy, 2):
        dw = _conv_weight_grad_wino_nhwc(a, x, dy)
    else:
        dw = _conv_weight_grad_cl(a, x, dy)
    if dw is not None:
        db = dy.sum((0, 2, 3)) if bias_grad else None
    elif _nhwc_ok(a, x, dy, cdt):
        dw = _conv_weight_grad_nhwc(a, x, dy)        # channels-last, as torch's
        db = dy.sum((0, 2, 3)) if bias_grad else None
    else:
        dw, db = _conv_weight_grad_nchw(a, x, dy, bias_grad, cdt)
        if (<TensorBase>dw)._dtype != x._dtype:
            dw = cast(dw, x._dtype)
            if db is not None:
                db = cast(db, x._dtype)
        dw = _shape_back(dw, weight_size)
    if any_grad((x, dy)):
        record("conv2d_weight_grad", (x, dy), dw,
               {"weight_size": weight_size, "stride": stride, "padding": padding,
                "dilation": dilation, "groups": groups})
    return (dw, db) if bias_grad else dw


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 2-D convolution (the input gradient of conv2d); weight is
    (C_in, C_out / groups, kh, kw)."""
    if needs_slow((input, weight, bias)):
        return redispatch("conv_transpose2d", conv_transpose2d,
                          (input, weight, bias, stride, padding, output_padding, groups,
                           dilation), None)
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 1-D convolution: conv_transpose2d with H = 1."""
    if needs_slow((input, weight, bias)):
        return redispatch("conv_transpose1d", conv_transpose1d,
                          (input, weight, bias, stride, padding, output_padding, groups,
                           dilation), None)
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


cdef object _conv_transpose_nd(str op, int nd, input, weight, bias, stride, padding,
                               output_padding, groups, dilation):
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    cdef TensorBase w = as_tensor(weight, op, "weight")
    cdef TensorBase b = None if bias is None else as_tensor(bias, op, "bias")
    if isinstance(padding, str):
        raise RuntimeError(f"{op}: padding must be an int or a tuple of ints, got '{padding}'")
    cdef _ConvArgs a = _conv_setup(op, nd, tuple(x.shape), tuple(w.shape), stride, padding,
                                   dilation, groups, True, output_padding)
    _check_conv_dtypes(x, w, b, op)
    cdef int64_t cout = w._shape[1] * groups
    if b is not None and (b._ndim != 1 or b._shape[0] != cout):
        raise RuntimeError(f"Given transposed=1, weight of size {shape_list(w)}, expected bias "
                           f"to be 1-dimensional with {cout} elements, but got bias of size "
                           f"{shape_list(b)} instead")
    if category(x._dtype) == 3:
        from ember._C import cplx
        return cplx.conv(op, x, w, b, (stride, padding, output_padding, groups, dilation))
    cdef int cdt = _conv_dtype(x, op)
    cdef TensorBase xc = _as4d(_float_contig(x, cdt), a.p.N, a.p.OC, a.p.Ho, a.p.Wo)
    cdef TensorBase wc = _as4d(_float_contig(w, cdt), a.p.OC, a.p.C // a.p.groups, a.p.kh,
                               a.p.kw)
    cdef TensorBase y = _conv_input_grad_raw(a, xc, wc, cdt)
    if b is not None:
        bc = _float_contig(b, cdt)
        _add_channel_bias(y, bc)
    if y._dtype != x._dtype:
        y = cast(y, x._dtype)
    shp = (a.p.N, a.p.C) + _sp(nd, a.p.H, a.p.W)
    if not a.batched:
        shp = shp[1:]
    y = _shape_back(y, shp)
    if y._ndim == 4 and (cl_order(x) or cl_order(w)):
        y = to_cl(y)
    if any_grad((x, w, b)):
        record(op, (x, w, b) if b is not None else (x, w), y,
               {"stride": stride, "padding": padding, "output_padding": output_padding,
                "dilation": dilation, "groups": groups})
    return y


cdef int _add_channel_bias(TensorBase y, TensorBase b) except -1:
    """y (N, C, H, W) contiguous += b[c]"""
    cdef int64_t N = y._shape[0], C = y._shape[1], P = y._shape[2] * y._shape[3], n, c, q
    cdef float *yf
    cdef double *yd
    with nogil:
        if y._dtype == EM_F32:
            yf = <float *>data_ptr(y)
            for n in range(N):
                for c in range(C):
                    for q in range(P):
                        yf[(n * C + c) * P + q] += (<float *>data_ptr(b))[c]
        else:
            yd = <double *>data_ptr(y)
            for n in range(N):
                for c in range(C):
                    for q in range(P):
                        yd[(n * C + c) * P + q] += (<double *>data_ptr(b))[c]
    return 0


# ----------------------------------------------------------------------------
# unfold / fold (im2col / col2im)

# Every fold/unfold parameter and spatial size is at most this bound.  With at
# least one sliding block, dilation * (kernel - 1) < size + 2 * padding, so the
# kernels' indices (o * stride - pad + i * dilation, size + pad) stay far from
# int64 overflow.
cdef object _FOLD_MAX = 1 << 60


cdef tuple _fold_ints(object v, str op, str name, int pos):
    """PyTorch's ``_pair`` and int-list parsing: an int is repeated, an iterable is
    read element-wise.  Element types are checked here, the length by _fold_len."""
    if isinstance(v, TensorBase) and (<TensorBase>v)._ndim == 0:
        seq = (v, v)
    elif isinstance(v, _Iterable):
        seq = tuple(v)
    else:
        seq = (v, v)
    out = []
    for i, e in enumerate(seq):
        try:
            if isinstance(e, bool):
                raise TypeError
            out.append(operator.index(e))
        except TypeError:
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of "
                            f"ints, but found element of type {type(e).__name__} at pos "
                            f"{i}") from None
    return tuple(out)


cdef int _fold_len(tuple t, str op, str name) except -1:
    if len(t) != 2:
        raise RuntimeError(f"{op}: It is expected {name} equals to 2, but got size {len(t)}")
    return 0


cdef int _fold_positive(tuple t, str op, str what, str h, str w) except -1:
    if t[0] <= 0 or t[1] <= 0:
        raise RuntimeError(f"{op}: {what} should be greater than zero, but got {h}: {t[0]} "
                           f"{w}: {t[1]}")
    return 0


cdef int _fold_pad(tuple t, str op) except -1:
    if t[0] < 0 or t[1] < 0:
        raise RuntimeError(f"{op}: padding should be non-negative, but got pad_height: {t[0]} "
                           f"pad_width: {t[1]}")
    return 0


cdef int _fold_bound(str op, str name, tuple t) except -1:
    if t[0] > _FOLD_MAX or t[1] > _FOLD_MAX:
        raise RuntimeError(f"{op}: {name}={t} is too large (each value must be at most "
                           f"2**60)")
    return 0


cdef str _pr(tuple t):
    return f"({t[0]}, {t[1]})"


cdef int _fold_dtype(TensorBase x, str op) except -1:
    """float64 runs as is; float32/float16/bfloat16 and bool (a pure copy, or sums
    that are nonzero exactly when PyTorch's logical-or accumulation is true) in float32."""
    if x._dtype == EM_F64:
        return EM_F64
    if x._dtype in (EM_F32, EM_F16, EM_BF16, EM_BOOL):
        return EM_F32
    raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(x._dtype)}'")


cdef ember_conv2d_params _fold_params(int64_t C, int64_t H, int64_t W, tuple k, tuple d,
                                      tuple pd, tuple s, int64_t Ho, int64_t Wo):
    cdef ember_conv2d_params p
    memset(&p, 0, sizeof(p))
    p.N = 1
    p.C = C
    p.H = H
    p.W = W
    p.kh, p.kw = k
    p.dh, p.dw = d
    p.ph, p.pw = pd
    p.sh, p.sw = s
    p.groups = 1
    p.Ho = Ho
    p.Wo = Wo
    return p


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col), like ``torch.nn.functional.unfold``.

    (N, C, H, W) or (C, H, W) input gives (N, C*kh*kw, L) or (C*kh*kw, L), L the
    number of blocks.  The gradient is ``fold`` with the same parameters."""
    if needs_slow((input,)):
        return redispatch("im2col", unfold, (input, kernel_size, dilation, padding, stride),
                          None)
    op = "unfold"
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    k = _fold_ints(kernel_size, op, "kernel_size", 2)
    d = _fold_ints(dilation, op, "dilation", 3)
    pd = _fold_ints(padding, op, "padding", 4)
    s = _fold_ints(stride, op, "stride", 5)
    _fold_len(k, op, "kernel_size")
    _fold_len(d, op, "dilation")
    _fold_len(pd, op, "padding")
    _fold_len(s, op, "stride")
    _fold_positive(k, op, "kernel size", "kernel_height", "kernel_width")
    _fold_positive(d, op, "dilation", "dilation_height", "dilation_width")
    _fold_pad(pd, op)
    _fold_positive(s, op, "stride", "stride_height", "stride_width")
    cdef int nd = x._ndim
    if nd < 3:
        where = ("Dimension specified as 1 but tensor has no dimensions" if nd == 0 else
                 f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but "
                 f"got {nd})")
        raise IndexError(f"{op}: {where}: expected a 3D or 4D (batch mode) input, but got "
                         f"input of size {shape_list(x)}")
    if nd > 4 or numel_of(3, &x._shape[nd - 3]) == 0:
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with possibly 0 batch "
                           f"size and other non-zero dimensions for input, but got: "
                           f"{shape_list(x)}")
    N = x._shape[0] if nd == 4 else 1
    C, H, W = x._shape[nd - 3], x._shape[nd - 2], x._shape[nd - 1]
    Ho = (H + 2 * pd[0] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    Wo = (W + 2 * pd[1] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    if Ho < 1 or Wo < 1:
        raise RuntimeError(f"{op}: Given input with spatial size ({H}, {W}), kernel_size="
                           f"{_pr(k)}, dilation={_pr(d)}, padding={_pr(pd)}, calculated shape "
                           f"of the array of sliding blocks as ({Ho}, {Wo}), but its "
                           f"components must be at least one.")
    for name, t in (("kernel_size", k), ("dilation", d), ("padding", pd), ("stride", s)):
        _fold_bound(op, name, t)
    cdef int cdt = _fold_dtype(x, op)
    rows, L = C * k[0] * k[1], Ho * Wo
    oshape = (N, rows, L) if nd == 4 else (rows, L)
    _check_numel(op, oshape, em_itemsize[cdt])
    cdef ember_conv2d_params p = _fold_params(C, H, W, k, d, pd, s, Ho, Wo)
    cdef TensorBase xc = _float_contig(x, cdt)
    cdef TensorBase y = _new_shape(oshape, cdt, x._device)
    cdef int64_t n, nb = N, xs = C * H * W, ys = rows * L
    cdef char *xp = data_ptr(xc)
    cdef char *yp = data_ptr(y)
    with nogil:
        if cdt == EM_F32:
            for n in range(nb):
                ember_im2col_f32(&p, p.C, <float *>xp + n * xs, <float *>yp + n * ys)
        else:
            for n in range(nb):
                ember_im2col_f64(&p, p.C, <double *>xp + n * xs, <double *>yp + n * ys)
    if cdt != x._dtype:
        y = cast(y, x._dtype)
    return epilogue("im2col", (x,), y,
                    {"input_size": (H, W), "kernel_size": k, "dilation": d, "padding": pd,
                     "stride": s})


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding local blocks into a tensor (col2im), like ``torch.nn.functional.fold``.

    (N, C*kh*kw, L) or (C*kh*kw, L) input gives (N, C, *output_size) or
    (C, *output_size).  The gradient is ``unfold`` with the same parameters."""
    if needs_slow((input,)):
        return redispatch("col2im", fold, (input, output_size, kernel_size, dilation, padding,
                                           stride), None)
    op = "fold"
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    o = _fold_ints(output_size, op, "output_size", 2)
    k = _fold_ints(kernel_size, op, "kernel_size", 3)
    d = _fold_ints(dilation, op, "dilation", 4)
    pd = _fold_ints(padding, op, "padding", 5)
    s = _fold_ints(stride, op, "stride", 6)
    _fold_len(o, op, "output_size")
    _fold_len(k, op, "kernel_size")
    _fold_len(d, op, "dilation")
    _fold_len(pd, op, "padding")
    _fold_len(s, op, "stride")
    _fold_positive(k, op, "kernel size", "kernel_height", "kernel_width")
    _fold_positive(s, op, "stride", "stride_height", "stride_width")
    _fold_positive(d, op, "dilation", "dilation_height", "dilation_width")
    _fold_pad(pd, op)
    cdef int nd = x._ndim
    if (nd != 2 and nd != 3) or numel_of(2, &x._shape[nd - 2]) == 0:
        raise RuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor for input with "
                           f"possibly 0 batch size and non-zero dimensions for input, but got: "
                           f"{shape_list(x)}")
    N = x._shape[0] if nd == 3 else 1
    rows, L = x._shape[nd - 2], x._shape[nd - 1]
    if rows % (k[0] * k[1]) != 0:
        raise RuntimeError(f"{op}: Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={rows} and "
                           f"kernel_size={_pr(k)}.")
    bh = (o[0] + 2 * pd[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    bw = (o[1] + 2 * pd[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    given = (f"Given output_size={_pr(o)}, kernel_size={_pr(k)}, dilation={_pr(d)}, "
             f"padding={_pr(pd)}, stride={_pr(s)}")
    if L != bh * bw:
        raise RuntimeError(f"{op}: {given}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {bh} * {bw} = {bh * bw}, but "
                           f"got input.size(2)={L}.")
    if bh < 1 or bw < 1:
        raise RuntimeError(f"{op}: {given}, calculated shape of the array of sliding blocks as "
                           f"({bh}, {bw}), which is too small (non-positive)")
    if o[0] < 1 or o[1] < 1:
        raise RuntimeError(f"{op}: Expected output spatial size to be positive, but got: "
                           f"output_size={_pr(o)}.")
    for name, t in (("output_size", o), ("kernel_size", k), ("dilation", d),
                    ("padding", pd), ("stride", s)):
        _fold_bound(op, name, t)
    cdef int cdt = _fold_dtype(x, op)
    C = rows // (k[0] * k[1])
    oshape = ((N,) if nd == 3 else ()) + (C, o[0], o[1])
    _check_numel(op, oshape, em_itemsize[cdt])
    cdef ember_conv2d_params p = _fold_params(C, o[0], o[1], k, d, pd, s, bh, bw)
    cdef TensorBase xc = _float_contig(x, cdt)
    cdef TensorBase y = _new_shape(oshape, cdt, x._device)
    cdef int64_t n, nb = N, xs = rows * L, ys = C * o[0] * o[1]
    cdef char *xp = data_ptr(xc)
    cdef char *yp = data_ptr(y)
    cdef size_t nbytes = <size_t>(nb * ys) * em_itemsize[cdt]
    with nogil:
        if nbytes:
            memset(yp, 0, nbytes)  # col2im adds into its output
        if cdt == EM_F32:
            for n in range(nb):
                ember_col2im_f32(&p, p.C, <float *>xp + n * xs, <float *>yp + n * ys)
        else:
            for n in range(nb):
                ember_col2im_f64(&p, p.C, <double *>xp + n * xs, <double *>yp + n * ys)
    if cdt != x._dtype:
        y = cast(y, x._dtype)
    return epilogue("col2im", (x,), y,
                    {"output_size": o, "kernel_size": k, "dilation": d, "padding": pd,
                     "stride": s})


# ----------------------------------------------------------------------------
# pooling

# pooling parameters are C ints in PyTorch: the same bound keeps window
# arithmetic ((kh+ph) * (kw+pw) divisors, o*stride) far from int64 overflow
cdef object _POOL_MAX = (1 << 31) - 1


cdef tuple _pair(object v, str name, str op):
    cdef tuple t = _int_seq(v, name, op)
    if len(t) == 1:
        t = t * 2
    if len(t) != 2:
        raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of two ints")
    for e in t:
        if e > _POOL_MAX or e < -_POOL_MAX:
            raise RuntimeError(f"{op}: {name}={list(t)}: value cannot be converted to type int "
                               f"without overflow")
    return t


cdef int64_t _pool_out(int64_t size, int64_t k, int64_t pad, int64_t s, int64_t d,
                       bint ceil_mode):
    cdef int64_t num = size + 2 * pad - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    cdef int64_t o = (num // s if num >= 0 else -((-num + s - 1) // s)) + 1
    if ceil_mode and (o - 1) * s >= size + pad:
        o -= 1
    return o


cdef TensorBase _pool_input(object input, str op, str kind):
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    if x._ndim not in (3, 4):
        if kind == "adaptive":
            raise RuntimeError(f"{op}(): Expected 3D or 4D tensor, but got {shape_list(x)}")
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    return x


cdef class _PoolArgs:
    cdef ember_pool2d_params p
    cdef tuple oshape


cdef _PoolArgs _pool_setup(TensorBase x, str op, kernel_size, stride, padding, dilation,
                           bint ceil_mode):
    cdef _PoolArgs a = _PoolArgs()
    k = _pair(kernel_size, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _pair(stride, "stride", op)
    pd = _pair(padding, "padding", op)
    dl = _pair(dilation, "dilation", op)
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got "
                           f"kH: {k[0]} kW: {k[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"{op}: stride must be greater than zero, but got dH: {s[0]} "
                           f"dW: {s[1]}")
    if dl[0] <= 0 or dl[1] <= 0:
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got dilationH: "
                           f"{dl[0]} dilationW: {dl[1]}")
    for i in range(2):
        if pd[i] < 0 or pd[i] > (dl[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pd[i]}, kernel_size={k[i]} and dilation={dl[i]}")
    cdef int nd = x._ndim
    cdef int64_t H = x._shape[nd - 2], W = x._shape[nd - 1], C = x._shape[nd - 3]
    cdef int64_t N = x._shape[0] if nd == 4 else 1
    cdef int64_t Ho = _pool_out(H, k[0], pd[0], s[0], dl[0], ceil_mode)
    cdef int64_t Wo = _pool_out(W, k[1], pd[1], s[1], dl[1], ceil_mode)
    if Ho <= 0 or Wo <= 0 or C == 0 or H == 0 or W == 0:
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: "
                           f"({C}x{Ho}x{Wo}). Output size is too small")
    a.p.planes = N * C
    a.p.H = H
    a.p.W = W
    a.p.kh, a.p.kw = k
    a.p.sh, a.p.sw = s
    a.p.ph, a.p.pw = pd
    a.p.dh, a.p.dw = dl
    a.p.Ho = Ho
    a.p.Wo = Wo
    a.p.count_include_pad = 1
    a.p.divisor = 0
    a.oshape = ((N,) if nd == 4 else ()) + (C, Ho, Wo)
    _check_numel(op, a.oshape)
    return a


cdef int _pool_dtype(TensorBase x, str op) except -1:
    if x._dtype == EM_F32 or x._dtype == EM_F64:
        return x._dtype
    if x._dtype == EM_F16 or x._dtype == EM_BF16:
        return EM_F32
    if x._dtype == EM_BOOL:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    return EM_F64


cdef object _divisor(object v, str op):
    if v is None:
        return None
    v = _ival(v, "divisor_override", op)
    if v == 0:
        raise RuntimeError("divisor must be not zero")
    if v >= (1 << 63) or v < -(1 << 63):
        raise RuntimeError(f"{op}: divisor_override={v}: value cannot be converted to type "
                           f"int64 without overflow")
    return v


cdef TensorBase _new_shape(tuple shp, int dt, Device dev):
    cdef int64_t sh[MAX_DIMS]
    cdef int n = seq_to_dims(shp, sh, "pool")
    return new_tensor(n, sh, dt, dev)


include "pool_nhwc.pxi"


cdef object _max_pool_run(str op, TensorBase x, _PoolArgs a, bint adaptive, dict attrs,
                          object return_indices):
    """the kernel and epilogue of max_pool2d / adaptive_max_pool2d: values and flat
    h*W+w indices per plane; the indices go first into the recorded attrs"""
    cdef int cdt = _pool_dtype(x, op)
    if not adaptive and _pool_nhwc_ok(x):
        yn, ixn = _max_pool_nhwc(x, a)
        if any_grad((x,)):
            record(op, (x,), yn, dict({"indices": ixn}, **attrs))
        return (yn, ixn) if return_indices else yn
    cdef TensorBase xc = _float_contig(x, cdt)
    cdef TensorBase y = _new_shape(a.oshape, cdt, x._device)
    cdef TensorBase idx = _new_shape(a.oshape, EM_I64, x._device)
    cdef int nt = max_threads()
    cdef char *px = data_ptr(xc)
    cdef char *py = data_ptr(y)
    cdef int64_t *pi = <int64_t *>data_ptr(idx)
    with nogil:
        if adaptive and cdt == EM_F32:
            ember_adaptive_max_pool2d_fwd_f32(&a.p, <float *>px, <float *>py, pi, nt)
        elif adaptive:
            ember_adaptive_max_pool2d_fwd_f64(&a.p, <double *>px, <double *>py, pi, nt)
        elif cdt == EM_F32:
            ember_max_pool2d_fwd_f32(&a.p, <float *>px, <float *>py, pi, nt)
        else:
            ember_max_pool2d_fwd_f64(&a.p, <double *>px, <double *>py, pi, nt)
    if cdt != x._dtype:
        y = cast(y, x._dtype)
    if cl_order(x):     # torch pools keep the input's memory format
        y = to_cl(y)
        idx = to_cl(idx)
    if any_grad((x,)):
        record(op, (x,), y, dict({"indices": idx}, **attrs))
    return (y, idx) if return_indices else y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); indices are flat h*W+w per plane."""
    if needs_slow((input,)):
        return redispatch("max_pool2d", max_pool2d, (input, kernel_size, stride, padding,
                                                     dilation, ceil_mode, return_indices), None)
    op = "max_pool2d"
    cdef TensorBase x = _pool_input(input, op, "")
    cdef _PoolArgs a = _pool_setup(x, op, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool_run(op, x, a, False, {"kernel_size": kernel_size, "stride": stride,
                                           "padding": padding, "dilation": dilation,
                                           "ceil_mode": ceil_mode}, return_indices)


cdef TensorBase _scatter_backward(str op, TensorBase dy, TensorBase x, TensorBase idx):
    """dx = zeros_like(x); dx.view(planes, -1)[idx] += dy (max pool backward)"""
    if idx._dtype != EM_I64:
        raise RuntimeError(f"{op}: expected indices to be int64, got {dtype_obj(idx._dtype)}")
    if tuple(dy.shape) != tuple(idx.shape):
        raise RuntimeError(f"{op}: grad_output of size {shape_list(dy)} does not match "
                           f"indices of size {shape_list(idx)}")
    if x._ndim not in (3, 4):
        raise RuntimeError(f"{op}: expected a 3D or 4D input, but got {shape_list(x)}")
    cdef int nd0 = x._ndim
    if dy._ndim != x._ndim or tuple(dy.shape)[:nd0 - 2] != tuple(x.shape)[:nd0 - 2]:
        raise RuntimeError(f"{op}: grad_output of size {shape_list(dy)} does not match the "
                           f"input of size {shape_list(x)} in its leading (batch, channel) "
                           f"dimensions")
    cdef ember_pool2d_params p
    cdef int nd = x._ndim
    cdef TensorBase ic = to_cl(idx) if _pool_nhwc_ok(x) else contig(idx)
    # the kernel scatters to dx[plane, idx]: every index must lie in the plane
    cdef int64_t n_idx = numel_of(ic._ndim, ic._shape), hw = x._shape[nd - 2] * x._shape[nd - 1]
    cdef int64_t q, bad = -1
    cdef const int64_t *ip = <const int64_t *>data_ptr(ic)
    with nogil:
        for q in range(n_idx):
            if ip[q] < -1 or ip[q] >= hw:
                bad = q
                break
    if bad >= 0:
        raise RuntimeError(f"{op}: Found an invalid max index: {ip[bad]} (output volumes are "
                           f"of size {x._shape[nd - 2]}x{x._shape[nd - 1]})")
    memset(&p, 0, sizeof(p))
    p.H = x._shape[nd - 2]
    p.W = x._shape[nd - 1]
    p.planes = numel_of(nd - 2, x._shape)
    p.Ho = dy._shape[nd - 2]
    p.Wo = dy._shape[nd - 1]
    if _pool_nhwc_ok(x):
        return _max_pool_nhwc_backward(dy, x, ic)
    cdef int cdt = _pool_dtype(x, op)
    cdef TensorBase dyc = _float_contig(dy, cdt)
    cdef TensorBase dx = new_tensor(x._ndim, x._shape, cdt, x._device)
    cdef int nt = max_threads()
    with nogil:
        if cdt == EM_F32:
            ember_max_pool2d_bwd_f32(&p, <float *>data_ptr(dyc), <int64_t *>data_ptr(ic),
                                     <float *>data_ptr(dx), nt)
        else:
            ember_max_pool2d_bwd_f64(&p, <double *>data_ptr(dyc), <int64_t *>data_ptr(ic),
                                     <double *>data_ptr(dx), nt)
    if cdt != x._dtype:
        dx = cast(dx, x._dtype)
    return to_cl(dx) if cl_order(x) else dx


def max_pool2d_backward(grad_output, input, indices, kernel_size=None, stride=None, padding=0,
                        dilation=1, ceil_mode=False):
    """Gradient of max_pool2d: grad_output scattered to the argmax positions.  The
    forward's window (kernel_size, ...; optional) lets a device kernel gather each
    input element's terms instead; the sum is the scatter's either way."""
    cdef TensorBase dy = as_tensor(grad_output, "max_pool2d_backward", "grad_output")
    cdef TensorBase x = as_tensor(input, "max_pool2d_backward", "input", 1)
    cdef TensorBase idx = as_tensor(indices, "max_pool2d_backward", "indices")
    if needs_slow((dy, x, idx)):
        kw = None if kernel_size is None else {
            "kernel_size": kernel_size, "stride": stride, "padding": padding,
            "dilation": dilation, "ceil_mode": ceil_mode}
        return redispatch("max_pool2d_backward", max_pool2d_backward,
                          (grad_output, input, indices), kw)
    dx = _scatter_backward("max_pool2d_backward", dy, x, idx)
    return epilogue("max_pool2d_backward", (dy,), dx, {"indices": idx})


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling (PyTorch's padding/ceil_mode/divisor rules)."""
    if needs_slow((input,)):
        return redispatch("avg_pool2d", avg_pool2d, (input, kernel_size, stride, padding,
                                                     ceil_mode, count_include_pad,
                                                     divisor_override), None)
    op = "avg_pool2d"
    cdef TensorBase x = _pool_input(input, op, "")
    cdef _PoolArgs a = _pool_setup(x, op, kernel_size, stride, padding, 1, ceil_mode)
    divisor_override = _divisor(divisor_override, op)
    a.p.count_include_pad = 1 if count_include_pad else 0
    a.p.divisor = 0 if divisor_override is None else divisor_override
    cdef int cdt = _conv_dtype(x, op)
    cdef TensorBase xc = _float_contig(x, cdt)
    cdef TensorBase y = _new_shape(a.oshape, cdt, x._device)
    cdef int nt = max_threads()
    with nogil:
        if cdt == EM_F32:
            ember_avg_pool2d_fwd_f32(&a.p, <float *>data_ptr(xc), <float *>data_ptr(y), nt)
        else:
            ember_avg_pool2d_fwd_f64(&a.p, <double *>data_ptr(xc), <double *>data_ptr(y), nt)
    if cdt != x._dtype:
        y = cast(y, x._dtype)
    if cl_order(x):
        y = to_cl(y)
    return epilogue("avg_pool2d", (x,), y,
                    {"kernel_size": kernel_size, "stride": stride, "padding": padding,
                     "ceil_mode": ceil_mode, "count_include_pad": count_include_pad,
                     "divisor_override": divisor_override})


def avg_pool2d_backward(grad_output, input, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient of avg_pool2d with respect to its input."""
    op = "avg_pool2d_backward"
    cdef TensorBase dy = as_tensor(grad_output, op, "grad_output")
    cdef TensorBase x = _pool_input(input, op, "")
    if needs_slow((dy, x)):
        return redispatch(op, avg_pool2d_backward, (grad_output, input, kernel_size, stride,
                                                    padding, ceil_mode, count_include_pad,
                                                    divisor_override), None)
    cdef _PoolArgs a = _pool_setup(x, op, kernel_size, stride, padding, 1, ceil_mode)
    if tuple(dy.shape) != a.oshape:
        raise RuntimeError(f"{op}: expected grad_output of size {list(a.oshape)}, but got "
                           f"{shape_list(dy)}")
    divisor_override = _divisor(divisor_override, op)
    a.p.count_include_pad = 1 if count_include_pad else 0
    a.p.divisor = 0 if divisor_override is None else divisor_override
    cdef int cdt = _conv_dtype(dy, op)
    cdef TensorBase dyc = _float_contig(dy, cdt)
    cdef TensorBase dx = new_tensor(x._ndim, x._shape, cdt, x._device)
    cdef int nt = max_threads()
    with nogil:
        if cdt == EM_F32:
            ember_avg_pool2d_bwd_f32(&a.p, <float *>data_ptr(dyc), <float *>data_ptr(dx), nt)
        else:
            ember_avg_pool2d_bwd_f64(&a.p, <double *>data_ptr(dyc), <double *>data_ptr(dx), nt)
    if cdt != dy._dtype:
        dx = cast(dx, dy._dtype)
    if cl_order(x):
        dx = to_cl(dx)
    return epilogue(op, (dy,), dx,
                    {"kernel_size": kernel_size, "stride": stride, "padding": padding,
                     "ceil_mode": ceil_mode, "count_include_pad": count_include_pad,
                     "divisor_override": divisor_override})


cdef _PoolArgs _adaptive_setup(TensorBase x, output_size, str op):
    cdef _PoolArgs a = _PoolArgs()
    cdef int nd = x._ndim, i
    for i in range(nd - 2, nd):
        if x._shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shape_list(x)} with "
                               f"dimension {i} being empty")
    if isinstance(output_size, (list, tuple)):
        os_ = tuple(output_size)
        if len(os_) == 1:
            os_ = os_ * 2
        if len(os_) != 2:
            raise RuntimeError(f"{op}: output_size must be 2")
    else:
        os_ = (output_size, output_size)
    cdef int64_t H = x._shape[nd - 2], W = x._shape[nd - 1]
    Ho = H if os_[0] is None else _ival(os_[0], "output_size", op)
    Wo = W if os_[1] is None else _ival(os_[1], "output_size", op)
    if Ho < 0 or Wo < 0:
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {[Ho, Wo]}")
    if Ho > _POOL_MAX or Wo > _POOL_MAX:
        raise RuntimeError(f"{op}: output_size={[Ho, Wo]}: value cannot be converted to type "
                           f"int without overflow")
    _check_numel(op, tuple(x.shape[:nd - 2]) + (Ho, Wo))
    memset(&a.p, 0, sizeof(a.p))
    a.p.planes = numel_of(nd - 2, x._shape)
    a.p.H = H
    a.p.W = W
    a.p.Ho = Ho
    a.p.Wo = Wo
    a.oshape = tuple(x.shape[:nd - 2]) + (Ho, Wo)
    return a


def adaptive_avg_pool2d(input, output_size):
    """Adaptive average pooling: window [floor(i*H/Ho), ceil((i+1)*H/Ho))."""
    if needs_slow((input,)):
        return redispatch("adaptive_avg_pool2d", adaptive_avg_pool2d, (input, output_size), None)
    op = "adaptive_avg_pool2d"
    cdef TensorBase x = _pool_input(input, op, "adaptive")
    cdef _PoolArgs a = _adaptive_setup(x, output_size, op)
    if _pool_nhwc_ok(x):
        return epilogue(op, (x,), _adaptive_avg_pool_nhwc(x, a, False),
                        {"output_size": output_size})
    cdef int cdt = _conv_dtype(x, op)
    cdef TensorBase xc = _float_contig(x, cdt)
    cdef TensorBase y = _new_shape(a.oshape, cdt, x._device)
    cdef int nt = max_threads()
    with nogil:
        if cdt == EM_F32:
            ember_adaptive_avg_pool2d_fwd_f32(&a.p, <float *>data_ptr(xc), <float *>data_ptr(y),
                                              nt)
        else:
            ember_adaptive_avg_pool2d_fwd_f64(&a.p, <double *>data_ptr(xc), <double *>data_ptr(y),
                                              nt)
    if cdt != x._dtype:
        y = cast(y, x._dtype)
    if cl_order(x):
        y = to_cl(y)
    return epilogue(op, (x,), y, {"output_size": output_size})


def adaptive_avg_pool2d_backward(grad_output, input):
    """Gradient of adaptive_avg_pool2d with respect to its input."""
    op = "adaptive_avg_pool2d_backward"
    cdef TensorBase dy = as_tensor(grad_output, op, "grad_output")
    cdef TensorBase x = _pool_input(input, op, "adaptive")
    if needs_slow((dy, x)):
        return redispatch(op, adaptive_avg_pool2d_backward, (grad_output, input), None)
    cdef int nd = x._ndim
    if dy._ndim != nd:
        raise RuntimeError(f"{op}: grad_output of size {shape_list(dy)} does not match the "
                           f"input {shape_list(x)}")
    cdef _PoolArgs a = _adaptive_setup(x, (dy._shape[dy._ndim - 2], dy._shape[dy._ndim - 1]), op)
    if tuple(dy.shape) != a.oshape:
        raise RuntimeError(f"{op}: grad_output of size {shape_list(dy)} does not match the "
                           f"input {shape_list(x)}")
    if _pool_nhwc_ok(x) and dy._dtype == x._dtype:
        return epilogue(op, (dy,), _adaptive_avg_pool_nhwc(dy, a, True),
                        {"input_shape": tuple(x.shape)})
    cdef int cdt = _conv_dtype(dy, op)
    cdef TensorBase dyc = _float_contig(dy, cdt)
    cdef TensorBase dx = new_tensor(x._ndim, x._shape, cdt, x._device)
    cdef int nt = max_threads()
    with nogil:
        if cdt == EM_F32:
            ember_adaptive_avg_pool2d_bwd_f32(&a.p, <float *>data_ptr(dyc), <float *>data_ptr(dx),
                                              nt)
        else:
            ember_adaptive_avg_pool2d_bwd_f64(&a.p, <double *>data_ptr(dyc),
                                              <double *>data_ptr(dx), nt)
    if cdt != dy._dtype:
        dx = cast(dx, dy._dtype)
    if cl_order(x):
        dx = to_cl(dx)
    return epilogue(op, (dy,), dx, {"input_shape": tuple(x.shape)})


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive max pooling (indices flat h*W+w per plane)."""
    if needs_slow((input,)):
        return redispatch("adaptive_max_pool2d", adaptive_max_pool2d,
                          (input, output_size, return_indices), None)
    op = "adaptive_max_pool2d"
    cdef TensorBase x = _pool_input(input, op, "adaptive")
    cdef _PoolArgs a = _adaptive_setup(x, output_size, op)
    return _max_pool_run(op, x, a, True, {"output_size": output_size}, return_indices)


def adaptive_max_pool2d_backward(grad_output, input, indices):
    """Gradient of adaptive_max_pool2d: grad_output scattered to the argmax positions."""
    op = "adaptive_max_pool2d_backward"
    cdef TensorBase dy = as_tensor(grad_output, op, "grad_output")
    cdef TensorBase x = as_tensor(input, op, "input", 1)
    cdef TensorBase idx = as_tensor(indices, op, "indices")
    if needs_slow((dy, x, idx)):
        return redispatch(op, adaptive_max_pool2d_backward, (grad_output, input, indices), None)
    dx = _scatter_backward(op, dy, x, idx)
    return epilogue(op, (dy,), dx, {"indices": idx})

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "conv2d_input_grad",
           "conv2d_weight_grad", "max_pool2d", "max_pool2d_backward", "avg_pool2d",
           "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward",
           "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "unfold", "fold"]


# ----------------------------------------------------------------------------
# the CPU's shape checks for device backends (ember.cuda): the same messages, and
# the kernel parameters as plain Python values

def conv_params(str op, int nd, tuple xshape, tuple wshape, stride, padding, dilation, groups,
                bint transposed=False, output_padding=0):
    """Validate a conv2d/conv1d (or transposed) call as the CPU does; returns a dict
    of the ember_conv2d_params fields (of the equivalent forward conv for a
    transposed one) plus pt, pb, pl, pr (padding, possibly asymmetric) and batched."""
    if transposed and isinstance(padding, str):
        raise RuntimeError(f"{op}: padding must be an int or a tuple of ints, got '{padding}'")
    cdef _ConvArgs a = _conv_setup(op, nd, xshape, wshape, stride, padding, dilation, groups,
                                   transposed, output_padding)
    p = a.p
    return {"N": p.N, "C": p.C, "H": p.H, "W": p.W, "OC": p.OC, "kh": p.kh, "kw": p.kw,
            "sh": p.sh, "sw": p.sw, "ph": p.ph, "pw": p.pw, "dh": p.dh, "dw": p.dw,
            "groups": p.groups, "Ho": p.Ho, "Wo": p.Wo, "pt": a.pt, "pb": a.pb, "pl": a.pl,
            "pr": a.pr, "batched": bool(a.batched)}


def adaptive_params(input, str op, output_size):
    """Validate an adaptive pooling call as the CPU does; returns (dict of the
    ember_pool2d_params fields it sets: planes, H, W, Ho, Wo; output shape)."""
    cdef TensorBase x = _pool_input(input, op, "adaptive")
    cdef _PoolArgs a = _adaptive_setup(x, output_size, op)
    return ({"planes": a.p.planes, "H": a.p.H, "W": a.p.W, "Ho": a.p.Ho, "Wo": a.p.Wo},
            a.oshape)


def pool_params(input, str op, kernel_size, stride, padding, dilation, ceil_mode):
    """Validate a max/avg_pool2d call as the CPU does; returns (dict of the
    ember_pool2d_params fields, output shape)."""
    cdef TensorBase x = _pool_input(input, op, "")
    cdef _PoolArgs a = _pool_setup(x, op, kernel_size, stride, padding, dilation, ceil_mode)
    p = a.p
    return ({"planes": p.planes, "H": p.H, "W": p.W, "kh": p.kh, "kw": p.kw, "sh": p.sh,
             "sw": p.sw, "ph": p.ph, "pw": p.pw, "dh": p.dh, "dw": p.dw, "Ho": p.Ho,
             "Wo": p.Wo}, a.oshape)


def pool_divisor(divisor_override, str op):
    """divisor_override checked as the CPU checks it (None or a non-zero int)."""
    return _divisor(divisor_override, op)


# ----------------------------------------------------------------------------
# introspection (tests / benchmarks)

def _winograd(on=None):
    """Whether float32 3x3 stride-1 convolutions may run Winograd F(4x4, 3x3)
    (where it pays); on=True/False sets it.  Returns the setting in force."""
    return bool(ember_conv_winograd(-1 if on is None else (1 if on else 0)))


def _direct3(mode=None):
    """Query or set the direct 3x3 float32 kernel for few channels: 0 off,
    1 where it pays (the default), 2 wherever it fits (tests)."""
    return ember_conv_direct(-1 if mode is None else int(mode))


def _wgrad_cl(mode=None):
    """Query or set the float32 weight gradient through channels-last copies of
    the images: 0 off, 1 where it pays (the default), 2 wherever it fits (tests)."""
    return ember_conv_wgrad_cl(-1 if mode is None else int(mode))


def _kernel_isa():
    """ISA this module's GEMM and Winograd transforms use: 0 generic, 1 AVX2+FMA,
    2 AVX-512 (each extension module has its own copy of the GEMM)."""
    return ember_gemm_isa()


def _set_kernel_isa(int isa):
    """Force a lower ISA on this module's GEMM and Winograd kernels (tests); -1
    restores detection.  Returns the ISA in use."""
    return ember_gemm_set_isa(isa)
