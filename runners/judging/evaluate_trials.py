"""tba evaluate on a set of trials (issue 42): every trial judged as a run (its own evaluation in its own folder,
evaluate.py), then the set's evaluation under the same judge's identity: SET/eval/<id>/ (evaluation.json and
trials.json, the figures over trials: toolbench_adapter/evaluation/scoring/trial_figures.py) and SET/tables/<id>/
(leaderboards whose row reads SoPR over trials with its 95% CI, with pass@k / pass^k, the flip rate and the agent vs
judge split below it).

Every trial is checked before any judge is asked: a trial not run yet, one with infrastructure failures or one
interrupted is refused (exit 2, naming it and the tba run command that finishes the set) unless ``score_anyway``
(then the trials that ran are scored, the row marked). Every trial is judged with the mode the first one settled,
so the trials' evaluations are one judge's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.comparability import SETUP_FIELD, verdict
from toolbench_adapter.evaluation.evaluations import (
    EvaluationWriter,
    choose_evaluation,
    default_evaluation,
    list_evaluations,
)
from toolbench_adapter.evaluation.scoring.counts import LabelCounts
from toolbench_adapter.evaluation.scoring.results import load_test_ids
from toolbench_adapter.evaluation.scoring.trial_figures import figure_rows, read_figures, set_figures, write_figures
from toolbench_adapter.evaluation.storage import read_label_file
from toolbench_adapter.files.fileio import read_json
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.report import tables
from toolbench_adapter.report.trial_tables import RowTrials
from toolbench_adapter.runs.cost import runs_cost
from toolbench_adapter.runs.folder import MANIFEST
from toolbench_adapter.runs.trial_set import read_trials, trial_dirs

from ..execution.runlock import RunFolderLock
from .evaluate import check_run, evaluate_run, redo_command, safe_name


@dataclass
class TrialsEvaluation:
    trials: list = field(default_factory=list)  # each trial's Evaluation (evaluate.py)
    boards: list = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    text: str = ""
    judgements: int = 0
    judge_failures: int = 0
    labels: LabelCounts = field(default_factory=LabelCounts)
    failure_samples: list[str] = field(default_factory=list)
    evaluation_id: str = ""
    identity: object = None
    mode_choice: str = ""
    default_id: str | None = None
    notes: list[str] = field(default_factory=list)


def set_command(set_dir: Path, record: dict) -> str:
    sessions = [s for s in record.get("sessions") or [] if isinstance(s, dict) and s.get("command")]
    return f"`{sessions[-1]['command']}`" if sessions else f"the tba run --trials command that wrote {set_dir}"


def check_set(set_dir: str | Path, score_anyway: bool) -> tuple[list[Path], list, list[str]]:
    """(the trial folders to judge, each one's check_run result, footnotes): every trial run and scoreable, or
    InputError (exit 2) naming the first that is not, unless ``score_anyway`` (then the trials that ran)."""
    set_dir = Path(set_dir)
    record = read_trials(set_dir)
    folders, checked, notes = [], [], []
    for folder in trial_dirs(set_dir, record):
        if not (folder / MANIFEST).is_file():
            if not score_anyway:
                raise InputError(f"{folder.name} of the set has not run: its trials are not all there", path=folder,
                                 field="trials", fix=f"finish the set with {set_command(set_dir, record)} (finished "
                                 "queries are skipped), or pass --score-anyway to score the trials that ran")
            notes.append(f"scored without {folder.name}: it has not run (tba evaluate --score-anyway)")
            continue
        groups, trial_notes = check_run(folder, score_anyway)
        folders.append(folder)
        checked.append((groups, trial_notes))
        notes += [f"{folder.name}: {note}" for note in trial_notes]
    if not folders:
        raise InputError("no trial of the set has run", path=set_dir, field="trials",
                         fix=f"run it first: {set_command(set_dir, record)}")
    return folders, checked, notes


def evaluate_trials(set_dir: str | Path, client, *, mode: str = "auto", model_label: str | None = None,
                    score_anyway: bool = False, command: str | None = None,
                    checked: tuple[list[Path], list, list[str]] | None = None, prices=None,
                    **options) -> TrialsEvaluation:
    """``options``: evaluate_run's (evaluate_times, concurrency, cache_path, progress, preflight, ...); ``prices``:
    the set's cost in money (runs/cost.py), summed over its trials."""
    set_dir = Path(set_dir)
    record = read_trials(set_dir)
    folders, checks, notes = checked if checked is not None else check_set(set_dir, score_anyway)
    name = safe_name(model_label or str(record.get("name") or set_dir.resolve().name))
    result = TrialsEvaluation(notes=list(notes))
    chosen_mode = mode
    for folder, check in zip(folders, checks, strict=True):
        trial = evaluate_run(folder, client, mode=chosen_mode, model_label=f"{name}@{folder.name}",
                             score_anyway=score_anyway, checked=check, command=command, prices=prices, **options)
        chosen_mode = trial.identity.mode  # every trial judged alike: the mode the first one settled
        result.trials.append(trial)
        result.judgements += trial.judgements
        result.judge_failures += trial.judge_failures
        result.failure_samples += [s for s in trial.failure_samples if s not in result.failure_samples]
        for name_ in ("labels", "by_rule", "by_judge", "failed"):  # over every trial
            setattr(result.labels, name_, getattr(result.labels, name_) + getattr(trial.labels, name_))
    first = result.trials[0]
    result.identity, result.mode_choice = first.identity, first.mode_choice
    if result.judge_failures:
        result.notes.append(f"scored with {result.judge_failures} of {result.judgements} judgements failed (no "
                            "verdict): left out of every denominator (tba evaluate --score-anyway)")
    manifest = read_json(folders[0] / MANIFEST, "run manifest")
    writer = EvaluationWriter(set_dir, first.identity, requested_mode=mode, mode_choice=first.mode_choice,
                              command=command)
    with RunFolderLock(writer.final_eval_dir, command, fix="wait for that tba evaluate to end (a rerun of it reuses "
                       "the cached verdicts), or evaluate with another judge"):
        writer.begin()
        try:
            _write_set(result, set_dir, folders, manifest, writer, name, score_anyway, runs_cost(folders, prices))
        except BaseException:
            writer.discard()
            raise
    moved = []
    for path in result.written:
        try:
            moved.append(set_dir / "tables" / result.evaluation_id / Path(path).relative_to(writer.tables_dir))
        except ValueError:
            moved.append(Path(path))
    result.written = moved
    default = default_evaluation(list_evaluations(set_dir))
    result.default_id = default.id if default else None
    return result


def _trial_labels(folder: Path, evaluation_id: str) -> dict:
    """group -> query id -> repeat -> Label of one trial's evaluation."""
    chosen, _ = choose_evaluation(folder, evaluation_id)
    out: dict = {}
    for path in chosen.label_files() if chosen is not None else []:
        if path.suffix == ".json":
            labels = read_label_file(path)
            out[labels.group] = labels.labels
    return out


def _test_ids(manifest: dict, groups: list[str]) -> dict[str, list[str]] | None:
    try:
        ids_dir = QuerySet((manifest.get("config") or {}).get("stb_root")).ids_dir
    except InputError:
        return None  # the checkout moved: strict figures need the test ids, upstream ones do not
    found = {g: ids for g in groups if (ids := load_test_ids(ids_dir, g)) is not None}
    return found or None


def _write_set(result: TrialsEvaluation, set_dir: Path, folders: list[Path], manifest: dict,
               writer: EvaluationWriter, name: str, score_anyway: bool, cost) -> None:
    labels = [_trial_labels(folder, trial.evaluation_id) for folder, trial in zip(folders, result.trials, strict=True)]
    groups = list(dict.fromkeys(g for trial in labels for g in trial))
    figures = set_figures(labels, _test_ids(manifest, groups))
    write_figures(writer.eval_dir, figures)
    modes = read_figures(writer.eval_dir)
    identity = result.identity
    method = (manifest.get("config") or {}).get("method")
    rows = figure_rows(modes, model=name, method=method, judge=identity.label,
                       source=str(writer.final_eval_dir / "trials.json"))
    found = verdict(manifest.get(SETUP_FIELD), identity.as_dict())
    card = citation(identity)
    parts = []
    if not result.judge_failures or score_anyway:
        marked = {name: "; ".join(result.notes)} if result.notes else None
        row_trials = {name: {mode: RowTrials(f.groups, f.average) for mode, f in modes.items()}}
        for board in tables.build_leaderboards(rows, scored_anyway=marked, comparability={name: found.line},
                                               judge_cards={name: card}, trials=row_trials, costs={name: cost}):
            result.boards.append(board)
            result.written.extend(tables.write_leaderboard(board, writer.tables_dir))
            parts.append(tables.to_markdown(board))
    result.evaluation_id = writer.finish(
        judgements=result.judgements, failed=result.judge_failures, marks=result.notes,
        extra={"run_model": manifest.get("model"), "row": name, "trials": {
            "count": len(labels), "folders": [f.name for f in folders],
            "evaluations": [t.evaluation_id for t in result.trials]},
            "comparability": found.as_dict(), "judge_card": card,
            "labels": result.labels.as_dict()})
    result.text = "\n".join(parts)


__all__ = ["TrialsEvaluation", "check_set", "evaluate_trials", "redo_command"]
