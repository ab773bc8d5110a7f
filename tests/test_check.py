"""The error taxonomy: ember._check* map conditions to one exception type each."""

import pytest

from ember._check import (
    _check,
    _check_index,
    _check_not_implemented,
    _check_type,
    _check_value,
    _check_with,
    _expected,
)

CHECKS = [
    (_check, RuntimeError),
    (_check_index, IndexError),
    (_check_value, ValueError),
    (_check_type, TypeError),
    (_check_not_implemented, NotImplementedError),
]


@pytest.mark.parametrize("fn,exc", CHECKS, ids=lambda x: getattr(x, "__name__", x))
def test_each_check_maps_to_one_exception(fn, exc):
    assert fn(True, "never shown") is None
    with pytest.raises(exc, match="^bad thing$"):
        fn(False, "bad thing")
    with pytest.raises(exc, match="^lazy 3$"):
        fn(False, lambda: f"lazy {1 + 2}")
    with pytest.raises(exc, match="Expected cond to be True"):
        fn(False)


def test_callable_message_is_evaluated_only_on_failure():
    calls = []

    def msg():
        calls.append(1)
        return "boom"

    for _ in range(3):
        _check(True, msg)
    assert calls == []
    with pytest.raises(RuntimeError, match="boom"):
        _check(False, msg)
    assert calls == [1]


def test_non_string_message_results_are_stringified():
    with pytest.raises(RuntimeError, match="^42$"):
        _check(False, lambda: 42)


def test_check_with_any_exception_type():
    class MyError(Exception):
        pass

    with pytest.raises(MyError, match="custom"):
        _check_with(MyError, False, "custom")
    _check_with(MyError, True, "fine")
    with pytest.raises(TypeError, match="subclass of Exception"):
        _check_with(UserWarning, False, "x")
    with pytest.raises(TypeError, match="subclass of Exception"):
        _check_with(int, False, "x")


@pytest.mark.parametrize("cond", [1, 0, "yes", None, [True]])
def test_cond_must_be_a_bool(cond):
    with pytest.raises(TypeError, match="cond must be a bool"):
        _check(cond, "msg")


def test_bad_message_type():
    with pytest.raises(TypeError, match="message must be"):
        _check(False, 123)


def test_expected_formats_op_arg_expected_got():
    msg = _expected("matmul", "other", "a 2-D tensor", "a 3-D tensor")
    assert msg == "matmul(): argument 'other' expected a 2-D tensor, but got a 3-D tensor"
    assert _expected("add", "alpha", "a number", [1]).endswith("but got [1]")


def test_public_names_on_ember():
    import ember

    for name in ("_check", "_check_index", "_check_value", "_check_type",
                 "_check_not_implemented", "_check_with"):
        assert callable(getattr(ember, name))
    with pytest.raises(IndexError):
        ember._check_index(False, lambda: "out of range")


def test_same_exception_types_as_torch():
    torch = pytest.importorskip("torch")
    pairs = [(torch._check, _check), (torch._check_index, _check_index),
             (torch._check_value, _check_value), (torch._check_type, _check_type),
             (torch._check_not_implemented, _check_not_implemented)]
    for tfn, efn in pairs:
        with pytest.raises(Exception) as tinfo:
            tfn(False, lambda: "m")
        with pytest.raises(Exception) as einfo:
            efn(False, lambda: "m")
        assert type(tinfo.value) is type(einfo.value)
        assert str(tinfo.value) == str(einfo.value) == "m"
    with pytest.raises(TypeError):
        torch._check("x", lambda: "m")
