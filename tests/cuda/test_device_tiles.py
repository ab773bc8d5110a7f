"""Sizes across the tiles of the scan, compaction and radix-sort kernels (1, a
block, a tile and one either side, several tiles, more than a tile of tiles),
all-true and all-false masks, unaligned masks, every sortable dtype with NaN,
-0.0 and ties, many rows, and deterministic sums with heavy duplicates: each
against ember's CPU result.  Marked ``cuda``."""

import ctypes

import numpy as np
import pytest

import ember

from .harness import EM, nd
from .test_device_tensors import _np, close

pytestmark = pytest.mark.cuda

DEV = "cuda"
# a warp, a block, the scan tile (2048), the radix tile (2048), the mask tile (4096)
SIZES = [1, 31, 255, 256, 257, 2047, 2048, 2049, 4095, 4096, 4097, 50_001]


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape).astype(dtype)


# --- scans ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES + [(1 << 20) + 3])
def test_cumsum_rows_across_tiles(n):
    x = ember.tensor(_rand((n,), n))
    got = ember.cumsum(x.to(DEV), 0)
    close(got, ember.cumsum(x, 0), rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(_np(got), _np(ember.cumsum(x.to(DEV), 0)))
    i = ember.tensor(np.random.default_rng(n).integers(-(1 << 40), 1 << 40, n))
    close(ember.cumsum(i.to(DEV), 0), ember.cumsum(i, 0))          # int64: exact
    d = x.double()
    close(ember.cumsum(d.to(DEV), 0), ember.cumsum(d, 0), rtol=1e-10, atol=1e-6)


def test_cumsum_two_levels_of_tile_totals_is_exact_for_integers():
    n = 2048 * 2048 + 5                     # the tiles' totals need their own tiles
    ones = ember.ones(n, dtype=ember.int64, device=DEV)
    close(ones.cumsum(0), ember.arange(1, n + 1))
    w = ember.tensor(np.random.default_rng(0).integers(-1 << 62, 1 << 62, n))
    close(w.to(DEV).cumsum(0), w.cumsum(0))                        # wraps as the CPU's


@pytest.mark.parametrize("shape,dim", [((3, 4097), 1), ((5000, 3), 0), ((2, 2049, 2), 1),
                                       ((700, 33), 1), ((33, 700), 0)])
def test_scans_of_rows_and_few_long_columns(shape, dim):
    x = ember.tensor(_rand(shape, 1))
    for name in ("cumsum", "logcumsumexp"):
        close(getattr(ember, name)(x.to(DEV), dim), getattr(ember, name)(x, dim),
              rtol=1e-5, atol=1e-4)
    p = ember.tensor(np.random.default_rng(2).uniform(0.999, 1.001, shape).astype(np.float32))
    close(ember.cumprod(p.to(DEV), dim), ember.cumprod(p, dim), rtol=1e-5)
    i = ember.tensor(np.random.default_rng(3).integers(-9, 9, shape))
    close(ember.cumsum(i.to(DEV), dim), ember.cumsum(i, dim))


# --- stream compaction ------------------------------------------------------------------

def _masks(n):
    rng = np.random.default_rng(n)
    return {"random": rng.random(n) < 0.3, "true": np.ones(n, bool), "false": np.zeros(n, bool),
            "last": np.arange(n) == n - 1, "sparse": rng.random(n) < 0.001}


@pytest.mark.parametrize("n", SIZES + [(1 << 20) + 3])
def test_nonzero_masked_select_and_scatter_across_tiles(n):
    x = ember.tensor(_rand((n,), 5))
    src = ember.tensor(_rand((n,), 6))
    for kind, m in _masks(n).items():
        mc = ember.tensor(m)
        md = mc.to(DEV)
        close(ember.nonzero(md), ember.nonzero(mc))
        close(ember.masked_select(x.to(DEV), md), ember.masked_select(x, mc))
        close(x.to(DEV).masked_scatter(md, src.to(DEV)), x.masked_scatter(mc, src))


def test_compaction_of_unaligned_masks_and_wide_items():
    n = 9000
    base = np.random.default_rng(7).random(n + 3) < 0.5
    full = ember.tensor(base).to(DEV)
    for off in (1, 2, 3):                   # contiguous views whose data is not 16-aligned
        m = full[off:off + n]
        ref = ember.tensor(base[off:off + n])
        close(ember.nonzero(m), ember.nonzero(ref))
        for dt in (ember.int8, ember.float16, ember.float64, ember.int64):
            x = ember.tensor(_rand((n,), off)).to(dt)
            close(ember.masked_select(x.to(DEV), m), ember.masked_select(x, ref))
    m2 = np.random.default_rng(8).random((67, 129)) < 0.4       # 2-D coordinates
    close(ember.nonzero(ember.tensor(m2).to(DEV)), ember.nonzero(ember.tensor(m2)))


# --- sort / topk -------------------------------------------------------------------------

_SORT_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                "uint8"]


def _bits(t):
    """The bytes of a tensor's values (bfloat16 through its exact float32 values)."""
    return _np(t.float() if t.dtype == ember.bfloat16 else t).view(np.uint8)


def _sort_input(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        v = np.round(rng.uniform(-4, 4, shape) * 2) / 2            # many ties
        v.flat[::13] = np.nan
        v.flat[1::17] = -0.0
        v.flat[2::19] = 0.0
        v.flat[3::23] = np.inf
        v.flat[4::29] = -np.inf
        t = ember.tensor(v.astype(np.float32))
        return t.to(getattr(ember, dtype))
    if dtype == "uint8":
        return ember.tensor(rng.integers(0, 256, shape).astype(np.uint8))
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True).astype(dtype)
    v.flat[::7] = info.min
    v.flat[1::11] = info.max
    v.flat[2::5] = 0
    return ember.tensor(v)


@pytest.mark.parametrize("dtype", _SORT_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (2047,), (2049,), (3, 4097), (300, 7), (70_000,)])
def test_sort_all_dtypes_across_tiles_and_many_rows(dtype, shape):
    x = _sort_input(dtype, shape, len(shape) * 10 + shape[-1])
    for desc in (False, True):
        got = ember.sort(x.to(DEV), -1, descending=desc, stable=True)
        ref = ember.sort(x, -1, descending=desc, stable=True)
        close(got.indices, ref.indices)
        np.testing.assert_array_equal(_bits(got.values), _bits(ref.values))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
@pytest.mark.parametrize("shape,k", [((2049,), 1), ((3, 4097), 50), ((300, 7), 7),
                                     ((2, 70_000), 8), ((5, 3000), 2048)])
def test_topk_ties_and_sizes(dtype, shape, k):
    x = _sort_input(dtype, shape, k)
    for largest in (True, False):
        got = ember.topk(x.to(DEV), k, largest=largest)
        ref = ember.topk(x, k, largest=largest)
        close(got.indices, ref.indices)
        np.testing.assert_array_equal(_bits(got.values), _bits(ref.values))


# --- deterministic scatter_add / index_add / index_put ----------------------------------

def _P(obj):
    return ctypes.cast(ctypes.pointer(obj), ctypes.c_void_p)


@pytest.mark.parametrize("n,targets", [(1, 1), (257, 1), (4097, 3), ((1 << 20) + 3, 1000),
                                       (300_000, 70_000)])
def test_deterministic_scatter_add_is_the_serial_sum(dev, n, targets):
    rng = np.random.default_rng(n)
    index = rng.integers(0, targets, n)
    src = rng.standard_normal(n).astype(np.float32)
    out0 = rng.standard_normal(targets).astype(np.float32)
    pi, ps = dev.put(index), dev.put(src)
    got = []
    for _ in range(2):
        out = dev.put(out0)
        dev.check(dev.lib.emc_scatter(1, EM["float32"], out, targets, 1, pi, ps,
                                      _P(nd((n,), (0,), (1,), (1,))), 1, None))
        got.append(dev.get(out))
    assert got[0].tobytes() == got[1].tobytes()
    ref = out0.copy()
    np.add.at(ref, index, src)              # in index order, rounding to float32 every add
    np.testing.assert_array_equal(got[0], ref)


def test_deterministic_index_add_and_index_put_match_the_cpu_bit_for_bit():
    prev = ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(True)
    try:
        rng = np.random.default_rng(11)
        ii = rng.integers(0, 50, 20_000)
        idx = ember.tensor(ii)
        src = rng.standard_normal((20_000, 9)).astype(np.float32)
        acc = rng.standard_normal((50, 9)).astype(np.float32)
        got = ember.tensor(acc).to(DEV).index_add(0, idx.to(DEV), ember.tensor(src).to(DEV))
        ref = acc.copy()
        np.add.at(ref, ii, src)
        np.testing.assert_array_equal(_np(got), ref)
        ii = rng.integers(-50, 50, 20_000)                      # index_put wraps negatives
        idx = ember.tensor(ii)
        vals = rng.standard_normal(20_000)
        z = ember.zeros(50, dtype=ember.float64, device=DEV)
        got = z.index_put((idx.to(DEV),), ember.tensor(vals).to(DEV), accumulate=True)
        ref = np.zeros(50)
        np.add.at(ref, ii % 50, vals)
        np.testing.assert_array_equal(_np(got), ref)
        # plain writes: the last in index order wins
        got = z.index_put((idx.to(DEV),), ember.tensor(vals).to(DEV))
        ref = np.zeros(50)
        for j, v in zip(ii % 50, vals):
            ref[j] = v
        np.testing.assert_array_equal(_np(got), ref)
    finally:
        ember.use_deterministic_algorithms(prev)


# --- randperm: rounds over the whole range, then over shrinking lists -------------------

@pytest.mark.parametrize("n,seed", [(5000, 3), ((1 << 20) + 3, 11)])
def test_randperm_equals_the_cpus_fisher_yates(dev, n, seed):
    ref = ember.randperm(n, generator=ember.Generator().manual_seed(seed)).numpy()
    out = dev.alloc((n,), np.int64)
    dev.check(dev.lib.emc_randperm(out, n, seed, 0, None))
    np.testing.assert_array_equal(dev.get(out), ref)
