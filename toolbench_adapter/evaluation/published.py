"""Published leaderboards: read them (Markdown or CSV), check their Averages, compare them cell by cell.

A published table has rows = models and columns = the six groups and an Average; cells are ``mean±std`` or a
single number. Column headers are recognised by name (``I1 Instruction``, ``I1 Inst``, ``G1_instruction``,
``G1_instruction_WinRate``...), so the README's two column orders (SoPR: I2 Cat before I2 Inst; SoWR the other
way) both read right. The tables that ship with the project live in ``toolbench_adapter/data/published/``,
listed in its ``index.json`` with the repository, file and commit each comes from.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..queries import GROUP_LABELS, GROUPS
from .aggregates import AVERAGE, BoardLine

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "published"
SETS = ("stb", "toolbench", "all")
KINDS = {"inst": "instruction", "cat": "category", "tool": "tool"}
CELL_RE = re.compile(r"^\s*(-?\d+(?:\.(\d+))?)\s*(?:±\s*(\d+(?:\.\d+)?))?\s*%?\s*$")
EXACT, ROUNDING, DIFFERS, NO_LABELS = "exact", "within rounding", "differs", "no reproduced labels"
FOLLOWS, NOT_FOLLOWING = "follows", "DOES NOT FOLLOW"


@dataclass
class PublishedCell:
    text: str
    mean: float
    std: float | None
    decimals: int

    @property
    def unit(self) -> float:
        """One unit of the last printed digit."""
        return 10.0 ** -self.decimals


@dataclass
class PublishedRow:
    name: str
    cells: dict[str, PublishedCell] = field(default_factory=dict)  # group or AVERAGE -> cell


@dataclass
class PublishedTable:
    id: str
    title: str
    metric: str
    rows: list[PublishedRow]
    path: Path
    scale: float = 1.0  # multiply a cell by this to get a percentage
    meta: dict = field(default_factory=dict)

    @property
    def provenance(self) -> str:
        source = self.meta.get("source")
        if not source:
            return str(self.path)
        return f"{source['repo']} {source['path']} @ {source['commit'][:7]}"


def column_key(header: str) -> str | None:
    """The group (or AVERAGE) a header names; None for the method column and std-error columns."""
    text = re.sub(r"[^a-z0-9]", "", header.lower())
    if "stderr" in text or "stderror" in text:
        return None
    if text in ("average", "avg", "winrate", "passrate", "mean"):
        return AVERAGE
    match = re.match(r"^[ig]([123])(inst|cat|tool)", text)
    if not match:
        return None
    group = f"G{match.group(1)}_{KINDS[match.group(2)]}"
    return group if group in GROUPS else None


def parse_cell(text: str) -> PublishedCell | None:
    match = CELL_RE.match(text)
    if not match:
        return None
    std = float(match.group(3)) if match.group(3) is not None else None
    return PublishedCell(text.strip(), float(match.group(1)), std, len(match.group(2) or ""))


def _markdown_rows(path: Path, text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break  # the first table only
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue  # the separator row
        rows.append(cells)
    if not rows:
        raise InputError("no Markdown table found", path=path, fix="a table of lines '| Method | I1 Inst | ... |'")
    return rows


def read_table(path: str | Path, *, metric: str | None = None, meta: dict | None = None) -> PublishedTable:
    """A published table from a Markdown (first table in the file) or CSV file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("published table not found", path=path,
                         fix=f"pass a Markdown or CSV file, or one of {', '.join(SETS)}") from None
    grid = list(csv.reader(text.splitlines())) if path.suffix == ".csv" else _markdown_rows(path, text)
    if len(grid) < 2:
        raise InputError("published table has no rows", path=path,
                         fix="a header line (Method, I1 Inst, ..., Average) and one line per model")
    header, body = grid[0], [r for r in grid[1:] if any(c.strip() for c in r)]
    keys = [column_key(h) for h in header]
    if not any(k in GROUP_LABELS for k in keys):
        raise InputError(f"no group columns recognised in the header {header}", path=path, field="header",
                         fix="name columns like 'I1 Inst', 'I2 Category', 'G3_instruction' and 'Average'")
    rows = []
    for number, cells in enumerate(body, start=2):
        row = PublishedRow(cells[0].strip())
        if len(cells) != len(header):
            raise InputError(f"{len(cells)} cells where the header has {len(header)}", path=path,
                             field=f"row {number} ({row.name})", fix="one cell per column ('–' for none)")
        for key, cell_text in zip(keys[1:], cells[1:], strict=True):
            if key is None or cell_text.strip() in ("", "-", "–"):
                continue
            cell = parse_cell(cell_text)
            if cell is None:
                raise InputError(f"cell {cell_text!r} is not a number or mean±std", path=path,
                                 field=f"row {number} ({row.name})", fix="write cells as 52.2±1.1 or 60.7")
            row.cells[key] = cell
        rows.append(row)
    meta = meta or {}
    has_std = any(c.std is not None for r in rows for c in r.cells.values())
    metric = metric or meta.get("metric") or ("SoPR" if has_std else "SoWR")
    return PublishedTable(meta.get("id", path.stem), meta.get("title", path.name), metric, rows, path,
                          float(meta.get("scale", 1)), meta)


def shipped_index() -> list[dict]:
    return json.loads((DATA_DIR / "index.json").read_text(encoding="utf-8"))["tables"]


def load_published(spec: str, metric: str | None = None) -> list[PublishedTable]:
    """``stb`` / ``toolbench`` / ``all`` (shipped sets), a shipped table id, or a Markdown / CSV file."""
    index = shipped_index()
    chosen = [t for t in index if spec == "all" or t["set"] == spec or t["id"] == spec]
    if chosen:
        return [read_table(DATA_DIR / t["file"], meta=t) for t in chosen]
    if not Path(spec).exists():
        raise InputError(f"--published {spec!r} is neither a file nor a shipped table", field="--published",
                         fix=f"pass a Markdown / CSV file, {', '.join(SETS)}, or one of "
                         f"{', '.join(t['id'] for t in index)}")
    return [read_table(spec, metric=metric)]


# ---- the Average against its own cells ------------------------------------------------------------


@dataclass
class AverageCheck:
    table: PublishedTable
    row: PublishedRow
    printed: PublishedCell
    mean: float
    std: float | None
    tolerance: float
    mark: str

    @property
    def off_text(self) -> str:
        digits = min(self.printed.decimals + 2, 6)
        text = f"{abs(self.mean - self.printed.mean):.{digits}f}"
        return text + (f"±{abs(self.std - self.printed.std):.{digits}f}" if self.std is not None else "")

    @property
    def computed_text(self) -> str:
        digits = min(self.printed.decimals + 2, 6)
        text = f"{self.mean:.{digits}f}"
        return text + (f"±{self.std:.{digits}f}" if self.std is not None else "")


def check_average(table: PublishedTable, row: PublishedRow) -> AverageCheck | None:
    """None when the row has no Average or not all six groups (nothing to check it against)."""
    printed = row.cells.get(AVERAGE)
    cells = [row.cells.get(g) for g in GROUPS]
    if printed is None or any(c is None for c in cells):
        return None
    mean = sum(c.mean for c in cells) / len(cells)
    stds = [c.std for c in cells]
    std = sum(stds) / len(stds) if printed.std is not None and all(s is not None for s in stds) else None
    # the cells were rounded (half a unit each, at most) and so was the Average (half its unit); a cell printed
    # as "65" beside "60.5" is 65.0, so the row's finest cell sets the cells' unit
    tolerance = printed.unit / 2 + min(c.unit for c in cells) / 2 + 1e-9
    off = [abs(mean - printed.mean)] + ([abs(std - printed.std)] if std is not None else [])
    same = f"{mean:.{printed.decimals}f}" == f"{printed.mean:.{printed.decimals}f}" and (
        std is None or f"{std:.{printed.decimals}f}" == f"{printed.std:.{printed.decimals}f}")
    mark = FOLLOWS if same else ROUNDING if max(off) <= tolerance else NOT_FOLLOWING
    return AverageCheck(table, row, printed, mean, std, tolerance, mark)


def check_averages(table: PublishedTable) -> list[AverageCheck]:
    return [check for row in table.rows if (check := check_average(table, row)) is not None]


def averages_text(tables: list[PublishedTable], *, only_flagged: bool = False) -> str:
    lines = []
    for table in tables:
        checks = check_averages(table)
        flagged = [c for c in checks if c.mark == NOT_FOLLOWING]
        near = sum(1 for c in checks if c.mark == ROUNDING)
        lines.append(f"Averages of {table.title} ({table.provenance}): {len(checks) - len(flagged)} of "
                     f"{len(checks)} printed Averages follow from their six cells ({near} only within rounding), "
                     f"{len(flagged)} do not")
        if table.meta.get("notes"):
            lines.append(f"  note: {table.meta['notes']}")
        for check in checks if not only_flagged else flagged:
            flag = f"  <-- off by {check.off_text}" if check.mark == NOT_FOLLOWING else ""
            lines.append(f"  {check.row.name:<30} printed {check.printed.text:<10} its cells give "
                         f"{check.computed_text:<16} {check.mark}{flag}")
        unchecked = len(table.rows) - len(checks)
        if unchecked:
            lines.append(f"  ({unchecked} rows without an Average or all six cells: not checked)")
    return "\n".join(lines) + "\n"


# ---- published against reproduced --------------------------------------------------------------------


def normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass
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

    def count(self, mark: str) -> int:
        return sum(1 for c in self.cells if c.mark == mark)

    @property
    def summary(self) -> str:
        return (f"{self.count(EXACT)} of {len(self.cells)} published cells reproduced exactly "
                f"({self.count(ROUNDING)} within rounding, {self.count(DIFFERS)} differ, "
                f"{self.count(NO_LABELS)} without reproduced labels)")


def _find_line(table: PublishedTable, row: PublishedRow, lines: list[BoardLine],
               matches: dict[str, str]) -> BoardLine | None:
    wanted = normalise(matches.get(row.name, row.name))
    candidates = [line for line in lines if normalise(line.model) == wanted]
    reference = table.meta.get("reference")
    if reference and len(candidates) > 1:  # SoWR: the published reference model, when the labels say it
        target = normalise(matches.get(reference, reference))
        candidates = [c for c in candidates if normalise(c.reference or "") == target] or candidates
    return candidates[0] if candidates else None


def _mark(published: PublishedCell, value: float, std: float | None, scale: float) -> tuple[str, float]:
    mean = value / scale
    diff = mean - published.mean
    same = f"{mean:.{published.decimals}f}" == f"{published.mean:.{published.decimals}f}"
    close = abs(diff) <= published.unit + 1e-9
    if published.std is not None and std is not None:
        std = std / scale
        same = same and f"{std:.{published.decimals}f}" == f"{published.std:.{published.decimals}f}"
        close = close and abs(std - published.std) <= published.unit + 1e-9
    return (EXACT if same else ROUNDING if close else DIFFERS), diff


def compare(table: PublishedTable, lines: list[BoardLine], matches: dict[str, str] | None = None,
            describe=None) -> Comparison:
    """Every published cell against the reproduced board line its row matches (``matches``: published row
    name -> reproduced model; otherwise names equal up to case and punctuation). ``describe(score)`` labels
    a reproduced cell with its data (e.g. "3 queries")."""
    matches = matches or {}
    out = []
    for row in table.rows:
        line = _find_line(table, row, lines, matches)
        for column, cell in row.cells.items():
            score = line.value(column) if line is not None else None
            if score is None:
                out.append(CellComparison(row, column, cell, None, None, NO_LABELS, line))
                continue
            with_std = cell.std is not None and not score.single_repeat
            mark, diff = _mark(cell, score.mean, score.std if with_std else None, table.scale)
            text = score.text(with_std=table.metric == "SoPR")
            if describe is not None:
                text += f" ({describe(score)})"
            out.append(CellComparison(row, column, cell, text, diff, mark, line))
    return Comparison(table, out)


def comparison_text(comparison: Comparison) -> str:
    table = comparison.table
    judge = table.meta.get("judge")
    lines = [f"Published: {table.title} ({table.provenance}" + (f"; judge {judge}" if judge else "") + ")"]
    compared = [c for c in comparison.cells if c.mark != NO_LABELS or c.line is not None]
    by_row: dict[str, list[CellComparison]] = {}
    for cell in compared:
        by_row.setdefault(cell.row.name, []).append(cell)
    if by_row:
        lines.append(f"  {'column':<8} {'published':>10}  {'reproduced':<34} {'difference':>10}  mark")
    for name, cells in by_row.items():
        lines.append(f"  {name} = reproduced {cells[0].line.name}")
        for cell in (c for c in cells if c.mark != NO_LABELS):
            label = GROUP_LABELS.get(cell.column, cell.column)
            lines.append(f"  {label:<8} {cell.published.text:>10}  {cell.reproduced:<34} "
                         f"{cell.difference:>+10.2f}  {cell.mark}")
        missing = [GROUP_LABELS.get(c.column, c.column) for c in cells if c.mark == NO_LABELS]
        if missing:
            lines.append(f"  {'':<8} {len(missing)} published cells without reproduced labels: {', '.join(missing)}")
    unmatched = [row.name for row in table.rows if row.name not in by_row]
    if unmatched:
        lines.append(f"  no reproduced labels for {len(unmatched)} published rows: {', '.join(unmatched)}"
                     " (name them with --match 'PUBLISHED ROW=MODEL')")
    lines.append("  " + comparison.summary)
    return "\n".join(lines) + "\n"
