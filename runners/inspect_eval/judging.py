"""An inspect sample's answer judged as ``tba evaluate`` judges a run's: converted (answers/convert.py, upstream's
format), rules first (no Finish, or an empty or given-up final answer: Unsolved without asking), then the judge
(evaluation/judging/judge.py: StableToolBench's decision procedure) ``times`` times, the most common label kept."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from toolbench_adapter.answers.convert import Converter
from toolbench_adapter.answers.read import AnswerFile
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.evaluation.judging.judge import early_judgement, judge_answer, make_judge

METHOD = "CoT@1"  # a session's answer file has the CoT shape (runners/outside/session.py)
_JUDGES: dict[tuple, object] = {}  # (url, model, key) -> judge: one client per process, not one per sample


def converted_answer(data: dict) -> dict:
    answer = AnswerFile(path=Path("inspect-sample"), query_id="0", method=METHOD, group=None, data=data)
    return Converter(METHOD).convert(answer)


def judge_session(data: dict, judge: dict) -> dict:
    """{"label", "reason", "by"}: by "rule" (no judge asked) or by the judge model (``judge["model"]``)."""
    example = converted_answer(data)
    early = early_judgement(example["answer"])
    if early is not None:
        return {"label": early.label.value, "reason": early.reason, "by": "rule"}
    if not judge.get("url") or not judge.get("model"):
        return {"label": "Unsolved", "by": "none",
                "reason": "no judge: the answer needs one (-T judge_url=URL -T judge_model=NAME); scored 0, not judged"}
    key = (judge["url"], judge["model"], judge.get("api_key"))
    if key not in _JUDGES:
        client = OpenAIChatClient(judge["url"], judge["model"], judge.get("api_key"))
        _JUDGES[key] = make_judge(client, load_evaluator(None), mode="auto")
    judgements = [judge_answer(_JUDGES[key], example["query"], example["answer"])
                  for _ in range(max(1, int(judge.get("times") or 1)))]
    label = Counter(j.label.value for j in judgements).most_common(1)[0][0]
    reason = next(j.reason for j in judgements if j.label.value == label)
    return {"label": label, "reason": reason, "by": judge["model"], "labels": [j.label.value for j in judgements]}
