# cython: freethreading_compatible = False
"""Matrix products and einsum over ember's GEMM (src_c/gemm*.c).

GEMM takes every operand with arbitrary element strides, so transposed, sliced
and broadcast (stride 0) operands go to the kernel without a copy.
float16/bfloat16 compute in float32; integer products use a plain int64 loop.
Every op validates its arguments once here, releases the GIL around the kernel
and records autograd through core.record with the op name and the attributes
its backward formula needs (see ember/autograd/_formulas_linalg.py)."""
from libc.stdint cimport int64_t
import operator
from collections.abc import Iterable as _Iterable

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C.c_gemm cimport *


cdef bint _slow_mm(TensorBase a, TensorBase b, object out):
    """needs_slow((a, b)), except for complex operands whose only lazy bit is the conjugate
    one when nothing is recorded: the complex product reads that bit itself"""
    if lazy_out(out):
        return True
    if (a._mbits | b._mbits) == 0 or a._mbits & MATH_NEG or b._mbits & MATH_NEG:
        return needs_slow((a, b))
    if slow_path() or a._device.kind != DEV_CPU or b._device.kind != DEV_CPU:
        return True
    return category(a._dtype) != 3 or category(b._dtype) != 3 or any_grad((a, b))


cdef str _shape_str(TensorBase t, str sep="x"):
    return sep.join([str(t._shape[i]) for i in range(t._ndim)])


cdef int _compute_dtype(int dt, str op) except -1:
    if dt == EM_F32 or dt == EM_F16 or dt == EM_BF16:
        return EM_F32
    if dt == EM_F64:
        return EM_F64
    if dt == EM_BOOL:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    if dt == EM_C64 or dt == EM_C128:
        # only matmul/mm/bmm/dot/vdot/outer have a complex path (cplx.matmul): never drop
        # imaginary parts
        raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(dt)}'")
    return EM_I64


cdef object _complex_addprod(str op, TensorBase i, TensorBase a, TensorBase b, object beta,
                             object alpha, object out):
    from ember._C import cplx
    return cplx.addprod(op, i, a, b, beta, alpha, out)


cdef object _complex_product(TensorBase a, TensorBase b, object out, str op):
    from ember._C import cplx
    r = cplx.matmul(a, b)
    return r if out is None else write_out(out, <TensorBase>r, OUT_EXACT, (a, b), op)


# ----------------------------------------------------------------------------
# the batched strided GEMM over tensors

cdef int _gemm_raw(int dt, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                   char *A, int64_t rsa, int64_t csa, int64_t bsa,
                   char *B, int64_t rsb, int64_t csb, int64_t bsb,
                   double beta, char *C, int64_t rsc, int64_t csc, int64_t bsc,
                   int nt) except -1 nogil:
    cdef int64_t b, i, j, k
    cdef int64_t s, ia, ib
    cdef int64_t *ap
    cdef int64_t *bp
    cdef int64_t *cp
    if dt == EM_F32:
        ember_sgemm_batched(batch, M, N, K, <float>alpha, <float *>A, rsa, csa, <float *>B,
                            rsb, csb, <float>beta, <float *>C, rsc, csc, bsa, bsb, bsc, nt)
    elif dt == EM_F64:
        ember_dgemm_batched(batch, M, N, K, alpha, <double *>A, rsa, csa, <double *>B,
                            rsb, csb, beta, <double *>C, rsc, csc, bsa, bsb, bsc, nt)
    else:  # int64
        ap = <int64_t *>A
        bp = <int64_t *>B
        cp = <int64_t *>C
        ia = <int64_t>alpha
        ib = <int64_t>beta
        for b in range(batch):
            for i in range(M):
                for j in range(N):
                    s = 0
                    for k in range(K):
                        s += ap[b * bsa + i * rsa + k * csa] * bp[b * bsb + k * rsb + j * csb]
                    if beta == 0:
                        cp[b * bsc + i * rsc + j * csc] = ia * s
                    else:
                        cp[b * bsc + i * rsc + j * csc] = ia * s + ib * cp[b * bsc + i * rsc + j * csc]
    return 0


cdef int _matmul_into(TensorBase a, TensorBase b, TensorBase c, double alpha, double beta,
                      int nb) except -1:
    """c = alpha * a @ b + beta * c over nb leading batch dims.  a, b and c have
    exactly nb + 2 dims with equal batch sizes (broadcast dims have stride 0).
    beta == 0: c is not read."""
    cdef int dt = c._dtype
    if dt == EM_BF16 and a._dtype == EM_BF16 and b._dtype == EM_BF16 and alpha == 1 and \
            beta == 0:
        return _bf16_matmul(a, b, c, nb)
    cdef int cdt = _compute_dtype(dt, "addmm_impl_cpu_")
    cdef TensorBase a2 = a, b2 = b, c2 = c
    if a._dtype != cdt:
        a2 = cast(a, cdt)
    if b._dtype != cdt:
        b2 = cast(b, cdt)
    if dt != cdt:
        c2 = cast(c, cdt) if beta != 0 else new_tensor(c._ndim, c._shape, cdt, c._device)
    _matmul_strided(a2, b2, c2, alpha, beta, nb)
    if c2 is not c:
        copy_into(c, c2)
    return 0


cdef int _bf16_matmul(TensorBase a, TensorBase b, TensorBase c, int nb) except -1:
    """c = a @ b for bfloat16 operands over nb leading batch dims (broadcast dims have
    stride 0): float32 accumulation (src_c/gemm_bf16.c), one GEMM per batch entry."""
    cdef int64_t M = c._shape[nb], N = c._shape[nb + 1], K = a._shape[nb + 1]
    cdef TensorBase acc = new_tensor(c._ndim, c._shape, EM_F32, c._device)
    cdef const unsigned short *A = <const unsigned short *>data_ptr(a)
    cdef const unsigned short *B = <const unsigned short *>data_ptr(b)
    cdef float *C = <float *>data_ptr(acc)
    cdef int nt = max_threads()
    cdef int64_t total = numel_of(nb, c._shape), o, rem, oa, ob
    cdef int d
    with nogil:
        for o in range(total):
            rem = o
            oa = ob = 0
            for d in range(nb - 1, -1, -1):
                oa += (rem % c._shape[d]) * a._strides[d]
                ob += (rem % c._shape[d]) * b._strides[d]
                rem = rem // c._shape[d]
            ember_bf16gemm(M, N, K, A + oa, a._strides[nb], a._strides[nb + 1], B + ob,
                           b._strides[nb], b._strides[nb + 1], C + o * M * N, N, nt)
    copy_into(c, acc)
    return 0


cdef int _matmul_strided(TensorBase a, TensorBase b, TensorBase c, double alpha, double beta,
                         int nb) except -1:
    cdef int64_t M = c._shape[nb], N = c._shape[nb + 1], K = a._shape[nb + 1]
    cdef int64_t rsa = a._strides[nb], csa = a._strides[nb + 1]
    cdef int64_t rsb = b._strides[nb], csb = b._strides[nb + 1]
    cdef int64_t rsc = c._strides[nb], csc = c._strides[nb + 1]
    # coalesce the batch dims of the three operands
    cdef int64_t bs[MAX_DIMS]
    cdef int64_t sa[MAX_DIMS]
    cdef int64_t sb[MAX_DIMS]
    cdef int64_t sc[MAX_DIMS]
    cdef int n = 0, d
    for d in range(nb):
        if c._shape[d] == 1:
            continue
        if n > 0 and sa[n - 1] == a._strides[d] * c._shape[d] and \
                sb[n - 1] == b._strides[d] * c._shape[d] and \
                sc[n - 1] == c._strides[d] * c._shape[d]:
            bs[n - 1] *= c._shape[d]
            sa[n - 1] = a._strides[d]
            sb[n - 1] = b._strides[d]
            sc[n - 1] = c._strides[d]
            continue
        bs[n] = c._shape[d]
        sa[n] = a._strides[d]
        sb[n] = b._strides[d]
        sc[n] = c._strides[d]
        n += 1
    if n == 0:
        bs[0] = 1
        sa[0] = sb[0] = sc[0] = 0
        n = 1
    if M == 1:
        rsa = 1
        rsc = 1
    if N == 1:
        csb = 1
        csc = 1
    # B shared by every batch and A's batches stacked by rows: one tall GEMM
    if n == 1 and sb[0] == 0 and sa[0] == M * rsa and sc[0] == M * rsc and bs[0] > 1:
        M *= bs[0]
        bs[0] = 1
    cdef int isz = em_itemsize[c._dtype]
    cdef char *A = data_ptr(a)
    cdef char *B = data_ptr(b)
    cdef char *C = data_ptr(c)
    cdef int64_t idx[MAX_DIMS]
    cdef int64_t outer = 1, o, oa, ob, oc
    for d in range(n - 1):
        outer *= bs[d]
        idx[d] = 0
    cdef int nt = max_threads()
    cdef int dt = c._dtype
    if M == 0 or N == 0 or numel_of(c._ndim, c._shape) == 0:
        return 0
    with nogil:
        for o in range(outer):
            oa = ob = oc = 0
            for d in range(n - 1):
                oa += idx[d] * sa[d]
                ob += idx[d] * sb[d]
                oc += idx[d] * sc[d]
            _gemm_raw(dt, bs[n - 1], M, N, K, alpha, A + oa * isz, rsa, csa, sa[n - 1],
                      B + ob * isz, rsb, csb, sb[n - 1], beta, C + oc * isz, rsc, csc,
                      sc[n - 1], nt)
            d = n - 2
            while d >= 0:
                idx[d] += 1
                if idx[d] < bs[d]:
                    break
                idx[d] = 0
                d -= 1
    return 0


cdef int _check_same_dtype(TensorBase a, TensorBase b, str msg) except -1:
    if a._dtype != b._dtype:
        raise RuntimeError(f"{msg}{c_type_name(a._dtype)} != {c_type_name(b._dtype)}")
    return 0


cdef TensorBase _unsq(TensorBase t, int d):
    """view with a size-1 dim inserted at d"""
    cdef int64_t ns[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int i, k = 0
    check_ndim(t._ndim + 1, "unsqueeze")
    for i in range(t._ndim + 1):
        if i == d:
            ns[i] = 1
            st[i] = 0
        else:
            ns[i] = t._shape[k]
            st[i] = t._strides[k]
            k += 1
    return plain_view(t, t._ndim + 1, ns, st, t._offset)


cdef TensorBase _expand_batch(TensorBase t, int nb, const int64_t *bshape):
    """view of a (..., R, C) tensor as (bshape..., R, C) with stride-0 broadcasting"""
    cdef int64_t ns[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int tb = t._ndim - 2, i, k
    for i in range(nb):
        k = i - (nb - tb)
        ns[i] = bshape[i]
        st[i] = t._strides[k] if k >= 0 and t._shape[k] != 1 else 0
    for i in range(2):
        ns[nb + i] = t._shape[tb + i]
        st[nb + i] = t._strides[tb + i]
    return plain_view(t, nb + 2, ns, st, t._offset)


# ----------------------------------------------------------------------------
# matrix products

def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors."""
    cdef TensorBase a = as_tensor(input, "mm", "input", 1)
    cdef TensorBase b = as_tensor(mat2, "mm", "mat2")
    if _slow_mm(a, b, out):
        return redispatch("mm", mm, (input, mat2), {"out": out} if out is not None else None)
    check_same_device(a, b, "mm", "mat2")
    if a._ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b._ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a)} and "
                           f"{_shape_str(b)})")
    _check_same_dtype(a, b, "expected m1 and m2 to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_product(a, b, out, "mm")
    cdef int64_t shp[2]
    shp[0] = a._shape[0]
    shp[1] = b._shape[1]
    cdef TensorBase c = _out_tensor(out, 2, shp, a, "mm", (a, b))
    _matmul_into(a, b, c, 1.0, 0.0, 0)
    return epilogue("mm", (a, b), c)


cdef TensorBase _out_tensor(object out, int nd, const int64_t *shp, TensorBase like, str op,
                            tuple inputs):
    """out= that a GEMM writes directly: it may share no memory with the inputs."""
    cdef TensorBase o
    if out is None:
        return new_tensor(nd, shp, like._dtype, like._device)
    o = as_tensor(out, op, "out")
    if o._dtype != like._dtype:
        raise RuntimeError(f"{op}: Expected out tensor to have dtype {dtype_obj(like._dtype)}, "
                           f"but got {dtype_obj(o._dtype)} instead")
    if o._ndim != nd or any([o._shape[i] != shp[i] for i in range(nd)]):
        raise RuntimeError(f"{op}: out tensor has shape {list(shape_tuple(o))}, expected "
                           f"{[shp[i] for i in range(nd)]}")
    check_written(o, inputs, op, True)
    o._storage.version += 1
    return o


def bmm(input, mat2, *, out=None):
    """Batched matrix product of two 3-D tensors with the same batch size."""
    cdef TensorBase a = as_tensor(input, "bmm", "input", 1)
    cdef TensorBase b = as_tensor(mat2, "bmm", "mat2")
    if _slow_mm(a, b, out):
        return redispatch("bmm", bmm, (input, mat2), {"out": out} if out is not None else None)
    check_same_device(a, b, "bmm", "mat2")
    if a._ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b._ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b._shape[0] != a._shape[0] or b._shape[1] != a._shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                           f"{b._shape[1]}].")
    _check_same_dtype(a, b, "expected m1 and m2 to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_product(a, b, out, "bmm")
    cdef int64_t shp[3]
    shp[0] = a._shape[0]
    shp[1] = a._shape[1]
    shp[2] = b._shape[2]
    cdef TensorBase c = _out_tensor(out, 3, shp, a, "bmm", (a, b))
    _matmul_into(a, b, c, 1.0, 0.0, 1)
    return epilogue("bmm", (a, b), c)


def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules: 1-D operands are vectors (a dim is
    added then removed), batch dims broadcast."""
    cdef TensorBase a = as_tensor(input, "matmul", "input", 1)
    cdef TensorBase b = as_tensor(other, "matmul", "other")
    if _slow_mm(a, b, out):
        return redispatch("matmul", matmul, (input, other),
                          {"out": out} if out is not None else None)
    check_same_device(a, b, "matmul", "other")
    cdef int da = a._ndim, db = b._ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    _check_same_dtype(a, b, "expected m1 and m2 to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_product(a, b, out, "matmul")
    if da == 1 and db == 1:
        _check_dot_sizes(a, b)
    elif da == 2 and db == 1:
        if a._shape[1] != b._shape[0]:
            raise RuntimeError(f"size mismatch, got input ({a._shape[0]}), mat "
                               f"({_shape_str(a)}), vec ({b._shape[0]})")
    cdef TensorBase a3 = _unsq(a, 0) if da == 1 else a
    cdef TensorBase b3 = _unsq(b, 1) if db == 1 else b
    cdef int64_t M = a3._shape[a3._ndim - 2], K = a3._shape[a3._ndim - 1]
    cdef int64_t K2 = b3._shape[b3._ndim - 2], N = b3._shape[b3._ndim - 1]
    cdef int64_t rows = M
    cdef int i
    if K != K2:
        if db <= 2:
            for i in range(a3._ndim - 2):
                rows *= a3._shape[i]
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{K} and "
                               f"{K2}x{N})")
        bb = 1
        for i in range(b3._ndim - 2):
            bb *= b3._shape[i]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bb}, {K}] but got: [{bb}, {K2}].")
    cdef int64_t bshape[MAX_DIMS]
    cdef int nb = broadcast_shape(a3._ndim - 2, a3._shape, b3._ndim - 2, b3._shape, bshape)
    cdef int64_t cshape[MAX_DIMS]
    for i in range(nb):
        cshape[i] = bshape[i]
    cshape[nb] = M
    cshape[nb + 1] = N
    cdef TensorBase c3 = new_tensor(nb + 2, cshape, a._dtype, a._device)
    _matmul_into(_expand_batch(a3, nb, bshape), _expand_batch(b3, nb, bshape), c3, 1.0, 0.0, nb)
    # final shape: drop the added dims
    cdef int64_t fshape[MAX_DIMS]
    cdef int nf = 0
    for i in range(nb):
        fshape[nf] = bshape[i]
        nf += 1
    if da > 1:
        fshape[nf] = M
        nf += 1
    if db > 1:
        fshape[nf] = N
        nf += 1
    cdef int64_t fst[MAX_DIMS]
    cdef int64_t st = 1
    for i in range(nf - 1, -1, -1):
        fst[i] = st
        st *= fshape[i]
    cdef TensorBase c = plain_view(c3, nf, fshape, fst, 0)
    if out is not None:
        o = _out_tensor(out, nf, fshape, a, "matmul", (a, b))
        copy_into(o, c)
        c = o
    return epilogue("matmul", (a, b), c)


cdef int _check_dot_sizes(TensorBase a, TensorBase b) except -1:
    if a._shape[0] != b._shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._shape[0]}] and src "
                           f"[{b._shape[0]}] to have the same number of elements, but got "
                           f"{a._shape[0]} and {b._shape[0]} elements respectively")
    return 0


def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors (a 0-d tensor)."""
    cdef TensorBase a = as_tensor(input, "dot", "input", 1)
    cdef TensorBase b = as_tensor(tensor, "dot", "tensor")
    if _slow_mm(a, b, out):
        return redispatch("dot", dot, (input, tensor), None if out is None else {"out": out})
    check_same_device(a, b, "dot", "tensor")
    if a._ndim != 1 or b._ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._ndim}D and {b._ndim}D tensors")
    if a._dtype != b._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{torch_type_name(a._dtype)} and {torch_type_name(b._dtype)}")
    _check_dot_sizes(a, b)
    if category(a._dtype) == 3:
        return _complex_product(a, b, out, "dot")
    cdef TensorBase c = new_tensor(0, NULL, a._dtype, a._device)
    cdef int64_t one2[2]
    one2[0] = one2[1] = 1
    cdef TensorBase c2 = plain_view(c, 2, one2, one2, 0)
    _matmul_into(_unsq(a, 0), _unsq(b, 1), c2, 1.0, 0.0, 0)
    return epilogue("dot", (a, b), c, None, out, OUT_EXACT)


def vdot(input, other, *, out=None):
    """dot(conj(input), other)."""
    cdef TensorBase a = as_tensor(input, "vdot", "input", 1)
    cdef TensorBase b = as_tensor(other, "vdot", "other")
    if a._ndim != 1 or b._ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._ndim}D and {b._ndim}D tensors")
    if a._dtype != b._dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{torch_type_name(a._dtype)} and {torch_type_name(b._dtype)}")
    return dot(a.conj() if category(a._dtype) == 3 else a, b, out=out)


def mv(input, vec, *, out=None):
    """Matrix-vector product."""
    cdef TensorBase a = as_tensor(input, "mv", "input", 1)
    cdef TensorBase v = as_tensor(vec, "mv", "vec")
    if needs_slow((a, v)) or lazy_out(out):
        return redispatch("mv", mv, (input, vec), None)
    check_same_device(a, v, "mv", "vec")
    if a._ndim != 2 or v._ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a._ndim}, {v._ndim}")
    if a._shape[1] != v._shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a._shape[0]}), mat ({_shape_str(a)}), "
                           f"vec ({v._shape[0]})")
    _check_same_dtype(a, v, "expected m1 and m2 to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_product(a, v, out, "mv")
    cdef int64_t n = a._shape[0]
    cdef TensorBase c = _out_tensor(out, 1, &n, a, "mv", (a, v))
    _matmul_into(a, _unsq(v, 1), _unsq(c, 1), 1.0, 0.0, 0)
    return epilogue("mv", (a, v), c)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors."""
    cdef TensorBase a = as_tensor(input, "outer", "input", 1)
    cdef TensorBase b = as_tensor(vec2, "outer", "vec2")
    if needs_slow((a, b)):
        return redispatch("outer", outer, (input, vec2), None)
    check_same_device(a, b, "outer", "vec2")
    if a._ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a._ndim}-D")
    if b._ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {b._ndim}-D")
    _check_same_dtype(a, b, "expected m1 and m2 to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_product(a.unsqueeze(1), b.unsqueeze(0), out, "outer")
    cdef int64_t shp[2]
    shp[0] = a._shape[0]
    shp[1] = b._shape[0]
    cdef TensorBase c = new_tensor(2, shp, a._dtype, a._device)
    _matmul_into(_unsq(a, 1), _unsq(b, 0), c, 1.0, 0.0, 0)
    if any_grad((a, b)):
        record("outer", (a, b), c, None)
    return write_out(out, c, OUT_CAST, (a, b), "outer")


cdef TensorBase _prefill(TensorBase inp, int nd, const int64_t *shp, TensorBase like,
                         double beta, str op):
    """a new (shp) tensor holding inp broadcast (or uninitialised when beta == 0)."""
    cdef TensorBase c = new_tensor(nd, shp, like._dtype, like._device)
    cdef int64_t bs[MAX_DIMS]
    if beta != 0:
        try:
            nb = broadcast_shape(inp._ndim, inp._shape, nd, shp, bs)
            ok = nb == nd and all([bs[i] == shp[i] for i in range(nd)])
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(f"The expanded size of the tensor ({shp[nd - 1]}) must match the "
                               f"existing size ({inp._shape[inp._ndim - 1] if inp._ndim else 1}) "
                               f"at non-singleton dimension {nd - 1}.  Target sizes: "
                               f"[{', '.join([str(shp[i]) for i in range(nd)])}].  Tensor sizes: "
                               f"{shape_list(inp)}")
        copy_into(c, inp)
    return c


cdef dict _addprod_kw(object beta, object alpha, object out):
    """the keywords a re-dispatched addmm / baddbmm / addmv passes on (out included)"""
    kw = {"beta": beta, "alpha": alpha}
    if out is not None:
        kw["out"] = out
    return kw


cdef object _add_product(str op, object fn, int nb, object input, object m1, object m2,
                         object beta, object alpha, object out, str n1, str n2):
    """addmm (nb = 0) / baddbmm (nb = 1): beta * input + alpha * (m1 @ m2) over nb
    batch dims"""
    cdef TensorBase i = as_tensor(input, op, "input", 1)
    cdef TensorBase a = as_tensor(m1, op, n1)
    cdef TensorBase b = as_tensor(m2, op, n2)
    if needs_slow((i, a, b)):
        return redispatch(op, fn, (input, m1, m2), _addprod_kw(beta, alpha, out))
    if nb == 0:
        if a._ndim != 2:
            raise RuntimeError("mat1 must be a matrix, got " + str(a._ndim) + "-D tensor")
        if b._ndim != 2:
            raise RuntimeError("mat2 must be a matrix, got " + str(b._ndim) + "-D tensor")
        if a._shape[1] != b._shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a)} "
                               f"and {_shape_str(b)})")
    else:
        if a._ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor")
        if b._ndim != 3:
            raise RuntimeError("batch2 must be a 3D tensor")
        if b._shape[0] != a._shape[0] or b._shape[1] != a._shape[2]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to "
                               f"be: [{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                               f"{b._shape[1]}].")
    _check_same_dtype(a, b, "expected m1 and m2 to have the same dtype, but got: ")
    _check_same_dtype(i, a, f"expected self and {n1} to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_addprod(op, i, a, b, beta, alpha, out)
    cdef int64_t shp[3]
    cdef int k
    for k in range(nb + 1):
        shp[k] = a._shape[k]
    shp[nb + 1] = b._shape[nb + 1]
    cdef TensorBase c = _prefill(i, nb + 2, shp, a, beta, op)
    _matmul_into(a, b, c, alpha, beta, nb)
    return epilogue(op, (i, a, b), c, {"beta": beta, "alpha": alpha}, out, OUT_EXACT)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to the result."""
    return _add_product("addmm", addmm, 0, input, mat1, mat2, beta, alpha, out, "mat1", "mat2")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * bmm(batch1, batch2)."""
    return _add_product("baddbmm", baddbmm, 1, input, batch1, batch2, beta, alpha, out,
                        "batch1", "batch2")


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    cdef TensorBase i = as_tensor(input, "addmv", "input", 1)
    cdef TensorBase a = as_tensor(mat, "addmv", "mat")
    cdef TensorBase v = as_tensor(vec, "addmv", "vec")
    if needs_slow((i, a, v)):
        return redispatch("addmv", addmv, (input, mat, vec), _addprod_kw(beta, alpha, out))
    if a._ndim != 2 or v._ndim != 1 or i._ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {i._ndim}, {a._ndim}, "
                           f"{v._ndim}")
    if a._shape[1] != v._shape[0] or (i._ndim == 1 and i._shape[0] not in (1, a._shape[0])):
        raise RuntimeError(f"size mismatch, got input ({i._shape[0] if i._ndim else 1}), mat "
                           f"({_shape_str(a)}), vec ({v._shape[0]})")
    _check_same_dtype(a, v, "expected m1 and m2 to have the same dtype, but got: ")
    _check_same_dtype(i, a, "expected self and mat to have the same dtype, but got: ")
    if category(a._dtype) == 3:
        return _complex_addprod("addmv", i, a, v, beta, alpha, out)
    cdef int64_t n = a._shape[0]
    cdef TensorBase c = _prefill(i, 1, &n, a, beta, "addmv")
    _matmul_into(a, _unsq(v, 1), _unsq(c, 1), alpha, beta, 0)
    return epilogue("addmv", (i, a, v), c, {"beta": beta, "alpha": alpha}, out, OUT_EXACT)


cdef void _linear_bias_gemm(TensorBase x, TensorBase w, TensorBase b, TensorBase out,
                            int64_t rows, int64_t K, int64_t N):
    """out (rows x N) = x (rows x K, contiguous) @ w^T + b, w read through its strides."""
    cdef int nt = max_threads()
    cdef ember_smat sa, sb
    cdef ember_dmat da, db
    with nogil:
        if x._dtype == EM_F32:
            sa.p = <const float *>data_ptr(x)
            sa.rs = K
            sa.cs = 1
            sa.ro = NULL
            sa.co = NULL
            sb.p = <const float *>data_ptr(w)
            sb.rs = w._strides[1]
            sb.cs = w._strides[0]
            sb.ro = NULL
            sb.co = NULL
            ember_sgemm_ex(rows, N, K, 1.0, &sa, &sb, 0.0, <float *>data_ptr(out), N, 1, NULL,
                           <const float *>data_ptr(b), nt)
        else:
            da.p = <const double *>data_ptr(x)
            da.rs = K
            da.cs = 1
            da.ro = NULL
            da.co = NULL
            db.p = <const double *>data_ptr(w)
            db.rs = w._strides[1]
            db.cs = w._strides[0]
            db.ro = NULL
            db.co = NULL
            ember_dgemm_ex(rows, N, K, 1.0, &da, &db, 0.0, <double *>data_ptr(out), N, 1, NULL,
                           <const double *>data_ptr(b), nt)


def linear(input, weight, bias=None):
    """input @ weight.T + bias in one GEMM (C pre-filled with the bias, beta=1)."""
    cdef TensorBase x = as_tensor(input, "linear", "input", 1)
    cdef TensorBase w = as_tensor(weight, "linear", "weight")
    cdef TensorBase bt = None
    if bias is not None:
        bt = as_tensor(bias, "linear", "bias")
    if needs_slow((x, w, bt)):
        return redispatch("linear", linear, (input, weight, bias), None)
    check_same_device(x, w, "linear", "weight")
    if x._ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           f"and {w._ndim}D")
    if w._ndim not in (1, 2):
        raise RuntimeError(f"linear(): weight should be 1-D or 2-D, but got {w._ndim}-D")
    _check_same_dtype(x, w, "expected m1 and m2 to have the same dtype, but got: ")
    if category(x._dtype) == 3 and x._shape[x._ndim - 1] == w._shape[w._ndim - 1]:
        if bt is not None:
            _check_same_dtype(x, bt, "expected input and bias to have the same dtype, but got: ")
        from ember._C import cplx
        return cplx.linear(x, w, bias)
    cdef int64_t K = x._shape[x._ndim - 1]
    cdef int64_t N = w._shape[0] if w._ndim == 2 else 1
    cdef int64_t Kw = w._shape[w._ndim - 1]
    cdef int64_t rows = 1
    cdef int i
    for i in range(x._ndim - 1):
        rows *= x._shape[i]
    if K != Kw:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{K} and "
                           f"{Kw}x{N})")
    # output shape: x.shape[:-1] + (N,) (no N dim for a 1-D weight)
    cdef int64_t oshape[MAX_DIMS]
    cdef int no = x._ndim - 1
    for i in range(no):
        oshape[i] = x._shape[i]
    if w._ndim == 2:
        oshape[no] = N
        no += 1
    cdef TensorBase out = new_tensor(no, oshape, x._dtype, x._device)
    cdef double beta = 0.0
    if (bt is not None and w._ndim == 2 and bt._ndim == 1 and bt._shape[0] == N
            and bt._dtype == x._dtype and w._dtype == x._dtype
            and (x._dtype == EM_F32 or x._dtype == EM_F64) and is_contig(x) and is_contig(bt)):
        # the common layer: one GEMM with the bias added to each tile as it is
        # written (no pre-filled output to read back)
        check_same_device(x, bt, "linear", "bias")
        _linear_bias_gemm(x, w, bt, out, rows, K, N)
        return epilogue("linear", (x, w, bt), out)
    if bt is not None:
        _check_same_dtype(x, bt, "expected input and bias to have the same dtype, but got: ")
        try:
            copy_into(out, bt)
        except RuntimeError:
            raise RuntimeError(f"linear(): bias of size {shape_list(bt)} does not broadcast "
                               f"to the output size {[oshape[i] for i in range(no)]}")
        beta = 1.0
    # A: x as (batch..., rows, K); B = w^T as (K, N); C: out as (batch..., N)
    cdef TensorBase xv = x
    cdef int64_t ash[MAX_DIMS]
    cdef int64_t ast[MAX_DIMS]
    cdef int nb = x._ndim - 1, d
    if nb == 0:
        xv = _unsq(x, 0)
        nb = 1
    cdef TensorBase a3, b3, c3
    # A (nb-1 batch dims, rows=shape[nb-1], K)
    a3 = xv
    ash[0] = K
    ast[0] = w._strides[w._ndim - 1]
    ash[1] = N
    ast[1] = w._strides[0] if w._ndim == 2 else 0
    b3 = plain_view(w, 2, ash, ast, w._offset)
    for d in range(nb):
        ash[d] = xv._shape[d]
    ash[nb] = N
    cdef int64_t st = 1
    for d in range(nb, -1, -1):
        ast[d] = st
        st *= ash[d]
    c3 = plain_view(out, nb + 1, ash, ast, 0)
    cdef int64_t bsh[MAX_DIMS]
    for d in range(nb - 1):
        bsh[d] = ash[d]
    _matmul_into(a3, _expand_batch(b3, nb - 1, bsh), c3, 1.0, beta, nb - 1)
    if any_grad((x, w, bt)):
        record("linear", (x, w, bt) if bt is not None else (x, w), out, None)
    return out


# ----------------------------------------------------------------------------
# einsum: lowered to permute / reshape / batched GEMM

def _einsum_parse(str eq, list shapes):
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum(): more operands were provided than specified in the equation"
                         if len(shapes) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    free = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used]
    ell_nd = 0
    for t, shp in zip(terms, shapes):
        if "..." in t:
            ell_nd = max(ell_nd, len(shp) - (len(t) - 3))
    ell = "".join(free[:ell_nd][::-1])
    out_terms = []
    for t, shp in zip(terms, shapes):
        if "..." in t:
            n = len(shp) - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - n:] if n > 0 else "")
        for c in t:
            if not c.isalpha():
                raise ValueError(f"einsum(): invalid subscript given in the equation string: {c!r}")
        if len(t) != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({len(shp)}) for "
                               f"operand {len(out_terms)}" + ("" if "..." in eq else
                               " and no ellipsis was given"))
        out_terms.append(t)
    if rhs is None:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
        for c in rhs:
            if not any(c in t for t in out_terms):
                raise ValueError(f"einsum(): output subscript {c} does not appear in the "
                                 f"equation for any input operand")
    return out_terms, rhs


def _einsum_diag(t, str sub):
    """take diagonals for repeated subscripts of one operand"""
    while True:
        seen = {}
        rep = None
        for i, c in enumerate(sub):
            if c in seen:
                rep = (seen[c], i)
                break
            seen[c] = i
        if rep is None:
            return t, sub
        i, j = rep
        t = t.diagonal(0, i, j)
        sub = "".join(c for k, c in enumerate(sub) if k != i and k != j) + sub[i]


def _einsum_sum(t, str sub, keep):
    """sum out subscripts of t not in keep (a GEMV with a ones vector)"""
    drop = [c for c in sub if c not in keep]
    if not drop:
        return t, sub
    kept = [c for c in sub if c in keep]
    perm = [sub.index(c) for c in kept + drop]
    t = t.permute(*perm)
    ks = list(t.shape[:len(kept)])
    nd = 1
    for s in t.shape[len(kept):]:
        nd *= s
    t = t.reshape(-1, nd) if ks else t.reshape(1, nd)
    ones = new_tensor(1, [nd], (<TensorBase>t)._dtype, (<TensorBase>t)._device)
    fill_scalar(ones, 1)
    r = mv(t, ones)
    return r.reshape(*ks) if ks else r.reshape(()), "".join(kept)


def _einsum_pair(a, str sa, b, str sb, keep):
    """contract a and b over shared subscripts not in keep -> (tensor, subs)"""
    batch = [c for c in sa if c in sb and c in keep]
    contr = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    dims = {}
    for t, s in ((a, sa), (b, sb)):
        for c, n in zip(s, t.shape):
            if c in dims and dims[c] != n and dims[c] != 1 and n != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped): subscript {c} has sizes "
                                   f"{dims[c]} and {n}")
            dims[c] = max(dims.get(c, 1), n)
    def prod(cs):
        p = 1
        for c in cs:
            p *= dims[c]
        return p
    A = a.permute(*[sa.index(c) for c in batch + left + contr])
    B = b.permute(*[sb.index(c) for c in batch + contr + right])
    # broadcast size-1 batch/contracted dims
    A = A.expand(*[dims[c] for c in batch] + list(A.shape[len(batch):len(batch) + len(left)]) +
                 [dims[c] for c in contr])
    B = B.expand(*[dims[c] for c in batch + contr] + list(B.shape[len(batch) + len(contr):]))
    A = A.reshape(prod(batch), prod(left), prod(contr))
    B = B.reshape(prod(batch), prod(contr), prod(right))
    C = bmm(A, B)
    C = C.reshape(*([dims[c] for c in batch] + [dims[c] for c in left] + [dims[c] for c in right]))
    return C, "".join(batch + left + right)


def einsum(equation, *operands):
    """Einstein summation.  Pairs of operands are contracted left to right by
    batched GEMM (permute + reshape + bmm); repeated subscripts take diagonals
    and subscripts used only once are summed first."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not "
                        f"{type(equation).__name__}")
    if len(operands) == 0:
        raise ValueError("einsum(): must provide at least one operand")
    for o in operands:
        as_tensor(o, "einsum", "operands")
    terms, rhs = _einsum_parse(equation, [tuple(o.shape) for o in operands])
    for c in rhs:
        if rhs.count(c) > 1:
            raise ValueError(f"einsum(): output subscript {c} appears more than once in the output")
    ts = []
    subs = []
    for o, s in zip(operands, terms):
        t, s = _einsum_diag(o, s)
        ts.append(t)
        subs.append(s)
    # sum out subscripts private to one operand and absent from the output
    for k in range(len(ts)):
        others = set(rhs)
        for m in range(len(ts)):
            if m != k:
                others |= set(subs[m])
        ts[k], subs[k] = _einsum_sum(ts[k], subs[k], others)
    cur, cs = ts[0], subs[0]
    for k in range(1, len(ts)):
        keep = set(rhs)
        for m in range(k + 1, len(ts)):
            keep |= set(subs[m])
        cur, cs = _einsum_pair(cur, cs, ts[k], subs[k], keep)
        cur, cs = _einsum_sum(cur, cs, keep)
    cur, cs = _einsum_sum(cur, cs, set(rhs))
    if cs != rhs:
        cur = cur.permute(*[cs.index(c) for c in rhs])
    if len(operands) == 1 and cur is operands[0]:
        cur = cur.clone()
    return cur


# ----------------------------------------------------------------------------
# introspection (tests / benchmarks)

def _gemm_isa():
    """ISA the GEMM kernels use: 0 generic, 1 AVX2+FMA, 2 AVX-512."""
    return ember_gemm_isa()


def _set_gemm_isa(int isa):
    """Force a lower GEMM ISA (tests); -1 restores detection.  Returns the ISA in use."""
    return ember_gemm_set_isa(isa)


def _sgemm_epi_address():
    """The address of ``ember_sgemm_epi`` in this module's copy of the GEMM (the one
    eager matmul/linear run): code ``ember.compile`` generates calls it to apply a
    fused epilogue to each finished block of C."""
    return <size_t>&ember_sgemm_epi


def _bf16_gemm_isa():
    """1 when bfloat16 GEMMs run the AVX512_BF16 (vdpbf16ps) kernel, 0 when they widen to
    float32."""
    return ember_bf16gemm_isa()


def _set_bf16_gemm_isa(int isa):
    """Force the widening bfloat16 GEMM (0), or go back to detection (-1); returns the
    path now in use."""
    return ember_bf16gemm_set_isa(isa)


def __rmatmul__(self, other):
    """other @ self"""
    return matmul(other, self)


__all__ = ["matmul", "mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "vdot", "outer",
           "linear", "einsum"]
