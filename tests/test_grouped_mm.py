"""nn.functional.grouped_mm against torch: the four operand forms, gradients, an empty
group, reduced precision with out_dtype, and torch's errors."""
import numpy as np
import pytest

import ember
from tests.conftest import check_parity

torch = pytest.importorskip("torch")
eF, tF = ember.nn.functional, torch.nn.functional
RNG = np.random.default_rng(0)
I32 = np.int32


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _gmm(lib, offs=None, **kw):
    F = eF if lib is ember else tF
    o = None if offs is None else lib.tensor(np.asarray(offs, I32))
    return lambda a, b: F.grouped_mm(a, b, offs=o, **kw)


@pytest.mark.parametrize("offs", [[2, 2, 10], [0, 7, 10], [10, 10, 10]])
def test_jagged_rows(offs):
    check_parity(_gmm(ember, offs), _gmm(torch, offs), _r(10, 8), _r(3, 8, 4), rtol=1e-5,
                 atol=1e-5)


def test_both_3d():
    check_parity(_gmm(ember), _gmm(torch), _r(3, 5, 8), _r(3, 8, 4), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("offs", [[3, 8], [0, 8], [3, 3, 8]])
def test_jagged_contraction(offs):
    check_parity(_gmm(ember, offs), _gmm(torch, offs), _r(4, 8), _r(8, 4), rtol=1e-5,
                 atol=1e-5)


def test_jagged_columns():
    a, b = _r(2, 4, 8), _r(8, 6)
    # torch's CPU kernel wants mat_b column-major here, and has no backward for it
    check_parity(_gmm(ember, [2, 6]), lambda x, y: tF.grouped_mm(
        x, y.t().contiguous().t(), offs=torch.tensor([2, 6], dtype=torch.int32)), a, b,
        rtol=1e-5, atol=1e-5, grad=False)
    check_parity(_gmm(ember, [2, 6]),
                 lambda x, y: torch.cat([x[0] @ y[:, :2], x[1] @ y[:, 2:]], 1), a, b,
                 rtol=1e-5, atol=1e-5)


def test_past_the_last_offset_is_zero():
    a, b = ember.tensor(_r(10, 8)), ember.tensor(_r(2, 8, 4))
    r = eF.grouped_mm(a, b, offs=ember.tensor(np.array([3, 7], I32)))
    np.testing.assert_array_equal(r[7:].numpy(), 0)
    np.testing.assert_allclose(r[3:7].numpy(), (a[3:7] @ b[1]).numpy())
    c = eF.grouped_mm(ember.tensor(_r(2, 4, 8)), ember.tensor(_r(8, 6)),
                      offs=ember.tensor(np.array([2, 4], I32)))
    np.testing.assert_array_equal(c[:, 4:].numpy(), 0)


def test_reduced_precision_and_out_dtype():
    a, b = _r(6, 8), _r(2, 8, 8)
    offs = np.array([2, 6], I32)
    ea, eb = ember.tensor(a).bfloat16(), ember.tensor(b).bfloat16()
    ta, tb = torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16()
    e = eF.grouped_mm(ea, eb, offs=ember.tensor(offs))
    t = tF.grouped_mm(ta, tb, offs=torch.tensor(offs))
    assert e.dtype == ember.bfloat16
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)
    e32 = eF.grouped_mm(ea, eb, offs=ember.tensor(offs), out_dtype=ember.float32)
    assert e32.dtype == ember.float32
    ref = torch.cat([ta[:2].float() @ tb[0].float(), ta[2:].float() @ tb[1].float()])
    np.testing.assert_allclose(e32.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_errors_match_torch():
    a, b = _r(6, 8), _r(2, 8, 4)
    o32, o64 = np.array([2, 6], I32), np.array([2, 6])
    cases = [
        ((a, b), {"offs": o64}, "int32"),
        ((a, b), {}, "Have to provide offsets"),
        ((_r(2, 3, 8), b), {"offs": o32}, "Have to provide offsets"),
        ((_r(3, 3, 8), b), {}, "batched dimension"),
        ((_r(8), b), {"offs": o32}, "2 or 3d"),
        ((a, _r(2, 4, 4)), {"offs": o32}, "contraction dimension"),
        ((a, b), {"offs": np.array([2, 4, 6], I32)}, "batch sizes"),
        ((a, b), {"offs": o32[None]}, "1D"),
        ((a.astype(np.float64), b.astype(np.float64)), {"offs": o32}, "Double"),
        ((a.astype(np.int32), b.astype(np.int32)), {"offs": o32}, "Int"),
    ]
    for (x, y), kw, msg in cases:
        for lib, F in ((ember, eF), (torch, tF)):
            kw_l = {k: lib.tensor(v) for k, v in kw.items()}
            with pytest.raises(RuntimeError, match=msg):
                F.grouped_mm(lib.tensor(x), lib.tensor(y), **kw_l)
    for lib, F in ((ember, eF), (torch, tF)):
        with pytest.raises(RuntimeError, match="Bias not supported"):
            F.grouped_mm(lib.tensor(a), lib.tensor(b), offs=lib.tensor(o32),
                         bias=lib.zeros(2, 4))
    # offsets torch reads past the operand with: refused
    with pytest.raises(RuntimeError, match="non-decreasing"):
        eF.grouped_mm(ember.tensor(a), ember.tensor(b), offs=ember.tensor(np.array([4, 2], I32)))
    with pytest.raises(RuntimeError, match="at most"):
        eF.grouped_mm(ember.tensor(a), ember.tensor(b), offs=ember.tensor(np.array([2, 8], I32)))
