"""Errors a chapter shows on purpose, printed as messages rather than tracebacks.

A chapter demonstrates that bad input is refused with a clear message. Shown as a red traceback in
the middle of a chapter, that demonstration looks like a broken build; :func:`expected_error`
prints the error's class and message instead, and fails the cell (so the build) when the error
is not raised.
"""

from __future__ import annotations

import contextlib

__flat__ = ["expected_error", "ExpectedError"]
__all__ = [*__flat__]


class ExpectedError(contextlib.AbstractContextManager):
    """The context manager :func:`expected_error` returns."""

    def __init__(self, error: tuple):
        self.error = error

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            names = " or ".join(t.__name__ for t in self.error)
            raise AssertionError(f"expected {names}, but the block raised nothing")
        if issubclass(exc_type, self.error):
            print(f"{exc_type.__name__}: {exc}")
            return True
        return False


def expected_error(error) -> ExpectedError:
    """A block that must raise ``error``; the error is printed as ``Name: message``.

    Parameters
    ----------
    error : exception class or tuple of exception classes
        The errors the block is expected to raise.

    Returns
    -------
    ExpectedError
        A context manager: an expected error is caught and printed; an error of another class
        passes through; no error at all raises :class:`AssertionError`.

    Raises
    ------
    TypeError
        If ``error`` is not an exception class or a non-empty tuple of them.

    Examples
    --------
    >>> import sattn
    >>> with sattn.expected_error(ValueError):
    ...     int("x")
    ValueError: invalid literal for int() with base 10: 'x'

    References
    ----------
    The refused inputs shown in the chapters, e.g. :ref:`ch-beyond`, :ref:`ch-finite-precision` and
    :ref:`ch-computation`.
    """
    types = error if isinstance(error, tuple) else (error,)
    if not types or not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise TypeError(f"error must be an exception class or a non-empty tuple of them, got {error!r}")
    return ExpectedError(types)
