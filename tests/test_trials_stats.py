"""Issue 42: the statistics over trials (toolbench_adapter/evaluation/scoring/trials.py), by property and by known
answers: pass@k / pass^k against exhaustive counting, the variance split, the clustered interval, the detectable
difference's 1/sqrt(queries x trials) and what ``needed_for`` promises."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench_adapter.evaluation.scoring import trials as T

counts = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))


@given(counts)
def test_the_estimators_are_the_exhaustive_counts_over_every_k_subset(case):
    n, c, k = case
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    some = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    every = sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert T.pass_at_k(n, c, k) == pytest.approx(some)
    assert T.pass_hat_k(n, c, k) == pytest.approx(every)


@given(counts)
def test_pass_at_grows_and_pass_hat_falls_with_k_and_both_start_at_the_solved_share(case):
    n, c, _ = case
    at = [T.pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [T.pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert at[0] == pytest.approx(c / n) == pytest.approx(hat[0])
    assert all(a <= b + 1e-12 for a, b in zip(at, at[1:], strict=False))
    assert all(a + 1e-12 >= b for a, b in zip(hat, hat[1:], strict=False))
    assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))


def test_impossible_counts_are_refused():
    for n, c, k in ((3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)):
        with pytest.raises(ValueError):
            T.pass_at_k(n, c, k)


points = st.sampled_from([0.0, 0.5, 1.0])
query = st.integers(1, 5).flatmap(lambda r: st.lists(st.lists(points, min_size=r, max_size=r), min_size=1,
                                                      max_size=5))


@given(st.lists(query, min_size=1, max_size=12))
def test_the_variances_are_never_negative_and_the_share_a_fraction(queries):
    split = T.variance_split(queries)
    for value in (split.agent, split.judge):
        assert value is None or value >= 0
    assert split.agent_share is None or 0 <= split.agent_share <= 1


@given(st.lists(st.lists(points, min_size=2, max_size=5), min_size=1, max_size=10), st.integers(2, 4))
def test_a_judge_that_repeats_itself_has_no_variance(trials_of_one_value, repeats):
    queries = [[[value] * repeats for value in trials] for trials in trials_of_one_value]
    assert T.variance_split(queries).judge == 0


@given(st.lists(st.lists(points, min_size=2, max_size=4), min_size=1, max_size=10), st.integers(2, 4))
def test_an_agent_that_repeats_itself_has_no_variance(repeats_of_a_query, trials):
    queries = [[list(repeats)] * trials for repeats in repeats_of_a_query]
    assert T.variance_split(queries).agent == 0


def test_one_trial_or_one_repeat_is_said_not_measured():
    split = T.variance_split([[[1.0]], [[0.0]]])
    assert split == T.VarianceSplit(None, None) and "not measured" in split.text()
    assert T.variance_split([[[1.0], [0.0]]]).judge is None


@given(st.lists(query, min_size=1, max_size=15), st.integers(0, 5))
@settings(max_examples=30, deadline=None)
def test_the_interval_holds_the_estimate_and_a_rerun_gives_the_same(queries, seed):
    data = {str(i): q for i, q in enumerate(queries)}
    stats = T.group_stats(data, resamples=400, seed=seed)
    assert stats.low - 1e-9 <= stats.sopr <= stats.high + 1e-9
    assert T.group_stats(data, resamples=400, seed=seed) == stats
    assert 0 <= stats.low <= stats.high <= 100


def test_known_answers_interval_holds_100p_pass_hat_is_p_to_the_k_and_pass_at_one_minus_its_complement():
    rng = random.Random(7)
    p, k, queries = 0.5, 5, 400
    data = {str(q): [[float(rng.random() < p)] for _ in range(k)] for q in range(queries)}
    stats = T.group_stats(data)
    assert stats.low <= 100 * p <= stats.high
    assert stats.pass_hat[k] == pytest.approx(100 * p**k, abs=2.5)
    assert stats.pass_at[k] == pytest.approx(100 * (1 - (1 - p) ** k), abs=2.5)
    assert stats.flip_rate == pytest.approx(100 * (1 - p**k - (1 - p) ** k), abs=5)
    assert stats.variance.agent == pytest.approx(p * (1 - p), abs=0.02)


def test_the_average_is_the_mean_of_its_groups_and_its_interval_is_stratified():
    a = {str(q): [[1.0], [1.0]] for q in range(10)}
    b = {str(q): [[0.0], [0.0]] for q in range(30)}
    stats = T.average_stats({"G1_instruction": a, "G1_category": b}, resamples=500)
    assert stats.sopr == 50 and stats.low == stats.high == 50  # each group constant: no spread at all
    assert stats.groups == 2 and stats.queries == 40 and stats.pass_hat[2] == 50


@given(st.integers(1, 400), st.integers(1, 20), st.floats(0.05, 0.95), st.floats(-0.9, 0.9))
def test_the_detectable_difference_shrinks_as_one_over_the_root_of_queries_times_trials(q, t, p, rho):
    variance = T.assumed_variance(p, rho)
    base = T.detectable_difference(variance, q, t)
    assert T.detectable_difference(variance, 4 * q, t) == pytest.approx(base / 2)
    assert T.detectable_difference(variance, q, 4 * t) == pytest.approx(base / 2)
    assert T.detectable_difference(variance, 2 * q, 2 * t) == pytest.approx(base / 2)


def test_the_detectable_difference_of_the_textbook_case():
    # 765 queries, one trial, p = 0.5, no correlation: 2.80 * sqrt(0.5 / 765) = 7.16 points
    assert T.detectable_difference(T.assumed_variance(), 765, 1) == pytest.approx(7.16, abs=0.01)


@given(st.floats(0.5, 60), st.floats(0.0, 0.2), st.floats(0.001, 0.5), st.integers(5, 300), st.integers(1, 10))
def test_what_needed_for_names_does_detect_the_difference(diff, between, within, q, t):
    variance = T.DifferenceVariance(between, within, "test")
    needed = T.needed_for(diff, variance, q, t)
    assert needed.queries is not None and needed.queries >= q
    if needed.queries < T.MAX_NEEDED:
        assert T.detectable_difference(variance, needed.queries, t) <= diff + 1e-9
        if needed.queries > q:
            assert T.detectable_difference(variance, needed.queries - 1, t) > diff
    if needed.trials is not None and needed.trials < T.MAX_NEEDED:
        assert T.detectable_difference(variance, q, needed.trials) <= diff + 1e-9
        if needed.trials > t:
            assert T.detectable_difference(variance, q, needed.trials - 1) > diff
    else:  # more trials alone cannot get there: the queries' own spread is too large
        assert needed.trials is None and T.detectable_difference(variance, q, 10**9) > diff - 1e-6


def test_no_difference_needs_no_number_and_a_one_trial_pilot_credits_no_trials():
    assert T.needed_for(0.0, T.assumed_variance(), 100, 1) == T.Needed(None, None)
    base = {str(q): [[float(q % 2)]] for q in range(20)}
    other = {str(q): [[float(q % 3 == 0)]] for q in range(20)}
    variance = T.observed_variance(base, other)
    assert not variance.trials_credited and variance.within == 0
    assert T.needed_for(10, variance, 20, 1).trials is None


def test_an_observed_pilot_splits_its_variance_between_and_within_queries():
    rng = random.Random(3)
    # no difference between queries at all: every query passes with 0.5 in both cells
    base = {str(q): [[float(rng.random() < 0.5)] for _ in range(4)] for q in range(300)}
    other = {str(q): [[float(rng.random() < 0.5)] for _ in range(4)] for q in range(300)}
    variance = T.observed_variance(base, other)
    assert variance.within == pytest.approx(0.5, abs=0.05) and variance.between < 0.03


def test_settled_means_the_interval_excludes_zero():
    a = {str(q): [[0.0], [0.0]] for q in range(30)}
    b = {str(q): [[1.0], [1.0]] for q in range(30)}
    assert T.settled(T.paired_trials(a, b))
    c = {str(q): [[float(q % 2)]] for q in range(30)}
    d = {str(q): [[float((q + 1) % 2)]] for q in range(30)} | {"only in d": [[1.0]]}
    difference = T.paired_trials(c, d)
    assert difference.n == 30 and not T.settled(difference)
    assert T.paired_trials(a, {"other": [[1.0]]}) is None
