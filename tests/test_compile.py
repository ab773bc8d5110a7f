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


def test_every_mode_is_accepted_by_the_default_backend():
    for m in CompileMode:
        assert ember.compile(f, mode=m)(1) == 3
    modes = ember.compiler.list_modes()
    assert list(modes) == [m.value for m in CompileMode]
    # the code generator gives every mode work of its own
    assert not any("changes nothing" in v for v in modes.values())
    assert len(set(modes.values())) == len(modes)
    assert "changes nothing yet" in ember.compiler.list_modes("eager")["max-autotune"]


def test_mode_a_custom_backend_cannot_honour_is_an_error():
    class OnlyDefault(Backend):
        name = "test_only_default"

        def compile(self, gm, example_inputs, *, mode, options):
            return gm.forward

    with pytest.raises(ValueError, match="cannot honour mode 'max-autotune'"):
        ember.compile(f, backend=OnlyDefault(), mode="max-autotune")
    assert "refused" in ember.compiler.list_modes(OnlyDefault())["max-autotune"]


def test_mode_and_options_together_raise():
    with pytest.raises(RuntimeError, match="mode or options"):
        ember.compile(f, mode="default", options={})


def test_unknown_options_raise():
    with pytest.raises(ValueError, match="does not accept options"):
        ember.compile(f, options={"triton.cudagraphs": True})
    assert ember.compile(f, options={})(1) == 3


def test_default_backend_resolves_to_the_code_generator():
    from ember.compiler.codegen import InductorBackend
    assert ember.compiler.default_backend() == "inductor"
    assert {"eager", "inductor"} <= set(list_backends())
    assert lookup_backend("default") is lookup_backend("inductor")
    assert ember.compile(f).backend == InductorBackend()


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
    def counting(gm, example_inputs, **options):
        calls.append((len(example_inputs), options))
        return gm.forward

    x = ember.ones(2)
    assert "test_counting" in list_backends()
    cf = ember.compile(f, backend="test_counting", mode="max-autotune")
    assert cf(x).tolist() == [3.0, 3.0] and calls == [(1, {})]
    ember.compile(f, backend="test_counting", options={"depth": 2})(x)
    assert calls[-1] == (1, {"depth": 2})
    register_backend(counting, name="test_counting", modes=["default", "max-autotune"],
                     options=["depth"])  # equal: fine
    with pytest.raises(RuntimeError, match="already registered"):
        register_backend(lambda gm, ex: gm, name="test_counting")
    with pytest.raises(RuntimeError, match="already registered"):
        register_backend(lambda gm, ex: gm, name="eager")
    # leave the registry as other tests and the docs' doctests expect it
    from ember.compiler import _registry
    del _registry["test_counting"]


def test_custom_backend_object_and_callable_backend():
    class Doubler(Backend):
        name = "test_doubler"

        def compile(self, gm, example_inputs, *, mode, options):
            return lambda *a: tuple(2 * o for o in gm(*a))

    x = ember.ones(2)
    cf = ember.compile(f, backend=Doubler())
    # the first call runs f itself while capturing; later calls run the backend's callable
    assert cf(x).tolist() == [3.0, 3.0] and cf(x).tolist() == [6.0, 6.0]
    assert Doubler() == Doubler() and Doubler() != EagerBackend()
    # torch's contract: any callable (gm, example_inputs) -> callable
    assert ember.compile(f, backend=lambda gm, ex: gm.forward)(x).tolist() == [3.0, 3.0]


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
