"""A small training step run through the CUDA kernels' C ABI (GEMM, bias add,
ReLU and its backward, cross-entropy forward/backward, column sums, SGD
update) against the same model trained with ember's CPU autograd."""

import ctypes

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .harness import EM, c_enums, contig, nd

pytestmark = pytest.mark.cuda

EW = c_enums("ember_ew.h")
RD = c_enums("ember_reduce.h")
F32 = EM["float32"]


def P(obj):
    return ctypes.cast(ctypes.pointer(obj), ctypes.c_void_p)


def test_mlp_steps_match_cpu_losses(dev):
    rng = np.random.default_rng(0)
    B, D, H, C, lr = 32, 20, 64, 10, 0.1
    x = rng.standard_normal((B, D)).astype(np.float32)
    y = rng.integers(0, C, B)
    w1 = (rng.standard_normal((D, H)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((H, C)) * 0.3).astype(np.float32)

    # CPU reference
    tw1, tw2 = ember.tensor(w1, requires_grad=True), ember.tensor(w2, requires_grad=True)
    cpu_losses = []
    for _ in range(3):
        loss = F.cross_entropy(ember.relu(ember.tensor(x) @ tw1) @ tw2, ember.tensor(y))
        cpu_losses.append(float(loss))
        tw1.grad = tw2.grad = None
        loss.backward()
        with ember.no_grad():
            tw1 -= lr * tw1.grad
            tw2 -= lr * tw2.grad

    lib = dev.lib
    px, py, pw1, pw2 = dev.put(x), dev.put(y), dev.put(w1), dev.put(w2)
    h, a, logits = dev.alloc((B, H), "float32"), dev.alloc((B, H), "float32"), \
        dev.alloc((B, C), "float32")
    losses, lse = dev.alloc((B,), "float32"), dev.alloc((B,), "float32")
    glog, gw2, ga, gw1 = dev.alloc((B, C), "float32"), dev.alloc((H, C), "float32"), \
        dev.alloc((B, H), "float32"), dev.alloc((D, H), "float32")
    ones = dev.put(np.full(B, 1.0 / B, np.float32))
    total = dev.alloc((1,), "float32")
    gpu_losses = []
    alpha = (ctypes.c_double * 1)(-lr)
    for _ in range(3):
        dev.check(lib.emc_gemm(F32, 0, 0, B, H, D, 1.0, px, D, 0, pw1, H, 0, 0.0, h, H, 0, 1, 0,
                               None))
        dev.check(lib.emc_ew_unary(EW["EW_RELU"], F32, a, h, P(nd((B * H,), (1,), (1,))), None,
                                   None))
        dev.check(lib.emc_gemm(F32, 0, 0, B, C, H, 1.0, a, H, 0, pw2, C, 0, 0.0, logits, C, 0,
                               1, 0, None))
        dev.check(lib.emc_cross_entropy_fwd(F32, logits, py, B, C, -100, 0.0, losses, lse, None))
        dev.check(lib.emc_reduce(RD["RD_SUM"], F32, losses, 1, B, 1, total, 1.0 / B, None))
        gpu_losses.append(float(dev.get(total)[0]))
        dev.check(lib.emc_cross_entropy_bwd(F32, logits, py, lse, ones, B, C, -100, 0.0, glog,
                                            None))
        # gw2 = a^T glog, ga = glog w2^T, relu backward, gw1 = x^T ga
        dev.check(lib.emc_gemm(F32, 1, 0, H, C, B, 1.0, a, H, 0, glog, C, 0, 0.0, gw2, C, 0, 1,
                               0, None))
        dev.check(lib.emc_gemm(F32, 0, 1, B, H, C, 1.0, glog, C, 0, pw2, C, 0, 0.0, ga, H, 0, 1,
                               0, None))
        st = contig((B * H,))
        dev.check(lib.emc_ew_binary(EW["EW_RELU_BW"], F32, ga, ga, h, P(nd((B * H,), st, st, st)),
                                    None, None))
        dev.check(lib.emc_gemm(F32, 1, 0, D, H, B, 1.0, px, D, 0, ga, H, 0, 0.0, gw1, H, 0, 1, 0,
                               None))
        for w, g, n in ((pw1, gw1, D * H), (pw2, gw2, H * C)):
            dev.check(lib.emc_ew_binary(EW["EW_ADDA"], F32, w, w, g,
                                        P(nd((n,), (1,), (1,), (1,))), P(alpha), None))
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert gpu_losses[-1] < gpu_losses[0]
    np.testing.assert_allclose(dev.get(pw2), tw2.detach().numpy(), rtol=1e-4, atol=1e-5)


def small_cnn():
    """conv, batch norm, ReLU, max pool, a grouped strided conv, global average pool
    and a linear head: every CNN kernel of the CUDA backend, forward and backward."""
    import ember.nn as nn

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.ReLU(),
        nn.AvgPool2d(2, ceil_mode=True), nn.Conv2d(8, 6, 1), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(6, 5))


def cnn_losses(device, steps=3):
    """Losses of SGD steps (momentum) on the small CNN, from the same initial
    weights and batch, with the model and data on ``device``; and the model."""
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((8, 3, 12, 12)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 5, 8))
    ember.manual_seed(0)
    model = small_cnn().to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    xd, yd = x.to(device), y.to(device)
    for _ in range(steps):
        loss = F.cross_entropy(model(xd), yd)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def test_cnn_training_steps_match_cpu_losses():
    cpu_losses, cpu_model = cnn_losses("cpu")
    dev_losses, dev_model = cnn_losses("cuda")
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    assert dev_losses[-1] < dev_losses[0]
    for (n, pc), (_, pd) in zip(cpu_model.named_parameters(), dev_model.named_parameters()):
        assert pd.device.type == "cuda", n
        np.testing.assert_allclose(pd.detach().cpu().numpy(), pc.detach().numpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=n)
    for (n, bc), (_, bd) in zip(cpu_model.named_buffers(), dev_model.named_buffers()):
        np.testing.assert_allclose(bd.cpu().numpy(), bc.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)
