"""The few numbers a run page opens with: SoPR upstream and strict (with n of N), the query counts (the run
summary's words and numbers, evaluation/scoring/counts.py) and infrastructure failures, and the facts that name the run
(model, method, dialect / parser, judge, date)."""

from __future__ import annotations

import datetime
from collections import Counter

from toolbench_adapter.evaluation.scoring.counts import DEFINITIONS, count
from toolbench_adapter.evaluation.scoring.scores import STRICT, UPSTREAM, average

from ..structured.describe import structured_fact
from .run_data import RunData
from .tables import SCORED_ANYWAY, failed_judgements_text

PASS_RATE = "SoPR"


def headline(run: RunData) -> dict:
    """{"queries", "finished", "outcome_unknown", "valid", "answered", "win", "infra", "infra_kinds",
    "context_length", "sopr": {mode: ...}, "comparability"}; a mode's "mark" is † (and "markWhy" the reason) when its score is not that of a
    complete evaluation, as the tables mark the row."""
    counts = count(q.count_record() for q in run.queries)
    out = {
        "queries": counts.queries,
        "finished": counts.finished,
        "outcome_unknown": counts.outcome_unknown,
        "valid": counts.valid,
        "answered": counts.answered,
        "win": counts.win,
        "infra": counts.infra_failures,
        "infra_kinds": dict(counts.infra_failures_by_kind),
        "context_length": counts.context_length,  # finished at the model's context limit (counts.DEFINITIONS)
        "sopr": {},
        # against the StableToolBench leaderboard's setup, on every page's first screen (comparability.py)
        "comparability": run.comparability(),
        "judgeCard": run.judge_card(),  # its judge's audit (evaluation/audit/cards.py), beside the comparability line
        # the words the cards use, defined once (evaluation/scoring/counts.py): "answered" is a give_answer on every card
        "words": {word: DEFINITIONS[word] for word in ("valid", "answered", "win", "by rule", "by the judge")},
        # issue 42: what the run cost and how fast its model answered; a set of trials: its figures over trials
        "cost": run.cost.text() if run.cost is not None else None,
        "trials": run.trial_set.headline() if run.trial_set is not None else None,
    }
    per_group = Counter(q.group for q in run.queries)
    if run.trial_set is not None:  # a set of trials: its SoPR over trials [95% CI] on the cards (run_trials.py)
        for mode, figures in run.trial_set.figures.items():
            overall = figures.average
            if overall is not None:
                out["sopr"][mode] = {"text": overall.text(), "mean": overall.sopr, "std": None,
                                     "n": overall.queries, "N": len(run.queries),
                                     "missing": sum(figures.missing.values()), "groups": overall.groups,
                                     "mark": "", "markWhy": ""}
        return out
    for mode in (UPSTREAM, STRICT):
        scores = {row.group: row.score for row in run.score_rows
                  if row.score.metric == PASS_RATE and row.score.mode == mode}  # a later file wins, as in tables
        if not scores:
            continue
        mean = average(list(scores.values()))
        why = incomplete(run, sum(s.errors for s in scores.values()))
        out["sopr"][mode] = {"text": mean.text(), "mean": mean.mean, "std": mean.std,
                             "n": sum(s.n for s in scores.values()), "N": sum(per_group[g] for g in scores),
                             "missing": sum(s.missing for s in scores.values()), "groups": len(scores),
                             "mark": SCORED_ANYWAY if why else "", "markWhy": why}
    return out


def incomplete(run: RunData, errors: int) -> str:
    """Why a SoPR card carries the tables' mark (SCORED_ANYWAY, †), "" when it does not: failed judgements left
    out of its denominators (as tables.build_leaderboards says it), or an evaluation shown that is not complete."""
    reasons = []
    if errors:
        reasons.append(failed_judgements_text(errors))
    if run.evaluation is not None and not run.evaluation.complete:
        reasons.append(f"the evaluation shown is not complete: {run.evaluation.summary()}")
    return "; ".join(reasons)


def facts(run: RunData) -> dict:
    """What names the run on its first screen; None where the folder does not say."""
    manifest = run.manifest or {}
    config = manifest.get("config") or {}
    dialect = manifest.get("dialect")
    dialect_name = dialect.get("name") if isinstance(dialect, dict) else dialect
    methods = sorted({q.method for q in run.queries if q.method})
    return {"model": manifest.get("model"), "backend": manifest.get("backend") or config.get("backend"),
            "method": config.get("method") or ", ".join(methods) or None, "dialect": dialect_name,
            "parser": run.parser, "compat": (manifest.get("compat") or {}).get("mode"),
            "judge": "; ".join(run.judges) or None, "date": run_date(manifest),
            # --constrain / --on-invalid and the valid model turns (toolbench_adapter/structured/describe.py)
            "structured": structured_fact(manifest) if manifest else None}


def run_date(manifest: dict) -> str | None:
    """When the run started: the first session's start, an ISO 8601 string or (older runs) epoch seconds."""
    sessions = manifest.get("sessions") or []
    started = sessions[0].get("started") if sessions and isinstance(sessions[0], dict) else None
    if isinstance(started, (int, float)):
        return datetime.datetime.fromtimestamp(started, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(started, str) and started:
        try:
            moment = datetime.datetime.fromisoformat(started.replace("Z", "+00:00"))
        except ValueError:
            return started
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.UTC)
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return None
