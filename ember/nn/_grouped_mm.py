"""``grouped_mm``: one matrix product per group of a Mixture-of-Experts layer, the groups
cut from a jagged operand by offsets (PyTorch's ``torch.nn.functional.grouped_mm``)."""
from __future__ import annotations

import ember
from ember._linalg import _scalar_name

__all__ = ["grouped_mm"]

_FLOATS = ("float32", "bfloat16", "float16")


def _check_float(t, name: str) -> None:
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"grouped_mm(): argument '{name}' must be Tensor, not "
                        f"{type(t).__name__}")
    if str(t.dtype).split(".")[-1] not in _FLOATS:
        raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                           f"{_scalar_name(t.dtype)}")


def _bounds(offs, length: int, what: str) -> list:
    """The (start, end) of each group along a jagged dimension of ``length``."""
    if not isinstance(offs, ember.Tensor):
        raise TypeError(f"grouped_mm(): argument 'offs' must be Tensor, not "
                        f"{type(offs).__name__}")
    if offs.dtype != ember.int32:
        raise RuntimeError("Offsets have to be int32")
    if offs.dim() != 1:
        raise RuntimeError("offs has to be 1D")
    ends = [int(v) for v in offs.tolist()]
    start = 0
    for e in ends:
        if e < start or e > length:
            raise RuntimeError(f"grouped_mm: offs must be non-decreasing and at most the "
                               f"{what} ({length}), got {ends}")
        start = e
    return list(zip([0] + ends[:-1], ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Grouped matrix products: the groups share operand shapes but not their lengths.

    Parameters
    ----------
    mat_a, mat_b : Tensor
        float32, bfloat16 or float16, 2-D or 3-D. Both 3-D: ``(G, M, K) @ (G, K, N)``
        per group, ``offs`` None. 2-D ``mat_a`` ``(M, K)`` with 3-D ``mat_b``
        ``(G, K, N)``: the rows of ``mat_a`` are cut into G groups, giving ``(M, N)``.
        3-D ``mat_a`` ``(G, M, K)`` with 2-D ``mat_b`` ``(K, N)``: the columns of
        ``mat_b`` are cut, giving ``(M, N)``. Both 2-D ``(M, K) @ (K, N)``: the shared
        ``K`` is cut, giving ``(G, M, N)``.
    offs : Tensor, optional
        int32, 1-D: the end of each group along the jagged dimension (non-decreasing).
        Rows or columns past the last offset are zeros in the result.
    bias : None
        Must be None: PyTorch's grouped GEMM takes no bias yet, on any device.
    out_dtype : ember.dtype, optional
        ``mat_a``'s dtype, or float32 to accumulate and return reduced-precision
        inputs in float32.

    Returns
    -------
    Tensor
        Differentiable in ``mat_a`` and ``mat_b``.
    """
    _check_float(mat_a, "mat_a")
    _check_float(mat_b, "mat_b")
    if mat_a.dim() not in (2, 3):
        raise RuntimeError("mat_a has to be 2 or 3d")
    if mat_b.dim() not in (2, 3):
        raise RuntimeError("mat_b has to be 2 or 3d")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"grouped_mm: mat_a and mat_b must have the same dtype, got "
                           f"{mat_a.dtype} and {mat_b.dtype}")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype and out_dtype != ember.float32:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype or be float32")
    both3d = mat_a.dim() == 3 and mat_b.dim() == 3
    if both3d != (offs is None):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    a, b = mat_a, mat_b
    if out_dtype is not None and out_dtype != a.dtype:
        a, b = a.to(out_dtype), b.to(out_dtype)
    if both3d:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError("batched dimension has to match")
        return ember.bmm(a, b)
    if a.dim() == 2 and b.dim() == 3:            # jagged rows of mat_a
        groups = _bounds(offs, a.shape[0], "rows of mat_a")
        if len(groups) != b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        parts = [a[s:e] @ b[g] for g, (s, e) in enumerate(groups)]
        parts.append(a.new_zeros(a.shape[0] - (groups[-1][1] if groups else 0), b.shape[2]))
        return ember.cat(parts, 0)
    if a.dim() == 3:                            # jagged columns of mat_b
        groups = _bounds(offs, b.shape[1], "columns of mat_b")
        if len(groups) != a.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        parts = [a[g] @ b[:, s:e] for g, (s, e) in enumerate(groups)]
        parts.append(a.new_zeros(a.shape[1], b.shape[1] - (groups[-1][1] if groups else 0)))
        return ember.cat(parts, 1)
    groups = _bounds(offs, a.shape[1], "contraction dimension")   # jagged K
    return ember.stack([a[:, s:e] @ b[s:e] for s, e in groups]) if groups else \
        a.new_zeros(0, a.shape[0], b.shape[1])
