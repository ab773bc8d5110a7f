"""The error taxonomy: one small set of checks, each mapped to one exception type.

Every layer of ember (the Cython core, autograd, ``nn``, ``optim``) raises
through these helpers so that errors are uniform::

    _check(cond, msg)                   RuntimeError
    _check_index(cond, msg)             IndexError
    _check_value(cond, msg)             ValueError
    _check_type(cond, msg)              TypeError
    _check_not_implemented(cond, msg)   NotImplementedError
    _check_with(error_type, cond, msg)  any ``Exception`` subclass

``msg`` may be a string or a zero-argument callable returning the message; a
callable is evaluated only when the check fails, so building an expensive
message costs nothing on the fast path.  A good message names the op, the
argument, what was expected and what was given; :func:`_expected` formats one.

The module is public as ``ember._check`` & co., like ``torch._check``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing import at run time: ``import ember`` stays cheap
    from typing import Any, Callable, NoReturn, Union

    Message = Union[str, Callable[[], Any], None]

__all__ = [
    "_check",
    "_check_index",
    "_check_value",
    "_check_type",
    "_check_not_implemented",
    "_check_with",
    "_expected",
]

_DEFAULT_MESSAGE = "Expected cond to be True, but got False."


def _is_sym_bool(cond: object) -> bool:
    # ember._sym is loaded lazily; if it is not loaded, no SymBool can exist.
    sym = sys.modules.get("ember._sym")
    return sym is not None and isinstance(cond, sym.SymBool)


def _fail(error_type: type, message: Message) -> NoReturn:
    if not isinstance(error_type, type) or not issubclass(error_type, Exception) \
            or issubclass(error_type, Warning):
        raise TypeError(
            f"error_type must be a subclass of Exception but not of Warning, got {error_type!r}")
    if message is None:
        text = _DEFAULT_MESSAGE
    elif isinstance(message, str):
        text = message
    elif callable(message):
        text = str(message())
    else:
        raise TypeError(
            f"message must be a str or a callable returning one, got {type(message).__name__}")
    raise error_type(text)


def _check_with(error_type: type, cond: Any, message: Message = None) -> None:
    """Raise ``error_type(message)`` unless ``cond`` is True.

    Parameters
    ----------
    error_type : type
        An ``Exception`` subclass (not a ``Warning``) raised on failure.
    cond : bool or SymBool
        The condition that must hold.  Anything else (a tensor, an int, a
        NumPy bool) is a ``TypeError``: an ambiguous truth value in a check
        is a bug in the caller.
    message : str, callable or None
        The error message, or a zero-argument callable producing it (called
        only on failure).  ``None`` gives a generic message.

    Raises
    ------
    error_type
        When ``cond`` is False.
    TypeError
        When ``cond`` is not a bool / SymBool, ``error_type`` is not an
        exception class or ``message`` is neither a str nor a callable.
    """
    if cond is True:
        return
    if cond is not False:
        if not _is_sym_bool(cond):
            if type(cond).__name__ == "Tensor" or hasattr(cond, "grad_fn"):
                raise TypeError(
                    "cond must be a bool, but got a Tensor; for a tensor condition "
                    "reduce it first, e.g. bool(t.all()).")
            raise TypeError(f"cond must be a bool, but got {type(cond)}")
        if bool(cond):  # guards on the symbolic value
            return
    _fail(error_type, message)


def _check(cond: Any, message: Message = None) -> None:
    """Raise ``RuntimeError(message)`` unless ``cond`` is True (see :func:`_check_with`)."""
    if cond is True:
        return
    _check_with(RuntimeError, cond, message)


def _check_index(cond: Any, message: Message = None) -> None:
    """Raise ``IndexError(message)`` unless ``cond`` is True (see :func:`_check_with`)."""
    if cond is True:
        return
    _check_with(IndexError, cond, message)


def _check_value(cond: Any, message: Message = None) -> None:
    """Raise ``ValueError(message)`` unless ``cond`` is True (see :func:`_check_with`)."""
    if cond is True:
        return
    _check_with(ValueError, cond, message)


def _check_type(cond: Any, message: Message = None) -> None:
    """Raise ``TypeError(message)`` unless ``cond`` is True (see :func:`_check_with`)."""
    if cond is True:
        return
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond: Any, message: Message = None) -> None:
    """Raise ``NotImplementedError(message)`` unless ``cond`` is True (see :func:`_check_with`)."""
    if cond is True:
        return
    _check_with(NotImplementedError, cond, message)


def _real_only(x: Any, kernel: str) -> None:
    """Raise torch's ``NotImplementedError`` when complex ``x`` reaches a real-only kernel
    (so a composition never silently drops or misreads the imaginary part).

    Parameters
    ----------
    x : object
        The input; anything but a complex tensor passes.
    kernel : str
        torch's kernel name for the message, e.g. ``"batch_norm"``.
    """
    is_c = getattr(x, "is_complex", None)
    if is_c is not None and is_c():
        name = "ComplexDouble" if x.element_size() == 16 else "ComplexFloat"
        _fail(NotImplementedError, f'"{kernel}" not implemented for \'{name}\'')


def _expected(op: str, arg: str, expected: str, got: Any) -> str:
    """Format the standard message: op, argument, what was expected, what was given.

    Parameters
    ----------
    op : str
        The operation, e.g. ``"matmul"``.
    arg : str
        The argument name, e.g. ``"other"``.
    expected : str
        What the argument had to be, e.g. ``"a 2-D tensor"``.
    got : object
        What was given; strings are used as is, anything else is ``repr``-ed.

    Returns
    -------
    str
        ``"matmul(): argument 'other' expected a 2-D tensor, but got 3-D"``.

    Examples
    --------
    >>> _check_type(False, lambda: _expected("add", "alpha", "a number", "str"))
    Traceback (most recent call last):
    TypeError: add(): argument 'alpha' expected a number, but got str
    """
    given = got if isinstance(got, str) else repr(got)
    return f"{op}(): argument '{arg}' expected {expected}, but got {given}"
