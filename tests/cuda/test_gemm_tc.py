"""The tensor-core GEMM (gemm_tc in src_cuda/gemm.cu) on odd shapes, every
transpose, fp16/bf16/tf32, alpha/beta and batches, against a float64 product of
the rounded inputs.  Operand rows padded to 16 bytes (NaN in the padding) run the
tensor-core kernels with their zero-filled edges; tight rows of odd length take the
fallback.  On compute capability 9.0 the default is the TMA kernel (gemm_ws), and
a child process runs the cases again with EMBER_CUDA_WGMMA=0 (gemm_tc).  The layout
replay (gemm_layout_sim.cpp) needs only a C++ compiler."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ember

from .harness import EM, bf16_bits, bf16_values

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SHAPES = [(1, 1, 1), (15, 16, 17), (17, 15, 16), (16, 17, 15), (127, 128, 129),
          (129, 127, 128), (128, 129, 127), (1000, 17, 129), (1, 1000, 16), (17, 1, 1000)]
NAN16 = {"float16": np.float16(np.nan).view(np.uint16), "bfloat16": np.uint16(0x7FC0)}


def _encode(x, dtype):
    """float32 values -> (stored array, the float32 values it holds)"""
    if dtype == "float16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32)
    if dtype == "bfloat16":
        h = bf16_bits(x)
        return h, bf16_values(h)
    return x, x


def _decode(h, dtype):
    if dtype == "float16":
        return h.astype(np.float32)
    if dtype == "bfloat16":
        return bf16_values(h)
    return h


def _padded(vals, dtype, ld, fill):
    """[B, R, C] stored with row length ld >= C, `fill` in the padding"""
    h, v = _encode(vals, dtype)
    out = np.empty(h.shape[:2] + (ld,), h.dtype)
    out[...] = fill
    out[..., :h.shape[2]] = h
    return out, v


def _nan(dtype):
    return NAN16[dtype] if dtype in NAN16 else np.float32(np.nan)


def _run(dev, dtype, ta, tb, M, N, K, batch, beta, pad):
    rng = np.random.default_rng(M * 7 + N * 5 + K * 3 + ta * 2 + tb)
    storage = "float32" if dtype == "tf32" else dtype
    a = rng.uniform(-1, 1, (batch, K, M) if ta else (batch, M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (batch, N, K) if tb else (batch, K, N)).astype(np.float32)
    c = rng.uniform(-1, 1, (batch, M, N)).astype(np.float32)
    up = (lambda n: -(-n // 8) * 8) if pad else (lambda n: n)
    lda, ldb, ldc = up(a.shape[2]), up(b.shape[2]), N + 2 if pad else N
    ha, va = _padded(a, storage, lda, _nan(storage))
    hb, vb = _padded(b, storage, ldb, _nan(storage))
    if beta == 0.0:   # C must not be read
        hc, vc = _padded(np.full_like(c, np.nan), storage, ldc, 0)
        vc = np.zeros_like(c)
    else:
        hc, vc = _padded(c, storage, ldc, 0)
    op_a = va.transpose(0, 2, 1) if ta else va
    op_b = vb.transpose(0, 2, 1) if tb else vb
    ref = 1.5 * np.matmul(op_a.astype(np.float64), op_b) + beta * vc
    pc = dev.put(hc)
    dev.check(dev.lib.emc_gemm(EM[storage], ta, tb, M, N, K, 1.5, dev.put(ha), lda,
                               ha.shape[1] * lda, dev.put(hb), ldb, hb.shape[1] * ldb, beta,
                               pc, ldc, M * ldc, batch, 1 if dtype == "tf32" else 0, None))
    got = dev.get(pc)
    np.testing.assert_array_equal(got[..., N:], hc[..., N:])   # C's padding untouched
    got = _decode(got[..., :N], storage)
    # output rounding (bf16: 2^-9), TF32 inputs (10-bit mantissas) over K terms
    atol = 1e-3 + (3e-3 * np.sqrt(K) if dtype == "tf32" else 0.0)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=atol)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gemm_tensor_cores_odd_shapes(dev, dtype, ta, tb, M, N, K):
    _run(dev, dtype, ta, tb, M, N, K, batch=1, beta=0.0, pad=True)
    _run(dev, dtype, ta, tb, M, N, K, batch=2, beta=0.5, pad=True)
    _run(dev, dtype, ta, tb, M, N, K, batch=2, beta=0.5, pad=False)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1)])
def test_gemm_tensor_cores_many_tiles(dev, dtype, ta, tb):
    # several block tiles in both directions plus ragged edges, a long pipelined K
    _run(dev, dtype, ta, tb, 1000, 1000, 1000, batch=1, beta=0.5, pad=True)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_tensor_cores_long_k_small_output(dev, dtype, ta, tb):
    # few output tiles over a long K: the Hopper kernel splits K and sums the slices
    _run(dev, dtype, ta, tb, 300, 260, 8192, batch=1, beta=0.0, pad=True)
    _run(dev, dtype, ta, tb, 130, 70, 4099, batch=3, beta=0.5, pad=True)


@pytest.mark.cuda
def test_gemm_tf32_rounds_and_highest_is_exact(dev):
    M, N, K = 160, 264, 520
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    ref = a.astype(np.float64) @ b
    for tf32, lo, hi in [(1, 1e-6, 5e-2), (0, 0.0, 1e-4)]:
        out = dev.alloc((M, N), "float32")
        dev.check(dev.lib.emc_gemm(EM["float32"], 0, 0, M, N, K, 1.0, dev.put(a), K, 0,
                                   dev.put(b), N, 0, 0.0, out, N, 0, 1, tf32, None))
        err = np.abs(dev.get(out) - ref).max()
        assert lo <= err < hi, (tf32, err)


def _hopper():
    return ember.cuda.get_device_capability() == (9, 0)


@pytest.mark.cuda
def test_gemm_hopper_kernel_selection(dev, monkeypatch):
    # gemm_ws by default on compute capability 9.0; EMBER_CUDA_WGMMA=0 turns it off
    off = os.environ.get("EMBER_CUDA_WGMMA") == "0"
    assert dev.lib.emc_gemm_wgmma() == (1 if _hopper() and not off else 0)
    monkeypatch.setenv("EMBER_CUDA_WGMMA", "0")
    assert dev.lib.emc_gemm_wgmma() == 0


@pytest.mark.cuda
def test_gemm_tc_in_a_child_process_where_hopper_kernel_is_default():
    # a child process, so that a fault in one kernel cannot poison this one's context
    if not _hopper():
        pytest.skip("gemm_tc is already the default here")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", os.path.abspath(__file__), "-p", "no:cacheprovider",
         "-k", "odd_shapes or many_tiles or long_k or kernel_selection"],
        env=dict(os.environ, EMBER_CUDA_WGMMA="0"), cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-2000:]


def test_gemm_tc_shared_memory_layout_replay(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = str(tmp_path / "gemm_layout_sim")
    subprocess.run([cxx, "-std=c++17", "-O1", "-I" + os.path.join(ROOT, "src_cuda"),
                    os.path.join(HERE, "gemm_layout_sim.cpp"), "-o", exe], check=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout
