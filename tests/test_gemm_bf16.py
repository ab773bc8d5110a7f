"""bfloat16 GEMM (src_c/gemm_bf16.c, ember._C.matmul): the AVX512_BF16 kernel (where the
CPU has it) and the widening path both give the float32 GEMM of the bf16 inputs, rounded
once to bfloat16."""
import numpy as np
import pytest

import ember
from ember._C import matmul as _la


def _bf16_ulp_close(got, want, K):
    g, w = got.float().numpy(), want.float().numpy()
    # one rounding to bfloat16 (8 significant bits) of float32 sums of K terms taken in
    # another order (absolute error grows with K where the terms cancel)
    np.testing.assert_allclose(g, w, rtol=2 ** -7, atol=1e-6 * (K + 1))


@pytest.fixture(params=["detected", "widening"])
def path(request):
    _la._set_bf16_gemm_isa(-1 if request.param == "detected" else 0)
    yield request.param
    _la._set_bf16_gemm_isa(-1)


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (5, 7, 3), (8, 32, 2), (37, 45, 1030),
                                   (130, 70, 513), (0, 4, 3), (3, 4, 0)])
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_bf16_matmul_matches_fp32_of_rounded_inputs(path, M, N, K, layout):
    rs = np.random.RandomState(M * 1000 + N + K)
    a = ember.tensor(rs.randn(M, K).astype("f4")).bfloat16()
    b = ember.tensor(rs.randn(K, N).astype("f4")).bfloat16()
    if layout == "transposed":
        a = a.t().contiguous().t()
        b = b.t().contiguous().t()
    got = a @ b
    assert got.dtype == ember.bfloat16 and tuple(got.shape) == (M, N)
    _bf16_ulp_close(got, (a.float() @ b.float()).bfloat16(), K)


def test_paths_agree_and_report():
    hw = _la._set_bf16_gemm_isa(-1)
    assert hw in (0, 1)
    assert _la._set_bf16_gemm_isa(0) == 0
    assert _la._bf16_gemm_isa() == 0
    rs = np.random.RandomState(1)
    a = ember.tensor(rs.randn(64, 200).astype("f4")).bfloat16()
    b = ember.tensor(rs.randn(200, 48).astype("f4")).bfloat16()
    widened = a @ b
    assert _la._set_bf16_gemm_isa(-1) == hw
    _bf16_ulp_close(a @ b, widened, 200)


def test_bf16_mm_and_linear_autograd():
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(2)
    x, w = rs.randn(9, 40).astype("f4"), rs.randn(24, 40).astype("f4")
    out = []
    for L in (ember, torch):
        xt = L.tensor(x).bfloat16().requires_grad_()
        wt = L.tensor(w).bfloat16().requires_grad_()
        y = L.mm(xt, wt.t())
        y.float().sum().backward()
        out.append((y, xt.grad, wt.grad))
    for e, t in zip(*out):
        np.testing.assert_allclose(e.float().detach().numpy(), t.float().detach().numpy(),
                                   rtol=2 ** -7, atol=1e-2)


@pytest.mark.parametrize("sa,sb", [((3, 5, 7), (3, 7, 4)), ((2, 3, 5, 70), (70, 9)),
                                   ((5, 70), (2, 70, 9)), ((2, 1, 5, 6), (1, 3, 6, 4))])
def test_bf16_batched_and_broadcast_matmul(path, sa, sb):
    rs = np.random.RandomState(len(sa) * 10 + len(sb))
    a = ember.tensor(rs.randn(*sa).astype("f4")).bfloat16()
    b = ember.tensor(rs.randn(*sb).astype("f4")).bfloat16()
    got = a @ b
    assert got.dtype == ember.bfloat16
    _bf16_ulp_close(got, (a.float() @ b.float()).bfloat16(), sa[-1])
