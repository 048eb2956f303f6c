"""The result protocol shared by every report of :mod:`sattn`, and the chapters' claim checker.

Every report or result object of the package is a :class:`Result`: it has a boolean ``ok`` (did
the claim it measures hold), a one-line ``message`` (the verdict with the measured numbers) and
prints as that message. Chapters print evidence and assert the claim in the same cell::

    rep = sattn.check_approximation(G, A, eps1, eps2)
    print(rep)
    sattn.check(rep, "the SAM approximates A within (eps1, eps2)")

so that executing a chapter fails when one of its claims fails.
"""

from __future__ import annotations

import numpy as np

__flat__ = __all__ = ["ClaimFailed", "Result", "check"]


class Result:
    """Base class of every report of :mod:`sattn`: ``ok``, a one-line ``message``, ``str``.

    Subclasses (dataclasses) provide ``ok`` (a field or a property, a Python ``bool``) and
    ``message`` (a field or a property: one line, no newline, saying the verdict and the numbers
    behind it); ``str(result)`` is the message, so ``print(result)`` shows the evidence. (The base
    class declares neither attribute itself, so that a subclass may make either one a dataclass
    field.) A test checks every report class of the package against this protocol.
    """

    __slots__ = ()

    def __str__(self) -> str:
        return self.message


class ClaimFailed(AssertionError):
    """A claim that a chapter states did not hold when its cell was executed."""


def check(condition, claim: str) -> None:
    """Assert a claim a chapter makes; raise :class:`ClaimFailed` naming it when it fails.

    Parameters
    ----------
    condition : bool or object with an ``ok`` attribute
        The verdict. A report object (anything with a boolean ``ok``, e.g. a :class:`Result`) is
        accepted as is, and its ``message`` is added to the error.
    claim : str
        What must hold, in words, e.g. ``"every row satisfies criterion (7)"``.

    Raises
    ------
    TypeError
        If ``claim`` is not a non-empty string, or ``condition`` is neither a boolean (Python or
        NumPy) nor an object with a boolean ``ok``.
    ClaimFailed
        If the condition is false.
    """
    if not isinstance(claim, str) or not claim.strip():
        raise TypeError(f"check: claim must be a non-empty string saying what must hold, got {claim!r}")
    detail = ""
    if hasattr(condition, "ok") and not isinstance(condition, bool):
        detail = getattr(condition, "message", "")
        condition = condition.ok
    if isinstance(condition, np.bool_):
        condition = bool(condition)
    if not isinstance(condition, bool):
        raise TypeError(f"check: condition for {claim!r} must be a bool (or a report with .ok), "
                        f"got {type(condition).__name__} {condition!r}")
    if not condition:
        raise ClaimFailed(f"claim failed: {claim}" + (f" ({detail})" if detail else ""))
