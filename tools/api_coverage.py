"""How much of PyTorch's public API ember has, area by area (needs torch installed).

    .venv/bin/python tools/api_coverage.py            # the table
    .venv/bin/python tools/api_coverage.py --missing  # and the missing names per area

Backend-specific names (cudnn, mkldnn, quantized, fbgemm, ...) and private names are
left out of torch's side, and so are the names in ``_NOT_API`` (TorchScript internals,
quantization, sparse layouts, other devices' hooks, the linear-algebra functions torch
removed in 1.9 and keeps only to raise an error, the deprecated DataPipes, typing
re-exports); classes are left out of the function areas.
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_BACKEND = ("cudnn", "mkldnn", "miopen", "quantize", "quantized", "fbgemm", "q_", "mps",
            "xpu", "cuda", "sparse", "nested", "sym_", "fake_quantize", "vulkan", "mkl",
            "is_nonzero", "_")
_BACKEND_SUBSTR = ("_backward", "quantized", "cudnn", "mkldnn", "miopen", "fbgemm", "sparse",
                   "_nested", "_mps", "_xpu", "batch_norm_", "native_", "segment_reduce",
                   "_copy")


_NOT_API = frozenset((
    # TorchScript and torch's own plumbing
    "classproperty compiled_with_cxx11_abi fork wait get_file_path import_ir_module "
    "import_ir_module_from_buffer merge_type_from_type_comment parse_ir parse_schema "
    "parse_type_comment prepare_multiprocessing_environment unify_type_list "
    "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12 thread_safe_generator "
    "is_vulkan_available module_load reinforce "
    # quantization
    "dequantize int_repr qscheme choose_qparams_optimized fused_moving_avg_obs_fake_quant "
    # sparse and nested layouts
    "dsmm hsmm hspmm smm saddmm spmm sspaddmm to_dense coalesce indices values crow_indices "
    "col_indices ccol_indices row_indices dense_dim is_coalesced to_padded_tensor "
    # other devices' hooks (ipu and xla autocast state included)
    "ipu mtia record_stream get_autocast_ipu_dtype get_autocast_xla_dtype "
    "is_autocast_ipu_enabled is_autocast_xla_enabled set_autocast_ipu_dtype "
    "set_autocast_ipu_enabled set_autocast_xla_dtype set_autocast_xla_enabled "
    # removed from torch in 1.9: the names remain only to raise a pointer to torch.linalg
    "eig lstsq matrix_rank solve symeig "
    # typing re-exports and __torch_function__ plumbing of nn.functional
    "Optional handle_torch_function has_torch_function has_torch_function_unary "
    "has_torch_function_variadic "
    # the deprecated DataPipes of utils.data
    "DFIterDataPipe DataChunk IterDataPipe MapDataPipe argument_validation "
    "functional_datapipe guaranteed_datapipes_determinism non_deterministic "
    "runtime_validation runtime_validation_disabled").split())


def _keep(name: str) -> bool:
    if name.startswith(_BACKEND) or any(s in name for s in _BACKEND_SUBSTR) or \
            name in _NOT_API:
        return False
    return name.isidentifier()


def _functions(mod) -> set[str]:
    out = set()
    for n in dir(mod):
        if not _keep(n):
            continue
        obj = getattr(mod, n, None)
        if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            out.add(n)
    return out


def _classes(mod, base) -> set[str]:
    return {n for n in dir(mod) if _keep(n) and inspect.isclass(getattr(mod, n, None))
            and issubclass(getattr(mod, n), base) and getattr(mod, n) is not base}


def _methods(cls) -> set[str]:
    return {n for n in dir(cls) if _keep(n) and callable(getattr(cls, n, None))}


def areas():
    import torch
    import torch.nn.functional as tF
    import torch.utils.data as tdata

    import ember
    import ember.nn.functional as eF
    import ember.utils.data as edata

    def opt_names(mod):
        return _classes(mod, mod.Optimizer)

    def data_names(mod):
        return {n for n in dir(mod) if _keep(n) and not inspect.ismodule(getattr(mod, n))
                and n not in ("T_co", "T", "default_collate_fn_map")}

    return [
        ("torch.* functions", _functions(torch), lambda n: hasattr(ember, n)),
        ("Tensor methods", _methods(torch.Tensor), lambda n: hasattr(ember.Tensor, n)),
        ("nn.functional", _functions(tF), lambda n: hasattr(eF, n)),
        ("nn modules", _classes(torch.nn, torch.nn.Module), lambda n: hasattr(ember.nn, n)),
        ("optimizers", opt_names(torch.optim), lambda n: hasattr(ember.optim, n)),
        ("utils.data", data_names(tdata), lambda n: hasattr(edata, n)),
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--missing", action="store_true", help="list the missing names per area")
    args = p.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("api_coverage needs torch (pip install torch==2.13.0)")
    rows = []
    for title, names, has in areas():
        missing = sorted(n for n in names if not has(n))
        rows.append((title, len(names) - len(missing), len(names), missing))
    print("| area | ember has | of torch's | share |\n|---|---:|---:|---:|")
    for title, have, total, _ in rows:
        print(f"| {title} | {have} | {total} | {100 * have / max(total, 1):.0f}% |")
    if args.missing:
        for title, _, _, missing in rows:
            print(f"\n{title} missing ({len(missing)}): {' '.join(missing)}")


if __name__ == "__main__":
    main()
