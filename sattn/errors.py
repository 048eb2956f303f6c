"""The error that the whole package raises for a size it will not compute.

Every size argument of the public API (a sequence length, a number of draws, trials, digits,
panels, views, a resolution) has a documented cap. Above it the call raises
:class:`SizeTooLargeError` at once, naming the argument, its value, the largest value allowed and
why (usually the memory the call would need), instead of running out of memory or time.

References
----------
:ref:`ch-computation` (bad requests fail loudly).
"""

from __future__ import annotations

__flat__ = __all__ = ["SizeTooLargeError"]


class SizeTooLargeError(ValueError):
    """A size argument is larger than its documented cap: the call would need more memory (or
    time) than the package allows for one call. The message names the argument, its value, the
    largest value allowed and why. A :class:`ValueError`, so ``except ValueError`` catches it."""
