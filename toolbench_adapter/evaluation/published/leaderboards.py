"""Published leaderboards: read them (Markdown, LaTeX, CSV / TSV, several tables to a file), check their
Averages, compare them cell by cell with reproduced boards.

A published table has rows = models and columns = the six groups and an Average; cells are ``mean±std`` or a
single number, in whatever markup the paper printed them. Reading is split by job: published_grids (+ _markdown,
_latex) finds the tables in a file, published_cells reads a printed cell, published_columns places a header,
published_tables turns a grid into tables (row names, metric), published_averages checks an Average against its
cells, published_names pairs rows with reproduced models. The tables that ship with the project live in
``toolbench_adapter/data/published/``, listed in its ``index.json`` with the repository, file and commit each
comes from.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.published.averages import (  # noqa: F401  (the checks are part of this module's interface)
    FOLLOWS,
    NOT_FOLLOWING,
    STD_DIFFERS,
    AverageCheck,
    averages_text,
    check_average,
    check_averages,
    followed_by,
)
from toolbench_adapter.evaluation.published.cells import PublishedCell, parse_cell, prints_as  # noqa: F401
from toolbench_adapter.evaluation.published.columns import METRICS, POOLED, column_key, metric_word  # noqa: F401
from toolbench_adapter.evaluation.published.formats import find_grids
from toolbench_adapter.evaluation.published.names import (  # noqa: F401
    BY_MATCH,
    BY_PRESET,
    BY_WORDS,
    normalise,
    pair_rows,
    unmatched_text,
)
from toolbench_adapter.evaluation.published.tables import GUESSED, PublishedRow, PublishedTable, tables_from_grid
from toolbench_adapter.evaluation.scoring.aggregates import BoardLine
from toolbench_adapter.files.input_files import UnreadableFile, read_text
from toolbench_adapter.queryset.queries import GROUP_LABELS

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "published"
SETS = ("stb", "toolbench", "all")
FORMS = "Markdown (| cells |), LaTeX (\\begin{tabular}), CSV or TSV"
EXACT, ROUNDING, DIFFERS, NO_LABELS = "exact", "within rounding", "differs", "no reproduced labels"


@dataclass(frozen=True)
class MetricChoice:
    """``--published-metric``: METRIC for every table, N=METRIC for table N, FILE#N=METRIC for one file's."""
    metric: str
    number: int | None = None
    file: str | None = None
    text: str = ""

    def applies(self, table: PublishedTable) -> bool:
        if self.number is not None and table.number != self.number:
            return False
        return self.file is None or self.file in (str(table.path), table.path.name)


def parse_metric_choice(text: str) -> MetricChoice:
    where, sep, name = text.rpartition("=")
    metric = metric_word(name) if name.strip() not in METRICS else name.strip()
    if metric is None:
        raise InputError(f"--published-metric {text!r}: {name!r} is not a metric", field="--published-metric",
                         fix="SoPR (pass rate), SoWR (win rate) or FAC; for one table N=SoWR or FILE#N=SoWR")
    if not sep:
        return MetricChoice(metric, text=text)
    file, hash_, number = where.rpartition("#")
    if not number.strip().isdigit():
        raise InputError(f"--published-metric {text!r}: {where!r} is not a table number", field="--published-metric",
                         fix="N=METRIC (the N of 'FILE#N' in the output) or FILE#N=METRIC")
    return MetricChoice(metric, int(number), file.strip() if hash_ else None, text)


def read_table_text(path: Path) -> str:
    """The file's text (the input reader's refusals: a folder, a device, a FIFO, past 256 MiB, binary, not UTF-8),
    newlines as text mode reads them."""
    try:
        text = read_text(path, "published table")
    except UnreadableFile as exc:
        if exc.reason == "not_found":
            raise InputError("published table not found", path=path,
                             fix=f"pass a {FORMS} file, or one of {', '.join(SETS)}") from None
        raise
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text's universal newlines


def read_tables(path: str | Path, *, meta: dict | None = None) -> list[PublishedTable]:
    """Every published table in a file (numbered 1, 2, ... in file order: FILE#N)."""
    path = Path(path)
    # the text is let go once its grids are cut out of it (a large file need not be held twice)
    grids = find_grids(path, read_table_text(path))
    tables: list[PublishedTable] = []
    problems: list[str] = []
    for grid in grids:
        found, trouble = tables_from_grid(grid, path)
        tables += found
        problems += trouble
    if not tables:
        seen = "; ".join(problems) if problems else "no table found"
        raise InputError(f"no readable published table ({seen})", path=path,
                         fix=f"a {FORMS} table with a header (Method, I1 Inst, ..., Average) and one line per model")
    meta = meta or {}
    for number, table in enumerate(tables, start=1):
        table.number = number
        table.id = meta.get("id") or f"{path.name}#{number}"
        table.title = meta.get("title") or f"{path.name}#{number}"
        table.meta = meta
        if meta.get("metric"):
            table.metric, table.metric_source = meta["metric"], "index.json"
        if "scale" in meta:
            table.scale = float(meta["scale"])
        if number == 1:
            table.notes += [f"not read: {p}" for p in problems]
    return tables


def read_table(path: str | Path, *, metric: str | None = None, meta: dict | None = None) -> PublishedTable:
    """The first table of a file."""
    table = read_tables(path, meta=meta)[0]
    if metric:
        table.metric, table.metric_source = metric, "--published-metric"
    return table


def shipped_index() -> list[dict]:
    return json.loads((DATA_DIR / "index.json").read_text(encoding="utf-8"))["tables"]


def load_published(spec: str, metrics: list[MetricChoice] | str | None = None) -> list[PublishedTable]:
    """``stb`` / ``toolbench`` / ``all`` (shipped sets), a shipped table id, a file, or FILE#N (its table N)."""
    index = shipped_index()
    chosen = [t for t in index if spec == "all" or t["set"] == spec or t["id"] == spec]
    if chosen:
        return [table for t in chosen for table in read_tables(DATA_DIR / t["file"], meta=t)]
    path, number = Path(spec), None
    if not path.exists() and "#" in spec:
        file, _, tail = spec.rpartition("#")
        if tail.isdigit():
            path, number = Path(file), int(tail)
    if not path.exists():
        raise InputError(f"--published {spec!r} is neither a file nor a shipped table", field="--published",
                         fix=f"pass a {FORMS} file (FILE#N for its table N), {', '.join(SETS)}, or one of "
                         f"{', '.join(t['id'] for t in index)}")
    tables = read_tables(path)
    if number is not None:
        picked = [t for t in tables if t.number == number]
        if not picked:
            raise InputError(f"{path} holds {len(tables)} table{'s' if len(tables) != 1 else ''}, no #{number}",
                             field="--published", fix=f"one of {', '.join(t.id for t in tables)}")
        tables = picked
    if isinstance(metrics, str):
        metrics = [MetricChoice(metrics)]
    for choice in metrics or []:
        for table in tables:
            if choice.applies(table):
                table.metric, table.metric_source = choice.metric, f"--published-metric {choice.text or choice.metric}"
    return tables


def load_all(specs: list[str], metric_texts: list[str] | None = None) -> list[PublishedTable]:
    """Every --published spec; each --published-metric must apply to a table read."""
    choices = [parse_metric_choice(text) for text in metric_texts or []]
    tables = [table for spec in specs for table in load_published(spec, choices)]
    files = [t for t in tables if not t.meta]
    for choice in choices:
        if not any(choice.applies(t) for t in files):
            raise InputError(f"--published-metric {choice.text!r} names no table read from a file",
                             field="--published-metric",
                             fix=("tables read: " + ", ".join(t.id for t in files)) if files else
                             "it sets the metric of a --published FILE (shipped tables carry theirs in index.json)")
    unnamed = [t for t in files if t.metric_source.startswith(GUESSED)]
    if unnamed:  # asked, never guessed: a SoWR table read as SoPR would be compared with the wrong labels
        flags = " ".join("--published-metric " + shlex.quote(f"{t.path}#{t.number}={t.metric}") for t in unnamed)
        raise InputError(f"nothing names the metric of {', '.join(t.id for t in unnamed)} (no column header, "
                         "section row, caption or text above the table says pass rate, win rate or FAC)",
                         field="--published-metric",
                         fix=f"say which, e.g. {flags} ({'; '.join(_why_suggested(t) for t in unnamed)}; "
                         "check it against the paper)")
    return tables


def _why_suggested(table: PublishedTable) -> str:
    """Why the fix suggests this metric for an unnamed table: the text near it that names one (never contradicted),
    else its cells (with ± SoPR, judge repeats; without, SoWR)."""
    why = table.metric_source.removeprefix(GUESSED).strip()
    if " names " not in why:
        why += " (with ± SoPR, judge repeats; without, SoWR)"
    return f"#{table.number} {table.metric}: {why}"


def reading_lines(table: PublishedTable) -> list[str]:
    """What was read: the metric and where it came from, the columns, and anything not read."""
    numbers, empty, unreadable = table.count_cells()
    source = table.metric_source or "index.json"
    source = (f"{source}; say it with --published-metric {table.number}=SoPR|SoWR|FAC"
              if source.startswith("guessed") else f"from {source}")
    lines = [f"  metric {table.metric} ({source}); {table.form or 'table'} "
             f"at line {table.line}: {len(table.rows)} rows, {numbers} numeric cells, {empty} not reported"
             + (f", {table.unplaced} in columns not placed" if table.unplaced else "")
             + (f", {unreadable} unreadable" if unreadable else "")]
    columns = ", ".join(f"{header}={GROUP_LABELS.get(key, key)}" if normalise(header) != normalise(
        GROUP_LABELS.get(key, key)) else header for header, key in table.columns)
    lines.append(f"  columns read: {columns}")
    if any(key == POOLED for _, key in table.columns):
        lines.append(f"  {POOLED}: pooled over every query, not the mean of the six groups: not checked against its "
                     "row's cells, and compared with nothing (no reproduced pooled figure)")
    if table.not_placed:
        lines.append("  not placed: " + "; ".join(table.not_placed))
    for row in table.rows:
        for column, text in row.unreadable.items():
            lines.append(f"  unreadable cell (not compared): {row.name}, {GROUP_LABELS.get(column, column)}: "
                         f"{text!r} (line {row.line})")
    lines += [f"  {note}" for note in table.notes]
    return lines


def readings_text(tables: list[PublishedTable]) -> str:
    """What was read from each --published file (the shipped tables are known)."""
    lines = []
    for table in (t for t in tables if not t.meta):
        lines.append(f"Read {table.title} ({table.provenance})")
        lines += reading_lines(table)
    return "\n".join(lines) + "\n" if lines else ""


# ---- published against reproduced --------------------------------------------------------------------


@dataclass(slots=True)  # one per published cell: a large table holds millions
class CellComparison:
    row: PublishedRow
    column: str
    published: PublishedCell
    reproduced: str | None  # the reproduced cell as printed, with its data label
    difference: float | None
    mark: str
    line: BoardLine | None = None


@dataclass
class Comparison:
    table: PublishedTable
    cells: list[CellComparison]
    pairs: dict = field(default_factory=dict)  # published row name -> Pair (how it was paired)
    models: list[str] = field(default_factory=list)  # the reproduced models of the table's metric
    unrounded: dict = field(default_factory=dict)  # row name -> the reproduced (unrounded) Average

    def count(self, mark: str) -> int:
        return sum(1 for c in self.cells if c.mark == mark)

    @property
    def not_reported(self) -> int:
        return sum(len(r.not_reported) for r in self.table.rows)

    @property
    def unreadable(self) -> int:
        return self.table.count_cells()[2]

    @property
    def unplaced(self) -> int:
        return self.table.unplaced

    @property
    def total(self) -> int:
        """M of "K of M": every number read, those under a header that places nowhere too (not compared)."""
        return len(self.cells) + self.unplaced

    @property
    def summary(self) -> str:
        text = (f"{self.count(EXACT)} of {self.total} published cells reproduced exactly, "
                f"{self.count(ROUNDING)} within rounding, {self.count(DIFFERS)} differ, "
                f"{self.count(NO_LABELS)} without labels, {self.not_reported} not reported")
        text += f", {self.unplaced} in columns not placed" if self.unplaced else ""
        return text + (f", {self.unreadable} unreadable" if self.unreadable else "")


def _lines_of(table: PublishedTable, model: str, lines: list[BoardLine], matches: dict[str, str]) -> BoardLine | None:
    candidates = [line for line in lines if line.model == model]
    reference = table.meta.get("reference")
    if reference and len(candidates) > 1:  # SoWR: the published reference model, when the labels say it
        wanted = {normalise(k): v for k, v in matches.items()}
        target = normalise(wanted.get(normalise(reference), reference))  # --match, or the example's pairing
        candidates = [c for c in candidates if normalise(c.reference or "") == target] or candidates
    return candidates[0] if candidates else None


def _mark(published: PublishedCell, value: float, std: float | None, scale: float) -> tuple[str, float]:
    mean = value / scale
    diff = mean - published.mean
    same = prints_as(mean, published.mean, published.decimals)
    close = abs(diff) <= published.unit + 1e-9
    if published.std is not None and std is not None:
        std = std / scale
        same = same and prints_as(std, published.std, published.decimals)
        close = close and abs(std - published.std) <= published.unit + 1e-9
    return (EXACT if same else ROUNDING if close else DIFFERS), diff


def compare(table: PublishedTable, lines: list[BoardLine], matches: dict[str, str] | None = None,
            describe=None, preset: dict[str, str] | None = None) -> Comparison:
    """Every published cell against the reproduced board line its row pairs with (published_names: ``--match``
    (``matches``: published row -> reproduced model), equal names up to case and punctuation, or the same name
    words; ``preset``: a pairing the project knows, such as the released example's). ``describe(score)`` labels
    a reproduced cell with its data (e.g. "3 queries")."""
    matches = matches or {}
    models = list(dict.fromkeys(line.model for line in lines))
    pairs = pair_rows([row.name for row in table.rows], models, matches, preset)
    out = []
    unrounded = {}
    for row in table.rows:
        pair = pairs.get(row.name)
        line = _lines_of(table, pair.model, lines, {**(preset or {}), **matches}) if pair else None
        for column, cell in row.cells.items():
            score = line.value(column) if line is not None and column != POOLED else None  # no pooled figure
            if score is None:
                out.append(CellComparison(row, column, cell, None, None, NO_LABELS, line))
                continue
            with_std = cell.std is not None and not score.single_repeat
            mark, diff = _mark(cell, score.mean, score.std if with_std else None, table.scale)
            text = score.text(with_std=table.metric == "SoPR")
            if describe is not None:
                text += f" ({describe(score)})"
            out.append(CellComparison(row, column, cell, text, diff, mark, line))
        if line is not None and (average := line.value("Average")) is not None:
            unrounded[row.name] = average.mean / table.scale
    return Comparison(table, out, pairs, models, unrounded)


def comparison_text(comparison: Comparison) -> str:
    table = comparison.table
    judge = table.meta.get("judge")
    lines = [f"Published: {table.title} ({table.provenance}" + (f"; judge {judge}" if judge else "") + ")"]
    if not table.meta:
        lines += reading_lines(table)
    by_row: dict[str, list[CellComparison]] = {}
    for cell in comparison.cells:
        if cell.line is not None:
            by_row.setdefault(cell.row.name, []).append(cell)
    if by_row:
        lines.append(f"  {'column':<8} {'published':>10}  {'reproduced':<34} {'difference':>10}  mark")
    rows = {row.name: row for row in table.rows}
    for name, cells in by_row.items():
        pair = comparison.pairs.get(name)
        how = {BY_MATCH: " (--match)", BY_WORDS: " (the same name words)",
               BY_PRESET: " (the released example's pairing)"}.get(pair.how if pair else "", "")
        lines.append(f"  {name} = reproduced {cells[0].line.name}{how}")
        for cell in (c for c in cells if c.mark != NO_LABELS):
            label = GROUP_LABELS.get(cell.column, cell.column)
            lines.append(f"  {label:<8} {cell.published.text:>10}  {cell.reproduced:<34} "
                         f"{cell.difference:>+10.2f}  {cell.mark}")
        missing = [GROUP_LABELS.get(c.column, c.column) for c in cells if c.mark == NO_LABELS]
        if missing:
            lines.append(f"  {'':<8} {len(missing)} published cells without reproduced labels: {', '.join(missing)}")
        empty = [GROUP_LABELS.get(c, c) for c in rows[name].not_reported]
        if empty:
            lines.append(f"  {'':<8} {len(empty)} not reported in the table: {', '.join(empty)}")
        followed = followed_by(rows[name], comparison.unrounded.get(name))
        if followed:
            lines.append(f"  {'':<8} {followed}")
    unmatched = [row.name for row in table.rows if row.name not in comparison.pairs and row.cells]
    paired_models = {pair.model for pair in comparison.pairs.values()}
    spare = [m for m in comparison.models if m not in paired_models]
    lines += unmatched_text(unmatched, spare)
    lines.append("  " + comparison.summary)
    return "\n".join(lines) + "\n"
