"""Errors a chapter shows on purpose, printed as messages rather than tracebacks.

A chapter demonstrates that bad input is refused with a clear message. Shown as a red traceback in
the middle of a chapter, that demonstration looks like a broken build; :func:`expected_error`
prints the error's class and message instead, and fails the cell (so the build) when the error
is not raised.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

__flat__ = __all__ = ["expected_error"]


@contextlib.contextmanager
def expected_error(*types: type[BaseException]) -> Iterator[None]:
    """Run a block that must raise one of ``types``; print the error as ``Name: message``.

    Parameters
    ----------
    *types : exception classes
        The errors the block is expected to raise (at least one).

    Raises
    ------
    TypeError
        If no class is given or one of ``types`` is not an exception class.
    AssertionError
        If the block raises nothing. An error of another class is not caught.

    Examples
    --------
    >>> import sattn
    >>> with sattn.expected_error(ValueError):
    ...     int("x")
    ValueError: invalid literal for int() with base 10: 'x'

    References
    ----------
    The refused inputs shown in :ref:`ch-beyond`, :ref:`ch-finite-precision` and
    :ref:`ch-computation`.
    """
    if not types or not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise TypeError(f"expected_error needs one or more exception classes, got {types!r}")
    try:
        yield
    except types as exc:
        print(f"{type(exc).__name__}: {exc}")
    else:
        names = " or ".join(t.__name__ for t in types)
        raise AssertionError(f"expected {names}, but the block raised nothing")
