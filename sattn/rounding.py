"""Rounding-error bounds and decisions that rounding cannot change.

The book's printed results must be the same on every CPU. A floating-point result computed through
BLAS or LAPACK is not: the kernel set a CPU picks (and the number of threads) changes the order of
the sums and whether products are fused, so the last bits differ. This module holds the two tools
the package uses against that:

* **Bounds.** :func:`gamma` is the classical factor ``gamma_n = n u / (1 - n u)`` of Higham
  (*Accuracy and Stability of Numerical Algorithms*, 2nd ed., Lemma 3.1 and eq. (3.13)): a dot
  product of length ``n`` computed in floating point, in *any* order of summation and with or
  without fused multiply-adds, differs from the exact dot product of the same floating-point
  vectors by at most ``gamma_n |x|.|y|``. :func:`product_error_bound` turns that into an
  entrywise bound for ``X1 @ X2.T`` from the row norms (Cauchy-Schwarz).
* **Certified decisions.** :func:`certify` decides the sign of a margin ``m`` computed with an
  error of at most ``bound``: ``m > bound`` is a pass and ``m < -bound`` a failure on every
  machine; inside the band the decision is re-made by an ``exact`` callable (exact rational or
  extended arithmetic) and a margin that is exactly zero passes (the book's criteria are ``<=``).
  :func:`first_of_largest` is the argmax rule for printed "worst" items: the lowest index among
  the values within ``tol`` of the largest (a preferred one, such as a failing row, first), so
  that exact ties (all rows of a construction with the same gap) give the same answer everywhere.
* **Printed residuals.** :func:`below_bound` prints a residual as a verdict against its bound
  instead of as digits that only rounding decides.

References
----------
The book's appendix :ref:`ch-computation` (section "The same output on every machine").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np

from ._validate import as_float_array, check_callable, check_int, check_real
from .errors import SizeTooLargeError
from .results import Result

__flat__ = ["Certified", "gamma", "product_error_bound", "certify",
            "first_of_largest", "below_bound", "correctly_rounded", "portable_exp", "log_below"]
__all__ = [*__flat__, "ELEMENTARY", "UNIT_ROUNDOFF"]

#: Unit roundoff of IEEE double precision, ``u = 2**-53``.
UNIT_ROUNDOFF = 2.0 ** -53


def gamma(n: int, u: float = UNIT_ROUNDOFF) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``, the relative error factor of ``n`` roundings.

    Parameters
    ----------
    n : int
        Number of rounded operations in sequence (``n >= 0``), e.g. the length of a dot product.
    u : float, default ``2**-53``
        Unit roundoff of the arithmetic (``2**-24`` for float32).

    Returns
    -------
    float
        ``gamma_n``, rounded up by one part in ``2**50`` so that the float is an upper bound.

    Raises
    ------
    ValueError
        If ``n u >= 1/2`` (the bound is then meaningless) or ``u`` is not in ``(0, 1/2]``.

    References
    ----------
    Higham (2002), Lemma 3.1.
    """
    n = check_int("n", n, low=0)
    u = check_real("u", u, low=0.0, high=0.5, low_open=True)
    if n * u >= 0.5:
        raise ValueError(f"gamma: n u must be below 1/2 for a meaningful bound, got n = {n}, u = {u:g}")
    return n * u / (1 - n * u) * (1 + 2.0 ** -50)


def product_error_bound(X1, X2, u: float = UNIT_ROUNDOFF) -> np.ndarray:
    """Entrywise bound on the rounding error of ``X1 @ X2.T`` computed in any order.

    ``|fl(X1 X2^T) - X1 X2^T|[l, j] <= gamma_d |x1_l| . |x2_j| <= gamma_d ||x1_l|| ||x2_j||``
    (``d`` columns), whatever the BLAS kernel, the summation order or the use of fused
    multiply-adds. The row norms are computed with a fixed-order sum and rounded up.

    Parameters
    ----------
    X1 : array_like, shape (n1, d)
    X2 : array_like, shape (n2, d)
    u : float, default ``2**-53``

    Returns
    -------
    numpy.ndarray, shape (n1, n2)

    References
    ----------
    Higham (2002), eq. (3.13); used for the logits of :func:`sattn.approximate`.
    """
    X1 = as_float_array("X1", X1, ndim=2)
    X2 = as_float_array("X2", X2, ndim=2)
    if X1.size == 0 or X2.size == 0:
        raise ValueError(f"X1 and X2 must be non-empty, got shapes {X1.shape} and {X2.shape}")
    if X1.shape[1] != X2.shape[1]:
        raise ValueError(f"X1 and X2 must have the same number of columns, got {X1.shape} and {X2.shape}")
    n1 = np.sqrt(np.sum(X1 * X1, axis=1)) * (1 + 4 * UNIT_ROUNDOFF)
    n2 = np.sqrt(np.sum(X2 * X2, axis=1)) * (1 + 4 * UNIT_ROUNDOFF)
    return gamma(X1.shape[1] + 2, u) * np.multiply.outer(n1, n2)


@dataclass(frozen=True)
class Certified(Result):
    """A decision on the sign of a margin, certified against the rounding that produced it.

    Attributes
    ----------
    ok : bool
        The decision: the margin is ``>= 0``.
    margin : float
        The margin as computed in floating point.
    bound : float
        The bound on its rounding error.
    how : str
        ``"float"`` (outside the band: every machine decides the same), ``"exact"`` (re-made by
        the exact callable) or ``"tie"`` (exactly zero: passes by the stated rule).
    """

    ok: bool
    margin: float
    bound: float
    how: str

    @property
    def message(self) -> str:
        verdict = "holds" if self.ok else "fails"
        if self.how == "float":
            return f"{verdict}: margin {self.margin:.3g} outside the rounding band +-{self.bound:.1g}"
        return f"{verdict}: margin within the rounding band +-{self.bound:.1g}, decided {self.how}"


def certify(margin: float, bound: float, exact=None) -> Certified:
    """Decide ``margin >= 0`` so that no machine's rounding can change the answer.

    Parameters
    ----------
    margin : float
        The margin as computed (a pass is ``margin >= 0`` in exact arithmetic).
    bound : float
        A bound on ``|margin - exact margin|`` (``>= 0``, may be ``inf``).
    exact : callable, optional
        ``exact()`` returns the exact margin (a :class:`fractions.Fraction`, an ``mpmath.mpf`` of
        enough precision or an int) or its sign; called only when ``|margin| <= bound``.

    Returns
    -------
    Certified

    Raises
    ------
    ValueError
        If ``margin`` is NaN, ``bound`` is negative or NaN, or the margin lies within the band and
        no ``exact`` callable was given (the decision would then be the machine's).

    References
    ----------
    The book's appendix :ref:`ch-computation`.
    """
    if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, (int, float, np.floating, np.integer)):
        raise TypeError(f"margin must be a real number, got {type(margin).__name__}")
    margin = float(margin)
    if math.isnan(margin):
        raise ValueError("margin must not be NaN")
    if isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (int, float, np.floating, np.integer)):
        raise TypeError(f"bound must be a real number, got {type(bound).__name__}")
    bound = float(bound)
    if exact is not None:
        check_callable("exact", exact)
    if not bound >= 0:
        raise ValueError(f"bound must be >= 0 (inf allowed), got {bound}")
    if margin > bound:
        return Certified(ok=True, margin=margin, bound=bound, how="float")
    if margin < -bound:
        return Certified(ok=False, margin=margin, bound=bound, how="float")
    if exact is None:
        raise ValueError(
            f"certify: the margin {margin:.3g} lies within its rounding bound {bound:.3g}, so "
            "floating point cannot decide its sign; pass exact= (a callable returning the exact margin)")
    check_callable("exact", exact)
    value = exact()
    if value == 0:
        return Certified(ok=True, margin=margin, bound=bound, how="tie")
    return Certified(ok=bool(value > 0), margin=margin, bound=bound, how="exact")


def first_of_largest(values, tol: float, *, prefer=None) -> int:
    """The lowest index among the entries within ``tol`` of the largest (the printed "worst").

    With ``prefer`` (a boolean mask, e.g. the rows that fail a criterion), a preferred entry within
    ``tol`` of the largest comes first: a check that fails on one of several tied rows reports the
    row that fails.

    Parameters
    ----------
    values : array_like, shape (n,)
        ``n >= 1``; ``-inf`` allowed, NaN not.
    tol : float
        ``>= 0``: the rounding bound of the values (the width within which they are tied).
    prefer : array_like of bool, shape (n,), optional
        Entries to report first among the tied ones.

    Returns
    -------
    int

    References
    ----------
    The book's appendix :ref:`ch-computation`.
    """
    v = as_float_array("values", values, ndim=1, finite=False)
    if v.size == 0:
        raise ValueError("values must be non-empty")
    if np.isnan(v).any():
        raise ValueError("values must not contain NaN")
    tol = check_real("tol", tol, low=0.0)
    if prefer is not None:
        prefer = np.asarray(prefer)
        if prefer.dtype != bool or prefer.shape != v.shape:
            raise ValueError(f"prefer must be a boolean array of shape {v.shape}, got "
                             f"{prefer.dtype} of shape {prefer.shape}")
    top = v.max()
    if top == -np.inf:
        return 0
    tied = v >= top - tol
    if prefer is not None and (tied & prefer).any():
        tied &= prefer
    return int(np.flatnonzero(tied)[0])


def below_bound(value: float, bound: float) -> str:
    """``"<= 1e-13"``: a residual printed as a verdict against its bound, never its rounding digits.

    The bound is rounded up to one significant digit; the function raises when the residual
    exceeds it, so a printed line is also an assertion.

    Parameters
    ----------
    value : float
        The residual (``>= 0``).
    bound : float
        Its bound (``> 0``).

    Returns
    -------
    str

    Raises
    ------
    AssertionError
        If ``value > bound``: the residual is larger than rounding can explain.

    References
    ----------
    The book's appendix :ref:`ch-computation`.
    """
    value = check_real("value", value, low=0.0)
    bound = check_real("bound", bound, low=0.0, low_open=True)
    exp = math.floor(math.log10(bound))
    lead = math.ceil(bound / 10.0 ** exp * (1 - 1e-12))
    if lead >= 10:
        lead, exp = 1, exp + 1
    shown = lead * 10.0 ** exp
    if value > bound:
        raise AssertionError(f"residual {value:.3g} exceeds its rounding bound {bound:.3g}")
    return f"<= {lead}e{exp:+03d}" if abs(exp) >= 3 else f"<= {shown:g}"


#: The most entries :func:`correctly_rounded` evaluates in one call.
MAX_ENTRIES = 10**6
#: The elementary functions :func:`correctly_rounded` evaluates.
ELEMENTARY = ("exp", "log", "log1p", "expm1", "cos", "sin")


def correctly_rounded(name: str, x) -> np.ndarray:
    """An elementary function rounded correctly to float64, the same on every machine.

    NumPy's ``exp``, ``log``, ``cos`` ... have several implementations chosen by the CPU (its
    AVX-512 paths give different last bits). Where such a last bit reaches a decision, the package
    evaluates the function here instead: in 96-bit arithmetic (mpmath), then rounded once to
    float64. Meant for small arrays (about 10 microseconds per entry).

    Parameters
    ----------
    name : {"exp", "log", "log1p", "expm1", "cos", "sin"}
    x : array_like
        Finite real values in the function's domain.

    Returns
    -------
    numpy.ndarray of float64, the shape of ``x``

    References
    ----------
    The book's appendix :ref:`ch-computation`.
    """
    if not isinstance(name, str) or name not in ELEMENTARY:
        raise ValueError(f"name must be one of {ELEMENTARY}, got {name!r}")
    x = as_float_array("x", x)
    if x.size > MAX_ENTRIES:
        raise SizeTooLargeError(f"x has {x.size} entries; correctly_rounded evaluates at most "
                                f"{MAX_ENTRIES} (about 10 microseconds each): use it on small arrays")
    low = {"log": 0.0, "log1p": -1.0}.get(name)
    if low is not None and x.size and not (x > low).all():
        raise ValueError(f"x must be > {low:g} for {name}, got a value {x[~(x > low)].flat[0]!r}")
    fn = getattr(mpmath, name)
    out = np.empty(x.shape)
    flat = out.reshape(-1)
    with mpmath.workprec(96):
        for i, v in enumerate(x.reshape(-1)):
            flat[i] = float(fn(mpmath.mpf(float(v))))
    return out


_LN2_HI = 0.693147180369123816490      # ln 2 with the low 32 bits of its significand zero
_LN2_LO = 1.90821492927058770002e-10   # ln 2 - _LN2_HI
_EXP_TERMS = 14


def portable_exp(x) -> np.ndarray:
    """``exp(x)`` in float64 by a fixed sequence of IEEE operations: the same bits on every CPU.

    Cody-Waite reduction ``x = k ln 2 + r`` (``|r| <= ln(2)/2``, ``k`` an integer; the split
    constant makes ``k * ln2_hi`` exact for ``|k| < 2**20``), a degree-13 Taylor polynomial of
    ``exp(r)`` by Horner's rule (truncation below ``2e-17`` relative), then ``2**k``. Accurate to
    about 2 units in the last place, against about 1 for NumPy's ``exp``, whose result depends on
    the CPU's instruction set. Overflow gives ``inf``, underflow ``0`` (or a subnormal).

    Parameters
    ----------
    x : array_like
        Real values (``-inf`` gives 0, ``inf`` gives ``inf``).

    Returns
    -------
    numpy.ndarray of float64

    References
    ----------
    Cody & Waite (1980), *Software Manual for the Elementary Functions*; the book's appendix
    :ref:`ch-computation`.
    """
    x = as_float_array("x", x, finite=False)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        xc = np.clip(np.nan_to_num(x, nan=0.0), -746.0, 710.0)
        k = np.rint(xc * (1.0 / _LN2_HI))
        r = (xc - k * _LN2_HI) - k * _LN2_LO
        p = np.full(r.shape, 1.0 / math.factorial(_EXP_TERMS - 1))
        for n in range(_EXP_TERMS - 2, -1, -1):
            p = p * r + 1.0 / math.factorial(n)
        # 2**k in two steps, so that neither factor overflows or underflows on its own
        k1 = np.floor(k / 2.0)
        out = np.ldexp(np.ldexp(p, k1.astype(np.int64)), (k - k1).astype(np.int64))
        out = np.where(x > 710.0, np.inf, out)
        out = np.where(x < -746.0, 0.0, out)
    return out


def log_below(x) -> np.ndarray:
    """The largest float64 at most ``ln x``, entrywise: logits placed *at* a limit of (6)-(7).

    A construction that puts a logit exactly at ``ln(eps2)`` (a tie, which the criteria accept)
    cannot write it in floating point: ``math.log`` rounds to the nearest float, which lies above
    the exact value half of the time and then breaks the tie by a unit in the last place. This
    returns the correctly rounded logarithm, moved down by one unit where it lies above.

    Parameters
    ----------
    x : array_like
        Positive finite values (at most ``MAX_ENTRIES``).

    Returns
    -------
    numpy.ndarray of float64

    References
    ----------
    The book's appendix :ref:`ch-computation`.
    """
    x = as_float_array("x", x)
    out = correctly_rounded("log", x)
    flat, xs = out.reshape(-1), x.reshape(-1)
    with mpmath.workprec(200):
        for i, v in enumerate(xs):
            if mpmath.mpf(float(flat[i])) > mpmath.log(mpmath.mpf(float(v))):
                flat[i] = math.nextafter(float(flat[i]), -math.inf)
    return out
