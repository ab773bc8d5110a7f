"""Function transforms over the op database: for every differentiable entry, the tangent
that forward-mode AD (``ember.autograd.forward_ad``, hence ``ember.func.jvp``/``jacfwd``)
gives each float64 sample equals torch's."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from tests.opinfo.database import OPS
from tests.opinfo.test_ops import _call, _declared, _flip


def _cases():
    for i, info in enumerate(OPS):
        if info.grad and info.forward_ad and "float64" in info.dtypes and \
                "f" in _declared(info.name)[1][0]:
            yield pytest.param(info, id=f"{info.name}-{i}")


def _tangent(lib, fw, info, sample, arrays, tangents):
    with fw.dual_level():
        ts = []
        for a, t in zip(arrays, tangents):
            x = lib.tensor(a)
            x = fw.make_dual(x, lib.tensor(t)) if t is not None else x
            ts.append(_flip(x) if sample.noncontig else x)
        out = _call(lib, info, sample, ts, "function")
        outs = out if isinstance(out, (tuple, list)) else [out]
        res = []
        for o in outs:
            if not (hasattr(o, "dtype") and o.dtype.is_floating_point):
                continue
            p, t = fw.unpack_dual(o)
            res.append(None if t is None else t.detach().numpy())
        return res


@pytest.mark.parametrize("info", list(_cases()))
def test_forward_ad_matches_torch(info):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for sample in info.samples(rng, "float64"):
        arrays = [np.ascontiguousarray(a.T) if sample.noncontig and a.ndim >= 2 else a
                  for a in sample.arrays]
        tangents = [rng.standard_normal(a.shape) if a.dtype.kind == "f" else None
                    for a in arrays]
        got = _tangent(ember, fwAD, info, sample, arrays, tangents)
        want = _tangent(torch, torch.autograd.forward_ad, info, sample, arrays, tangents)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if w is None or g is None:     # no tangent reaches this output in torch / ember
                assert g is None or not np.any(g), info.name
                continue
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9, err_msg=info.name)
