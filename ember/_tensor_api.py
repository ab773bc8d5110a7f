"""The tensor API re-exported at ``ember.*``: dtypes, devices, creation and ops.

One place lists what each native op module contributes to the public namespace."""
from ember import _tensor
from ember._C import core as _core
from ember._C.core import (
    Size,
    as_tensor,
    broadcast_shapes,
    can_cast,
    empty,
    empty_like,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_num_threads,
    is_grad_enabled,
    ones,
    ones_like,
    promote_types,
    result_type,
    set_num_threads,
    tensor,
    zeros,
    zeros_like,
)
from ember._C.random import (  # the random-state plumbing (not ops)
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ember._dtype_info import finfo, iinfo
from ember._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
    strided,
)
from ember._tensor import Tensor
from ember._tensor_str import set_printoptions

dtype = _core.DType
device = _core.Device
bool = _core.bool_  # noqa: A001 - PyTorch's name
uint8, int8, int16, int32, int64 = _core.uint8, _core.int8, _core.int16, _core.int32, _core.int64
float16, bfloat16, float32, float64 = (_core.float16, _core.bfloat16, _core.float32,
                                       _core.float64)
half, float, double = float16, float32, float64  # noqa: A001
complex64, complex128 = _core.complex64, _core.complex128
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64  # noqa: A001

# every declared op's function forms and aliases (ember/_ops.py), each registered
# with the determinism switch (every CPU kernel is deterministic)
_FUNCS = list(_tensor.FUNCTIONS)
for _n, _f in _tensor.FUNCTIONS.items():
    globals()[_n] = _f
    _core._declare_op(_n)


__all__ = (["Tensor", "Size", "dtype", "device", "bool", "uint8", "int8", "int16", "int32",
            "int64", "float16", "bfloat16", "float32", "float64", "half", "float", "double",
            "complex64", "complex128", "cfloat", "cdouble",
            "short", "int", "long", "tensor", "as_tensor", "from_numpy", "from_dlpack",
            "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
            "full_like", "broadcast_shapes", "result_type", "promote_types", "can_cast",
            "get_num_threads", "set_num_threads", "is_grad_enabled", "set_printoptions",
            "finfo", "iinfo", "Generator", "default_generator", "get_rng_state",
            "initial_seed", "manual_seed", "seed", "set_rng_state", "memory_format",
            "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
            "legacy_contiguous_format", "layout", "strided"] + _FUNCS)
from ember.serialization import load, save; __all__ += ["save", "load"]  # noqa: E402,E702,I001
from ember.autograd import enable_grad, inference_mode, is_inference_mode_enabled, no_grad, set_grad_enabled; __all__ += ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_inference_mode_enabled"]  # noqa: E402,E501,E702,I001
