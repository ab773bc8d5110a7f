# Memory-format propagation for new outputs, after torch's TensorIterator: an
# elementwise result over channels-last operands is laid out channels-last, and the
# iteration then runs in the output's memory order so that dense operands coalesce
# into one flat loop.  Everything is `inline`: each op module that cimports this
# compiles its own copy (no cross-module call, no change to core's contract).
#
# Only channels-last (4-D) and channels-last-3d (5-D) results are produced: other
# stride orders torch would propagate (a transposed 2-D input, say) give row-major
# results, as ember's ops always have.
from libc.stdint cimport int64_t, uint32_t, uint64_t

from ember._C.core cimport (TensorBase, Device, NdIter, MAX_DIMS, MAX_ARGS, em_itemsize,
                            is_contig, numel_of, new_tensor, iter_coalesce, copy_into, cast,
                            dense_nonoverlap)


cdef inline bint cl_order(TensorBase t) noexcept:
    """t is a non-contiguous 4-D or 5-D tensor whose strides run channels innermost,
    then the spatial dims, then the batch (torch's is_channels_last_strides_2d/3d)."""
    cdef int64_t low = 0
    cdef int k, d, n
    if t is None:
        return False
    n = t._ndim
    if (n != 4 and n != 5) or t._strides[1] == 0:
        return False
    for k in range(n):
        d = 1 if k == 0 else (0 if k == n - 1 else n - k)
        if t._shape[d] == 0 or t._strides[d] < low:
            return False
        if d == 0 and low == t._strides[1]:
            return False        # N111-like: ambiguous, row-major wins
        low = t._strides[d] * (t._shape[d] if t._shape[d] > 1 else 1)
    return True


cdef inline bint dense_cl(int nd, const int64_t *shape, const int64_t *st) noexcept:
    """torch's is_contiguous(memory_format=channels_last[_3d]) for these strides"""
    cdef int64_t expected = 1
    cdef int k, d
    if nd != 4 and nd != 5:
        return False
    for k in range(nd):
        d = 1 if k == 0 else (0 if k == nd - 1 else nd - k)
        if shape[d] != 1:
            if st[d] != expected:
                return False
            expected *= shape[d]
    return True


cdef inline int _swap_order(int a, int b, int nops, const int64_t *ost,
                            const int64_t *shape) noexcept:
    """TensorIterator's should_swap: 1 when dim a belongs after dim b, -1 before, 0 tied"""
    cdef int k
    cdef int64_t s0, s1
    for k in range(nops):
        s0 = ost[k * MAX_DIMS + a]
        s1 = ost[k * MAX_DIMS + b]
        if s0 == 0 or s1 == 0:
            continue
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        if shape[a] > shape[b]:
            return 1
    return 0


cdef inline bint out_strides(int nd, const int64_t *shape, list ops, int64_t *st):
    """The strides torch gives a new output of ``shape`` over ``ops`` (inputs in argument
    order; None for a Python scalar): True with ``st`` filled when they are channels-last,
    False for a row-major output."""
    cdef int64_t ost[MAX_ARGS * MAX_DIMS]
    cdef int perm[MAX_DIMS]
    cdef int nops = 0, d, k, i, j, c, tmp
    cdef bint any_cl = False, same = True, all_contig = True, all_cl = True, same_st = True
    cdef TensorBase t, first = None
    cdef int64_t acc
    if (nd != 4 and nd != 5) or numel_of(nd, shape) == 0:
        return False
    for o in ops:
        if o is None:
            continue
        t = <TensorBase>o
        if cl_order(t):
            any_cl = True
        if nops == MAX_ARGS:
            return False
        if t._ndim != nd:
            same = False
        else:
            for d in range(nd):
                if t._shape[d] != shape[d]:
                    same = False
        if same:
            all_contig = all_contig and is_contig(t)
            all_cl = all_cl and nd == 4 and dense_cl(nd, t._shape, t._strides)
            if first is None:
                first = t
                same_st = dense_nonoverlap(t)
            else:
                for d in range(nd):
                    if t._strides[d] != first._strides[d]:
                        same_st = False
        k = nd - t._ndim
        for d in range(nd):
            ost[nops * MAX_DIMS + d] = 0 if (d < k or (t._shape[d - k] == 1 and shape[d] != 1)) \
                else t._strides[d - k]
        nops += 1
    if not any_cl:
        return False
    if same and first is not None:
        # TensorIterator's fast setup: every operand has the output's shape
        if all_contig:
            return False
        if all_cl:
            acc = 1
            for k in range(nd):
                d = 1 if k == 0 else (0 if k == nd - 1 else nd - k)
                st[d] = acc
                acc *= shape[d]
            return True
        if same_st:
            for d in range(nd):
                st[d] = first._strides[d]
            return dense_cl(nd, shape, st)
    # reorder_dimensions: perm[0] is the innermost dim
    for i in range(nd):
        perm[i] = nd - 1 - i
    for i in range(1, nd):
        j = i
        for k in range(i - 1, -1, -1):
            c = _swap_order(perm[k], perm[j], nops, ost, shape)
            if c > 0:
                tmp = perm[k]
                perm[k] = perm[j]
                perm[j] = tmp
                j = k
            elif c < 0:
                break
    for i in range(nd):
        if perm[i] != nd - 1 - i:
            break
    else:
        return False
    acc = 1
    for i in range(nd):
        st[perm[i]] = acc
        acc *= shape[perm[i]]
    return dense_cl(nd, shape, st)


cdef inline TensorBase new_out(int nd, const int64_t *shape, int dtype, Device device,
                               list ops):
    """A new output of ``shape`` laid out as torch lays out an elementwise result over
    ``ops`` (row-major unless an operand is channels-last)."""
    cdef int64_t st[MAX_DIMS]
    cdef TensorBase r = new_tensor(nd, shape, dtype, device)
    cdef int d
    cdef bint any_cl = False
    if nd != 4 and nd != 5:
        return r
    for o in ops:
        if o is not None and cl_order(<TensorBase>o):
            any_cl = True
            break
    if any_cl and out_strides(nd, shape, ops, st):
        for d in range(nd):
            r._strides[d] = st[d]
    return r


cdef inline TensorBase new_cl(int nd, const int64_t *shape, int dtype, Device device):
    """an uninitialised 4-D or 5-D tensor in channels-last strides"""
    cdef TensorBase r = new_tensor(nd, shape, dtype, device)
    cdef int64_t acc = 1
    cdef int k, d
    for k in range(nd):
        d = 1 if k == 0 else (0 if k == nd - 1 else nd - k)
        r._strides[d] = acc
        acc *= shape[d] if shape[d] > 1 else 1
    return r


# NCHW <-> NHWC is a transpose of each image's (C x spatial) matrix: in tiles, so that
# both sides are read and written a cache line at a time, with the inner loop on the
# side whose stride is short (the other one, often a multiple of 4 KiB, would keep
# evicting itself from L1)
ctypedef fused _word:        # 4- and 8-byte elements, moved as bits
    uint32_t
    uint64_t


cdef inline void _tr(const _word *s, _word *d, int64_t R, int64_t K, int64_t B) noexcept nogil:
    """d = s^T for B consecutive R x K row-major matrices"""
    cdef int64_t b, r0, c0, r, c, r1, c1
    for b in range(B):
        for r0 in range(0, R, 16):
            r1 = r0 + 16 if r0 + 16 < R else R
            for c0 in range(0, K, 16):
                c1 = c0 + 16 if c0 + 16 < K else K
                if R < K:       # the inner loop on the side with the shorter stride
                    for r in range(r0, r1):
                        for c in range(c0, c1):
                            d[c * R + r] = s[r * K + c]
                else:
                    for c in range(c0, c1):
                        for r in range(r0, r1):
                            d[c * R + r] = s[r * K + c]
        s += R * K
        d += R * K


cdef inline bint _transpose(TensorBase src, TensorBase dst, bint to_nhwc):
    """dst = src between dense NCHW and NHWC layouts with 4- or 8-byte elements; False
    when the tiled path does not apply"""
    cdef int64_t C = src._shape[1], P = 1, N = src._shape[0]
    cdef int i, isz = em_itemsize[src._dtype]
    if (isz != 4 and isz != 8) or src._dtype != dst._dtype:
        return False
    for i in range(2, src._ndim):
        P *= src._shape[i]
    cdef char *s = src._storage.data + src._offset * isz
    cdef char *d = dst._storage.data + dst._offset * isz
    cdef int64_t R = C if to_nhwc else P, K = P if to_nhwc else C
    with nogil:
        if isz == 4:
            _tr(<const uint32_t *>s, <uint32_t *>d, R, K, N)
        else:
            _tr(<const uint64_t *>s, <uint64_t *>d, R, K, N)
    return True


cdef inline TensorBase to_cl(TensorBase t):
    """t (4-D or 5-D) in channels-last strides: t itself when already dense so, else a
    copy (records nothing: for kernels' fresh results)"""
    cdef TensorBase r
    if dense_cl(t._ndim, t._shape, t._strides):
        return t
    r = new_cl(t._ndim, t._shape, t._dtype, t._device)
    if not (is_contig(t) and _transpose(t, r, True)):
        copy_into(r, t)
    return r


cdef inline TensorBase from_cl(TensorBase t):
    """a row-major copy of t: tiled when t is dense channels-last (t itself when already
    row-major)"""
    cdef TensorBase r
    if is_contig(t):
        return t
    r = new_tensor(t._ndim, t._shape, t._dtype, t._device)
    if not (dense_cl(t._ndim, t._shape, t._strides) and _transpose(t, r, False)):
        copy_into(r, t)
    return r


cdef inline TensorBase cast_keep(TensorBase t, int dtype):
    """t converted to ``dtype`` with t's strides when t is a dense permuted layout"""
    cdef TensorBase r
    cdef int d
    if t._dtype == dtype:
        return t
    if is_contig(t) or not dense_nonoverlap(t):
        return cast(t, dtype)
    r = new_tensor(t._ndim, t._shape, dtype, t._device)
    for d in range(t._ndim):
        r._strides[d] = t._strides[d]
    copy_into(r, t)
    return r


cdef inline void iter_order(NdIter *it) noexcept nogil:
    """Put the dims of an un-coalesced iteration in operand 0's memory order (outermost
    first), so a permuted dense output and its like-strided inputs merge into one dim."""
    cdef int i, j, a, n = it.ndim
    cdef int64_t tmp
    cdef bint sorted_ = True
    for i in range(1, n):
        if it.strides[i - 1] < it.strides[i]:
            sorted_ = False
            break
    if sorted_:
        return
    for i in range(1, n):       # stable insertion sort, strides descending
        j = i
        while j > 0 and it.strides[j - 1] < it.strides[j]:
            tmp = it.shape[j]
            it.shape[j] = it.shape[j - 1]
            it.shape[j - 1] = tmp
            for a in range(it.nargs):
                tmp = it.strides[a * MAX_DIMS + j]
                it.strides[a * MAX_DIMS + j] = it.strides[a * MAX_DIMS + j - 1]
                it.strides[a * MAX_DIMS + j - 1] = tmp
            j -= 1


cdef inline int iter_init_ordered(NdIter *it, list ops, int ndim,
                                  const int64_t *shape) except -1:
    """core's iter_init (operand 0 is the output), iterating in the output's memory order"""
    cdef int a, d, k
    cdef TensorBase t
    it.nargs = len(ops)
    it.ndim = ndim
    it.numel = numel_of(ndim, shape)
    for d in range(ndim):
        it.shape[d] = shape[d]
    for a in range(it.nargs):
        t = <TensorBase>ops[a]
        it.ptrs[a] = t._storage.data + t._offset * em_itemsize[t._dtype]
        k = ndim - t._ndim
        for d in range(ndim):
            if d < k or t._shape[d - k] == 1:
                it.strides[a * MAX_DIMS + d] = 0
            else:
                it.strides[a * MAX_DIMS + d] = t._strides[d - k] * em_itemsize[t._dtype]
    iter_order(it)
    iter_coalesce(it)
    return 0
