"""``ember.backends.cpu``: the CPU kernel variant ember picked at run time."""

from __future__ import annotations

__all__ = ["get_cpu_capability"]

# ember's ISA names -> PyTorch's capability strings.
_CAPABILITY = {"avx512": "AVX512", "avx2": "AVX2", "generic": "DEFAULT"}


def get_cpu_capability() -> str:
    """The SIMD variant of ember's kernels in use: ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``.

    ember builds every variant into one binary and picks one when it loads,
    from the CPU's features (``python -m ember`` shows them).
    """
    from ember._C import core

    isa = core._cpu_info()["isa"]
    return _CAPABILITY.get(isa, isa.upper())
