"""Parser comparison: every variant on every model output, then figures, agreement and disagreements.

``compare_parsers(outputs, names)`` runs each parser once per output (timing each parse) and keeps the
ParsedTurns; ``write_comparison(result, out_dir)`` writes summary.md, parsers.csv, error_kinds.csv,
rungs.csv, agreement.csv, disagreements.jsonl and parsers.png (all files written atomically).

openai-tools reads assistant messages, not text: on an output without a message its answer is
NOT_APPLICABLE, and such pairs are left out of its denominator and of the agreement matrix.

One set of parsers is compared everywhere (the per-parser table, the chart, the agreement matrix and the
disagreements): those that read a call (any arguments, decoded or not) from at least one output. The others
read nothing here and are named on one line. So "0 disagreements" holds exactly when every pair in the matrix
agrees on every output it counts.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.files.fileio import write_bytes_atomic, write_text_atomic
from toolbench_adapter.report.parser_corpus import MESSAGE_PARSER, ModelOutput

from ..parsers import ErrorKind, ParsedTurn, get_parser, parser_names

DISAGREEMENT_TEXT_CHARS = 200  # keeps the kept example small
DISAGREEMENT_ARGUMENT_CHARS = 120
MARKDOWN_DISAGREEMENTS = 8


@dataclass
class ParserStats:
    name: str
    applicable: int = 0
    read_call: int = 0  # at least one call, whatever its arguments (what agreement compares)
    with_call: int = 0  # at least one call whose arguments decoded to a dict
    errors: Counter = field(default_factory=Counter)
    rungs: Counter = field(default_factory=Counter)
    micros: list[float] = field(default_factory=list)

    @property
    def parsed_share(self) -> float:
        return self.with_call / self.applicable if self.applicable else 0.0

    @property
    def median_us(self) -> float:
        return statistics.median(self.micros) if self.micros else 0.0


@dataclass
class Comparison:
    parsers: list[str]
    outputs: list[ModelOutput]
    turns: dict[str, list[ParsedTurn | None]]  # None: not applicable
    stats: dict[str, ParserStats]

    def call_key(self, name: str, index: int) -> str | None:
        turn = self.turns[name][index]
        return None if turn is None else call_signature(turn)

    def agreement(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(a, b) -> (texts where both agree, texts where both apply and at least one read a call).
        Two parsers that both read nothing do not "agree": that would make formats that never match look
        like perfect agreement."""
        matrix = {}
        for a in self.parsers:
            for b in self.parsers:
                same = both = 0
                for index in range(len(self.outputs)):
                    turn_a, turn_b = self.turns[a][index], self.turns[b][index]
                    if turn_a is None or turn_b is None or not (turn_a.calls or turn_b.calls):
                        continue
                    key_a, key_b = call_signature(turn_a), call_signature(turn_b)
                    both += 1
                    same += key_a == key_b
                matrix[(a, b)] = (same, both)
        return matrix

    def matching_parsers(self) -> list[str]:
        """Parsers that read a call (any arguments) from at least one output: the ones compared in the table,
        the chart, the agreement matrix and the disagreements. A call without decoded arguments counts (a
        ReAct parser that reads only an Action line still reads the format), so two parsers that read
        different names there show as a disagreement, as the matrix shows them."""
        return [name for name in self.parsers if self.stats[name].read_call]

    def inapplicable_parsers(self) -> list[str]:
        """Parsers that read no call from any output: folded into one line in what people read."""
        return [name for name in self.parsers if not self.stats[name].read_call]

    def disagreements(self, names: list[str] | None = None) -> list[int]:
        """Outputs where the matching parsers (or ``names``) do not all give the same calls (among those that
        apply to it): exactly the outputs where some pair of the agreement matrix differs."""
        names = self.matching_parsers() if names is None else names
        indexes = []
        for index in range(len(self.outputs)):
            keys = {self.call_key(name, index) for name in names} - {None}
            if len(keys) > 1:
                indexes.append(index)
        return indexes


    def stray_parsers(self) -> list[str]:
        """Matching parsers that read a call from under a tenth as many outputs as the parser that reads most: a
        format these outputs are not in, read by chance (fenced-json on one ReAct output). Beside them every
        output "disagrees", so the headline counts the others apart (disagreement_line)."""
        most = max((self.stats[name].read_call for name in self.matching_parsers()), default=0)
        return [name for name in self.matching_parsers() if self.stats[name].read_call * 10 < most]


def disagreement_line(result: Comparison) -> str:
    """The disagreements headline, and what it is made of when a stray parser (stray_parsers) is among the
    compared: "123 of 123" said nothing when fenced-json had read one call from 123 ReAct outputs."""
    total, matching = len(result.outputs), result.matching_parsers()
    line = (f"disagreements: {len(result.disagreements())} of {total} outputs ({', '.join(matching)}; "
            "agreement.csv has each pair)")
    said = [text for text in (stray_text(result), closest_pair(result)) if text]
    return f"{line}: {'; '.join(said)}" if said else line


def stray_text(result: Comparison) -> str | None:
    """Which disagreements a stray parser alone makes, and the count without it; None without one."""
    total, matching, stray = len(result.outputs), result.matching_parsers(), result.stray_parsers()
    count = len(result.disagreements())
    if not stray or not count:
        return None
    core = [name for name in matching if name not in stray]
    which = " and ".join(stray)
    reads = " and ".join(str(result.stats[name].read_call) for name in stray)
    text = (f"{which} found a call in {reads} of the {total} outputs only (a format these outputs are not in), so "
            f"{'they read' if len(stray) > 1 else 'it reads'} no call where the others do")
    if len(core) > 1:
        core_count = len(result.disagreements(core))
        text += (f"; without {which}, {', '.join(core)} disagree on {core_count} of {total} outputs "
                 f"({count - core_count} of the {count} are {which}'s alone)")
    return text


def closest_pair(result: Comparison) -> str | None:
    """The two compared parsers (stray ones left out) that give the same calls most often, in words."""
    names = [name for name in result.matching_parsers() if name not in result.stray_parsers()]
    matrix = result.agreement()
    pairs = [(matrix[(a, b)], a, b) for i, a in enumerate(names) for b in names[i + 1:] if matrix[(a, b)][1]]
    if not pairs:
        return None
    (same, both), a, b = max(pairs, key=lambda pair: (pair[0][0] / pair[0][1], pair[0][1]))
    return f"most alike: {a} and {b}, the same calls on {same} of the {both} outputs where either read one"


@dataclass
class LiveCheck:
    """Outputs read from a run's step records, re-read here by the parser the run used: do they give the error
    kind and JSON rung that parser recorded live? (They should: a difference means the parser changed since.)"""

    parser: str
    outputs: int = 0
    same: int = 0
    differing: list[dict] = field(default_factory=list)  # {"source", "recorded", "now"}
    compared: bool = True  # False: the run's parser is not among the parsers compared here

    def line(self) -> str:
        if not self.compared:
            return (f"live check: {self.outputs} outputs were read live by {self.parser}, which is not among the "
                    f"parsers compared here (add it to --parsers to re-read them with it)")
        text = (f"live check: {self.parser} re-read the {self.outputs} outputs it read live in the runs: error "
                f"kind and JSON rung as recorded on {self.same} of {self.outputs}")
        if self.differing:
            first = self.differing[0]
            text += (f"; DIFFERS on {len(self.differing)} (e.g. {first['source']}: recorded {first['recorded']}, "
                     f"now {first['now']}; the parser changed since the run?)")
        return text


def live_checks(result: Comparison) -> list[LiveCheck]:
    """One LiveCheck per parser that read outputs live (outputs read from run folders), in input order."""
    checks: dict[str, LiveCheck] = {}
    for index, output in enumerate(result.outputs):
        if not output.recorded or not output.recorded.get("parser"):
            continue
        name = output.recorded["parser"]
        check = checks.setdefault(name, LiveCheck(name, compared=name in result.turns))
        check.outputs += 1
        if not check.compared:
            continue
        turn = result.turns[name][index]
        now = "not applicable" if turn is None else _kind_text(turn.error.value, turn.rung.value if turn.rung else None)
        recorded = _kind_text(output.recorded.get("error"), output.recorded.get("rung"))
        if now == recorded:
            check.same += 1
        else:
            check.differing.append({"source": output.source, "recorded": recorded, "now": now})
    return list(checks.values())


def _kind_text(error: str | None, rung: str | None) -> str:
    return f"{error or 'none'}" + (f" (rung {rung})" if rung else "")


def call_signature(turn: ParsedTurn) -> str:
    """What "the same call" means: the same names with the same decoded arguments, in order."""
    return json.dumps([[c.name, c.arguments] for c in turn.calls], sort_keys=True, ensure_ascii=False)


def inapplicable_line(result: Comparison) -> str:
    names = result.inapplicable_parsers()
    return f"read no call from any of the {len(result.outputs)} outputs (format does not apply): {', '.join(names)}"


def message_parser_line(result: Comparison) -> str:
    """What openai-tools read: assistant messages, which only runs of native tool calls give."""
    applicable, total = result.stats[MESSAGE_PARSER].applicable, len(result.outputs)
    if not applicable:
        return (f"`{MESSAGE_PARSER}` reads assistant messages with native tool calls: none of the {total} outputs "
                "came as one (plain text), so it applies to none; marked not applicable, not failed.")
    return (f"`{MESSAGE_PARSER}` reads assistant messages: {applicable} of {total} outputs are one (or its JSON); "
            "on the others (plain text) it is marked not applicable (left out of its denominator and of the agreement "
            "matrix), not failed.")


def resolve_parser_names(spec: str) -> list[str]:
    """"all" or a comma list; unknown names raise UnknownNameError with "did you mean"."""
    if spec.strip() == "all":
        return parser_names()
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for name in names:
        get_parser(name)  # validates the name
    return names


def compare_parsers(outputs: list[ModelOutput], names: list[str], progress: bool = True) -> Comparison:
    from tqdm import tqdm

    parsers = {name: get_parser(name) for name in names}
    turns: dict[str, list[ParsedTurn | None]] = {name: [] for name in names}
    stats = {name: ParserStats(name) for name in names}
    for output in tqdm(outputs, desc="parsing", unit="text", disable=not progress):
        for name, parser in parsers.items():
            started = time.perf_counter_ns()
            if name == MESSAGE_PARSER and output.message is not None:
                turn = parser.parse_message(output.message)
            else:
                turn = parser.parse(output.text)
            elapsed_us = (time.perf_counter_ns() - started) / 1000
            if turn.error is ErrorKind.NOT_APPLICABLE or (
                    name == MESSAGE_PARSER and output.message is None and turn.error is ErrorKind.EMPTY_OUTPUT):
                # an empty text is no assistant message either: the message parser does not apply to it
                turns[name].append(None)
                continue
            turns[name].append(turn)
            _count(stats[name], turn, elapsed_us)
    return Comparison(parsers=names, outputs=outputs, turns=turns, stats=stats)


def _count(stats: ParserStats, turn: ParsedTurn, elapsed_us: float) -> None:
    stats.applicable += 1
    stats.read_call += bool(turn.calls)
    stats.with_call += any(c.arguments is not None for c in turn.calls)
    stats.errors[turn.error.value] += 1
    stats.rungs[turn.rung.value if turn.rung else "none"] += 1
    stats.micros.append(elapsed_us)


# ---------------------------------------------------------------- writing

def write_comparison(result: Comparison, out_dir: str | Path, inputs: list[str] | None = None) -> list[Path]:
    out = Path(out_dir)
    files = {
        "parsers.csv": _csv(_parser_rows(result)),
        "error_kinds.csv": _csv(_counter_rows(result, "errors", "error")),
        "rungs.csv": _csv(_counter_rows(result, "rungs", "rung")),
        "agreement.csv": _csv(_agreement_rows(result)),
        "disagreements.jsonl": _disagreements_jsonl(result),
        "summary.md": summary_markdown(result, inputs or []),
    }
    # fileio's writers: atomic, modes from the umask, unwritable places an input error naming the path
    written = [write_text_atomic(out / name, content) for name, content in files.items()]
    written.append(write_bytes_atomic(out / "parsers.png", _chart_png(result)))
    return written


def _csv(rows: list[list]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _parser_rows(result: Comparison) -> list[list]:
    rows = [["parser", "applicable", "read_call", "with_dict_call", "parsed_share", "clean", "median_us"]]
    for name in result.parsers:
        s = result.stats[name]
        rows.append([name, s.applicable, s.read_call, s.with_call, f"{s.parsed_share:.4f}", s.errors.get("none", 0),
                     f"{s.median_us:.2f}"])
    return rows


def _counter_rows(result: Comparison, attribute: str, label: str) -> list[list]:
    keys = sorted({k for s in result.stats.values() for k in getattr(s, attribute)})
    rows = [[label, *result.parsers]]
    for key in keys:
        rows.append([key, *(getattr(result.stats[n], attribute).get(key, 0) for n in result.parsers)])
    return rows


def _agreement_rows(result: Comparison) -> list[list]:
    """The matrix over the parsers the disagreements count (matching_parsers), so the two always agree."""
    matrix = result.agreement()
    names = result.matching_parsers()
    rows = [["parser", *names]]
    for a in names:
        rows.append([a, *(_share(*matrix[(a, b)]) for b in names)])
    return rows


def _share(same: int, both: int) -> str:
    return f"{same / both:.4f}" if both else "n/a"


def _disagreements_jsonl(result: Comparison) -> str:
    matching = result.matching_parsers()
    lines = []
    for index in result.disagreements():
        output = result.outputs[index]
        record = {
            "source": output.source,
            "text": output.text[:DISAGREEMENT_TEXT_CHARS],
            "truncated": len(output.text) > DISAGREEMENT_TEXT_CHARS,
            "parsers": {
                name: None if result.turns[name][index] is None else {
                    "error": result.turns[name][index].error.value,
                    "calls": [[c.name[:DISAGREEMENT_ARGUMENT_CHARS], _short(c.arguments)]
                              for c in result.turns[name][index].calls],
                }
                for name in matching
            },
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def _short(arguments: dict | None) -> dict | str | None:
    """Arguments as they are when small, else their JSON cut short (keeps the file small)."""
    if arguments is None:
        return None
    text = json.dumps(arguments, ensure_ascii=False)
    return arguments if len(text) <= DISAGREEMENT_ARGUMENT_CHARS else text[:DISAGREEMENT_ARGUMENT_CHARS] + "…"


def summary_markdown(result: Comparison, inputs: list[str]) -> str:
    total = len(result.outputs)
    out = ["# Parser comparison", ""]
    if inputs:
        out += [f"Inputs: {', '.join(f'`{i}`' for i in inputs)}", ""]
    out += [
        f"{total} model outputs, {len(result.parsers)} parsers. *Parsed* = at least one call whose arguments "
        "decoded to a JSON object. *Clean* = error kind `none`. Times are single-parse medians (µs); "
        "see `make bench-parsers` for repeated timings.",
        "",
    ]
    checks = live_checks(result)
    if checks:
        out += ["## Against what the runs recorded live", "",
                "Outputs read from run folders carry the parser the run used and the error kind and JSON rung it "
                "recorded for each; that parser re-reads them here.", ""]
        out += [f"- {check.line()}" for check in checks]
        out += [f"  - `{d['source']}`: recorded {d['recorded']}, now {d['now']}"
                for check in checks for d in check.differing[:MARKDOWN_DISAGREEMENTS]]
        out.append("")
    if MESSAGE_PARSER in result.parsers:
        out += [message_parser_line(result), ""]
    out += ["## Per parser", "", "*Read a call*: outputs where the parser read at least one call, whatever its "
            "arguments (what the agreement matrix compares).", "",
            "| parser | applicable | read a call | parsed | parsed share | clean | median µs |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for name in result.matching_parsers():
        s = result.stats[name]
        out.append(f"| {name} | {s.applicable} | {s.read_call} | {s.with_call} | {s.parsed_share:.1%} | "
                   f"{s.errors.get('none', 0)} | {s.median_us:.1f} |")
    if result.inapplicable_parsers():
        out += ["", inapplicable_line(result) + " (left out of this table, the matrix and the disagreements; "
                "all rows are in parsers.csv)"]
    out += ["", "## Error kinds (turns per kind)", ""]
    out += _markdown_table(_counter_rows(result, "errors", "error kind"))
    out += ["", "## JSON ladder rungs (turns per rung that produced the arguments)", ""]
    out += _markdown_table(_counter_rows(result, "rungs", "rung"))
    out += ["", "## Agreement (share of outputs where both give the same call names and arguments, among the "
            "outputs both apply to where at least one of the two read a call; n/a: no such output)", ""]
    out += _markdown_table(_agreement_rows(result))
    disagreements = result.disagreements()
    matching = result.matching_parsers()
    out += ["", f"## Disagreements: {len(disagreements)} of {total} outputs", "",
            f"Outputs where the parsers of the agreement matrix ({', '.join(matching) or 'none'}) do not all "
            "give the same calls; parsers that read no call here are left out. All of them are in "
            "`disagreements.jsonl`; the first few:", ""]
    said = [text for text in (stray_text(result), closest_pair(result)) if text]
    if said:  # before the examples: what the count is made of
        out[-2:-2] = ["; ".join(said) + ".", ""]
    # the most divided outputs first: where every matching parser reads something different
    spread = {i: len({result.call_key(n, i) for n in matching} - {None}) for i in disagreements}
    for index in sorted(disagreements, key=lambda i: -spread[i])[:MARKDOWN_DISAGREEMENTS]:
        output = result.outputs[index]
        excerpt = output.text[:160].replace("\n", "\\n").replace("|", "\\|")
        out.append(f"- `{output.source}`: `{excerpt}`" + ("…" if len(output.text) > 160 else ""))
        for name in matching:
            turn = result.turns[name][index]
            if turn is not None:
                calls = ", ".join(f"`{c.name[:80]!r}`({'dict' if c.arguments is not None else 'None'})"
                                  for c in turn.calls)
                out.append(f"  - {name}: {turn.error.value}; {calls or 'no call'}")
    out += ["", "Files: parsers.csv, error_kinds.csv, rungs.csv, agreement.csv, disagreements.jsonl, parsers.png", ""]
    return "\n".join(out)


def _markdown_table(rows: list[list]) -> list[str]:
    header, *body = rows
    lines = ["| " + " | ".join(map(str, header)) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in body]
    return lines


def _chart_png(result: Comparison) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = result.matching_parsers()  # the parsers the table and the matrix show
    read = [result.stats[n].read_call / result.stats[n].applicable * 100 for n in names]
    parsed = [result.stats[n].parsed_share * 100 for n in names]
    clean = [result.stats[n].errors.get("none", 0) / result.stats[n].applicable * 100
             if result.stats[n].applicable else 0 for n in names]
    figure, axis = plt.subplots(figsize=(9, 4.2), dpi=100)
    positions = range(len(names))
    width = 0.27
    axis.bar([p - width for p in positions], read, width, label="read a call (any arguments)")
    axis.bar(list(positions), parsed, width, label="parsed into a call with dict arguments")
    axis.bar([p + width for p in positions], clean, width, label="clean (error kind none)")
    axis.set_xticks(list(positions), names, rotation=30, ha="right")
    axis.set_ylabel("% of applicable outputs")
    axis.set_ylim(0, 118)  # room above 100 for the legend
    axis.set_yticks(range(0, 101, 20))
    title = f"Parser variants on {len(result.outputs)} model outputs"
    if not names:
        title += ": no parser read a call from any"
    axis.set_title(title)
    for position, values in zip(positions, zip(read, parsed, clean, strict=True), strict=True):
        for offset, value in zip((-width, 0, width), values, strict=True):
            axis.text(position + offset, value + 1, f"{value:.0f}", ha="center", fontsize=7)
    axis.legend(loc="upper center", ncol=3, fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()
