"""tba compare-parsers: parser variants side by side, on fixed model outputs or on judged runs."""

from __future__ import annotations

DESCRIPTION = """\
Two questions, two inputs.

--input (fixed outputs): JSONL files of {"text": ...} records, StableToolBench answer files, or run folders
(answer files found recursively). Every parser reads the same outputs: the share parsed into a call with
dict arguments, counts per error kind and per JSON-ladder rung, median µs per parse; an agreement matrix
(over the outputs where at least one of the two read a call); the outputs where variants disagree. Writes
summary.md, CSVs and parsers.png into --out. openai-tools applies only to assistant messages (answer files).

--runs (how much the parser changes the score): judged run folders of the same queries that differ in their
parser: a `tba run --parsers` set folder, or separate runs (each evaluated with `tba evaluate`). Prints a
headline first ("P: +x.x points over BASELINE on n queries, 95% CI [a, b]"), then the pass rate per parser,
the difference to the baseline (default: the dialect's default parser) with a paired bootstrap interval and
an exact McNemar p-value, and the queries that flip with the step where the trajectories first diverge and
what each parser made of it there. Writes summary.md, pass_rates.csv and flips.jsonl into --out.

Parsers that read no call at all (their format does not apply to the input) are folded into one line."""


def register(subparsers) -> None:
    import argparse

    parser = subparsers.add_parser(
        "compare-parsers", help="parser variants side by side: on the same outputs, or on judged runs",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", nargs="+", metavar="PATH", help="JSONL files, answer files (.json) or run folders")
    source.add_argument("--runs", nargs="+", metavar="RUN", help="judged run folders, or a tba run --parsers set folder")
    parser.add_argument("--parsers", default="all", metavar="all|a,b",
                        help="with --input: parsers to compare: all (default) or a comma list, e.g. "
                        "react-find,react-robust")
    parser.add_argument("--baseline", metavar="PARSER",
                        help="with --runs: the parser the others are compared with (default: the dialect's default)")
    parser.add_argument("--seed", type=int, default=0, help="with --runs: bootstrap seed (default 0)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the report (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run)


def run(args) -> int:
    from toolbench_adapter.fileio import check_writable

    check_writable(args.out)
    if args.runs:
        return run_on_runs(args)
    return run_on_outputs(args)


def run_on_runs(args) -> int:
    from toolbench_adapter.report.parser_runs import (
        compare_runs,
        expand_run_paths,
        load_variant,
        text_lines,
        write_run_comparison,
    )

    variants = [load_variant(path) for path in expand_run_paths(args.runs)]
    result = compare_runs(variants, args.baseline, seed=args.seed)
    written = write_run_comparison(result, args.out)
    print("\n".join(text_lines(result)))
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def run_on_outputs(args) -> int:
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.parsers.corpus import read_outputs
    from toolbench_adapter.report.parsers import (
        compare_parsers,
        inapplicable_line,
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
    result = compare_parsers(outputs, names, progress=not args.no_progress)
    written = write_comparison(result, args.out, inputs=[str(p) for p in args.input])
    for name in result.matching_parsers():
        s = result.stats[name]
        print(f"{name:<14} parsed {s.with_call:>5}/{s.applicable:<5} ({s.parsed_share:6.1%})  "
              f"clean {s.errors.get('none', 0):>5}  median {s.median_us:7.1f} µs")
    if result.inapplicable_parsers():
        print(inapplicable_line(result))
    print(f"wrote {len(written)} files to {args.out}")
    return 0
