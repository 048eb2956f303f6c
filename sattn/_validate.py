"""Argument checking shared by every module of :mod:`sattn`.

Every public function of the package validates its inputs with these helpers, so that bad
input always produces a :class:`ValueError` (or :class:`TypeError`) whose message names the
argument, shows what was received and says what was expected. Nothing is silently clipped,
reshaped or cast to a different meaning.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import SizeTooLargeError

__all__ = [
    "MAX_BYTES",
    "MAX_DENSE_L",
    "MAX_DRAWS",
    "MAX_L",
    "as_float_array",
    "check_bool",
    "check_callable",
    "as_matrix",
    "as_vector",
    "check_int",
    "check_real",
    "check_rng",
    "check_size",
]

#: The largest array (in bytes) that one call allocates because of a size argument: 4 GiB.
MAX_BYTES = 4 * 2**30
#: The largest L of a dense L x L float64 result (an L x L float64 array of at most MAX_BYTES): 23170.
MAX_DENSE_L = math.isqrt(MAX_BYTES // 8)
#: The largest sequence length of a sparse (CSR) pattern or of the experiments: 2**17 = 131072
#: (twice the experiments' largest L, 65536).
MAX_L = 2**17
#: The largest number of random draws, trials or samples that one call makes on request: 10**6
#: (the experiments make at most ceil(Q L) = 65536 per width, the decades budget at most 10**5).
MAX_DRAWS = 10**6


def check_size(name: str, value, *, cap: int, why: str, low: int = 1) -> int:
    """Check that ``value`` is an integer in ``[low, cap]``; above ``cap`` raise
    :class:`SizeTooLargeError` saying ``why`` (e.g. the memory it would need).

    Raises
    ------
    TypeError
        If ``value`` is not an integer (booleans included).
    ValueError
        If ``value < low``.
    SizeTooLargeError
        If ``value > cap``.
    """
    v = check_int(name, value, low=low)
    if v > cap:
        raise SizeTooLargeError(f"{name} = {v} is too large: at most {cap} is allowed ({why})")
    return v


def gib(nbytes: float) -> str:
    """A byte count in words, e.g. ``"8.6 GB"`` (for the messages of size caps)."""
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} bytes"


def check_dense_size(name: str, value, *, bytes_per_unit: float, power: int = 2, low: int = 1,
                     what: str = "an array") -> int:
    """A size ``n`` whose call allocates ``n**power * bytes_per_unit`` bytes: refuse it (with
    :class:`SizeTooLargeError`) when that exceeds ``MAX_BYTES``."""
    v = check_int(name, value, low=low)
    cap = int((MAX_BYTES / bytes_per_unit) ** (1.0 / power))
    while (cap + 1) ** power * bytes_per_unit <= MAX_BYTES:
        cap += 1
    while cap > 0 and cap ** power * bytes_per_unit > MAX_BYTES:
        cap -= 1
    if v > cap:
        raise SizeTooLargeError(
            f"{name} = {v} is too large: at most {cap} is allowed ({what} would need "
            f"{gib(float(v) ** power * bytes_per_unit)}, more than the {gib(MAX_BYTES)} one call may "
            "allocate)")
    return v


def _describe_shape(a: np.ndarray) -> str:
    return f"shape {a.shape} (ndim={a.ndim})"


def as_float_array(name: str, value, *, ndim: int | None = None, finite: bool = True,
                   dtype=np.float64) -> np.ndarray:
    """Convert ``value`` to a float array, checking its rank and finiteness.

    Parameters
    ----------
    name : str
        The argument's name, used in error messages.
    value : array_like
        The input.
    ndim : int, optional
        Required number of dimensions.
    finite : bool, default True
        Reject NaN and infinite entries.
    dtype : numpy dtype, default float64
        Floating dtype of the result.

    Raises
    ------
    TypeError
        If ``value`` cannot be read as a real array.
    ValueError
        If the rank is wrong or an entry is not finite.
    """
    try:
        a = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy raises many types here
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from exc
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must be a real numeric array, got dtype {a.dtype}")
    if np.iscomplexobj(a):
        raise TypeError(f"{name} must be real, got complex dtype {a.dtype}")
    a = a.astype(dtype, copy=False)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got {_describe_shape(a)}")
    if finite and a.size and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        where = tuple(int(i) for i in bad)
        raise ValueError(
            f"{name} must contain only finite numbers, but {name}{list(where)} = {a[where]}"
        )
    return a


def as_matrix(name: str, value, *, rows: int | None = None, cols: int | None = None,
              square: bool = False, finite: bool = True) -> np.ndarray:
    """Validate a 2-D float matrix, optionally with a fixed number of rows or columns."""
    a = as_float_array(name, value, ndim=2, finite=finite)
    if rows is not None and a.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows, got shape {a.shape}")
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns, got shape {a.shape}")
    if square and a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be square, got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {a.shape}")
    return a


def as_vector(name: str, value, *, size: int | None = None, finite: bool = True) -> np.ndarray:
    """Validate a 1-D float vector, optionally of a fixed length."""
    a = as_float_array(name, value, ndim=1, finite=finite)
    if size is not None and a.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got length {a.shape[0]}")
    return a


def check_int(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """Check that ``value`` is an integer in ``[low, high]`` and return it as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None else str(high)
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {v}")
    return v


def check_real(name: str, value, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
    """Check that ``value`` is a finite real number in the given interval and return it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    bad = (
        (low is not None and (v <= low if low_open else v < low))
        or (high is not None and (v >= high if high_open else v > high))
    )
    if bad:
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must lie in {lb}{lo}, {hi}{rb}, got {v:g}")
    return v


def check_rng(name: str, rng) -> np.random.Generator:
    """Require a :class:`numpy.random.Generator` (no global state, no bare seeds guessed)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)), "
            f"got {type(rng).__name__}"
        )
    return rng


def check_bool(name: str, value) -> bool:
    """Validate a flag: a Python or NumPy bool (not 0/1, not a string); return it as ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_callable(name: str, value):
    """Require a callable (a function, a method, a class); return it."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {value!r} ({type(value).__name__})")
    return value
