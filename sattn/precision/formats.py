"""Number formats: float32, bfloat16, float16 and p-bit formats, rounding and arithmetic in them.

**Accumulation model of mode (b).** Values live in the format after every elementary operation.
An elementwise operation (``+ - * /``, ``exp``, ``max``, ``relu``) is evaluated in float64 on
format values and rounded once to the format (round to nearest, ties to even). For ``+ - * /``
this is the correctly rounded result IEEE arithmetic in the format gives (float64 carries more
than ``2p + 2`` bits for every ``p <= 24``); ``exp`` is rounded from the float64 value. A matrix
product or a sum (the softmax normaliser) is accumulated in float32 and rounded once to the
format for float16 and bfloat16 (as tensor cores and TPUs do), in float32 for float32, in float64
for float64 and for the p-bit formats. The accumulation order is specified, not left to a BLAS
kernel: each product is rounded to the accumulator and the terms are added in index order
(``sattn.ordered_matmul``), so the rounding errors measured are the same on every CPU; ``exp``
is ``sattn.portable_exp`` for the same reason. float16 and bfloat16 have their
finite range (overflow gives ``inf``, small values become subnormal or 0); rounding to them is
done by the ``numpy.float16`` and ``ml_dtypes.bfloat16`` casts. A p-bit format (an integer
``fmt``) has a p-bit significand and an unbounded exponent: the sweep behind the measured
thresholds.

References
----------
Chapter :ref:`ch-finite-precision`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .._validate import as_float_array, check_int
from ..linalg import ordered_matmul
from ..rounding import portable_exp

__flat__ = ["FORMATS", "MODES", "FloatFormat", "float_format", "round_to", "FormatArithmetic"]
__all__ = [*__flat__, "exponent_bits"]

#: The named formats, widest first.
FORMATS = ("float64", "float32", "bfloat16", "float16")
#: The two ways of putting a construction in a format.
MODES = ("weights", "forward")

_DTYPES = {"float64": np.float64, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16,
           "float16": np.float16}
_BITS = {"float64": 53, "float32": 24, "bfloat16": 8, "float16": 11}


@dataclass(frozen=True)
class FloatFormat:
    """A floating-point format: name, significand bits ``p`` (with the implicit bit), range.

    ``unit_roundoff`` is ``2**-p``, the largest relative error of rounding to nearest;
    ``max`` the largest finite value (``inf`` for the p-bit formats, whose exponent is unbounded).
    Built by :func:`float_format`; a hand-built one is checked: a non-empty ``name`` (one of
    :data:`FORMATS` must carry that format's bits), ``2 <= bits <= 53``, ``max > 0`` (``inf``
    allowed) and ``accumulate`` one of ``"float32"``, ``"float64"``.
    """

    name: str
    bits: int
    max: float
    accumulate: str

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r} ({type(self.name).__name__})")
        if not self.name.strip():
            raise ValueError(f"name must be non-empty, got {self.name!r}")
        check_int("bits", self.bits, low=2, high=53)
        if self.name in _BITS and self.bits != _BITS[self.name]:
            raise ValueError(f"bits: the format {self.name} has {_BITS[self.name]} significand bits, "
                             f"got bits = {self.bits}")
        if isinstance(self.max, bool) or not isinstance(self.max, numbers.Real):
            raise TypeError(f"max must be a real number, got {self.max!r} ({type(self.max).__name__})")
        if not self.max > 0:
            raise ValueError(f"max must be > 0 (inf for an unbounded exponent), got {self.max!r}")
        if not isinstance(self.accumulate, str) or self.accumulate not in ("float32", "float64"):
            raise ValueError(f"accumulate must be 'float32' or 'float64', got {self.accumulate!r}")

    @property
    def unit_roundoff(self) -> float:
        """``u = 2**-p``."""
        return 2.0 ** -self.bits


def float_format(fmt) -> FloatFormat:
    """The :class:`FloatFormat` named by ``fmt``.

    Parameters
    ----------
    fmt : str, int or FloatFormat
        One of :data:`FORMATS` (``"float64"``, ``"float32"``, ``"bfloat16"``, ``"float16"``), or an
        integer ``p`` with ``2 <= p <= 53``: a p-bit significand with unbounded exponent.

    Raises
    ------
    ValueError
        On an unknown name (naming the allowed ones) or a ``p`` outside ``[2, 53]``.
    TypeError
        If ``fmt`` is neither a string, an integer nor a FloatFormat.

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    if isinstance(fmt, FloatFormat):
        return fmt
    if isinstance(fmt, str):
        if fmt not in _DTYPES:
            raise ValueError(f"fmt: unknown format {fmt!r}; allowed: {', '.join(FORMATS)} or an integer "
                             "number of significand bits 2..53")
        dt = _DTYPES[fmt]
        acc = {"float64": "float64", "float32": "float32"}.get(fmt, "float32")
        return FloatFormat(fmt, _BITS[fmt], float(ml_dtypes.finfo(dt).max), acc)
    if isinstance(fmt, (int, np.integer)) and not isinstance(fmt, bool):
        if not 2 <= int(fmt) <= 53:
            raise ValueError(f"fmt: a p-bit format needs 2 <= p <= 53, got p = {fmt}")
        return FloatFormat(f"{int(fmt)}-bit", int(fmt), math.inf, "float64")
    raise TypeError(f"fmt must be a format name ({', '.join(FORMATS)}), an integer number of bits or a "
                    f"FloatFormat, got {type(fmt).__name__} {fmt!r}")


def exponent_bits(values) -> int:
    """Exponent bits a float format needs to hold the nonzero ``values`` after rounding.

    The count covers the binades from the smallest to the largest nonzero magnitude, one more
    binade for a rounding carry at the top, and one code for zero: ``ceil(log2(span + 1))`` with
    ``span`` the number of binades plus 2 (at least 1 bit). The width x bits frontier and the
    codes of Chapter 18 count a format's exponent this way.

    Parameters
    ----------
    values : array_like
        Finite real numbers (any shape); zeros are ignored.

    Returns
    -------
    int
    """
    x = np.abs(as_float_array("values", values))
    x = x[x > 0]
    if x.size == 0:
        return 1
    _, e = np.frexp(x)
    span = int(e.max() - e.min()) + 2            # binades, one more for a rounding carry, zero
    return max(1, math.ceil(math.log2(span + 1)))


def round_to(x, fmt) -> np.ndarray:
    """Round ``x`` to the nearest value of the format (ties to even); returned as float64.

    Parameters
    ----------
    x : array_like
        Real values (``inf``/``-inf`` pass through).
    fmt : str, int or FloatFormat
        See :func:`float_format`.

    Returns
    -------
    numpy.ndarray of float64
        Every entry is representable in the format (overflow gives ``inf`` for the named formats).

    References
    ----------
    Chapter :ref:`ch-finite-precision`.
    """
    f = float_format(fmt)
    x = as_float_array("x", x, finite=False)
    if f.name == "float64":
        return x.copy()
    if f.name in _DTYPES:
        with np.errstate(over="ignore"):
            return x.astype(_DTYPES[f.name]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        m, e = np.frexp(x)
        out = np.ldexp(np.round(np.ldexp(m, f.bits)), e - f.bits)
    return np.where(np.isfinite(x), out, x)


class FormatArithmetic:
    """Elementary operations of one format, under the accumulation model of the module docstring.

    Every method takes and returns float64 arrays whose entries are values of the format.

    Parameters
    ----------
    fmt : str, int or FloatFormat

    References
    ----------
    Chapter :ref:`ch-finite-precision` (section "Two ways to be in a format").
    """

    def __init__(self, fmt):
        self.format = float_format(fmt)

    def r(self, x) -> np.ndarray:
        """Round to the format."""
        return round_to(x, self.format)

    def _dtype(self):
        return np.float32 if self.format.accumulate == "float32" else np.float64

    def matmul(self, a, b) -> np.ndarray:
        """``a @ b``: each product rounded to the accumulator and added in index order, then the
        result rounded once to the format (``sattn.ordered_matmul``)."""
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            if a.ndim == 1 or b.ndim == 1:
                out = ordered_matmul(np.atleast_2d(a) if a.ndim == 1 else a,
                                     b[:, None] if b.ndim == 1 else b, self._dtype())
                out = out[..., 0, :] if a.ndim == 1 else out
                out = out[..., 0] if b.ndim == 1 else out
            else:
                out = ordered_matmul(a, b, self._dtype())
            return self.r(out.astype(np.float64))

    def sum(self, a, axis) -> np.ndarray:
        """A sum along ``axis`` (keeping it): terms added in index order in the accumulator,
        then rounded once to the format."""
        x = np.moveaxis(np.asarray(a, dtype=np.float64).astype(self._dtype()), axis, 0)
        out = np.zeros(x.shape[1:], dtype=x.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            for term in x:
                out += term
        return self.r(np.expand_dims(out.astype(np.float64), axis))

    def _ew(self, fn, *args):
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            return self.r(fn(*[np.asarray(a, dtype=np.float64) for a in args]))

    def add(self, a, b):
        """``a + b``, rounded."""
        return self._ew(np.add, a, b)

    def sub(self, a, b):
        """``a - b``, rounded."""
        return self._ew(np.subtract, a, b)

    def mul(self, a, b):
        """``a * b``, rounded."""
        return self._ew(np.multiply, a, b)

    def div(self, a, b):
        """``a / b``, rounded."""
        return self._ew(np.divide, a, b)

    def exp(self, a):
        """``exp(a)`` by ``sattn.portable_exp`` (the same bits on every CPU), rounded."""
        return self._ew(portable_exp, a)

    def relu(self, a):
        """``max(a, 0)`` (exact)."""
        return np.maximum(a, 0.0)

    def softmax(self, S, axis) -> np.ndarray:
        """Stable softmax along ``axis``: max subtracted, exp, sum, divide, each rounded."""
        m = np.max(S, axis=axis, keepdims=True)
        E = self.exp(self.sub(S, m))
        return self.div(E, self.sum(E, axis))
