import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# one cache of generated code per test session: compiled kernels are shared across
# tests, and the user's cache is never touched
if "EMBER_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-test-cache-")
    atexit.register(shutil.rmtree, os.environ["EMBER_CACHE_DIR"], True)


@pytest.fixture
def torch():
    """PyTorch as a test oracle; the test skips cleanly when it is not installed."""
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else t


def _flat(out):
    return [v for o in out for v in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def check_parity(fn_e, fn_t, *arrays, rtol=1e-5, atol=1e-6, grad=True, seed=0):
    """Run ``fn_e`` on ember copies and ``fn_t`` on torch copies of the NumPy ``arrays``;
    assert equal shapes, dtypes and values of every output and, when ``grad``, equal
    gradients of every floating input for one random cotangent per floating output
    (``grad`` may also be one bool per array).

    Returns the ember and torch outputs."""
    import numpy as np

    import ember
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a) for a in arrays]
    flags = grad if isinstance(grad, (tuple, list)) else [grad] * len(arrays)
    wants = [bool(g) and a.dtype.kind == "f" for a, g in zip(arrays, flags)]
    es = [ember.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    ts = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    eo, to = fn_e(*es), fn_t(*ts)
    eos, tos = _flat(eo), _flat(to)
    assert len(eos) == len(tos)
    for e, t in zip(eos, tos):
        assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)
    if any(wants):
        le, lt = 0, 0
        for e, t in zip(eos, tos):
            if t.dtype.is_floating_point and t.requires_grad:
                g = rng.standard_normal(tuple(t.shape)).astype(_np(t).dtype)
                le = le + (e * ember.tensor(g)).sum()
                lt = lt + (t * torch.tensor(g)).sum()
        le.backward()
        lt.backward()
        for e, t, w in zip(es, ts, wants):
            if w:
                assert (e.grad is None) == (t.grad is None)
                if t.grad is not None:
                    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol,
                                               atol=atol)
    return eo, to


def copy_torch_weights(tmod, emod):
    """Load ``tmod``'s state dict into the ember module ``emod`` through NumPy, after
    asserting both have the same keys with the same shapes (so torch checkpoints load)."""
    import ember
    tsd, esd = tmod.state_dict(), emod.state_dict()
    assert list(tsd) == list(esd), (list(tsd), list(esd))
    for k in tsd:
        assert tuple(tsd[k].shape) == tuple(esd[k].shape), k
    emod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tsd.items()})
    return emod
