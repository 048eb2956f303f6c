"""The claim checker the chapters use: it passes true claims and names the failed one."""

import numpy as np
import pytest

import sattn


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
