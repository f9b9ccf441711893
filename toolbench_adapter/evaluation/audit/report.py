"""What a judge audit prints, writes (--out) and keeps on the judge's card.

Accuracy and kappa count the pairs the judge decided; the pairs decided by rule (no Finish, or an empty /
give-up final answer: Unsolved on our side without a request) are shown apart, since any judge "agrees" there
and they made a constant judge look perfect. The SoPR of each side is over every answer, as a leaderboard counts
it, so the SoPR shift is what the judge alone moves a leaderboard number by.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolbench_adapter.evaluation.audit.agreement import (
    RESAMPLES,
    SEED,
    Interval,
    Kappa,
    Shift,
    kappa_interval,
    sopr_shift,
)
from toolbench_adapter.evaluation.audit.rejudge import Agreement, AuditedSet, Cost
from toolbench_adapter.evaluation.judging.passrate import request_range
from toolbench_adapter.evaluation.labels import Label


@dataclass(frozen=True)
class Summary:
    kappa: Kappa
    kappa_interval: Interval
    set_kappas: list[tuple[Kappa, Interval]]
    shift: Shift
    judged: Agreement  # every pair the judge decided, all files
    by_rule: Agreement  # every pair decided by rule, all files
    resamples: int
    seed: int


def summarize(results: list[AuditedSet], *, resamples: int = RESAMPLES, seed: int = SEED) -> Summary:
    strata = [r.units() for r in results]
    points = []
    for result in results:
        released, ours = result.sopr()
        points.append(ours.mean - released.mean)
    judged = Agreement([pair for r in results for pair in r.agreement.pairs])
    set_kappas = [(r.agreement.kappa_of(), kappa_interval([units], resamples=resamples, seed=seed))
                  for r, units in zip(results, strata, strict=True)]
    return Summary(judged.kappa_of(), kappa_interval(strata, resamples=resamples, seed=seed), set_kappas,
                   sopr_shift(strata, points, resamples=resamples, seed=seed), judged,
                   Agreement([pair for r in results for pair in r.rule_agreement.pairs]), resamples, seed)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _kappa_cell(kappa: Kappa, interval: Interval) -> str:
    return "n/a" if kappa.value is None else f"{kappa.value:.3f} {interval.text('{:.2f}', note=False)}"


def _shift_cell(point: float, interval: Interval) -> str:
    return f"{point:+.1f} {interval.text('{:+.1f}', note=False)}"


def cost_text(cost: Cost, concurrency: int, attempts: int) -> str:
    """Printed before the first request: what the audit will ask, as a range of requests (pace_text says how
    long, once the first judgement is measured)."""
    answers = f"{cost.answers} answer" + ("" if cost.answers == 1 else "s")
    low, high = request_range(cost.to_ask, attempts)
    line = (f"Audit plan: {answers} x repeats = {cost.judgements} judgements: {cost.by_rule} decided by "
            f"rule (no request), {cost.cached} cached, {cost.to_ask} to ask: {low} to {high} judge requests (one "
            f"each, two for an Unsure verdict, up to {attempts} tries for a malformed reply; HTTP faults retried on "
            f"top) at concurrency {concurrency}")
    if cost.to_ask > 1:
        line += "; how long: measured on the first judgement, below"
    return line


def pace_text(seconds: float, requests: int, remaining: int, concurrency: int) -> str:
    """After the first judgement, made alone: what it took (measured), and what the ``remaining`` ones will take,
    as a range whose ends say what they assume. A judgement's own prompt is what is timed: the preflight's
    short test prompt said 2.3 s for an audit that took 124 s (issue 41)."""
    per = seconds / max(1, requests)
    took = f"First judgement: {_duration(seconds)} for {requests} request{'s' if requests != 1 else ''} (measured)"
    if remaining <= 0:
        return took + "."
    low, high = remaining * per / max(1, concurrency), remaining * per * 2
    return (f"{took}; the other {remaining} judgement{'s' if remaining != 1 else ''}: about {_duration(low)} to "
            f"{_duration(high)} at {_duration(per)} per request: the low end if the judge answers {concurrency} requests "
            "at once and each verdict takes one request, the high end if it answers one at a time and each takes "
            "two (an Unsure verdict); malformed replies and HTTP retries add to both")


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    return f"{minutes // 60} h {minutes % 60} min"


def matrix_text(agreement: Agreement) -> list[str]:
    names = [c.value for c in agreement.categories]
    width = max(len(n) for n in names) + 2
    counts = agreement.matrix()
    lines = ["released \\ ours".ljust(18) + "".join(n.rjust(width) for n in names)]
    for released in agreement.categories:
        lines.append(f"  {released.value:<16}" + "".join(str(counts[(released, ours)]).rjust(width)
                                                      for ours in agreement.categories))
    return lines


def audit_text(results: list[AuditedSet], judge_name: str, summary: Summary, seconds: float | None = None) -> str:
    lines = [f"Judge audit: released labels (judge as released, not recorded in the label files) vs {judge_name}",
             "Pairs are (query, repeat): released repeat r against our repeat r. Accuracy and kappa count the pairs "
             "the judge decided; pairs decided by rule are apart.", ""]
    lines.append(f"  {'model':<24} {'group':<16} {'judged':>6} {'rule':>5} {'accuracy':>9} {'kappa [95% CI]':>22}  "
                 f"{'SoPR released':>14} {'SoPR ours':>10} {'shift [95% CI]':>20}  answers")
    for result, (kappa, interval), (point, shift_interval) in zip(results, summary.set_kappas,
                                                                  summary.shift.per_stratum, strict=True):
        agreement = result.agreement
        released, ours = result.sopr()
        answers = f"{result.exact} exact, {result.rebuilt} rebuilt from the label file, {result.by_rule} decided by rule"
        if result.unreadable:
            answers += f", {len(result.unreadable)} unreadable (not judged)"
        lines.append(f"  {result.model:<24} {result.group:<16} {len(agreement.pairs):>6} "
                     f"{len(result.rule_agreement.pairs):>5} {_pct(agreement.accuracy):>9} "
                     f"{_kappa_cell(kappa, interval):>22}  {released.text():>14} {ours.text():>10} "
                     f"{_shift_cell(point, shift_interval):>20}  {answers}")
    judged, by_rule = summary.judged, summary.by_rule
    answers = sum(len(r.ours) for r in results)
    lines += ["", f"All groups: {len(judged.pairs) + len(by_rule.pairs)} pairs over {answers} answers: "
              f"{len(judged.pairs)} decided by the judge, {len(by_rule.pairs)} by rule", "Pairs the judge decided:"]
    lines += matrix_text(judged)
    left_out = f"; {judged.errors} pairs with a judge error left out" if judged.errors else ""
    kappa = summary.kappa
    kappa_text = (f"n/a: {kappa.why}" if kappa.value is None
                  else f"{kappa.value:.3f} {summary.kappa_interval.text()}")
    if kappa.only and kappa.value is not None:
        kappa_text += f" (our judge said {kappa.only} to every pair)"
    lines.append(f"Accuracy {_pct(judged.accuracy)} ({judged.agree} of {len(judged.judged)}), "
                 f"Cohen's kappa {kappa_text}{left_out}")
    rule_unsolved = sum(1 for released, _ours in by_rule.pairs if released is Label.UNSOLVED)
    lines.append(f"Pairs decided by rule (no Finish, or an empty / give-up final answer: Unsolved without a request, "
                 f"in neither accuracy nor kappa): {len(by_rule.pairs)}, released Unsolved on {rule_unsolved}")
    point, interval = summary.shift.average
    lines.append(f"SoPR shift (ours - released, points, every answer): Average {_shift_cell(point, interval)}")
    lines.append(f"Intervals: 95% percentile bootstrap over answers (all repeats of an answer together), "
                 f"{summary.resamples} resamples, seed {summary.seed}")
    requests = sum(r.requests for r in results)
    hits = sum(r.cache_hits for r in results)
    errors = sum(r.errors for r in results)
    took = f", {seconds:.1f} s of judging" if seconds is not None else ""
    lines.append(f"Judge: {requests} requests, {hits} cached judgements, {errors} judge errors{took}")
    return "\n".join(lines) + "\n"


def _interval(interval: Interval) -> list[float | None]:
    return [interval.low, interval.high]


def audit_record(results: list[AuditedSet], judge_name: str, summary: Summary) -> dict:
    """The audit as JSON: per set the matrices (judge-decided, by rule), accuracy, kappa, both SoPRs, the shift."""
    sets = []
    for result, (kappa, interval), (point, shift_interval) in zip(results, summary.set_kappas,
                                                                  summary.shift.per_stratum, strict=True):
        agreement = result.agreement
        released, ours = result.sopr()
        sets.append({"model": result.model, "group": result.group, "source": str(result.source),
                     "pairs": len(agreement.pairs), "pairs_by_rule": len(result.rule_agreement.pairs),
                     "accuracy": agreement.accuracy, "kappa": kappa.value, "kappa_why": kappa.why,
                     "kappa_interval": _interval(interval),
                     "matrix": {f"{a.value}->{b.value}": n for (a, b), n in agreement.matrix().items()},
                     "matrix_by_rule": {f"{a.value}->{b.value}": n
                                        for (a, b), n in result.rule_agreement.matrix().items() if n},
                     "sopr_released": released.as_dict(), "sopr_ours": ours.as_dict(),
                     "sopr_shift": point, "sopr_shift_interval": _interval(shift_interval),
                     "answers": {"exact": result.exact, "rebuilt": result.rebuilt, "by_rule": sorted(result.rule_qids),
                                 "unreadable": result.unreadable},
                     "ours": {q: {str(r): label.value for r, label in reps.items()} for q, reps in result.ours.items()},
                     "requests": result.requests, "cache_hits": result.cache_hits, "errors": result.errors})
    return {"judge": judge_name, **card_entry(results, summary), "sets": sets}


def card_entry(results: list[AuditedSet], summary: Summary, *, set_name: str | None = None,
               labels: list[str] | None = None, sample: int | None = None, seed: int | None = None,
               limit: int | None = None, labels_digest: tuple[str, int] | None = None) -> dict:
    """The fields a judge card keeps of one audit (judge_cards.write_card adds the date). ``labels_digest``:
    (sha256, answers) of the label files it was measured against (sets.labels_digest), which reading the card
    checks (cards.py)."""
    point, interval = summary.shift.average
    digest, set_answers = labels_digest or (None, None)
    entry = {"set": set_name, "labels": labels, "sample": sample, "seed": seed if sample else None, "limit": limit,
             "labels_sha256": digest, "set_answers": set_answers,
             "answers": sum(len(r.ours) for r in results),
             "pairs": len(summary.judged.pairs), "pairs_by_rule": len(summary.by_rule.pairs),
             "accuracy": summary.judged.accuracy, "kappa": summary.kappa.value, "kappa_why": summary.kappa.why,
             "kappa_interval": _interval(summary.kappa_interval),
             "sopr_shift": point, "sopr_shift_interval": _interval(interval),
             "groups": {f"{r.model}/{r.group}": {"sopr_shift": p, "sopr_shift_interval": _interval(i)}
                        for r, (p, i) in zip(results, summary.shift.per_stratum, strict=True)},
             "bootstrap": {"resamples": summary.resamples, "seed": summary.seed, "level": 0.95},
             "requests": sum(r.requests for r in results), "errors": sum(r.errors for r in results)}
    return {k: v for k, v in entry.items() if v is not None or k in ("kappa", "kappa_why")}
