"""Random numbers: Philox generator, seeding and state, the samplers' distributions
(fixed seeds, tolerances of many standard errors, so nothing can flake), shapes,
dtypes and errors as PyTorch, and the same numbers on 1 or 2 threads and any ISA."""
import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import library
from ember._C import random as R

N = 200_000


def arr(t):
    return np.asarray(t.float().numpy() if t.dtype in (ember.float16, ember.bfloat16)
                      else t.numpy(), dtype=np.float64)


def chi2_uniform(counts):
    counts = np.asarray(counts, dtype=np.float64)
    exp = counts.sum() / len(counts)
    return float(((counts - exp) ** 2 / exp).sum())


def normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@pytest.fixture(autouse=True)
def _restore_threads():
    n = ember.get_num_threads()
    yield
    ember.set_num_threads(n)


# ---- the generator ---------------------------------------------------------------

def test_philox_known_answers():
    # Random123's known-answer vectors for philox4x32-10
    assert R._philox_block((0, 0, 0, 0), (0, 0)) == (0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                                     0x9b00dbd8)
    assert R._philox_block((0xffffffff,) * 4, (0xffffffff,) * 2) == (
        0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)
    assert R._philox_block((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
                           (0xa4093822, 0x299f31d0)) == (0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                                         0x24126ea1)


def test_manual_seed_reproduces_and_state_advances():
    ember.manual_seed(123)
    a, b = ember.rand(100), ember.randn(50)
    c = ember.randint(0, 1000, (30,))
    assert not np.array_equal(arr(a)[:50], arr(ember.rand(50)))  # the state moved on
    ember.manual_seed(123)
    assert np.array_equal(arr(a), arr(ember.rand(100)))
    assert np.array_equal(arr(b), arr(ember.randn(50)))
    assert np.array_equal(arr(c), arr(ember.randint(0, 1000, (30,))))
    g = ember.manual_seed(5)
    assert g is ember.default_generator and ember.initial_seed() == 5


def test_successive_calls_differ():
    ember.manual_seed(0)
    x, y = arr(ember.rand(1000)), arr(ember.rand(1000))
    assert not np.array_equal(x, y)
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.15


def test_generator_independence_and_state_roundtrip():
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    ember.manual_seed(0)
    base = arr(ember.rand(20))
    ember.manual_seed(0)
    a = arr(ember.rand(20, generator=g1))
    assert np.array_equal(arr(ember.rand(20)), base)      # default untouched by g1
    assert np.array_equal(a, arr(ember.rand(20, generator=g2)))
    s = g1.get_state()
    assert s.dtype == ember.uint8 and tuple(s.shape) == (16,)
    nxt = arr(ember.randn(10, generator=g1))
    g1.set_state(s)
    assert np.array_equal(arr(ember.randn(10, generator=g1)), nxt)
    assert g1.initial_seed() == 7 and g1.device == ember.device("cpu")
    g3 = pickle.loads(pickle.dumps(g1))
    assert np.array_equal(arr(ember.rand(5, generator=g3)), arr(ember.rand(5, generator=g1)))
    c = g1.clone_state()
    assert np.array_equal(arr(ember.rand(5, generator=c)), arr(ember.rand(5, generator=g1)))


def test_get_set_rng_state_and_fork_rng():
    ember.manual_seed(11)
    st = ember.get_rng_state()
    a = arr(ember.rand(8))
    ember.set_rng_state(st)
    assert np.array_equal(arr(ember.rand(8)), a)
    st = ember.get_rng_state()
    with R.fork_rng():
        ember.rand(100)
    assert np.array_equal(arr(ember.get_rng_state()), arr(st))
    with pytest.raises(TypeError, match="ByteTensor"):
        ember.set_rng_state(ember.zeros(16))
    with pytest.raises(RuntimeError, match="size"):
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))


def test_seed_values():
    g = ember.Generator()
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(ValueError):
        g.manual_seed(2 ** 64)
    with pytest.raises(RuntimeError, match="expected a long"):
        g.manual_seed(1.5)
    s = ember.seed()
    assert ember.initial_seed() == s and 0 <= s < 2 ** 63
    with pytest.raises(TypeError, match="generator"):
        ember.rand(2, generator=3)


def test_default_seed_is_fixed_at_startup():
    code = "import ember; print(ember.initial_seed(), ember.rand(3).tolist())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert len(outs) == 1 and outs.pop().startswith("67280421310721 ")


# ---- same numbers on any thread count and any ISA --------------------------------

def _draw_all(seed):
    ember.manual_seed(seed)
    x = ember.ones(100_003)
    out = [ember.rand(100_003), ember.randn(100_001), ember.rand(70_001, dtype=ember.float64),
           ember.randn(70_001, dtype=ember.float64), ember.randint(-5, 1000, (100_003,)),
           ember.randint(0, 2 ** 40, (50_001,)), ember.empty(90_001).bernoulli_(0.3),
           ember.randperm(5000), R.dropout(x, 0.25)[0], ember.empty(40_000).exponential_(),
           ember.multinomial(ember.rand(40, 100), 30), ember.rand(33_333, dtype=ember.float16)]
    return [arr(t) for t in out]


def test_same_numbers_on_one_and_two_threads():
    ember.set_num_threads(1)
    one = _draw_all(99)
    ember.set_num_threads(2)
    two = _draw_all(99)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def test_values_depend_only_on_index():
    # a prefix of a longer draw is the shorter draw (the counter is the element index)
    ember.manual_seed(3)
    long = arr(ember.randn(100_000))
    ember.manual_seed(3)
    short = arr(ember.randn(77))
    assert np.array_equal(long[:77], short)


def test_same_numbers_with_generic_kernels():
    code = ("import ember, hashlib\n"
            "ember.manual_seed(4)\n"
            "ts = [ember.rand(5000), ember.randn(5001), ember.randn(3001, dtype=ember.float64),"
            " ember.rand(777, dtype=ember.float64), ember.randint(0, 7, (999,)),"
            " ember.empty(2000).exponential_()]\n"
            "print(hashlib.sha1(b''.join(bytes(t.numpy().data) for t in ts)).hexdigest())\n")
    env = dict(os.environ)
    outs = []
    for isa in ("generic", None):
        if isa:
            env["EMBER_ISA"] = isa
        else:
            env.pop("EMBER_ISA", None)
        outs.append(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                   text=True, env=env, check=True).stdout)
    assert outs[0] == outs[1]


# ---- rand / randn ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_rand_uniform(dtype):
    ember.manual_seed(1)
    x = arr(ember.rand(N, dtype=dtype))
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.var() - 1 / 12) < 0.002
    if dtype in (ember.float32, ember.float64):
        counts, _ = np.histogram(x, bins=20, range=(0, 1))
        assert chi2_uniform(counts) < 60   # 19 dof: p < 1e-5


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_randn_normal(dtype):
    ember.manual_seed(2)
    x = arr(ember.randn(N, dtype=dtype))
    assert abs(x.mean()) < 0.012
    assert abs(x.std() - 1) < 0.01
    assert abs(((x - x.mean()) ** 3).mean()) < 0.04
    assert abs(((x - x.mean()) ** 4).mean() / x.var() ** 2 - 3) < 0.08
    for q in (-2.5, -1.0, -0.3, 0.0, 0.7, 1.5, 3.0):
        assert abs((x <= q).mean() - normal_cdf(q)) < 0.005
    assert np.abs(x).max() < 7


def test_rand_shapes_dtypes_and_requires_grad():
    assert tuple(ember.rand(2, 3).shape) == (2, 3)
    assert tuple(ember.rand((2, 3)).shape) == (2, 3)
    assert tuple(ember.rand([4]).shape) == (4,)
    assert tuple(ember.rand(size=(2, 5)).shape) == (2, 5)
    assert ember.rand(()).shape == ()
    assert ember.rand(0).numel() == 0
    assert ember.randn(2).dtype == ember.float32
    r = ember.rand(3, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.rand(2).dtype == ember.float64 and ember.randn(2).dtype == ember.float64
        assert ember.normal(0.0, 1.0, (2,)).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)
    x = ember.zeros(2, 3, dtype=ember.float64)
    assert ember.rand_like(x).dtype == ember.float64 and tuple(ember.randn_like(x).shape) == (2, 3)
    o = ember.empty(4)
    assert ember.rand(4, out=o) is o


def test_rand_errors():
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.rand(-1)
    with pytest.raises(NotImplementedError, match="Long"):
        ember.rand(2, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="Long"):
        ember.randn(2, dtype=ember.int64)
    with pytest.raises(NotImplementedError):
        ember.rand_like(ember.zeros(2, dtype=ember.int64))
    with pytest.raises(TypeError):
        ember.rand(2.5)
    with pytest.raises(RuntimeError, match="floating point"):
        ember.randint(3, (2,), requires_grad=True)


# ---- randint / random_ -------------------------------------------------------------

def test_randint_values_and_forms():
    ember.manual_seed(3)
    x = arr(ember.randint(10, (N,)))
    assert x.min() == 0 and x.max() == 9
    assert chi2_uniform(np.bincount(x.astype(int), minlength=10)) < 40   # 9 dof
    y = ember.randint(-3, 4, (1000,))
    assert y.dtype == ember.int64 and arr(y).min() == -3 and arr(y).max() == 3
    assert tuple(ember.randint(3, size=(2, 2)).shape) == (2, 2)
    assert tuple(ember.randint(low=1, high=3, size=(5,)).shape) == (5,)
    assert ember.randint(0, 5, (3,), dtype=ember.float32).dtype == ember.float32
    b = ember.randint(0, 2, (1000,), dtype=ember.bool)
    assert b.dtype == ember.bool and 300 < arr(b).sum() < 700
    z = ember.randint(0, 2 ** 40, (N,))
    assert abs(arr(z).mean() / 2 ** 40 - 0.5) < 0.005
    full = ember.randint(-2 ** 63, 2 ** 63 - 1, (1000,)).numpy()
    assert (full < 0).mean() > 0.4 and (full > 0).mean() > 0.4
    assert arr(ember.randint_like(ember.zeros(100), 5)).max() <= 4
    assert arr(ember.randint_like(ember.zeros(100), 3, 5)).min() >= 3


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but "
                                           "got from=5 >= to=2"):
        ember.randint(5, 2, (3,))
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        ember.randint(3, 3, (3,))
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.randint(3, (-1,))
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ember.randint(0, 300, (3,), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds"):
        ember.randint(-1, 3, (3,), dtype=ember.uint8)
    with pytest.raises(TypeError):
        ember.randint(0, 3.5, (3,))
    with pytest.raises(TypeError):
        ember.randint(3, (3.0,))


def test_random_():
    ember.manual_seed(4)
    x = ember.empty(N, dtype=ember.int64).random_(10)
    assert arr(x).min() == 0 and arr(x).max() == 9
    y = ember.empty(1000, dtype=ember.int64).random_(5, 8)
    assert set(np.unique(arr(y))) == {5, 6, 7}
    f = arr(ember.empty(N).random_())
    assert f.min() >= 0 and f.max() <= 2 ** 24 and f.mean() > 2 ** 22
    u8 = arr(ember.empty(N, dtype=ember.uint8).random_())
    assert u8.min() == 0 and u8.max() == 255
    b = arr(ember.empty(1000, dtype=ember.bool).random_())
    assert 300 < b.sum() < 700
    big = ember.empty(1000, dtype=ember.int64).random_().numpy()
    assert big.min() >= 0 and big.max() > 2 ** 60
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for int"):
        ember.empty(3, dtype=ember.int32).random_(0, 2 ** 32)
    with pytest.raises(TypeError):
        ember.empty(3).random_(0, 10.5)


# ---- randperm -----------------------------------------------------------------------

def test_randperm():
    ember.manual_seed(5)
    p = ember.randperm(1000)
    assert p.dtype == ember.int64 and sorted(arr(p).astype(int)) == list(range(1000))
    assert ember.randperm(0).numel() == 0 and arr(ember.randperm(1)).tolist() == [0]
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32
    counts = {}
    for _ in range(3000):
        k = tuple(arr(ember.randperm(3)).astype(int))
        counts[k] = counts.get(k, 0) + 1
    assert len(counts) == 6 and chi2_uniform(list(counts.values())) < 25
    # position of element 0 is uniform over a long permutation
    pos = [int(np.argmin(arr(ember.randperm(10)))) for _ in range(2000)]
    assert chi2_uniform(np.bincount(pos, minlength=10)) < 40
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.randperm(-1)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.randperm(300, dtype=ember.uint8)
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.randperm(3, dtype=ember.bool)


# ---- normal -------------------------------------------------------------------------

def test_normal_overloads():
    ember.manual_seed(6)
    x = arr(ember.normal(2.0, 3.0, (N,)))
    assert abs(x.mean() - 2) < 0.04 and abs(x.std() - 3) < 0.03
    m = ember.full((N,), -1.0, dtype=ember.float64)
    y = ember.normal(m, 0.5)
    assert y.dtype == ember.float64 and abs(arr(y).mean() + 1) < 0.01
    assert abs(arr(y).std() - 0.5) < 0.005
    s = ember.full((N,), 2.0)
    z = arr(ember.normal(1.0, s))
    assert abs(z.mean() - 1) < 0.03 and abs(z.std() - 2) < 0.02
    both = ember.normal(ember.zeros(3, 1), ember.ones(2))
    assert tuple(both.shape) == (3, 2)
    w = ember.normal(ember.tensor([0.0, 100.0]).reshape(2, 1).expand(2, N // 2),
                     ember.tensor([1.0, 0.0]).reshape(2, 1))
    w = arr(w)
    assert abs(w[0].mean()) < 0.02 and np.all(w[1] == 100.0)
    assert ember.normal(ember.zeros(3, dtype=ember.float64), ember.ones(3)).dtype == \
        ember.float64
    assert ember.normal(2, 3, (2,)).dtype == ember.float32
    h = ember.normal(ember.zeros(4, dtype=ember.float16), 1.0)
    assert h.dtype == ember.float16
    t = ember.empty(N)
    t.normal_(5.0, 0.1)
    assert abs(arr(t).mean() - 5) < 0.002


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="all elements of std >= 0.0"):
        ember.normal(ember.zeros(3), ember.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        ember.normal(ember.zeros(3), ember.ones(2))
    with pytest.raises(NotImplementedError, match="Long"):
        ember.normal(ember.zeros(3, dtype=ember.int64), 1.0)
    with pytest.raises(TypeError):
        ember.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        ember.empty(3).normal_(0, -1)


def test_normal_is_differentiable_in_mean_and_std():
    m = ember.zeros(4, requires_grad=True)
    s = ember.ones(4, requires_grad=True)
    ember.manual_seed(8)
    y = ember.normal(m, s)
    y.backward(ember.ones(4))
    np.testing.assert_allclose(arr(m.grad), 1.0)
    np.testing.assert_allclose(arr(s.grad), arr(y.detach()), rtol=1e-6)


# ---- bernoulli ----------------------------------------------------------------------

def test_bernoulli():
    ember.manual_seed(9)
    p = ember.full((N,), 0.3)
    b = ember.bernoulli(p)
    assert b.dtype == ember.float32 and set(np.unique(arr(b))) <= {0.0, 1.0}
    assert abs(arr(b).mean() - 0.3) < 0.006
    pv = ember.tensor([0.0, 1.0] * 500)
    assert np.array_equal(arr(ember.bernoulli(pv)), arr(pv))
    assert abs(arr(ember.bernoulli(ember.zeros(N), p=0.8)).mean() - 0.8) < 0.006
    i = ember.zeros(N, dtype=ember.int64).bernoulli_(0.25)
    assert i.dtype == ember.int64 and abs(arr(i).mean() - 0.25) < 0.006
    row = ember.tensor([0.1, 0.9])
    t = ember.empty(N // 2, 2).bernoulli_(row)
    np.testing.assert_allclose(arr(t).mean(0), [0.1, 0.9], atol=0.01)
    assert arr(ember.empty(1000).bernoulli_(0.0)).sum() == 0
    assert arr(ember.empty(1000, dtype=ember.bool).bernoulli_(1.0)).all()
    assert abs(arr(ember.full((N,), 0.7).bernoulli()).mean() - 0.7) < 0.006


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        ember.bernoulli(ember.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got "
                                           r"p=1.5"):
        ember.zeros(3).bernoulli_(1.5)
    with pytest.raises(NotImplementedError, match="Long"):
        ember.bernoulli(ember.tensor([0, 1]))


# ---- multinomial --------------------------------------------------------------------

def test_multinomial_with_replacement():
    ember.manual_seed(10)
    w = ember.tensor([1.0, 0.0, 3.0, 6.0])
    s = ember.multinomial(w, 100_000, replacement=True)
    assert s.dtype == ember.int64 and tuple(s.shape) == (100_000,)
    c = np.bincount(arr(s).astype(int), minlength=4)
    assert c[1] == 0
    np.testing.assert_allclose(c / c.sum(), [0.1, 0.0, 0.3, 0.6], atol=0.006)
    two = ember.multinomial(ember.tensor([[1.0, 0.0], [0.0, 1.0]]), 50, True)
    assert tuple(two.shape) == (2, 50)
    assert arr(two)[0].max() == 0 and arr(two)[1].min() == 1


def test_multinomial_without_replacement():
    ember.manual_seed(11)
    p = ember.rand(64, 20)
    s = arr(ember.multinomial(p, 20))
    for row in s:
        assert sorted(row.astype(int)) == list(range(20))
    z = arr(ember.multinomial(ember.tensor([0.5, 0.0, 0.5]), 2))
    assert sorted(z.astype(int).tolist()) == [0, 2]
    # the first draw follows the weights; the second excludes the first
    w = ember.tensor([[1.0, 2.0, 7.0]]).expand(20_000, 3).contiguous()
    d = arr(ember.multinomial(w, 2)).astype(int)
    first = np.bincount(d[:, 0], minlength=3) / len(d)
    np.testing.assert_allclose(first, [0.1, 0.2, 0.7], atol=0.015)
    assert np.all(d[:, 0] != d[:, 1])
    # P(second = 0) = P(1 first) * 1/8 + P(2 first) * 1/3
    sec0 = (d[:, 1] == 0).mean()
    assert abs(sec0 - (0.2 / 8 + 0.7 / 3)) < 0.015


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([0.5, -1.0]), 1)
    with pytest.raises(RuntimeError, match="inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([0.5, float("nan")]), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        ember.multinomial(ember.tensor([0.0, 0.0]), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        ember.multinomial(ember.tensor([0.5, 0.5]), 3)
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        ember.multinomial(ember.tensor([0.5, 0.0, 0.5]), 3)
    with pytest.raises(RuntimeError, match="n_sample <= 0"):
        ember.multinomial(ember.tensor([0.5, 0.5]), 0)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        ember.multinomial(ember.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.multinomial(ember.tensor([1, 2]), 1)


# ---- in-place samplers --------------------------------------------------------------

def test_uniform_and_other_inplace_samplers():
    ember.manual_seed(12)
    u = arr(ember.empty(N).uniform_(-2.0, 3.0))
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.03
    t = ember.zeros(3, 4).t()
    assert t.uniform_() is t and arr(t).min() > 0     # a non-contiguous view is filled
    e = arr(ember.empty(N, dtype=ember.float64).exponential_(2.0))
    assert e.min() > 0 and abs(e.mean() - 0.5) < 0.006 and abs(e.std() - 0.5) < 0.01
    g = arr(ember.empty(N).geometric_(0.25))
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.05 and abs((g == 1).mean() - 0.25) < 0.006
    ln = arr(ember.empty(N).log_normal_(1.0, 0.5))
    assert ln.min() > 0
    assert abs(np.log(ln).mean() - 1) < 0.005 and abs(np.log(ln).std() - 0.5) < 0.005
    c = arr(ember.empty(N, dtype=ember.float64).cauchy_(1.0, 2.0))
    assert abs(np.median(c) - 1) < 0.05
    assert abs(np.quantile(c, 0.75) - 3) < 0.1 and abs(np.quantile(c, 0.25) + 1) < 0.1
    x = ember.empty(5)
    v = x._version
    x.uniform_()
    assert x._version > v


def test_inplace_sampler_errors():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range"):
        ember.zeros(3).uniform_(2, 1)
    with pytest.raises(NotImplementedError, match="Long"):
        ember.zeros(3, dtype=ember.int64).uniform_()
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        ember.zeros(3).exponential_(0)
    with pytest.raises(RuntimeError, match="continuous probability distribution"):
        ember.zeros(3, dtype=ember.int64).exponential_()
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        ember.zeros(3).geometric_(1)
    with pytest.raises(RuntimeError, match="std > 0.0"):
        ember.zeros(3).log_normal_(1, 0)
    with pytest.raises(RuntimeError, match="sigma > 0.0"):
        ember.zeros(3).cauchy_(1, 0)
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.uniform_()


# ---- dropout --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16])
def test_dropout_kernel(dtype):
    ember.manual_seed(13)
    x = ember.rand(N, dtype=dtype) + 0.5
    out, mask = R.dropout(x, 0.3, True)
    assert mask.dtype == ember.bool and out.dtype == dtype
    m = arr(mask).astype(bool)
    assert abs(m.mean() - 0.7) < 0.006
    expect = np.where(m, arr(x) / 0.7, 0.0)
    np.testing.assert_allclose(arr(out), expect, rtol=1e-2 if dtype == ember.bfloat16 else 1e-6)
    same, ones = R.dropout(x, 0.3, False)
    assert same is x and arr(ones).all()
    z, zm = R.dropout(x, 1.0)
    assert not arr(z).any() and not arr(zm).any()
    k, km = R.dropout(x, 0.0)
    assert np.array_equal(arr(k), arr(x)) and arr(km).all()
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        R.dropout(x, 1.5)
    o2, m2 = ember.native_dropout(ember.ones(2, 3), 0.5, True)
    assert tuple(o2.shape) == (2, 3) and tuple(m2.shape) == (2, 3)


def test_dropout_backward_uses_the_mask():
    x = ember.ones(1000, requires_grad=True)
    out, mask = R.dropout(x, 0.5)
    out.backward(ember.ones(1000))
    np.testing.assert_allclose(arr(x.grad), arr(mask) * 2.0)


# ---- dispatch: Python modes and plugin devices ------------------------------------------

def test_python_mode_sees_random_ops():
    class Log(library.DispatchMode):
        def __init__(self):
            self.seen = []

        def __ember_dispatch__(self, name, func, args, kwargs):
            self.seen.append(name)
            return func(*args, **kwargs)

    with Log() as m:
        a = ember.rand(3)
        ember.randn(2, 2)
        a.uniform_()
        ember.randint(0, 5, (2,))
    assert m.seen[:4] == ["rand", "randn", "uniform_", "randint"]
    assert tuple(a.shape) == (3,)


def test_plugin_device_falls_back_to_cpu_sampling():
    try:
        library.register_backend("rngdev")
    except RuntimeError:
        pass
    store = {}

    def empty(shape, dtype, device):
        arr_ = np.empty(shape, {ember.float32: np.float32, ember.int64: np.int64}[dtype])
        return library.wrap_memory(arr_.__array_interface__["data"][0], shape, dtype, device, arr_)

    def to(t, device, dtype):
        if device.type == "cpu":
            return library.wrap_memory(t.data_ptr(), t.shape, t.dtype, "cpu", t).to(dtype).clone()
        out = empty(tuple(t.shape), dtype, device)
        library.wrap_memory(out.data_ptr(), out.shape, dtype, "cpu", out).copy_(t.to(dtype))
        store["moved"] = store.get("moved", 0) + 1
        return out

    library.register_kernel("empty", "rngdev", empty)
    library.register_kernel("to", "rngdev", to)
    ember.manual_seed(1)
    a = ember.rand(5, device="rngdev")
    ember.manual_seed(1)
    b = ember.rand(5)
    assert a.device.type == "rngdev" and store["moved"] >= 1
    assert np.array_equal(arr(a.to("cpu")), arr(b))
    p = ember.randperm(4, device="rngdev")
    assert p.device.type == "rngdev"
