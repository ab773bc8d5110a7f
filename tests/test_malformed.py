"""Malformed arguments to every public op family: each call returns a result or raises
one of PyTorch's error types (TypeError, ValueError, IndexError, RuntimeError,
NotImplementedError) — never crashes the interpreter."""

import math

import numpy as np
import pytest

import ember

OK_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)
# factories and huge-memory functions are fed sizes separately below
SKIP = {
    "set_num_threads",
    "set_default_dtype",
    "set_printoptions",
    "manual_seed",
    "seed",
    "set_rng_state",
    "set_default_device",
    "use_deterministic_algorithms",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_warn_always",
    "compile",
    "load",
    "save",
    "from_dlpack",
}


def _bad_values():
    nc = ember.tensor(np.arange(12.0, dtype=np.float32)).view(3, 4).t()
    return [
        None,
        "x",
        object(),
        [],
        [[1, 2], [3]],
        ember.ones(0),
        ember.ones(2, 0, 3),
        nc,
        ember.tensor(float("nan")),
        ember.tensor([1, 2, 3]),
        ember.ones(3, dtype=ember.bool),
        -1,
        2**62,
        float("nan"),
        1.5,
        ember.ones(1, dtype=ember.float16),
    ]


def _public_ops():
    out = []
    for name in sorted(ember.__all__):
        if name in SKIP or name.startswith("_"):
            continue
        fn = getattr(ember, name, None)
        if (
            callable(fn)
            and not isinstance(fn, type)
            and type(fn).__name__
            in ("cython_function_or_method", "function", "builtin_function_or_method")
        ):
            mod = getattr(fn, "__module__", "") or ""
            if mod.startswith("ember._C") or mod.startswith("ember._tensor"):
                out.append(name)
    return out


OPS = _public_ops()


def _call(fn, *args):
    try:
        r = fn(*args)
    except OK_ERRORS:
        return None
    return r


@pytest.mark.parametrize("name", OPS)
def test_op_family_rejects_or_handles_bad_input(name):
    fn = getattr(ember, name)
    vals = _bad_values()
    good = ember.ones(3, 4)
    for v in vals:
        _call(fn, v)
        _call(fn, good, v)
        _call(fn, v, good)
    _call(fn)
    _call(fn, good, good, good)


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "rand", "randn", "full"])
def test_factories_with_bad_sizes(factory):
    fn = getattr(ember, factory, None)
    if fn is None:
        pytest.skip(f"{factory} not available")
    args = (lambda s: (s, 1.0)) if factory == "full" else (lambda s: (s,))
    for size in [(-1,), (2, -3), (2**62,), (2**40, 2**40), ("a",), (1.5,), (None,)]:
        with pytest.raises(OK_ERRORS):
            fn(*args(size))
    assert fn(*args((0, 5))).shape == (0, 5)


def test_methods_on_odd_tensors_do_not_crash():
    odd = [
        ember.ones(0),
        ember.ones(3, 0),
        ember.tensor(5.0),
        ember.tensor(np.arange(24.0).reshape(2, 3, 4)).permute(2, 0, 1)[::2],
        ember.tensor([math.inf, -math.inf, math.nan]),
    ]
    names = [n for n in dir(ember.Tensor) if not n.startswith("_") and not n.endswith("_")]
    skip = {
        "backward",
        "register_hook",
        "retain_grad",
        "register_post_accumulate_grad_hook",
        "numpy",
        "cuda",
        "new_empty",
        "pin_memory",
        "share_memory_",
        "storage",
    }
    for t in odd:
        for n in names:
            if n in skip:
                continue
            try:
                attr = getattr(t, n, None)
            except OK_ERRORS:  # properties such as mT reject some shapes
                continue
            if callable(attr):
                _call(attr)
                _call(attr, 0)
                _call(attr, -1)
                _call(attr, 5)


def test_index_errors_name_index_and_size():
    t = ember.ones(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[3]
    with pytest.raises(IndexError):
        t[:, 10]
    with pytest.raises(IndexError):
        t[ember.tensor([0, 7])]
    with pytest.raises(IndexError):
        t[0, 0, 0]


def test_dtype_and_argument_errors_name_the_op():
    with pytest.raises(TypeError, match="add"):
        ember.add(ember.ones(2), "a")
    with pytest.raises(TypeError, match="dtype"):
        ember.zeros(2, dtype="float128")
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.mul(ember.ones(2, 3), ember.ones(3, 2))
