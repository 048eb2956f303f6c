"""Size caps that keep the book's sizes working, and answers that used to be silently wrong (issue 21).

- ``fit_dmin_log`` refuses a single distinct length as ``fit_law`` does (the slope is undetermined).
- ``default_max_draws`` at an astronomically large ``L`` is a named error, not an OverflowError.
- ``smallest_width``, ``smallest_bits`` and ``smallest_format`` need a real bool (or a
  PrecisionReport) from the caller's function: a string or None is a TypeError, not a verdict.
- The caps (sattn._validate) leave the sizes the chapters and experiments use alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import sattn
from sattn import _validate as V
from sattn.experiments.laws import fit_law
from sattn.experiments.protocol import fit_dmin_log


def test_fit_log_refuses_one_distinct_length_like_fit_law():
    with pytest.raises(ValueError, match="two distinct lengths"):
        fit_law("log", [2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="two distinct lengths"):
        fit_dmin_log([2, 2, 2], [1, 2, 3])
    a, b, r2 = fit_dmin_log([2, 2, 4], [1.0, 1.0, 2.0])      # two lengths suffice
    assert r2 == pytest.approx(1.0) and a == pytest.approx(1 / np.log(2))


def test_default_max_draws_of_a_huge_length_is_a_named_error():
    with pytest.raises(sattn.SizeTooLargeError, match=r"L = 1000.* at most 131072"):
        sattn.default_max_draws(10**400)
    with pytest.raises(sattn.SizeTooLargeError, match="Q = "):
        sattn.default_max_draws(65536, 1e300)
    assert sattn.default_max_draws(65536) == 65536
    assert sattn.default_max_draws(65536, 0.1) == 6554


@pytest.mark.parametrize("verdict", ["no", "", None, 1, 0, 1.0, [True], np.array([True])])
def test_smallest_width_needs_a_bool(verdict):
    with pytest.raises(TypeError, match=r"succeeds\(d\) must return a bool"):
        sattn.smallest_width(lambda d: verdict, 1, 4)


def test_smallest_width_takes_numpy_bools():
    assert sattn.smallest_width(lambda d: np.bool_(d >= 3), 1, 8).d == 3


@pytest.mark.parametrize("verdict", ["no", None, 1, 0.0, np.array([True, False])])
def test_smallest_bits_and_format_need_a_bool_or_a_report(verdict):
    with pytest.raises(TypeError, match="must return a PrecisionReport or a bool"):
        sattn.smallest_format(lambda f: verdict)
    with pytest.raises(TypeError, match="must return a PrecisionReport or a bool"):
        sattn.smallest_bits(lambda p: verdict)
    assert sattn.smallest_format(lambda f: np.bool_(f != "bfloat16")) is not None


def test_size_too_large_error_is_a_value_error_with_the_cap_and_the_reason():
    assert issubclass(sattn.SizeTooLargeError, ValueError)
    with pytest.raises(sattn.SizeTooLargeError) as info:
        sattn.causal_mask(10**5)
    msg = str(info.value)
    assert "L = 100000" in msg and "at most 65536" in msg and "GB" in msg
    assert V.MAX_DENSE_L == 23170 and V.MAX_DENSE_L**2 * 8 <= V.MAX_BYTES < (V.MAX_DENSE_L + 1)**2 * 8


@pytest.mark.slow
def test_the_caps_leave_the_books_sizes_alone():
    rng = np.random.default_rng(0)
    A = sattn.sample_sparse(65536, 4, 2.0, rng, as_csr=True)   # the experiments' largest L
    assert A.shape == (65536, 65536)
    assert sattn.band_pattern(32768, 2, as_csr=True).shape == (32768, 32768)
    assert sattn.permutation_pattern(V.MAX_DENSE_L, rng, as_csr=True).shape[0] == V.MAX_DENSE_L
    assert sattn.sample_stiefel(65536, 300, rng).shape == (65536, 300)
    assert sattn.causal_mask(4096).shape == (4096, 4096)
    assert sattn.boltzmann_mp([1.0, 2.0], dps=500) > 1
    rep = sattn.check_hardmax_counterexample(rng, trials=3, d=3)
    assert rep.trials == 3 and rep.ok, rep.message                # ran, all 3 trials, and holds
    assert sattn.quantizer_ffn(64).W1.shape[0] == 2 * 64
    T = sattn.make_tasks("decades", "paper", setups=["k1-g1-e3-0.9"], lengths=[32768])
    assert T and T[0].L == 32768
