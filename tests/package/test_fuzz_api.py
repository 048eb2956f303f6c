"""Bad input to every public callable of :mod:`sattn` (issue #16): a hypothesis-driven fuzz.

Every name in ``sattn.__all__`` is either covered here (a small valid call plus a *kind* for each of
its parameters) or listed in :data:`EXCLUDED` with the reason, whose first words say what the name is
(a result class of the result protocol ``sattn.Result``, the protocol's base class, an exception
class, a constant, a model or constants record returned by a function), and a test checks that it
is so. The names are taken from the flat API, so the test does not depend on which subpackage a
function lives in (``sattn.patterns``, ``sattn.universality``, ...). For every covered parameter,
hypothesis draws values that the parameter's docstring unambiguously rules out (wrong types, wrong
rank or shape, empty arrays, NaN and infinite entries, non-integral or boolean integers, sizes and
probabilities out of range, unknown choice strings, sizes so large that the result could not be
addressed by numpy at all) and substitutes them, one argument at a time, into the valid call.

A bad call is **named** when it raises :class:`ValueError` or :class:`TypeError` (or a subclass,
e.g. :class:`sattn.PatternError`) whose message names the argument. Anything else is a failure:
no error (the bad value was silently accepted), another exception (IndexError, OverflowError,
MemoryError, LinAlgError, AttributeError, a RuntimeWarning turned into an error, ...), or a message
that does not say which argument was wrong (e.g. ``invalid literal for int()``).

Sizes are "huge" when the array they define could not be addressed by numpy at all (an L x L
float64 array with L = 10**12 needs 8e24 bytes, more than 2**63): such values must be refused before
anything is allocated. Every call runs under an address-space cap (current size + 2 GiB), so a size
that slips through ends in a quick MemoryError instead of swapping.

Beyond that, every size argument has a documented cap (memory, or time for numbers of draws,
trials, restarts, digits, panels): :data:`HUGE` gives each one a huge value, which must be refused
with :class:`sattn.SizeTooLargeError` naming the argument in under 2 s and 1 GiB (measured with
tracemalloc and an address-space cap); :data:`NO_CAP` lists the integer arguments that need none
(closed formulas, thresholds, seeds, clipped values), and a test checks that every integer
argument is in one of the two.

The fixed bad values run as hypothesis ``@example``s and the random ones are derandomized, so the
number of calls is the same on every run; the last test writes the figure for the status page
(:func:`reliability.record`) and fails unless every bad call got a named error.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import math
import os
import re
import shutil
import tempfile
import time
import warnings
from collections import Counter, defaultdict

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.sparse as sps  # noqa: E402
from hypothesis import HealthCheck, Phase, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from reliability import record  # noqa: E402

import sattn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_EXAMPLES = 12  # generated bad values per parameter, on top of its fixed ones (one of each sort)

#: Names of ``sattn.__all__`` that are not fuzzed, with the reason. The reason's first words say
#: what the name is, and :func:`test_every_exclusion_is_what_it_says` checks it.
EXCLUDED = {
    # result records (sattn.Result subclasses): only returned by the package's functions, never
    # built by users; tests/package/test_results.py checks each against the result protocol
    "Approximation": "result class returned by approximate",
    "CodeInput": "result class returned by the code constructions (sign_code_input, ...)",
    "CodeReport": "result class returned by check_code_input",
    "ApproximationReport": "result class returned by the criteria checkers",
    "OptimizedLogits": "result class returned by optimize_logits / moment_curve_logits",
    "WidthSearch": "result class returned by smallest_width",
    "PatternReport": "result class returned by the pattern validators",
    "ContextualReport": "result class returned by contextual_mapping_report",
    "HardmaxReport": "result class returned by check_hardmax_counterexample",
    "ProjectionReport": "result class returned by projection_vector",
    "SeparationReport": "result class returned by tokenwise_separation / validate_separated",
    "MemorizationReport": "result class returned by memorize",
    "UniversalApproximationReport": "result class returned by two_layer_approximation",
    "Result": "base class of the result protocol: no constructor parameters, so nothing to fuzz (its "
              "subclasses are the result classes above; the protocol's checker, check, is fuzzed)",
    # records that are not results (no verdict): returned by functions, never built by users
    "Theorem1Constants": "constants dataclass returned by theorem1_constants",
    "PanelFigure": "record returned by panel_figure (two PNGs and a count), never built by users",
    "ExpectedError": "record returned by expected_error: the context manager that prints an error a "
                     "chapter shows on purpose, never built by users",
    "Theorem2Constants": "constants dataclass returned by theorem2_constants",
    "RankOneContextualMapping": "model returned by rank_one_contextual_mapping (built there, validated there)",
    "OneLayerTransformer": "model returned by memorize / memorize_with_positions",
    "TwoLayerModel": "model returned by two_layer_approximation",
    # exceptions: raised by the package, not called with user data
    "ConstructionFailed": "exception class raised by approximate",
    "PatternError": "exception class raised by the require_* validators",
    "ClaimFailed": "exception class raised by check",
    "SizeTooLargeError": "exception class raised by every size cap; the huge cases below check it",
    "ExperimentError": "exception class raised by the experiment functions",
    # constants: not callable
    "PROFILES": "dict constant (profiles of the experiments), not callable",
    "SETUPS": "dict constant (setups of Figure 3), not callable",
    "LAWS": "dict constant (the competing growth laws of d_min), not callable",
    # finite precision (sattn.precision)
    "PrecisionReport": "result class returned by the *_precision checks",
    "FormatOverflow": "exception class raised by round_model (a weight that does not fit a format)",
    "FORMATS": "tuple constant (the named formats), not callable",
    "MODES": "tuple constant (the two modes), not callable",
    # the width x bits bound (sattn.patterns.supports, sattn.frontier, the model's row types)
    "NestedSupports": "result class returned by nested_supports_example",
    "RowTypes": "model input record (a row-type histogram) returned by regular_row_types and "
                "row_types_from_blocks",
    # flat because flat functions return them (the rule of the flat API, sattn's docstring)
    "DrawOutcome": "result class returned by FastEngine.draw",
    "LevelResult": "result class returned by FastEngine.level",
    "LawJudgement": "result class returned by judge_laws",
    "Comparison": "result class returned by compare_measured",
    "DminPrediction": "result class returned by predict_dmin / predict_setup / naive_dmin",
    "DrawPrediction": "result class returned by draw_success_probability",
    "ModelCheck": "result class returned by the check_* functions of the predictive model",
    "LawFit": "model (a fitted growth law) returned by fit_law",
    "Task": "record of one task returned by make_tasks and taken by run_task",
    "LiveExplorer": "model of a live widget returned by live_explorer",
    "PrecomputedExplorer": "model of a precomputed widget returned by precomputed_explorer",
    "StoreError": "exception class raised by reproduce on an unusable output folder",
    "StoreWarning": "exception class (a warning) issued by reproduce on a damaged store",
    "Certified": "result class returned by certify",
}


# =============================================================================== kinds of parameter
class Kind:
    """A kind of parameter: a label (for the per-kind counts) and the bad values for it.

    ``make(valid)`` returns ``(fixed, random)`` for a parameter of this kind whose value in the
    covered call is ``valid``: a list of bad values that are always tried (hypothesis
    ``@example``s: one of each sort of mistake) and a hypothesis strategy of further bad values
    (random positions of NaN, random out-of-range numbers, random unknown strings), or None.
    """

    def __init__(self, label, make, *, integer=False, high=None):
        self.label = label
        self.make = make
        self.integer = integer      # an integer parameter (see HUGE: every size has a cap)
        self.high = high            # its documented upper bound, if the spec gives one


JUNK = ["abc", {"a": 1}, 1 + 2j, object()]  # wrong types for every kind below


def _types(none_ok=False, extra=()):
    return JUNK + ([] if none_ok else [None]) + list(extra)


def _put(base, i, j, v):
    a = np.array(base, dtype=np.float64, copy=True)
    a[i % a.shape[0], j % a.shape[1]] = v
    return a


def _put1(base, i, v):
    a = np.array(base, dtype=np.float64, copy=True)
    a[i % a.shape[0]] = v
    return a


def _zero_row(base, i):
    a = np.array(base, dtype=np.float64, copy=True)
    a[i % a.shape[0]] = 0.0
    return a


def _nonfinite(names):
    return st.sampled_from([float(x) for x in names])


def _one_of(strategies):
    return st.one_of(strategies) if strategies else None


def matrix(label="matrix", *, nonfinite=("nan", "inf", "-inf"), square=False, nonneg=False,
           support=False, none_ok=False, empty=True, shapes=(), extra=(), like=None):
    """A real 2-D array (``square``: L x L; ``nonneg``/``support``: a target pattern with entries
    >= 0 and a nonzero in every row; ``shapes``: shapes that do not fit the other arguments;
    ``like``: the template when the valid value is None)."""

    def make(valid):
        base = np.asarray(valid if like is None else like, dtype=np.float64)
        r, c = base.shape
        fixed = _types(none_ok) + [base.astype(complex) + 1j,           # complex
                                   np.full(base.shape, "a"),            # strings
                                   [[1.0, 2.0], [3.0]],                 # ragged
                                   np.array(1.0), base[0].copy(),       # 0-D, 1-D
                                   base[None].copy()]                   # 3-D
        rand = []
        if empty:
            fixed += [np.ones((0, c)), np.ones((r, 0)), np.ones((0, 0))]
        if nonfinite:
            fixed += [_put(base, 0, 0, float(x)) for x in nonfinite]
            rand.append(st.builds(_put, st.just(base), st.integers(0, r - 1), st.integers(0, c - 1),
                                  _nonfinite(nonfinite)))
        if square:
            fixed += [np.vstack([base, base[:1]]), np.hstack([base, base[:, :1]])]
        if nonneg:
            fixed.append(_put(base, r - 1, c - 1, -1.0))
            rand.append(st.builds(_put, st.just(base), st.integers(0, r - 1), st.integers(0, c - 1),
                                  st.floats(-1e300, -1e-300)))
        if support:
            fixed.append(_zero_row(base, 0))
            rand.append(st.builds(_zero_row, st.just(base), st.integers(0, r - 1)))
        fixed += [np.full(sh, 0.5) for sh in shapes] + list(extra)
        return fixed, _one_of(rand)

    return Kind(label, make)


def vector(label="vector", *, nonfinite=("nan", "inf", "-inf"), none_ok=False, empty=True,
           sized=True, ndim_bad=True, extra=(), like=None):
    """A real 1-D array (``sized``: its length is fixed by the other arguments)."""

    def make(valid):
        base = np.asarray(valid if like is None else like, dtype=np.float64)
        n = base.shape[0]
        fixed = _types(none_ok) + [base.astype(complex) + 1j, np.full(base.shape, "a"),
                                   [[1.0, 2.0], [3.0]], np.array(1.0)]
        rand = []
        if ndim_bad:
            fixed.append(base[None].copy())
        if empty:
            fixed.append(np.ones(0))
        if nonfinite:
            fixed += [_put1(base, 0, float(x)) for x in nonfinite]
            rand.append(st.builds(_put1, st.just(base), st.integers(0, n - 1), _nonfinite(nonfinite)))
        if sized:
            fixed += [np.arange(1.0, n), np.arange(1.0, n + 2)]
        fixed += list(extra)
        return fixed, _one_of(rand)

    return Kind(label, make)


def integer(label="int", *, low=None, high=None, huge=None, none_ok=False):
    """An integer in ``[low, high]``. Booleans are refused by the package (``_validate.check_int``),
    so they are bad values. ``huge``: a size whose result could not be addressed at all (more than
    2**63 bytes), which must be refused before anything is allocated."""

    def make(valid):
        fixed = _types(none_ok, extra=["3"]) + [2.5, math.nan, math.inf, -math.inf, True, False]
        rand = [st.integers(-10**6, 10**6).map(lambda k: k + 0.5)]        # non-integral floats
        if low is not None:
            fixed += [low - 1, low - 10**12]
            rand.append(st.integers(low - 10**6, low - 1))
        if high is not None:
            fixed += [high + 1, max(10**12, high + 1)]
            rand.append(st.integers(high + 1, high + 10**6))
        if huge is not None:
            fixed.append(huge)
        return fixed, _one_of(rand)

    return Kind(label, make, integer=True, high=high)


def real(label="real", *, low=None, high=None, low_open=False, high_open=False, none_ok=False,
         inf_bad=True, bool_bad=True):
    """A finite real number in the interval given (booleans are refused by ``check_real``)."""

    def make(valid):
        fixed = _types(none_ok, extra=["1.0"]) + [math.nan] + ([True] if bool_bad else [])
        rand = []
        if inf_bad:
            fixed += [math.inf, -math.inf]
        if low is not None:
            top = low if low_open else float(np.nextafter(low, -np.inf))
            fixed += [top, -1e308]
            rand.append(st.floats(min_value=-1e308, max_value=top, allow_nan=False, allow_infinity=False))
        if high is not None:
            bottom = high if high_open else float(np.nextafter(high, np.inf))
            fixed += [bottom, 1e308]
            rand.append(st.floats(min_value=bottom, max_value=1e308, allow_nan=False, allow_infinity=False))
        return fixed, _one_of(rand)

    return Kind(label, make)


def rng(*, none_ok=False):
    """A ``numpy.random.Generator`` (seeds and legacy RandomState are refused)."""
    return Kind("rng", lambda valid: (
        _types(none_ok) + [0, 12345, np.random.RandomState(0), np.random.PCG64(0)], None))


def choice(allowed, *, none_ok=False, label="choice string"):
    """One of a fixed set of strings."""
    allowed = tuple(allowed)

    def make(valid):
        fixed = _types(none_ok, extra=[5]) + ["", "unknown"] + [a.upper() + "x" for a in allowed]
        return fixed, st.text(max_size=8).filter(lambda s: s not in allowed)

    return Kind(label, make)


def boolean():
    """A bool (numpy bools allowed): strings, None, containers and other numbers' types are not."""
    return Kind("bool", lambda valid: (["yes", "", None, {"a": 1}, 1 + 2j, [True]], None))


def callable_():
    return Kind("callable", lambda valid: (["abc", None, 5, {"a": 1}, [len]], None))


def string(*, none_ok=False, nonempty=False):
    extra = ["", "   "] if nonempty else []
    return Kind("str", lambda valid: ([5, {"a": 1}, 1 + 2j, b"A", ["A"]]
                                      + ([] if none_ok else [None]) + extra, None))


def custom(label, values):
    return Kind(label, lambda valid: (list(values), None))


def path(*, none_ok=False):
    return Kind("path", lambda valid: ([5, 2.5, {"a": 1}, 1 + 2j, ["data"]]
                                       + ([] if none_ok else [None]), None))


# =============================================================================== valid inputs
def _rng():
    return np.random.default_rng(0)


def _A4():
    return sattn.band_pattern(4, 1)          # 4 x 4, tridiagonal, right stochastic


def _A4c():
    return sattn.band_pattern(4, 1, causal=True)


def _G4():
    return sattn.logit_target(_A4(), 1.0, 0.5)


def _Xs():
    return [np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]), np.array([[2.0, 1.0, 4.0], [-1.0, 0.5, 1.0]])]


def _Ys():
    return [np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])]


def _X():
    return np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]])          # (L, d_hid) = (3, 2)


def _W():
    return np.array([[0.5, -0.1], [0.2, 0.3]])                       # (d_hid, d) = (2, 2)


def _Z():
    return np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3]])            # (d, n) = (2, 3)


def _head():
    e = np.array([[0.5, -0.25]])
    return sattn.AttentionHead(W_Q=e.copy(), W_K=e.copy(), W_V=e.copy(), W_O=e.T.copy())


def _ffn():
    return sattn.FeedForward(W1=np.full((3, 2), 0.5), b1=np.zeros(3), W2=np.full((2, 3), 0.1),
                             b2=np.zeros(2))


class _Verdict:
    """A report-like object (``ok``, ``message``) whose ``ok`` is not a bool: ``check`` refuses it."""

    def __init__(self, ok):
        self.ok, self.message = ok, "a report"


def _report(eps2=0.5):
    return sattn.check_approximation(_G4(), _A4(), 1.0, eps2)


_TMP = tempfile.mkdtemp(prefix="sattn-fuzz-")   # reproduce's output folder (tiny: one task)
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def _task():
    t = sattn.make_tasks("fig3", "quick", setups=["k1-g1-e3-0.9"], lengths=[64])[0]
    return dataclasses.replace(t, grid=(64, 64, 1), Q=0.01)          # one width, d = L: one draw


def _widget():
    return ipywidgets.IntSlider(value=1, min=0, max=3)


def _axes():
    return Figure(figsize=(1, 1)).add_subplot()


# =============================================================================== the specs
BAD_HEAD_SHAPE = (np.ones((1, 3)), np.ones((1, 3)), np.ones((1, 3)), np.ones((3, 1)))
BAD_HEAD_NAN = (np.array([[np.nan, 1.0]]), np.ones((1, 2)), np.ones((1, 2)), np.ones((2, 1)))
HEADS_BAD = custom("heads", ["abc", None, 5, {"a": 1}, [], [5], [("a", "b")], [BAD_HEAD_SHAPE],
                             [BAD_HEAD_NAN], BAD_HEAD_NAN])
FFN_BAD = custom("ffn", ["abc", None, 5, {"a": 1}, (np.ones((3, 2)), np.zeros(3)),
                         (np.ones((3, 5)), np.zeros(3), np.ones((2, 3)), np.zeros(2)),
                         (np.ones((3, 2)), np.zeros(4), np.ones((2, 3)), np.zeros(2)),
                         (np.full((3, 2), np.nan), np.zeros(3), np.ones((2, 3)), np.zeros(2)),
                         (np.ones((3, 2)), np.zeros(3), np.ones((3, 3)), np.zeros(2)),
                         (np.ones((3, 2)), np.zeros(3), np.ones((2, 3)), np.array([0.0, np.inf]))])
SEQS_BAD = custom("sequences", ["abc", None, 5, {"a": 1}, [], np.ones((2, 3)), [np.ones((2, 3)), np.ones((2, 4))],
                                [np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]])], [np.ones((2, 0))],
                                [np.ones(3)], [np.full((2, 3), 1 + 1j)]])
LABELS_BAD = custom("labels", ["abc", None, 5, [], [np.ones((2, 3))], [np.ones((2, 4)), np.ones((2, 4))],
                              [np.ones((2, 3)), np.full((2, 3), np.nan)], [np.ones((3, 3)), np.ones((3, 3))]])
OUTPUTS_BAD = custom("sequences", ["abc", None, 5, [], [np.ones((2, 3))], [np.ones((2, 4)), np.ones((2, 4))],
                                   [np.ones((2, 3)), np.full((2, 3), np.nan)]])
TARGET = dict(square=True, nonneg=True, support=True)
_TASK_LIST = sattn.make_tasks("fig3", "quick", setups=["k1-g1-e3-0.9"], lengths=[64])


SPECS: dict = {}
#: Parameters of covered callables that are not fuzzed, with the reason.
NOT_FUZZED = {
    ("subplots", "kwargs"): "passed through to matplotlib.pyplot.subplots",
    ("heatmap", "title"): "any object matplotlib can print is a title",
}


#: Generated bad values per parameter for the callables whose valid call is not cheap enough for
#: MAX_EXAMPLES (their fixed bad values all run).
EXAMPLES = {}


def spec(_name, _valid, _examples=None, **kinds):
    SPECS[_name] = (_valid, kinds)
    if _examples is not None:
        EXAMPLES[_name] = _examples


# ---- attention, row convention
_XWW = dict(X=matrix(), W_Q=matrix(shapes=[(3, 2)]), W_K=matrix(shapes=[(3, 2), (2, 3)]), causal=boolean())
spec("attention_logits", lambda: dict(X=_X(), W_Q=_W(), W_K=_W(), causal=False), **_XWW)
spec("usam", lambda: dict(X=_X(), W_Q=_W(), W_K=_W(), causal=False, log=False), **_XWW, log=boolean())
spec("sam", lambda: dict(X=_X(), W_Q=_W(), W_K=_W(), causal=False), **_XWW)
spec("self_attention", lambda: dict(X=_X(), W_Q=_W(), W_K=_W(), W_V=_W(), causal=False), **_XWW,
     W_V=matrix(shapes=[(3, 2)]))
spec("causal_mask", lambda: dict(L=3), L=integer("size", low=1, huge=10**12))
spec("row_softmax", lambda: dict(G=_G4()),
     G=matrix(nonfinite=("nan", "inf"), extra=[np.array([[0.0, 1.0], [-np.inf, -np.inf]])]))

# ---- attention, column convention
spec("AttentionHead", lambda: dict(W_Q=np.ones((1, 2)), W_K=np.ones((1, 2)), W_V=np.ones((1, 2)),
                                   W_O=np.ones((2, 1))),
     W_Q=matrix(), W_K=matrix(), W_V=matrix(), W_O=matrix())
spec("FeedForward", lambda: dict(W1=np.ones((3, 2)), b1=np.zeros(3), W2=np.ones((2, 3)), b2=np.zeros(2)),
     W1=matrix(), b1=vector(sized=False), W2=matrix(), b2=vector(sized=False))
spec("column_softmax", lambda: dict(A=np.array([[0.1, 2.0], [0.3, -1.0], [0.0, 0.5]])), A=matrix())
spec("hardmax", lambda: dict(A=np.array([[0.1, 2.0], [0.3, -1.0], [0.0, 0.5]])),
     A=matrix(extra=[np.array([[1, "a"]], dtype=object), np.array([[1, np.nan]], dtype=object),
                     np.empty((0, 2), dtype=object)]))
spec("multihead_attention", lambda: dict(Z=_Z(), heads=[_head()], kind="softmax", exact=False,
                                         return_weights=False),
     Z=matrix(), heads=HEADS_BAD, kind=choice(("softmax", "hardmax")), exact=boolean(),
     return_weights=boolean())
spec("feed_forward", lambda: dict(H=_Z(), ffn=_ffn()), H=matrix(), ffn=FFN_BAD)
spec("transformer_block", lambda: dict(Z=_Z(), heads=[_head()], ffn=_ffn(), kind="softmax"),
     Z=matrix(), heads=HEADS_BAD, ffn=FFN_BAD, kind=choice(("softmax", "hardmax")))

# ---- sparse patterns
_NAME = dict(name=string())
spec("check_k_nonzero_bounded", lambda: dict(A=_A4(), k=2, name="A"),
     A=matrix(square=True), k=integer(low=1), **_NAME)
spec("check_gamma_variation_bounded", lambda: dict(A=_A4(), gamma=1.0, name="A", rtol=1e-12),
     A=matrix(square=True), gamma=real(low=1.0), rtol=real(low=0.0), **_NAME)
spec("check_lower_triangular", lambda: dict(A=_A4(), name="A"), A=matrix(square=True), **_NAME)
spec("check_right_stochastic", lambda: dict(A=_A4(), atol=1e-10, name="A"),
     A=matrix(square=True), atol=real(low=0.0), **_NAME)
spec("validate_k_nonzero_bounded", lambda: dict(A=_A4(), k=3, name="A"),
     A=matrix(square=True), k=integer(low=1), **_NAME)
spec("validate_gamma_variation_bounded", lambda: dict(A=_A4(), gamma=1.0, name="A", rtol=1e-12),
     A=matrix(square=True), gamma=real(low=1.0), rtol=real(low=0.0), **_NAME)
spec("validate_lower_triangular", lambda: dict(A=_A4c(), name="A"), A=matrix(square=True), **_NAME)
spec("validate_right_stochastic", lambda: dict(A=_A4(), atol=1e-10, name="A"),
     A=matrix(square=True), atol=real(low=0.0), **_NAME)
spec("pattern_parameters", lambda: dict(A=_A4(), name="A"), A=matrix(square=True, nonneg=True), **_NAME)
_OUT = dict(normalize=boolean(), as_csr=boolean())
_STRUCT = dict(gamma=real(low=1.0), causal=boolean(), rng=rng(none_ok=True), **_OUT)
spec("sample_sparse", lambda: dict(L=4, k=2, gamma=2.0, rng=_rng(), normalize=True, as_csr=False),
     L=integer("size", low=1, huge=10**12), k=integer(low=1, high=4), gamma=real(low=1.0), rng=rng(), **_OUT)
spec("band_pattern", lambda: dict(L=4, width=1, gamma=1.0, causal=False, rng=None, normalize=True,
                                  as_csr=False),
     L=integer("size", low=1, huge=10**12), width=integer(low=0, high=3), **_STRUCT)
spec("block_pattern", lambda: dict(L=4, block=2, gamma=1.0, causal=False, rng=None, normalize=True,
                                   as_csr=False),
     L=integer("size", low=1, huge=10**12), block=integer(low=1, high=4), **_STRUCT)
spec("strided_pattern", lambda: dict(L=4, stride=1, count=2, gamma=1.0, causal=False, rng=None,
                                     normalize=True, as_csr=False),
     L=integer("size", low=1, huge=10**12), stride=integer(low=1, high=2), count=integer(low=1, high=4),
     **_STRUCT)
spec("permutation_pattern", lambda: dict(L=4, rng=_rng(), normalize=True, as_csr=False),
     L=integer("size", low=1, huge=10**12), rng=rng(), **_OUT)

# ---- construction
_EPS = dict(eps1=real("positive real", low=0.0, low_open=True),
            eps2=real("probability", low=0.0, high=1.0, low_open=True, high_open=True))
spec("approximate", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5, d=4, rng=_rng(), causal=False,
                                 max_draws=None, method="svd"),
     A=matrix("target pattern", **TARGET), **_EPS, d=integer(low=1, high=4), rng=rng(), causal=boolean(),
     max_draws=integer(low=1, none_ok=True), method=choice(("svd", "direct")))
spec("default_max_draws", lambda: dict(L=4, Q=1.0), L=integer(low=1),
     Q=real("positive real", low=0.0, low_open=True))
spec("draw_input", lambda: dict(D=_G4(), V=np.eye(4), d=2, rng=_rng(), Y=None),
     D=matrix(square=True), V=matrix(shapes=[(3, 3), (4, 3), (5, 4)]), d=integer(low=1, high=4),
     rng=rng(), Y=matrix(none_ok=True, shapes=[(4, 3), (3, 2)], like=sattn.sample_stiefel(4, 2, _rng())))
spec("factorize", lambda: dict(B=_G4(), method="svd"), B=matrix(square=True),
     method=choice(("svd", "direct")))
spec("fixed_weights", lambda: dict(d=2), d=integer("size", low=1, huge=10**12))
spec("logit_target", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5), A=matrix("target pattern", **TARGET), **_EPS)
spec("sample_stiefel", lambda: dict(L=4, d=2, rng=_rng()), L=integer(low=1), d=integer(low=1, high=4),
     rng=rng())
_T1 = dict(L=integer(low=1), k=integer(low=1, high=8), gamma=real(low=1.0), **_EPS)
spec("theorem1_bound", lambda: dict(L=8, k=2, gamma=2.0, eps1=1.0, eps2=0.5), **_T1)
spec("theorem1_constants", lambda: dict(L=8, k=2, gamma=2.0, eps1=1.0, eps2=0.5), **_T1)
spec("theorem1_crossover", lambda: dict(k=2, gamma=2.0, eps1=1.0, eps2=0.5),
     **{n: v for n, v in _T1.items() if n not in ("L", "k")}, k=integer(low=1))

# ---- criteria
spec("check_approximation", lambda: dict(G=_G4(), A=_A4(), eps1=1.0, eps2=0.5, causal=False,
                                         block_rows=2),
     G=matrix(square=True), A=matrix("target pattern", **TARGET), **_EPS, causal=boolean(),
     block_rows=integer(low=1),
     logit_error=custom("nonnegative bound", ["a", -1.0, math.nan, math.inf, np.full((3, 3), 0.1),
                                              np.array([[1 + 1j]]), np.full((4, 4), -1.0)]),
     exact_logits=custom("callable or None", ["abc", 5, {"a": 1}]))
spec("check_approximation_explicit", lambda: dict(M=sattn.row_softmax(_G4()), A=_A4(), eps1=1.0, eps2=0.5,
                                                  causal=False),
     M=matrix(square=True, nonneg=True), A=matrix("target pattern", **TARGET), **_EPS, causal=boolean())
spec("check_attention_matrix", lambda: dict(M=sattn.row_softmax(_G4()), A=_A4(), eps1=1.0, eps2=0.5,
                                            causal=False),
     M=matrix(square=True, nonneg=True), A=matrix("target pattern", **TARGET), **_EPS, causal=boolean())
spec("check_rows", lambda: dict(G_block=_G4(), rows=[0, 1, 2, 3], A=_A4(), eps1=1.0, eps2=0.5, causal=False),
     G_block=matrix(shapes=[(4, 5)]),
     rows=custom("row indices", ["abc", None, {"a": 1}, [0.5, 1.5, 2.5, 3.5], [0], [0, 1, 2, 99],
                                 [-1, 0, 1, 2], [True, False, True, False], [[0, 1], [2, 3]], 1 + 2j]),
     A=matrix("target pattern", **TARGET), **_EPS, causal=boolean(),
     logit_error=custom("nonnegative bound", ["a", -1.0, math.nan, math.inf, np.full((3, 3), 0.1),
                                              np.array([[1 + 1j]]), np.full((4, 4), -1.0)]),
     exact_logits=custom("callable or None", ["abc", 5, {"a": 1}]))
spec("merge_reports", lambda: dict(reports=[_report(), _report()]),
     reports=custom("reports", ["abc", None, 5, [], [5], [None], [_report(), _report(0.25)], {"a": 1}]))

# ---- optimize
spec("moment_curve_logits", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5, nodes=None),
     A=matrix("target pattern", **TARGET), **_EPS,
     nodes=vector(none_ok=True, like=np.linspace(-1, 1, 4), extra=[np.array([0.1, 0.1, 0.2, 0.3])]))
spec("optimize_logits", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5, d=4, rng=_rng(), restarts=1,
                                     margin=0.01, maxiter=5),
     A=matrix("target pattern", **TARGET), **_EPS, d=integer(low=1, high=4), rng=rng(),
     restarts=integer(low=1), margin=real(low=0.0, high=math.log(2.0), high_open=True),
     maxiter=integer(low=1))
spec("smallest_width", lambda: dict(succeeds=lambda d: d >= 2, low=1, high=4),
     succeeds=callable_(), low=integer(low=1), high=integer(low=1))

# ---- contextual mappings
spec("adaptive_lambda", lambda: dict(projections=np.array([0.5, -1.0, 2.0]), n=3),
     projections=vector(sized=False, extra=[np.array([0.5, 0.0, 2.0]), np.array([0.5, 0.5, 2.0])]),
     n=integer(low=2))
spec("boltzmann", lambda: dict(a=np.array([1.0, 2.0, 3.0]), axis=-1),
     a=vector(sized=False, ndim_bad=False), axis=integer(low=-1, high=0))
spec("boltzmann_average", lambda: dict(a=np.array([1.0, 2.0, 3.0]), t=0.5),
     a=vector(sized=False), t=real(inf_bad=False, bool_bad=False))
spec("boltzmann_mp", lambda: dict(a=[1.0, 2.0, 3.0], dps=30),
     a=custom("sequence of reals", ["abc", None, 5, {"a": 1}, [], ["x"], [1.0, math.nan], [math.inf, 1.0],
                                    [1 + 2j], [[1.0, 2.0]], [None]]),
     dps=integer(low=15))
spec("check_hardmax_counterexample", lambda: dict(rng=_rng(), trials=2, d=1, max_heads=2, max_s=2, bound=2),
     rng=rng(), trials=integer(low=1), d=integer(low=1), max_heads=integer(low=1), max_s=integer(low=1),
     bound=integer(low=1))
_SEP = dict(r_min=real(low=0.0, none_ok=True), r_max=real(low=0.0, low_open=True, none_ok=True),
            eps=real(low=0.0, low_open=True, none_ok=True))
spec("validate_separated", lambda: dict(Xs=_Xs(), r_min=None, r_max=None, eps=None, allow_duplicates=False),
     Xs=SEQS_BAD, **_SEP, allow_duplicates=boolean())
spec("contextual_mapping_report", lambda: dict(Xs=_Xs(), outputs=[X + 0.1 for X in _Xs()], r=None, delta=None),
     Xs=SEQS_BAD, outputs=OUTPUTS_BAD, r=real(low=0.0, low_open=True, none_ok=True),
     delta=real(low=0.0, low_open=True, none_ok=True))
spec("hardmax_counterexample", lambda: dict(d=1), d=integer(low=1))
spec("projection_vector", lambda: dict(P=np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), rng=_rng(),
                                       max_draws=100),
     P=matrix(extra=[np.array([[1.0, 2.0]]), np.array([[1.0, 2.0], [1.0, 2.0]])]), rng=rng(),
     max_draws=integer(low=1))
spec("rank_one_contextual_mapping", lambda: dict(Xs=_Xs(), rng=_rng(), lam="theorem", s=1, r_min=None,
                                                 r_max=None, eps=None, max_draws=100),
     Xs=SEQS_BAD, rng=rng(),
     lam=custom("lambda", ["foo", "", None, {"a": 1}, 1 + 2j, -1.0, 0.0, math.nan, math.inf, True]),
     s=integer(low=1), r_min=real(low=0.0, low_open=True, none_ok=True),
     r_max=real(low=0.0, low_open=True, none_ok=True), eps=real(low=0.0, low_open=True, none_ok=True),
     max_draws=integer(low=1))
spec("theorem2_constants", lambda: dict(n=3, vocabulary_size=4, d=2, eps=0.5, r_min=1.0, r_max=2.0),
     n=integer(low=2), vocabulary_size=integer(low=1), d=integer(low=1),
     eps=real(low=0.0, low_open=True), r_min=real(low=0.0, low_open=True), r_max=real(low=1.0))
spec("tokenwise_separation", lambda: dict(Xs=_Xs()), Xs=SEQS_BAD)
spec("vocabulary", lambda: dict(X=_Z()), X=matrix(empty=False))

# ---- memorization
spec("validate_consistent_labels", lambda: dict(Xs=_Xs(), Ys=_Ys()), Xs=SEQS_BAD, Ys=LABELS_BAD)
spec("interpolating_ffn", lambda: dict(ids=np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                                       targets=np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]]),
                                       rng=_rng(), max_draws=100),
     ids=matrix(shapes=[(2, 2), (3, 3)]), targets=matrix(shapes=[(2, 2), (3, 3)]), rng=rng(),
     max_draws=integer(low=1))
_LAM = custom("lambda", ["foo", "", None, {"a": 1}, 1 + 2j, -1.0, 0.0, math.nan, math.inf, True])
spec("memorize", lambda: dict(Xs=_Xs(), Ys=_Ys(), rng=_rng(), lam="auto", s=1),
     Xs=SEQS_BAD, Ys=LABELS_BAD, rng=rng(), lam=_LAM, s=integer(low=1))
spec("memorize_with_positions", lambda: dict(Xs=_Xs(), Ys=_Ys(), rng=_rng(), lam="auto", s=1),
     Xs=SEQS_BAD, Ys=LABELS_BAD, rng=rng(), lam=_LAM, s=integer(low=1))
spec("quantizer_ffn", lambda: dict(K=3, ramp=1e-3), K=integer(low=1),
     ramp=real(low=0.0, high=1.0, low_open=True))
spec("two_layer_approximation", lambda: dict(f=np.square, n=2, K=2, rng=_rng(), samples=10, p=2.0,
                                             max_logit=1.0, ramp=1e-3),
     f=callable_(), n=integer(low=2), K=integer(low=1), rng=rng(), samples=integer(low=1),
     p=real(low=1.0), max_logit=real(), ramp=real(low=0.0, high=1.0, low_open=True))

# ---- results, plotting, widgets
spec("check", lambda: dict(condition=True, claim="it holds"),
     condition=custom("verdict", ["yes", None, 1, 0.0, {"a": 1}, np.array([True, True]), 1 + 2j,
                                  _Verdict("yes"), _Verdict(None), _Verdict(1),
                                  _Verdict(np.array([True, True]))]),
     claim=string(nonempty=True))
spec("apply_style", lambda: dict())
spec("subplots", lambda: dict(nrows=1, ncols=1, width=1.0, height=1.0),
     nrows=integer(low=1), ncols=integer(low=1),
     width=real(low=0.0, low_open=True, none_ok=True), height=real(low=0.0, low_open=True, none_ok=True))
spec("heatmap", lambda: dict(ax=_axes(), M=_A4(), cmap="viridis", log=False, vmin=None, vmax=None,
                             colorbar=False, floor=1e-12),
     ax=custom("axes", ["abc", None, 5, {"a": 1}, np.ones((2, 2))]),
     M=matrix(nonfinite=()), cmap=choice(("viridis",), none_ok=True), log=boolean(),
     vmin=real(none_ok=True), vmax=real(none_ok=True), colorbar=boolean(),
     floor=real(low=0.0, low_open=True))
spec("figure_to_png", lambda: dict(fig=Figure(figsize=(0.5, 0.5)), dpi=10, close=True),
     fig=custom("figure", ["abc", None, 5, {"a": 1}]), dpi=integer(low=1, none_ok=True), close=boolean())
spec("plain_text", lambda: dict(view="<b>a</b><br>b"), view=string())
spec("expected_error", lambda: dict(error=ValueError),
     error=custom("exception class", ["abc", None, 5, int, (), (ValueError, 5), [ValueError]]))
spec("panel_figure", lambda: dict(n=1, draw=lambda fig, axes: None, panel_width=0.5,
                                  panel_height=0.5, dpi=10),
     n=integer("size", low=1), draw=callable_(),
     panel_width=real(low=0.0, low_open=True, high=20.0),
     panel_height=real(low=0.0, low_open=True, high=20.0), dpi=integer(low=1, none_ok=True),
     constrained=boolean(), columns=integer("size", low=1, none_ok=True))
spec("precomputed_explorer", lambda: dict(render=lambda n: f"<b>{n}</b>", grid={"n": [1, 2]},
                                          description=None, value=None, dpi=None),
     render=callable_(),
     grid=custom("grid", ["abc", None, 5, [], {}, {"n": []}, {"n": [1, 1]}, {5: [1, 2]}, {"n": 5},
                          {"n": np.ones((2, 2))}]),
     description=string(none_ok=True),
     value=custom("mapping", ["abc", 5, [1], {"m": 1}, {"n": 3}, 1 + 2j]),
     dpi=integer(low=1, none_ok=True))
spec("live_explorer", lambda: dict(render=lambda n: f"<b>{n}</b>", n=_widget()),
     render=callable_(), n=custom("widget", ["abc", None, 5, {"a": 1}, 1 + 2j]))

# ---- engine and experiments
spec("FastEngine", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5, partial_fraction=0.5, probe_fraction=0.1,
                                candidates=32, first_block=64, max_block=1024, use_float32=True,
                                batch=None, span_basis=False),
     A=matrix("target pattern", **TARGET), **_EPS,
     partial_fraction=real("probability", low=0.0, high=1.0, low_open=True),
     probe_fraction=real("probability", low=0.0, high=1.0, low_open=True),
     candidates=integer(low=0), first_block=integer(low=1), max_block=integer(low=1),
     use_float32=boolean(), batch=integer(low=1, none_ok=True), span_basis=boolean())
spec("draw_generator", lambda: dict(root_seed=1, key=(0, 1)),
     root_seed=integer(low=0), key=custom("seed key", ["abc", None, 5, 1.5, {"a": 1}, (-1,), (0.5, 1),
                                                         ("a",), (None,), (True,)]))
_LAW_L = np.repeat([64.0, 128.0, 256.0, 8192.0], 2)
_LAW_D = np.sqrt(_LAW_L) * np.tile([0.99, 1.01], 4)
spec("fit_law", lambda: dict(law="log", L=_LAW_L, d=_LAW_D),
     law=choice(("log", "power", "log2", "sqrt")), L=vector(sized=False), d=vector(sized=False))
spec("judge_laws", lambda: dict(L=_LAW_L, d=_LAW_D, fit_max=256, predict_min=8192,
                                rounding=None, z_max=3.0, aic_margin=4.0),
     L=vector(sized=False), d=vector(sized=False), fit_max=integer(low=1),
     predict_min=integer(low=2), rounding=vector(none_ok=True, like=np.zeros(8)),
     z_max=real(low=0.0, low_open=True), aic_margin=real(low=0.0))
spec("fit_dmin_log", lambda: dict(L=np.array([64.0, 128.0, 256.0]), d=np.array([3.0, 4.0, 5.0])),
     L=vector(extra=[np.array([64.0, -128.0, 256.0]), np.array([0.0, 128.0, 256.0])]), d=vector())
spec("load_figure", lambda: dict(figure="fig3", data_dir=os.path.join(ROOT, "data"), verify=True),
     figure=choice(("fig3", "fig4", "fig5")), data_dir=path(), verify=boolean())
_LENGTHS = custom("lengths", ["abc", 5, {"a": 1}, [], [10], [64.5], ["x"], [128, 64], [10**12], [None], [True]])
_SETUPS = custom("setup names", [5, {"a": 1}, [], "", ["nope"], [5], ["k1-g1-e3-0.9", "k1-g1-e3-0.9"], 1 + 2j])
_PROFILE = custom("profile", ["foo", "", None, 5, {"a": 1}, ["quick"], 1 + 2j])
spec("make_tasks", lambda: dict(figure="decades", profile="quick", setups=["k1-g1-e3-0.9"],
                                lengths=[64], budget=8),
     figure=choice(("fig3", "fig4", "decades")), profile=_PROFILE, setups=_SETUPS,
     lengths=_LENGTHS, budget=integer("budget", low=1, high=100_000, none_ok=True))
spec("reference_level", lambda: dict(A=_A4(), eps1=1.0, eps2=0.5, d=4, n_draws=1, rng=_rng(),
                                     method="svd", factors=None),
     A=matrix("target pattern", **TARGET), **_EPS, d=integer(low=1, high=4), n_draws=integer(low=1),
     rng=rng(), method=choice(("svd", "direct")),
     factors=custom("factor pair", ["abc", 5, {"a": 1}, (np.eye(4),), (np.eye(4), np.eye(4), np.eye(4)),
                                    1 + 2j]))
spec("reproduce", lambda: dict(figure="fig3", profile="quick", setups=["k1-g1-e3-0.9"], lengths=[64],
                               jobs=1, out=_TMP, progress=False),
     figure=choice(("fig3", "fig4", "fig5")), profile=_PROFILE, setups=_SETUPS, lengths=_LENGTHS,
     jobs=custom("jobs", ["abc", None, 0, -2, 1.5, True, {"a": 1}, 1 + 2j, math.nan]),
     out=path(none_ok=True), progress=boolean(),
     scheduler=custom("scheduler", [5, {"a": 1}, "", "nowhere", b"tcp://x", 1.5, True]),
     workers=custom("workers", ["abc", 0, -1, 1.5, True, {"a": 1}]),
     budget=custom("budget", ["abc", 0, 8, 1.5, True, {"a": 1}]))
spec("run_task", lambda: dict(task=_task()),
     task=custom("task", ["abc", None, 5, {"a": 1}, _TASK_LIST, sattn.SETUPS["k1-g1-e3-0.9"]]))

# ---- the book's predictive estimate of d_min (chapter 16)
def _P16():
    return sattn.sample_sparse(16, 2, 2.0, np.random.default_rng(3))


_SETUP1 = custom("setup name", [5, "", "nope", None, ["k1-g1-e3-0.9"], 1 + 2j])
_WIDTHS = custom("widths", ["abc", [], [4, 2], [1.5], [0], 5, None, [[2]], [2, 2]])
_B = custom("support logits", ["a", [], [-1.0], [np.nan], [[1.0]], None, 5j, [np.inf]])
_EXACT = dict(L=integer(low=8, high=8192), d=integer(low=1, high=64), b=_B,
              n_draws=integer(low=2), rows=integer(low=2), rng=rng())
_SAMPLES = integer(low=256, high=1 << 22)
spec("describe_setup", lambda: dict(name="k1-g1-e3-0.9"), name=_SETUP1)
spec("sample_target", lambda: dict(setup="k1-g1-e3-0.9", L=64, root_seed=0),
     setup=_SETUP1, L=integer(low=64, high=32768), root_seed=integer(low=0))
spec("draw_success_probability", lambda: dict(A=_P16(), eps1=1.0, eps2=0.5, d=8, n_samples=256,
                                              seed=0),
     A=matrix("target pattern", **TARGET), **_EPS, d=integer(low=2, high=14),
     n_samples=_SAMPLES, seed=integer(low=0), method=choice(("sampled", "exact")))
spec("predict_dmin", lambda: dict(A=_P16(), eps1=1.0, eps2=0.5, widths=[2, 4, 8], n_draws=2,
                                  n_samples=256, seed=0, tail=1e-6, skip=1e-9),
     A=matrix("target pattern", **TARGET), **_EPS, widths=_WIDTHS, n_draws=integer(low=1),
     n_samples=_SAMPLES, seed=integer(low=0),
     tail=real(low=0.0, high=1.0, low_open=True, high_open=True),
     skip=real(low=0.0, high=1.0, low_open=True, high_open=True), method=choice(("sampled", "exact")))
spec("predict_setup", lambda: dict(setup="k1-g1-e3-0.9", L=64, n_draws=2, widths=[16, 20, 24],
                                   root_seed=0, n_samples=256, seed=0),
     setup=_SETUP1, L=integer(low=64, high=32768), n_draws=integer(low=1, none_ok=True),
     widths=custom("widths", ["abc", [], [4, 2], [1.5], [0], 5, [[2]], [2, 2]]), root_seed=integer(low=0), n_samples=_SAMPLES, seed=integer(low=0),
     method=choice(("sampled", "exact")))
spec("naive_dmin", lambda: dict(A=_P16(), eps1=1.0, eps2=0.5, widths=[2, 4, 8], n_draws=2),
     A=matrix("target pattern", **TARGET), **_EPS, widths=_WIDTHS, n_draws=integer(low=1))
_ROW = {"setup": "k1-g1-e3-0.9", "L": 64, "n_draws": 7, "grid_start": 4, "grid_stop": 60,
        "grid_step": 4, "d_min": 16}
spec("compare_measured", lambda: dict(rows=[dict(_ROW)], tolerance=0.25, n_samples=256, seed=0,
                                      root_seed=0),
     rows=custom("rows", [[], "abc", [5], [{}], None, 5, [{**_ROW, "L": "x"}]]),
     tolerance=real(low=0.0, low_open=True), n_samples=_SAMPLES, seed=integer(low=0),
     root_seed=integer(low=0), method=choice(("sampled", "exact")))
for _name in ("check_error_model", "check_offsupport_max", "check_row_dependence"):
    spec(_name, lambda: dict(L=64, d=16, b=[1.5], n_draws=3, rows=4, rng=_rng()), **_EXACT)
spec("check_success_probability", lambda: dict(setup="k1-g1-e3-0.9", L=64, widths=[20],
                                               n_draws=10, root_seed=0, n_samples=256, seed=0),
     setup=_SETUP1, L=integer(low=64, high=32768), widths=_WIDTHS, n_draws=integer(low=10),
     root_seed=integer(low=0), n_samples=_SAMPLES, seed=integer(low=0),
     method=choice(("sampled", "exact")))

# ---- finite precision: tiny models built once (memorize on two 2 x 3 sequences, Algorithm 1 at L = 8,
# a two-layer model on 10 samples)
_A8 = sattn.band_pattern(8, 1)
_APPROX = sattn.approximate(_A8, 1.0, 0.5, d=8, rng=_rng())
_MEM, _ = sattn.memorize(_Xs(), _Ys(), _rng())
_TWO, _ = sattn.two_layer_approximation(np.square, 2, 2, _rng(), samples=10)
_U = np.random.default_rng(1).uniform(0.0, 1.0, (3, 1, 2))


def _fmt():
    """A format: a name of sattn.FORMATS, an integer 2..53 or a FloatFormat."""
    def make(valid):
        fixed = JUNK + [None, "", "unknown", "FLOAT32", "fp8", b"float32", ["float32"], 1, 54, -3, 10**12,
                        2.5, 8.0, math.nan, math.inf, True, False]
        rand = st.one_of(st.text(max_size=8).filter(lambda t: t not in sattn.FORMATS),
                         st.integers(-10**6, 1), st.integers(54, 10**6),
                         st.floats(allow_nan=True, allow_infinity=True))
        return fixed, rand
    return Kind("format", make)


def _columns(like, *, d_bad):
    """A (d, n) sequence or a (B, d, n) batch of finite reals (``d_bad``: a wrong width)."""
    def make(valid):
        base = np.asarray(like, dtype=np.float64)
        r, c = base.shape
        fixed = _types() + [base.astype(complex) + 1j, np.full(base.shape, "a"), [[1.0, 2.0], [3.0]],
                            np.array(1.0), base[0].copy(), base[None, None].copy(), np.ones((0, c)),
                            np.ones((r, 0)), np.ones((2, r, 0)), np.full((d_bad, c), 0.5),
                            np.full((2, d_bad, c), 0.5)]
        fixed += [_put(base, 0, 0, float(x)) for x in ("nan", "inf", "-inf")]
        rand = st.builds(_put, st.just(base), st.integers(0, r - 1), st.integers(0, c - 1),
                         _nonfinite(("nan", "inf", "-inf")))
        return fixed, rand
    return Kind("sequence or batch", make)


def _points(like):
    """A (B, d, n) batch of points."""
    base = np.asarray(like, dtype=np.float64)
    nan = base.copy()
    nan[0, 0, 0] = np.nan
    return custom("batch of points", _types() + [base.astype(complex), np.full(base.shape, "a"), base[0].copy(),
                                               base[:, 0].copy(), base[None].copy(), np.ones((0, 1, 2)),
                                               np.ones((3, 1, 0)), np.ones((3, 2, 2)), nan])


_FMT = _fmt()
_MODE = choice(sattn.MODES)
_MODEL_BAD = ["abc", None, 5, {"a": 1}, _ffn(), _head(), _APPROX, [_MEM]]
_MODEL = custom("model", _MODEL_BAD)
_CM = custom("model", _MODEL_BAD + [_MEM, _TWO])
_APPROX_BAD = custom("approximation", ["abc", None, 5, {"a": 1}, _report(), _A8, _MEM])
_DRAWS = dict(rng=rng(), trials=integer(low=1), d=integer(low=1), max_heads=integer(low=1),
              max_s=integer(low=1), bound=integer(low=1))
_HM = dict(trials=2, d=1, max_heads=2, max_s=2, bound=2)
_CHECK = custom("callable", ["abc", None, 5, {"a": 1}, [len], 1 + 2j])

# ---- rounding bounds, certified decisions, canonical factorizations (sattn.rounding, sattn.linalg)
spec("gamma", lambda: dict(n=10, u=2.0 ** -53), n=integer(low=0), u=real(low=0.0, high=0.5, low_open=True))
spec("product_error_bound", lambda: dict(X1=np.ones((3, 2)), X2=np.ones((4, 2)), u=2.0 ** -24),
     X1=matrix(shapes=[(3, 3)]), X2=matrix(shapes=[(4, 3)]), u=real(low=0.0, high=0.5, low_open=True))
spec("certify", lambda: dict(margin=0.5, bound=1e-12, exact=None),
     margin=real(inf_bad=False), bound=real(low=0.0, inf_bad=False),
     exact=custom("callable or None", ["abc", 5, {"a": 1}, [len]]))
spec("first_of_largest", lambda: dict(values=np.array([1.0, 3.0, 3.0]), tol=0.0),
     values=vector(nonfinite=("nan",), sized=False), tol=real(low=0.0),
     prefer=custom("boolean mask of the values' shape", ["abc", [1, 0, 0], [True, False],
                                                         np.ones((3, 1), bool)]))
spec("below_bound", lambda: dict(value=1e-15, bound=1e-13), value=real(low=0.0),
     bound=real(low=0.0, low_open=True))
spec("correctly_rounded", lambda: dict(name="log", x=np.array([0.5, 2.0])), name=choice(sattn.rounding.ELEMENTARY),
     x=custom("array in the domain", _types() + [np.array([1 + 1j]), np.full(2, "a"), np.array([0.5, math.nan]),
                                                 np.array([-1.0, 2.0]), np.array([0.0])]))
spec("portable_exp", lambda: dict(x=np.array([0.5, -3.0])),
     x=custom("real array", _types() + [np.array([1 + 1j]), np.full(2, "a"), [[1.0, 2.0], [3.0]],
                                        np.array([1, "a"], dtype=object)]))
spec("log_below", lambda: dict(x=np.array([0.5, 0.1])),
     x=custom("positive array", _types() + [np.array([1 + 1j]), np.full(2, "a"), np.array([0.5, math.nan]),
                                            np.array([-1.0, 2.0]), np.array([0.0])]))
spec("canonical_svd", lambda: dict(B=_G4(), rtol=1e-9), B=matrix(square=True),
     rtol=real(low=0.0, high=1e-3, low_open=True))
spec("ordered_matmul", lambda: dict(A=np.ones((3, 2)), B=np.ones((2, 4)), dtype=np.float32),
     A=custom("matrix", _types() + [np.array([1 + 1j]), np.full((3, 2), "a"), np.ones(2), np.ones((3, 3))]),
     B=custom("matrix", _types() + [np.full((2, 4), "a"), np.ones(2), np.ones((3, 4))]),
     dtype=custom("float dtype", [5, np.int64, np.complex128, "abc"]))

spec("float_format", lambda: dict(fmt="float16"), fmt=_FMT)
spec("round_to", lambda: dict(x=np.array([1 / 3, -2.0, np.inf]), fmt=11),
     x=custom("array", _types() + [np.array([1 + 1j]), np.full(3, "a"), [[1.0, 2.0], [3.0]], [None, 1.0],
                                   np.array([1, "a"], dtype=object)]), fmt=_FMT)
spec("FormatArithmetic", lambda: dict(fmt="bfloat16"), fmt=_FMT)
spec("FloatFormat", lambda: dict(name="12-bit", bits=12, max=math.inf, accumulate="float64"),
     name=string(nonempty=True), bits=integer(low=2, high=53),
     max=custom("positive real or inf", _types(extra=["1.0"]) + [math.nan, True, 0.0, -1.0, -math.inf]),
     accumulate=choice(("float32", "float64")))
spec("attention_matrix_in", lambda: dict(X=_X(), W_Q=_W(), W_K=_W(), fmt="float16", causal=False),
     **_XWW, fmt=_FMT)
spec("column_attention_in", lambda: dict(Z=_Z(), heads=[_head()], fmt="float16", kind="softmax"),
     Z=_columns(_Z(), d_bad=3), heads=HEADS_BAD, fmt=_FMT, kind=choice(("softmax", "hardmax")))
spec("feed_forward_in", lambda: dict(H=_Z(), ffn=_ffn(), fmt="float16"),
     H=_columns(_Z(), d_bad=3), ffn=FFN_BAD, fmt=_FMT)
spec("model_in", lambda: dict(model=_MEM, X=_Xs()[0], fmt="float16"),
     model=_MODEL, X=_columns(_Xs()[0], d_bad=3), fmt=_FMT)
spec("round_model", lambda: dict(model=_MEM, fmt="float16"), model=_MODEL, fmt=_FMT)
spec("algorithm1_precision", lambda: dict(approx=_APPROX, A=_A8, fmt="float16", mode="forward"),
     approx=_APPROX_BAD, A=matrix("target pattern", **TARGET, shapes=[(4, 4), (9, 9)]), fmt=_FMT, mode=_MODE)
spec("algorithm1_bits_needed", lambda: dict(approx=_APPROX), approx=_APPROX_BAD)
spec("hardmax_precision", lambda: dict(rng=_rng(), fmt="float16", mode="forward", **_HM), 4,
     **_DRAWS, fmt=_FMT, mode=_MODE)
spec("hardmax_bits_needed", lambda: dict(rng=_rng(), **_HM), 4, **_DRAWS)
spec("contextual_precision", lambda: dict(cm=_MEM.attention, Xs=_Xs(), fmt="float16", mode="forward"),
     cm=_CM, Xs=SEQS_BAD, fmt=_FMT, mode=_MODE)
spec("contextual_bits_needed", lambda: dict(cm=_MEM.attention, Xs=_Xs()), cm=_CM, Xs=SEQS_BAD)
spec("memorization_precision", lambda: dict(model=_MEM, Xs=_Xs(), Ys=_Ys(), fmt="float16", mode="forward",
                                            tol=0.5),
     model=custom("model", _MODEL_BAD + [_MEM.attention, _TWO]), Xs=SEQS_BAD, Ys=LABELS_BAD, fmt=_FMT,
     mode=_MODE, tol=real(low=0.0, low_open=True))
spec("memorization_bits_needed", lambda: dict(model=_MEM, Xs=_Xs(), tol=0.5),
     model=custom("model", _MODEL_BAD + [_MEM.attention]), Xs=SEQS_BAD, tol=real(low=0.0, low_open=True))
spec("approximation_precision", lambda: dict(model=_TWO, f=np.square, U=_U, fmt="float16", mode="forward",
                                             reference=None, slack=1.25, p=2.0),
     model=custom("model", _MODEL_BAD + [_MEM, _MEM.attention]), f=callable_(), U=_points(_U), fmt=_FMT,
     mode=_MODE, reference=real(low=0.0, none_ok=True), slack=real(low=0.0, low_open=True), p=real(low=1.0))
spec("smallest_bits", lambda: dict(check=lambda p: p >= 10, low=2, high=20),
     check=_CHECK, low=integer(low=2, high=53), high=integer(low=2, high=53))
spec("smallest_format", lambda: dict(check=lambda f: f != "float16"), check=_CHECK)


# ---- the width x bits bound (sattn.patterns.supports, sattn.frontier, row types of the model)
spec("support_count", lambda: dict(L=5, k=2, causal=False),
     L=integer("size", low=2, huge=10**18), k=integer(low=1, high=5), causal=boolean())
spec("width_bits_lower_bound", lambda: dict(L=64, k=2, causal=False),
     L=integer("size", low=2, huge=10**18), k=integer(low=1, high=64), causal=boolean())
spec("enumerate_supports", lambda: dict(L=4, k=1, causal=False),
     L=integer("size", low=2, high=8), k=integer(low=1, high=4), causal=boolean())
spec("regular_pattern", lambda: dict(L=6, k=2, rng=_rng(), normalize=True, as_csr=False,
                                     structure="random"),
     L=integer("size", low=2, huge=10**12), k=integer(low=1, high=6), rng=rng(),
     structure=choice(("windows", "random")), **_OUT)
spec("nested_supports_example", lambda: dict(eps1=3.0, eps2=0.9), **_EPS)
_RT = dict(eps1=real("positive real", low=0.0, low_open=True),
           eps2=real("probability", low=0.0, high=1.0, low_open=True, high_open=True))
spec("regular_row_types", lambda: dict(L=10**9, k=2, gamma=2.0, eps1=1.0, eps2=0.5, rng=_rng()),
     L=integer("size", low=4, high=2**53), k=integer(low=1, high=64), gamma=real(low=1.0),
     **_RT, rng=rng())
spec("stream_regular_blocks", lambda: dict(L=8, k=2, gamma=2.0, rng=_rng(), block_rows=4),
     L=integer("size", low=2, high=2**53), k=integer(low=1, high=8), gamma=real(low=1.0),
     rng=rng(), block_rows=integer(low=1, high=1 << 24))


def _blocks():
    return list(sattn.stream_regular_blocks(8, 2, 2.0, np.random.default_rng(0), block_rows=4))


_BLOCKS_BAD = custom("blocks", ["abc", 5, None, {"a": 1}, [5], [(0,)], [("a", np.eye(8))],
                                [(0, np.eye(8))], [(True, None)], [],
                                [(0, sps.csr_array(np.eye(4)))],
                                [(1, sps.csr_array(np.eye(8)))],
                                [(0, sps.csr_array(-np.eye(8)))],
                                [(0, sps.csr_array(np.zeros((8, 8))))]])
spec("row_types_from_blocks", lambda: dict(blocks=_blocks(), L=8, eps1=1.0, eps2=0.5),
     blocks=_BLOCKS_BAD, L=integer("size", low=4, high=2**53), **_RT)
spec("predict_d50", lambda: dict(A=_P16(), eps1=7.0, eps2=0.9, low=None, high=None, n_samples=256,
                                 seed=0),
     A=matrix("target pattern", **TARGET), **_EPS, low=integer(low=2, high=14, none_ok=True),
     high=integer(low=2, high=14, none_ok=True), n_samples=_SAMPLES, seed=integer(low=0),
     method=choice(("sampled", "exact")))


def _XB():
    B = sattn.logit_target(_A4(), 1.0, 0.5)
    return np.hstack([B, np.eye(4)])          # d = L = 4: the logits are B itself


_XB_BAD = matrix(shapes=[(4, 6), (1, 8)], like=np.zeros((4, 8)))
spec("fixed_point_bits", lambda: dict(X=_XB(), d=4, A=_A4(), eps1=1.0, eps2=0.5, low=2, high=53),
     X=_XB_BAD, d=integer(low=1, high=4), A=matrix("target pattern", **TARGET), **_EPS,
     low=integer(low=2, high=53), high=integer(low=2, high=53))
def _R4():
    return sattn.regular_pattern(4, 1, np.random.default_rng(0))   # the frontier's class: k equal
#                                                                     nonzeros in every row


def _XR():
    return np.hstack([sattn.logit_target(_R4(), 1.0, 0.5), np.eye(4)])


spec("float_format_bits", lambda: dict(X=_XR(), d=4, A=_R4(), eps1=1.0, eps2=0.5, high=53,
                                       block_rows=None),
     X=_XB_BAD, d=integer(low=1, high=4), A=matrix("target pattern", **TARGET), **_EPS,
     high=integer(low=2, high=53), block_rows=integer(low=1, none_ok=True))
spec("round_fixed", lambda: dict(X=np.array([0.3, -1.2, 0.0]), bits=6, scale=2.0),
     X=custom("array", _types() + [np.array([1 + 1j]), np.full(3, "a"), [[1.0, 2.0], [3.0]],
                                   np.array([np.nan]), np.array([np.inf])]),
     bits=integer(low=2, high=53), scale=real(low=0.0, low_open=True))
spec("load_width_bits", lambda: dict(data_dir=os.path.join(ROOT, "data")), data_dir=path())


# ---- codes for the book's weights (sattn.codes)
def _perm8():
    return sattn.regular_pattern(8, 1, np.random.default_rng(0))


def _pair8():
    return sattn.regular_pattern(8, 2, np.random.default_rng(0), structure="random")


def _sign8():
    return sattn.sign_code_input(_perm8())


_LK = dict(L=integer("size", low=2, high=2**53), k=integer(low=1, high=63))
spec("book_weights_bound", lambda: dict(L=64, k=2), **_LK)
spec("antichain_length", lambda: dict(L=1000), L=integer("size", low=1, high=2**62))
spec("bilinear_min_bits", lambda: dict(L=64, k=1, d_hid=3), **_LK, d_hid=integer(low=1))
spec("bilinear_bound", lambda: dict(L=64, k=1, max_width=64), **_LK,
     max_width=integer(low=1, high=10**6))
spec("serving_obstruction", lambda: dict(Q=_sign8().Q, K=_sign8().K, A=_perm8()),
     Q=matrix(shapes=[(8, 2), (7, 3)]), K=matrix(shapes=[(8, 2), (7, 3)]),
     A=matrix("target pattern", **TARGET))
for _f in ("sign_code_input", "constant_weight_input"):
    spec(_f, lambda: dict(A=_perm8()), A=matrix("target pattern", **TARGET))
for _f in ("column_cycles", "cycle_code_input"):
    spec(_f, lambda: dict(A=_pair8()), A=matrix("target pattern", **TARGET))
spec("hash_code_input", lambda: dict(A=_pair8(), q=None, seed=0, max_blocks=200, block_rows=256),
     A=matrix("target pattern", **TARGET), q=integer(low=3, high=1024, none_ok=True),
     seed=integer(low=0), max_blocks=integer(low=1, high=10_000), block_rows=integer(low=1))
spec("check_code_input", lambda: dict(code=_sign8(), A=_perm8(), eps1=3.0, eps2=0.9, method="auto",
                                      float_format=True),
     code=custom("code", ["abc", None, 5, {"a": 1}, _perm8()]), A=matrix("target pattern", **TARGET),
     **_EPS, method=choice(("auto", "enumerate", "blocks")), float_format=boolean())
spec("load_width_codes", lambda: dict(data_dir=os.path.join(ROOT, "data")), data_dir=path())


# =============================================================================== classifying a call
def names_argument(message: str, param: str) -> bool:
    """Whether ``message`` names ``param`` as a word (``A[0, 1]`` and ``ffn.W1`` name A and ffn)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


@contextlib.contextmanager
def _memory_guard(headroom=2 << 30):
    """Cap the address space at the current size plus ``headroom`` for one call, so that a bad size
    that slips through ends in a quick MemoryError (a failure) instead of swapping the machine."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not Linux/macOS
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - no procfs
        yield
        return
    cap = size + headroom
    for lim in (soft, hard):
        if lim != resource.RLIM_INFINITY:
            cap = min(cap, lim)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _short(value) -> str:
    if isinstance(value, np.ndarray):
        text = f"array(shape={value.shape}, dtype={value.dtype}, {np.array2string(value.ravel()[:4], threshold=4)})"
    else:
        text = repr(value)
        text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return text if len(text) <= 80 else text[:77] + "..."


def _call(fn, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            with _memory_guard():
                return fn(**kwargs)
        finally:
            plt.close("all")


def classify(fn, kwargs: dict, param: str) -> tuple[bool, str]:
    """Call ``fn(**kwargs)``, in which ``kwargs[param]`` is bad. Returns (named, what happened)."""
    try:
        _call(fn, kwargs)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if names_argument(msg, param):
            return True, f"{type(exc).__name__}: {msg}"
        return False, f"{type(exc).__name__} not naming {param!r}: {msg[:150]}"
    except Exception as exc:  # noqa: BLE001 - every other exception is a failure, and is reported
        return False, f"{type(exc).__name__}: {str(exc)[:150]}"
    return False, "no error: the bad value was accepted"


# =============================================================================== the tests
def test_every_public_name_is_covered_or_excluded():
    """A name added to ``sattn.__all__`` must get a spec here or an entry in EXCLUDED."""
    public = set(sattn.__all__)
    covered, excluded = set(SPECS), set(EXCLUDED)
    assert not covered & excluded, f"both covered and excluded: {sorted(covered & excluded)}"
    assert public - covered - excluded == set(), (
        f"public names neither fuzzed nor excluded: {sorted(public - covered - excluded)}")
    assert covered | excluded <= public, f"not public (stale): {sorted((covered | excluded) - public)}"
    for name, (valid, kinds) in SPECS.items():
        params = [p for p in inspect.signature(getattr(sattn, name)).parameters.values()]
        names = {p.name for p in params if p.kind is not p.VAR_KEYWORD}
        var_kw = [p.name for p in params if p.kind is p.VAR_KEYWORD]
        missing = {n for n in names if n not in kinds and (name, n) not in NOT_FUZZED}
        assert not missing, f"{name}: parameters without a kind: {sorted(missing)}"
        extra = set(kinds) - names
        if var_kw and (name, var_kw[0]) not in NOT_FUZZED:  # **controls: their keys are parameters
            extra -= set(valid())
        assert not extra, f"{name}: kinds for unknown parameters: {sorted(extra)}"


def test_every_exclusion_is_what_it_says():
    """An excluded name is what its reason says it is (a reason cannot hide a callable to fuzz)."""
    for name, reason in EXCLUDED.items():
        obj = getattr(sattn, name)
        if reason.startswith("result class"):
            assert isinstance(obj, type) and issubclass(obj, sattn.Result) and obj is not sattn.Result, name
        elif reason.startswith("base class of the result protocol"):
            assert obj is sattn.Result and not inspect.signature(obj).parameters, name
        elif reason.startswith("exception class"):
            assert isinstance(obj, type) and issubclass(obj, Exception), name
        elif reason.startswith("dict constant"):
            assert isinstance(obj, dict) and not callable(obj), name
        elif reason.startswith("tuple constant"):
            assert isinstance(obj, tuple) and not callable(obj), name
        elif reason.startswith(("constants dataclass", "model", "record")):
            assert dataclasses.is_dataclass(obj) or isinstance(obj, type), name
            assert not issubclass(obj, sattn.Result), f"{name} is a Result: list it as a result class"
        else:
            raise AssertionError(f"{name}: the reason {reason!r} does not say what the name is")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_valid_call_succeeds_quickly(name):
    fn = getattr(sattn, name)
    valid, _ = SPECS[name]
    kwargs = valid()
    t0 = time.process_time()
    with matplotlib.rc_context():
        _call(fn, kwargs)
    assert time.process_time() - t0 < 0.5, f"{name}: the valid call is not cheap"


def leaky_boltzmann(a, *, dps=50):
    """Like the old ``boltzmann_mp`` on a bad precision: the error does not name ``dps``."""
    int(dps)
    return a


def test_the_classifier_can_fail():
    assert classify(leaky_boltzmann, {"a": [1.0], "dps": "x"}, "dps")[0] is False  # invalid literal for int()
    assert classify(lambda x: x, {"x": "bad"}, "x") == (False, "no error: the bad value was accepted")

    def warns(x):
        return np.log(np.array([x]))

    named, what = classify(warns, {"x": -1.0}, "x")
    assert not named and what.startswith("RuntimeWarning")

    def index_error(x):
        return [][x]

    assert classify(index_error, {"x": 3}, "x")[0] is False

    def named_ok(A):
        raise ValueError(f"A must be square, got {A!r}")

    assert classify(named_ok, {"A": 1}, "A")[0] is True
    assert not names_argument("Ab must be square", "A") and names_argument("A[0, 1] = -1", "A")
    assert classify(named_ok, {"A": 1}, "B")[0] is False


def _make_run(fixed, strategy, fn, valid, param, kind, name, tried, named, failures):
    cfg = settings(derandomize=True, database=None, deadline=None,
                   max_examples=EXAMPLES.get(name, MAX_EXAMPLES),
                   suppress_health_check=list(HealthCheck), print_blob=False,
                   phases=[Phase.explicit, Phase.generate] if strategy is not None else [Phase.explicit])

    def run(bad):
        kwargs = valid()
        kwargs[param] = bad
        ok, what = classify(fn, kwargs, param)
        tried[kind.label] += 1
        if ok:
            named[kind.label] += 1
        else:
            failures.append(f"{name}({param}={_short(bad)}): {what}")

    run = given(bad=strategy if strategy is not None else st.sampled_from(fixed))(run)
    for value in reversed(fixed):
        run = example(bad=value)(run)
    return cfg(run)


def _fuzz():
    """Run every bad call; return (tried per kind, named per kind, failures)."""
    tried = Counter()
    named = Counter()
    failures = []
    for name in sorted(SPECS):
        fn = getattr(sattn, name)
        valid, kinds = SPECS[name]
        base = valid()
        for param in sorted(kinds):
            kind = kinds[param]
            fixed, strategy = kind.make(base.get(param))
            _make_run(fixed, strategy, fn, valid, param, kind, name, tried, named, failures)()
    return tried, named, failures


@pytest.mark.reliability
@pytest.mark.slow
def test_fuzz_the_public_api():
    with matplotlib.rc_context():
        tried, named, failures = _fuzz()
    n_tried, n_named = sum(tried.values()), sum(named.values())
    per_kind = {k: {"tried": tried[k], "named": named[k]} for k in sorted(tried)}
    by_place = defaultdict(int)
    for f in failures:
        by_place[f.split("=", 1)[0]] += 1
    record(
        "fuzz-api",
        title="Bad input to the public API of sattn: calls that raised a named error "
              "(ValueError/TypeError naming the argument)",
        tried=n_tried, passed=n_named, unit="calls", test="tests/package/test_fuzz_api.py",
        details={"functions": len(SPECS), "parameters": sum(len(k) for _, k in SPECS.values()),
                 "excluded": sorted(EXCLUDED), "per_kind": per_kind,
                 "failing_parameters": dict(sorted(by_place.items()))},
        failures=failures,
    )
    assert n_tried > 0
    assert not failures, (f"{len(failures)} of {n_tried} bad calls did not raise a named error:\n"
                          + "\n".join(failures))


# =============================================================================== huge sizes (issue 21)
#: A huge value for every integer parameter that sizes an array, a loop or a precision: each must
#: be refused with sattn.SizeTooLargeError (naming the parameter) in under HUGE_SECONDS and with
#: less than HUGE_BYTES allocated, before any work. Parameters whose spec gives an upper bound
#: (``integer(high=...)``) are capped there; the others are listed here or in NO_CAP.
_B9, _B12, _B400 = 10**9, 10**12, 10**400
HUGE = {
    ("support_count", "L"): 10**9,
    ("regular_pattern", "L"): 10**12,
    ("width_bits_lower_bound", "L"): 10**400,
    **{("FastEngine", p): _B9 for p in ("batch", "candidates", "first_block", "max_block")},
    ("approximate", "max_draws"): _B12,
    **{(f, "L"): _B9 for f in ("band_pattern", "block_pattern", "strided_pattern", "sample_sparse",
                                "permutation_pattern", "sample_stiefel")},
    ("boltzmann_mp", "dps"): 10**6,
    ("causal_mask", "L"): 10**5,
    **{(f, "n_draws"): _B9 for f in ("check_error_model", "check_offsupport_max",
                                      "check_row_dependence", "check_success_probability",
                                      "reference_level")},
    **{(f, "n_draws"): _B400 for f in ("naive_dmin", "predict_dmin", "predict_setup")},
    **{(f, p): _B9 for f in ("check_hardmax_counterexample", "hardmax_precision", "hardmax_bits_needed")
       for p in ("trials", "d", "max_heads", "max_s", "bound")},
    ("default_max_draws", "L"): _B400,
    ("figure_to_png", "dpi"): 10**6,
    ("precomputed_explorer", "dpi"): 10**6,
    ("panel_figure", "dpi"): 10**6,
    ("panel_figure", "n"): 10**6,
    ("panel_figure", "columns"): 10**6,
    ("fixed_weights", "d"): _B9,
    ("hardmax_counterexample", "d"): _B9,
    **{(f, "max_draws"): _B12 for f in ("interpolating_ffn", "projection_vector",
                                         "rank_one_contextual_mapping")},
    **{(f, "s"): _B9 for f in ("memorize", "memorize_with_positions", "rank_one_contextual_mapping")},
    ("optimize_logits", "maxiter"): _B12,
    ("optimize_logits", "restarts"): _B12,
    ("quantizer_ffn", "K"): _B9,
    ("subplots", "nrows"): 10**5,
    ("subplots", "ncols"): 10**5,
    ("theorem1_crossover", "k"): _B400,
    **{("theorem2_constants", p): _B400 for p in ("n", "vocabulary_size", "d")},
    ("two_layer_approximation", "K"): _B9,
    ("two_layer_approximation", "n"): _B9,
    ("two_layer_approximation", "samples"): _B12,
}

#: Integer parameters without a cap, and why none is needed (no array, loop or precision grows
#: with them, or they are clipped).
NO_CAP = {
    ("gamma", "n"): "a number in a closed formula (n u / (1 - n u)); n u >= 1/2 is refused",
    ("predict_d50", "seed"): "a seed of the random stream, not a size",
    ("hash_code_input", "seed"): "a seed of the hashes, not a size",
    ("hash_code_input", "block_rows"): "rows checked at a time, clipped to L by slicing",
    ("float_format_bits", "block_rows"): "rows computed at a time, clipped to L by slicing",
    ("bilinear_min_bits", "d_hid"): "a number in a closed formula (no loop grows with it)",
    ("adaptive_lambda", "n"): "a number in a closed formula (ln n)",
    ("theorem1_bound", "L"): "a number in a closed formula (ln L)",
    ("theorem1_constants", "L"): "a number in a closed formula (ln L)",
    ("check_approximation", "block_rows"): "clipped to L (rows processed at a time)",
    **{(f, "rows"): "clipped to L / (2 k)" for f in ("check_error_model", "check_offsupport_max",
                                                    "check_row_dependence")},
    ("check_k_nonzero_bounded", "k"): "a threshold compared with counts",
    ("validate_k_nonzero_bounded", "k"): "a threshold compared with counts",
    ("judge_laws", "fit_max"): "a threshold on L",
    ("judge_laws", "predict_min"): "a threshold on L",
    ("smallest_width", "low"): "bisection: log2(high - low) calls of the caller's function",
    ("smallest_width", "high"): "bisection: log2(high - low) calls of the caller's function",
    **{(f, p): "a seed, not a size" for f, p in (
        ("check_success_probability", "root_seed"), ("check_success_probability", "seed"),
        ("compare_measured", "root_seed"), ("compare_measured", "seed"),
        ("draw_generator", "root_seed"), ("draw_success_probability", "seed"),
        ("predict_dmin", "seed"), ("predict_setup", "root_seed"), ("predict_setup", "seed"),
        ("sample_target", "root_seed"))},
}

HUGE_SECONDS = 2.0
HUGE_BYTES = 1 << 30


def _engine():
    return sattn.FastEngine(_A4(), 1.0, 0.5)


#: Huge sizes that are not one integer argument of a spec: (label, call, the parameter named).
HUGE_EXTRA = [
    ("sample_sparse(as_csr=True, L=10**9)",
     lambda: sattn.sample_sparse(10**9, 2, 2.0, _rng(), as_csr=True), "L"),
    ("band_pattern(L=20000, width=19000): 7.6e8 nonzeros",
     lambda: sattn.band_pattern(20000, 19000), "width"),
    ("strided_pattern(L=131072, count=131072, as_csr=True)",
     lambda: sattn.strided_pattern(131072, 1, 131072, as_csr=True), "count"),
    ("sample_sparse(L=131072, k=131072, as_csr=True)",
     lambda: sattn.sample_sparse(131072, 131072, 2.0, _rng(), as_csr=True), "k"),
    ("sample_stiefel(L=10**7, d=10**4)", lambda: sattn.sample_stiefel(10**7, 10**4, _rng()), "L"),
    ("two_layer_approximation(n=3, K=10**4): 1.7e11 cells",
     lambda: sattn.two_layer_approximation(np.square, 3, 10**4, _rng()), "K"),
    ("precomputed_explorer(grid={'a': range(10**7)})",
     lambda: sattn.precomputed_explorer(lambda a: "x", {"a": range(10**7)}), "grid"),
    ("precomputed_explorer(grid of 100 x 100 values)",
     lambda: sattn.precomputed_explorer(lambda a, b: "x", {"a": range(100), "b": range(100)}), "grid"),
    ("figure_to_png(20 x 20 inch figure, dpi=2400)",
     lambda: sattn.figure_to_png(Figure(figsize=(20, 20)), dpi=2400), "dpi"),
    ("subplots(100, 100)", lambda: sattn.subplots(100, 100), "ncols"),
    ("FastEngine(A).level(1, 10**12, ...)", lambda: _engine().level(1, 10**12, 0, (0,)), "n_draws"),
    ("FastEngine(A).level(1, 5, ..., batch=10**9)",
     lambda: _engine().level(1, 5, 0, (0,), batch=10**9), "batch"),
    ("default_max_draws(L=131072, Q=10**6)", lambda: sattn.default_max_draws(131072, 10.0**6), "Q"),
    ("reproduce(jobs=10**6)", lambda: sattn.reproduce("fig3", jobs=10**6, out=_TMP, progress=False), "jobs"),
    ("reproduce(workers=10**6)", lambda: sattn.reproduce("fig3", scheduler="local", workers=10**6,
                                                         out=_TMP, progress=False), "workers"),
]


def _huge_cases():
    cases = []
    for (name, param), value in sorted(HUGE.items(), key=lambda kv: kv[0]):
        valid = SPECS[name][0]

        def call(name=name, param=param, value=value, valid=valid):
            kwargs = valid()
            kwargs[param] = value
            return lambda: getattr(sattn, name)(**kwargs)
        cases.append((f"{name}({param}={'10**400' if value == _B400 else value:})", call, param))
    return cases + [(label, (lambda f=f: f), param) for label, f, param in HUGE_EXTRA]


def test_every_size_argument_has_a_huge_case_or_a_reason():
    """Every integer parameter of a spec without an upper bound is in HUGE (a cap) or NO_CAP."""
    unlisted, stale = [], []
    for name, (_, kinds) in sorted(SPECS.items()):
        for param, kind in sorted(kinds.items()):
            if kind.integer and kind.high is None and (name, param) not in HUGE | NO_CAP:
                unlisted.append(f"{name}({param})")
    for key in list(HUGE) + list(NO_CAP):
        if key[0] not in SPECS or key[1] not in SPECS[key[0]][1]:
            stale.append(key)
    assert not set(HUGE) & set(NO_CAP)
    assert not unlisted, f"size parameters with neither a huge case nor a reason: {unlisted}"
    assert not stale, f"HUGE/NO_CAP name parameters that no spec has: {stale}"


def _refuse(call, param):
    """Run ``call`` (built outside): it must raise SizeTooLargeError naming ``param``, fast and small."""
    import tracemalloc
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(), _memory_guard(headroom=HUGE_BYTES):
            warnings.simplefilter("error", RuntimeWarning)
            call()
    except sattn.SizeTooLargeError as exc:
        outcome = None if names_argument(str(exc), param) else f"message does not name {param!r}: {exc}"
    except Exception as exc:  # noqa: BLE001 - every other outcome is reported
        outcome = f"{type(exc).__name__}: {str(exc)[:150]}"
    else:
        outcome = "no error: the huge size was accepted"
    finally:
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        plt.close("all")
    if outcome is None and seconds > HUGE_SECONDS:
        outcome = f"refused, but after {seconds:.2f} s (more than {HUGE_SECONDS} s)"
    if outcome is None and peak > HUGE_BYTES:
        outcome = f"refused, but after allocating {peak / 2**20:.0f} MiB"
    return outcome


@pytest.mark.reliability
def test_huge_sizes_are_refused_quickly_and_named():
    failures = []
    cases = _huge_cases()
    with matplotlib.rc_context():
        for label, make, param in cases:
            outcome = _refuse(make(), param)
            if outcome is not None:
                failures.append(f"{label}: {outcome}")
    record(
        "fuzz-huge-sizes",
        title="Huge sizes given to the public API of sattn: calls refused at once with "
              "SizeTooLargeError naming the argument (under 2 s and 1 GiB)",
        tried=len(cases), passed=len(cases) - len(failures), unit="calls",
        test="tests/package/test_fuzz_api.py::test_huge_sizes_are_refused_quickly_and_named",
        details={"size_parameters": len(HUGE), "without_cap": len(NO_CAP), "extra_cases": len(HUGE_EXTRA)},
        failures=failures,
    )
    assert not failures, f"{len(failures)} of {len(cases)} huge sizes:\n" + "\n".join(failures)
