"""SoPR and SoWR arithmetic, upstream's and corrected, each result labelled with how it was computed.

SoPR (``eval_pass_rate.py``): per repeat r, score_r = sum of label points (Solved 1, Unsure 0.5, else 0) / the
number of labelled queries; reported mean and population std of the score_r, times 100. ``upstream`` divides by
the *judged* queries, every answer file there is (STB issue #37); ``strict`` divides by the whole test set and counts a missing answer as
Unsolved. SoWR (``eval_preference.py``): a query is won when the output model got more rounds than the
reference; ``upstream`` = wins / all ids (a tie counts nothing), ``corrected`` counts a tie as half a win.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labels import Label

UPSTREAM, STRICT, CORRECTED = "upstream", "strict", "corrected"
MODE_NOTES = {
    ("SoPR", UPSTREAM): "Solved 1, Unsure 0.5; denominator = judged queries, every answer file (StableToolBench)",
    ("SoPR", STRICT): "Solved 1, Unsure 0.5; denominator = whole test set, missing answers Unsolved",
    ("SoWR", UPSTREAM): "wins / all ids, ties count 0 (StableToolBench)",
    ("SoWR", CORRECTED): "(wins + ties/2) / all ids",
    ("FAC", UPSTREAM): "final answers judged Solved / ids in the id file (fac_eval.py)",
    ("FAC", STRICT): "as upstream, but the judge sees the text inside the Finish arguments",
}


@dataclass
class Score:
    """A percentage: mean and population std over judge repeats (std 0 for single-number metrics)."""

    metric: str
    mode: str
    mean: float
    std: float = 0.0
    n: int = 0  # the denominator
    runs: list[float] = field(default_factory=list)
    errors: int = 0  # failed judgements (no verdict): left out of the score, counted here
    missing: int = 0  # test ids without an answer (strict only)
    ties: int = 0

    @property
    def note(self) -> str:
        return MODE_NOTES.get((self.metric, self.mode), self.mode)

    @property
    def single_repeat(self) -> bool:
        """One judge repeat: a std of 0 would claim a stability nobody measured."""
        return len(self.runs) == 1

    def text(self, with_std: bool = True) -> str:
        if with_std and not self.single_repeat:
            return f"{self.mean:.1f}±{self.std:.1f}"
        return f"{self.mean:.1f}"

    def as_dict(self) -> dict:
        return asdict(self)


def evaluate_times_of(labels: Mapping[str, Mapping[int, Label]]) -> int:
    """Upstream takes the repeat count from its CLI; a label file only tells the highest index seen."""
    return max((max(repeats) + 1 for repeats in labels.values() if repeats), default=0)


def sopr(labels: Mapping[str, Mapping[int, Label]], *, mode: str = UPSTREAM, evaluate_times: int | None = None,
         test_ids: Iterable[str] | None = None) -> Score:
    """A failed judgement (Label.ERROR: no verdict) is no outcome of the query: it is left out of its repeat's
    numerator and denominator alike and counted in ``errors``, never scored as Unsolved. ``n``: the queries with a
    verdict in some repeat (0 when every judgement failed)."""
    if evaluate_times is not None and evaluate_times < 1:
        raise InputError(f"evaluate_times must be at least 1 (got {evaluate_times})", field="--evaluate-times",
                         fix="write e.g. --evaluate-times 3")
    times = evaluate_times or evaluate_times_of(labels)
    if mode == UPSTREAM:
        counted = {qid: labels[qid] for qid in labels}
        missing = 0
    elif mode == STRICT:
        if test_ids is None:
            raise InputError("strict SoPR needs the test ids (the whole test set is its denominator)",
                             fix="pass --test-ids DIR or --stb-root DIR")
        ids = [str(i) for i in test_ids]
        counted = {qid: labels.get(qid, {}) for qid in ids}
        missing = sum(1 for qid in ids if qid not in labels)
    else:
        raise InputError(f"unknown SoPR mode {mode!r}", fix=f"choose {UPSTREAM} or {STRICT}")
    errors = sum(1 for repeats in counted.values() for label in repeats.values() if label is Label.ERROR)
    # a query whose every judgement failed has no outcome at all (a missing answer in strict mode has one: Unsolved)
    unjudged = sum(1 for repeats in counted.values() if repeats and all(lb is Label.ERROR for lb in repeats.values()))
    denominator = len(counted) - unjudged
    runs = []
    for repeat in range(times):
        failed = sum(1 for repeats in counted.values() if repeats.get(repeat) is Label.ERROR)
        if len(counted) - failed == 0:
            continue  # nothing judged in this repeat: no score, rather than 0 over nothing
        total = sum(repeats[repeat].points for repeats in counted.values() if repeat in repeats)
        runs.append(total / (len(counted) - failed))
    if not runs:
        return Score("SoPR", mode, 0.0, 0.0, 0 if errors else denominator, [], errors, missing)
    return Score("SoPR", mode, statistics.fmean(runs) * 100, statistics.pstdev(runs) * 100, denominator,
                 [r * 100 for r in runs], errors, missing)


def sowr(wins: Mapping[str, tuple[int, int]], *, mode: str = UPSTREAM, errors: int = 0) -> Score:
    """``wins[qid] = (reference rounds won, output rounds won)``; the score is the output model's. ``errors``:
    failed rounds of queries left out of ``wins`` (recorded, never scored)."""
    if mode not in (UPSTREAM, CORRECTED):
        raise InputError(f"unknown SoWR mode {mode!r}", fix=f"choose {UPSTREAM} or {CORRECTED}")
    won = sum(1 for ref, out in wins.values() if out > ref)
    ties = sum(1 for ref, out in wins.values() if out == ref)
    total = len(wins)
    credit = won + (ties / 2 if mode == CORRECTED else 0)
    return Score("SoWR", mode, credit / total * 100 if total else 0.0, 0.0, total, errors=errors, ties=ties)


def average(scores: list[Score]) -> Score:
    """The README "Average" column: plain mean of the group means, plain mean of the group stds."""
    if not scores:
        raise ValueError("nothing to average")
    repeats = {len(s.runs) for s in scores}
    # per-repeat averages when every group has the same repeats (so one repeat stays one repeat)
    runs = [statistics.fmean(s.runs[r] for s in scores) for r in range(repeats.pop())] if len(repeats) == 1 else []
    return Score(scores[0].metric, scores[0].mode, statistics.fmean(s.mean for s in scores),
                 statistics.fmean(s.std for s in scores), sum(s.n for s in scores), runs,
                 sum(s.errors for s in scores), sum(s.missing for s in scores))
