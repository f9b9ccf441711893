"""Paired bootstrap and exact McNemar against values computed by hand."""

from __future__ import annotations

import pytest

from toolbench_adapter.evaluation.scoring.paired import mcnemar_exact, paired_bootstrap


@pytest.mark.parametrize(("a_only", "b_only", "expected"), [
    (0, 0, 1.0),  # no discordant pair: nothing to test
    (1, 5, 2 * (1 + 6) / 64),  # n=6: 2 * (C(6,0) + C(6,1)) / 2^6 = 0.21875
    (5, 1, 0.21875),  # symmetric in its arguments
    (0, 10, 2 / 1024),  # n=10: 2 * C(10,0) / 2^10
    (2, 2, 1.0),  # 2 * (1 + 4 + 6) / 16 > 1: capped
    (3, 12, 2 * (1 + 15 + 105 + 455) / 2**15),  # 0.03515625
])
def test_mcnemar_exact_matches_hand_computed_binomial_tails(a_only, b_only, expected):
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, abs=1e-12)


def test_mcnemar_refuses_negative_counts():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_bootstrap_of_a_constant_difference_is_that_difference():
    assert paired_bootstrap([0.0, 0.5, 0.0, 1.0], [1.0, 1.0, 0.5, 1.0]).mean == pytest.approx(0.5)
    constant = paired_bootstrap([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    assert (constant.mean, constant.low, constant.high) == (1.0, 1.0, 1.0)


def test_bootstrap_interval_of_three_queries_matches_the_exact_resampling_distribution():
    # differences (0, 0, 1): a resample's mean is 0 with probability (2/3)^3 = 0.296 > 0.025 and 1 with
    # probability 1/27 = 0.037 > 0.025, so the 2.5th and 97.5th percentiles are exactly 0 and 1
    result = paired_bootstrap([0, 0, 0], [0, 0, 1], resamples=20_000)
    assert result.mean == pytest.approx(1 / 3)
    assert (result.low, result.high) == (0.0, 1.0)
    assert result.n == 3


def test_bootstrap_sign_is_b_minus_a_and_seeded():
    a = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1]
    b = [0, 1, 0, 0, 0, 0, 1, 0, 0, 1]
    first = paired_bootstrap(a, b, seed=7)
    assert first.mean == pytest.approx(-0.4)  # four queries only a passes, none only b
    assert first.low <= first.mean <= first.high < 0.05
    assert paired_bootstrap(a, b, seed=7) == first  # same seed, same interval
    # a resampled mean of ten differences in {-1, 0} is a multiple of 0.1
    assert first.low * 10 == pytest.approx(round(first.low * 10))


def test_bootstrap_refuses_unpaired_or_empty_samples():
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
