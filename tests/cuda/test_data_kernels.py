"""scatter / index_put (atomic and deterministic), sort / topk, stack, std and
p-norms, randperm and multinomial against ember's CPU results or NumPy,
including strided, broadcast, duplicate-index and empty cases.  Marked
``cuda``."""

import ctypes

import numpy as np
import pytest

import ember

from .harness import EM, contig, nd, ptr_array

pytestmark = pytest.mark.cuda

SET, ADD = 0, 1


def P(obj):
    return ctypes.cast(ctypes.pointer(obj), ctypes.c_void_p)


def _data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-3, 3, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def _i64(*v):
    return (ctypes.c_int64 * len(v))(*v)


# -- scatter / scatter_add --------------------------------------------------------------

def _scatter_ref(out, dim, index, src, add):
    """Sequential scatter in index order: sums add up, the last write wins."""
    out = out.astype(np.float64) if add and out.dtype.kind == "f" else out.copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        if add:
            out[tuple(tgt)] += src[pos]
        else:
            out[tuple(tgt)] = src[pos]
    return out


@pytest.mark.parametrize("deterministic", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_scatter_add_with_duplicates_and_a_smaller_index(dev, dtype, deterministic):
    out0 = _data(dtype, (4, 6, 5))
    src = _data(dtype, (3, 4, 5), seed=1)                  # larger than the index
    index = np.random.default_rng(2).integers(0, 6, (2, 3, 4))
    ref = _scatter_ref(out0, 1, index, src, add=True)
    out = dev.put(out0)
    d = nd(index.shape, (30, 0, 1), contig(index.shape), (20, 5, 1))
    dev.check(dev.lib.emc_scatter(ADD, EM[dtype], out, 6, 5, dev.put(index), dev.put(src), P(d),
                                  deterministic, None))
    got = dev.get(out)
    if dtype == "int64":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    # the CPU op agrees where the index spans src
    full = np.random.default_rng(3).integers(0, 6, (4, 3, 5))
    src2 = _data(dtype, (4, 3, 5), seed=4)
    cpu = ember.scatter_add(ember.tensor(out0), 1, ember.tensor(full), ember.tensor(src2))
    out = dev.put(out0)
    d = nd(full.shape, (30, 0, 1), contig(full.shape), contig(full.shape))
    dev.check(dev.lib.emc_scatter(ADD, EM[dtype], out, 6, 5, dev.put(full), dev.put(src2), P(d),
                                  deterministic, None))
    np.testing.assert_allclose(dev.get(out), cpu.numpy(), rtol=1e-5, atol=1e-5)
    assert dev.lib.emc_check_index_error(None) == 0


def test_deterministic_scatter_add_is_reproducible_bit_for_bit(dev):
    n = 50_000
    index = np.random.default_rng(0).integers(0, 7, n)     # long runs per target
    src = _data("float32", (n,), seed=1)
    pi, ps = dev.put(index), dev.put(src)
    runs = []
    for _ in range(2):
        out = dev.put(np.zeros(7, np.float32))
        dev.check(dev.lib.emc_scatter(ADD, EM["float32"], out, 7, 1, pi, ps,
                                      P(nd((n,), (0,), (1,), (1,))), 1, None))
        runs.append(dev.get(out))
    assert runs[0].tobytes() == runs[1].tobytes()
    # summed in index order, as a sequential float32 loop does
    seq = np.zeros(7, np.float32)
    for j, v in zip(index, src):
        seq[j] += v
    np.testing.assert_array_equal(runs[0], seq)


def test_scatter_set_last_write_wins_scalar_value_and_bad_index(dev):
    out0 = np.zeros((3, 8), np.float32)
    index = np.array([[1, 1, 5], [0, 7, 7], [2, 2, 2]], np.int64)
    src = _data("float32", (3, 3), seed=1)
    out = dev.put(out0)
    dev.check(dev.lib.emc_scatter(SET, EM["float32"], out, 8, 1, dev.put(index), dev.put(src),
                                  P(nd((3, 3), (8, 0), (3, 1), (3, 1))), 1, None))
    np.testing.assert_array_equal(dev.get(out), _scatter_ref(out0, 1, index, src, add=False))
    # a value (src broadcast by stride 0) and negative indices, atomic variant
    out = dev.put(out0)
    neg = np.array([[-1], [0], [-8]], np.int64)
    dev.check(dev.lib.emc_scatter(SET, EM["float32"], out, 8, 1, dev.put(neg),
                                  dev.put(np.array([2.5], np.float32)),
                                  P(nd((3, 1), (8, 0), (1, 1), (0, 0))), 0, None))
    ref = out0.copy()
    ref[0, 7] = ref[1, 0] = ref[2, 0] = 2.5
    np.testing.assert_array_equal(dev.get(out), ref)
    bad = np.array([[8]], np.int64)
    dev.check(dev.lib.emc_scatter(ADD, EM["float32"], out, 8, 1, dev.put(bad), dev.put(src),
                                  P(nd((1, 1), (8, 0), (1, 1), (3, 1))), 1, None))
    assert dev.lib.emc_check_index_error(None) == 10004
    # empty index: nothing to do
    dev.check(dev.lib.emc_scatter(ADD, EM["float32"], out, 8, 1, dev.put(bad), dev.put(src),
                                  P(nd((0, 1), (8, 0), (1, 1), (3, 1))), 1, None))
    assert dev.lib.emc_scatter(ADD, EM["uint8"], out, 8, 1, dev.put(neg), dev.put(src),
                               P(nd((1, 1), (8, 0), (1, 1), (3, 1))), 0, None) == 10001


# -- index_put -----------------------------------------------------------------------

@pytest.mark.parametrize("deterministic", [0, 1])
def test_index_put_accumulate_rows(dev, deterministic):
    out0 = _data("float32", (7, 4, 3))
    idx = np.random.default_rng(0).integers(-7, 7, 10)
    vals = _data("float32", (10, 4, 3), seed=1)
    ref = out0.astype(np.float64)
    np.add.at(ref, idx, vals)
    out = dev.put(out0)
    pidx = dev.put(idx)
    dev.check(dev.lib.emc_index_put(EM["float32"], out, 1, ptr_array([pidx]), _i64(7), _i64(12),
                                    10, dev.put(vals), 12, P(nd((4, 3), (3, 1), (3, 1))), 1,
                                    deterministic, None))
    np.testing.assert_allclose(dev.get(out), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("deterministic", [0, 1])
def test_index_put_two_indices_broadcast_values(dev, deterministic):
    out0 = _data("float64", (5, 6, 3))
    i0 = np.array([0, 4, -1, 2, 3], np.int64)
    i1 = np.array([5, 0, 1, -6, 2], np.int64)               # distinct (row, col) pairs
    vals = _data("float64", (3,), seed=1)
    ref = out0.copy()
    ref[i0, i1] = vals
    out = dev.put(out0)
    pi0, pi1 = dev.put(i0), dev.put(i1)
    dev.check(dev.lib.emc_index_put(EM["float64"], out, 2, ptr_array([pi0, pi1]), _i64(5, 6),
                                    _i64(18, 3), 5, dev.put(vals), 0, P(nd((3,), (1,), (1,))), 0,
                                    deterministic, None))
    np.testing.assert_array_equal(dev.get(out), ref)
    # duplicates without accumulate, deterministic: the last one wins
    if deterministic:
        dup = np.array([1, 3, 1, 1], np.int64)
        v = _data("float64", (4,), seed=2)
        out = dev.put(np.zeros(5))
        dev.check(dev.lib.emc_index_put(EM["float64"], out, 1, ptr_array([dev.put(dup)]), _i64(5),
                                        _i64(1), 4, dev.put(v), 1, P(nd((), (), ())), 0, 1, None))
        ref = np.zeros(5)
        for j, x in zip(dup, v):
            ref[j] = x
        np.testing.assert_array_equal(dev.get(out), ref)


# -- sort / topk -----------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 700, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_and_ties(dev, dtype, n, descending):
    x = np.round(_data(dtype, (3, n)) / 2).astype(dtype)   # many ties
    if dtype != "int64" and n > 10:
        x[1, ::97] = np.nan
    ref = ember.sort(ember.tensor(x), dim=-1, descending=descending, stable=True)
    vals, idx = dev.alloc(x.shape, dtype), dev.alloc(x.shape, np.int64)
    dev.check(dev.lib.emc_sort(EM[dtype], dev.put(x), 3, n, int(descending), vals, idx, None))
    np.testing.assert_array_equal(dev.get(idx), ref.indices.numpy())
    np.testing.assert_array_equal(dev.get(vals), ref.values.numpy())


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float16", "int16"])
def test_sort_other_dtypes_against_numpy_stable_argsort(dev, dtype):
    x = _data("float32", (2, 3000)).astype(dtype) if dtype != "uint8" else \
        np.random.default_rng(0).integers(0, 20, (2, 3000)).astype(np.uint8)
    vals, idx = dev.alloc(x.shape, dtype), dev.alloc(x.shape, np.int64)
    dev.check(dev.lib.emc_sort(EM[dtype], dev.put(x), 2, 3000, 0, vals, idx, None))
    ref = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(dev.get(idx), ref)
    np.testing.assert_array_equal(dev.get(vals), np.take_along_axis(x, ref, 1))


def test_sort_empty_and_bad_dtype(dev):
    buf = dev.alloc((4,), np.int64)
    dev.check(dev.lib.emc_sort(EM["float32"], buf, 0, 5, 0, None, buf, None))
    dev.check(dev.lib.emc_sort(EM["float32"], buf, 3, 0, 0, None, buf, None))
    assert dev.lib.emc_sort(10, buf, 1, 4, 0, None, buf, None) == 10001      # complex64


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 10, 2000])
def test_topk(dev, largest, k):
    rows, n = 4, 2000
    x = np.stack([np.random.default_rng(r).permutation(n) for r in range(rows)]).astype(
        np.float32) / 7                                      # distinct values
    ref = ember.topk(ember.tensor(x), k, dim=-1, largest=largest, sorted=True)
    vals, idx = dev.alloc((rows, k), np.float32), dev.alloc((rows, k), np.int64)
    dev.check(dev.lib.emc_topk(EM["float32"], dev.put(x), rows, n, k, int(largest), vals, idx,
                               None))
    np.testing.assert_array_equal(dev.get(vals), ref.values.numpy())
    np.testing.assert_array_equal(dev.get(idx), ref.indices.numpy())
    assert dev.lib.emc_topk(EM["float32"], dev.put(x), rows, n, n + 1, 1, vals, idx,
                            None) == 10003


# -- stack -------------------------------------------------------------------------------

def test_stack_along_a_middle_dim(dev):
    parts = [_data("float32", (2, 5), seed=k) for k in range(3)]
    out = dev.alloc((2, 3, 5), np.float32)
    srcs = ptr_array([dev.put(p) for p in parts])
    dev.check(dev.lib.emc_stack(EM["float32"], out, 3, srcs, 2, 5, None))
    np.testing.assert_array_equal(dev.get(out), np.stack(parts, axis=1))
    ints = [_data("int16", (4,), seed=k) for k in range(40)]          # several launches
    out = dev.alloc((40, 4), np.int16)
    dev.check(dev.lib.emc_stack(EM["int16"], out, 40, ptr_array([dev.put(p) for p in ints]), 1, 4,
                                None))
    np.testing.assert_array_equal(dev.get(out), np.stack(ints))


# -- std and p-norms -----------------------------------------------------------------------

@pytest.mark.parametrize("O,K,I", [(5, 1000, 1), (3, 40, 6)])
@pytest.mark.parametrize("correction", [0.0, 1.0])
def test_std(dev, O, K, I, correction):
    x = _data("float32", (O, K, I)) + 4
    out, mean = dev.alloc((O, I), np.float32), dev.alloc((O, I), np.float32)
    dev.check(dev.lib.emc_std(EM["float32"], dev.put(x), O, K, I, correction, out, mean, None))
    ref = ember.std(ember.tensor(x), dim=1, correction=correction).numpy()
    np.testing.assert_allclose(dev.get(out), ref, rtol=1e-5)
    np.testing.assert_allclose(dev.get(mean), x.mean(axis=1), rtol=1e-5)


@pytest.mark.parametrize("O,K,I", [(3, 1000, 1), (2, 50, 7), (2, 100_000, 1), (2, 3000, 3),
                                   (70_000, 3, 1)])
@pytest.mark.parametrize("ord", [1.0, 2.0, np.inf, -np.inf, 0.0, 3.0, 0.5])
def test_vector_norms(dev, O, K, I, ord):
    x = _data("float32", (O, K, I))
    x[0, 1, 0] = 0.0
    out = dev.alloc((O, I), np.float32)
    px = dev.put(x)
    dev.check(dev.lib.emc_norm(EM["float32"], px, O, K, I, float(ord), out, None))
    ref = ember.linalg.vector_norm(ember.tensor(x), ord, dim=1).numpy()
    got = dev.get(out)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-5)
    dev.check(dev.lib.emc_norm(EM["float32"], px, O, K, I, float(ord), out, None))
    assert dev.get(out).tobytes() == got.tobytes()


def test_norm_float64_empty_extent_and_errors(dev):
    x = _data("float64", (4, 300, 1))
    out = dev.alloc((4, 1), np.float64)
    dev.check(dev.lib.emc_norm(EM["float64"], dev.put(x), 4, 300, 1, 2.0, out, None))
    np.testing.assert_allclose(dev.get(out)[:, 0], np.sqrt((x[:, :, 0] ** 2).sum(1)), rtol=1e-13)
    dev.check(dev.lib.emc_norm(EM["float64"], dev.put(x), 4, 0, 1, 2.0, out, None))
    assert not dev.get(out).any()                                  # the norm of nothing is 0
    assert dev.lib.emc_norm(EM["float64"], dev.put(x), 4, 0, 1, np.inf, out, None) == 10003
    assert dev.lib.emc_norm(EM["int64"], dev.put(x), 4, 3, 1, 2.0, out, None) == 10001


# -- randperm and multinomial: the CPU's streams -------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000, 200_000])
def test_randperm_equals_cpu(dev, n):
    ref = ember.randperm(n, generator=ember.Generator().manual_seed(7)).numpy()
    out = dev.alloc((n,), np.int64)
    dev.check(dev.lib.emc_randperm(out, n, 7, 0, None))
    np.testing.assert_array_equal(dev.get(out), ref)


@pytest.mark.parametrize("replacement,k", [(True, 1), (True, 25), (False, 1), (False, 12)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial_equals_cpu(dev, dtype, replacement, k):
    p = np.random.default_rng(0).uniform(0, 1, (3, 40)).astype(dtype)
    p[:, ::5] = 0
    ref = ember.multinomial(ember.tensor(p), k, replacement,
                            generator=ember.Generator().manual_seed(11)).numpy()
    out = dev.alloc((3, k), np.int64)
    status = dev.put(np.array([7], np.int32))
    dev.check(dev.lib.emc_multinomial(EM[dtype], dev.put(p), 3, 40, k, int(replacement), out, 11,
                                      0, status, None))
    np.testing.assert_array_equal(dev.get(out), ref)
    assert dev.get(status)[0] == 0


def test_multinomial_reports_bad_rows_like_the_cpu(dev):
    out = dev.alloc((3, 2), np.int64)
    status = dev.alloc((1,), np.int32)
    for row, code in (([0.5, -1.0, 0.2], 1), ([0.0, 0.0, 0.0], 2), ([0.0, 1.0, 0.0], 3)):
        p = np.array([[0.2, 0.3, 0.5], row, [np.inf, 1, 1]], np.float64)   # row 1 comes first
        dev.check(dev.lib.emc_multinomial(EM["float64"], dev.put(p), 3, 3, 2, 0, out, 1, 0,
                                          status, None))
        assert dev.get(status)[0] == code
    assert dev.lib.emc_multinomial(EM["float32"], dev.put(p), 3, 3, 4, 0, out, 1, 0, status,
                                   None) == 10003               # more samples than categories
    assert dev.lib.emc_multinomial(EM["int64"], dev.put(p), 3, 3, 1, 1, out, 1, 0, status,
                                   None) == 10001
