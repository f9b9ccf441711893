"""Statistics over trials (issue 42): how much a figure would move if the agent ran again.

The data: per query, per trial (one run of the agent on it), the label points of each judge repeat (Solved 1,
Unsure 0.5, Unsolved 0; a failed judgement has no verdict and is left out). Two sources of noise sit in it, and
this module keeps them apart:

- over trials: the agent's (another run of the same agent draws another trajectory);
- over judge repeats: the judge's (the same answer judged again).

What is computed, and over what:

- SoPR over trials: the mean over queries of each query's mean points (its trials' means of their repeats), in
  percent; with every judgement decided it equals the mean of the trials' own SoPR. Its 95% interval is a
  percentile bootstrap clustered by query: queries are resampled with replacement, each with all its trials and
  repeats (stratified by group for the Average, as the Average is the mean of the group figures).
- A trial is Solved when its repeats' mean points are above one half (more Solved than not; Unsure counts half).
- pass@k (some of k trials Solved) and pass^k (all k Solved), k = 1..n, with the unbiased estimators from n
  trials of which c were Solved: 1 - C(n-c, k) / C(n, k) and C(c, k) / C(n, k) (tau-bench's pass^k).
- Flip rate: the share of queries (with two trials or more) whose trials do not all agree on Solved.
- Agent vs judge variance: a nested one-way analysis of variance: the judge's is the pooled variance of the
  repeats within a trial, the agent's the variance of the trial means within a query less the judge's share of
  it (clipped at 0).
- Paired comparison of two cells: the per-query difference of their means, its paired bootstrap interval over
  the shared queries (evaluation/scoring/paired.py); "settled" when the interval excludes 0.
- Smallest detectable difference (80% power, 5% two-sided, paired over queries): (z_0.975 + z_0.8) times the
  standard deviation of a query's difference over the square root of the queries. That standard deviation comes
  from a stated assumption (pass rate p in both cells, trials independent, correlation rho between the two
  cells' verdicts on a query: 2 p (1 - p) (1 - rho) / trials), or from observed variances (a pilot): a part
  between queries, which more trials do not shrink, and a part within (trial to trial), divided by the trials.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .paired import CHUNK, RESAMPLES, SEED, PairedDifference, paired_bootstrap

# what the figures over trials are, said once: the tables, the report, the matrix and the docs quote it
OVER_TRIALS = ("SoPR over trials is the mean over queries of each query's mean label points (its trials, each the "
               "mean of its judge repeats), [low, high] its 95% CI from a bootstrap clustered by query (a query "
               "resampled with all its trials and repeats); pass@k: some of k trials Solved, pass^k: all k Solved "
               "(unbiased estimators from the trials; a trial is Solved when its repeats' mean points are above "
               "0.5); flip rate: the queries whose trials disagree. Spread over trials is the agent's; spread over "
               "judge repeats (the ± of one trial's cells) is the judge's")
LEVEL = 0.95
POWER = 0.80
ALPHA = 0.05
SOLVED_ABOVE = 0.5  # a trial is Solved when its repeats' mean points are above this

# one query's verdicts: trials -> repeats -> points (0, 0.5 or 1); a failed judgement is left out
QueryPoints = Sequence[Sequence[float]]


def z_sum(power: float = POWER, alpha: float = ALPHA) -> float:
    """z_(1-alpha/2) + z_power: 2.80 for 80% power at 5% two-sided."""
    normal = statistics.NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


# ---------------------------------------------------------------- estimators


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that some of k trials drawn from n (c of them Solved) is Solved: 1 - C(n-c, k) / C(n, k)."""
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that every one of k trials drawn from n (c Solved) is Solved: C(c, k) / C(n, k) (pass^k)."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def trial_means(query: QueryPoints) -> list[float]:
    """Each trial's mean points over its repeats (a trial without a verdict is left out)."""
    return [statistics.fmean(repeats) for repeats in query if len(repeats)]


def query_mean(query: QueryPoints) -> float | None:
    means = trial_means(query)
    return statistics.fmean(means) if means else None


def solved_count(query: QueryPoints) -> tuple[int, int]:
    """(Solved trials, trials with a verdict) of one query."""
    means = trial_means(query)
    return sum(m > SOLVED_ABOVE for m in means), len(means)


def flips(query: QueryPoints) -> bool | None:
    """True: its trials disagree on Solved; None: fewer than two trials with a verdict."""
    solved, n = solved_count(query)
    return None if n < 2 else 0 < solved < n


# ---------------------------------------------------------------- variance: agent (trials) vs judge (repeats)


@dataclass(frozen=True)
class VarianceSplit:
    """Variances of one verdict's points (0..1 squared): ``agent`` between trials of a query, ``judge`` between
    repeats of a trial. None: not measured (one trial per query; one repeat per trial)."""

    agent: float | None
    judge: float | None

    @property
    def agent_share(self) -> float | None:
        if self.agent is None or self.judge is None or self.agent + self.judge == 0:
            return None
        return self.agent / (self.agent + self.judge)

    def text(self) -> str:
        if self.agent is None and self.judge is None:
            return "agent vs judge: not measured (one trial, one judge repeat)"
        parts = []
        share = self.agent_share
        if share is not None:
            parts.append(f"agent {100 * share:.0f}% vs judge {100 * (1 - share):.0f}% of a verdict's variance")
        agent = (f"agent SD {100 * math.sqrt(self.agent):.1f} points" if self.agent is not None else
                 "agent: not measured (one trial)")
        judge = (f"judge SD {100 * math.sqrt(self.judge):.1f} points" if self.judge is not None else
                 "judge: not measured (one repeat: the agent's figure holds the judge's noise too)")
        return "; ".join(parts + [agent, judge])

    def as_dict(self) -> dict:
        return {"agent": self.agent, "judge": self.judge, "agent_share": self.agent_share}


def variance_split(queries: Sequence[QueryPoints]) -> VarianceSplit:
    """The nested analysis of variance over queries -> trials -> repeats (see the module's docstring)."""
    within_ss, within_df = 0.0, 0
    inverse_repeats: list[float] = []
    between_ss, between_df = 0.0, 0
    for query in queries:
        trials = [list(r) for r in query if len(r)]
        for repeats in trials:
            if len(repeats) > 1:
                mean = statistics.fmean(repeats)
                within_ss += sum((x - mean) ** 2 for x in repeats)
                within_df += len(repeats) - 1
            inverse_repeats.append(1 / len(repeats))
        if len(trials) > 1:
            means = [statistics.fmean(r) for r in trials]
            grand = statistics.fmean(means)
            between_ss += sum((m - grand) ** 2 for m in means)
            between_df += len(means) - 1
    judge = within_ss / within_df if within_df else None
    if not between_df:
        return VarianceSplit(None, judge)
    trial_mean_var = between_ss / between_df  # = agent + judge / repeats
    judge_part = (judge or 0.0) * statistics.fmean(inverse_repeats)
    return VarianceSplit(max(0.0, trial_mean_var - judge_part), judge)


# ---------------------------------------------------------------- the clustered bootstrap


def clustered_interval(groups: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED,
                       level: float = LEVEL) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean over groups of each group's mean query figure, queries
    resampled with replacement within their group (one query's trials and repeats stay together: its figure is
    their mean). In the figures' own unit."""
    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not arrays:
        raise ValueError("no query to resample")
    rng = np.random.default_rng(seed)
    stats = np.zeros(resamples)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        for values in arrays:
            n = len(values)
            stats[start:start + size] += values[rng.integers(0, n, size=(size, n))].mean(axis=1)
    stats /= len(arrays)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


# ---------------------------------------------------------------- one group's (or the Average's) figures


@dataclass
class TrialStats:
    """What a leaderboard cell with trials reports, in percent (the Average: the mean of its groups' figures)."""

    sopr: float  # mean over queries of each query's mean points
    low: float  # 95% interval, bootstrap clustered by query
    high: float
    queries: int  # queries with a verdict in some trial
    trials: int  # the most trials any query has
    repeats: int  # the most judge repeats any trial has
    pass_at: dict[int, float] = field(default_factory=dict)  # k -> percent
    pass_hat: dict[int, float] = field(default_factory=dict)  # k -> percent (pass^k)
    flip_rate: float | None = None  # percent of the queries with two trials or more
    variance: VarianceSplit = field(default_factory=lambda: VarianceSplit(None, None))
    groups: int = 1  # groups averaged (the Average)

    def text(self) -> str:
        """``50.3 [45.1, 55.6]``: SoPR over trials and its 95% interval."""
        return f"{self.sopr:.1f} [{self.low:.1f}, {self.high:.1f}]"

    def as_dict(self) -> dict:
        return {"sopr": self.sopr, "ci95": [self.low, self.high], "queries": self.queries, "trials": self.trials,
                "repeats": self.repeats, "pass_at": {str(k): v for k, v in self.pass_at.items()},
                "pass_hat": {str(k): v for k, v in self.pass_hat.items()}, "flip_rate": self.flip_rate,
                "variance": self.variance.as_dict(), "groups": self.groups}

    @classmethod
    def from_dict(cls, data: Mapping) -> TrialStats:
        """As ``as_dict`` wrote it (KeyError, TypeError or ValueError for anything else: the reader names the file)."""
        variance = data.get("variance") or {}
        low, high = data["ci95"]
        return cls(sopr=float(data["sopr"]), low=float(low), high=float(high), queries=int(data["queries"]),
                   trials=int(data["trials"]), repeats=int(data["repeats"]),
                   pass_at={int(k): float(v) for k, v in data["pass_at"].items()},
                   pass_hat={int(k): float(v) for k, v in data["pass_hat"].items()},
                   flip_rate=None if data.get("flip_rate") is None else float(data["flip_rate"]),
                   variance=VarianceSplit(variance.get("agent"), variance.get("judge")),
                   groups=int(data.get("groups", 1)))


def pass_rates(queries: Sequence[QueryPoints], trials: int) -> tuple[dict[int, float], dict[int, float]]:
    """(pass@k, pass^k) for k = 1..trials in percent: the mean over the queries with at least k trials."""
    counts = [solved_count(q) for q in queries]
    at, hat = {}, {}
    for k in range(1, trials + 1):
        eligible = [(n, c) for c, n in counts if n >= k]
        if eligible:
            at[k] = 100 * statistics.fmean(pass_at_k(n, c, k) for n, c in eligible)
            hat[k] = 100 * statistics.fmean(pass_hat_k(n, c, k) for n, c in eligible)
    return at, hat


def group_stats(queries: Mapping[str, QueryPoints], *, resamples: int = RESAMPLES, seed: int = SEED) -> TrialStats:
    """One group's figures; ``queries``: query id -> trials -> repeats' points."""
    judged = [q for q in queries.values() if query_mean(q) is not None]
    if not judged:
        raise ValueError("no query with a verdict")
    means = [query_mean(q) for q in judged]
    low, high = clustered_interval([means], resamples=resamples, seed=seed)
    trials = max(len(trial_means(q)) for q in judged)
    at, hat = pass_rates(judged, trials)
    flipped = [f for f in (flips(q) for q in judged) if f is not None]
    return TrialStats(sopr=100 * statistics.fmean(means), low=100 * low, high=100 * high, queries=len(judged),
                      trials=trials, repeats=max(len(r) for q in judged for r in q),
                      pass_at=at, pass_hat=hat, flip_rate=100 * statistics.fmean(flipped) if flipped else None,
                      variance=variance_split(judged))


def average_stats(groups: Mapping[str, Mapping[str, QueryPoints]], *, resamples: int = RESAMPLES,
                  seed: int = SEED) -> TrialStats:
    """The Average over groups, as the leaderboard's: each figure the mean of the groups' (the interval from a
    bootstrap stratified by group), the variances pooled over every query."""
    per_group = {g: group_stats(q, resamples=resamples, seed=seed) for g, q in groups.items()
                 if any(query_mean(x) is not None for x in q.values())}
    if not per_group:
        raise ValueError("no query with a verdict")
    means = [[m for m in (query_mean(q) for q in groups[g].values()) if m is not None] for g in per_group]
    low, high = clustered_interval(means, resamples=resamples, seed=seed)
    stats = list(per_group.values())
    ks = sorted(set.intersection(*(set(s.pass_at) for s in stats)))
    flip = [s.flip_rate for s in stats if s.flip_rate is not None]
    return TrialStats(sopr=statistics.fmean(s.sopr for s in stats), low=100 * low, high=100 * high,
                      queries=sum(s.queries for s in stats), trials=max(s.trials for s in stats),
                      repeats=max(s.repeats for s in stats),
                      pass_at={k: statistics.fmean(s.pass_at[k] for s in stats) for k in ks},
                      pass_hat={k: statistics.fmean(s.pass_hat[k] for s in stats) for k in ks},
                      flip_rate=statistics.fmean(flip) if flip else None,
                      variance=variance_split([q for g in per_group for q in groups[g].values()]),
                      groups=len(per_group))


# ---------------------------------------------------------------- comparing two cells


def paired_trials(base: Mapping[str, QueryPoints], other: Mapping[str, QueryPoints], *,
                  resamples: int = RESAMPLES, seed: int = SEED) -> PairedDifference | None:
    """other - base over the queries both have a verdict for (their means over trials and repeats); None: none."""
    shared = [q for q in base if q in other and query_mean(base[q]) is not None and query_mean(other[q]) is not None]
    if not shared:
        return None
    return paired_bootstrap([query_mean(base[q]) for q in shared], [query_mean(other[q]) for q in shared],
                            resamples=resamples, seed=seed)


def settled(difference: PairedDifference) -> bool:
    """The paired interval excludes 0: the difference is larger than the noise, at the interval's level."""
    return difference.low > 0 or difference.high < 0


@dataclass(frozen=True)
class DifferenceVariance:
    """The variance of one query's difference between two cells (points, 0..1 squared): ``between`` queries (more
    trials leave it) and ``within`` (one trial to the next: divided by the trials). ``source`` says where it came
    from, for the sentence that states the assumption."""

    between: float
    within: float
    source: str
    trials_credited: bool = True  # False: a pilot of one trial cannot tell the two parts apart

    def per_query(self, trials: int) -> float:
        return self.between + self.within / trials


def assumed_variance(pass_rate: float = 0.5, correlation: float = 0.0) -> DifferenceVariance:
    """Both cells pass with ``pass_rate``, trials independent, ``correlation`` between the cells' verdicts on the
    same query: a query's difference has variance 2 p (1 - p) (1 - rho) per trial."""
    if not (0 <= pass_rate <= 1 and -1 <= correlation <= 1):
        raise ValueError("need 0 <= pass rate <= 1 and -1 <= correlation <= 1")
    return DifferenceVariance(0.0, 2 * pass_rate * (1 - pass_rate) * (1 - correlation),
                              f"assumed: pass rate {pass_rate:g} in both cells, trials independent, correlation "
                              f"{correlation:g} between the cells' verdicts on a query")


def observed_variance(base: Mapping[str, QueryPoints], other: Mapping[str, QueryPoints]) -> DifferenceVariance | None:
    """From a pilot's two cells: within = the mean over shared queries of each cell's variance of trial means
    (between its trials: the trials of two cells are independent, so the variances add); between = the variance
    of the per-query differences less within / the pilot's trials. One trial: nothing within can be told apart
    (all of it counted between queries, more trials not credited). None: fewer than two shared queries."""
    shared = [q for q in base if q in other and trial_means(base[q]) and trial_means(other[q])]
    if len(shared) < 2:
        return None
    diffs = [query_mean(other[q]) - query_mean(base[q]) for q in shared]
    total = statistics.variance(diffs)
    pairs = [(trial_means(base[q]), trial_means(other[q])) for q in shared]
    if all(len(a) > 1 and len(b) > 1 for a, b in pairs):
        within = statistics.fmean(statistics.variance(a) + statistics.variance(b) for a, b in pairs)
        pilot_trials = statistics.fmean(min(len(a), len(b)) for a, b in pairs)
        return DifferenceVariance(max(0.0, total - within / pilot_trials), within,
                                  f"observed in the pilot ({len(shared)} shared queries, {pilot_trials:g} trials)")
    return DifferenceVariance(total, 0.0, f"observed in the pilot ({len(shared)} shared queries, one trial: "
                              "more trials not credited)", trials_credited=False)


def detectable_difference(variance: DifferenceVariance, queries: int, trials: int, *, power: float = POWER,
                          alpha: float = ALPHA) -> float:
    """The smallest true difference, in SoPR points, that a paired comparison over ``queries`` queries and
    ``trials`` trials detects with ``power`` at ``alpha`` two-sided."""
    if queries < 1 or trials < 1:
        raise ValueError("need at least one query and one trial")
    return 100 * z_sum(power, alpha) * math.sqrt(variance.per_query(trials) / queries)


@dataclass(frozen=True)
class Needed:
    """What would detect an observed difference: ``trials`` in all (None: more trials alone would not), ``queries``
    in all at the current trials (None: no difference was observed)."""

    trials: int | None
    queries: int | None


MAX_NEEDED = 10**7  # a bound on the answer: beyond it "about M" says nothing


def needed_for(difference: float, variance: DifferenceVariance, queries: int, trials: int, *,
               power: float = POWER, alpha: float = ALPHA) -> Needed:
    """The trials (at these queries) or the queries (at these trials) at which ``difference`` (points, 0..100)
    becomes detectable with ``power``."""
    size = abs(difference) / 100
    if size == 0:
        return Needed(None, None)
    factor = z_sum(power, alpha) ** 2 / size**2
    more_queries = math.ceil(factor * variance.per_query(trials))
    needed_queries = min(MAX_NEEDED, max(queries, more_queries))
    needed_trials = None
    room = size**2 * queries / z_sum(power, alpha) ** 2 - variance.between  # what within / trials may take
    if variance.trials_credited and variance.within > 0 and room > 0:
        needed_trials = min(MAX_NEEDED, max(trials, math.ceil(variance.within / room)))
    elif variance.within == 0 and variance.between * factor <= queries:
        needed_trials = trials
    return Needed(needed_trials, needed_queries)
