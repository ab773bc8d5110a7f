#!/usr/bin/env python3
"""How much of ``torch.nn`` (module classes) and ``torch.nn.functional`` ember has.

Usage::

    python tools/nn_coverage.py          # table + the names ember lacks

Needs torch installed (it is the reference). Not counted, as they are not API a script
calls: the typing aliases ``nn.functional`` re-exports (``Callable``, ``Optional``,
``Tensor``, ``DType``, ``ScalingType``, ``SwizzleType``) and the ``__torch_function__``
protocol helpers (``has_torch_function*``, ``handle_torch_function``), which belong to a
tensor-subclass override protocol ember does not have.
"""
from __future__ import annotations

import inspect
import os
import sys

EXCLUDED_FUNCTIONAL = {"Callable", "Optional", "Tensor", "DType", "ScalingType",
                       "SwizzleType", "has_torch_function", "has_torch_function_unary",
                       "has_torch_function_variadic", "handle_torch_function"}


def _public(mod):
    return {n for n in dir(mod) if not n.startswith("_")}


def coverage():
    """``{area: (have, total, missing names)}`` for ``nn`` modules and ``nn.functional``."""
    import torch

    import ember.nn as enn
    tnn = torch.nn
    modules = {n for n in _public(tnn)
               if inspect.isclass(getattr(tnn, n)) and issubclass(getattr(tnn, n), tnn.Module)}
    functional = {n for n in _public(tnn.functional)
                  if callable(getattr(tnn.functional, n))
                  and not inspect.ismodule(getattr(tnn.functional, n))} - EXCLUDED_FUNCTIONAL
    out = {}
    for area, names, mod in (("nn modules", modules, enn),
                             ("nn.functional", functional, enn.functional)):
        missing = sorted(n for n in names if not hasattr(mod, n))
        out[area] = (len(names) - len(missing), len(names), missing)
    return out


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print("| area | ember | torch 2.13 | share |")
    print("|---|---|---|---|")
    cov = coverage()
    for area, (have, total, _) in cov.items():
        print(f"| {area} | {have} | {total} | {100 * have / total:.1f}% |")
    for area, (_, _, missing) in cov.items():
        print(f"\nmissing from {area}: {', '.join(missing) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
