"""Malformed arguments to every public op family: each call returns a result or raises
one of PyTorch's error types (TypeError, ValueError, IndexError, RuntimeError,
NotImplementedError) — never crashes the interpreter."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F

OK_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)
# factories and huge-memory functions are fed sizes separately below
SKIP = {
    "set_num_threads",
    "set_default_dtype",
    "set_printoptions",
    "manual_seed",
    "seed",
    "set_rng_state",
    "set_default_device",
    "use_deterministic_algorithms",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_warn_always",
    "compile",
    "load",
    "save",
    "from_dlpack",
}


def _bad_values():
    nc = ember.tensor(np.arange(12.0, dtype=np.float32)).view(3, 4).t()
    return [
        None,
        "x",
        object(),
        [],
        [[1, 2], [3]],
        ember.ones(0),
        ember.ones(2, 0, 3),
        nc,
        ember.tensor(float("nan")),
        ember.tensor([1, 2, 3]),
        ember.ones(3, dtype=ember.bool),
        -1,
        2**62,
        float("nan"),
        1.5,
        ember.ones(1, dtype=ember.float16),
    ]


def _public_ops():
    out = []
    for name in sorted(ember.__all__):
        if name in SKIP or name.startswith("_"):
            continue
        fn = getattr(ember, name, None)
        if (
            callable(fn)
            and not isinstance(fn, type)
            and type(fn).__name__
            in ("cython_function_or_method", "function", "builtin_function_or_method")
        ):
            mod = getattr(fn, "__module__", "") or ""
            if mod.startswith("ember._C") or mod.startswith("ember._tensor"):
                out.append(name)
    return out


OPS = _public_ops()


def _call(fn, *args):
    try:
        r = fn(*args)
    except OK_ERRORS:
        return None
    return r


@pytest.mark.parametrize("name", OPS)
def test_op_family_rejects_or_handles_bad_input(name):
    fn = getattr(ember, name)
    vals = _bad_values()
    good = ember.ones(3, 4)
    for v in vals:
        _call(fn, v)
        _call(fn, good, v)
        _call(fn, v, good)
    _call(fn)
    _call(fn, good, good, good)


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "rand", "randn", "full"])
def test_factories_with_bad_sizes(factory):
    fn = getattr(ember, factory, None)
    if fn is None:
        pytest.skip(f"{factory} not available")
    args = (lambda s: (s, 1.0)) if factory == "full" else (lambda s: (s,))
    for size in [(-1,), (2, -3), (2**62,), (2**40, 2**40), ("a",), (1.5,), (None,)]:
        with pytest.raises(OK_ERRORS):
            fn(*args(size))
    assert fn(*args((0, 5))).shape == (0, 5)


def test_methods_on_odd_tensors_do_not_crash():
    odd = [
        ember.ones(0),
        ember.ones(3, 0),
        ember.tensor(5.0),
        ember.tensor(np.arange(24.0).reshape(2, 3, 4)).permute(2, 0, 1)[::2],
        ember.tensor([math.inf, -math.inf, math.nan]),
    ]
    names = [n for n in dir(ember.Tensor) if not n.startswith("_") and not n.endswith("_")]
    skip = {
        "backward",
        "register_hook",
        "retain_grad",
        "register_post_accumulate_grad_hook",
        "numpy",
        "cuda",
        "new_empty",
        "pin_memory",
        "share_memory_",
        "storage",
    }
    for t in odd:
        for n in names:
            if n in skip:
                continue
            try:
                attr = getattr(t, n, None)
            except OK_ERRORS:  # properties such as mT reject some shapes
                continue
            if callable(attr):
                _call(attr)
                _call(attr, 0)
                _call(attr, -1)
                _call(attr, 5)


def test_index_errors_name_index_and_size():
    t = ember.ones(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[3]
    with pytest.raises(IndexError):
        t[:, 10]
    with pytest.raises(IndexError):
        t[ember.tensor([0, 7])]
    with pytest.raises(IndexError):
        t[0, 0, 0]


def test_dtype_and_argument_errors_name_the_op():
    with pytest.raises(TypeError, match="add"):
        ember.add(ember.ones(2), "a")
    with pytest.raises(TypeError, match="dtype"):
        ember.zeros(2, dtype="float128")
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.mul(ember.ones(2, 3), ember.ones(3, 2))


# ---------------------------------------------------------------------------
# Generated inputs that crashed the core before: ranks 0-40 from arrays, DLPack and
# nested lists; rank-growing ops at the maximum rank; cyclic and very deep
# containers; sizes near 2**62 / 2**63 and negative sizes in every shape-taking op.
# Each family runs in a fresh interpreter: a crash must show as a failed test
# (naming the case), not as a dead test run.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_DIMS = 16

_RUNNER = r"""
import json, sys
OK_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)
out = []
for name, fn in CASES:
    print("CASE", name, file=sys.stderr, flush=True)
    try:
        r = fn()
        res = "OK " + str(list(getattr(r, "shape", ())))
    except OK_ERRORS as e:
        res = type(e).__name__
    except BaseException as e:  # an escaped OverflowError, RecursionError, MemoryError...
        res = "BAD " + type(e).__name__ + ": " + str(e)[:200]
    out.append([name, res])
print(json.dumps(out))
"""


def _run_cases(body):
    """Run `body` (which defines CASES, a list of (name, thunk)) in a fresh
    interpreter; return {name: 'OK [shape]' or the exception's type name}."""
    code = "import ember\nimport numpy as np\nimport ember.nn.functional as F\n" + body + _RUNNER
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    last = [ln for ln in r.stderr.splitlines() if ln.startswith("CASE ")][-1:]
    assert r.returncode >= 0, f"killed by signal {-r.returncode} at {last}"
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(json.loads(r.stdout.splitlines()[-1]))


_RANK_CASES = r"""
CASES = []
for nd in range(41):
    shape = (1,) * nd
    a = np.ones(shape, np.float32)
    nested = 1.0
    for _ in range(nd):
        nested = [nested]
    CASES += [
        (f"from_numpy/{nd}", lambda a=a: ember.from_numpy(a)),
        (f"tensor(ndarray)/{nd}", lambda a=a: ember.tensor(a)),
        (f"as_tensor(ndarray)/{nd}", lambda a=a: ember.as_tensor(a)),
        (f"from_dlpack(ndarray)/{nd}", lambda a=a: ember.from_dlpack(a)),
        (f"from_dlpack(f64)/{nd}", lambda s=shape: ember.from_dlpack(np.zeros(s))),
        (f"tensor(list)/{nd}", lambda n=nested: ember.tensor(n)),
        (f"as_tensor(list)/{nd}", lambda n=nested: ember.as_tensor(n)),
        (f"zeros/{nd}", lambda s=shape: ember.zeros(s)),
        (f"full/{nd}", lambda s=shape: ember.full(s, 2.0)),
        (f"randn/{nd}", lambda s=shape: ember.randn(s)),
        (f"empty_strided/{nd}", lambda s=shape: ember.empty_strided(s, s)),
        (f"new_zeros/{nd}", lambda s=shape: ember.ones(1).new_zeros(s)),
        (f"view/{nd}", lambda s=shape: ember.ones(1).view(s)),
        (f"reshape/{nd}", lambda s=shape: ember.ones(1).reshape(s)),
        (f"expand/{nd}", lambda s=shape: ember.ones(()).expand(s)),
        (f"as_strided/{nd}", lambda s=shape: ember.ones(1).as_strided(s, s)),
        (f"index[None]/{nd}", lambda nd=nd: ember.ones(())[(None,) * nd]),
        (f"unsqueeze/{nd}", lambda s=shape: ember.ones(s[1:]).unsqueeze(0) if s else
            ember.ones(1).squeeze(0)),
    ]
"""


def test_ranks_0_to_40_from_arrays_lists_and_shapes():
    res = _run_cases(_RANK_CASES)
    assert len(res) == 41 * 18
    for name, got in res.items():
        op, nd = name.rsplit("/", 1)
        nd = int(nd)
        if op.endswith("(list)") and nd > MAX_DIMS:
            # torch's type for a too-deep nested sequence ("too many dimensions 'list'")
            assert got == "ValueError", (name, got)
        elif nd > MAX_DIMS:
            assert got == "RuntimeError", (name, got)
        else:
            assert got == "OK " + str([1] * nd), (name, got)


def test_too_many_dims_message_names_the_limit():
    with pytest.raises(RuntimeError, match=f"up to {MAX_DIMS} dims.*got 17"):
        ember.zeros((1,) * 17)
    with pytest.raises(RuntimeError, match="from_numpy.*got 17"):
        ember.from_numpy(np.zeros((1,) * 17, np.float32))
    with pytest.raises(ValueError, match="too many dimensions 'list'"):
        ember.tensor([[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]])
    # the largest rank still round-trips its values
    a = np.arange(2.0**MAX_DIMS).reshape((2,) * MAX_DIMS)
    np.testing.assert_array_equal(ember.tensor(a).numpy(), a)
    np.testing.assert_array_equal(ember.tensor(a.tolist()).numpy(), a)
    np.testing.assert_array_equal(ember.from_dlpack(a).numpy(), a)


_GROW_CASES = r"""
m = ember.ones((1,) * 16)
i16 = ember.zeros((1,) * 16, dtype=ember.int64)
CASES = [
    ("unsqueeze(0)", lambda: m.unsqueeze(0)),
    ("unsqueeze(-1)", lambda: m.unsqueeze(-1)),
    ("stack", lambda: ember.stack([m, m])),
    ("stack(dim=-1)", lambda: ember.stack([m, m], dim=-1)),
    ("m[None]", lambda: m[None]),
    ("m[..., None]", lambda: m[..., None]),
    ("m[int index tensor]", lambda: m[i16]),
    ("m[:, int index tensor]", lambda: m[:, i16[0]]),
    ("unfold", lambda: m.unfold(0, 1, 1)),
    ("diag_embed", lambda: ember.diag_embed(m)),
    ("unflatten", lambda: m.unflatten(0, (1, 1))),
    ("expand 17", lambda: m.expand((1,) * 17)),
    ("view 17", lambda: m.view((1,) * 17)),
    ("reshape 17", lambda: m.reshape((1,) * 17)),
    ("repeat 17", lambda: m.repeat(*(1,) * 17)),
    ("tile 17", lambda: m.tile((1,) * 17)),
    ("einsum adds a dim", lambda: ember.einsum("abcdefghijklmnop,q->abcdefghijklmnopq", m,
                                               ember.ones(1))),
    ("meshgrid 17", lambda: ember.meshgrid(*[ember.ones(1)] * 17)),
    ("broadcast_tensors 17", lambda: ember.broadcast_tensors(m, ember.ones((1,) * 17))),
    ("add broadcasting to 17", lambda: m + ember.ones((1,) * 17)),
    ("one_hot", lambda: F.one_hot(i16, 1)),
    ("tensor([16-d tensor])", lambda: ember.tensor([m])),
    ("tensor([16-d list])", lambda: ember.tensor([m.tolist()])),
    ("from_dlpack(17-d capsule)", lambda: ember.from_dlpack(np.zeros((1,) * 17))),
]
"""

_GROW_OK = r"""
CASES = [
    ("m[None, 0]", lambda: m[None, 0]),
    ("matmul 1-d @ 16-d", lambda: ember.matmul(ember.ones(1), m)),
    ("matmul 16-d @ 16-d", lambda: ember.matmul(m, m)),
    ("where", lambda: ember.where(m.bool(), m, m)),
    ("sum keepdim", lambda: m.sum(0, keepdim=True)),
    ("cat", lambda: ember.cat([m, m])),
    ("movedim", lambda: m.movedim(0, 15)),
    ("gather", lambda: m.gather(0, i16)),
    ("scatter", lambda: m.scatter(0, i16, 1.0)),
    ("cumsum", lambda: m.cumsum(0)),
    ("flip", lambda: m.flip(0)),
    ("linear", lambda: F.linear(m, ember.ones(3, 1))),
    ("pad", lambda: F.pad(m, (1, 1))),
    ("stack of 15-d", lambda: ember.stack([ember.ones((1,) * 15)] * 2, dim=15)),
    ("from_dlpack(16-d tensor)", lambda: ember.from_dlpack(m)),
]
"""


def test_rank_growing_ops_at_the_maximum_rank():
    res = _run_cases(_GROW_CASES)
    assert len(res) == 24
    for name, got in res.items():
        want = "ValueError" if name == "tensor([16-d list])" else "RuntimeError"
        assert got == want, (name, got)
    res = _run_cases(_GROW_CASES.split("CASES = [")[0] + _GROW_OK)
    want = {"m[None, 0]": 16, "matmul 1-d @ 16-d": 15, "matmul 16-d @ 16-d": 16,
            "linear": 16, "from_dlpack(16-d tensor)": 16}
    assert len(res) == 15
    for name, got in res.items():
        assert got.startswith("OK "), (name, got)
        assert len(json.loads(got[3:])) == want.get(name, 16), (name, got)


_CONTAINER_CASES = r"""
x = [1, 2]
x.append(x)
y = [[1, 2], [3, 4]]
y[1].append(y)
z = []
z.append(z)
t = (1, [2])
t[1].append(t)
CASES = [("self-referential list", lambda: ember.tensor(x)),
         ("self-referential inner list", lambda: ember.tensor(y)),
         ("list containing only itself", lambda: ember.tensor(z)),
         ("tuple/list cycle", lambda: ember.tensor(t)),
         ("as_tensor of a cycle", lambda: ember.as_tensor(x)),
         ("zeros of a cycle", lambda: ember.zeros(x))]
for depth in (17, 18, 23, 24, 40, 1000, 100000):
    d = 0
    for _ in range(depth):
        d = [d]
    CASES += [(f"tensor deep {depth}", lambda d=d: ember.tensor(d)),
              (f"as_tensor deep {depth}", lambda d=d: ember.as_tensor(d)),
              (f"tensor tuple deep {depth}", lambda d=d: ember.tensor(d) if depth > 1000 else
               ember.tensor(eval(repr(d).replace('[', '(').replace(']', ',)'))))]
"""


def test_cyclic_and_very_deep_containers():
    res = _run_cases(_CONTAINER_CASES)
    assert len(res) == 6 + 7 * 3
    assert res["self-referential list"] == "TypeError"        # torch: TypeError too
    assert res["list containing only itself"] == "TypeError"
    assert res["tuple/list cycle"] == "TypeError"
    assert res["as_tensor of a cycle"] == "TypeError"
    assert res["self-referential inner list"] == "ValueError"  # ragged before it recurses
    assert res["zeros of a cycle"] in ("TypeError", "RuntimeError")
    for name, got in res.items():
        if "deep" in name:
            assert got == "ValueError", (name, got)


# sizes near the int64 limits and negative ones; 2**40 is a valid int64 that no
# machine can allocate
_SIZES = [2**40, 2**62, 2**63 - 1, 2**63, 2**64, -2, -(2**63)]

_SIZE_CASES = r"""
SIZES = %r
t = lambda: ember.ones(2, 3)
img = lambda: ember.ones(1, 1, 4, 4)
CASES = []
for s in SIZES:
    CASES += [(f"{k}/{s}", f) for k, f in [
        ("empty", lambda s=s: ember.empty(s)),
        ("empty2", lambda s=s: ember.empty(s, 4)),
        ("zeros", lambda s=s: ember.zeros(4, s)),
        ("ones", lambda s=s: ember.ones(s, s)),
        ("full", lambda s=s: ember.full((s, 4), 1.0)),
        ("rand", lambda s=s: ember.rand(s, 4)),
        ("randn", lambda s=s: ember.randn(4, s)),
        ("randint", lambda s=s: ember.randint(0, 3, (s, 4))),
        ("randperm", lambda s=s: ember.randperm(s)),
        ("eye", lambda s=s: ember.eye(s)),
        ("eye2", lambda s=s: ember.eye(4, s)),
        ("arange", lambda s=s: ember.arange(s)),
        ("linspace", lambda s=s: ember.linspace(0, 1, s)),
        ("logspace", lambda s=s: ember.logspace(0, 1, s)),
        ("empty_strided", lambda s=s: ember.empty_strided((s, 4), (4, 1))),
        ("empty_strided_stride", lambda s=s: ember.empty_strided((4, 4), (s, 1))),
        ("tril_indices", lambda s=s: ember.tril_indices(s, s)),
        ("new_empty", lambda s=s: t().new_empty(s, 4)),
        ("new_zeros", lambda s=s: t().new_zeros((s, 4))),
        ("new_ones", lambda s=s: t().new_ones(4, s)),
        ("new_full", lambda s=s: t().new_full((s, 4), 2.0)),
        ("view", lambda s=s: t().view(s, -1)),
        ("view2", lambda s=s: t().view(s, s)),
        ("reshape", lambda s=s: t().reshape(s, 3)),
        ("expand", lambda s=s: t().expand(s, 2, 3)),
        ("expand2", lambda s=s: t()[:1].expand(s, s, 3)),
        ("expand_singleton", lambda s=s: t()[:1].expand(s, 3)),
        ("repeat", lambda s=s: t().repeat(s, 1)),
        ("repeat2", lambda s=s: t().repeat(s, s)),
        ("tile", lambda s=s: t().tile((s,))),
        ("as_strided", lambda s=s: t().as_strided((s, 2), (1, 1))),
        ("as_strided_stride", lambda s=s: t().as_strided((2, 2), (s, 1))),
        ("as_strided_offset", lambda s=s: t().as_strided((2, 2), (1, 1), s)),
        ("unflatten", lambda s=s: t().unflatten(1, (s, -1))),
        ("narrow", lambda s=s: t().narrow(1, 0, s)),
        ("unfold", lambda s=s: t().unfold(1, s, 1)),
        ("repeat_interleave", lambda s=s: t().repeat_interleave(s)),
        ("select", lambda s=s: t().select(0, s)),
        ("multinomial", lambda s=s: ember.ones(3).multinomial(s, True)),
        ("one_hot", lambda s=s: F.one_hot(ember.tensor([0, 1]), s)),
        ("pad_constant", lambda s=s: F.pad(img(), (s, s, s, s))),
        ("pad_replicate", lambda s=s: F.pad(img(), (s, s, 0, 0), mode="replicate")),
        ("pad_reflect", lambda s=s: F.pad(img(), (s, 2, 0, 0), mode="reflect")),
        ("pad_circular", lambda s=s: F.pad(img(), (s, 0, 0, 0), mode="circular")),
        ("interpolate_scale", lambda s=s: F.interpolate(img(), scale_factor=s)),
        ("interpolate_size", lambda s=s: F.interpolate(img(), size=(s, s))),
        ("interpolate_bilinear", lambda s=s: F.interpolate(img(), size=(s, 4),
                                                           mode="bilinear")),
        ("unfold_kernel", lambda s=s: F.unfold(img(), kernel_size=s)),
        ("unfold_padding", lambda s=s: F.unfold(img(), kernel_size=2, padding=s)),
        ("fold", lambda s=s: F.fold(ember.ones(1, 4, 4), output_size=(s, s), kernel_size=2)),
        ("conv_transpose2d_stride", lambda s=s: F.conv_transpose2d(
            img(), ember.ones(1, 1, 3, 3), stride=s, output_padding=1)),
        ("conv_transpose2d_output_padding", lambda s=s: F.conv_transpose2d(
            img(), ember.ones(1, 1, 3, 3), stride=2, output_padding=s)),
        ("conv2d_padding", lambda s=s: F.conv2d(img(), ember.ones(1, 1, 3, 3), padding=s)),
        ("max_pool2d_padding", lambda s=s: F.max_pool2d(img(), 2, padding=s)),
        ("adaptive_avg_pool2d", lambda s=s: F.adaptive_avg_pool2d(img(), (s, s))),
    ]]
CASES += [("arange_tiny_step", lambda: ember.arange(0, 1, 1e-30)),
          ("arange_1e30", lambda: ember.arange(0, 1e30)),
          ("arange_inf", lambda: ember.arange(0, float("inf"))),
          ("linspace_2**40", lambda: ember.linspace(0, 1, 2**40))]
""" % (_SIZES,)

# where a huge or negative size is valid: a view of a broadcast (no memory), a
# negative index, a negative pad (a crop)
_SIZE_OK = {
    "expand/1099511627776", "expand_singleton/1099511627776",  # views: no memory
    "select/-2", "pad_constant/-2", "pad_replicate/-2", "pad_reflect/-2", "pad_circular/-2",
}


def test_huge_and_negative_sizes_in_shape_taking_ops():
    res = _run_cases(_SIZE_CASES)
    assert len(res) == 55 * len(_SIZES) + 4
    for name, got in res.items():
        assert not got.startswith("BAD"), (name, got)
        if name in _SIZE_OK:
            continue
        # everything else is refused with one of torch's error types
        assert not got.startswith("OK"), (name, got)
    # torch's types where torch decides the same way (in-range sizes)
    assert res["empty2/4611686018427387904"] == "RuntimeError"
    assert res["expand2/4611686018427387904"] == "RuntimeError"
    assert res["expand_singleton/-2"] == "RuntimeError"
    assert res["view2/4611686018427387904"] == "RuntimeError"
    assert res["select/4611686018427387904"] == "IndexError"
    assert res["randperm/9223372036854775808"] == "ValueError"


def test_huge_sizes_match_torch():
    torch = pytest.importorskip("torch")
    calls = {
        "empty": lambda m, s: m.empty(s, 4),
        "zeros": lambda m, s: m.zeros(4, s),
        "new_ones": lambda m, s: m.ones(2, 3).new_ones(s, 4),
        "view": lambda m, s: m.ones(2, 3).view(s, -1),
        "reshape": lambda m, s: m.ones(2, 3).reshape(s, s),
        "expand": lambda m, s: m.ones(1, 4, 3).expand(s, 4, 3),
        "expand_neg": lambda m, s: m.ones(1, 3).expand(-s if s > 0 else s, 3),
        "repeat": lambda m, s: m.ones(2, 3).repeat(s, 1),
        "tile": lambda m, s: m.ones(2, 3).tile((s, 4)),
        "eye": lambda m, s: m.eye(s),
        "randperm": lambda m, s: m.randperm(s),
        "linspace": lambda m, s: m.linspace(0, 1, s),
        "narrow": lambda m, s: m.ones(2, 3).narrow(1, 0, s),
        "select": lambda m, s: m.ones(2, 3).select(0, s),
    }
    for s in (2**62, 2**63 - 1, -2):
        for name, f in calls.items():
            got = []
            for mod in (ember, torch):
                try:
                    r = f(mod, s)
                    got.append(("OK", tuple(r.shape)))
                except (TypeError, ValueError, IndexError, RuntimeError) as e:
                    got.append((type(e).__name__,))
            assert got[0] == got[1], (name, s, got)


def test_sizes_that_fit_but_cannot_be_allocated_fail_fast():
    img = ember.ones(1, 1, 4, 4)
    for call in (lambda: F.interpolate(img, scale_factor=2**31),
                 lambda: F.pad(img, (2**40, 2**40, 0, 0), mode="replicate"),
                 lambda: F.pad(img, (2**40, 2**40, 0, 0)),
                 lambda: ember.empty(2**40, 2**20),
                 lambda: ember.ones(1, 4, 3).expand(2**62, 4, 3).contiguous()):
        with pytest.raises(RuntimeError, match="can't allocate|overflow"):
            call()


def test_expand_refuses_negative_sizes_and_overflow():
    with pytest.raises(RuntimeError, match="expanded size of the tensor \\(-2\\)"):
        ember.ones(1, 3).expand(-2, 3)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        ember.ones(1, 4, 3).expand(2**62, 4, 3)
    assert ember.ones(1, 3).expand(-1, 3).shape == (1, 3)
    assert ember.ones(1, 3).expand(2, -1).tolist() == [[1.0] * 3] * 2


def test_from_dlpack_of_negative_strides_is_refused():
    a = np.arange(8.0)[::-1]
    with pytest.raises(RuntimeError, match="negative strides"):
        ember.from_dlpack(a)
    # a size-1 axis with any stride and a plain strided view still import correctly
    np.testing.assert_array_equal(ember.from_dlpack(a[:1]).numpy(), a[:1])
    b = np.arange(12.0).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(ember.from_dlpack(b).numpy(), b)
    assert ember.from_dlpack(b).untyped_storage().nbytes() == (2 * 4 + 2 + 1) * 8
