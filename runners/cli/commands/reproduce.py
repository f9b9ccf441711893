"""tba reproduce: recompute SoPR / SoWR from released label files, beside the published tables."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labelsets import LAYOUTS
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.reproduce import (
    check_matches,
    compare_published,
    default_test_ids,
    example_note,
    parse_matches,
    published_text,
    report_text,
    reproduce_example,
    reproduce_labels,
    unpaired_fix,
)
from toolbench_adapter.evaluation.scoring.results import write_score_file
from toolbench_adapter.report.tables import build_leaderboards, to_markdown

from ..ranges import REPEATS

HELP = f"""\
Recompute the pass rate (SoPR) and win rate (SoWR) from released label files and print them as leaderboards:
the six groups, the Average (mean of the six) and I1 / I2 / I3 (means of the G1 groups, the G2 groups, and
G3_instruction). SoPR in both denominators: upstream (the queries with an answer file) and strict (the whole test-id set,
missing answers Unsolved; each strict cell says "n of N test ids"). SoWR as upstream (ties count 0) and
corrected (ties count half). A score over one judge repeat prints no ±.

Without --labels: StableToolBench's released example (data_example/ of --stb-root), 3 queries of
G1_instruction. --labels DIR...: any label set, laid out as
  {LAYOUTS[0]}
  {LAYOUTS[1]}
  {LAYOUTS[2]}
A run folder (or its RUN/eval/ID) among them: that evaluation's labels; beside published tables its row goes
with its line against the leaderboard's setup ("comparable with the StableToolBench leaderboard: yes", or "not
comparable ...:" and why).

--published FILE|FILE#N|stb|toolbench|all: published tables compared cell by cell: published, reproduced,
difference, and exact / within rounding (at most one unit of the last printed digit) / differs, with "K of M
published cells reproduced exactly, W within rounding, D differ, U without labels, E not reported" per table. A
FILE is read as the paper prints it: Markdown (bold, italics, code, links, footnote marks such as †, *, ^a
taken off), LaTeX tabular (\\textbf, \\underline, $\\pm$, \\multirow, \\multicolumn spans, rules) or
CSV / TSV; every table in it is read (FILE#N picks table N), each with its metric from its own column headers,
a section row, its caption or the text above it (none: exit 2 with the --published-metric flag to add). Rows are named by their leading text cells joined ("ToolLLaMA-2-7b-v2 / DFSDT / StepTool"); "/", "-",
"–", "N/A" cells are "not reported"; a header that places nowhere is named in the output and its numbers
are in M ("N in columns not placed"). Rows and models that do not pair up are printed side by side with their
closest candidates and a ready --match line. stb =
StableToolBench's README tables (GPT-based cache SoPR/SoWR, MirrorAPI-Cache SoPR/FAC, legacy ToolLLaMA rows),
toolbench = ToolBench's leaderboard CSVs; both ship with the project with the file and commit they come from.
Every published Average is checked against its own six cells: the mean (from the six rounded cells, or only
within rounding: unrounded values), and its ± apart (mean of the cell stds, std of the per-group means, or
std over repeats of the average; "mean follows, ± differs" is not a wrong Average).
Exit 0 when cells differ (a finding); 2 when a file holds no readable table or no row pairs with a model.
--check-only: only that Average check, no labels needed."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reproduce", help="recompute SoPR/SoWR from released labels, beside published tables",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", nargs="+", default=None, metavar="DIR",
                        help="label folders or files (default: the released example of --stb-root)")
    parser.add_argument("--stb-root", default=None, metavar="DIR",
                        help="StableToolBench checkout: data_example/ and the test ids (default: $TBA_STB_ROOT)")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder ({group}.json) for the strict SoPR (default: the checkout's "
                        "solvable_queries_example/test_query_ids for the example, solvable_queries/test_query_ids "
                        "for --labels)")
    parser.add_argument("--evaluate-times", type=REPEATS, default=None,
                        help="repeats to score (default: the highest repeat index in the labels + 1)")
    parser.add_argument("--published", action="append", default=[], metavar="FILE|FILE#N|stb|toolbench|all",
                        help="published tables to compare with (repeatable): a Markdown / LaTeX / CSV / TSV file "
                        "as the paper prints it (every table in it; FILE#N for its table N) or a shipped set / id")
    parser.add_argument("--published-metric", action="append", default=[], metavar="[[FILE#]N=]METRIC",
                        help="metric (SoPR, SoWR, FAC; 'pass rate', 'win rate') of every table of the --published "
                        "files, or of table N (N=SoWR; FILE#N=SoWR for one file's); repeatable (default: from the "
                        "table's headers, section rows, caption or the text above it; a table none of them names is exit 2 "
                        "with this flag ready to add)")
    parser.add_argument("--match", action="append", default=[], metavar="'PUBLISHED ROW=MODEL'",
                        help="pair a published row with a reproduced model, both compared up to case, spaces and "
                        "punctuation (default: equal names so compared, or the same name words in another order; "
                        "the released example pairs GPT-3.5-Turbo-0613 CoT/DFS)")
    parser.add_argument("--check-only", action="store_true",
                        help="only check each published Average against its own cells (needs --published)")
    parser.add_argument("--leaderboard", action="store_true",
                        help="also print the rows in `tba table`'s layout")
    parser.add_argument("--out", default=None, metavar="FILE", help="also write the rows as a score file")
    parser.set_defaults(func=run)


def run_evaluations(sources: list[str]) -> tuple[list[str], list[str]]:
    """--labels with run folders or their evaluation folders (RUN/eval/ID): each run folder stands for its
    latest complete evaluation's labels; each gets its comparability line (evaluation/comparability.py)."""
    from toolbench_adapter.evaluation.comparability import run_line
    from toolbench_adapter.evaluation.evaluations import RECORD, choose_evaluation
    from toolbench_adapter.files.fileio import read_json
    from toolbench_adapter.runs.folder import MANIFEST

    paths, lines = [], []
    for source in sources:
        path = Path(source)
        if (path / MANIFEST).is_file():
            chosen, _ = choose_evaluation(path)
            if chosen is None:
                raise InputError("the run has no complete evaluation", path=path, fix=f"run tba evaluate {path}")
            path, run_dir, judge = chosen.eval_dir, Path(source), chosen.data.get("judge")
        elif (path / RECORD).is_file() and (path.parent.parent / MANIFEST).is_file():
            run_dir, judge = path.parent.parent, read_json(path / RECORD).get("judge")
        else:
            paths.append(source)
            continue
        paths.append(str(path))
        lines.append(f"{run_dir} (the run's labels, {path.name}): {run_line(read_json(run_dir / MANIFEST), judge)}")
    return paths, lines


def run(args: argparse.Namespace) -> int:
    tables = published.load_all(args.published, args.published_metric)
    if args.check_only:
        if not tables:
            raise InputError("--check-only checks published tables", field="--published",
                             fix="add --published stb (or a Markdown / CSV file)")
        print(published.readings_text(tables), end="")
        print(published.averages_text(tables), end="")
        return 0
    root = args.stb_root or os.environ.get("TBA_STB_ROOT")
    lines: list[str] = []  # a run's evaluation among --labels: its comparability line goes with its row
    if args.labels:
        args.labels, lines = run_evaluations(args.labels)
        ids = args.test_ids or default_test_ids(root)
        result = reproduce_labels(args.labels, ids, evaluate_times=args.evaluate_times)
    else:
        if not root:
            raise InputError("no StableToolBench checkout given (the released example lives in its data_example/)",
                             fix="pass --stb-root DIR or set TBA_STB_ROOT, or --labels DIR for another label set")
        result = reproduce_example(root, args.test_ids)
    if not result.rows:
        raise InputError("the label files hold no labels", path=", ".join(map(str, result.sources)))
    matches = parse_matches(args.match)
    check_matches(matches, tables, result)
    comparisons = compare_published(result, tables, matches) if tables else []
    if tables and not any(cell.line is not None for c in comparisons for cell in c.cells):
        raise InputError("no published row pairs with a reproduced model, so nothing would be compared",
                         field="--match", fix=unpaired_fix(comparisons, result))
    print(report_text(result), end="")
    if tables:
        print()
        # a run's row beside the published rows only with its line against the leaderboard's setup
        print("".join(line + "\n\n" for line in lines), end="")
        print(published_text(comparisons), end="")
        if result.example:
            print(example_note(result, comparisons), end="")
        comparisons.clear()  # one per published cell: let go before the Average checks of a large table
        averages = published.averages_text(tables, only_flagged=True)
        if averages:
            print()
            print(averages, end="")
    if args.leaderboard:
        for board in build_leaderboards(result.rows):
            print()
            print(to_markdown(board), end="")
    if args.out:
        write_score_file(args.out, result.rows)
        print(f"\nscore file: {args.out}")
    return 0
