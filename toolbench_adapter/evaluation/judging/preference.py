"""Solvable Win Rate judgements: a judge compares the reference model's and the output model's answers.

StableToolBench ``eval_preference.py`` + ``annotate_preference`` + ``normalized_openai_completions``, per test id
and round (``evaluate_times``):
- no reference answer -> the output model gets the round; else no output answer -> the reference gets it;
- otherwise both answers are truncated (final answer 1000 characters, ``method`` dropped), put in a seeded random
  order, and each gets a status from the pass-rate decision procedure. Exactly one Solved wins; several Solved ->
  ``select_better_answer``; no Solved but exactly one Unsure wins; otherwise ``select_better_answer`` among the
  Unsure ones, or among all when every answer is Unsolved. The chosen position is mapped back through the order.
A round the judge cannot decide (no usable verdict after its attempts) is recorded with its error (no winner),
where upstream would have crashed; its query is left out of SoWR (never scored as a tie) and counted.
Results: ``{group}_{ref}_{out}.json`` (``{qid: {ref: n, out: n, "round_i":
"complete"}}``) and ``.csv`` in upstream's layout, plus our ``.meta.json`` with every round's record.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.cache import JudgementCache, cache_key
from toolbench_adapter.evaluation.judging.judge import (
    FunctionJudge,
    JudgeFailure,
    Judgement,
    MalformedVerdict,
    judge_answer,
)
from toolbench_adapter.evaluation.judging.run_judge import read_converted
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.scoring.results import ScoreRow, load_test_ids, rows_from_label_file, write_score_file
from toolbench_adapter.evaluation.steps import get_steps, tool_names
from toolbench_adapter.evaluation.storage import META_SUFFIX, write_text_atomic
from toolbench_adapter.protocol.evaluation import (
    ANSWER_DETAILS_LIMIT,
    DROPPED_ANSWER_KEY,
    FINAL_ANSWER_LIMIT,
    INDEX_FIELD,
    PREFERENCE_CSV_HEADER,
    PREFERENCE_OUTPUT,
    PREFERENCE_REF,
    PREFERENCE_TIE,
    REASON_FIELD,
    ROUND_COMPLETE,
    ROUND_INCOMPLETE,
    ROUND_KEY,
    SELECT_BETTER_ANSWER,
)

INDEX_JSON_INSTRUCTION = (
    '\nAnswer with one JSON object and nothing else, exactly of the form '
    '{{"{reason}": "<your short explanation>", "{field}": <0 or 1>}}.'
)
REFERENCE, OUTPUT = 0, 1  # original positions: the reference answer first, as upstream passes them
DEFAULT_SEED = 0


def truncate_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A copy cut as upstream's ``process_answer`` cuts it in place."""
    cut = copy.deepcopy(answer)
    cut["final_answer"] = (cut.get("final_answer") or "")[:FINAL_ANSWER_LIMIT]
    cut["answer_details"] = list(cut.get("answer_details") or [])[:ANSWER_DETAILS_LIMIT]
    cut.pop(DROPPED_ANSWER_KEY, None)
    return cut


def same_answers(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Upstream's ``check_identity_answers``: equal final answers and equal ``str`` of the details."""
    return (first.get("final_answer") == second.get("final_answer")
            and str(first.get("answer_details")) == str(second.get("answer_details")))


def read_index(verdict: Any) -> int:
    """The ``index`` of a verdict as upstream reads it (``int(ret['index'])``), which must name an answer."""
    if not isinstance(verdict, dict) or INDEX_FIELD not in verdict:
        raise MalformedVerdict(f"no {INDEX_FIELD!r} in the verdict")
    value = verdict[INDEX_FIELD]
    if isinstance(value, bool):
        raise MalformedVerdict(f"{INDEX_FIELD}={value!r} is not a number")
    try:
        index = int(value)
    except (TypeError, ValueError):
        raise MalformedVerdict(f"{INDEX_FIELD}={value!r} is not a number") from None
    if index not in (0, 1):
        raise MalformedVerdict(f"{INDEX_FIELD}={index} names no answer (0 or 1)")
    return index


def ask_index(judge: FunctionJudge, query: str, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """``select_better_answer`` through the judge's client: ``{"index": 0|1, "reason"}``, retried when malformed.

    The pass-rate judge validates ``answer_status`` verdicts only, so the index verdict is requested and checked
    here, with the judge's own transport (tools: forced tool call; json: a prompt asking for the index).
    """
    prompt = judge.spec.prompt(SELECT_BETTER_ANSWER, query=query, answer_0=json.dumps(answers[0]),
                               answer_1=json.dumps(answers[1]))
    problem = ""
    def send() -> dict:
        if judge.mode == "tools":
            return judge._request(SELECT_BETTER_ANSWER, prompt)
        instruction = INDEX_JSON_INSTRUCTION.format(reason=REASON_FIELD, field=INDEX_FIELD)
        return judge.client.chat([{"role": "user", "content": prompt + instruction}],
                                 temperature=judge.temperature, max_tokens=judge.max_tokens)

    for _ in range(judge.attempts):
        try:  # a failed endpoint is JudgeFailure; a malformed reply is asked again, as a malformed verdict
            verdict = judge._verdict(judge.reply(SELECT_BETTER_ANSWER, send))
            return {INDEX_FIELD: read_index(verdict), REASON_FIELD: str(verdict.get(REASON_FIELD, ""))}
        except MalformedVerdict as exc:
            problem = str(exc)
            with judge._lock:
                judge.malformed += 1
    raise JudgeFailure(f"{SELECT_BETTER_ANSWER}: no usable verdict after {judge.attempts} attempts ({problem})")


@dataclass
class RoundRecord:
    """One round of one query: who won and why."""

    winner: int | None  # REFERENCE, OUTPUT, or None for a tie (a round the judge could not decide)
    rule: str  # missing-reference, missing-output, one-solved, one-unsure, select, identical, judge-error
    order: list[int] = field(default_factory=list)  # shown position -> original position (0 ref, 1 output)
    statuses: list[str] = field(default_factory=list)  # per original position
    reason: str = ""
    error: str | None = None
    cached: int = 0  # judgements served from the cache

    def as_dict(self) -> dict[str, Any]:
        return {"winner": {REFERENCE: "reference", OUTPUT: "output", None: "tie"}[self.winner], "rule": self.rule,
                "order": self.order, "statuses": self.statuses, "reason": self.reason, "error": self.error}


class RoundJudge:
    """Decides rounds with a judge and a cache; every judgement is keyed like the pass-rate judge's."""

    def __init__(self, judge: FunctionJudge, cache: JudgementCache, seed: int = DEFAULT_SEED):
        judge.spec.require(SELECT_BETTER_ANSWER)
        self.judge = judge
        self.cache = cache
        self.seed = seed

    def decide(self, qid: str, round_index: int, query: str, reference: dict | None, output: dict | None) -> RoundRecord:
        # upstream checks the reference first: with neither answer the output model gets the round
        if reference is None:
            return RoundRecord(OUTPUT, "missing-reference")
        if output is None:
            return RoundRecord(REFERENCE, "missing-output")
        rng = random.Random(f"{self.seed}:{qid}:{round_index}")  # str seeds are hashed stably across runs
        order = [REFERENCE, OUTPUT]
        rng.shuffle(order)
        originals = [truncate_answer(reference), truncate_answer(output)]
        shown = [originals[i] for i in order]
        record = RoundRecord(None, "", order)
        try:
            statuses = [self._status(query, answer, round_index, record) for answer in shown]
            record.statuses = [statuses[order.index(i)].value for i in (REFERENCE, OUTPUT)]
            position = self._choose(query, shown, statuses, round_index, rng, record)
        except JudgeFailure as exc:
            record.rule, record.error = "judge-error", str(exc)
            return record
        record.winner = order[position]  # shown position -> original (for two answers, upstream's inverse agrees)
        return record

    def _status(self, query: str, answer: dict, round_index: int, record: RoundRecord) -> Label:
        key = cache_key(self.judge.name, self.judge.spec.fingerprint, query, answer, round_index)
        hit = self.cache.get(key)
        if hit is not None:
            record.cached += 1
            return Judgement.from_dict(hit).label
        judgement = judge_answer(self.judge, query, answer)
        if judgement.label is Label.ERROR:
            raise JudgeFailure(judgement.error or "judge error")
        if judgement.calls:
            self.cache.put(key, judgement.as_dict())
        return judgement.label

    def _choose(self, query: str, shown: list[dict], statuses: list[Label], round_index: int, rng: random.Random,
                record: RoundRecord) -> int:
        solved = [i for i, s in enumerate(statuses) if s is Label.SOLVED]
        if len(solved) == 1:
            record.rule = "one-solved"
            return solved[0]
        if not solved:
            unsure = [i for i, s in enumerate(statuses) if s is Label.UNSURE]
            if len(unsure) == 1:
                record.rule = "one-unsure"
                return unsure[0]
            # upstream asks check_task_solvable here first, but its answer only fills an unused dict: skipped
        # with two answers every remaining branch compares both of them
        if same_answers(shown[0], shown[1]):
            record.rule = "identical"
            return rng.choice([0, 1])
        record.rule = "select"
        return self._select(query, shown, round_index, record)

    def _select(self, query: str, shown: list[dict], round_index: int, record: RoundRecord) -> int:
        key = cache_key(self.judge.name, self.judge.spec.fingerprint, query,
                        {SELECT_BETTER_ANSWER: shown}, round_index)
        hit = self.cache.get(key)
        if hit is None:
            hit = ask_index(self.judge, query, shown)
            self.cache.put(key, hit)
        else:
            record.cached += 1
        record.reason = hit.get(REASON_FIELD, "")
        return int(hit[INDEX_FIELD])


@dataclass
class PreferenceRun:
    reference: str
    output: str
    prefer_dict: dict[str, dict[str, Any]]
    records: dict[str, dict[int, RoundRecord]]
    requests: int = 0
    cache_hits: int = 0

    @property
    def errors(self) -> list[str]:
        return [f"{qid} round {r}: {rec.error}" for qid, rounds in self.records.items()
                for r, rec in sorted(rounds.items()) if rec.error]

    def wins(self) -> dict[str, tuple[int, int]]:
        return {qid: (counts[self.reference], counts[self.output]) for qid, counts in self.prefer_dict.items()}


def _answers(converted: dict[str, Any], side: str) -> dict[str, dict]:
    checked = {}
    for qid, example in converted.items():
        if not isinstance(example, dict) or not isinstance(example.get("answer"), dict) or "query" not in example:
            raise InputError(f"{side} converted answer needs 'query' and 'answer'", field=str(qid),
                             fix="convert raw answers with `tba convert` first")
        checked[str(qid)] = example
    return checked


def compare_converted(reference: dict[str, Any], output: dict[str, Any], judge: FunctionJudge, *,
                      reference_model: str, output_model: str, evaluate_times: int = 3,
                      test_ids: list[str] | None = None, concurrency: int = 4, cache: JudgementCache | None = None,
                      seed: int = DEFAULT_SEED, progress: bool = True) -> PreferenceRun:
    """Every test id (default: every id of either file) x ``evaluate_times`` rounds."""
    if reference_model == output_model:
        raise InputError("reference and output model need different names (they are keys of the result file)",
                         fix="pass --ref-model NAME --output-model NAME")
    refs, outs = _answers(reference, "reference"), _answers(output, "output")
    ids = [str(i) for i in test_ids] if test_ids is not None else list(dict.fromkeys([*refs, *outs]))
    rounds = RoundJudge(judge, cache if cache is not None else JudgementCache(None), seed)
    requests_before = judge.requests

    def job(qid: str, round_index: int) -> tuple[str, int, RoundRecord]:
        ref, out = refs.get(qid), outs.get(qid)
        query = (ref or out or {}).get("query", "")
        answers = [None if e is None else e["answer"] for e in (ref, out)]
        return qid, round_index, rounds.decide(qid, round_index, query, *answers)

    records: dict[str, dict[int, RoundRecord]] = {qid: {} for qid in ids}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(job, qid, r) for r in range(evaluate_times) for qid in ids]
        for future in tqdm(as_completed(futures), total=len(futures), disable=not progress, ncols=100,
                           desc="comparing"):
            qid, round_index, record = future.result()
            records[qid][round_index] = record
    prefer_dict: dict[str, dict[str, Any]] = {}
    for qid in ids:
        entry: dict[str, Any] = {reference_model: 0, output_model: 0}
        for r in range(evaluate_times):
            record = records[qid][r]
            if record.winner is not None:
                entry[reference_model if record.winner == REFERENCE else output_model] += 1
            # upstream leaves missing-answer rounds "incomplete" (a resumed run would count them again); we mark
            # a round complete once it is decided, and incomplete only when the judge failed
            entry[ROUND_KEY.format(i=r)] = ROUND_INCOMPLETE if record.error else ROUND_COMPLETE
        prefer_dict[qid] = entry
    run = PreferenceRun(reference_model, output_model, prefer_dict, records)
    run.requests = judge.requests - requests_before
    run.cache_hits = sum(rec.cached for rounds_ in records.values() for rec in rounds_.values())
    return run


def preference_label(ref_wins: int, out_wins: int) -> int:
    if ref_wins > out_wins:
        return PREFERENCE_REF
    return PREFERENCE_OUTPUT if out_wins > ref_wins else PREFERENCE_TIE


def preference_csv(run: PreferenceRun, reference: dict[str, Any], output: dict[str, Any]) -> str:
    """Upstream's tab-separated CSV; a missing answer gives empty step columns (upstream raised KeyError)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t")
    writer.writerow(PREFERENCE_CSV_HEADER)
    for qid, counts in run.prefer_dict.items():
        ref, out = reference.get(qid), output.get(qid)
        known = ref or out or {}
        ref_steps, ref_final = get_steps(ref) if ref else ("", "")
        out_steps, out_final = get_steps(out) if out else ("", "")
        label = preference_label(counts[run.reference], counts[run.output])
        writer.writerow([known.get("query", ""), str(tool_names(known.get("available_tools", []))), ref_steps,
                         ref_final, out_steps, out_final, str(label), qid, run.reference, run.output])
    return buffer.getvalue()


def write_preference_files(save_dir: str | Path, group: str, run: PreferenceRun, reference: dict[str, Any],
                           output: dict[str, Any], meta: dict[str, Any]) -> Path:
    """``{group}_{ref}_{out}.json`` (indent 4, as upstream dumps it), ``.csv`` and our ``.meta.json``."""
    save_dir = Path(save_dir)
    stem = f"{group}_{run.reference}_{run.output}"
    rounds = {qid: {str(r): rec.as_dict() for r, rec in sorted(recs.items())} for qid, recs in run.records.items()}
    write_text_atomic(save_dir / f"{stem}.csv", preference_csv(run, reference, output))
    write_text_atomic(save_dir / f"{stem}{META_SUFFIX}",
                      json.dumps({**meta, "errors": run.errors, "rounds": rounds}, ensure_ascii=False, indent=2))
    path = save_dir / f"{stem}.json"
    write_text_atomic(path, json.dumps(run.prefer_dict, ensure_ascii=False, indent=4))
    return path


@dataclass
class PreferenceOutcome:
    run: PreferenceRun
    rows: list[ScoreRow]  # SoWR upstream and corrected, read back from the written file
    preference_file: Path
    score_file: Path | None  # None: rounds failed and the scores were not asked for anyway


def prefer_files(reference_path: str | Path, output_path: str | Path, judge: FunctionJudge, out_dir: str | Path, *,
                 group: str, reference_model: str, output_model: str, evaluate_times: int = 3,
                 test_ids_dir: str | Path | None = None, concurrency: int = 4, cache_path: str | Path | None = None,
                 seed: int = DEFAULT_SEED, progress: bool = True, score_anyway: bool = False) -> PreferenceOutcome:
    """Compare two converted answer files; write the preference files and (when every round was decided, or with
    ``score_anyway``) a score file; the CLI's ``tba prefer``. A query with a failed round is left out of SoWR."""
    reference, output = read_converted(reference_path), read_converted(output_path)
    test_ids = load_test_ids(test_ids_dir, group)
    if test_ids_dir is not None and test_ids is None:
        raise InputError(f"no test id file for {group}", path=Path(test_ids_dir) / f"{group}.json")
    started = time.time()
    run = compare_converted(reference, output, judge, reference_model=reference_model, output_model=output_model,
                            evaluate_times=evaluate_times, test_ids=test_ids, concurrency=concurrency,
                            cache=JudgementCache(cache_path), seed=seed, progress=progress)
    meta = {"judge": judge.name, "mode": judge.mode, "evaluator": judge.spec.name,
            "evaluator_path": str(judge.spec.path), "evaluator_sha256": judge.spec.fingerprint,
            "temperature": judge.temperature, "max_tokens": judge.max_tokens, "evaluate_times": evaluate_times,
            "seed": seed, "group": group, "reference_model": reference_model, "output_model": output_model,
            "reference": str(reference_path), "output": str(output_path), "queries": len(run.prefer_dict),
            "requests": run.requests, "cache_hits": run.cache_hits, "judge_errors": len(run.errors),
            "malformed_replies": judge.malformed, "seconds": round(time.time() - started, 2)}
    path = write_preference_files(out_dir, group, run, reference, output, meta)
    rows = rows_from_label_file(path)
    for row in rows:
        row.judge = judge.name
    score_file = None
    if not run.errors or score_anyway:
        score_file = write_score_file(Path(out_dir) / f"scores_{group}_{reference_model}_{output_model}.json", rows)
    return PreferenceOutcome(run, rows, path, score_file)
