"""tba table: leaderboard tables (Markdown, CSV, LaTeX, PNG) and per-run error taxonomy tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from toolbench_adapter.errors import RUN_FOLDER_FIX, InputError
from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.comparability import run_line
from toolbench_adapter.evaluation.evaluations import choose_evaluation, describe_choice, refuse_mixed
from toolbench_adapter.evaluation.scoring.results import (
    is_score_file,
    read_score_file,
    rows_from_label_file,
    rows_from_labels,
)
from toolbench_adapter.evaluation.storage import write_text_atomic
from toolbench_adapter.files.fileio import read_json
from toolbench_adapter.report import tables, taxonomy
from toolbench_adapter.runs.folder import MANIFEST, run_counts

from ._common import JUDGE_FAILURES_EXIT

HELP = """\
Build leaderboards in the StableToolBench README layout: rows = model (method), columns I1 Inst, I1 Cat,
I1 Tool, I2 Cat, I2 Inst, I3 Inst, Average; cells mean±std (one decimal); Average = mean of the group means ±
mean of the group stds, as upstream. One table per metric and scoring mode (SoPR upstream/strict, SoWR
upstream/corrected), captioned with the judge. Written as OUT/leaderboard_<metric>_<mode>.{md,csv,tex,png}.
Each row's footnote gives its n per cell (upstream: queries judged; strict: test ids with an answer of the
test set) and how many cells its Average averages. A cell over zero queries (nothing judged, no verdict, no
test ids) has no score: "–" (CSV: empty, with its n column 0; LaTeX: "--"; no bar), a footnote says why, and
the Average leaves it out.

RESULTS may be, in any mix:
  score files      written by `tba score --out`, `tba judge` (scores_*.json) or `tba reproduce --out`;
  label files or folders   {group}_{model}.json/.csv pass-rate labels or {group}_{ref}_{out} preference
                   files (upstream or ours), scored on the fly (add --test-ids for strict SoPR);
  run folders      folders written by `tba run` (they hold steps.jsonl): the leaderboard row of the run's
                   latest complete evaluation (tba evaluate keeps each judge's apart under RUN/eval/ID;
                   --judge-id ID shows another; the line above the tables names it and the others), and an
                   error-taxonomy table per run, OUT/taxonomy_<run>.{md,csv}: status codes and parse error
                   kinds per group, and the run summary's counts (queries, finished, infra failures, valid,
                   answered, win). A run whose evaluations all failed gets no row: exit 3 with the command
                   that redoes its failed judgements.
  sets of trials   folders written by `tba run --trials K`: the set's row (SoPR over trials with its 95% CI,
                   and below the board pass@k / pass^k for k = 1..K, the flip rate and the agent vs judge split),
                   from its latest complete evaluation (tba evaluate SET), and each trial's error taxonomy.
A row whose score left failed judgements out (a score file written with --score-anyway) is marked † with
a footnote; a row judged by the run's own model (tba evaluate --judge-self) reads "(self-judged)".
Every table carries a line against the StableToolBench leaderboard's setup (toolbench_adapter/evaluation/
comparability.py): "comparable with the StableToolBench leaderboard: yes", or "not comparable ...:" and the
reasons (queries, tool documents, tool responses, judge, method); score and label files: "setup not recorded"."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("table", help="leaderboard and error-taxonomy tables", description=HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", metavar="RESULTS", help="score files, label files/folders, run folders")
    parser.add_argument("--out", default="results/tables", metavar="DIR", help="output folder (default results/tables)")
    parser.add_argument("--test-ids", default=None, metavar="DIR", help="test-id folder for strict SoPR of label files")
    parser.add_argument("--no-png", action="store_true", help="skip the bar charts")
    parser.add_argument("--judge-id", default=None, metavar="ID",
                        help="run folders: the evaluation to tabulate (its folder under RUN/eval; a unique start is "
                        "enough). Default: the run's latest complete evaluation")
    parser.add_argument("--model-label", action="append", default=[], metavar="LABEL | OLD=NEW",
                        help="row name: LABEL renames the one model in RESULTS; OLD=NEW renames model OLD "
                        "(repeatable). Rows are named after the run (tba evaluate) or the label file's model")
    parser.add_argument("--prices", default=None, metavar="FILE",
                        help="run folders and sets of trials: their cost in money in the CSV's cost column, from these "
                        "prices per model per million input and output tokens (none shipped or guessed; without it: "
                        "calls, tokens and latency only)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench_adapter.runs.cost import read_prices, run_cost, runs_cost
    from toolbench_adapter.runs.trial_set import is_trial_set, read_trials, trial_dirs

    prices = read_prices(args.prices) if args.prices else None  # a bad price file: exit 2 before anything
    rows, runs, counts, unfinished, comparable, cards, trials, costs = [], [], {}, [], {}, {}, {}, {}
    for item in map(Path, args.results):
        if item.is_dir() and is_trial_set(item):  # a set of trials (tba run --trials K)
            found = set_rows(item, args.judge_id, unfinished, comparable, cards, trials)
            rows.extend(found)
            folders = trial_dirs(item, read_trials(item))
            runs.extend(t for t in folders if (t / taxonomy.STEPS_FILE).exists())
            costs.update({row.model: runs_cost(folders, prices) for row in found})
        elif item.is_dir() and (item / taxonomy.STEPS_FILE).exists():
            runs.append(item)
            found = run_rows(item, args.judge_id, unfinished, comparable, cards)
            rows.extend(found)
            counts.update({row.model: run_counts(item) for row in found})
            costs.update({row.model: run_cost(item, prices) for row in found})
        elif is_score_file(item):
            rows.extend(read_score_file(item))
        elif item.exists():
            refuse_mixed(item)  # two judges' labels in one folder would make one row of both
            rows.extend(rows_from_labels([item], args.test_ids))
        else:
            raise InputError("no such file or folder", path=item,
                             fix=f"{RUN_FOLDER_FIX}; or a score file or label files (tba table --help)")
    renamed = relabel(rows, args.model_label)
    counts = {new.model: counts[old.model] for old, new in zip(rows, renamed, strict=True) if old.model in counts}
    comparable, cards, trials, costs = ({new.model: lines[old.model] for old, new in zip(rows, renamed, strict=True)
                                         if old.model in lines} for lines in (comparable, cards, trials, costs))
    rows = renamed
    out = Path(args.out)
    for board in tables.build_leaderboards(rows, counts=counts, comparability=comparable, judge_cards=cards,
                                           trials=trials, costs=costs):
        written = tables.write_leaderboard(board, out, png=not args.no_png)
        print(tables.to_markdown(board))
        print("written: " + ", ".join(str(p) for p in written) + "\n")
    for run_dir in runs:
        tax = taxonomy.read_taxonomy(run_dir)
        parent = run_dir.resolve().parent
        name = (f"{parent.name}_{run_dir.name}" if is_trial_set(parent) else run_dir.resolve().name)
        stem = out / f"taxonomy_{name}"
        write_text_atomic(stem.with_suffix(".md"), taxonomy.to_markdown(tax))
        write_text_atomic(stem.with_suffix(".csv"), taxonomy.to_csv(tax))
        print(taxonomy.to_markdown(tax))
        print(f"written: {stem}.md, {stem}.csv\n")
    if not rows and not runs:
        raise InputError("no scores, labels or runs found in RESULTS", fix="see `tba table --help`")
    for run_dir, record in unfinished:
        print(f"{run_dir}: no leaderboard: no complete evaluation; the latest, {record.summary()}, has judgements "
              f"without a verdict. Redo them (cached verdicts are kept): {record.data.get('command') or 'tba evaluate ' + str(run_dir)}")
    return JUDGE_FAILURES_EXIT if unfinished else 0


def run_rows(run_dir: Path, judge_id: str | None, unfinished: list, comparable: dict | None = None,
             cards: dict | None = None) -> list:
    """The score rows of a run folder's evaluation: ``judge_id``'s, else the latest complete one (evaluations.py),
    named on stdout with the others and its comparability line (``comparable``: model -> line, filled); a run
    whose evaluations all failed joins ``unfinished``; ``cards``: model -> its judge's audit line (evaluation/audit/cards.py:
    the card as it is now, so an audit made after the evaluation is cited)."""
    chosen, records = choose_evaluation(run_dir, judge_id)
    print(f"{run_dir}: {describe_choice(chosen, records)}")
    labels = (chosen.data.get("labels") or {}).get("text") if chosen is not None else None
    if labels:  # upstream's rule apart from the judge's verdicts (counts.LabelCounts, recorded by tba evaluate)
        print(f"{run_dir}: {labels}")
    if chosen is None:
        if records:
            unfinished.append((run_dir, records[-1]))
        return []
    text = run_line(read_json(run_dir / MANIFEST), chosen.data.get("judge"))  # printed with the tables
    scores = [path for path in chosen.score_files() if is_score_file(path)]
    if scores:
        rows = [row for path in scores for row in read_score_file(path)]
    else:  # a failed evaluation chosen by --judge-id wrote no score file: its labels, failed judgements left out (†)
        rows = [row for path in chosen.label_files() if path.suffix == ".json" for row in rows_from_label_file(path)]
    if comparable is not None:
        comparable.update({row.model: text for row in rows})
    if cards is not None and chosen.data.get("judge"):
        card = citation(chosen.data["judge"])
        cards.update({row.model: card for row in rows})
    return rows


def set_rows(set_dir: Path, judge_id: str | None, unfinished: list, comparable: dict, cards: dict,
             trials: dict) -> list:
    """A set of trials' score rows from its evaluation (``judge_id``'s, else the latest complete one), its figures
    over trials (``trials``: model -> mode -> RowTrials, filled), comparability and judge audit lines."""
    from toolbench_adapter.evaluation.scoring.trial_figures import figure_rows, read_figures
    from toolbench_adapter.report.trial_tables import RowTrials
    from toolbench_adapter.runs.trial_set import read_trials, trial_dirs

    chosen, records = choose_evaluation(set_dir, judge_id)
    print(f"{set_dir}: a set of trials; {describe_choice(chosen, records)}")
    if chosen is None:
        if records:
            unfinished.append((set_dir, records[-1]))
        return []
    record = read_trials(set_dir)
    manifest = read_json(trial_dirs(set_dir, record)[0] / MANIFEST)
    modes = read_figures(chosen.eval_dir)
    model = str(chosen.data.get("row") or set_dir.resolve().name)
    rows = figure_rows(modes, model=model, method=(record.get("config") or {}).get("method"), judge=chosen.judge,
                       source=str(chosen.eval_dir))
    trials[model] = {mode: RowTrials(f.groups, f.average) for mode, f in modes.items()}
    comparable[model] = run_line(manifest, chosen.data.get("judge"))
    if chosen.data.get("judge"):
        cards[model] = citation(chosen.data["judge"])
    return rows


def relabel(rows: list, labels: list[str]) -> list:
    """Rows with their model renamed by --model-label (LABEL for a single model, or OLD=NEW pairs)."""
    if not labels:
        return rows
    from dataclasses import replace

    models = list(dict.fromkeys(row.model for row in rows))
    renames: dict[str, str] = {}
    for label in labels:
        old, sep, new = label.partition("=")
        if not sep:
            if len(models) != 1 or len(labels) != 1:
                raise InputError(f"--model-label {label!r} is ambiguous: RESULTS hold the models {models}",
                                 field="--model-label", fix="write OLD=NEW for each model to rename")
            old, new = models[0], label
        if old not in models:
            raise InputError(f"--model-label {label!r}: no model {old!r} in RESULTS", field="--model-label",
                             fix=f"choose one of {models}")
        if not new.strip():
            raise InputError(f"--model-label {label!r} gives an empty name", field="--model-label")
        renames[old] = new.strip()
    return [replace(row, model=renames.get(row.model, row.model)) for row in rows]
