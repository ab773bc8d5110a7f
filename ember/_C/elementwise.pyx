"""Elementwise ops: arithmetic, comparisons, unary math, where, clamp, lerp.

Every op goes: argument checks -> (slow path: Python mode / plugin device) ->
type promotion -> broadcast -> one C inner loop from the ISA table ->
autograd record when an input requires grad."""
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C.core import Size
import builtins as _bi

from ember._C.c_ew cimport *
from ember._C.layout cimport new_out, cast_keep, iter_init_ordered, iter_order

cdef const em_ew_table *TAB = em_ew_get()

cdef dict _PUBLIC = {}     # op name -> public function, for re-dispatch


cdef inline bint _is_t(object x):
    return isinstance(x, TensorBase)


cdef int _compute_dtype(int d) noexcept:
    return EM_F32 if d == EM_F16 or d == EM_BF16 else d


cdef TensorBase _operand(object x, int cd):
    if isinstance(x, TensorBase):
        return cast(<TensorBase>x, cd)
    return wrap_scalar(x, cd)


# out= dtypes that torch requires to equal the result's (the others take any dtype
# the result can be cast to)
cdef frozenset _EXACT_OUT = frozenset(["abs", "neg", "sign", "sgn", "ceil", "floor", "round",
                                       "trunc", "frac", "clamp", "signbit", "where"])


cdef object _assign(TensorBase self, TensorBase r, object inputs, str name):
    """Finish self.op_(...) computed out of place as r, with the checks of a kernel
    that writes self directly."""
    check_cast(r._dtype, self._dtype, name)
    check_written(self, inputs, name)
    return self.copy_(r)


cdef int _run(em_loop fn, list ops, int ndim, const int64_t *shape, const void *aux) except -1:
    if fn == NULL:
        raise NotImplementedError(f"no elementwise kernel for "
                                  f"'{torch_type_name((<TensorBase>ops[0])._dtype)}'")
    cdef NdIter it
    cdef TensorBase o = <TensorBase>ops[0]
    cdef int64_t n
    cdef int k
    cdef bint flat = True
    cdef char *ptrs[MAX_ARGS]
    cdef int64_t st[MAX_ARGS]
    cdef TensorBase t
    # fast path: every operand contiguous with the output's shape (or a 0-dim scalar)
    n = numel_of(ndim, shape)
    for k in range(len(ops)):
        t = <TensorBase>ops[k]
        if t._ndim == 0:
            st[k] = 0
        elif t._ndim == ndim and is_contig(t) and numel_of(t._ndim, t._shape) == n:
            st[k] = em_itemsize[t._dtype]
            for d in range(ndim):
                if t._shape[d] != shape[d]:
                    flat = False
        else:
            flat = False
        ptrs[k] = t._storage.data + t._offset * em_itemsize[t._dtype]
    if flat:
        if n == 0:
            return 0
        if n < 32768:
            with nogil:
                fn(ptrs, st, n, aux)
        else:
            k = len(ops)
            with nogil:
                em_run_nd(fn, k, ptrs, 1, &n, st, aux, nthreads_for(n))
        return 0
    iter_init_ordered(&it, ops, ndim, shape)
    with nogil:
        em_run_nd(fn, it.nargs, it.ptrs, it.ndim, it.shape, it.strides, aux, nthreads_for(it.numel))
    return 0


cdef int _operand_strides(NdIter *it, int a, TensorBase t, char *buf, TensorBase r) except -1:
    """Fill operand a of `it` (broadcast to r); return 1 when it can use the flat path."""
    cdef int d, k
    if t is None:
        it.ptrs[a] = buf
        for d in range(r._ndim):
            it.strides[a * MAX_DIMS + d] = 0
        return 1
    it.ptrs[a] = t._storage.data + t._offset * em_itemsize[t._dtype]
    k = r._ndim - t._ndim
    for d in range(r._ndim):
        if d < k or t._shape[d - k] == 1:
            it.strides[a * MAX_DIMS + d] = 0
        else:
            it.strides[a * MAX_DIMS + d] = t._strides[d - k] * em_itemsize[t._dtype]
    return 1 if (t._ndim == 0 or (t._ndim == r._ndim and is_contig(t) and
                                  numel_of(t._ndim, t._shape) == it.numel)) else 0


cdef inline int64_t _flat_stride(TensorBase t) noexcept:
    return 0 if (t is None or t._ndim == 0) else em_itemsize[t._dtype]


cdef int _run_bin(em_loop fn, TensorBase r, TensorBase x, char *xs, TensorBase y, char *ys,
                  void *aux) except -1:
    """out = f(x, y) where x or y may be None: then xs/ys point at a scalar (stride 0)."""
    cdef NdIter it
    cdef int64_t n = numel_of(r._ndim, r._shape)
    cdef int d
    cdef int flat
    it.nargs = 3
    it.ndim = r._ndim
    it.numel = n
    for d in range(r._ndim):
        it.shape[d] = r._shape[d]
    flat = _operand_strides(&it, 0, r, NULL, r) & _operand_strides(&it, 1, x, xs, r) & \
        _operand_strides(&it, 2, y, ys, r)
    if n == 0:
        return 0
    if flat:
        # every tensor operand contiguous with the output's shape, or a scalar
        it.strides[0] = _flat_stride(r)
        it.strides[1] = _flat_stride(x)
        it.strides[2] = _flat_stride(y)
        if n < 32768:
            with nogil:
                fn(it.ptrs, it.strides, n, aux)
        else:
            with nogil:
                em_run_nd(fn, 3, it.ptrs, 1, &n, it.strides, aux, nthreads_for(n))
        return 0
    iter_order(&it)
    iter_coalesce(&it)
    with nogil:
        em_run_nd(fn, 3, it.ptrs, it.ndim, it.shape, it.strides, aux, nthreads_for(it.numel))
    return 0


cdef object _binary(int op, str name, object a, object b, object out, int kind,
                    bint inplace=False, object attrs=None, double *alpha=NULL):
    cdef bint ta = _is_t(a), tb = _is_t(b)
    cdef TensorBase x = None, y = None, r, res
    cdef int64_t shape[MAX_DIMS]
    cdef int nd, rd, cd, odt
    cdef int flag = 0
    cdef uint64_t xbuf[2]
    cdef uint64_t ybuf[2]
    cdef em_loop fn
    if not ta and not tb:
        raise TypeError(f"{name}(): expected at least one tensor argument, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    check_out_arg(out, name)
    if slow_path() or (ta and off_fast(<TensorBase>a)) or (tb and off_fast(<TensorBase>b)) \
            or lazy_out(out):
        if ta and tb:
            check_same_device(<TensorBase>a, <TensorBase>b, name, "other")
        return redispatch(name, _PUBLIC[name], (a, b), {} if out is None else {"out": out})
    if ta and tb:
        if (<TensorBase>a)._device is not (<TensorBase>b)._device:
            check_same_device(<TensorBase>a, <TensorBase>b, name, "other")
    elif (not ta and scalar_category(a) < 0) or (not tb and scalar_category(b) < 0):
        bad = b if ta else a
        raise TypeError(f"{name}(): argument 'other' must be Tensor or Number, not "
                        f"{type(bad).__name__}")
    rd = result_type2(a, b)
    if kind == K_DIV or kind == K_FLOAT:
        if category(rd) < 2:
            rd = default_dtype()
    elif kind == K_INT and category(rd) >= 2:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(rd)}'")
    if op == EW_SUB and kind == K_ARITH and rd == EM_BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    cd = _compute_dtype(rd)
    fn = TAB.cmp[op][cd] if kind == K_CMP else TAB.bin[op][cd]
    if fn == NULL:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(rd)}'")
    odt = EM_BOOL if kind == K_CMP else rd
    # Python scalars stay in stack buffers (stride 0): no tensor is allocated for them
    if ta:
        x = cast(<TensorBase>a, cd)
    else:
        scalar_to_buf(a, cd, xbuf)
    if tb:
        y = cast(<TensorBase>b, cd)
    else:
        scalar_to_buf(b, cd, ybuf)
    nd = broadcast_shape(x._ndim if ta else 0, x._shape if ta else NULL,
                         y._ndim if tb else 0, y._shape if tb else NULL, shape)
    if inplace:
        res = <TensorBase>a
        if nd != res._ndim or any([shape[i] != res._shape[i] for i in range(nd)]):
            raise RuntimeError(f"output with shape {list(res.shape)} doesn't match the broadcast "
                               f"shape {[shape[i] for i in range(nd)]}")
        check_cast(odt, res._dtype, name)
        check_written(res, b, name)
        odt = res._dtype
        out = res
    if out is not None:
        res = <TensorBase?>out
        if res._ndim != nd or any([shape[i] != res._shape[i] for i in range(nd)]):
            if numel_of(res._ndim, res._shape) != 0:
                raise RuntimeError(f"{name}: output with shape {list(res.shape)} doesn't match "
                                   f"the broadcast shape {[shape[i] for i in range(nd)]}")
            raise RuntimeError(f"{name}: out= must be allocated with the broadcast shape "
                               f"{[shape[i] for i in range(nd)]}")
        if not inplace:
            check_cast(odt, res._dtype, name)
            check_written(res, a, name)
            check_written(res, b, name)
        r = res if (res._dtype == (EM_BOOL if kind == K_CMP else cd)) else \
            new_tensor(nd, shape, EM_BOOL if kind == K_CMP else cd, cpu_device())
    else:
        r = new_out(nd, shape, EM_BOOL if kind == K_CMP else cd,
                    x._device if ta else y._device, [a if ta else None, b if tb else None])
    _run_bin(fn, r, x, <char *>xbuf, y, <char *>ybuf, <void *>alpha if alpha != NULL else &flag)
    if flag:
        raise RuntimeError("ZeroDivisionError")
    if out is not None:
        if r is not out:
            copy_into(<TensorBase?>out, r)
        r = <TensorBase?>out
        bump_version(r)
    elif odt != r._dtype:
        r = cast_keep(r, odt)
    if grad_on() and kind != K_CMP and kind != K_INT and (
            (ta and (<TensorBase>a)._requires_grad) or (tb and (<TensorBase>b)._requires_grad)):
        if inplace or out is not None:
            raise RuntimeError(f"{name}: in-place / out= operations on tensors that require "
                               f"grad are handled by the autograd layer")
        record(name, (a, b), r, attrs)
    return r


cdef dict _with_out(dict kw, object out):
    if out is not None:
        kw["out"] = out
    return kw


cdef object _inplace_binary(int op, str name, TensorBase a, object b, int kind):
    """a.op_(b): in the graph, a's old value is replaced by op(old a, b)."""
    cdef TensorBase old, r
    if needs_slow1(a):
        return redispatch(name + "_", _PUBLIC[name + "_"], (a, b), {})
    if grad_on() and (a._requires_grad or (_is_t(b) and (<TensorBase>b)._requires_grad)):
        old = graph_old(a, name + "_")
        check_written(a, b, name + "_")
        r = <TensorBase>_binary(op, name, old, b, None, kind)
        check_cast(r._dtype, a._dtype, name + "_")
        return commit_inplace(a, r)
    return _binary(op, name, a, b, None, kind, True)


cdef object _redispatch_unary(str name, object a, object out, object attrs, bint inplace):
    """Re-dispatch a unary op with its parameters (``attrs``, in the public signature's
    order; gelu's is keyword-only) and, for the in-place form, to the in-place function."""
    args = (a,)
    kwargs = {} if out is None else {"out": out}
    if attrs:
        if name == "gelu":
            kwargs["approximate"] = attrs[0]
        else:
            args += tuple(attrs)
    if not inplace:
        return redispatch(name, _PUBLIC[name], args, kwargs)
    if name == "leaky_relu":
        return redispatch(name, _PUBLIC[name], args + (True,), kwargs)
    return redispatch(name + "_", _PUBLIC[name + "_"], args, kwargs)


cdef object _unary(int op, str name, object a, object out, int kind, const void *aux,
                   object attrs=None, bint inplace=False):
    """kind: K_ARITH keeps the dtype, K_FLOAT promotes ints, K_CMP -> bool predicate."""
    cdef TensorBase x, r, t
    cdef int rd, cd
    cdef em_loop fn
    t = as_tensor(a, name, "input", 1)
    check_out_arg(out, name)
    if needs_slow1(t) or lazy_out(out):
        return _redispatch_unary(name, a, out, attrs, inplace)
    rd = t._dtype
    if kind != K_CMP and ((op == EW_ABS and rd == EM_BOOL) or
                          (op == EW_FRAC and category(rd) < 2)):
        raise NotImplementedError(f"\"{'abs' if op == EW_ABS else 'frac'}_cpu\" not "
                                  f"implemented for '{torch_type_name(rd)}'")
    if kind == K_FLOAT and category(rd) < 2:
        rd = default_dtype()
    if category(rd) == 3 and op == EW_SIGN and kind != K_CMP and name == "sign":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    cd = _compute_dtype(rd)
    fn = TAB.pred[op][cd] if kind == K_CMP else TAB.un[op][cd]
    if category(rd) == 3 and op == EW_ABS and kind != K_CMP:
        return _abs_complex(fn, t, out)
    if fn == NULL:
        if op == EW_NEG and rd == EM_BOOL and kind != K_CMP:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(rd)}'")
    x = cast(t, cd)
    if inplace:
        check_cast(rd, t._dtype, name + "_")
        out = t
    if out is not None:
        r = <TensorBase?>out
        if r._ndim != t._ndim or any([r._shape[i] != t._shape[i] for i in range(t._ndim)]):
            raise RuntimeError(f"{name}: output with shape {list(r.shape)} doesn't match the "
                               f"input shape {list(t.shape)}")
        if not inplace:
            check_out_dtype(EM_BOOL if kind == K_CMP else rd, r._dtype,
                            OUT_EXACT if name in _EXACT_OUT else OUT_CAST, name)
        check_written(r, None if inplace else a, name + "_" if inplace else name)
        if r._dtype != (EM_BOOL if kind == K_CMP else cd):
            r = new_tensor(t._ndim, t._shape, EM_BOOL if kind == K_CMP else cd, t._device)
    else:
        r = new_out(t._ndim, t._shape, EM_BOOL if kind == K_CMP else cd, t._device, [t])
    _run(fn, [r, x], t._ndim, t._shape, aux)
    if out is not None:
        if r is not out:
            copy_into(<TensorBase?>out, r)
        r = <TensorBase?>out
        bump_version(r)
    elif kind != K_CMP and rd != cd:
        r = cast_keep(r, rd)
    if kind != K_CMP and grad_on() and t._requires_grad and not inplace:
        record(name, (a,), r, attrs)
    return r


cdef object _abs_complex(em_loop fn, TensorBase t, object out):
    """abs of a complex tensor: a real tensor of the matching precision."""
    cdef TensorBase r = new_tensor(t._ndim, t._shape, real_of(t._dtype), t._device)
    _run(fn, [r, t], t._ndim, t._shape, NULL)
    if out is not None:
        check_out_dtype(r._dtype, (<TensorBase?>out)._dtype, OUT_EXACT, "abs")
        copy_into(<TensorBase>out, r)
        bump_version(<TensorBase>out)
        return out
    if grad_on() and t._requires_grad:
        record("abs", (t,), r, None)
    return r


cdef object _inplace_unary(int op, str name, TensorBase a, int kind, const void *aux,
                           object attrs=None):
    cdef TensorBase old, r
    if op == EW_ABS and category(a._dtype) == 3:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    if needs_slow1(a):
        return redispatch(name + "_", _PUBLIC[name + "_"], (a,), {})
    if grad_on() and a._requires_grad:
        old = graph_old(a, name + "_")
        check_written(a, None, name + "_")
        r = <TensorBase>_unary(op, name, old, None, kind, aux, attrs)
        return commit_inplace(a, r)
    return _unary(op, name, a, None, kind, aux, attrs, True)


# ---------------------------------------------------------------------------
# binary ops

cdef bint _fuse_alpha(object a, object b) except -1:
    """add/sub with alpha in one fused pass: float results, nothing to record."""
    if not (_is_t(a) and _is_t(b)):
        return False
    # A Python mode or a non-CPU device gets the op re-dispatched without ``alpha``:
    # there it runs as mul + add, each dispatched on its own.
    if slow_path() or off_fast(<TensorBase>a) or off_fast(<TensorBase>b):
        return False
    if grad_on() and ((<TensorBase>a)._requires_grad or (<TensorBase>b)._requires_grad):
        return False
    return category(result_type2(a, b)) == 2


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, with broadcasting and PyTorch's type promotion."""
    cdef double al
    if alpha != 1:
        if _fuse_alpha(input, other):
            al = alpha
            return _binary(EW_ADDA, "add", input, other, out, K_ARITH, False, None, &al)
        other = mul(other, alpha)
    return _binary(EW_ADD, "add", input, other, out, K_ARITH)


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    cdef double al
    if alpha != 1:
        if _fuse_alpha(input, other):
            al = -alpha
            return _binary(EW_ADDA, "sub", input, other, out, K_ARITH, False, None, &al)
        other = mul(other, alpha)
    return _binary(EW_SUB, "sub", input, other, out, K_ARITH)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if alpha != 1:
        input = mul(input, alpha)
    return _binary(EW_SUB, "sub", other, input, None, K_ARITH)


def mul(input, other, *, out=None):
    """input * other."""
    return _binary(EW_MUL, "mul", input, other, out, K_ARITH)


def div(input, other, *, rounding_mode=None, out=None):
    """input / other; rounding_mode None (true division), "trunc" or "floor"."""
    if rounding_mode is None:
        return _binary(EW_DIV, "div", input, other, out, K_DIV)
    if rounding_mode == "floor":
        return _binary(EW_FLOORDIV, "floor_divide", input, other, out, K_ARITH)
    if rounding_mode == "trunc":
        rd = result_type2(input, other)
        if category(rd) == 2:
            return _g["trunc"](_binary(EW_DIV, "div", input, other, None, K_DIV), out=out)
        q = _binary(EW_FLOORDIV, "floor_divide", input, other, None, K_ARITH)
        # floor and trunc differ where the remainder is non-zero and signs differ
        rem = _binary(EW_FMOD, "fmod", input, other, None, K_ARITH)
        ne, lt, land = _g["ne"], _g["lt"], _g["logical_and"]
        fix = land(ne(rem, 0), ne(lt(rem, 0), lt(other, 0) if _is_t(other) else other < 0))
        return add(q, fix, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def true_divide(input, other, *, out=None):
    return div(input, other, out=out)


def pow(input, exponent, *, out=None):
    """input ** exponent."""
    if not _is_t(exponent) and _is_t(input) and category((<TensorBase>input)._dtype) < 2 \
            and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _binary(EW_POW, "pow", input, exponent, out, K_ARITH)


def float_power(input, exponent, *, out=None):
    if out is not None and isinstance(out, TensorBase) and (<TensorBase>out)._dtype != EM_F64:
        raise RuntimeError(f"the output given to float_power has dtype "
                           f"{torch_type_name((<TensorBase>out)._dtype)} but the operation's result "
                           f"requires dtype Double")
    return pow(_to64(input), _to64(exponent), out=out)


cdef object _to64(object x):
    return (<TensorBase>x)._cast(EM_F64) if _is_t(x) else float(x)


# backward helpers (fused kernels the autograd formulas call)
def relu_backward(grad, input):
    return _binary(EW_RELU_BW, "relu_backward", grad, input, None, K_FLOAT)


def sigmoid_backward(grad, output):
    return _binary(EW_SIGMOID_BW, "sigmoid_backward", grad, output, None, K_FLOAT)


def tanh_backward(grad, output):
    return _binary(EW_TANH_BW, "tanh_backward", grad, output, None, K_FLOAT)


def gelu_backward(grad, input, approximate="none"):
    if approximate == "tanh":
        return _binary(EW_GELU_TANH_BW, "gelu_backward", grad, input, None, K_FLOAT, False,
                       (approximate,))
    return _binary(EW_GELU_BW, "gelu_backward", grad, input, None, K_FLOAT, False,
                   (approximate,))


def silu_backward(grad, input):
    return _binary(EW_SILU_BW, "silu_backward", grad, input, None, K_FLOAT)


cdef bint _fused_bw_ok(object grad, object input):
    """a fused backward helper can run: CPU tensors, no Python mode, nothing to record"""
    if not isinstance(grad, TensorBase) or not isinstance(input, TensorBase):
        return False
    if needs_slow1(<TensorBase>grad) or needs_slow1(<TensorBase>input):
        return False
    return not (grad_on() and ((<TensorBase>grad)._requires_grad or
                               (<TensorBase>input)._requires_grad))


def _elu_backward(grad, input, double alpha, double scale, double input_scale):
    """elu's input gradient in one pass (torch's elu_backward on the input); None where
    the autograd formula's differentiable form must run: Python modes, other devices,
    a graph being recorded."""
    cdef double prm[3]
    if not _fused_bw_ok(grad, input):
        return None
    prm[0] = alpha
    prm[1] = scale
    prm[2] = input_scale
    return _binary(EW_ELU_BW, "elu_backward", grad, input, None, K_FLOAT, False, None, prm)


def _mish_backward(grad, input):
    """mish's input gradient in one pass; None as _elu_backward."""
    if not _fused_bw_ok(grad, input):
        return None
    return _binary(EW_MISH_BW, "mish_backward", grad, input, None, K_FLOAT)


_POINT_LOSSES = {"mse_loss": (EW_MSE, EW_MSE_GRAD), "smooth_l1_loss": (EW_SMOOTH_L1, EW_SMOOTH_L1_GRAD),
                 "huber_loss": (EW_HUBER, EW_HUBER_GRAD),
                 "binary_cross_entropy_with_logits": (EW_BCE_LOGITS, EW_BCE_LOGITS_GRAD)}


def _point_loss(str name, input, target, double param, grad=None):
    """The elementwise loss ``name`` of input and target (``grad`` None), or its input
    gradient under the uniform incoming gradient ``grad`` (a float: norm * grad), in
    one pass; None where the composed form must run: Python modes, other devices,
    dtypes other than float32/float64 alike, shapes that differ, a graph to record."""
    cdef double prm[2]
    if not (_fused_bw_ok(input, target) and (<TensorBase>input)._dtype == (<TensorBase>target)._dtype
            and (<TensorBase>input)._dtype in (EM_F32, EM_F64)
            and tuple(input.shape) == tuple(target.shape)):
        return None
    prm[0] = param
    fwd, bwd = _POINT_LOSSES[name]
    if grad is None:
        return _binary(fwd, name, input, target, None, K_FLOAT, False, None, prm)
    prm[1] = grad
    return _binary(bwd, name, input, target, None, K_FLOAT, False, None, prm)


def _softplus_backward(grad, input, double beta, double threshold):
    """softplus's input gradient in one pass (torch's softplus_backward); None as
    _elu_backward."""
    cdef double prm[2]
    if not _fused_bw_ok(grad, input):
        return None
    prm[0] = beta
    prm[1] = threshold
    return _binary(EW_SOFTPLUS_BW, "softplus_backward", grad, input, None, K_FLOAT, False, None,
                   prm)


# in-place binary variants
def add_(TensorBase self not None, other, *, alpha=1):
    cdef double al
    if alpha != 1:
        if _fuse_alpha(self, other) and not slow_path() and not off_fast(self):
            al = alpha
            return _binary(EW_ADDA, "add", self, other, None, K_ARITH, True, None, &al)
        other = mul(other, alpha)
    return _inplace_binary(EW_ADD, "add", self, other, K_ARITH)


def sub_(TensorBase self not None, other, *, alpha=1):
    cdef double al
    if alpha != 1:
        if _fuse_alpha(self, other) and not slow_path() and not off_fast(self):
            al = -alpha
            return _binary(EW_ADDA, "sub", self, other, None, K_ARITH, True, None, &al)
        other = mul(other, alpha)
    return _inplace_binary(EW_SUB, "sub", self, other, K_ARITH)


def mul_(TensorBase self not None, other):
    return _inplace_binary(EW_MUL, "mul", self, other, K_ARITH)


def div_(TensorBase self not None, other, *, rounding_mode=None):
    if rounding_mode is not None:
        return _assign(self, div(self, other, rounding_mode=rounding_mode), other, "div_")
    return _inplace_binary(EW_DIV, "div", self, other, K_DIV)


def pow_(TensorBase self not None, exponent):
    return _inplace_binary(EW_POW, "pow", self, exponent, K_ARITH)


# ---------------------------------------------------------------------------
# the generated ops: every line of the op lists (src_c/include/ember_ew_ops.h) with a
# public name becomes a function here, with its in-place form

cdef dict _op_list(int group, int n):
    """public name -> (op code, kind) of one op list's generated bindings"""
    cdef dict d = {}
    cdef int op
    for op in range(n):
        name = em_ew_op_name(group, op).decode()
        if name:
            d[name] = (op, em_ew_op_kind(group, op))
    return d


cdef dict _BINARY = _op_list(EW_G_BIN, EW_NBIN)
cdef dict _COMPARE = _op_list(EW_G_CMP, EW_NCMP)
cdef dict _UNARY = _op_list(EW_G_UN, EW_NUN)
cdef dict _PRED = _op_list(EW_G_PRED, EW_NPRED)
_UNARY["sgn"] = _UNARY["sign"]      # torch's sign for complex numbers (z / |z|)
# rounding is the identity on integer tensors (PyTorch returns a copy)
cdef dict _ROUNDING = {"floor": EW_FLOOR, "ceil": EW_CEIL, "round": EW_ROUND, "trunc": EW_TRUNC}


def _op_lists():
    """{list: [(public name, op code, kind)]} as the C header declares them (for tests)"""
    return {g: [(em_ew_op_name(i, op).decode(), op, em_ew_op_kind(i, op)) for op in range(n)]
            for i, g, n in ((EW_G_BIN, "binary", EW_NBIN), (EW_G_CMP, "compare", EW_NCMP),
                            (EW_G_UN, "unary", EW_NUN), (EW_G_PRED, "predicate", EW_NPRED))}


def _make_binary(str name, int op, int kind):
    def f(input, other, *, out=None):
        return _binary(op, name, input, other, out, kind)

    def f_(self, other):
        if not isinstance(self, TensorBase):
            raise TypeError(f"{name}_(): argument 'input' must be Tensor, not "
                            f"{type(self).__name__}")
        if kind == K_CMP:
            return _assign(<TensorBase>self, _binary(op, name, self, other, None, kind),
                           other, name + "_")
        return _inplace_binary(op, name, <TensorBase>self, other, kind)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of ``input`` and ``other``, broadcast together."
    f_.__name__ = f_.__qualname__ = name + "_"
    return f, f_


def _make_unary(str name, int op, int kind):
    def f(input, *, out=None):
        return _unary(op, name, input, out, kind, NULL)

    def f_(self):
        if not isinstance(self, TensorBase):
            raise TypeError(f"{name}_(): argument 'input' must be Tensor, not "
                            f"{type(self).__name__}")
        return _inplace_unary(op, name, <TensorBase>self, kind, NULL)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of ``input``."
    f_.__name__ = f_.__qualname__ = name + "_"
    return f, f_


cdef int _check_rounding_dtype(int dtype, str name) except -1:
    if dtype == EM_BOOL:
        raise NotImplementedError(f"\"{name}_vml_cpu\" not implemented for 'Bool'")
    return 0


def _make_rounding(str name):
    cdef int op = _ROUNDING[name]

    def f(input, *, decimals=0, out=None):
        if not isinstance(input, TensorBase):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        _check_rounding_dtype((<TensorBase>input)._dtype, name)
        if category((<TensorBase>input)._dtype) < 2:
            r = (<TensorBase>input).clone()
            return write_out(out, r, OUT_EXACT, input, name)
        if decimals:
            s = 10.0 ** decimals
            return div(_unary(op, name, mul(input, s), None, K_ARITH, NULL), s, out=out)
        return _unary(op, name, input, out, K_ARITH, NULL)

    def f_(TensorBase self not None, *, decimals=0):
        _check_rounding_dtype(self._dtype, name)
        if category(self._dtype) < 2:
            return self
        if decimals:
            return _assign(self, f(self, decimals=decimals), None, name + "_")
        return _inplace_unary(op, name, self, K_ARITH, NULL)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of ``input`` (the identity on integer tensors)."
    f_.__name__ = f_.__qualname__ = name + "_"
    return f, f_


def _make_pred(str name, int op):
    def f(input, *, out=None):
        return _unary(op, name, input, out, K_CMP, NULL)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` of ``input`` (a bool tensor)."
    return f


_g = globals()
for _name, (_op, _kind) in (_BINARY | _COMPARE).items():
    _g[_name], _g[_name + "_"] = _make_binary(_name, _op, _kind)
for _name, (_op, _kind) in _UNARY.items():
    _g[_name], _g[_name + "_"] = _make_unary(_name, _op, _kind)
for _name in _ROUNDING:
    _g[_name], _g[_name + "_"] = _make_rounding(_name)
for _name, (_op, _kind) in _PRED.items():
    _g[_name] = _make_pred(_name, _op)


def logical_not_(TensorBase self not None):
    return _assign(self, _g["logical_not"](self), None, "logical_not_")


def positive(input):
    if (<TensorBase?>input)._dtype == EM_BOOL:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def gelu(input, *, approximate="none", out=None):
    """Gaussian error linear unit, exact (erf) or with the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if needs_slow_arg(input):     # modes and plugins get the parameters too
        return redispatch("gelu", gelu, (input,), _with_out({"approximate": approximate}, out))
    op = EW_GELU_TANH if approximate == "tanh" else EW_GELU
    return _unary(op, "gelu", input, out, K_FLOAT, NULL, (approximate,))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold``."""
    cdef double prm[2]
    if needs_slow_arg(input):
        return redispatch("softplus", softplus, (input, beta, threshold), {})
    prm[0] = beta
    prm[1] = threshold
    return _unary(EW_SOFTPLUS, "softplus", input, None, K_FLOAT, prm, (beta, threshold))


def logsigmoid(input):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), in one pass."""
    if needs_slow_arg(input):
        return redispatch("logsigmoid", logsigmoid, (input,), {})
    return _unary(EW_LOGSIGMOID, "logsigmoid", input, None, K_FLOAT, NULL, ())


def leaky_relu(input, negative_slope=0.01, inplace=False):
    cdef double prm[1]
    if needs_slow_arg(input):
        return redispatch("leaky_relu_" if inplace else "leaky_relu", leaky_relu,
                          (input, negative_slope, inplace), {})
    prm[0] = negative_slope
    if inplace:
        return _inplace_unary(EW_LEAKY_RELU, "leaky_relu", input, K_FLOAT, prm, (negative_slope,))
    return _unary(EW_LEAKY_RELU, "leaky_relu", input, None, K_FLOAT, prm, (negative_slope,))


def elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    cdef double prm[3]
    if needs_slow_arg(input):
        return redispatch("elu", elu, (input, alpha, scale, input_scale), {})
    prm[0] = alpha
    prm[1] = scale
    prm[2] = input_scale
    return _unary(EW_ELU, "elu", input, None, K_FLOAT, prm, (alpha, scale, input_scale))


def _nan_to_num(TensorBase input not None, double nan, double posinf, double neginf,
                bint inplace=False):
    """nan_to_num of a floating tensor in one pass, into a new tensor or in place (the
    fast path of ``ember._composite.nan_to_num(_)``); None where the composite's
    differentiable form must run: Python modes, other devices, autograd."""
    cdef double prm[3]
    if needs_slow1(input) or (grad_on() and input._requires_grad):
        return None
    prm[0] = nan
    prm[1] = posinf
    prm[2] = neginf
    return _unary(EW_NAN_TO_NUM, "nan_to_num", input, None, K_ARITH, prm, None, inplace)


cdef object _plain_unary(int op, str name, TensorBase input):
    """One pass of a by-hand float32/float64 op with nothing to record; None where
    the composed form runs (Python modes, other devices, other dtypes, autograd)."""
    if needs_slow1(input) or (grad_on() and input._requires_grad) or \
            input._dtype not in (EM_F32, EM_F64):
        return None
    return _unary(op, name, input, None, K_ARITH, NULL)


def _angle_real(TensorBase input not None):
    """angle of real float input: pi below 0, 0 elsewhere, NaN kept; or None."""
    return _plain_unary(EW_ANGLE, "angle", input)


def _frexp(TensorBase input not None):
    """frexp's mantissa and its exponent (in the input's float type); or None."""
    m = _plain_unary(EW_FREXP_M, "frexp", input)
    return None if m is None else (m, _plain_unary(EW_FREXP_E, "frexp", input))


def relu_(TensorBase self not None):
    return _inplace_unary(EW_RELU, "relu", self, K_ARITH, NULL)


cdef object _clamp_scalar(object input, object lo, object hi, object out, bint inplace):
    cdef TensorBase t = <TensorBase>input
    cdef char aux[24]
    cdef int rd = t._dtype, cd
    memset(aux, 0, 24)
    for v in (lo, hi):
        if v is not None and category(t._dtype) < 2 and scalar_category(v) == 2:
            rd = default_dtype()
    if inplace:
        check_cast(rd, t._dtype, "clamp_")
        rd = t._dtype
    cd = _compute_dtype(rd)
    if lo is not None:
        scalar_to_buf(lo, cd, aux)
        (<int *>(aux + 16))[0] |= 1
    if hi is not None:
        scalar_to_buf(hi, cd, aux + 8)
        (<int *>(aux + 16))[0] |= 2
    x = cast_keep(t, rd)
    if inplace:
        return _inplace_unary(EW_CLAMP, "clamp", t, K_ARITH, aux, (lo, hi))
    return _unary(EW_CLAMP, "clamp", x, out, K_ARITH, aux, (lo, hi))


cdef object _clamp3(TensorBase x, object lo, object hi):
    """clamp with two tensor bounds of x's dtype in one pass; None where the
    composite runs (a scalar or missing bound, another dtype, a non-CPU or lazy-bit
    operand, autograd)."""
    cdef TensorBase l, h, r
    cdef int64_t s1[MAX_DIMS]
    cdef int64_t s2[MAX_DIMS]
    cdef int nd
    cdef em_loop fn
    if not (_is_t(lo) and _is_t(hi)) or needs_slow((x, lo, hi)):
        return None
    l, h = <TensorBase>lo, <TensorBase>hi
    fn = TAB.clamp3[x._dtype]
    if fn == NULL or l._dtype != x._dtype or h._dtype != x._dtype or any_grad((x, lo, hi)):
        return None
    nd = broadcast_shape(x._ndim, x._shape, l._ndim, l._shape, s1)
    nd = broadcast_shape(nd, s1, h._ndim, h._shape, s2)
    r = new_out(nd, s2, x._dtype, x._device, [x, lo, hi])
    _run(fn, [r, x, l, h], nd, s2, NULL)
    return r


def clamp(input, min=None, max=None, *, out=None):
    """Clamp every element into [min, max]; bounds may be numbers or tensors."""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    if not isinstance(input, TensorBase):
        raise TypeError(f"clamp(): argument 'input' must be Tensor, not {type(input).__name__}")
    if needs_slow_arg(input):
        return redispatch("clamp", clamp, (input, min, max), _with_out({}, out))
    if _is_t(min) or _is_t(max):
        r = _clamp3(input, min, max)
        if r is not None:
            return write_out(out, r, OUT_EXACT, (input, min, max), "clamp")
        r = input
        if min is not None:
            r = _g["maximum"](r, min)
        if max is not None:
            r = _g["minimum"](r, max)
        return write_out(out, r, OUT_EXACT, (input, min, max), "clamp")
    return _clamp_scalar(input, min, max, out, False)


def clamp_(TensorBase self not None, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    if needs_slow_arg(self):
        return redispatch("clamp_", clamp_, (self, min, max), {})
    if _is_t(min) or _is_t(max):
        return _assign(self, clamp(self, min, max), (min, max), "clamp_")
    return _clamp_scalar(self, min, max, None, True)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if inplace:
        return clamp_(input, min_val, max_val)
    return clamp(input, min_val, max_val)


def where(condition, input=None, other=None, *, out=None):
    """Elements of ``input`` where ``condition`` holds, else of ``other``."""
    cdef TensorBase c, x, y, r
    cdef int64_t s1[MAX_DIMS]
    cdef int64_t s2[MAX_DIMS]
    cdef int nd, rd
    if input is None and other is None:
        if not _is_t(condition):
            raise TypeError(f"where(): argument 'condition' must be Tensor, not "
                            f"{type(condition).__name__}")
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, TensorBase):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not "
                        f"{type(condition).__name__}")
    c = <TensorBase>condition
    if slow_path() or off_fast(c) or needs_slow_arg(input) or needs_slow_arg(other):
        return redispatch("where", where, (condition, input, other), {})
    if c._dtype != EM_BOOL:
        if c._dtype == EM_U8:
            c = cast(c, EM_BOOL)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {torch_type_name(c._dtype)}")
    for v, nm in ((input, "input"), (other, "other")):
        if _is_t(v):
            check_same_device(c, <TensorBase>v, "where", nm)
    rd = result_type2(input, other)
    x = _operand(input, rd)
    y = _operand(other, rd)
    nd = broadcast_shape(x._ndim, x._shape, y._ndim, y._shape, s1)
    nd = broadcast_shape(nd, s1, c._ndim, c._shape, s2)
    r = new_out(nd, s2, rd, c._device, [c, input if _is_t(input) else None,
                                        other if _is_t(other) else None])
    _run(TAB.where[rd], [r, c, x, y], nd, s2, NULL)
    if grad_on() and ((_is_t(input) and (<TensorBase>input)._requires_grad) or
                      (_is_t(other) and (<TensorBase>other)._requires_grad)):
        record("where", (input, other), r, (c,))
    return write_out(out, r, OUT_EXACT, (condition, input, other), "where")


cdef TensorBase _direct_out(object out, int nd, const int64_t *shape, int dtype, tuple inputs,
                            str op):
    """out itself when the kernel can write it directly (a CPU tensor of the result's
    shape and dtype, not overlapping an input but for being one); else None, and the
    result goes through write_out's checks and copy."""
    cdef TensorBase o
    cdef int i
    if not isinstance(out, TensorBase) or lazy_out(out):
        return None
    o = <TensorBase>out
    if o._dtype != dtype or o._ndim != nd or o._device.kind != DEV_CPU or o._requires_grad:
        return None
    for i in range(nd):
        if o._shape[i] != shape[i]:
            return None
    check_written(o, inputs, op)
    return o


def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input), computed stably."""
    cdef TensorBase a, b, w, r
    cdef int64_t s1[MAX_DIMS]
    cdef int64_t s2[MAX_DIMS]
    cdef int nd, rd, cd
    if needs_slow((input, end, weight)):
        return redispatch("lerp", lerp, (input, end, weight), {} if out is None else {"out": out})
    rd = result_type2(input, end)
    if category(rd) < 2:
        raise RuntimeError(f"\"lerp_kernel_scalar\" not implemented for '{torch_type_name(rd)}'")
    if category(rd) == 3 or (_is_t(weight) and category((<TensorBase>weight)._dtype) == 3) or \
            isinstance(weight, complex):
        # complex: torch's two-sided form from ops that have complex kernels
        if _is_t(weight):
            small = _g["lt"](_g["abs"](weight), 0.5)
            r = where(small, add(input, mul(weight, sub(end, input))),
                      sub(end, mul(sub(end, input), sub(1, weight))))
        elif _bi.abs(weight) < 0.5:
            r = add(input, mul(sub(end, input), weight))
        else:
            r = sub(end, mul(sub(end, input), 1 - weight))
        return write_out(out, r, OUT_CAST, (input, end, weight), "lerp")
    cd = _compute_dtype(rd)
    a = _operand(input, cd)
    b = _operand(end, cd)
    w = _operand(weight, cd)
    nd = broadcast_shape(a._ndim, a._shape, b._ndim, b._shape, s1)
    nd = broadcast_shape(nd, s1, w._ndim, w._shape, s2)
    r = _direct_out(out, nd, s2, cd, (input, end, weight), "lerp") \
        if rd == cd and not any_grad((input, end, weight)) else None
    if r is not None:
        _run(TAB.lerp[cd], [r, a, b, w], nd, s2, NULL)
        bump_version(r)
        return r
    r = new_out(nd, s2, cd, a._device, [v if _is_t(v) else None for v in (input, end, weight)])
    _run(TAB.lerp[cd], [r, a, b, w], nd, s2, NULL)
    if rd != cd:
        r = cast_keep(r, rd)
    if grad_on() and any([_is_t(v) and (<TensorBase>v)._requires_grad
                          for v in (input, end, weight)]):
        record("lerp", (input, end, weight), r, None)
    return write_out(out, r, OUT_CAST, (input, end, weight), "lerp")


cdef dict _KERNEL_BINARY = {"logaddexp2": EW_LOGADDEXP2, "nextafter": EW_NEXTAFTER}


def _kernel_binary(str name, input, other, out):
    """logaddexp2 / nextafter of CPU tensors in one C pass, for their composites
    (which check the arguments first); NotImplemented when the composite must run
    instead (a Python mode, another device, lazy bits, out= with grad)."""
    if needs_slow((input, other)) or lazy_out(out) or (out is not None and
                                                        any_grad((input, other))):
        return NotImplemented
    return _binary(_KERNEL_BINARY[name], name, input, other, out, K_FLOAT)


def _addc(bint div, input, tensor1, tensor2, value, out):
    """addcmul (input + value * tensor1 * tensor2) or addcdiv (/ tensor2) in one C
    pass, value cast to the result dtype as torch does; NotImplemented when the
    composite must run (a Python mode, another device, mixed-dimension promotion,
    a dtype without a kernel, autograd: the composite's graph saves only the two
    factors, so the in-place form on a saved tensor's input still differentiates)."""
    cdef str name = "addcdiv" if div else "addcmul"
    cdef TensorBase a, b, c, x, y, w, r
    cdef int64_t s1[MAX_DIMS]
    cdef int64_t s2[MAX_DIMS]
    cdef uint64_t vbuf[2]
    cdef int nd, rd, cd
    cdef em_loop fn
    if not (_is_t(input) and _is_t(tensor1) and _is_t(tensor2)) or \
            needs_slow((input, tensor1, tensor2)) or lazy_out(out) or \
            scalar_category(value) < 0 or scalar_category(value) == 3:
        return NotImplemented
    a, b, c = <TensorBase>input, <TensorBase>tensor1, <TensorBase>tensor2
    if a._device is not b._device or a._device is not c._device or \
            any_grad((input, tensor1, tensor2)):
        return NotImplemented
    if a._dtype == b._dtype == c._dtype:
        rd = a._dtype
    elif (a._ndim == 0) == (b._ndim == 0) == (c._ndim == 0):
        rd = promote(promote(a._dtype, b._dtype), c._dtype)
    else:
        return NotImplemented
    if div and category(rd) < 2:
        return NotImplemented
    cd = _compute_dtype(rd)
    fn = TAB.addcdiv[cd] if div else TAB.addcmul[cd]
    if fn == NULL:
        return NotImplemented
    scalar_to_buf(value if category(rd) >= 2 else int(value), cd, vbuf)
    x, y, w = cast(a, cd), cast(b, cd), cast(c, cd)
    nd = broadcast_shape(x._ndim, x._shape, y._ndim, y._shape, s1)
    nd = broadcast_shape(nd, s1, w._ndim, w._shape, s2)
    r = new_out(nd, s2, cd, a._device, [input, tensor1, tensor2])
    _run(fn, [r, x, y, w], nd, s2, vbuf)
    if rd != cd:
        r = cast_keep(r, rd)
    return write_out(out, r, OUT_CAST, (input, tensor1, tensor2), name)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|``, elementwise."""
    cdef TensorBase a = <TensorBase?>input
    if _is_t(other) and (<TensorBase>other)._dtype != a._dtype:
        raise RuntimeError(f"isclose: {a.dtype} did not match {other.dtype}")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol ({rtol}) and atol ({atol}) must be non-negative")
    if category(a._dtype) < 2:
        return _g["eq"](input, other)
    absf = _g["abs"]
    close = _g["eq"](input, other)
    diff = absf(sub(input, other))
    tol = add(mul(absf(other) if _is_t(other) else _bi.abs(other), rtol), atol)
    close = _g["logical_or"](close, _g["logical_and"](_g["isfinite"](diff), _g["le"](diff, tol)))
    if equal_nan:
        close = _g["logical_or"](close, _g["logical_and"](_g["isnan"](input), _g["isnan"](other)))
    return close


cdef bint _all_true(TensorBase c):
    if c._device.kind != DEV_CPU:
        c = <TensorBase>c.to("cpu")     # the answer is a host bool: copy the flags back
    cdef TensorBase t = contig(cast(c, EM_BOOL))
    cdef int64_t i, n = numel_of(t._ndim, t._shape)
    cdef const char *p = t._storage.data + t._offset
    for i in range(n):
        if p[i] == 0:
            return False
    return True


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close (see isclose)."""
    return _all_true(isclose(input, other, rtol, atol, equal_nan))


def equal(input, other):
    """True when both tensors have the same shape and elements."""
    if not _is_t(input) or not _is_t(other):
        raise TypeError(f"equal(): arguments must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return _all_true(_g["eq"](input, other))


# ---------------------------------------------------------------------------
# activations with parameters in one pass each (ember.nn.functional's threshold,
# hardshrink, softshrink, prelu, glu call these); None where the composite form
# must run: Python modes, other devices, lazy math bits

cdef dict _C_TYPE = {EM_U8: "uint8_t", EM_I8: "int8_t", EM_I16: "int16_t", EM_I32: "int",
                     EM_I64: "int64_t"}
cdef dict _INT_RANGE = {EM_U8: (0, 255), EM_I8: (-128, 127), EM_I16: (-32768, 32767),
                        EM_I32: (-2 ** 31, 2 ** 31 - 1), EM_I64: (-2 ** 63, 2 ** 63 - 1)}
# the largest finite value of each float dtype (torch's range checks)
cdef dict _FLOAT_MAX = {EM_F16: 65504.0, EM_BF16: 3.3895313892515355e+38,
                        EM_F32: 3.4028234663852886e+38, EM_F64: 1.7976931348623157e+308}


cdef object _number(object v, str op, str arg, int pos):
    if isinstance(v, TensorBase):
        return v.item()
    if scalar_category(v) < 0:
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Number, not "
                        f"{type(v).__name__}")
    return v


cdef int64_t _int_param(object v, int dt) except? -1:
    """A parameter of an integer tensor as torch converts a Scalar: a float in the
    type's range, truncated; an int in range (uint8 also takes -255..-1, wrapping)."""
    lo, hi = _INT_RANGE[dt]
    if isinstance(v, float) or scalar_category(v) >= 2:
        f = float(v)
        if not (lo <= f <= hi):
            raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dt]} without "
                               f"overflow")
        return <int64_t>int(f)
    iv = int(v)
    if not (lo <= iv <= hi or (dt == EM_U8 and -255 <= iv < 0)):
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dt]} without overflow")
    return <int64_t>iv


cdef double _float_param(object v, int dt) except? -1.0:
    """A parameter of a float tensor as torch converts a Scalar for its kernel: float32
    for the 32-bit and half types (their loops run in float32), where finite values
    beyond the range raise."""
    cdef double f = float(v)
    if dt != EM_F64 and f == f and _bi.abs(f) != _bi.float("inf") and \
            _bi.abs(f) > _FLOAT_MAX[EM_F32]:
        raise RuntimeError("value cannot be converted to type float without overflow")
    return f


def _threshold(input, threshold, value, bint inplace=False):
    """torch's threshold: ``value`` where input <= threshold, else the input (NaN kept)."""
    cdef TensorBase t = as_tensor(input, "threshold", "input", 1)
    cdef double prm[2]
    cdef int64_t iprm[2]
    cdef const void *aux = prm
    cdef int dt = t._dtype
    if needs_slow1(t):
        return None
    threshold = _number(threshold, "threshold", "threshold", 2)
    value = _number(value, "threshold", "value", 3)
    prm[0] = prm[1] = 0.0
    if category(dt) == 1:
        iprm[0] = _int_param(threshold, dt)
        iprm[1] = _int_param(value, dt)
        aux = iprm
    elif category(dt) == 2:
        prm[0] = _float_param(threshold, dt)
        prm[1] = _float_param(value, dt)
    if inplace:
        return _inplace_unary(EW_THRESHOLD, "threshold", t, K_ARITH, aux, (threshold, value))
    return _unary(EW_THRESHOLD, "threshold", t, None, K_ARITH, aux, (threshold, value))


def _hardshrink(input, lambd):
    """torch's hardshrink: 0 on [-lambd, lambd], else the input (NaN kept)."""
    cdef TensorBase t = as_tensor(input, "hardshrink", "input", 1)
    cdef double prm[1]
    if needs_slow1(t):
        return None
    lambd = _number(lambd, "hardshrink", "lambd", 2)
    prm[0] = _float_param(lambd, t._dtype) if category(t._dtype) == 2 else 0.0
    if t._dtype == EM_F16 or t._dtype == EM_BF16:
        # torch compares with lambd in the element type here (float32 elsewhere)
        prm[0] = float(wrap_scalar(prm[0], t._dtype).item())
    return _unary(EW_HARDSHRINK, "hardshrink", t, None, K_ARITH, prm, (lambd,))


def _type_name(input):
    """torch's scalar-type name of a tensor's dtype ('Float', 'Long', ...)"""
    return torch_type_name((<TensorBase?>input)._dtype)


def _softshrink_check(input, lambd):
    """torch's checks of softshrink: a float dtype, then 0 <= lambd <= the dtype's max."""
    cdef TensorBase t = as_tensor(input, "softshrink", "input", 1)
    if category(t._dtype) != 2:
        raise NotImplementedError(f"\"softshrink_check\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    f = float(_number(lambd, "softshrink", "lambd", 2))
    mx = _FLOAT_MAX[t._dtype]
    if not (0 <= f <= mx):
        raise RuntimeError(f"lambda must be in range [0, {mx:g}] for input dtype "
                           f"{torch_type_name(t._dtype)}, but found {f:g}")


def _softshrink(input, lambd):
    """torch's softshrink: x - lambd above lambd, x + lambd below -lambd, +0 between
    (NaN kept); the caller checked lambd's range."""
    cdef TensorBase t = as_tensor(input, "softshrink", "input", 1)
    cdef double prm[1]
    if needs_slow1(t):
        return None
    prm[0] = _float_param(lambd, t._dtype) if category(t._dtype) == 2 else 0.0
    return _unary(EW_SOFTSHRINK, "softshrink", t, None, K_ARITH, prm, (lambd,))


cdef object _act_backward(int op, str name, object grad, object input, double p):
    cdef double prm[1]
    if needs_slow_arg(grad) or needs_slow_arg(input):
        return None
    prm[0] = p
    return _binary(op, name, grad, input, None, K_FLOAT, False, (p,), prm)


def _threshold_backward(grad, input, threshold):
    """torch's threshold_backward: 0 where input <= threshold, else grad (recorded as
    ``threshold_backward`` for double backward); None as _threshold."""
    dt = (<TensorBase?>input)._dtype
    return _act_backward(EW_THRESHOLD_BW, "threshold_backward", grad, input,
                         _float_param(threshold, dt) if category(dt) == 2 else threshold)


def _shrink_backward(grad, input, lambd, str name):
    """hardshrink's and softshrink's backward: grad where input < -lambd or input >
    lambd, else 0 (recorded as ``name``: hardshrink_backward or softshrink_backward)."""
    dt = (<TensorBase?>input)._dtype
    p = _float_param(lambd, dt) if category(dt) == 2 else lambd
    if dt == EM_F16 or dt == EM_BF16:
        p = float(wrap_scalar(p, dt).item())      # torch's lambd in the element type
    return _act_backward(EW_SHRINK_BW, name, grad, input, p)


def _prelu(input, weight):
    """input > 0 ? input : weight * input, weight broadcast to the input (the caller
    checked dtypes and shapes)."""
    if needs_slow((input, weight)):
        return None
    return _binary(EW_PRELU, "prelu", input, weight, None, K_FLOAT)


cdef tuple _halves(TensorBase t, int d, int64_t *shape):
    """The two halves of t along dim d (views); their shape in `shape`."""
    cdef int k
    for k in range(t._ndim):
        shape[k] = t._shape[k]
    shape[d] = t._shape[d] // 2
    return (make_view(t, t._ndim, shape, t._strides, t._offset),
            make_view(t, t._ndim, shape, t._strides, t._offset + shape[d] * t._strides[d]))


def _glu(input, int d):
    """a * sigmoid(b) over the halves a, b of input along dim d (wrapped, even size,
    float dtype: checked by the caller), one pass."""
    cdef TensorBase t = <TensorBase?>input, a, b, r
    cdef int64_t shape[MAX_DIMS]
    cdef int cd
    if needs_slow1(t):
        return None
    a, b = _halves(t, d, shape)
    cd = _compute_dtype(t._dtype)
    if cd != t._dtype:
        a = cast(a, cd)
        b = cast(b, cd)
    r = new_tensor(t._ndim, shape, cd, t._device)
    _run(TAB.bin[EW_GLU][cd], [r, a, b], t._ndim, shape, NULL)
    if cd != t._dtype:
        r = cast_keep(r, t._dtype)
    if grad_on() and t._requires_grad:
        record("glu", (input,), r, (d,))
    return r


def _glu_backward(grad, input, int d):
    """glu's input gradient in one pass, both halves (torch's sigmoid(b) g and
    (1 - sigmoid(b)) sigmoid(b) a g); None as _elu_backward."""
    cdef TensorBase t, g, a, b, r, ga, gb
    cdef int64_t shape[MAX_DIMS]
    cdef int cd, k
    if not _fused_bw_ok(grad, input):
        return None
    t = <TensorBase>input
    g = <TensorBase>grad
    if g._dtype != t._dtype or g._ndim != t._ndim:
        return None
    a, b = _halves(t, d, shape)
    for k in range(t._ndim):
        if g._shape[k] != shape[k]:
            return None
    cd = _compute_dtype(t._dtype)
    if cd != t._dtype:
        a = cast(a, cd)
        b = cast(b, cd)
        g = cast(g, cd)
    r = new_tensor(t._ndim, t._shape, cd, t._device)
    ga, gb = _halves(r, d, shape)
    _run(TAB.glu_bw[cd], [ga, gb, g, a, b], t._ndim, shape, NULL)
    return cast_keep(r, t._dtype) if cd != t._dtype else r


# the public functions, for re-dispatch to modes and plugin backends
for _name, _fn in list(globals().items()):
    if callable(_fn) and not _name.startswith("_") and _name != "Size":
        _PUBLIC[_name] = _fn
