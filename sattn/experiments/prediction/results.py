"""The result classes of the predictive model of d_min: a row, a draw, the search, a check.

References
----------
The model is the book's own (:ref:`ch-experiments`); the model itself is described in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...results import Result

__flat__ = ["DrawPrediction", "DminPrediction", "ModelCheck", "Comparison"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "RowPrediction"]


@dataclass
class RowPrediction(Result):
    """Model of one row: pass probability ``pi`` and its parts (see module docs).

    ``fail6`` is the probability that (6) fails, ``fail7`` that (6) holds and (7) fails;
    ``pi = 1 - fail6 - fail7``; ``se`` is the Monte Carlo standard error of ``pi``.
    """

    L: int
    d: int
    b: np.ndarray
    pi: float
    fail6: float
    fail7: float
    se: float
    n_samples: int

    @property
    def ok(self) -> bool:
        """The estimate is usable: a probability with a finite standard error."""
        return bool(0.0 <= self.pi <= 1.0 and np.isfinite(self.se))

    @property
    def message(self) -> str:
        return (f"row (k = {self.b.size}, L = {self.L}, d = {self.d}): pass probability "
                f"{self.pi:.6g} (fail (6) {self.fail6:.3g}, fail (7) {self.fail7:.3g}, MC se "
                f"{self.se:.2g}, {self.n_samples} samples)")


@dataclass
class DrawPrediction(Result):
    """Predicted probability ``p`` that one draw at width ``d`` is accepted (all rows pass).

    ``log_p = sum_l ln pi_l`` over the rows (assumption A2), ``expected_failures`` the expected
    number of failing rows ``sum_l (1 - pi_l)``, ``se_log_p`` a conservative Monte Carlo
    standard error of ``log_p`` (for ``method == "exact"``: the summed numerical error);
    ``types`` lists ``(sorted b, number of rows, pi)`` per row type, and ``row_failures`` (exact
    method only) each type's :class:`~sattn.experiments.prediction.row_exact.RowFailure`.
    """

    L: int
    d: int
    p: float
    log_p: float
    expected_failures: float
    se_log_p: float
    types: list = field(repr=False, default_factory=list)
    n_samples: int = 0
    method: str = "sampled"
    row_failures: list = field(repr=False, default_factory=list)

    @property
    def ok(self) -> bool:
        """The estimate is a probability (MC error finite)."""
        return bool(0.0 <= self.p <= 1.0 and np.isfinite(self.se_log_p))

    @property
    def message(self) -> str:
        return (f"L = {self.L}, d = {self.d}: predicted acceptance probability of one draw "
                f"{self.p:.4g} (expected failing rows {self.expected_failures:.3g}, "
                f"{len(self.types)} row types, se(ln p) {self.se_log_p:.2g})")


@dataclass
class DminPrediction(Result):
    """Predicted first-success width of the d_min search on a ladder of widths.

    ``widths`` and ``p`` are the widths evaluated (in order) and the predicted acceptance
    probability of one draw at each; ``stop`` the probability that the search stops at each
    width with ``n_draws`` draws per width (assumption A4); ``median`` and ``mean`` summarise
    that law (``mean`` conditional on stopping within the ladder; ``p_beyond`` is the probability
    of not stopping), ``q10``/``q90`` its 10% and 90% quantiles, and ``crossing`` is the first
    width where ``1 - (1 - p)^n >= 1/2``. ``ok`` says whether the ladder reaches the median.
    """

    L: int
    n_draws: int
    widths: list
    p: list
    stop: list
    median: int | None
    mean: float | None
    q10: int | None
    q90: int | None
    crossing: int | None
    p_beyond: float

    @property
    def ok(self) -> bool:
        return self.median is not None

    @property
    def message(self) -> str:
        if self.median is None:
            return (f"L = {self.L}, {self.n_draws} draws per width: the search is predicted to "
                    f"run past the ladder (P = {self.p_beyond:.3g}); no prediction")
        return (f"L = {self.L}, {self.n_draws} draws per width: predicted d_min median "
                f"{self.median} (10%-90%: {self.q10}-{self.q90}, mean {self.mean:.1f}, "
                f"1-(1-p)^n crosses 1/2 at {self.crossing})")


@dataclass
class ModelCheck(Result):
    """A numerical check of one assumption of the model: named numbers and a verdict.

    ``values`` maps names to numbers (floats or lists), ``claim`` says what ``ok`` asserts.
    """

    name: str
    values: dict
    ok: bool
    claim: str

    @property
    def message(self) -> str:
        def fmt(v):
            if isinstance(v, (list, tuple, np.ndarray)):
                return "[" + ", ".join(fmt(x) for x in v) + "]"
            if isinstance(v, (float, np.floating)):
                return f"{float(v):.4g}"
            return str(v)
        body = ", ".join(f"{k} = {fmt(v)}" for k, v in self.values.items())
        return f"{self.name}: {'holds' if self.ok else 'FAILS'} ({self.claim}): {body}"


@dataclass
class Comparison(Result):
    """Predicted vs measured d_min for a list of (setup, L) measurements.

    ``records`` holds one dict per measurement (``setup``, ``L``, ``n_draws``, ``measured``,
    ``predicted`` = the predicted median, ``q10``, ``q90``, ``rel_error`` =
    ``(predicted - measured) / measured``); ``tolerance`` is the largest relative error that
    ``ok`` allows.
    """

    records: list
    tolerance: float

    @property
    def max_abs_rel_error(self) -> float:
        return max(abs(r["rel_error"]) for r in self.records)

    @property
    def mean_rel_error(self) -> float:
        return float(np.mean([r["rel_error"] for r in self.records]))

    def per_setup(self) -> dict:
        """``{setup: (mean relative error, largest absolute relative error, count)}``."""
        out = {}
        for r in self.records:
            out.setdefault(r["setup"], []).append(r["rel_error"])
        return {k: (float(np.mean(v)), float(np.max(np.abs(v))), len(v)) for k, v in out.items()}

    @property
    def ok(self) -> bool:
        return bool(self.max_abs_rel_error <= self.tolerance)

    @property
    def message(self) -> str:
        return (f"{len(self.records)} measurements: predicted d_min within "
                f"{100 * self.max_abs_rel_error:.1f}% of the measured one everywhere (mean "
                f"relative error {100 * self.mean_rel_error:+.1f}%, tolerance "
                f"{100 * self.tolerance:.0f}%)")
