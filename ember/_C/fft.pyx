# cython: freethreading_compatible = False
"""The FFT kernels (src_c/fft.c) over one dim of a tensor: complex-to-complex,
real-to-complex (one-sided) and complex-to-real. ``ember.fft`` builds the public
transforms on these three; each records itself for autograd (``_fft_c2c``,
``_fft_r2c``, ``_fft_c2r``, as torch names them).

The tensor is made contiguous and seen as [outer, n, inner]: one kernel call
transforms outer rows of stride 1 when inner is 1, else inner rows of stride inner
per outer block; the kernel threads over rows."""
from libc.stdint cimport int64_t

from ember._C.core cimport *

cdef extern from "ember_fft.h" nogil:
    int em_fft_c2c(int dtype, const void *inp, int64_t istride, int64_t idist, void *out,
                   int64_t ostride, int64_t odist, int64_t n, int64_t howmany, int sign,
                   double scale, int nthreads)
    int em_fft_r2c(int dtype, const void *inp, int64_t istride, int64_t idist, void *out,
                   int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
                   int nthreads)
    int em_fft_c2r(int dtype, const void *inp, int64_t istride, int64_t idist, void *out,
                   int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
                   int nthreads)

cdef enum:
    K_C2C = 0
    K_R2C = 1
    K_C2R = 2


cdef inline char *_p(TensorBase t) noexcept nogil:
    return t._storage.data + t._offset * em_itemsize[t._dtype]


cdef TensorBase _run(int kind, TensorBase x, int dim, int64_t n, int sign, double scale,
                     bint inplace=False):
    """Transform contiguous x along dim; n: the logical length (c2r: the output's).
    inplace (c2c only): write the result over x (each row is read before it is written)."""
    cdef int64_t outer = 1, inner = 1, nin = x._shape[dim], nout, o, rows
    cdef int64_t shp[MAX_DIMS]
    cdef int i, rc = 0, odt, nt
    for i in range(dim):
        outer *= x._shape[i]
    for i in range(dim + 1, x._ndim):
        inner *= x._shape[i]
    if kind == K_C2C:
        nout, odt = n, x._dtype
    elif kind == K_R2C:
        nout, odt = n // 2 + 1, complex_of(x._dtype)
    else:
        nout, odt = n, real_of(x._dtype)
    for i in range(x._ndim):
        shp[i] = x._shape[i]
    shp[dim] = nout
    cdef TensorBase r = x if inplace else new_tensor(x._ndim, shp, odt, x._device)
    cdef char *ip = _p(x)
    cdef char *op = _p(r)
    cdef int isz = em_itemsize[x._dtype], osz = em_itemsize[odt]
    rows = outer * inner
    nt = nthreads_for(rows * n * 8)
    with nogil:
        if inner == 1:
            if kind == K_C2C:
                rc = em_fft_c2c(x._dtype, ip, 1, nin, op, 1, nout, n, outer, sign, scale, nt)
            elif kind == K_R2C:
                rc = em_fft_r2c(x._dtype, ip, 1, nin, op, 1, nout, n, outer, scale, nt)
            else:
                rc = em_fft_c2r(odt, ip, 1, nin, op, 1, nout, n, outer, scale, nt)
        else:
            for o in range(outer):
                if kind == K_C2C:
                    rc |= em_fft_c2c(x._dtype, ip + o * nin * inner * isz, inner, 1,
                                     op + o * nout * inner * osz, inner, 1, n, inner, sign,
                                     scale, nt)
                elif kind == K_R2C:
                    rc |= em_fft_r2c(x._dtype, ip + o * nin * inner * isz, inner, 1,
                                     op + o * nout * inner * osz, inner, 1, n, inner, scale, nt)
                else:
                    rc |= em_fft_c2r(odt, ip + o * nin * inner * isz, inner, 1,
                                     op + o * nout * inner * osz, inner, 1, n, inner, scale, nt)
    if rc:
        raise MemoryError("fft: out of memory for the transform's plan or work buffers")
    return r


cdef TensorBase _arg(object x, str op):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    cdef TensorBase t = <TensorBase>x
    if t._device.kind != DEV_CPU:       # the transforms run on host memory only
        raise RuntimeError(f"Could not run '{op}': ember has no FFT kernel for "
                           f"{dtype_obj(t._dtype)} tensors on {t._device}; move the tensors "
                           f"to the CPU with .cpu()")
    return t


def _fft_c2c(input, int dim, bint forward, double scale, bint overwrite=False):
    """Complex transform of a complex tensor along dim, times scale. overwrite: the
    caller owns ``input`` (a temporary): a contiguous one that needs no grad is
    transformed in place, saving a buffer and its memory traffic."""
    cdef TensorBase t = _arg(input, "_fft_c2c")
    if category(t._dtype) != 3:
        raise RuntimeError(f"_fft_c2c: expected a complex tensor, got {dtype_obj(t._dtype)}")
    cdef int d = wrap_dim(dim, t._ndim, "_fft_c2c")
    cdef bint inplace = overwrite and is_contig(t) and not (grad_on() and t._requires_grad)
    r = _run(K_C2C, contig(resolve_bits(t)), d, t._shape[d], -1 if forward else 1, scale, inplace)
    if grad_on() and t._requires_grad:
        record("_fft_c2c", (t,), r, (d, bool(forward), scale))
    return r


def _fft_r2c(input, int dim, double scale):
    """One-sided forward transform of a real float tensor along dim, times scale."""
    cdef TensorBase t = _arg(input, "_fft_r2c")
    if t._dtype != EM_F32 and t._dtype != EM_F64:
        raise RuntimeError(f"_fft_r2c: expected a float or double tensor, got "
                           f"{dtype_obj(t._dtype)}")
    cdef int d = wrap_dim(dim, t._ndim, "_fft_r2c")
    r = _run(K_R2C, contig(resolve_bits(t)), d, t._shape[d], -1, scale)
    if grad_on() and t._requires_grad:
        record("_fft_r2c", (t,), r, (d, scale, t._shape[d]))
    return r


def _fft_c2r(input, int dim, int64_t n, double scale):
    """Real backward transform of length n from the n // 2 + 1 leading terms of a
    Hermitian signal along dim, times scale."""
    cdef TensorBase t = _arg(input, "_fft_c2r")
    if category(t._dtype) != 3:
        raise RuntimeError(f"_fft_c2r: expected a complex tensor, got {dtype_obj(t._dtype)}")
    cdef int d = wrap_dim(dim, t._ndim, "_fft_c2r")
    if t._shape[d] != n // 2 + 1:
        raise RuntimeError(f"_fft_c2r: expected {n // 2 + 1} terms along dim {d} for an output "
                           f"of length {n}, got {t._shape[d]}")
    r = _run(K_C2R, contig(resolve_bits(t)), d, n, 1, scale)
    if grad_on() and t._requires_grad:
        record("_fft_c2r", (t,), r, (d, n, scale))
    return r
