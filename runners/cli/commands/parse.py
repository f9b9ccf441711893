"""tba parse: run one parser over model outputs, one JSON line out per input."""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "parse", help="parse model outputs with one parser variant (JSON lines out)",
        description="Reads a JSONL file with a \"text\" field per line (--input), or one raw text on stdin, "
        "and writes one JSON line per input line, in order: {parser, thought, calls: [{name, arguments_raw, "
        "arguments}], final_answer, error, rung}. For openai-tools, a line may carry the assistant message "
        "in a \"message\" field (or the text may be the message's JSON).")
    parser.add_argument("--parser", required=True, metavar="NAME",
                        help="parser variant, e.g. react-find, react-robust, hermes (see `tba compare-parsers --help`)")
    parser.add_argument("--input", metavar="FILE.jsonl", help="JSONL of {\"text\": ...} records; default: stdin as one text")
    parser.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from toolbench_adapter.files.fileio import utf8_safe
    from toolbench_adapter.parsers import get_parser
    from toolbench_adapter.report.parser_corpus import read_jsonl

    parser = get_parser(args.parser)
    if args.input:
        path = Path(args.input)
        outputs = list(read_jsonl(path))  # validates every line before anything is written
    else:
        outputs = None
    if outputs is None:
        turns = [parser.parse(sys.stdin.read())]
    else:
        turns = [parser.parse_message(o.message) if o.message is not None and hasattr(parser, "parse_message")
                 else parser.parse(o.text) for o in outputs]
    for turn in turns:  # a lone surrogate in an output is written as its JSON escape (utf8_safe)
        sys.stdout.write(utf8_safe(json.dumps(turn.to_json(), ensure_ascii=False)) + "\n")
    return 0
