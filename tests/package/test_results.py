"""The result protocol (every report has ``ok``, a one-line ``message``, ``str``) and the claim
checker the chapters use: it passes true claims and names the failed one."""

import importlib
import re
from pathlib import Path

import numpy as np
import pytest

import sattn
from sattn import Result
from sattn.experiments import acceptance, prediction


class _Report:
    def __init__(self, ok, message):
        self.ok, self.message = ok, message


def test_check_passes_true_claims():
    sattn.check(True, "true")
    sattn.check(np.bool_(True), "numpy true")
    sattn.check(_Report(True, "fine"), "report ok")


def test_check_names_the_failed_claim():
    with pytest.raises(sattn.ClaimFailed, match="claim failed: rows sum to one"):
        sattn.check(False, "rows sum to one")
    with pytest.raises(sattn.ClaimFailed, match=r"criterion \(7\).*row 3 off by 0.2"):
        sattn.check(_Report(False, "row 3 off by 0.2"), "criterion (7)")


@pytest.mark.parametrize("bad", [1, 0.0, None, "yes", np.array([True, True])])
def test_check_refuses_non_boolean_conditions(bad):
    with pytest.raises(TypeError, match="must be a bool"):
        sattn.check(bad, "a claim")


def test_check_needs_a_claim():
    with pytest.raises(TypeError, match="non-empty string"):
        sattn.check(True, "  ")


# --------------------------------------------------------------------------- the result protocol
def _modules():
    pkg = Path(sattn.__file__).resolve().parent
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] != "__init__":
            yield importlib.import_module(".".join(parts))


#: Every report or result class of the package (a new one must be added here and to _instances).
RESULT_CLASSES = {
    "ApproximationReport", "Approximation", "OptimizedLogits", "WidthSearch", "PatternReport",
    "SeparationReport", "ContextualReport", "HardmaxReport", "ProjectionReport",
    "MemorizationReport", "UniversalApproximationReport", "DrawOutcome", "LevelResult",
    "PrecisionReport", "RowPrediction", "DrawPrediction", "DminPrediction", "ModelCheck",
    "Comparison", "LawJudgement", "NestedSupports", "BoxCoxProfile", "Decision", "Calibration",
    "Certified", "ModelTest", "RobustCalibration", "OutOfSampleDecision", "OutOfSampleResult",
    "RobustVerdict", "CodeInput", "CodeReport",
}


def _public_classes():
    seen = {}
    for mod in _modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if isinstance(obj, type) and obj.__module__ == mod.__name__:
                seen[name] = obj
    return seen


def test_every_report_class_is_a_result():
    classes = _public_classes()
    results = {n for n, c in classes.items() if issubclass(c, Result) and c is not Result}
    assert results == RESULT_CLASSES
    looks_like_a_report = {n for n in classes
                           if n != "Result" and re.search(r"(Report|Result|Outcome|Search)$", n)}
    assert looks_like_a_report <= results, looks_like_a_report - results


def _instances():
    rng = np.random.default_rng(0)
    A = sattn.sample_sparse(8, 2, 2.0, rng)
    appr = sattn.approximate(A, 1.0, 0.5, 8, rng=np.random.default_rng(1))
    X1 = np.array([[1.0, 0.0, 2.0], [0.0, 1.5, 0.0]])
    X2 = np.array([[1.0, 2.0, -1.0], [0.0, 0.0, 1.0]])
    labels = [np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)]
    eng = sattn.FastEngine(sattn.sample_sparse(64, 2, 2.0, rng), 7.0, 0.5)
    Ls = 2.0 ** np.arange(6, 16)
    P8 = sattn.regular_pattern(8, 1, np.random.default_rng(5))
    return [
        sattn.check_k_nonzero_bounded(A, 2),
        sattn.check_k_nonzero_bounded(np.ones((3, 3)), 1),
        sattn.check_approximation(appr.G, A, 1.0, 0.5),
        sattn.certify(0.5, 1e-12),
        sattn.certify(1e-14, 1e-12, exact=lambda: -1),
        appr,
        sattn.moment_curve_logits(A, 1.0, 0.5),
        sattn.smallest_width(lambda d: d >= 3, 1, 8),
        sattn.smallest_width(lambda d: False, 1, 8),
        sattn.tokenwise_separation([X1, X2]),
        sattn.tokenwise_separation([np.array([[1.0, 1.0], [0.0, 0.0]])]),
        sattn.contextual_mapping_report([X1, X2], [X1, X2], r=10.0, delta=1e-3),
        sattn.check_hardmax_counterexample(rng, trials=10),
        sattn.projection_vector(np.array([[1.0, 0.0], [0.0, 1.5], [2.0, 0.0], [-1.0, 1.0]]), rng)[1],
        sattn.memorize([X1, X2], labels, np.random.default_rng(2))[1],
        sattn.two_layer_approximation(lambda U: U ** 2, 2, 3, rng, samples=50)[1],
        eng.draw(40, sattn.draw_generator(0, (0,))),
        eng.level(40, 5, 0, (1,)),
        sattn.algorithm1_precision(appr, A, "float32"),
        prediction.row_pass_probability([1.5], 64, 16, 3.0, 0.9, n_samples=256),
        prediction.draw_success_probability(eng.target, 7.0, 0.5, 40, n_samples=256),
        prediction.predict_dmin(eng.target, 7.0, 0.5, [8, 16, 24, 32, 40], 3, n_samples=256),
        prediction.predict_dmin(eng.target, 7.0, 0.5, [8], 1, n_samples=256),
        prediction.check_row_dependence(64, 16, [1.5], n_draws=3, rows=4, rng=rng),
        prediction.compare_measured([{"setup": "k1-g1-e3-0.9", "L": 64, "n_draws": 7,
                                      "grid_start": 4, "grid_stop": 60, "grid_step": 4,
                                      "d_min": 16}], n_samples=256),
        sattn.nested_supports_example(3.0, 0.9),
        sattn.nested_supports_example(0.05, 0.9),
        sattn.judge_laws(np.repeat([64.0, 128.0, 256.0, 8192.0], 2),
                         np.repeat([10.0, 12.0, 14.0, 26.0], 2) * np.tile([0.98, 1.02], 4),
                         fit_max=256),
        acceptance.boxcox_profile(Ls, 20 * np.log(Ls) - 40, np.full(Ls.shape, 0.25)),
        acceptance.decide("s", Ls, 4 * (Ls ** 0.3 - 1) / 0.3, np.full(Ls.shape, 0.25), df=20),
        acceptance.Calibration("s", (64, 128), 2, {0.0: 0.5, 0.3: 1.0}),
        acceptance.model_test([1, 3], [4, 4], [0.3, 0.6], [0.0, 0.0], ["a", "a"], n_boot=99),
        acceptance.robust_verdict("s", Ls, 4 * (Ls ** 0.3 - 1) / 0.3, np.full(Ls.shape, 0.25), df=20),
        acceptance.RobustCalibration("s", (64, 128), 2, {("log", "probit", "probit"): {"reject": 0.05}}),
        acceptance.decide_out_of_sample({"log": {"pred": np.array([10.0, 11.0]), "cov": np.eye(2) * 0.01},
                                         "sqrt": {"pred": np.array([14.0, 16.0]), "cov": np.eye(2) * 0.01}},
                                        [10.1, 11.05], [0.04, 0.04]),
        acceptance.OutOfSampleResult(
            [("s", 65536), ("s", 131072)], {},
            {"registered": acceptance.decide_out_of_sample(
                {"log": {"pred": np.array([10.0, 11.0]), "cov": np.eye(2) * 0.01}},
                [10.1, 11.05], [0.04, 0.04])}),
        sattn.sign_code_input(sattn.regular_pattern(8, 1, rng)),
        sattn.check_code_input(sattn.sign_code_input(P8), P8, 3.0, 0.9),
    ]


def test_every_result_has_ok_a_one_line_message_and_prints_it():
    instances = _instances()
    assert {type(r).__name__ for r in instances} == RESULT_CLASSES
    for r in instances:
        name = type(r).__name__
        assert isinstance(r, Result), name
        assert type(r.ok) is bool, (name, type(r.ok))
        assert isinstance(r.message, str) and r.message.strip(), name
        assert "\n" not in r.message, (name, r.message)
        assert str(r) == r.message, name
        if r.ok:
            sattn.check(r, f"{name} passes check")
        else:
            with pytest.raises(sattn.ClaimFailed, match=re.escape(r.message)):
                sattn.check(r, f"{name} fails check")
    assert {r.ok for r in instances} == {True, False}      # both verdicts are exercised


def test_old_verdict_names_are_gone():
    """Every report says ``ok``; the module-specific names of the first edition (``success``,
    ``holds``) are gone, so a chapter cannot mix them."""
    rng = np.random.default_rng(0)
    A = sattn.sample_sparse(8, 2, 2.0, rng)
    X1 = np.array([[1.0, 0.0, 2.0], [0.0, 1.5, 0.0]])
    eng = sattn.FastEngine(sattn.sample_sparse(64, 2, 2.0, rng), 7.0, 0.5)
    for obj in [eng.level(40, 3, 0, (1,)), sattn.moment_curve_logits(A, 1.0, 0.5),
                sattn.contextual_mapping_report([X1], [X1], r=10.0)]:
        assert isinstance(obj.ok, bool)
        assert not hasattr(obj, "success") and not hasattr(obj, "holds"), type(obj).__name__
