"""An inspect sample's answer judged as ``tba evaluate`` judges a run's: converted (answers/convert.py, upstream's
format), rules first (no Finish, or an empty or given-up final answer: Unsolved without asking), then the judge
(evaluation/judging/judge.py: StableToolBench's decision procedure) ``times`` times. The sample's value is its SoPR
as ``tba evaluate`` computes one query's (scoring/scores.py): the mean of the judged repeats' points (Solved 1,
Unsure 0.5, Unsolved 0), a failed judgement left out and counted. No verdict at all (every judgement failed, or an
answer that needs a judge and none given) is NoVerdict: the sample is an error in inspect's log, never a 0."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from toolbench_adapter.answers.convert import Converter
from toolbench_adapter.answers.read import AnswerFile
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.evaluation.judging.judge import early_judgement, judge_answer, make_judge
from toolbench_adapter.evaluation.labels import Label

METHOD = "CoT@1"  # a session's answer file has the CoT shape (runners/outside/session.py)
_JUDGES: dict[tuple, object] = {}  # (url, model, key) -> judge: one client per process, not one per sample


def converted_answer(data: dict) -> dict:
    answer = AnswerFile(path=Path("inspect-sample"), query_id="0", method=METHOD, group=None, data=data)
    return Converter(METHOD).convert(answer)


class NoVerdict(RuntimeError):
    """A sample's answer got no verdict: scoring it 0 would count a judge's failure as the agent's."""


def judge_session(data: dict, judge: dict) -> dict:
    """{"value", "label", "reason", "by", ...}: by "rule" (no judge asked) or by the judge model
    (``judge["model"]``). NoVerdict when no judgement could be made."""
    example = converted_answer(data)
    early = early_judgement(example["answer"])
    if early is not None:
        return {"value": early.label.points, "label": early.label.value, "reason": early.reason, "by": "rule"}
    if not judge.get("url") or not judge.get("model"):
        raise NoVerdict("this answer needs a judge and none was given: pass -T judge_url=URL -T judge_model=NAME "
                        "(or judge the run folder later: tba evaluate RUN)")
    key = (judge["url"], judge["model"], judge.get("api_key"))
    if key not in _JUDGES:
        client = OpenAIChatClient(judge["url"], judge["model"], judge.get("api_key"))
        _JUDGES[key] = make_judge(client, load_evaluator(None), mode="auto")
    judgements = [judge_answer(_JUDGES[key], example["query"], example["answer"])
                  for _ in range(max(1, int(judge.get("times") or 1)))]
    judged = [j for j in judgements if j.label is not Label.ERROR]
    if not judged:
        raise NoVerdict(f"every judgement failed ({len(judgements)} of {len(judgements)}) at {judge['url']}: "
                        f"{judgements[0].error}")
    label = Counter(j.label.value for j in judged).most_common(1)[0][0]
    reason = next(j.reason for j in judged if j.label.value == label)
    return {"value": statistics.fmean(j.label.points for j in judged), "label": label, "reason": reason,
            "by": judge["model"], "labels": [j.label.value for j in judgements],
            "failed_judgements": len(judgements) - len(judged)}
