"""Judge a converted answer file: every (query, repeat) job through the decision procedure, concurrently.

Produces upstream's label records ``{qid: {"query", "tool_names", "answer_steps", "final_step",
"is_solved": {"0": "AnswerStatus.Solved", …}}}`` (plus ``reasons`` per repeat) and run statistics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Protocol

from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.cache import JudgementCache, cache_key
from toolbench_adapter.evaluation.judging.judge import FunctionJudge, Judgement, early_judgement, judge_answer
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.steps import get_steps, tool_names


@dataclass
class JudgeRun:
    entries: dict[str, dict] = field(default_factory=dict)
    requests: int = 0
    cache_hits: int = 0
    errors: int = 0  # failed judgements (no verdict after the client's retries and the judge's attempts)
    skipped: list[str] = field(default_factory=list)  # converted ids not in the test ids
    error_samples: list[str] = field(default_factory=list)  # the first few distinct reasons, for the summary

    @property
    def judgements(self) -> int:
        return sum(len(entry["is_solved"]) for entry in self.entries.values())

    def labels(self) -> dict[str, dict[int, Label]]:
        return {qid: {int(k): Label.parse(v) for k, v in entry["is_solved"].items()}
                for qid, entry in self.entries.items()}


DEFAULT_ATTEMPTS = 3  # FunctionJudge's requests per verdict when a reply is malformed (tba evaluate, eval, sweep)


def request_range(judgements: int, attempts: int = DEFAULT_ATTEMPTS, *, per: tuple[int, int] = (1, 2)) -> tuple[int, int]:
    """The judge requests ``judgements`` make: one each at least (``per[0]``); at most ``per[1]`` (an Unsure
    verdict asks parse_answer_status too), each asked again up to ``attempts`` times when malformed."""
    return judgements * per[0], judgements * per[1] * attempts


def cost_line(judgements: int, what: str, attempts: int = DEFAULT_ATTEMPTS, *, unit: str = "judgements",
              per: tuple[int, int] = (1, 2)) -> str:
    """The line a judging command prints before its first paid request (issue 41): how many requests its
    numbers multiply to, as a range, and what the range is made of."""
    low, high = request_range(judgements, attempts, per=per)
    each = ("a request each; an Unsure verdict adds one" if per == (1, 2) else
            f"{per[0]} to {per[1]} requests each (a judgement per answer, then select_better_answer when both or "
            "neither is solved)")
    return (f"{low:,} judge requests or more: {what} = {judgements:,} {unit}, {each} and a malformed reply is asked "
            f"again (up to {attempts} tries): at most {high:,}, HTTP faults retried on top; cached verdicts and "
            "answers without a final answer ask none")


def note_error(samples: list[str], error: str, keep: int = 3) -> None:
    """Keep the first ``keep`` distinct failure reasons (a summary names them; the label files hold them all)."""
    if len(samples) < keep and error not in samples:
        samples.append(error)


class JudgingProgress(Protocol):
    """Where a caller with a bar of its own (a sweep judging several cells) hears of the judging: the jobs planned
    (each (query, repeat)), then each one judged (from the cache or the judge). Given as ``progress``, it replaces
    the judging's own bar."""

    def planned(self, jobs: int) -> None: ...

    def judged(self, count: int = 1) -> None: ...


class JudgeExecutor(Protocol):
    def map(self, judge: FunctionJudge, asks: list[tuple[str, dict]]) -> Iterator[tuple[int, Judgement]]:
        """Judge each (query, answer) of ``asks`` once; yield (its index, its Judgement) as each ends."""


class ThreadJudgeExecutor:
    """``concurrency`` judge requests at once, in threads of this process sharing the judge."""

    name = "threads"

    def __init__(self, concurrency: int = 4):
        self.concurrency = max(1, concurrency)

    def map(self, judge: FunctionJudge, asks: list[tuple[str, dict]]) -> Iterator[tuple[int, Judgement]]:
        if not asks:
            return
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(judge_answer, judge, query, answer): index
                       for index, (query, answer) in enumerate(asks)}
            for future in as_completed(futures):
                yield futures[future], future.result()


def _check_example(qid: str, example: Any) -> None:
    if not isinstance(example, dict) or "answer" not in example or "query" not in example:
        raise InputError("converted answer needs 'query' and 'answer'", field=qid,
                         fix="convert raw answers with `tba convert` first")
    if not example["answer"].get("answer_details"):
        raise InputError("converted answer has no answer_details", field=f"{qid}.answer.answer_details")


def judge_converted(converted: dict[str, Any], judge: FunctionJudge, *, evaluate_times: int = 3,
                    test_ids: list[str] | None = None, concurrency: int = 4,
                    cache: JudgementCache | None = None, progress: bool | JudgingProgress = True,
                    executor: JudgeExecutor | None = None,
                    first: Callable[[float, int], None] | None = None) -> JudgeRun:
    """``executor`` judges the answers the cache does not hold: ``concurrency`` threads of this process by
    default, or e.g. runners/judging/judge_ray.py's Ray tasks; the labels are the same either way. ``first``:
    the first uncached judgement is made alone, before the others, and ``first(seconds, requests)`` told what
    it took (tba judge-audit's estimate of the rest is measured so). ``progress``: a bar of its own (True), none
    (False), or a JudgingProgress that is told instead."""
    if evaluate_times < 1:  # zero repeats would judge nothing and score a clean-looking 0.0
        raise InputError(f"evaluate_times must be at least 1 (got {evaluate_times})", field="--evaluate-times",
                         fix="write e.g. --evaluate-times 3")
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
    executor = executor if executor is not None else ThreadJudgeExecutor(concurrency)
    requests_before = judge.requests
    results: dict[str, dict[int, Judgement]] = {qid: {} for qid in selected}
    jobs = [(qid, repeat) for qid in selected for repeat in range(evaluate_times)]
    told = progress if hasattr(progress, "judged") else None
    bar = tqdm(total=len(jobs), disable=told is not None or not progress, ncols=100, desc="judging")
    if told is not None:
        told.planned(len(jobs))

    def record(qid: str, repeat: int, judgement: Judgement, hit: bool) -> None:
        results[qid][repeat] = judgement
        run.cache_hits += int(hit)
        if judgement.label is Label.ERROR:
            run.errors += 1
            note_error(run.error_samples, judgement.error or "judge error")
        bar.update(1)
        if told is not None:
            told.judged(1)

    # the cache is read and written here, in the caller's process only: the executor just judges the misses
    pending: list[tuple[str, int, str]] = []
    for qid, repeat in jobs:
        example = selected[qid]
        key = cache_key(judge.name, judge.spec.fingerprint, example["query"], example["answer"], repeat)
        hit = cache.get(key)
        early = early_judgement(example["answer"]) if hit is None else None
        if hit is not None or early is not None:
            record(qid, repeat, Judgement.from_dict(hit) if hit is not None else early, hit is not None)
        else:
            pending.append((qid, repeat, key))
    asks = [(selected[qid]["query"], selected[qid]["answer"]) for qid, _repeat, _key in pending]

    def judged(index: int, judgement: Judgement) -> None:
        qid, repeat, key = pending[index]
        if judgement.label is not Label.ERROR and judgement.calls:
            cache.put(key, judgement.as_dict())
        record(qid, repeat, judgement, False)

    try:
        skip = 0
        if first is not None and asks:  # the first judgement alone, timed: what the rest will take is told by it
            before, started = judge.requests, time.monotonic()
            judged(0, judge_answer(judge, *asks[0]))
            first(time.monotonic() - started, judge.requests - before)
            skip = 1
        for index, judgement in executor.map(judge, asks[skip:]):
            judged(index + skip, judgement)
    finally:
        bar.close()
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
