"""Judge a converted answer file: every (query, repeat) job through the decision procedure, concurrently.

Produces upstream's label records ``{qid: {"query", "tool_names", "answer_steps", "final_step",
"is_solved": {"0": "AnswerStatus.Solved", …}}}`` (plus ``reasons`` per repeat) and run statistics.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from ..errors import InputError
from .cache import JudgementCache, cache_key
from .judge import FunctionJudge, Judgement, judge_answer
from .labels import Label
from .steps import get_steps, tool_names


@dataclass
class JudgeRun:
    entries: dict[str, dict] = field(default_factory=dict)
    requests: int = 0
    cache_hits: int = 0
    errors: int = 0
    skipped: list[str] = field(default_factory=list)  # converted ids not in the test ids

    def labels(self) -> dict[str, dict[int, Label]]:
        return {qid: {int(k): Label.parse(v) for k, v in entry["is_solved"].items()}
                for qid, entry in self.entries.items()}


def _check_example(qid: str, example: Any) -> None:
    if not isinstance(example, dict) or "answer" not in example or "query" not in example:
        raise InputError("converted answer needs 'query' and 'answer'", field=qid,
                         fix="convert raw answers with `tba convert` first")
    if not example["answer"].get("answer_details"):
        raise InputError("converted answer has no answer_details", field=f"{qid}.answer.answer_details")


def judge_converted(converted: dict[str, Any], judge: FunctionJudge, *, evaluate_times: int = 3,
                    test_ids: list[str] | None = None, concurrency: int = 4,
                    cache: JudgementCache | None = None, progress: bool = True) -> JudgeRun:
    run = JudgeRun()
    wanted = set(test_ids) if test_ids is not None else None
    selected = {}
    for qid, example in converted.items():
        if wanted is not None and str(qid) not in wanted:
            run.skipped.append(str(qid))
            continue
        _check_example(str(qid), example)
        selected[str(qid)] = example
    cache = cache if cache is not None else JudgementCache(None)
    requests_before = judge.requests

    def job(qid: str, repeat: int) -> tuple[str, int, Judgement, bool]:
        example = selected[qid]
        key = cache_key(judge.name, judge.spec.fingerprint, example["query"], example["answer"], repeat)
        hit = cache.get(key)
        if hit is not None:
            return qid, repeat, Judgement.from_dict(hit), True
        judgement = judge_answer(judge, example["query"], example["answer"])
        if judgement.label is not Label.ERROR and judgement.calls:
            cache.put(key, judgement.as_dict())
        return qid, repeat, judgement, False

    results: dict[str, dict[int, Judgement]] = {qid: {} for qid in selected}
    jobs = [(qid, repeat) for qid in selected for repeat in range(evaluate_times)]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(job, qid, repeat) for qid, repeat in jobs]
        for future in tqdm(as_completed(futures), total=len(futures), disable=not progress, ncols=100,
                           desc="judging"):
            qid, repeat, judgement, hit = future.result()
            results[qid][repeat] = judgement
            run.cache_hits += int(hit)
            run.errors += int(judgement.label is Label.ERROR)
    for qid, example in selected.items():
        answer_steps, final_step = get_steps(example)
        repeats = results[qid]
        run.entries[qid] = {
            "query": example["query"],
            "tool_names": tool_names(example.get("available_tools", [])),
            "answer_steps": answer_steps,
            "final_step": final_step,
            "is_solved": {str(r): repeats[r].label.stored() for r in sorted(repeats)},
            "reasons": {str(r): repeats[r].error or repeats[r].reason for r in sorted(repeats)},
        }
    run.requests = judge.requests - requests_before
    return run
