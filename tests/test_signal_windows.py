"""ember.signal.windows against torch.signal.windows: every window, symmetric and
periodic, float32 and float64, the edge lengths and the argument errors."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

EXTRA = {"general_cosine": [{"a": [0.5, 0.3, 0.2]}, {"a": (1.0,)}],
         "general_hamming": [{}, {"alpha": 0.6}], "gaussian": [{}, {"std": 1.7}],
         "kaiser": [{}, {"beta": 5.0}, {"beta": 0.0}],
         "exponential": [{}, {"tau": 2.5}, {"tau": 0.5, "center": 1.0, "sym": False}]}
NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
         "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def test_names():
    assert sorted(ember.signal.windows.__all__) == sorted(torch.signal.windows.__all__)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(name, dtype):
    for kw in EXTRA.get(name, [{}]):
        for M in (0, 1, 2, 5, 8, 17):
            for sym in ((kw["sym"],) if "sym" in kw else (True, False)):
                args = dict(kw, sym=sym)
                t = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dtype), **args)
                e = getattr(ember.signal.windows, name)(M, dtype=getattr(ember, dtype), **args)
                assert e.dtype == getattr(ember, dtype) and tuple(e.shape) == tuple(t.shape)
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6 if dtype ==
                                           "float32" else 1e-12, atol=1e-7 if dtype ==
                                           "float32" else 1e-14, err_msg=f"{name} {M} {args}")


def test_defaults_and_requires_grad():
    e = ember.signal.windows.hann(6, requires_grad=True)
    assert e.dtype == ember.get_default_dtype() and e.requires_grad and e.is_leaf
    np.testing.assert_allclose(e.detach().numpy(), torch.signal.windows.hann(6).detach().numpy(),
                               rtol=1e-6)
    # the periodic Kaiser window is torch.kaiser_window's default
    np.testing.assert_allclose(ember.signal.windows.kaiser(9, sym=False).numpy(),
                               ember.kaiser_window(9).numpy(), rtol=1e-5)


@pytest.mark.parametrize("name,kw", [
    ("hann", {"M": -1}), ("gaussian", {"M": 4, "std": 0.0}),
    ("exponential", {"M": 4, "tau": -1.0}), ("exponential", {"M": 4, "center": 1.0}),
    ("kaiser", {"M": 4, "beta": -1.0}), ("general_cosine", {"M": 4, "a": []}),
    ("bartlett", {"M": 4, "dtype": "int64"}), ("cosine", {"M": 4, "dtype": "float16"}),
    ("general_cosine", {"M": 4, "a": 3}),
])
def test_errors_match_torch(name, kw):
    def call(lib):
        args = dict(kw)
        if "dtype" in args:
            args["dtype"] = getattr(lib, args["dtype"])
        return getattr(lib.signal.windows, name)(args.pop("M"), **args)
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(type(t.value)) as e:
        call(ember)
    assert str(t.value).split(",")[0].split(":")[0] in str(e.value)
