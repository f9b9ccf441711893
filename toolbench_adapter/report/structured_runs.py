"""Judged runs that differ in more than their parser (dialect, --constrain, --on-invalid), side by side.

``tba compare-parsers --runs`` hands runs here when two of them share a parser (parser_runs.py compares
parsers only). Each run is named by the settings in which the runs differ (e.g. ``json-object constrain=schema
on-invalid=reask:2``); the baseline is the upstream setting (--constrain off, --on-invalid observe; the
toolllama dialect first). Per run: the valid-call rate per model turn (structured/rates.py), valid answers,
model calls, tokens and seconds per query, and the pass rate with its paired 95% interval and flips against
the baseline (parser_runs.compare_runs, the same statistics as the parser comparison).
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from toolbench_adapter.files.fileio import read_json, write_text_atomic
from toolbench_adapter.runs.folder import MANIFEST, QUERY_STATS, read_query_lines

from ..errors import InputError
from ..structured.describe import is_upstream
from ..structured.rates import turn_figures
from . import axes
from .parser_runs import RunComparison, RunVariant, compare_runs, text_lines, write_run_comparison

BASELINE_DIALECT = "toolllama"


@dataclass
class Figures:
    turns: int
    valid_turns: int
    queries: int
    valid: int
    calls_per_query: float
    tokens_per_query: float
    seconds_per_query: float

    @property
    def valid_turn_share(self) -> float | None:
        return self.valid_turns / self.turns if self.turns else None


def settings_of(path: Path) -> dict:
    return axes.settings_of(read_json(path / MANIFEST))


def shares_a_parser(variants: list[RunVariant]) -> bool:
    """True when parser names alone cannot tell the runs apart (then this module compares them)."""
    parsers = [v.parser for v in variants]
    return len(set(parsers)) < len(parsers)


def differing(variants: list[RunVariant]) -> list[str]:
    """The axes the runs differ in (axes.py), the method left to the row names' folder fallback."""
    return axes.differing([settings_of(v.path) for v in variants])


def labels(variants: list[RunVariant]) -> list[str]:
    """Each run named by its values on the axes in which the runs differ (the folder name when none does)."""
    settings = [settings_of(v.path) for v in variants]
    found = axes.differing(settings)
    names = []
    for variant, setting in zip(variants, settings, strict=True):
        parts = [str(setting[k]) if k in ("model", "method", "dialect", "parser") else f"{axes.axis_name(k)}={setting[k]}"
                 for k in found]
        names.append(" ".join(parts) or variant.path.name)
    if len(set(names)) < len(names):
        names = [f"{name} ({variant.path.name})" for name, variant in zip(names, variants, strict=True)]
    return names


def baseline_of(variants: list[RunVariant]) -> str:
    """The upstream setting: --constrain off and --on-invalid observe, the toolllama dialect first."""
    upstream = [v for v in variants if is_upstream(read_json(v.path / MANIFEST).get("config"))]
    if not upstream:
        return variants[0].parser
    react = [v for v in upstream if settings_of(v.path)["dialect"] == BASELINE_DIALECT]
    return (react or upstream)[0].parser


def figures_of(variant: RunVariant, queries: list | None = None) -> Figures:
    """``queries``: the (group, id) keys every run has: a run's other queries are left out of its figures, as
    they are of its pass rate (runs of different query sets never mix counts in a row)."""
    keep = set(queries) if queries is not None else None
    turns = turn_figures(record for key, records in variant.steps.items() if keep is None or key in keep
                         for record in records)
    lines = read_query_lines(variant.path / QUERY_STATS) if (variant.path / QUERY_STATS).exists() else []
    if keep is not None:
        lines = [line for line in lines if (str(line.get("group")), str(line.get("query_id"))) in keep]
    queries = len(lines) or 1
    return Figures(turns=turns.turns, valid_turns=turns.valid_turns, queries=len(lines),
                   valid=sum(bool(line.get("valid_data")) for line in lines),
                   calls_per_query=sum(line.get("query_count", 0) for line in lines) / queries,
                   tokens_per_query=sum(line.get("total_tokens", 0) for line in lines) / queries,
                   seconds_per_query=statistics.fmean(line.get("wall_seconds", 0.0) for line in lines) if lines else 0.0)


def compare(variants: list[RunVariant], baseline: str | None = None, *, seed: int = 0
            ) -> tuple[RunComparison, dict[str, Figures]]:
    named = [replace(v, parser=name) for v, name in zip(variants, labels(variants), strict=True)]
    if baseline is not None and baseline not in {v.parser for v in named}:
        raise InputError(f"baseline {baseline!r} is not one of the runs ({', '.join(v.parser for v in named)})",
                         field="--baseline", fix="pass one of the names above, quoted")
    result = compare_runs(named, baseline or baseline_of(named), seed=seed, fold_no_call=False)
    result.axes = differing(variants) or ["run"]
    return result, {v.parser: figures_of(v, result.queries) for v in named}


HEADER = ["run", "valid turns", "valid answers", "calls/query", "tokens/query", "s/query", "pass rate",
          "vs baseline (95% CI)", "flips up/down"]


def header(result: RunComparison) -> list[str]:
    """HEADER with the first column named by the axis the runs differ in (constrain, dialect, ...)."""
    return [axes.axis_header(result.axes), *HEADER[1:]]


def table_rows(result: RunComparison, figures: dict[str, Figures]) -> list[list[str]]:
    rows = []
    for name in result.variants:
        f = figures[name]
        share = f"{f.valid_turn_share:.1%} ({f.valid_turns}/{f.turns})" if f.turns else "not recorded"
        paired = result.paired.get(name)
        versus = "baseline" if name == result.baseline else (
            f"{paired.difference:+.1f} [{paired.low:+.1f}, {paired.high:+.1f}]" if paired else "read no call")
        flips = f"{paired.up}/{paired.down}" if paired else ""
        rows.append([name, share, f"{f.valid}/{f.queries}", f"{f.calls_per_query:.1f}", f"{f.tokens_per_query:.0f}",
                     f"{f.seconds_per_query:.1f}", f"{result.pass_rates[name]:.1f}%", versus, flips])
    return rows


def markdown_table(result: RunComparison, figures: dict[str, Figures]) -> str:
    lines = ["| " + " | ".join(header(result)) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(result, figures)]
    return "\n".join(lines)


def text_table(result: RunComparison, figures: dict[str, Figures]) -> list[str]:
    rows = [header(result), *table_rows(result, figures)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def footer(result: RunComparison) -> list[str]:
    """How to read the pass-rate columns on few queries: Unsure's half point moves the rate without a flip, and
    the bootstrap interval can have zero width (the issue-22 table: +25 and +50 points with 0/0 flips)."""
    n = len(result.queries)
    lines = [f"Reading the pass rate on {n} quer{'y' if n == 1 else 'ies'}: labels count Solved 1, Unsure 0.5, "
             "Unsolved 0, so a run whose answers are all judged Unsure scores 50% with no query passing; a query "
             "passes (and can flip) only when its mean points exceed 0.5, so points can move with 0/0 flips; the paired "
             "bootstrap interval has zero width when every query differs by the same points (it then says nothing "
             "about precision). Read the flips and the valid columns before the points."]
    shaky = [(name, p) for name, p in result.paired.items()
             if p.difference and (p.up + p.down == 0 or p.low == p.high)]
    if shaky:
        lines.append("Here: " + "; ".join(
            f"{name} {p.difference:+.1f} points with flips {p.up}/{p.down}, 95% CI [{p.low:+.1f}, {p.high:+.1f}]"
            for name, p in shaky) + ".")
    return lines


def write(result: RunComparison, figures: dict[str, Figures], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    written = write_run_comparison(result, out)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([axes.axis_header(result.axes), "model_turns", "valid_turns", "queries", "valid_answers",
                     "calls_per_query", "tokens_per_query", "seconds_per_query", "pass_rate", "difference", "ci_low",
                     "ci_high", "flips_up", "flips_down", "left_out", "judge", "self_judged", "comparability"])
    for name in result.variants:
        f, paired, variant = figures[name], result.paired.get(name), result.variants[name]
        writer.writerow([name, f.turns, f.valid_turns, f.queries, f.valid, f"{f.calls_per_query:.2f}",
                         f"{f.tokens_per_query:.1f}", f"{f.seconds_per_query:.2f}", f"{result.pass_rates[name]:.2f}",
                         *([f"{paired.difference:.2f}", f"{paired.low:.2f}", f"{paired.high:.2f}", paired.up,
                            paired.down] if paired else [""] * 5),
                         result.left_out.get(name, 0), variant.judge, "self-judged" in variant.judge,
                         variant.comparability])
    summary = ["# Runs compared", "", f"Baseline: {result.baseline} (the upstream setting).", "",
               markdown_table(result, figures), "",
               "valid turns: model turns (re-asks included) whose calls all name a listed function with arguments "
               "its schema accepts. Pass rate: label points averaged over the judge repeats; the interval is a "
               "paired bootstrap over queries against the baseline.", "", *footer(result), "",
               *text_lines(result, max_flips=1000)]
    for name, content in (("runs.md", "\n".join(summary) + "\n"), ("runs.csv", buffer.getvalue())):
        write_text_atomic(out / name, content)
        written.append(out / name)
    return written
