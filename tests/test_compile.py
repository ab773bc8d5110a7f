"""The compile facade: modes, the backend registry, decorator and call forms."""

import pytest

import ember
from ember.compiler import (
    Backend,
    CompileMode,
    EagerBackend,
    list_backends,
    lookup_backend,
    register_backend,
)


def f(x, y=1):
    return x * 2 + y


def test_call_and_decorator_forms():
    cf = ember.compile(f)
    assert cf(3) == 7 and cf(3, y=0) == 6
    assert cf.__wrapped__ is f and cf.__name__ == "f"

    @ember.compile
    def g(x):
        return x + 1

    assert g(1) == 2

    @ember.compile(mode="default", fullgraph=True, dynamic=False)
    def h(x):
        return x - 1

    assert h(1) == 0 and h.fullgraph is True and h.dynamic is False


def test_disable_returns_the_function_itself():
    assert ember.compile(f, disable=True) is f
    dec = ember.compile(disable=True)
    assert dec(f) is f


def test_compile_mode_enum():
    assert issubclass(ember.CompileMode, str)
    assert [m.value for m in CompileMode] == [
        "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
    assert CompileMode.MAX_AUTOTUNE == "max-autotune"
    assert ember.compile(f, mode=CompileMode.DEFAULT)(1) == 3
    assert ember.compile(f, mode="default").mode is CompileMode.DEFAULT
    # the torch mode names are the same strings
    pytest.importorskip("torch")
    from torch._inductor import list_mode_options

    for m in CompileMode:
        list_mode_options(m.value)  # torch knows each of ember's modes


@pytest.mark.parametrize("bad,guess", [("max_autotune", "max-autotune"),
                                       ("reduce_overhead", "reduce-overhead"),
                                       ("defualt", "default"),
                                       ("MAX-AUTOTUNE", "max-autotune")])
def test_bad_mode_lists_valid_and_suggests_nearest(bad, guess):
    with pytest.raises(ValueError) as info:
        ember.compile(f, mode=bad)
    msg = str(info.value)
    assert f"Did you mean {guess!r}" in msg
    for m in CompileMode:
        assert repr(m.value) in msg
    with pytest.raises(ValueError):     # the decorator form fails at the call too
        ember.compile(mode=bad)


def test_bad_mode_type():
    with pytest.raises(TypeError):
        ember.compile(f, mode=3)


def test_mode_the_backend_cannot_honour_is_an_error():
    with pytest.raises(ValueError, match="cannot honour mode 'max-autotune'"):
        ember.compile(f, mode="max-autotune")
    with pytest.raises(ValueError, match="cannot honour"):
        ember.compile(f, backend="eager", mode=CompileMode.REDUCE_OVERHEAD)


def test_mode_and_options_together_raise():
    with pytest.raises(RuntimeError, match="mode or options"):
        ember.compile(f, mode="default", options={})


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="does not accept options"):
        ember.compile(f, options={"triton.cudagraphs": True})
    assert ember.compile(f, options={})(1) == 3


def test_default_backend_resolves_to_eager_honestly():
    assert ember.compiler.default_backend() == "eager"
    assert "eager" in list_backends()
    assert lookup_backend("default") is lookup_backend("eager")
    assert ember.compile(f).backend == EagerBackend()


def test_unknown_backend_suggests():
    with pytest.raises(ValueError, match="Did you mean 'eager'"):
        ember.compile(f, backend="eagre")


def test_backend_equality_and_registry():
    assert EagerBackend() == EagerBackend() and hash(EagerBackend()) == hash(EagerBackend())
    register_backend(EagerBackend())     # an equal backend again: a no-op
    assert list_backends().count("eager") == 1

    calls = []

    @register_backend(name="test_counting", modes=["default", "max-autotune"],
                      options=["depth"])
    def counting(fn, *, fullgraph, dynamic, mode, options):
        calls.append((mode, options))

        def run(*a, **k):
            return fn(*a, **k)
        return run

    assert "test_counting" in list_backends()
    cf = ember.compile(f, backend="test_counting", mode="max-autotune")
    assert cf(2) == 5 and calls == [(CompileMode.MAX_AUTOTUNE, {})]
    ember.compile(f, backend="test_counting", options={"depth": 2})
    assert calls[-1] == (CompileMode.DEFAULT, {"depth": 2})
    register_backend(counting, name="test_counting", modes=["default", "max-autotune"],
                     options=["depth"])  # equal: fine
    with pytest.raises(RuntimeError, match="already registered"):
        register_backend(lambda fn, **kw: fn, name="test_counting")
    with pytest.raises(RuntimeError, match="already registered"):
        register_backend(lambda fn, **kw: fn, name="eager")
    # leave the registry as other tests and the docs' doctests expect it
    from ember.compiler import _registry
    del _registry["test_counting"]


def test_custom_backend_object_and_callable_backend():
    class Doubler(Backend):
        name = "test_doubler"

        def compile(self, fn, *, fullgraph, dynamic, mode, options):
            return lambda *a, **k: 2 * fn(*a, **k)

    assert ember.compile(f, backend=Doubler())(1) == 6
    assert Doubler() == Doubler() and Doubler() != EagerBackend()
    assert ember.compile(f, backend=lambda fn, **kw: fn)(1) == 3


def test_compiling_a_module_like_object_forwards_attributes():
    class Mod:
        weight = 5

        def __call__(self, x):
            return x * self.weight

    m = Mod()
    cm = ember.compile(m)
    assert cm(2) == 10 and cm.weight == 5 and cm._orig_mod is m
    m.weight = 7                      # state is read through, never copied
    assert cm(2) == 14 and cm.weight == 7


def test_decorating_a_method_binds_self():
    class C:
        k = 3

        @ember.compile
        def f(self, x):
            return self.k * x

    assert C().f(2) == 6


def test_non_callable_raises():
    with pytest.raises(TypeError):
        ember.compile(42)


def test_is_compiling_false_outside():
    assert ember.compiler.is_compiling() is False
