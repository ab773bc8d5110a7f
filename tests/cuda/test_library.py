"""libember_cuda.so without a GPU: its exports, the host-side entry points
(random streams computed by the kernels' own per-block code, the caching
allocator's bookkeeping over a fake backing allocator) and why ember.cuda is
unavailable.  These run on any machine where the library was built."""

import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _dll

from .harness import BINARY, EM, INT_BINARY, UNARY, c_enums

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "ember", "lib", "libember_cuda.so")
built = pytest.mark.skipif(not os.path.isfile(LIB),
                           reason="ember/lib/libember_cuda.so was not built (no nvcc)")


def _cuda_build():
    """src_cuda/build.py as a module (its name would clash with PyPI's `build`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_ember_cuda_build",
                                                  os.path.join(ROOT, "src_cuda", "build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def lib():
    if not os.path.isfile(LIB):
        pytest.skip("ember/lib/libember_cuda.so was not built (no nvcc)")
    try:
        return _dll.cuda_library_host_only()
    except RuntimeError as e:
        pytest.skip(str(e))


# -- build and exports ------------------------------------------------------------

@built
def test_library_exports_exactly_the_declared_symbols():
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    cuda_build = _cuda_build()
    assert cuda_build.check(LIB) == []
    assert len(cuda_build.exported_symbols(LIB)) == len(_dll.CUDA_SYMBOLS)


def _c_type_code(decl, result=False):
    decl = decl.strip()
    if "[" in decl or "*" in decl or decl.split()[0] in ("emc_backing_alloc",
                                                           "emc_backing_free"):
        return "s" if result and "char" in decl else "p"
    base = decl.replace("const ", "").split()[0]
    return {"int": "i", "int64_t": "q", "uint64_t": "Q", "size_t": "z", "double": "d",
            "void": "v"}[base]


def test_python_prototypes_match_the_c_headers():
    """Every EMC_API prototype of src_cuda/include against ember._dll.CUDA_SYMBOLS:
    the same functions, argument counts and types (what ctypes passes)."""
    import glob
    import re

    protos = {}
    for h in glob.glob(os.path.join(ROOT, "src_cuda", "include", "*.h")):
        text = re.sub(r"/\*.*?\*/", "", open(h).read(), flags=re.S)
        for ret, name, args in re.findall(r"EMC_API\s+([\w\s]+?\**)\s*(emc_\w+)\((.*?)\);",
                                          text, flags=re.S):
            params = [a for a in args.split(",") if a.strip() and a.strip() != "void"]
            res = "p" if "*" in ret and "char" not in ret else _c_type_code(ret, result=True)
            protos[name] = (res, "".join(_c_type_code(a) for a in params))
    assert protos == _dll.CUDA_SYMBOLS


def test_arch_flags_default_and_ptx():
    cuda_build = _cuda_build()
    f = cuda_build.arch_flags("80;90")
    assert f == ["-gencode", "arch=compute_80,code=sm_80", "-gencode",
                 "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"]
    assert cuda_build.arch_flags("sm_86")[-1] == "arch=compute_86,code=compute_86"
    with pytest.raises(ValueError, match="EMBER_CUDA_ARCH"):
        cuda_build.arch_flags("ampere")


def test_library_identity_and_errors(lib):
    assert lib.emc_abi_version() == 1
    assert lib.emc_built_cuda_version() >= 12000
    assert lib.emc_error_string(10001) == b"no kernel for this dtype"
    assert lib.emc_error_string(10004) == b"index out of range"
    assert lib.emc_error_string(0) == b"no error"


def test_import_ember_loads_no_cuda_library():
    code = ("import sys, ember; m = open('/proc/self/maps').read(); "
            "print('libember_cuda' in m, 'libcudart' in m, 'ctypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    assert out == ["False", "False", "False"]


# -- the random streams: the kernels' per-block code equals the CPU generator ------

NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
      "bfloat16": np.uint16, "int64": np.int64, "int32": np.int32, "int16": np.int16,
      "int8": np.int8, "uint8": np.uint8, "bool": np.uint8}


def _cpu_bits(t, name):
    if name == "bfloat16":
        return t.view(ember.int16).numpy().view(np.uint16)
    return t.numpy().view(NP[name]) if name != "bool" else t.numpy().view(np.uint8)


def _host(lib, kind, name, n, seed, off, a, b):
    out = np.zeros(n, dtype=NP[name])
    assert lib.emc_rand_float_host(kind, EM[name], out.ctypes.data, n, seed, off, a, b) == 0
    return out


# (kind, ember sampler, a, b): kinds are ember_random.h's EM_RD_*
SAMPLERS = [
    (0, lambda t, g: t.uniform_(-2.0, 3.0, generator=g), -2.0, 3.0),
    (1, lambda t, g: t.normal_(0.5, 2.0, generator=g), 0.5, 2.0),
    (3, lambda t, g: t.exponential_(1.5, generator=g), 1.5, 0.0),
    (5, lambda t, g: t.geometric_(0.3, generator=g), 0.3, 0.0),
]


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("kind,sample,a,b", SAMPLERS, ids=["uniform", "normal", "exponential",
                                                            "geometric"])
@pytest.mark.parametrize("n", [1, 63, 1000])
def test_random_streams_bitwise_equal_cpu(lib, name, kind, sample, a, b, n):
    g = ember.Generator().manual_seed(1234)
    g.set_offset(7)
    t = ember.empty(n, dtype=getattr(ember, name))
    sample(t, g)
    host = _host(lib, kind, name, n, 1234, 7, a, b)
    np.testing.assert_array_equal(_cpu_bits(t, name), host.view(_cpu_bits(t, name).dtype))


@pytest.mark.parametrize("kind,sample,a,b", [
    (2, lambda t, g: t.log_normal_(0.1, 0.5, generator=g), 0.1, 0.5),
    (4, lambda t, g: t.cauchy_(0.0, 1.0, generator=g), 0.0, 1.0)], ids=["lognormal", "cauchy"])
def test_random_streams_with_libm_tail_equal_cpu(lib, kind, sample, a, b):
    # expf / tanf come from libm here and CUDA's libm on the device: equal on the host
    g = ember.Generator().manual_seed(99)
    t = ember.empty(500, dtype=ember.float32)
    sample(t, g)
    np.testing.assert_array_equal(t.numpy(), _host(lib, kind, "float32", 500, 99, 0, a, b))


@pytest.mark.parametrize("name,lo,hi", [
    ("int64", 0, 10), ("int64", -5, 1000), ("int64", -2 ** 40, 2 ** 41), ("int32", -7, 70000),
    ("int16", 0, 300), ("uint8", 3, 200), ("float32", -5, 1000), ("float64", 0, 2 ** 40)])
def test_randint_streams_equal_cpu(lib, name, lo, hi):
    g = ember.Generator().manual_seed(5)
    t = ember.randint(lo, hi, (333,), generator=g, dtype=getattr(ember, name))
    out = np.zeros(333, dtype=NP[name])
    assert lib.emc_rand_int_host(EM[name], out.ctypes.data, 333, 5, 0, lo, hi - lo) == 0
    np.testing.assert_array_equal(t.numpy(), out)


def test_random_host_rejects_bad_kind(lib):
    out = np.zeros(4, dtype=np.float32)
    assert lib.emc_rand_float_host(42, EM["float32"], out.ctypes.data, 4, 0, 0, 0.0, 1.0) == 10002


@pytest.mark.parametrize("n", [0, 1, 2, 17, 5000])
@pytest.mark.parametrize("offset", [0, 12])
def test_randperm_host_equals_cpu(lib, n, offset):
    g = ember.Generator().manual_seed(21)
    g.set_offset(offset)
    ref = ember.randperm(n, generator=g).numpy()
    out = np.zeros(max(n, 1), np.int64)
    assert lib.emc_randperm_host(out.ctypes.data, n, 21, offset) == 0
    np.testing.assert_array_equal(out[:n], ref)


@pytest.mark.parametrize("replacement,k", [(True, 1), (True, 300), (False, 1), (False, 30)])
@pytest.mark.parametrize("rows", [1, 4])
def test_multinomial_host_equals_cpu(lib, rows, replacement, k):
    p = np.random.default_rng(rows).uniform(0, 1, (rows, 50))
    p[:, ::4] = 0
    ref = ember.multinomial(ember.tensor(p if rows > 1 else p[0]), k, replacement,
                            generator=ember.Generator().manual_seed(3)).numpy().reshape(rows, k)
    out = np.zeros((rows, k), np.int64)
    status = ctypes.c_int(-1)
    assert lib.emc_multinomial_host(p.ctypes.data, rows, 50, k, int(replacement),
                                    out.ctypes.data, 3, 0, ctypes.byref(status)) == 0
    np.testing.assert_array_equal(out, ref)
    assert status.value == 0


def test_multinomial_host_status_codes(lib):
    out = np.zeros((2, 2), np.int64)
    status = ctypes.c_int(-1)
    for row, code in (([0.5, -1.0, 0.2], 1), ([0.0, 0.0, 0.0], 2), ([0.0, 1.0, 0.0], 3)):
        p = np.array([[0.2, 0.3, 0.5], row])
        assert lib.emc_multinomial_host(p.ctypes.data, 2, 3, 2, 0, out.ctypes.data, 1, 0,
                                        ctypes.byref(status)) == 0
        assert status.value == code
        with pytest.raises(RuntimeError):
            ember.multinomial(ember.tensor(p), 2, False)


# -- the elementwise kernels' element functions, run on the host ----------------------

EW = c_enums("ember_ew.h")


def _ew_host(lib, family, op, name, a, b=None, aux=(0.0, 0.0, 0.0)):
    out = np.zeros(a.shape, dtype=np.uint8 if family in (2, 3) else a.dtype)
    prm = (ctypes.c_double * 3)(*aux)
    rc = lib.emc_ew_host(family, EW[op], EM[name], out.ctypes.data, a.ctypes.data,
                         None if b is None else b.ctypes.data, a.size,
                         ctypes.cast(prm, ctypes.c_void_p))
    assert rc == 0, lib.emc_last_error()
    return out


def _vals(name, n=2000, seed=0, lo=-4.0, hi=4.0):
    rng = np.random.default_rng(seed)
    if name.startswith("float"):
        return rng.uniform(lo, hi, n).astype(name)
    return rng.integers(-60, 60, n).astype(name)


@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_element_functions_match_cpu(lib, op, name):
    x = _vals(name) * (0.24 if op in ("EW_ASIN", "EW_ACOS", "EW_ATANH") else 1)
    if op in ("EW_LOG", "EW_LOG2", "EW_LOG10", "EW_SQRT", "EW_RSQRT", "EW_LGAMMA"):
        x = np.abs(x) + np.asarray(0.01, x.dtype)
    ref = UNARY[op](ember.tensor(x)).numpy()
    got = _ew_host(lib, 0, op, name, x)
    if name == "float32":   # the shared formulas: the same code, the same bits
        np.testing.assert_allclose(got, ref, rtol=2e-7, atol=1e-30)
    else:
        # float64 gelu: the device form is 0.5 x erfc(-x/sqrt2) on the rounded argument
        # (up to about x^2 ulps off), the CPU's x Phi(x) is within 4 ulps
        np.testing.assert_allclose(got, ref, rtol=1e-14 if op == "EW_GELU" else 1e-15,
                                   atol=1e-300)


@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_element_functions_match_cpu(lib, op, name):
    a, b = _vals(name), _vals(name, seed=1) + np.asarray(0.25, name)
    if op in ("EW_POW", "EW_XLOGY"):
        a, b = np.abs(a) + np.asarray(0.1, name), np.abs(b)
    ref = BINARY[op](ember.tensor(a), ember.tensor(b)).numpy()
    np.testing.assert_allclose(_ew_host(lib, 1, op, name, a, b), ref, rtol=2e-7 if
                               name == "float32" else 1e-15)


@pytest.mark.parametrize("name", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_integer_element_functions_match_cpu(lib, op, name):
    a, b = _vals(name), _vals(name, seed=2)
    if name == "uint8":
        a, b = np.abs(a.astype(np.int64)).astype(name), np.abs(b.astype(np.int64)).astype(name)
    b[b == 0] = 3
    ref = INT_BINARY[op](ember.tensor(a), ember.tensor(b)).numpy()
    np.testing.assert_array_equal(_ew_host(lib, 1, op, name, a, b), ref)


@pytest.mark.parametrize("op,fn,aux", [
    ("EW_SOFTPLUS", lambda t: F.softplus(t, beta=2.0, threshold=5.0), (2.0, 5.0, 0.0)),
    ("EW_LEAKY_RELU", lambda t: F.leaky_relu(t, 0.1), (0.1, 0.0, 0.0)),
    ("EW_ELU", lambda t: F.elu(t, 0.7), (0.7, 1.0, 1.0)),
    ("EW_HARDSIGMOID", F.hardsigmoid, (0.0, 0.0, 0.0)),
    ("EW_HARDSWISH", F.hardswish, (0.0, 0.0, 0.0)),
    ("EW_LOGSIGMOID", F.logsigmoid, (0.0, 0.0, 0.0)),
    ("EW_GELU_TANH", lambda t: F.gelu(t, approximate="tanh"), (0.0, 0.0, 0.0)),
    ("EW_CLAMP", lambda t: ember.clamp(t, -1.0, 2.0), (-1.0, 2.0, 3.0))])
def test_parametric_unary_element_functions_match_cpu(lib, op, fn, aux):
    x = _vals("float32")
    np.testing.assert_allclose(_ew_host(lib, 0, op, "float32", x, aux=aux),
                               fn(ember.tensor(x)).numpy(), rtol=2e-7)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_nan_to_num_element_function_matches_cpu(lib, name):
    x = _vals(name)
    x[:5] = [np.nan, np.inf, -np.inf, -0.0, np.nan]
    got = _ew_host(lib, 0, "EW_NAN_TO_NUM", name, x, aux=(1.5, 2.5, -3.5))
    want = ember.nan_to_num(ember.tensor(x), 1.5, 2.5, -3.5).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "int16", "uint8"])
def test_compare_and_predicate_element_functions(lib, name):
    a, b = _vals(name), _vals(name, seed=3)
    if name.startswith("float"):
        a[::5] = np.nan
        a[1::7] = np.inf
    b[::3] = a[::3]
    ta, tb = ember.tensor(a), ember.tensor(b)
    for op, fn in (("EW_EQ", ember.eq), ("EW_NE", ember.ne), ("EW_LT", ember.lt),
                   ("EW_LE", ember.le), ("EW_GT", ember.gt), ("EW_GE", ember.ge),
                   ("EW_LAND", ember.logical_and), ("EW_LOR", ember.logical_or),
                   ("EW_LXOR", ember.logical_xor)):
        np.testing.assert_array_equal(_ew_host(lib, 2, op, name, a, b).astype(bool),
                                      fn(ta, tb).numpy(), err_msg=op)
    for op, fn in (("EW_ISNAN", ember.isnan), ("EW_ISINF", ember.isinf),
                   ("EW_ISFINITE", ember.isfinite), ("EW_LNOT", ember.logical_not),
                   ("EW_SIGNBIT", ember.signbit)):
        np.testing.assert_array_equal(_ew_host(lib, 3, op, name, a).astype(bool),
                                      fn(ta).numpy(), err_msg=op)


def test_element_functions_reject_unsupported_pairs(lib):
    x = np.zeros(4, np.int32)
    out = np.zeros(4, np.int32)
    assert lib.emc_ew_host(0, EW["EW_EXP"], EM["int32"], out.ctypes.data, x.ctypes.data, None,
                           4, None) == 10001


# -- the caching allocator's bookkeeping over a fake backing allocator ---------------

ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
MiB = 1 << 20
ST = ["allocated", "max_allocated", "reserved", "max_reserved", "segments", "blocks", "allocs",
      "cache_hits"]


class FakeDevice:
    """Hands out fake, 2 MiB-aligned addresses up to `limit` bytes in use."""

    def __init__(self, limit=1 << 40):
        self.limit, self.used, self.next = limit, 0, 1 << 32
        self.live, self.freed = {}, []
        self.alloc_cb = ALLOC(self._alloc)
        self.free_cb = FREE(self._free)

    def _alloc(self, n, ctx):
        if self.used + n > self.limit:
            return None
        addr = self.next
        self.next += (n + 2 * MiB - 1) // (2 * MiB) * (2 * MiB) + 2 * MiB
        self.live[addr] = n
        self.used += n
        return addr

    def _free(self, p, n, ctx):
        assert self.live.pop(p) == n
        self.used -= n
        self.freed.append(n)


class Pool:
    def __init__(self, lib, dev):
        self.lib, self.dev = lib, dev
        self.p = lib.emc_pool_create(ctypes.cast(dev.alloc_cb, ctypes.c_void_p),
                                     ctypes.cast(dev.free_cb, ctypes.c_void_p), None)
        assert self.p

    def malloc(self, n, stream=0):
        out = ctypes.c_void_p()
        rc = self.lib.emc_pool_malloc(self.p, n, stream, ctypes.byref(out))
        return rc, out.value

    def free(self, ptr):
        return self.lib.emc_pool_free(self.p, ptr)

    def size(self, ptr):
        return self.lib.emc_pool_block_size(self.p, ptr)

    def stats(self):
        a = (ctypes.c_int64 * 8)()
        self.lib.emc_pool_stats(self.p, a)
        return dict(zip(ST, a))

    def close(self):
        self.lib.emc_pool_destroy(self.p)


def _compiled_pool_lib(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build src_cuda/pool.c")
    out = tmp_path_factory.mktemp("pool") / "libpool.so"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
                    "-I" + os.path.join(ROOT, "src_cuda", "include"),
                    "-I" + os.path.join(ROOT, "src_c", "include"),
                    os.path.join(ROOT, "src_cuda", "pool.c"), "-o", str(out), "-lpthread"],
                   check=True)
    h = ctypes.CDLL(str(out))
    for name, (res, args) in _dll.CUDA_SYMBOLS.items():
        if name.startswith("emc_pool_"):
            fn = getattr(h, name)
            codes = {"i": ctypes.c_int, "Q": ctypes.c_uint64, "z": ctypes.c_size_t,
                     "p": ctypes.c_void_p, "v": None}
            fn.restype = codes[res]
            fn.argtypes = [codes[c] for c in args]
    return h


@pytest.fixture(params=["libember_cuda", "pool.c"])
def pool_lib(request, tmp_path_factory):
    """The pool from the built library, and src_cuda/pool.c compiled by the system
    compiler (so the bookkeeping is tested where nvcc is missing too)."""
    if request.param == "libember_cuda":
        return request.getfixturevalue("lib")
    return _compiled_pool_lib(tmp_path_factory)


@pytest.fixture
def pool(pool_lib):
    dev = FakeDevice()
    p = Pool(pool_lib, dev)
    yield p
    p.close()
    assert dev.live == {}          # destroy gives every segment back


def test_pool_small_sizes_round_and_share_a_segment(pool):
    rc, a = pool.malloc(1)
    assert rc == 0 and pool.size(a) == 512
    rc, b = pool.malloc(513)
    assert rc == 0 and pool.size(b) == 1024 and b == a + 512
    st = pool.stats()
    assert st["allocated"] == 1536 and st["reserved"] == 2 * MiB and st["segments"] == 1
    assert pool.malloc(0) == (0, None)


def test_pool_reuses_freed_blocks_on_the_same_stream_only(pool):
    _, a = pool.malloc(4096, stream=1)
    assert pool.free(a) == 0
    _, b = pool.malloc(4096, stream=1)
    assert b == a and pool.stats()["cache_hits"] >= 1
    _, c = pool.malloc(4096, stream=2)          # another stream: another segment
    assert c != a and pool.stats()["segments"] == 2


def test_pool_splits_and_merges_neighbours(pool):
    _, a = pool.malloc(600 * 1024)
    _, b = pool.malloc(600 * 1024)
    _, c = pool.malloc(600 * 1024)
    assert b == a + 600 * 1024 and c == b + 600 * 1024
    assert pool.stats()["blocks"] == 4            # three blocks and the free tail
    pool.free(a)
    pool.free(b)                                  # merges with a into one 1200 KiB hole
    _, d = pool.malloc(MiB)
    assert d == a and pool.stats()["segments"] == 1
    pool.free(c)
    pool.free(d)
    assert pool.stats()["blocks"] == 1 and pool.stats()["allocated"] == 0


def test_pool_large_blocks_split_only_when_the_rest_is_big(pool):
    _, a = pool.malloc(5 * MiB)
    st = pool.stats()
    assert st["reserved"] == 20 * MiB and pool.size(a) == 5 * MiB
    _, b = pool.malloc(5 * MiB)
    assert b == a + 5 * MiB and pool.stats()["reserved"] == 20 * MiB
    _, c = pool.malloc(9 * MiB + 512 * 1024)      # leaves 512 KiB: not split off
    assert c == b + 5 * MiB and pool.size(c) == 10 * MiB
    _, d = pool.malloc(30 * MiB)                  # >= 10 MiB: its own 2 MiB-rounded segment
    assert pool.stats()["reserved"] == 50 * MiB and pool.size(d) == 30 * MiB


def test_pool_empty_cache_and_peak_stats(pool):
    _, a = pool.malloc(3 * MiB)
    _, b = pool.malloc(100)
    pool.free(a)
    pool.free(b)
    st = pool.stats()
    assert st["allocated"] == 0 and st["max_allocated"] == 3 * MiB + 512
    assert pool.lib.emc_pool_empty_cache(pool.p) == 2
    assert pool.stats()["reserved"] == 0 and sorted(pool.dev.freed) == [2 * MiB, 20 * MiB]
    pool.lib.emc_pool_reset_peak(pool.p)
    assert pool.stats()["max_allocated"] == 0 and pool.stats()["max_reserved"] == 0


def test_pool_releases_cache_and_retries_when_out_of_memory(pool_lib):
    dev = FakeDevice(limit=24 * MiB)
    p = Pool(pool_lib, dev)
    try:
        _, a = p.malloc(5 * MiB)                  # a 20 MiB segment
        p.free(a)                                 # cached
        # another stream cannot reuse it: a new 12 MiB segment, OOM, cache released, retried
        rc, b = p.malloc(12 * MiB, stream=1)
        assert rc == 0 and b is not None and dev.freed == [20 * MiB]
        assert p.malloc(20 * MiB)[0] == 10005      # EMC_E_NOMEM
    finally:
        p.close()


def test_pool_rejects_unknown_and_double_frees(pool):
    _, a = pool.malloc(1000)
    assert pool.free(a + 8) == 10003              # EMC_E_ARG
    assert pool.free(a) == 0
    assert pool.free(a) == 10003
    assert pool.free(None) == 0


# -- why ember.cuda is unavailable ------------------------------------------------------

class _Fn:
    def __init__(self, fn):
        self.fn = fn
        self.restype = None

    def __call__(self, *a):
        return self.fn(*a)


class FakeRuntime:
    def __init__(self, runtime=13000, driver=13000, count=1, rc=0):
        self.v = (runtime, driver, count, rc)
        self.cudaRuntimeGetVersion = _Fn(lambda p: self._set(p, self.v[0]))
        self.cudaDriverGetVersion = _Fn(lambda p: self._set(p, self.v[1]))
        self.cudaGetDeviceCount = _Fn(lambda p: self._set(p, self.v[2]) or self.v[3])
        self.cudaGetErrorString = _Fn(lambda rc: b"no CUDA-capable device is detected")

    @staticmethod
    def _set(p, v):
        p._obj.value = v
        return 0


class FakeLib:
    def emc_built_cuda_version(self):
        return 13000


def _probe(monkeypatch, tmp_path, rt):
    (tmp_path / "libember_cuda.so").write_bytes(b"")
    monkeypatch.setattr(_dll, "_dlopen", lambda c, m: (rt, "libcudart.so.13", []) if any(
        "cudart" in x for x in c) else (object(), "libcuda.so.1", []))
    monkeypatch.setattr(_dll, "_load_library", lambda path, mode: FakeLib())
    return _dll._probe_cuda({}, lib_dir=str(tmp_path))


def test_reason_runtime_too_old(monkeypatch, tmp_path):
    rt = FakeRuntime(runtime=12080)
    st = _probe(monkeypatch, tmp_path, rt)
    assert not st.available
    # a probe with stand-in libraries leaves the process's own handles alone
    assert all(h is not rt for h in _dll._handles.values())
    assert "runtime is too old" in st.reason and "12.8" in st.reason and "13.0" in st.reason


def test_reason_driver_too_old(monkeypatch, tmp_path):
    st = _probe(monkeypatch, tmp_path, FakeRuntime(runtime=13000, driver=12020))
    assert "driver is too old" in st.reason and "12.2" in st.reason


def test_reason_no_device(monkeypatch, tmp_path):
    st = _probe(monkeypatch, tmp_path, FakeRuntime(count=0, rc=100))
    assert st.available is False and "no usable CUDA device" in st.reason
    assert "no CUDA-capable device" in st.reason and st.device_count == 0


@built
def test_reason_on_this_machine_names_the_missing_piece():
    st = _dll._probe_cuda(os.environ)
    if st.available:
        pytest.skip("a usable GPU is present")
    assert st.library == LIB and st.runtime and "libcudart" in st.runtime
    assert ember.cuda.unavailable_reason() == _dll.cuda_status().reason


def test_python_m_ember_reports_library_and_runtime():
    out = subprocess.run([sys.executable, "-m", "ember"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert "CUDA:" in out
    if os.path.isfile(LIB) and not _dll.cuda_status().available:
        assert "library:" in out and LIB in out and "runtime" in out
