"""A run folder read for the HTML report: manifest, leaderboard, judge labels with reasons, and every
query's trajectory with its step records and re-parses.

Works on folders written by ``tba run`` (evaluated or not) and on plain folders of upstream answer files
(``{group}/{qid}_{method}.json``, no manifest): what is missing is said in ``notes``, never guessed.

Each query carries its outcome from ``queries.jsonl``: "finished" or "infra_failure" (with a failure kind and
detail); an infra-failed query has no answer file at the upstream path, its partial tree (if any) lies under
``failed/``. Runs written before outcomes were recorded read "unknown".
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.scoring.counts import LabelCounts, count_by_group, count_labels, is_answered
from toolbench_adapter.evaluation.scoring.results import ScoreRow, is_score_file, read_score_file, rows_from_labels
from toolbench_adapter.queryset.queries import GROUPS, is_group_name
from toolbench_adapter.runs.cost import Cost, run_cost, runs_cost
from toolbench_adapter.runs.folder import FAILED_DIR, MANIFEST, QUERY_STATS, STEPS
from toolbench_adapter.runs.trial_set import is_trial_set, trial_dirs

from ..answers.read import iter_answer_files, load_answer, split_file_name
from ..errors import RUN_FOLDER_FIX, InputError
from ..evaluation.comparability import run_line
from ..evaluation.evaluations import EVAL_DIR, EvaluationRecord, choose_evaluation, describe_choice
from ..evaluation.labels import Label
from ..evaluation.storage import is_preference_file, read_label_file
from ..outcomes import FINISHED, INFRA_FAILURE, UNKNOWN
from ..parsers import get_parser
from . import tables
from .step_prompts import RECORDED, dialect_of, link_calls, recorded_prompts, render_prompts
from .trajectories import answer_nodes, attach_parses, attach_records, group_calls, step_counts

NO_LABEL = "none"  # the filter value of a query nobody judged; the page shows it as "unjudged"


@dataclass
class QueryData:
    group: str
    query_id: str
    method: str
    query: str
    win: bool
    valid: bool
    final_answer: str
    finish_type: str | None
    nodes: list[dict]
    errors: Counter  # steps per parse error kind ("none" included)
    statuses: Counter  # steps per status code / "no call"
    stats: dict = field(default_factory=dict)  # queries.jsonl: query_count, total_tokens, seconds
    labels: list[str] = field(default_factory=list)  # one per judge repeat
    reasons: list[str] = field(default_factory=list)
    outcome: str = UNKNOWN  # finished | infra_failure | unknown (a run written before outcomes existed)
    failure_kind: str | None = None
    failure_detail: str | None = None
    prompts: dict | None = None  # step_prompts: each model call's prompt, recorded by the run or reconstructed
    calls: list[dict] = field(default_factory=list)  # trajectories.group_calls: one per model call

    @property
    def key(self) -> tuple[str, str]:
        return self.group, self.query_id

    @property
    def label(self) -> str:
        return summary_label(self.labels)

    @property
    def model_calls(self) -> int | None:
        return self.stats.get("query_count")

    @property
    def error_kinds(self) -> list[str]:
        return sorted(k for k, n in self.errors.items() if n and k != "none")

    def count_record(self) -> dict:
        """This query as evaluation/scoring/counts.py counts it (the fields of its queries.jsonl line)."""
        return {"group": self.group, "query_id": self.query_id, "outcome": self.outcome,
                "failure_kind": self.failure_kind, "valid_data": self.valid,
                "answered": is_answered(self.valid, self.final_answer), "win": self.win,
                "context_length": self.stats.get("context_length", 0)}


@dataclass
class RunData:
    path: Path
    name: str
    manifest: dict | None
    parser: str | None
    queries: list[QueryData]
    score_rows: list[ScoreRow] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    label_files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    evaluation: EvaluationRecord | None = None  # the evaluation shown (evaluations.py)
    evaluations: list[EvaluationRecord] = field(default_factory=list)  # every evaluation of the run
    trial_set: object | None = None  # a set of trials (run_trials.SetView): its figures over every trial
    cost: Cost | None = None  # calls, tokens, latency (runs/cost.py; a set: over every trial)

    @property
    def evaluated(self) -> bool:
        return bool(self.label_files)

    @property
    def groups(self) -> list[str]:
        present = {q.group for q in self.queries}
        return [g for g in GROUPS if g in present] + sorted(present - set(GROUPS))

    def boards(self) -> list[tables.Leaderboard]:
        if self.trial_set is not None:  # a set of trials: the set's leaderboards, SoPR over trials
            return self.trial_set.boards(self.comparability(), self.judge_card())
        # every row of a run's page is this run's: its counts tell the footnotes how many queries were answered
        counts = count_by_group(q.count_record() for q in self.queries)
        line, card = self.comparability(), self.judge_card()
        return tables.build_leaderboards(self.score_rows, counts={row.model: counts for row in self.score_rows},
                                         comparability={row.model: line for row in self.score_rows},
                                         judge_cards={row.model: card for row in self.score_rows} if card else None)

    def comparability(self) -> str:
        """The run's line against the StableToolBench leaderboard (evaluation/comparability.py): its manifest's
        setup facts and the judge of the evaluation shown."""
        return run_line(self.manifest, self.evaluation.data.get("judge") if self.evaluation is not None else None)

    def judge_card(self) -> str:
        """The audit line of the shown evaluation's judge (evaluation/audit/cards.py), "" without an evaluation."""
        judge = self.evaluation.data.get("judge") if self.evaluation is not None else None
        return citation(judge) if judge else ""

    def label_counts(self) -> LabelCounts | None:
        """The labels shown, by upstream's rule apart from the judge's (evaluation/scoring/counts.py); None without label files."""
        pairs = [(label, query.reasons[i] if i < len(query.reasons) else None)
                 for query in self.queries for i, label in enumerate(query.labels)]
        return count_labels(pairs) if pairs else None

    def failed_judgements(self) -> tuple[int, int | None]:
        """(judgements that failed, judgements): JudgeError labels (the judge gave no verdict after its retries)
        over every query's repeats; without label files, the score rows' ``errors`` (SoPR upstream; the total
        then unknown: None)."""
        labels = [label for query in self.queries for label in query.labels]
        if labels:
            return sum(label == Label.ERROR.value for label in labels), len(labels)
        return sum(row.score.errors for row in self.score_rows
                   if row.score.metric == "SoPR" and row.score.mode == "upstream"), None


def summary_label(labels: list[str]) -> str:
    """The label a query is filtered by: the most frequent over repeats; a tie between verdicts reads Unsure."""
    if not labels:
        return NO_LABEL
    counts = Counter(labels).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return Label.UNSURE.value
    return counts[0][0]


def group_dirs(run_dir: Path) -> list[Path]:
    found = [p for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name)]
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))


def load_run(run_dir: str | Path, parser: str | None = None, name: str | None = None,
             judge_id: str | None = None) -> RunData:
    """``judge_id``: the evaluation to show (default: the latest complete one; evaluations.py). A set of trials
    (tba run --trials): its trial 0's page, with the set's figures over every trial (run_trials.py)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("run folder not found", path=run_dir, fix=RUN_FOLDER_FIX)
    if is_trial_set(run_dir):
        from .run_trials import load_set

        view, first, trial_id = load_set(run_dir, judge_id)
        run = load_run(first, parser=parser, name=name or view.name, judge_id=trial_id)
        run.path, run.trial_set = run_dir, view
        run.cost = runs_cost(trial_dirs(run_dir))
        run.notes.insert(0, f"a set of {view.trials} trials: the queries below are trial-0's answers and "
                         f"trajectories (tba report {run_dir}/trial-i shows another trial); each query says in how "
                         "many trials it was Solved, the first screen and the leaderboards are over every trial")
        if view.evaluation is None:
            run.notes.append(f"the set is not evaluated: tba evaluate {run_dir} judges every trial")
        return run
    notes: list[str] = []
    manifest = _read_json_or_none(run_dir / MANIFEST)
    if manifest is None:
        notes.append("no manifest.json: not a folder written by `tba run` (answer files only)")
    parser = parser or (manifest or {}).get("parser")
    records = _read_steps(run_dir / STEPS)
    if records is None:
        notes.append("no steps.jsonl: status codes come from the answer files, parse errors from re-parsing")
    stats = _read_query_stats(run_dir / QUERY_STATS)
    reparse = _text_parser(parser, notes)
    dialect = dialect_of(manifest)
    if dialect is None:
        notes.append("dialect unknown: the prompts each model call received are not reconstructed")
    queries: list[QueryData] = []

    def read(path: Path, group: str, failed: bool) -> None:
        answer = load_answer(path, group=group)
        nodes = answer_nodes(answer.data)
        if reparse is not None:
            attach_parses(nodes, reparse)
        query_records = (records or {}).get((answer.group, answer.query_id, answer.method), [])
        attach_records(nodes, query_records)
        errors, statuses = step_counts(nodes)
        # what the run recorded it sent, for every call; else rebuilt from the answer path's messages (older runs)
        prompts = recorded_prompts(query_records) or render_prompts(answer.data, nodes, dialect)
        if prompts is not None:
            prompts["run_code"] = (manifest or {}).get("code_version")
        calls = group_calls(nodes)
        if prompts is not None and prompts["how"] == RECORDED:
            link_calls(calls, prompts)
        generation = answer.generation
        record = stats.get((answer.group, answer.query_id), {"query_count": generation.get("query_count")})
        query = QueryData(
            group=answer.group, query_id=answer.query_id, method=answer.method,
            query=str(generation.get("query", "")), win=bool(answer.data.get("win")) and not failed,
            valid=answer.valid and not failed, final_answer=str(generation.get("final_answer") or ""),
            finish_type=generation.get("finish_type"), nodes=nodes, errors=errors, statuses=statuses,
            stats=record, prompts=prompts, calls=calls)
        _set_outcome(query, record, failed)
        queries.append(query)

    for group_dir in group_dirs(run_dir):
        for path in iter_answer_files(group_dir, order="numeric"):
            read(path, group_dir.name, failed=False)
    seen = {q.key for q in queries}
    if (run_dir / FAILED_DIR).is_dir():
        for group_dir in group_dirs(run_dir / FAILED_DIR):
            for path in iter_answer_files(group_dir, order="numeric"):
                if (group_dir.name, split_file_name(path.name)[0]) not in seen:  # redone and finished since
                    read(path, group_dir.name, failed=True)
    seen = {q.key for q in queries}
    method = ((manifest or {}).get("config") or {}).get("method") or ""
    for key, record in stats.items():  # infra-failed queries that left no tree at all
        if key not in seen and record.get("outcome") == INFRA_FAILURE:
            query = QueryData(group=key[0], query_id=key[1], method=method, query=str(record.get("query") or ""),
                              win=False, valid=False, final_answer="", finish_type=None, nodes=[],
                              errors=Counter(), statuses=Counter(), stats=record)
            _set_outcome(query, record, True)
            queries.append(query)
    if not queries:
        raise InputError("the run folder holds no answer files", path=run_dir,
                         fix=RUN_FOLDER_FIX + " (it holds {group}/{qid}_{method}.json)")
    run = RunData(path=run_dir, name=name or (manifest or {}).get("name") or run_dir.name, manifest=manifest,
                  parser=parser, queries=queries, notes=notes)
    _read_evaluation(run, run_dir, judge_id)
    run.cost = run_cost(run_dir) if manifest is not None else None
    return run


def _set_outcome(query: QueryData, record: dict, failed: bool) -> None:
    outcome = record.get("outcome")
    if failed or outcome == INFRA_FAILURE:
        query.outcome = INFRA_FAILURE
        query.failure_kind = record.get("failure_kind") or UNKNOWN
        query.failure_detail = record.get("failure_detail")
    elif outcome == FINISHED:
        query.outcome = FINISHED


def _text_parser(name: str | None, notes: list[str]):
    """``parse(text)`` of the run's parser, or None for a parser of native tool calls (nothing to re-read)."""
    if not name:
        notes.append("parser unknown (no manifest): raw outputs are shown without a re-parse; pass --parser")
        return None
    parser = get_parser(name)
    if hasattr(parser, "parse_message"):
        notes.append(f"parser {name} reads native tool calls: the parse shown is the run's step record")
        return None
    return parser.parse


def _read_json_or_none(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None


def _read_steps(path: Path) -> dict[tuple, list[dict]] | None:
    if not path.exists():
        return None
    by_query: dict[tuple, list[dict]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (str(record["group"]), str(record["query_id"]), str(record["method"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"malformed step record ({exc})", path=path, field=f"line {number}") from None
            by_query.setdefault(key, []).append(record)
    return by_query


def _read_query_stats(path: Path) -> dict[tuple, dict]:
    """Latest line per query wins (a resumed run appends)."""
    latest: dict[tuple, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                latest[(str(record["group"]), str(record["query_id"]))] = record
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a kill: the query is re-run and logged again
    return latest


def _read_evaluation(run: RunData, run_dir: Path, judge_id: str | None) -> None:
    """The evaluation shown (evaluations.py): ``judge_id``'s, else the latest complete one, else (none complete)
    the latest, whose failed judgements the page then warns of; the others are named in a note."""
    chosen, run.evaluations = choose_evaluation(run_dir, judge_id, fallback=True)
    run.evaluation = chosen
    eval_dir = chosen.eval_dir if chosen is not None else run_dir / EVAL_DIR
    if chosen is None:
        run.notes.append(f"not evaluated: no judge labels in {eval_dir} (run `tba evaluate {run.path}`)")
        return
    if not chosen.complete and not judge_id:
        run.notes.append(f"no complete evaluation: showing the latest, {chosen.summary()}")
    elif len(run.evaluations) > 1:
        run.notes.append(describe_choice(chosen, run.evaluations))
    by_key = {q.key: q for q in run.queries}
    label_paths = [p for p in chosen.label_files() if p.suffix == ".json" and not is_preference_file(p)]
    for path in label_paths:
        labels = read_label_file(path)
        run.label_files.append(str(path))
        if labels.judge and labels.judge not in run.judges:
            run.judges.append(labels.judge)
        for qid, repeats in labels.labels.items():
            query = by_key.get((labels.group, qid))
            if query is None:
                continue
            reasons = (labels.entries.get(qid) or {}).get("reasons") or {}
            reasons = _literal_dict(reasons)
            query.labels = [repeats[r].value for r in sorted(repeats)]
            query.reasons = [str(reasons.get(str(r), reasons.get(r, ""))) for r in sorted(repeats)]
    score_files = [p for p in chosen.score_files() if is_score_file(p)]
    for path in score_files:
        run.score_rows.extend(read_score_file(path))
    if not score_files and label_paths:
        run.score_rows = rows_from_labels(label_paths)
    if not label_paths:
        run.notes.append(f"not evaluated: no judge labels in {eval_dir} (run `tba evaluate {run.path}`)")


def _literal_dict(value) -> dict:
    """Reasons are stored as a dict, or (CSV heritage) as its str()."""
    if isinstance(value, dict):
        return value
    import ast

    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        return {}
    return parsed if isinstance(parsed, dict) else {}
