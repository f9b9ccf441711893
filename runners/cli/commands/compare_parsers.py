"""tba compare-parsers: parser variants side by side, on fixed model outputs or on judged runs."""

from __future__ import annotations

from ..ranges import SEED

DESCRIPTION = """\
Two questions, two inputs.

--input (fixed outputs): run folders written by `tba run` (every model call's raw output, from the run's step
records: not only the calls an answer file keeps; a group folder or answer file inside a run reads the same
records for that group or query), JSONL files of {"text": ...} records, StableToolBench answer files, or other
folders (searched recursively; run folders below are read as runs). Every parser reads the same outputs: the
share parsed into a call with dict arguments, counts per error kind and per JSON-ladder rung, median µs per
parse; an agreement matrix (over the outputs where at least one of the two read a call); the outputs where
variants disagree. Outputs from a run are also re-read by the parser the run used and checked against the
error kind and JSON rung it recorded live ("live check"). Writes summary.md, CSVs and parsers.png into --out.
openai-tools applies only to assistant messages (answer files, runs).

--runs (how much the parser changes the score): judged run folders of the same queries that differ in their
parser: a `tba run --parsers` set folder, or separate runs (each evaluated with `tba evaluate`). Prints a
headline first ("P: +x.x points over BASELINE on n queries, 95% CI [a, b]"), then the pass rate per model and
parser, the difference to the baseline (default: the dialect's default parser) with a paired bootstrap
interval and an exact McNemar p-value, where the trajectories first diverge (the two calls there, names and
arguments, then what each parser made of its step), and the queries that flip with the same. Writes
summary.md, pass_rates.csv and flips.jsonl into --out.

Parsers that read no call at all (their format does not apply to the input) are folded into one line.

Runs that share a parser and differ in their dialect, --constrain or --on-invalid (make compare-structured)
are named by those settings instead; a table comes first: per run, the valid-call rate per model turn, valid
answers, model calls, tokens and seconds per query, the pass rate and, against the upstream setting
(--constrain off, --on-invalid observe; toolllama first), the paired 95% interval and the flips. runs.md and
runs.csv hold it. --baseline then takes a run's name as printed.

Every output (stdout, summary.md, runs.md, the CSVs) names the judge (self-judged said), each run's line
against the StableToolBench leaderboard's setup, what the runs differ in (the first column is named by it:
parser, dialect, constrain, on-invalid, model) and the queries compared: runs of different query sets are
compared on the queries every run has judged, each run's others counted as left out, never mixed in a row."""


def register(subparsers) -> None:
    add_command(subparsers, "compare-parsers", "parser variants side by side: on the same outputs, or on judged "
                "runs (the same command as compare-runs)", DESCRIPTION)


def add_command(subparsers, name: str, help_text: str, description: str) -> None:
    """compare-parsers and compare-runs: one command under two names (compare_runs.py)."""
    import argparse

    parser = subparsers.add_parser(name, help=help_text, description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", nargs="+", metavar="PATH",
                        help="run folders (every recorded model output), JSONL files, answer files (.json) or folders")
    source.add_argument("--runs", nargs="+", metavar="RUN", help="judged run folders, or a tba run --parsers set folder")
    parser.add_argument("--parsers", default="all", metavar="all|a,b",
                        help="with --input: parsers to compare: all (default) or a comma list, e.g. "
                        "react-find,react-robust")
    parser.add_argument("--baseline", metavar="PARSER",
                        help="with --runs: the parser the others are compared with (default: the dialect's default)")
    parser.add_argument("--seed", type=SEED, default=0, help="with --runs: bootstrap seed (default 0)")
    parser.add_argument("--judge-id", default=None, metavar="ID",
                        help="with --runs: the evaluation to compare (its folder under RUN/eval). Default: the "
                        "latest evaluation complete in every run; runs judged by different judges are refused")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the report (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run)


def run(args) -> int:
    from toolbench_adapter.files.fileio import check_writable

    check_writable(args.out)
    if args.runs:
        return run_on_runs(args)
    return run_on_outputs(args)


def run_on_runs(args) -> int:
    from toolbench_adapter.report.parser_runs import (
        compare_runs,
        expand_run_paths,
        load_variants,
        text_lines,
        write_run_comparison,
    )
    from toolbench_adapter.report.structured_runs import differing, shares_a_parser

    variants = load_variants(expand_run_paths(args.runs), args.judge_id)  # one judge's labels for every run
    # runs that differ in dialect, --constrain or --on-invalid (or in more than the parser): each named by the
    # settings it differs in, never "constrain=schema" under a parser heading
    if shares_a_parser(variants) or differing(variants) not in (["parser"], []):
        return run_on_settings(variants, args)
    result = compare_runs(variants, args.baseline, seed=args.seed)
    written = write_run_comparison(result, args.out)
    print("\n".join(text_lines(result)))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def run_on_settings(variants, args) -> int:
    """Runs named by the settings they differ in (toolbench_adapter/report/structured_runs.py)."""
    from toolbench_adapter.report.parser_runs import text_lines
    from toolbench_adapter.report.structured_runs import compare, footer, text_table, write

    result, figures = compare(variants, args.baseline, seed=args.seed)
    written = write(result, figures, args.out)
    print("\n".join([*text_table(result, figures), "", *footer(result), "", *text_lines(result)]))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def run_on_outputs(args) -> int:
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.report.parser_corpus import read_outputs
    from toolbench_adapter.report.parsers import (
        compare_parsers,
        disagreement_line,
        inapplicable_line,
        live_checks,
        resolve_parser_names,
        write_comparison,
    )

    names = resolve_parser_names(args.parsers)
    if not names:
        raise InputError("no parser named", field="--parsers", fix="write all, or e.g. react-find,react-robust")
    outputs = read_outputs(args.input)
    if not outputs:
        raise InputError("no model outputs found in the inputs", field="--input",
                         fix="give JSONL with a \"text\" field, answer files or run folders")
    from_runs = sum(output.recorded is not None for output in outputs)
    print(f"{len(outputs)} model output{'' if len(outputs) == 1 else 's'}"
          + (f" ({from_runs} from run step records)" if from_runs else ""))
    result = compare_parsers(outputs, names, progress=not args.no_progress)
    written = write_comparison(result, args.out, inputs=[str(p) for p in args.input])
    for name in result.matching_parsers():
        s = result.stats[name]
        print(f"{name:<14} read a call {s.read_call:>5}  parsed {s.with_call:>5}/{s.applicable:<5} "
              f"({s.parsed_share:6.1%})  clean {s.errors.get('none', 0):>5}  median {s.median_us:7.1f} µs")
    if result.inapplicable_parsers():
        print(inapplicable_line(result))
    if len(result.matching_parsers()) > 1:  # the count summary.md heads its disagreements with
        print(disagreement_line(result))
    for check in live_checks(result):
        print(check.line())
    print(f"wrote {len(written)} files to {args.out}")
    return 0
