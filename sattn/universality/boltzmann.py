"""The Boltzmann operator and the Boltzmann average (Part II, :ref:`ch-boltzmann`).

``boltz(a) = a . softmax(a)`` in float64 and in mpmath, and ``phi_a(t) = a . softmax(t a)``, the
softmax-weighted mean at inverse temperature ``t``: what one softmax attention head with rank-1
weights computes at each token (Kajitsuka & Sato 2024, Section 3.4).
"""

from __future__ import annotations

import numbers

import mpmath
import numpy as np

from .._validate import as_float_array, as_vector, check_int, check_size

__flat__ = __all__ = ["boltzmann", "boltzmann_mp", "boltzmann_average"]


def boltzmann(a, *, axis: int = -1) -> np.ndarray | float:
    """The Boltzmann operator ``boltz(a) = sum_l a_l softmax(a)_l`` (float64, stable).

    Parameters
    ----------
    a : array_like, shape (..., n)
        One or more real vectors (along ``axis``).
    axis : int, default -1

    Returns
    -------
    float or numpy.ndarray
        ``boltz`` of each vector; lies between ``max(a) - log n`` and ``max(a)``.

    References
    ----------
    The Boltzmann operator of Kajitsuka & Sato (2024), Section 3.4; :ref:`ch-boltzmann`.
    """
    a = as_float_array("a", a)
    if a.ndim:
        axis = check_int("axis", axis, low=-a.ndim, high=a.ndim - 1)
    if a.ndim == 0 or a.shape[axis] == 0:
        raise ValueError(f"a must have at least one entry along axis {axis}, got shape {a.shape}")
    m = a.max(axis=axis, keepdims=True)
    with np.errstate(under="ignore"):
        w = np.exp(a - m)
    out = (a * w).sum(axis=axis) / w.sum(axis=axis)
    return float(out) if np.ndim(out) == 0 else out


#: The most decimal digits of :func:`boltzmann_mp` (the book needs fewer than 500).
MAX_DPS = 10**4


def boltzmann_mp(a, *, dps: int = 50):
    """The Boltzmann operator in mpmath arithmetic with ``dps`` decimal digits.

    Parameters
    ----------
    a : sequence of real numbers or mpmath.mpf, length n
    dps : int, default 50
        Working precision (decimal digits), ``15 <= dps <= 10**4`` (``MAX_DPS``; larger is a
        :class:`sattn.SizeTooLargeError`).

    Returns
    -------
    mpmath.mpf

    References
    ----------
    As :func:`boltzmann`; :ref:`ch-boltzmann`.
    """
    dps = check_size("dps", dps, low=15, cap=MAX_DPS,
                     why="the cost of exp grows faster than the square of the digits: 10**4 digits "
                         "take milliseconds per entry, 10**5 over a tenth of a second")
    try:
        items = list(a)
    except TypeError:
        raise TypeError(f"a must be a sequence of real numbers, got {type(a).__name__}") from None
    for i, x in enumerate(items):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, mpmath.mpf)):
            raise TypeError(f"a[{i}] must be a real number, got {x!r} ({type(x).__name__})")
        if not mpmath.isfinite(x):
            raise ValueError(f"a must contain only finite numbers, but a[{i}] = {x}")
    with mpmath.workdps(dps):
        a = [mpmath.mpf(x) for x in items]
        if not a:
            raise ValueError("a must have at least one entry, got an empty sequence")
        m = max(a)
        w = [mpmath.exp(x - m) for x in a]
        return mpmath.fsum(x * y for x, y in zip(a, w)) / mpmath.fsum(w)


def boltzmann_average(a, t) -> np.ndarray | float:
    """``phi_a(t) = sum_l a_l softmax(t a)_l``, the softmax-weighted mean at inverse temperature t.

    Parameters
    ----------
    a : array_like, shape (n,)
    t : float or array_like of floats
        Inverse temperature(s); ``t = 0`` gives the mean, ``t -> +inf`` the max, ``t -> -inf``
        the min.

    Returns
    -------
    float or numpy.ndarray (shape of ``t``)

    References
    ----------
    Property P3 (temperature monotonicity) of the Boltzmann operator; :ref:`ch-boltzmann`.
    """
    a = as_vector("a", a)
    if a.size == 0:
        raise ValueError("a must have at least one entry, got an empty vector")
    t = as_float_array("t", t)
    z = t[..., None] * a
    m = z.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        w = np.exp(z - m)
    out = (w * a).sum(axis=-1) / w.sum(axis=-1)
    return float(out) if out.ndim == 0 else out
