"""A run folder -> converted answers -> judge labels -> leaderboard row and error taxonomy.

Everything lands inside the run folder: converted/{model}/{group}.json (upstream layout), and per evaluation,
kept apart under its judge's identity (toolbench_adapter/evaluation/evaluations.py), eval/<judge-id>/ (labels,
scores, judge metadata, evaluation.json) and tables/<judge-id>/ (leaderboards as Markdown, CSV, LaTeX, PNG); the
error taxonomy, which no judge changes, in tables/taxonomy.*. A second judge never erases the first; a failed
evaluation never replaces a complete one.

A run is scored only when it is whole: every selected query finished (none lost to an infrastructure
failure, none left unrun by an interrupted ``tba run``) and every judgement has a verdict. Otherwise the
leaderboard is not written, unless ``score_anyway``: then its row is marked with a footnote per reason.
A judge that is the run's own model is refused unless asked for (``judge_self``): its tables say self-judged."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.answers.convert import convert_folder
from toolbench_adapter.errors import RUN_FOLDER_FIX, InputError
from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.comparability import SETUP_FIELD, verdict
from toolbench_adapter.evaluation.evaluations import (
    TABLES_DIR,
    EvaluationWriter,
    JudgeIdentity,
    default_evaluation,
    is_own_model,
    list_evaluations,
    run_endpoints_of,
    run_model_of,
    same_model,
)
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.judge import make_judge
from toolbench_adapter.evaluation.judging.passrate import JudgingProgress
from toolbench_adapter.evaluation.judging.preflight import prepare_judge
from toolbench_adapter.evaluation.judging.run_judge import judge_file
from toolbench_adapter.evaluation.scoring.counts import LabelCounts
from toolbench_adapter.files.fileio import write_json_atomic, write_text_atomic
from toolbench_adapter.outcomes import INFRA_FAILURE
from toolbench_adapter.queryset.queries import GROUPS, QuerySet, is_group_name
from toolbench_adapter.report import tables, taxonomy
from toolbench_adapter.runs.cost import run_cost
from toolbench_adapter.runs.folder import (
    ERRORS,
    MANIFEST,
    QUERY_STATS,
    STEPS,
    STEPS_DIR,
    answer_path,
    is_finished,
    run_counts,
    summarize,
)
from toolbench_adapter.structured.describe import row_name

from ..config import RunConfig, select_queries
from ..execution.runlock import RunFolderLock, describe, live_holder

# flags only: under make, the CLI names the make variable of each (runners/cli/make_hints.py)
SELF_JUDGE_FIX = ("pass a judge of its own: --judge-url URL --judge-model NAME (its key: --judge-api-key or "
                  "OPENAI_API_KEY), or --judge-self to let the model judge itself, marked self-judged in every table")


@dataclass
class Evaluation:
    rows: list = field(default_factory=list)
    boards: list = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    text: str = ""
    judgements: int = 0  # (query, repeat) pairs judged, cached and decided by rule included
    judge_failures: int = 0  # of those, the ones without a verdict: not scored
    labels: LabelCounts = field(default_factory=LabelCounts)  # by upstream's rule apart from the judge's (evaluation/scoring/counts.py)
    failure_samples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why the row is marked (score_anyway)
    evaluation_id: str = ""  # its folder under eval/ and tables/ (evaluations.py)
    identity: JudgeIdentity | None = None
    mode_choice: str = ""  # how the judge mode was chosen (asked for, or what the endpoint answered)
    default_id: str | None = None  # the run's default evaluation once this one ended (the latest complete)


def safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in text).strip("_") or "model"


def refuse_self_judging(client, manifest: dict, judge_self: bool) -> None:
    """A judge that is the run's own model is refused (check_self_judging), asked of the built client."""
    check_self_judging(manifest, getattr(client, "model", None) or getattr(client, "name", None),
                       judge_self=judge_self, pipeline_check=bool(getattr(client, "judge_note", None)), client=client)


def check_self_judging(manifest: dict, judge_model: str | None, *, judge_self: bool, pipeline_check: bool,
                       client=None) -> None:
    """The self-judge rule, in one place (tba evaluate after the run, tba eval before it): a judge that is the run's
    own model (the same model name, or, given the built ``client``, the same weights under another served name:
    evaluations.is_own_model) is refused, exit 2 naming --judge-self, unless asked for; the local 135M judge
    (``pipeline_check``: a pipeline check, labelled so) is let through."""
    run_model = run_model_of(manifest)
    own = is_own_model(manifest, client, judge_model) if client is not None else same_model(run_model, judge_model)
    if judge_self or pipeline_check or not own:
        return
    where = ", ".join(run_endpoints_of(manifest))
    how = "" if same_model(run_model, judge_model) else f" under another name (the same weights: {manifest['weights']})"
    raise InputError(f"the judge {judge_model!r} is the run's own model ({run_model!r}{' at ' + where if where else ''})"
                     f"{how}: a model grading its own answers gives no StableToolBench number", field="--judge-model",
                     fix=SELF_JUDGE_FIX)


def evaluate_run(run_dir: str | Path, client, *, evaluator: str | None = None, evaluators_dir: str | None = None,
                 mode: str = "auto", evaluate_times: int = 3, concurrency: int = 4, cache_path: str | None = None,
                 model_label: str | None = None, progress: bool | JudgingProgress = True, max_tokens: int | None = None,
                 score_anyway: bool = False, executor=None, preflight: bool = False, judge_self: bool = False,
                 checked: tuple[list[str], list[str]] | None = None, command: str | None = None,
                 judge_constrain: bool = False, prices=None) -> Evaluation:
    """``executor``: what judges the uncached answers (passrate.JudgeExecutor; None: ``concurrency`` threads).
    Refuses (InputError) a run with infrastructure failures or interrupted, unless ``score_anyway``, and a judge
    that is the run's own model unless ``judge_self``. Judgement failures are counted in the result
    (``judge_failures``); the leaderboard is then not written, unless ``score_anyway`` (marked). ``preflight``:
    check the judge before any conversion and settle ``mode="auto"`` by asking it (preflight.prepare_judge);
    without, auto goes by the client's abilities (in-process clients). ``checked``: check_run's result, when the
    caller has it already. The evaluation is kept under its judge's identity (evaluations.py)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    method = manifest["config"]["method"]
    # the row is named after the run (a model "name" can be a 70-character replay path); --model-label renames
    # a run with --constrain / --on-invalid (not upstream) names them in its row: e.g. NAME@constrain-schema@reask-2
    model = safe_name(row_name(model_label or str(manifest.get("name") or run_dir.resolve().name),
                               manifest.get("config")))
    groups, notes = checked if checked is not None else check_run(run_dir, score_anyway)
    notes = list(notes)
    try:
        ids_dir = QuerySet(manifest["config"].get("stb_root")).ids_dir
    except InputError:
        ids_dir = None  # the checkout moved: strict scores need the test ids, upstream scores do not
    spec = load_evaluator(evaluator, [evaluators_dir] if evaluators_dir else [])
    refuse_self_judging(client, manifest, judge_self)  # before the judge is asked anything
    options = {"max_tokens": max_tokens, **({"constrain": True} if judge_constrain else {})}
    if preflight:
        judge = prepare_judge(client, spec, mode, **options)
    else:
        judge = make_judge(client, spec, mode, **options)
        judge.mode_choice = f"--judge-mode {mode}" if mode != "auto" else "auto: by the client's abilities (no probe)"
    identity = JudgeIdentity.of(client, judge, evaluate_times, manifest)
    writer = EvaluationWriter(run_dir, identity, requested_mode=mode, mode_choice=judge.mode_choice, command=command)
    result = Evaluation(identity=identity, mode_choice=judge.mode_choice)
    # one writer per evaluation folder: the same judge twice at once would interleave its files
    with RunFolderLock(writer.final_eval_dir, command, fix="wait for that tba evaluate to end (a rerun of it reuses "
                       "the cached verdicts), or evaluate with another judge"):
        writer.begin()
        try:
            _judge_groups(result, run_dir, groups, judge, writer, identity, model=model, method=method,
                          ids_dir=ids_dir, evaluate_times=evaluate_times, concurrency=concurrency,
                          cache_path=cache_path, progress=progress, executor=executor, score_anyway=score_anyway)
            if result.judge_failures:
                notes.append(f"scored with {result.judge_failures} of {result.judgements} judgements failed (no "
                             "verdict): left out of every denominator (tba evaluate --score-anyway)")
            result.notes = notes
            parts = []
            # against the leaderboard's setup: the run's recorded facts and this judge (comparability.py)
            found = verdict(manifest.get(SETUP_FIELD), identity.as_dict())
            card = citation(identity)  # the judge's audit (tba judge-audit), or the command that makes one
            # a leaderboard needs every judgement (and every query): otherwise only with score_anyway, marked
            if not result.judge_failures or score_anyway:
                marked = {model: "; ".join(notes)} if notes else None
                # the run's counts (evaluation/scoring/counts.py) beside the scores: how many queries each cell's model answered
                for board in tables.build_leaderboards(result.rows, scored_anyway=marked,
                                                       counts={model: run_counts(run_dir)},
                                                       comparability={model: found.line},
                                                       judge_cards={model: card},
                                                       costs={model: run_cost(run_dir, prices)}):
                    result.boards.append(board)
                    result.written.extend(tables.write_leaderboard(board, writer.tables_dir))
                    parts.append(tables.to_markdown(board))
            result.evaluation_id = writer.finish(judgements=result.judgements, failed=result.judge_failures,
                                                 marks=notes, extra={"run_model": run_model_of(manifest),
                                                                     "row": model,
                                                                     "comparability": found.as_dict(),
                                                                     "judge_card": card,
                                                                     "labels": result.labels.as_dict()})
        except BaseException:
            writer.discard()
            raise
    result.written = [_moved(path, writer, run_dir, result.evaluation_id) for path in result.written]
    default = default_evaluation(list_evaluations(run_dir))
    result.default_id = default.id if default else None
    parts.append(_taxonomy(run_dir, notes, result.written))
    result.text = "\n".join(parts)
    return result


def _judge_groups(result: Evaluation, run_dir: Path, groups: list[str], judge, writer: EvaluationWriter,
                  identity: JudgeIdentity, *, model: str, method: str, ids_dir, evaluate_times: int, concurrency: int,
                  cache_path, progress: bool | JudgingProgress, executor, score_anyway: bool) -> None:
    meta = {"evaluation": writer.id, "judge_mode_chosen_by": judge.mode_choice, "self_judged": identity.self_judged}
    for group in groups:
        converted = convert_folder(run_dir / group, method)
        converted_path = write_json_atomic(run_dir / "converted" / model / f"{group}.json", converted, indent=None)
        has_ids = ids_dir is not None and (ids_dir / f"{group}.json").exists()
        outcome = judge_file(converted_path, judge, writer.eval_dir, group=group, model=model,
                             evaluate_times=evaluate_times, test_ids_dir=ids_dir if has_ids else None,
                             concurrency=concurrency, cache_path=cache_path, progress=progress,
                             executor=executor, score_anyway=score_anyway, judge_label=identity.label,
                             meta_extra=meta)
        # a group whose every judgement failed has no score at all: no cell, rather than 0.0 over nothing
        result.rows.extend(row for row in outcome.rows if row.score.runs or not row.score.errors)
        result.judgements += outcome.run.judgements
        result.judge_failures += outcome.run.errors
        for entry in outcome.run.entries.values():
            reasons = entry.get("reasons") or {}
            for repeat, label in entry["is_solved"].items():
                result.labels.add(label, reasons.get(repeat))
        result.failure_samples += [s for s in outcome.run.error_samples if s not in result.failure_samples]


def _moved(path: Path, writer: EvaluationWriter, run_dir: Path, target: str) -> Path:
    """A path written into the staging folder, where it lies now."""
    try:
        return run_dir / TABLES_DIR / target / Path(path).relative_to(writer.tables_dir)
    except ValueError:
        return Path(path)


def _taxonomy(run_dir: Path, notes: list[str], written: list[Path]) -> str:
    """tables/taxonomy.{md,csv}: status codes and parse error kinds, the same whoever judges."""
    if (run_dir / STEPS).exists() or not notes:
        tax = taxonomy.read_taxonomy(run_dir)
        stem = run_dir / TABLES_DIR / "taxonomy"
        write_text_atomic(stem.with_suffix(".md"), taxonomy.to_markdown(tax))
        write_text_atomic(stem.with_suffix(".csv"), taxonomy.to_csv(tax))
        written.extend([stem.with_suffix(".md"), stem.with_suffix(".csv")])
        return taxonomy.to_markdown(tax)
    # an interrupted run that never wrote its step records: there is nothing to count
    return f"no error taxonomy: {run_dir / STEPS} was not written (the run was interrupted)"


def read_manifest(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST
    if not manifest_path.exists():
        if run_dir.is_dir() and any((run_dir / name).exists() for name in (QUERY_STATS, STEPS, STEPS_DIR)):
            raise InputError("the run was interrupted before it wrote manifest.json: it cannot be scored (which "
                             "queries, method and settings it ran is not recorded)", path=run_dir,
                             field="manifest.json", fix="rerun the tba run command that wrote this folder: "
                             "finished queries are skipped and the manifest is written")
        raise InputError("not a run folder (no manifest.json)", path=run_dir, fix=RUN_FOLDER_FIX)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"manifest.json is not valid JSON ({exc})", path=manifest_path,
                         fix="rerun the tba run command that wrote this folder: it rewrites the manifest") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict) \
            or "method" not in manifest["config"]:
        raise InputError("manifest.json has no config with a method", path=manifest_path, field="config.method",
                         fix="pass a folder written by tba run")
    return manifest


def check_run(run_dir: str | Path, score_anyway: bool) -> tuple[list[str], list[str]]:
    """(groups with answer files, footnotes) of a run that can be scored; InputError (exit 2) for one that
    cannot: no answer file at all, or (unless ``score_anyway``) infrastructure failures or an interruption
    (selected queries never run). With ``score_anyway`` one footnote per reason, for the marked row."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    method = manifest["config"]["method"]
    infra = infra_failure_note(run_dir, score_anyway)  # first: it names the failures and their redo
    folders = [g for g in GROUPS if (run_dir / g).is_dir()] + sorted(
        p.name for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name) and p.name not in GROUPS)
    # a group folder without answer files of this method (every query of it failed, say) gets no row: an
    # empty converted file would be judged into a score over nothing
    groups = [g for g in folders if any((run_dir / g).glob(f"*_{method}.json"))]
    if not groups:
        raise InputError(f"the run folder holds no {method} answer files", path=run_dir,
                         fix=f"run {redo_command(manifest)} (infrastructure failures and queries a killed run "
                         "never reached write no answer file; a rerun redoes them)")
    notes = [infra, interrupted_note(run_dir, score_anyway)]
    return groups, [note for note in notes if note]


def unrun_queries(run_dir: Path, manifest: dict) -> tuple[int, int] | None:
    """(missing, selected): the queries the run's config selects that have neither a finished answer file nor a
    recorded infrastructure failure, i.e. were never run (a killed run, a shard never merged). None when the
    selection cannot be rebuilt (the query checkout moved)."""
    config = manifest["config"]
    known = RunConfig.__dataclass_fields__
    try:
        cfg = RunConfig(**{key: value for key, value in config.items() if key in known})
        selected = select_queries(cfg)
    except (InputError, TypeError, ValueError, OSError):
        return None
    failed: set[tuple[str, str]] = set()
    stats = run_dir / QUERY_STATS
    if stats.exists():
        latest: dict[tuple[str, str], str] = {}
        for line in stats.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                latest[(str(record["group"]), str(record["query_id"]))] = record.get("outcome")
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by the kill: the answer files decide
        failed = {key for key, outcome in latest.items() if outcome == INFRA_FAILURE}
    missing = sum(1 for q in selected if (q.group, str(q.query_id)) not in failed
                  and not is_finished(answer_path(run_dir, q.group, q.query_id, config["method"])))
    return missing, len(selected)


def interrupted_note(run_dir: str | Path, score_anyway: bool) -> str | None:
    """None for a run whose selected queries all ran. A run killed before its end (its last session has no
    ``finished``; selected queries have neither an answer nor a recorded failure) is refused unless
    ``score_anyway``, naming how many queries are missing and the command that finishes it (the manifest keeps
    the command of each session)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    sessions = [s for s in manifest.get("sessions", []) if isinstance(s, dict)]
    unfinished = bool(sessions) and "finished" not in sessions[-1]
    counts = unrun_queries(run_dir, manifest)
    if counts is not None and counts[0] == 0:
        return None  # every selected query ran (a kill after the last one leaves nothing to redo)
    if counts is None and not unfinished:
        return None  # the selection cannot be rebuilt and every session ended: nothing says it is incomplete
    holder = live_holder(run_dir) if unfinished else None
    if holder is not None:  # the run-folder lock (runlock.py) is held: the run is not interrupted, it is running
        cause = f"the run is still running ({describe(holder)})"
    elif unfinished:
        cause = f"the run was interrupted: its last session (started {sessions[-1].get('started')}) never finished"
    else:
        cause = "the run is incomplete (a session was interrupted, or answer files were removed)"
    if counts is None:
        what = "how many queries are missing is unknown (the query files it selected from cannot be read here)"
        short = "an unknown number of queries never run"
    else:
        what = f"{counts[0]} of {counts[1]} selected queries have no answer file and no recorded failure" + (
            " yet" if holder is not None else "")
        short = f"{counts[0]} of {counts[1]} queries never run"
    if not score_anyway:
        fix = (f"finish it with {redo_command(manifest)} (finished queries are skipped); or pass "
               "--score-anyway to score it as it is (the table marks the row)")
        if holder is not None:
            fix = ("wait for it to end, then run this command again; or pass --score-anyway to score the queries "
                   "finished so far (the table marks the row)")
        raise InputError(f"{cause}; {what}", path=run_dir, field="sessions[-1].finished" if unfinished else "queries",
                         fix=fix)
    state = "the run was still running" if holder is not None else "the run was interrupted"
    return f"scored with {short} ({state}): no answer for them (tba evaluate --score-anyway)"


def infra_failure_note(run_dir: str | Path, score_anyway: bool) -> str | None:
    """None for a run without infrastructure failures; with some, refuse (exit 2) unless ``score_anyway``,
    and then the footnote that marks the row: those queries have no answer file, so scores would count them
    as unanswered (strict) or leave them out of the denominator (upstream) without a word."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    totals = summarize(run_dir, manifest["config"]["method"])
    count = totals["infra_failures"]
    if not count:
        return None
    kinds = ", ".join(f"{kind} {n}" for kind, n in totals["infra_failures_by_kind"].items())
    if not score_anyway:
        raise InputError(f"{count} of {totals['queries']} queries ended in infrastructure failures ({kinds}) and "
                         f"have no answer file (listed in {run_dir / ERRORS})", path=run_dir,
                         field="totals.infra_failures",
                         fix=f"re-run {redo_command(manifest)}: it redoes exactly those queries; "
                         "or pass --score-anyway to score the run as it is (the table marks the row)")
    return (f"scored with {count} of {totals['queries']} queries lost to infrastructure failures ({kinds}): "
            "no answer for them (tba evaluate --score-anyway)")


def redo_command(manifest: dict) -> str:
    """The command that wrote the run's last session, as the manifest recorded it, else a description."""
    command = next((s.get("command") for s in reversed(manifest.get("sessions", [])) if s.get("command")), None)
    return f"`{command}`" if command else "the tba run command that wrote this folder"
