"""Setting codes in words (sattn.describe_setup)."""

import pytest

import sattn


def test_every_setting_code_reads_back_its_parameters():
    for name, s in sattn.SETUPS.items():
        words = sattn.describe_setup(name)
        assert words == f"k = {s.k}, γ = {s.gamma:g}, ε₁ = {s.eps1:g}, ε₂ = {s.eps2:g}"
        assert sattn.describe_setup(s) == words
    assert sattn.describe_setup("k1-g1-e3-0.9") == "k = 1, γ = 1, ε₁ = 3, ε₂ = 0.9"


def test_an_unknown_code_is_named_with_the_valid_ones():
    with pytest.raises(sattn.ExperimentError, match="unknown setting code 'k9'.*k1-g1-e3-0.9"):
        sattn.describe_setup("k9")
