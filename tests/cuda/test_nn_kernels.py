"""batch_norm, conv2d (implicit GEMM) and pooling kernels against ember's CPU
forward and autograd results, including grouped/strided/dilated/padded
convolutions, multi-chunk reductions and empty batches.  Marked ``cuda``."""

import ctypes

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .harness import EM, Conv2dParams, Pool2dParams

pytestmark = pytest.mark.cuda

TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def P(obj):
    return ctypes.cast(ctypes.pointer(obj), ctypes.c_void_p)


def _data(dtype, shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


# -- batch_norm ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (6, 5), (3, 2, 10_000)])
def test_batch_norm_training_forward_backward(dev, dtype, shape):
    N, C = shape[:2]
    HW = int(np.prod(shape[2:], dtype=np.int64))
    x, g = _data(dtype, shape) + 1.5, _data(dtype, shape, seed=1)
    w, b = _data(dtype, (C,), seed=2), _data(dtype, (C,), seed=3)
    rm, rv = _data(dtype, (C,), seed=4), np.abs(_data(dtype, (C,), seed=5)) + 0.5
    tx, tw, tb = (ember.tensor(v, requires_grad=True) for v in (x, w, b))
    trm, trv = ember.tensor(rm.copy()), ember.tensor(rv.copy())
    y = F.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.1, eps=1e-5)
    y.backward(ember.tensor(g))
    px, pw, pb, prm, prv = (dev.put(v) for v in (x, w, b, rm, rv))
    py = dev.alloc(shape, dtype)
    smean, sinv = dev.alloc((C,), dtype), dev.alloc((C,), dtype)
    dev.check(dev.lib.emc_batch_norm_fwd(EM[dtype], px, pw, pb, prm, prv, N, C, HW, 1, 0.1, 1e-5,
                                         py, smean, sinv, None))
    tol = TOL[dtype]
    np.testing.assert_allclose(dev.get(py), y.detach().numpy(), **tol)
    np.testing.assert_allclose(dev.get(prm), trm.numpy(), **tol)
    np.testing.assert_allclose(dev.get(prv), trv.numpy(), **tol)
    xr = x.reshape(N, C, HW).astype(np.float64)
    np.testing.assert_allclose(dev.get(smean), xr.mean(axis=(0, 2)), **tol)
    np.testing.assert_allclose(dev.get(sinv), 1 / np.sqrt(xr.var(axis=(0, 2)) + 1e-5), **tol)
    dx, dw, db = dev.alloc(shape, dtype), dev.alloc((C,), dtype), dev.alloc((C,), dtype)
    pg = dev.put(g)
    dev.check(dev.lib.emc_batch_norm_bwd(EM[dtype], pg, px, pw, None, None, smean, sinv, N, C,
                                         HW, 1, 1e-5, dx, dw, db, None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(dev.get(dw), tw.grad.numpy(), **tol)
    np.testing.assert_allclose(dev.get(db), tb.grad.numpy(), **tol)
    # fixed blocking: a second run gives the same bits
    first = dev.get(dw).tobytes()
    dev.check(dev.lib.emc_batch_norm_bwd(EM[dtype], pg, px, pw, None, None, smean, sinv, N, C,
                                         HW, 1, 1e-5, dx, dw, db, None))
    assert dev.get(dw).tobytes() == first


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval_forward_backward(dev, affine):
    N, C, HW = 5, 4, 9
    x, g = _data("float32", (N, C, HW)), _data("float32", (N, C, HW), seed=1)
    w, b = _data("float32", (C,), seed=2), _data("float32", (C,), seed=3)
    rm, rv = _data("float32", (C,), seed=4), np.abs(_data("float32", (C,), seed=5)) + 0.5
    tx = ember.tensor(x, requires_grad=True)
    tw, tb = (ember.tensor(w, requires_grad=True), ember.tensor(b, requires_grad=True)) \
        if affine else (None, None)
    y = F.batch_norm(tx, ember.tensor(rm), ember.tensor(rv), tw, tb, training=False, eps=1e-3)
    y.backward(ember.tensor(g))
    px, prm, prv = dev.put(x), dev.put(rm), dev.put(rv)
    pw, pb = (dev.put(w), dev.put(b)) if affine else (None, None)
    py = dev.alloc((N, C, HW), "float32")
    dev.check(dev.lib.emc_batch_norm_fwd(EM["float32"], px, pw, pb, prm, prv, N, C, HW, 0, 0.1,
                                         1e-3, py, None, None, None))
    np.testing.assert_allclose(dev.get(py), y.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dev.get(prm), rm)          # eval leaves them alone
    dx, dw, db = (dev.alloc((N, C, HW), "float32"), dev.alloc((C,), "float32"),
                  dev.alloc((C,), "float32"))
    dev.check(dev.lib.emc_batch_norm_bwd(EM["float32"], dev.put(g), px, pw, prm, prv, None, None,
                                         N, C, HW, 0, 1e-3, dx, dw if affine else None,
                                         db if affine else None, None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    if affine:
        np.testing.assert_allclose(dev.get(dw), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dev.get(db), tb.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_batch_norm_float16_keeps_float_statistics(dev):
    N, C, HW = 8, 3, 50
    x = _data("float32", (N, C, HW)).astype(np.float16)
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=(0, 2)), xf.var(axis=(0, 2))
    ref = (xf - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    py = dev.alloc(x.shape, np.float16)
    smean, sinv = dev.alloc((C,), np.float32), dev.alloc((C,), np.float32)
    rm, rv = dev.put(np.zeros(C, np.float16)), dev.put(np.ones(C, np.float16))
    dev.check(dev.lib.emc_batch_norm_fwd(EM["float16"], dev.put(x), None, None, rm, rv, N, C, HW,
                                         1, 0.5, 1e-5, py, smean, sinv, None))
    np.testing.assert_allclose(dev.get(py).astype(np.float64), ref, rtol=5e-3, atol=5e-3)
    np.testing.assert_allclose(dev.get(smean), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dev.get(sinv), 1 / np.sqrt(var + 1e-5), rtol=1e-5)
    m = N * HW
    np.testing.assert_allclose(dev.get(rv).astype(np.float64), 0.5 + 0.5 * var * m / (m - 1),
                               rtol=2e-3)


def test_batch_norm_bad_arguments_are_error_codes(dev):
    px = dev.put(np.ones((2, 3), np.float32))
    out = dev.alloc((2, 3), np.float32)
    # eval without running statistics; training with no values per channel
    assert dev.lib.emc_batch_norm_fwd(EM["float32"], px, None, None, None, None, 2, 3, 1, 0, 0.1,
                                      1e-5, out, None, None, None) == 10003
    assert dev.lib.emc_batch_norm_fwd(EM["float32"], px, None, None, None, None, 0, 3, 1, 1, 0.1,
                                      1e-5, out, None, None, None) == 10003
    assert dev.lib.emc_batch_norm_fwd(EM["int64"], px, None, None, None, None, 2, 3, 1, 1, 0.1,
                                      1e-5, out, None, None, None) == 10001


# -- conv2d --------------------------------------------------------------------------

CONVS = [
    # N, C, H, W, OC, (kh, kw), stride, padding, dilation, groups
    (2, 3, 9, 11, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (2, 4, 10, 9, 6, (3, 2), (2, 1), (1, 0), (1, 2), 2),
    (1, 6, 7, 7, 6, (3, 3), (2, 2), (1, 1), (1, 1), 6),           # depthwise
    (1, 80, 5, 6, 70, (1, 1), (1, 1), (0, 0), (1, 1), 1),         # several row tiles
    (3, 2, 48, 50, 3, (3, 3), (1, 1), (1, 1), (1, 1), 1),         # weight grad in K chunks
    (2, 2, 4, 4, 3, (5, 5), (3, 3), (2, 2), (1, 1), 1),           # kernel larger than input
]


def _conv_params(N, C, H, W, OC, k, s, p, d, groups):
    Ho = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    Wo = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return Conv2dParams(N, C, H, W, OC, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], groups,
                        Ho, Wo)


@pytest.mark.parametrize("cfg", CONVS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_forward_and_both_gradients(dev, cfg, dtype):
    N, C, H, W, OC, k, s, p, d, groups = cfg
    x = _data(dtype, (N, C, H, W))
    w = _data(dtype, (OC, C // groups) + k, seed=1)
    b = _data(dtype, (OC,), seed=2)
    tx, tw, tb = (ember.tensor(v, requires_grad=True) for v in (x, w, b))
    y = F.conv2d(tx, tw, tb, stride=s, padding=p, dilation=d, groups=groups)
    g = _data(dtype, tuple(y.shape), seed=3)
    y.backward(ember.tensor(g))
    prm = _conv_params(N, C, H, W, OC, k, s, p, d, groups)
    assert (prm.Ho, prm.Wo) == tuple(y.shape[2:])
    px, pw, pb = dev.put(x), dev.put(w), dev.put(b)
    py = dev.alloc(tuple(y.shape), dtype)
    dev.check(dev.lib.emc_conv2d_fwd(EM[dtype], P(prm), px, pw, pb, py, None))
    tol = TOL[dtype]
    np.testing.assert_allclose(dev.get(py), y.detach().numpy(), **tol)
    pg = dev.put(g)
    dx = dev.alloc(x.shape, dtype)
    dev.check(dev.lib.emc_conv2d_bwd_input(EM[dtype], P(prm), pg, pw, dx, None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), **tol)
    dw, db = dev.alloc(w.shape, dtype), dev.alloc((OC,), dtype)
    dev.check(dev.lib.emc_conv2d_bwd_weight(EM[dtype], P(prm), px, pg, dw, db, None))
    wtol = dict(rtol=1e-3, atol=1e-3) if dtype == "float32" else tol
    np.testing.assert_allclose(dev.get(dw), tw.grad.numpy(), **wtol)
    np.testing.assert_allclose(dev.get(db), tb.grad.numpy(), **wtol)


def test_conv2d_without_bias_empty_batch_and_bad_dtype(dev):
    x, w = _data("float32", (1, 2, 5, 5)), _data("float32", (3, 2, 3, 3), seed=1)
    prm = _conv_params(1, 2, 5, 5, 3, (3, 3), (1, 1), (0, 0), (1, 1), 1)
    py = dev.alloc((1, 3, 3, 3), "float32")
    dev.check(dev.lib.emc_conv2d_fwd(EM["float32"], P(prm), dev.put(x), dev.put(w), None, py,
                                     None))
    ref = F.conv2d(ember.tensor(x), ember.tensor(w)).numpy()
    np.testing.assert_allclose(dev.get(py), ref, rtol=1e-5, atol=1e-5)
    empty = _conv_params(0, 2, 5, 5, 3, (3, 3), (1, 1), (0, 0), (1, 1), 1)
    dev.check(dev.lib.emc_conv2d_fwd(EM["float32"], P(empty), py, py, None, py, None))
    # no batch: the weight gradient is zero and so is the bias gradient
    dw, db = dev.put(np.ones((3, 2, 3, 3), np.float32)), dev.put(np.ones(3, np.float32))
    dev.check(dev.lib.emc_conv2d_bwd_weight(EM["float32"], P(empty), py, py, dw, db, None))
    assert not dev.get(dw).any() and not dev.get(db).any()
    assert dev.lib.emc_conv2d_fwd(EM["float16"], P(prm), py, py, None, py, None) == 10001
    bad = _conv_params(1, 3, 5, 5, 3, (3, 3), (1, 1), (0, 0), (1, 1), 2)   # 3 % 2 != 0
    assert dev.lib.emc_conv2d_fwd(EM["float32"], P(bad), py, py, None, py, None) == 10003


# -- pooling -------------------------------------------------------------------------

def _pool_params(x_shape, y_shape, k, s, p, d=(1, 1), include_pad=True, divisor=0):
    N, C, H, W = x_shape
    return Pool2dParams(N * C, H, W, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], y_shape[2],
                        y_shape[3], int(include_pad), divisor)


@pytest.mark.parametrize("k,s,p,d,ceil", [((3, 3), (2, 2), (1, 1), (1, 1), False),
                                          ((2, 3), (1, 2), (0, 1), (2, 1), True),
                                          ((3, 3), (3, 3), (1, 1), (1, 1), True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_indices_and_gradient(dev, dtype, k, s, p, d, ceil):
    x = np.round(_data(dtype, (2, 3, 11, 10)))           # ties: the first tap wins
    x[0, 1, 4, 4] = np.nan
    tx = ember.tensor(x, requires_grad=True)
    y, idx = F.max_pool2d(tx, k, s, p, dilation=d, ceil_mode=ceil, return_indices=True)
    g = _data(dtype, tuple(y.shape), seed=1)
    y.backward(ember.tensor(g))
    prm = _pool_params(x.shape, y.shape, k, s, p, d)
    py, pi = dev.alloc(tuple(y.shape), dtype), dev.alloc(tuple(y.shape), np.int64)
    dev.check(dev.lib.emc_max_pool2d_fwd(EM[dtype], P(prm), dev.put(x), py, pi, None))
    np.testing.assert_array_equal(dev.get(py), y.detach().numpy())
    np.testing.assert_array_equal(dev.get(pi), idx.numpy())
    dx = dev.alloc(x.shape, dtype)
    dev.check(dev.lib.emc_max_pool2d_bwd(EM[dtype], P(prm), dev.put(g), pi, dx, None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("include_pad,divisor,ceil", [(True, None, False), (False, None, True),
                                                      (True, 5, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_avg_pool2d_forward_backward(dev, dtype, include_pad, divisor, ceil):
    x = _data(dtype, (2, 2, 9, 12))
    k, s, p = (3, 4), (2, 3), (1, 2)
    tx = ember.tensor(x, requires_grad=True)
    y = F.avg_pool2d(tx, k, s, p, ceil_mode=ceil, count_include_pad=include_pad,
                     divisor_override=divisor)
    g = _data(dtype, tuple(y.shape), seed=1)
    y.backward(ember.tensor(g))
    prm = _pool_params(x.shape, y.shape, k, s, p, include_pad=include_pad, divisor=divisor or 0)
    py = dev.alloc(tuple(y.shape), dtype)
    dev.check(dev.lib.emc_avg_pool2d_fwd(EM[dtype], P(prm), dev.put(x), py, None))
    tol = TOL[dtype]
    np.testing.assert_allclose(dev.get(py), y.detach().numpy(), **tol)
    dx = dev.alloc(x.shape, dtype)
    dev.check(dev.lib.emc_avg_pool2d_bwd(EM[dtype], P(prm), dev.put(g), dx, None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), **tol)


def test_pooling_empty_and_bad_arguments(dev):
    prm = Pool2dParams(0, 4, 4, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2, 1, 0)
    buf = dev.alloc((4,), np.float32)
    dev.check(dev.lib.emc_avg_pool2d_fwd(EM["float32"], P(prm), buf, buf, None))
    dev.check(dev.lib.emc_max_pool2d_fwd(EM["float32"], P(prm), buf, buf, None, None))
    bad = Pool2dParams(1, 4, 4, 0, 2, 2, 2, 0, 0, 1, 1, 2, 2, 1, 0)        # kernel size 0
    assert dev.lib.emc_max_pool2d_fwd(EM["float32"], P(bad), buf, buf, None, None) == 10003
    assert dev.lib.emc_avg_pool2d_fwd(EM["int32"], P(prm), buf, buf, None) == 10001
