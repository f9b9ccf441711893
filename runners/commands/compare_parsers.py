"""tba compare-parsers: every parser variant on the same model outputs, side by side."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare-parsers", help="run every parser variant on the same outputs and write a comparison report",
        description="Inputs: JSONL files of {\"text\": ...} records, StableToolBench answer files, or run folders "
        "(answer files found recursively). For each parser: the share of outputs parsed into a call with dict "
        "arguments, counts per error kind and per JSON-ladder rung, median µs per parse; an agreement matrix; "
        "the outputs where variants disagree. Writes summary.md, CSVs and parsers.png into --out. openai-tools "
        "applies only to outputs that are assistant messages (answer files); on plain text it is marked not "
        "applicable.")
    parser.add_argument("--input", nargs="+", required=True, metavar="PATH",
                        help="JSONL files, answer files (.json) or run folders")
    parser.add_argument("--parsers", default="all", metavar="all|a,b",
                        help="parsers to compare: all (default) or a comma list, e.g. react-find,react-robust")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the report (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run)


def run(args) -> int:
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.parsers.corpus import read_outputs
    from toolbench_adapter.report.parsers import compare_parsers, resolve_parser_names, write_comparison

    names = resolve_parser_names(args.parsers)
    if not names:
        raise InputError("no parser named", field="--parsers", fix="write all, or e.g. react-find,react-robust")
    outputs = read_outputs(args.input)
    if not outputs:
        raise InputError("no model outputs found in the inputs", field="--input",
                         fix="give JSONL with a \"text\" field, answer files or run folders")
    result = compare_parsers(outputs, names, progress=not args.no_progress)
    written = write_comparison(result, args.out, inputs=[str(p) for p in args.input])
    for name in names:
        s = result.stats[name]
        print(f"{name:<14} parsed {s.with_call:>5}/{s.applicable:<5} ({s.parsed_share:6.1%})  "
              f"clean {s.errors.get('none', 0):>5}  median {s.median_us:7.1f} µs")
    print(f"wrote {len(written)} files to {args.out}")
    return 0
