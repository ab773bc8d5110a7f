"""Every CUDA kernel family against ember's CPU result (NumPy where the CPU
op is NumPy-like), including strided, broadcast and empty inputs.  Marked
``cuda``: skipped with the reason where no device is usable."""

import ctypes

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .harness import BINARY, EM, INT_BINARY, UNARY, bf16_bits, bf16_values, c_enums, contig, nd

pytestmark = pytest.mark.cuda

EW = c_enums("ember_ew.h")
RD = c_enums("ember_reduce.h")
RAND = c_enums("ember_random.h")


def P(obj):
    return ctypes.cast(ctypes.pointer(obj), ctypes.c_void_p)


def dbl(*v):
    return P((ctypes.c_double * max(len(v), 1))(*v))


def cpu(x):
    return ember.tensor(x)


# -- elementwise -----------------------------------------------------------------------

def _data(dtype, shape, seed=0, lo=-3.0, hi=3.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_float_contiguous_and_broadcast(dev, op, dtype):
    a, b = _data(dtype, (3, 4, 37)), _data(dtype, (3, 4, 37), seed=1) + 0.25
    if op in ("EW_POW", "EW_XLOGY"):
        a = np.abs(a) + 0.1
        b = np.abs(b)
    ref = BINARY[op](cpu(a), cpu(b)).numpy()
    out = dev.alloc(a.shape, dtype)
    st = contig(a.shape)
    dev.check(dev.lib.emc_ew_binary(EW[op], EM[dtype], out, dev.put(a), dev.put(b),
                                    P(nd(a.shape, st, st, st)), dbl(0), None))
    tol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(dev.get(out), ref, rtol=tol, atol=tol)
    # broadcast b over the middle dim, and a scalar b
    bb = b[:, :1, :]
    ref = BINARY[op](cpu(a), cpu(bb)).numpy()
    dev.check(dev.lib.emc_ew_binary(EW[op], EM[dtype], out, dev.put(a), dev.put(bb),
                                    P(nd(a.shape, st, st, (37, 0, 1))), dbl(0), None))
    np.testing.assert_allclose(dev.get(out), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_binary_int_exact(dev, op, dtype):
    a, b = _data(dtype, (1000,)), _data(dtype, (1000,), seed=3)
    if dtype == "uint8":
        a, b = np.abs(a.astype(np.int64)).astype(dtype), np.abs(b.astype(np.int64)).astype(dtype)
    b[b == 0] = 7
    ref = INT_BINARY[op](cpu(a), cpu(b)).numpy()
    out = dev.alloc(a.shape, dtype)
    dev.check(dev.lib.emc_ew_binary(EW[op], EM[dtype], out, dev.put(a), dev.put(b),
                                    P(nd((1000,), (1,), (1,), (1,))), None, None))
    np.testing.assert_array_equal(dev.get(out), ref)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_float32_matches_cpu_formulas(dev, op):
    x = _data("float32", (4099,), lo=-0.9, hi=0.9) * (1 if op in ("EW_ASIN", "EW_ACOS",
                                                                 "EW_ATANH") else 4)
    if op in ("EW_LOG", "EW_LOG2", "EW_LOG10", "EW_SQRT", "EW_RSQRT", "EW_LGAMMA"):
        x = np.abs(x) + 0.01
    ref = UNARY[op](cpu(x)).numpy()
    out = dev.alloc(x.shape, "float32")
    dev.check(dev.lib.emc_ew_unary(EW[op], EM["float32"], out, dev.put(x),
                                   P(nd(x.shape, (1,), (1,))), dbl(0, 0, 0), None))
    # the shared formulas give the same bits; libm-based ones are within an ulp or two
    np.testing.assert_allclose(dev.get(out), ref, rtol=3e-7, atol=1e-7)


def test_unary_strided_input_and_empty(dev):
    x = _data("float32", (8, 6))
    xt = x.T                                       # (6, 8) view with strides (1, 6)
    out = dev.alloc(xt.shape, "float32")
    dev.check(dev.lib.emc_ew_unary(EW["EW_EXP"], EM["float32"], out, dev.put(x),
                                   P(nd(xt.shape, contig(xt.shape), (1, 6))), None, None))
    np.testing.assert_allclose(dev.get(out), ember.exp(cpu(x).t()).numpy(), rtol=1e-7)
    dev.check(dev.lib.emc_ew_unary(EW["EW_EXP"], EM["float32"], out, dev.put(x),
                                   P(nd((0,), (1,), (1,))), None, None))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_compute_in_float32(dev, dtype):
    a = _data("float32", (513,))
    if dtype == "float16":
        a16, vals, np_dt = a.astype(np.float16), a.astype(np.float16).astype(np.float32), np.float16
    else:
        a16 = bf16_bits(a)
        vals, np_dt = bf16_values(a16), np.uint16
    out = dev.alloc(a.shape, np_dt)
    dev.check(dev.lib.emc_ew_binary(EW["EW_MUL"], EM[dtype], out, dev.put(a16), dev.put(a16),
                                    P(nd(a.shape, (1,), (1,), (1,))), None, None))
    got = dev.get(out)
    if dtype == "float16":
        # the float32 product of two halves is exact; one rounding to half, subnormals included
        np.testing.assert_array_equal(got, (vals * vals).astype(np.float16))
    else:
        np.testing.assert_allclose(bf16_values(got), vals * vals, rtol=1e-2)


def test_compare_predicate_where(dev):
    a, b = _data("float32", (300,)), _data("float32", (300,), seed=9)
    a[::7] = np.nan
    st = (1,)
    out = dev.alloc(a.shape, np.uint8)
    for op, fn in (("EW_LT", np.less), ("EW_EQ", np.equal), ("EW_NE", np.not_equal)):
        dev.check(dev.lib.emc_ew_compare(EW[op], EM["float32"], out, dev.put(a), dev.put(b),
                                         P(nd(a.shape, st, st, st)), None))
        np.testing.assert_array_equal(dev.get(out).astype(bool), fn(a, b))
    dev.check(dev.lib.emc_ew_predicate(EW["EW_ISNAN"], EM["float32"], out, dev.put(a),
                                       P(nd(a.shape, st, st)), None))
    np.testing.assert_array_equal(dev.get(out).astype(bool), np.isnan(a))
    cond = (b > 0).astype(np.uint8)
    w = dev.alloc(a.shape, "float32")
    dev.check(dev.lib.emc_ew_where(EM["float32"], w, dev.put(cond), dev.put(a), dev.put(b),
                                   P(nd(a.shape, st, st, st, st)), None))
    np.testing.assert_array_equal(dev.get(w), np.where(cond, a, b))


def test_unsupported_dtype_is_an_error_code(dev):
    a = dev.put(np.zeros(4, np.int32))
    rc = dev.lib.emc_ew_unary(EW["EW_EXP"], EM["int32"], a, a, P(nd((4,), (1,), (1,))), None,
                              None)
    assert rc == 10001 and b"dtype" in dev.lib.emc_last_error()


# -- copies, casts, fill, cat -------------------------------------------------------

NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
      "int32": np.int32, "int64": np.int64, "float16": np.float16, "float32": np.float32,
      "float64": np.float64}


@pytest.mark.parametrize("src", list(NP))
@pytest.mark.parametrize("dst", list(NP))
def test_casts_match_cpu(dev, src, dst):
    x = (_data("float64", (5, 7), lo=-200, hi=200)).astype(NP[src])
    ref = cpu(x).to(getattr(ember, dst)).numpy()
    out = dev.alloc(x.shape, NP[dst])
    dev.check(dev.lib.emc_copy(EM[dst], out, EM[src], dev.put(x),
                               P(nd(x.shape, contig(x.shape), contig(x.shape))), None))
    np.testing.assert_array_equal(dev.get(out), ref)


def test_strided_copy_and_fill(dev):
    x = _data("float32", (6, 10))
    out = dev.alloc((10, 6), "float32")
    dev.check(dev.lib.emc_copy(EM["float32"], out, EM["float32"], dev.put(x),
                               P(nd((10, 6), (6, 1), (1, 10))), None))
    np.testing.assert_array_equal(dev.get(out), x.T)
    v = ctypes.c_float(2.5)
    dev.check(dev.lib.emc_fill(EM["float32"], out, P(nd((10, 3), (6, 2))), P(v), None))
    ref = x.T.copy()
    ref[:, ::2] = 2.5
    np.testing.assert_array_equal(dev.get(out), ref)


def test_cat_of_many_inputs_takes_several_launches(dev):
    parts = [_data("int64", (3, k % 4, 2), seed=k) for k in range(40)]
    out = dev.alloc((3, sum(p.shape[1] for p in parts), 2), np.int64)
    ptrs = (ctypes.c_void_p * 40)(*[dev.put(p).ptr for p in parts])
    sizes = (ctypes.c_int64 * 40)(*[p.shape[1] for p in parts])
    dev.check(dev.lib.emc_cat(EM["int64"], out, 40, P(ptrs), P(sizes), 3, 2, None))
    np.testing.assert_array_equal(dev.get(out), np.concatenate(parts, axis=1))


def test_cat_along_a_middle_dim(dev):
    parts = [_data("float32", (2, k, 3), seed=k) for k in (1, 4, 2)]
    out = dev.alloc((2, 7, 3), "float32")
    ptrs = (ctypes.c_void_p * 3)(*[dev.put(p).ptr for p in parts])
    sizes = (ctypes.c_int64 * 3)(1, 4, 2)
    dev.check(dev.lib.emc_cat(EM["float32"], out, 3, P(ptrs), P(sizes), 2, 3, None))
    np.testing.assert_array_equal(dev.get(out), np.concatenate(parts, axis=1))


# -- reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("O,K,I", [(3, 1000, 1), (2, 100_000, 1), (4, 50, 7), (1, 1, 1),
                                   (2, 5000, 3), (1, 4099, 300), (2, 20_000, 50),
                                   (1, 2, 140_000)])
@pytest.mark.parametrize("op", ["RD_SUM", "RD_MAX", "RD_MIN", "RD_ASUM", "RD_AMAX"])
def test_reduce_rows_columns_and_long_rows(dev, op, O, K, I):
    x = _data("float32", (O, K, I))
    if op in ("RD_MAX", "RD_MIN", "RD_AMAX") and K > 10:
        x[0, K // 2, 0] = np.nan                      # NaN propagates from any position
    fn = {"RD_SUM": np.sum, "RD_MAX": np.max, "RD_MIN": np.min,
          "RD_ASUM": lambda v, axis: np.abs(v).sum(axis), "RD_AMAX": lambda v, axis:
          np.abs(v).max(axis)}[op]
    out = dev.alloc((O, I), "float32")
    dev.check(dev.lib.emc_reduce(RD[op], EM["float32"], dev.put(x), O, K, I, out, 1.0, None))
    np.testing.assert_allclose(dev.get(out), fn(x.astype(np.float64), axis=1), rtol=1e-5,
                               atol=1e-4)


def test_reduce_is_deterministic_and_mean_scales(dev):
    x = _data("float32", (1, 300_000, 1))
    a, b = dev.alloc((1,), "float32"), dev.alloc((1,), "float32")
    px = dev.put(x)
    dev.check(dev.lib.emc_reduce(RD["RD_SUM"], EM["float32"], px, 1, 300_000, 1, a, 1.0, None))
    dev.check(dev.lib.emc_reduce(RD["RD_SUM"], EM["float32"], px, 1, 300_000, 1, b, 1.0, None))
    assert dev.get(a).tobytes() == dev.get(b).tobytes()
    dev.check(dev.lib.emc_reduce(RD["RD_SUM"], EM["float32"], px, 1, 300_000, 1, a,
                                 1 / 300_000, None))
    np.testing.assert_allclose(dev.get(a), x.mean(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("O,K,I", [(5, 1000, 1), (3, 40, 6)])
def test_var_and_mean(dev, O, K, I):
    x = _data("float64", (O, K, I)) + 10
    var, mean = dev.alloc((O, I), "float64"), dev.alloc((O, I), "float64")
    dev.check(dev.lib.emc_var(EM["float64"], dev.put(x), O, K, I, 1.0, var, mean, None))
    np.testing.assert_allclose(dev.get(var), x.var(axis=1, ddof=1), rtol=1e-10)
    np.testing.assert_allclose(dev.get(mean), x.mean(axis=1), rtol=1e-12)


@pytest.mark.parametrize("O,K,I", [(4, 777, 1), (3, 20, 5)])
def test_argmax_argmin_first_index_and_nan(dev, O, K, I):
    x = np.round(_data("float32", (O, K, I)))       # many ties
    x[1, 5, 0] = np.nan
    for op, name in (("RD_MAX", "argmax"), ("RD_MIN", "argmin")):
        idx = dev.alloc((O, I), np.int64)
        vals = dev.alloc((O, I), "float32")
        dev.check(dev.lib.emc_argreduce(RD[op], EM["float32"], dev.put(x), O, K, I, vals, idx,
                                        None))
        ref = getattr(ember, name)(cpu(x), 1).numpy()
        np.testing.assert_array_equal(dev.get(idx), ref)


# -- softmax, cross-entropy, layer_norm -----------------------------------------------

@pytest.mark.parametrize("log", [0, 1])
@pytest.mark.parametrize("O,K,I", [(6, 1000, 1), (2, 33, 5)])
def test_softmax_forward_backward(dev, log, O, K, I):
    x, g = _data("float32", (O, K, I)), _data("float32", (O, K, I), seed=4)
    t = ember.tensor(x, requires_grad=True)
    y = (F.log_softmax if log else F.softmax)(t, dim=1)
    y.backward(ember.tensor(g))
    out, gin = dev.alloc(x.shape, "float32"), dev.alloc(x.shape, "float32")
    dev.check(dev.lib.emc_softmax(log, EM["float32"], dev.put(x), O, K, I, out, None))
    np.testing.assert_allclose(dev.get(out), y.detach().numpy(), rtol=1e-5, atol=1e-6)
    dev.check(dev.lib.emc_softmax_bwd(log, EM["float32"], dev.put(g), out, O, K, I, gin, None))
    np.testing.assert_allclose(dev.get(gin), t.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_forward_backward(dev, smoothing):
    R, C = 17, 300
    x = _data("float32", (R, C))
    tgt = np.random.default_rng(2).integers(0, C, R)
    tgt[3] = -100
    t = ember.tensor(x, requires_grad=True)
    loss = F.cross_entropy(t, ember.tensor(tgt), reduction="none", label_smoothing=smoothing)
    loss.sum().backward()
    out, lse = dev.alloc((R,), "float32"), dev.alloc((R,), "float32")
    px, pt = dev.put(x), dev.put(tgt)
    dev.check(dev.lib.emc_cross_entropy_fwd(EM["float32"], px, pt, R, C, -100, smoothing, out,
                                            lse, None))
    np.testing.assert_allclose(dev.get(out), loss.detach().numpy(), rtol=1e-5, atol=1e-5)
    gx = dev.alloc((R, C), "float32")
    dev.check(dev.lib.emc_cross_entropy_bwd(EM["float32"], px, pt, lse,
                                            dev.put(np.ones(R, np.float32)), R, C, -100,
                                            smoothing, gx, None))
    np.testing.assert_allclose(dev.get(gx), t.grad.numpy(), rtol=1e-4, atol=1e-6)
    tgt[0] = C + 5                                      # out of range: flagged
    dev.check(dev.lib.emc_cross_entropy_fwd(EM["float32"], px, dev.put(tgt), R, C, -100, 0.0,
                                            out, lse, None))
    assert dev.lib.emc_check_index_error(None) == 10004
    assert dev.lib.emc_check_index_error(None) == 0


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("M", [9, 700])
def test_layer_norm_forward_backward(dev, affine, M):
    N = 257
    x, g = _data("float32", (M, N)), _data("float32", (M, N), seed=5)
    w, b = _data("float32", (N,), seed=6), _data("float32", (N,), seed=7)
    tx = ember.tensor(x, requires_grad=True)
    tw, tb = (ember.tensor(w, requires_grad=True), ember.tensor(b, requires_grad=True)) \
        if affine else (None, None)
    y = F.layer_norm(tx, (N,), tw, tb, eps=1e-5)
    y.backward(ember.tensor(g))
    py = dev.alloc((M, N), "float32")
    mean, rstd = dev.alloc((M,), "float32"), dev.alloc((M,), "float32")
    pw, pb = (dev.put(w), dev.put(b)) if affine else (None, None)
    px = dev.put(x)
    dev.check(dev.lib.emc_layer_norm_fwd(EM["float32"], px, pw, pb, M, N, 1e-5, py, mean, rstd,
                                         None))
    np.testing.assert_allclose(dev.get(py), y.detach().numpy(), rtol=1e-4, atol=1e-5)
    dx, dw, db = (dev.alloc((M, N), "float32"), dev.alloc((N,), "float32"),
                  dev.alloc((N,), "float32"))
    dev.check(dev.lib.emc_layer_norm_bwd(EM["float32"], dev.put(g), px, mean, rstd, pw, M, N,
                                         dx, dw if affine else None, db if affine else None,
                                         None))
    np.testing.assert_allclose(dev.get(dx), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    if affine:
        np.testing.assert_allclose(dev.get(dw), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dev.get(db), tb.grad.numpy(), rtol=1e-4, atol=1e-4)


# -- GEMM ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_simt_transposes_batches_alpha_beta(dev, dtype, ta, tb):
    B, M, N, K = 3, 70, 45, 130
    a = _data(dtype, (B, K, M) if ta else (B, M, K))
    b = _data(dtype, (B, N, K) if tb else (B, K, N), seed=2)
    c = _data(dtype, (B, M, N), seed=3)
    op_a = a.transpose(0, 2, 1) if ta else a
    op_b = b.transpose(0, 2, 1) if tb else b
    ref = 1.5 * (op_a.astype(np.float64) @ op_b) + 0.5 * c
    pc = dev.put(c)
    dev.check(dev.lib.emc_gemm(EM[dtype], ta, tb, M, N, K, 1.5, dev.put(a), a.shape[2],
                               a.shape[1] * a.shape[2], dev.put(b), b.shape[2],
                               b.shape[1] * b.shape[2], 0.5, pc, N, M * N, B, 0, None))
    tol = 1e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(dev.get(pc), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (200, 130, 77)])
def test_gemm_tensor_cores_fp32_accumulation(dev, dtype, M, N, K):
    a, b = _data("float32", (M, K), lo=-1, hi=1), _data("float32", (K, N), seed=1, lo=-1, hi=1)
    if dtype == "float16":
        ha, hb = a.astype(np.float16), b.astype(np.float16)
        va, vb = ha.astype(np.float32), hb.astype(np.float32)
    else:
        ha, hb = bf16_bits(a), bf16_bits(b)
        va, vb = bf16_values(ha), bf16_values(hb)
    out = dev.alloc((M, N), ha.dtype)
    dev.check(dev.lib.emc_gemm(EM[dtype], 0, 0, M, N, K, 1.0, dev.put(ha), K, 0, dev.put(hb), N,
                               0, 0.0, out, N, 0, 1, 0, None))
    got = dev.get(out)
    got = got.astype(np.float32) if dtype == "float16" else bf16_values(got)
    np.testing.assert_allclose(got, va.astype(np.float64) @ vb, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_float32_whole_simt_tiles(dev, ta, tb):
    # 256 x 384 x 72 in batches of 2: whole 128 x 128 x 8 tiles of the float32 SIMT kernel
    B, M, N, K = 2, 256, 384, 72
    a = _data("float32", (B, K, M) if ta else (B, M, K))
    b = _data("float32", (B, N, K) if tb else (B, K, N), seed=2)
    c = _data("float32", (B, M, N), seed=3)
    op_a = a.transpose(0, 2, 1) if ta else a
    op_b = b.transpose(0, 2, 1) if tb else b
    ref = 1.5 * (op_a.astype(np.float64) @ op_b) + 0.5 * c
    pc = dev.put(c)
    dev.check(dev.lib.emc_gemm(EM["float32"], ta, tb, M, N, K, 1.5, dev.put(a), a.shape[2],
                               a.shape[1] * a.shape[2], dev.put(b), b.shape[2],
                               b.shape[1] * b.shape[2], 0.5, pc, N, M * N, B, 0, None))
    np.testing.assert_allclose(dev.get(pc), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_pipelined_whole_tiles(dev, dtype, ta, tb):
    # 256 x 512 x 96 in batches of 2: whole 128 x 256 x 32 tiles, the cp.async pipeline
    B, M, N, K = 2, 256, 512, 96
    a = _data("float32", (B, K, M) if ta else (B, M, K), lo=-1, hi=1)
    b = _data("float32", (B, N, K) if tb else (B, K, N), seed=1, lo=-1, hi=1)
    c = _data("float32", (B, M, N), seed=3, lo=-1, hi=1)
    if dtype == "float16":
        ha, hb, hc = a.astype(np.float16), b.astype(np.float16), c.astype(np.float16)
        va, vb, vc = (x.astype(np.float32) for x in (ha, hb, hc))
        name, tf32, back = "float16", 0, lambda x: x.astype(np.float32)
    elif dtype == "bfloat16":
        ha, hb, hc = bf16_bits(a), bf16_bits(b), bf16_bits(c)
        va, vb, vc = bf16_values(ha), bf16_values(hb), bf16_values(hc)
        name, tf32, back = "bfloat16", 0, bf16_values
    else:
        ha, hb, hc, va, vb, vc = a, b, c, a, b, c
        name, tf32, back = "float32", 1, lambda x: x
    op_a = va.transpose(0, 2, 1) if ta else va
    op_b = vb.transpose(0, 2, 1) if tb else vb
    ref = 1.5 * (op_a.astype(np.float64) @ op_b) + 0.5 * vc
    pc = dev.put(hc)
    dev.check(dev.lib.emc_gemm(EM[name], ta, tb, M, N, K, 1.5, dev.put(ha), ha.shape[2],
                               ha.shape[1] * ha.shape[2], dev.put(hb), hb.shape[2],
                               hb.shape[1] * hb.shape[2], 0.5, pc, N, M * N, B, tf32, None))
    np.testing.assert_allclose(back(dev.get(pc)), ref, rtol=2e-2, atol=5e-2)


def test_gemm_float32_tf32_tensor_cores(dev):
    M, N, K = 150, 140, 200
    a, b = _data("float32", (M, K), lo=-1, hi=1), _data("float32", (K, N), seed=1, lo=-1, hi=1)
    out = dev.alloc((M, N), "float32")
    dev.check(dev.lib.emc_gemm(EM["float32"], 0, 0, M, N, K, 1.0, dev.put(a), K, 0, dev.put(b), N,
                               0, 0.0, out, N, 0, 1, 1, None))
    ref = a.astype(np.float64) @ b
    got = dev.get(out)
    np.testing.assert_allclose(got, ref, rtol=5e-3, atol=5e-3)      # TF32: 10-bit mantissa
    assert np.abs(got - ref).max() > 1e-6                           # and not the exact kernel


# -- random numbers: the CPU's streams ------------------------------------------------

@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kind,method,args", [
    ("EM_RD_UNIFORM", "uniform_", (-1.0, 2.0)), ("EM_RD_NORMAL", "normal_", (0.5, 2.0)),
    ("EM_RD_EXPONENTIAL", "exponential_", (1.5,))])
def test_random_device_stream_equals_cpu(dev, name, kind, method, args):
    n = 10_001
    g = ember.Generator().manual_seed(77)
    t = getattr(ember.empty(n, dtype=getattr(ember, name)), method)(*args, generator=g)
    a, b = (args + (0.0,))[:2]
    out = dev.alloc((n,), NP[name])
    dev.check(dev.lib.emc_rand_float(RAND[kind], EM[name], out, n, 77, 0, a, b, None))
    np.testing.assert_array_equal(dev.get(out), t.numpy())


def test_randint_bernoulli_dropout_streams(dev):
    n = 5000
    g = ember.Generator().manual_seed(3)
    t = ember.randint(-4, 90, (n,), generator=g)
    out = dev.alloc((n,), np.int64)
    dev.check(dev.lib.emc_rand_int(EM["int64"], out, n, 3, 0, -4, 94, None))
    np.testing.assert_array_equal(dev.get(out), t.numpy())
    g = ember.Generator().manual_seed(3)
    bern = ember.empty(n).bernoulli_(0.3, generator=g)
    fo = dev.alloc((n,), np.float32)
    dev.check(dev.lib.emc_rand_bernoulli(EM["float32"], fo, n, 3, 0, 0.3, None))
    np.testing.assert_array_equal(dev.get(fo), bern.numpy())
    x = _data("float32", (n,))
    mask = dev.alloc((n,), np.uint8)
    dev.check(dev.lib.emc_dropout(EM["float32"], dev.put(x), fo, mask, n, 0.25, 11, 4, None))
    keep = dev.get(mask).astype(bool)
    np.testing.assert_array_equal(dev.get(fo), np.where(keep, x * np.float32(1 / 0.75), 0))
    assert 0.7 < keep.mean() < 0.8


# -- indexing ----------------------------------------------------------------------------

def test_index_select_embedding_gather(dev):
    src = _data("float32", (2, 10, 3))
    idx = np.array([3, -1, 0, 9, 3], np.int64)
    out = dev.alloc((2, 5, 3), "float32")
    dev.check(dev.lib.emc_index_select(EM["float32"], dev.put(src), 2, 10, 3, dev.put(idx), 5,
                                       out, None))
    np.testing.assert_array_equal(dev.get(out), src[:, idx % 10, :])
    assert dev.lib.emc_check_index_error(None) == 0
    gidx = np.random.default_rng(0).integers(0, 10, (2, 4, 3))
    gout = dev.alloc((2, 4, 3), "float32")
    dev.check(dev.lib.emc_gather(EM["float32"], dev.put(src), 2, 10, 3, dev.put(gidx), 4, gout,
                                 None))
    np.testing.assert_array_equal(dev.get(gout), np.take_along_axis(src, gidx, 1))
    bad = np.array([10], np.int64)
    dev.check(dev.lib.emc_index_select(EM["float32"], dev.put(src), 2, 10, 3, dev.put(bad), 1,
                                       out, None))
    assert dev.lib.emc_check_index_error(None) == 10004


@pytest.mark.parametrize("deterministic", [1, 0])
def test_index_add_embedding_backward(dev, deterministic):
    V, D, n = 7, 5, 40
    idx = np.random.default_rng(1).integers(0, V, n)
    g = _data("float32", (n, D))
    ref = np.zeros((V, D), np.float64)
    np.add.at(ref, idx, g)
    w = dev.put(np.zeros((V, D), np.float32))
    dev.check(dev.lib.emc_index_add(EM["float32"], w, 1, V, D, dev.put(idx), n, dev.put(g),
                                    deterministic, None))
    np.testing.assert_allclose(dev.get(w), ref, rtol=1e-5, atol=1e-5)


# -- allocator and runtime API ---------------------------------------------------------

def test_allocator_statistics_follow_allocations(dev):
    ember.cuda.synchronize()
    ember.cuda.empty_cache()      # blocks of earlier tests in this process may still be live
    base_reserved = ember.cuda.memory_reserved()
    before = ember.cuda.memory_allocated()
    a = dev.alloc((1000,), np.float32)
    assert ember.cuda.memory_allocated() == before + 4096   # rounded to 512 bytes
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    assert ember.cuda.max_memory_allocated() >= before + 4096
    dev.lib.emc_free(a)
    dev.live.remove(a)
    assert ember.cuda.memory_allocated() == before
    assert "allocated" in ember.cuda.memory_summary()
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == ember.cuda.memory_allocated()
    # larger than all free cached space together: it needs a segment of its own
    free = ember.cuda.memory_reserved() - ember.cuda.memory_allocated()
    nbig = max(12 << 20, 2 * free + (2 << 20))
    big = dev.alloc((nbig,), np.uint8)
    assert ember.cuda.memory_reserved() >= base_reserved + nbig
    dev.lib.emc_free(big)
    dev.live.remove(big)
    reserved = ember.cuda.memory_reserved()
    ember.cuda.empty_cache()                         # every segment freed above goes back
    assert ember.cuda.memory_reserved() == base_reserved < reserved
    assert ember.cuda.memory_stats()["allocated_bytes.all.current"] == before


def test_streams_events_and_device_context(dev):
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    x = np.ones(1 << 20, np.float32)
    px, out = dev.put(x), dev.alloc(x.shape, np.float32)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        dev.check(dev.lib.emc_ew_unary(EW["EW_EXP"], EM["float32"], out, px,
                                       P(nd(x.shape, (1,), (1,))), None, ctypes.c_void_p(
                                           s.cuda_stream)))
        end.record()
    assert ember.cuda.current_stream().cuda_stream == 0
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0.0
    np.testing.assert_allclose(dev.get(out), np.exp(x), rtol=1e-6)
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    p = ember.cuda.get_device_properties(0)
    assert p.major >= 7 and p.total_memory > 0 and p.multi_processor_count > 0
    assert ember.cuda.is_bf16_supported() is True
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total
