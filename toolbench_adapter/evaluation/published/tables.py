"""A grid of printed cells (grids.py) read as published tables: header rows, columns, row names,
cells, and the metric of each table.

- Header rows: the rows before the first row that holds a number or a "not reported" mark; a spanning header
  (``I1`` over ``Inst. / Cat. / Tool``) reads with the row below it.
- Row names: the leading text cells joined (``ToolLLaMA-2-7b-v2 / DFSDT / StepTool``); an empty leading cell
  under a ``\\multirow`` or a left-out repeat takes the value above it; a ``/`` there is no part of the name.
- Metric, nearest first: the column's own header (``Pass`` / ``Win`` under a group, ``G1_tool_WinRate``), a
  leading column or section row that names one (``| Pass | ReACT | ... |``, ``\\multicolumn{9}{c}{Win Rate}``),
  the table's caption or the heading above it; else a guess from ± that load_all refuses to use (exit 2 asks
  for --published-metric). A grid whose
  columns or sections name different metrics gives one table per metric.
- Every cell of a placed column is a number, "not reported" (``/``, ``-``, ``–``, ``N/A``, empty) or
  unreadable (kept, and named); a header that places nowhere is named, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from toolbench_adapter.evaluation.published import cells
from toolbench_adapter.evaluation.published.cells import PublishedCell
from toolbench_adapter.evaluation.published.columns import (
    AVERAGE_WORDS,
    GROUP,
    HEADER_METRICS,
    KIND_WORDS,
    SOPR,
    SOWR,
    STD,
    label,
    metric_in_text,
    metric_word,
    metrics_in_text,
    place,
    words,
)
from toolbench_adapter.evaluation.published.grids import Grid

_NONE: Mapping[str, str] = MappingProxyType({})
GUESSED = "guessed:"  # a metric nothing names: load_all asks for --published-metric rather than use it
CONTEXT_LINES = 8  # how far above a table a heading may be and still name its metric


@dataclass(slots=True)  # one per row: a large table holds hundreds of thousands
class PublishedRow:
    name: str
    cells: dict[str, PublishedCell] = field(default_factory=dict)  # group or AVERAGE -> cell
    # columns printed "/", "-", "N/A" or empty; column -> the printed text of a cell that is no number. Both are a
    # shared empty until _put gives a row its first (most rows of a large table have none: 120 bytes a row)
    not_reported: Sequence[str] = ()
    unreadable: Mapping[str, str] = field(default_factory=lambda: _NONE)
    line: int = 0


@dataclass
class PublishedTable:
    id: str
    title: str
    metric: str
    rows: list[PublishedRow]
    path: Path
    scale: float = 1.0  # multiply a cell by this to get a percentage
    meta: dict = field(default_factory=dict)
    metric_source: str = ""  # where the metric was read ("the heading '**Win Rate:**'")
    number: int = 1  # the table's number in its file (FILE#N)
    line: int = 0
    form: str = ""
    columns: list[tuple[str, str]] = field(default_factory=list)  # (printed header, group or AVERAGE)
    not_placed: list[str] = field(default_factory=list)  # headers read but not placed, with why
    notes: list[str] = field(default_factory=list)
    unread: int = 0  # numeric cells in rows that could not be read (named in notes)
    unplaced: int = 0  # numeric cells under headers that place nowhere (named in not_placed), so M counts them

    @property
    def provenance(self) -> str:
        source = self.meta.get("source")
        if not source:
            return f"{self.path}, line {self.line}" if self.line else str(self.path)
        return f"{source['repo']} {source['path']} @ {source['commit'][:7]}"

    def count_cells(self) -> tuple[int, int, int]:
        """(numbers, not reported, unreadable: cells that are text, and numbers in rows not read) over the table."""
        return (sum(len(r.cells) for r in self.rows), sum(len(r.not_reported) for r in self.rows),
                sum(len(r.unreadable) for r in self.rows) + self.unread)


def _is_data(row: list[cells.Reading]) -> bool:
    return any(r.kind == cells.NUMBER or (r.kind == cells.EMPTY and r.text) for r in row)


def _headerish(text: str) -> bool:
    tokens = words(text)
    level = any(a in ("i", "g") and b in ("1", "2", "3") for a, b in zip(tokens, tokens[1:], strict=False))
    return level or any(t in KIND_WORDS and len(t) > 1 or t in AVERAGE_WORDS or t in HEADER_METRICS for t in tokens)


def _spans_over(text: str) -> bool:
    """A header cell that can span the columns to its right: it names a level (I1) or a metric."""
    tokens = words(text)
    level = any(a in ("i", "g") and b in ("1", "2", "3") for a, b in zip(tokens, tokens[1:], strict=False))
    return level or any(t in HEADER_METRICS for t in tokens)


def _header_texts(header: list[list[str]], fill_spans: bool) -> list[str]:
    """Each column's header rows joined top to bottom; in Markdown / CSV an empty cell right of a spanning
    header (``| I1 | | |``) belongs to it when the row below names what it is (``Inst.``)."""
    rows = [list(r) for r in header]
    if fill_spans:
        for upper in rows[:-1]:
            for c in range(1, len(upper)):
                below = rows[-1][c]
                if not upper[c].strip() and upper[c - 1].strip() and _spans_over(upper[c - 1]) and below.strip():
                    upper[c] = upper[c - 1]
    texts = []
    for c in range(len(rows[0])):
        parts: list[str] = []
        for row in rows:
            text = cells.clean(row[c])
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        texts.append(" ".join(parts))
    return texts


def _mostly_numbers(column: list[cells.Reading]) -> bool:
    filled = [r for r in column if r.text]
    return bool(filled) and sum(r.kind == cells.NUMBER for r in filled) * 2 >= len(filled)


@dataclass
class _Column:
    index: int
    header: str
    key: str | None
    role: str | None
    metric: str | None
    reason: str


@dataclass
class _Part:
    """The rows of one metric in one header section of a grid (before they become a table)."""
    metric: str | None
    source: str
    columns: list[_Column]
    rows: list[PublishedRow] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)  # the section label of each row
    dropped: dict[int, int] = field(default_factory=dict)  # column index -> numbers in a second column of a group
    placed: set[int] = field(default_factory=set)  # the indices of ``columns``


_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


def _context_kind(line: str) -> str:
    """How the line above a table is named in the output: a heading (``#``, a bold line), a list item, or text."""
    stripped = line.strip()
    if stripped.startswith("#") or re.fullmatch(r"(\*\*|__).+\1:?", stripped):
        return "the heading"
    if _LIST_MARK.match(stripped) and not stripped.startswith("**"):
        return "the list item"
    return "the heading" if stripped.startswith("\\") else "the text"


def context_metric(grid: Grid) -> tuple[str | None, str]:
    """The metric the caption or the nearest heading names, and where it was read."""
    caption = [("caption", grid.caption)] if grid.caption else []
    context = [(_context_kind(line), line) for line in grid.context[:CONTEXT_LINES]]
    ordered = caption + context if grid.form == "LaTeX" else context + caption
    for kind, text in ordered:
        metric = metric_in_text(text)
        if metric:
            # shown as printed: "(%)" kept, a Markdown heading's leading #s taken off
            shown = _LIST_MARK.sub("", re.sub(r"^#+\s*", "", cells.clean(text, keep_percent=True)))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            shared = " above the table before it (nothing stands between the two)" if (
                grid.context_shared and kind != "caption") else ""
            return metric, f"{kind} '{shown}'{shared}"
    return None, ""


def mentioned_metric(grid: Grid, fallback: str) -> tuple[str, str] | None:
    """For a table nothing names the metric of: the metric the text around it does name, where it cannot be
    taken as the table's (further up than CONTEXT_LINES, or beside another metric in one sentence), so the
    suggested --published-metric never contradicts text that names one (issue 41: a CJK sentence naming SoPR
    got SoWR suggested). The nearest mention; ``fallback`` (the cells' guess) when that line names it too."""
    texts = ([grid.caption] if grid.caption else []) + list(grid.context)
    for text in texts:
        named = metrics_in_text(text)
        if named:
            metric = fallback if fallback in named else named[0]
            shown = cells.clean(text, keep_percent=True)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return metric, f"'{shown}' names {' and '.join(named)}"
    return None


def tables_from_grid(grid: Grid, path: Path) -> tuple[list[PublishedTable], list[str]]:
    """The tables a grid holds, and what could not be read (a grid with no placed column; malformed rows)."""
    width = max(len(r) for r in grid.rows)
    expected = len(grid.rows[0])
    readings = [[cells.read(c) for c in row] + [cells.Reading(cells.EMPTY, "")] * (width - len(row))
                for row in grid.rows]
    raw = [row if len(row) == width else row + [""] * (width - len(row)) for row in grid.rows]  # no copy of full rows
    h = 0
    while h < len(raw) and not _is_data(readings[h]):
        distinct = {c.strip() for c in raw[h] if c.strip()}
        # a further header row names several columns (Inst. / Cat. / Tool); one lone text is a section row
        if h < max(grid.header_rows, 1) or (len(distinct) > 1 and any(_headerish(c) for c in raw[h])):
            h += 1
        else:
            break
    if h == 0:
        return [], [f"{grid.form} table at line {grid.line}: no header row (its first row holds numbers)"]
    return _read_parts(grid, path, raw, readings, h, expected)


def _whole(grid: Grid, i: int, expected: int) -> bool:
    """Row i has a cell under each header (LaTeX rows are read as they come; a short Markdown / CSV row is not)."""
    return grid.form == "LaTeX" or len(grid.rows[i]) == expected


def _columns(grid: Grid, raw: list[list[str]], readings, h: int, body: range,
             expected: int) -> tuple[list[_Column], list[int], int | None, list[str], int]:
    """The columns; the leading name columns; a leading metric column; the headers not placed, with why; and the
    numbers under those headers (rows not read count theirs apart, as unread)."""
    texts = _header_texts(raw[:h], fill_spans=not grid.spans_explicit)
    columns = [_Column(c, text, *_placed(text)) for c, text in enumerate(texts)]
    placed = [c.index for c in columns if c.role in (GROUP, STD)]
    first = placed[0] if placed else len(columns)
    names, metric_column, not_placed, unplaced = [], None, [], 0
    for column in columns:
        values = [readings[i][column.index] for i in body]
        if column.role in (GROUP, STD):
            continue
        if not column.header and not any(v.text for v in values):
            continue  # an empty column (a trailing pipe, a spacer)
        if column.index < first and not _mostly_numbers(values):
            filled = [v.text for v in values if v.text]
            if filled and metric_column is None and all(metric_word(t) for t in filled):
                metric_column = column.index
            else:
                names.append(column.index)
            continue
        numbers = sum(readings[i][column.index].kind == cells.NUMBER for i in body if _whole(grid, i, expected))
        unplaced += numbers
        not_placed.append(f"'{column.header or f'column {column.index + 1}'}' ({column.reason}; "
                          f"{numbers} numeric cell{'s' if numbers != 1 else ''} not compared)")
    for column in columns:
        if column.role == STD:
            not_placed.append(f"'{column.header}' ({column.reason})")
    return columns, names, metric_column, not_placed, unplaced


def _placed(text: str) -> tuple[str | None, str | None, str | None, str]:
    placement = place(text)
    return placement.key, placement.role, placement.metric, placement.reason


def _read_parts(grid: Grid, path: Path, raw, readings, h: int, expected: int) -> tuple[list[PublishedTable],
                                                                                      list[str]]:
    body_end = next((i for i in range(h, len(raw)) if not _is_data(readings[i])
                     and sum(_placed(cells.clean(c))[1] == GROUP for c in raw[i]) >= 2), len(raw))
    columns, names, metric_column, not_placed, unplaced = _columns(grid, raw, readings, h, range(h, body_end),
                                                                   expected)
    group_columns = [c for c in columns if c.role == GROUP]
    problems: list[str] = []
    if not group_columns:
        headers = ", ".join(f"'{c.header}'" for c in columns if c.header)
        problems.append(f"{grid.form} table at line {grid.line}: no column names a group or the Average "
                        f"(headers: {headers})")
    context, context_source = context_metric(grid)
    parts: dict[tuple, _Part] = {}
    section, section_metric, previous = "", (None, ""), [""] * len(names)
    malformed: list[str] = []
    unread = 0
    for i in range(h, body_end):
        row = readings[i]
        if not any(r.text for r in row):
            continue
        if not _is_data(row):
            text = " / ".join(dict.fromkeys(r.text for r in row if r.text))
            metric = metric_word(text)
            if metric:
                section_metric = (metric, f"the section row '{text}'")
            else:
                section = text
            continue
        if not _whole(grid, i, expected):
            numbers = sum(r.kind == cells.NUMBER for r in row)
            malformed.append(f"line {grid.line_of(i)}: {len(grid.rows[i])} cells where the header has {expected}, "
                             f"{numbers} numeric cells not read")
            unread += numbers
            continue
        parts_of_name = [row[c].text if row[c].kind != cells.EMPTY else "" for c in names]
        for p in range(len(parts_of_name)):  # \multirow, or a repeat left out: the cell above
            if not parts_of_name[p] and any(parts_of_name[p + 1:]) and previous[p]:
                parts_of_name[p] = previous[p]
        previous = parts_of_name
        name = " / ".join(p for p in parts_of_name if p) or f"row at line {grid.line_of(i)}"
        row_metric = (metric_word(row[metric_column].text), f"the leading column '{row[metric_column].text}'") \
            if metric_column is not None else (None, "")
        for column in group_columns:
            if column.metric:
                metric, source = column.metric, "the column headers"
            elif row_metric[0]:
                metric, source = row_metric
            elif section_metric[0]:
                metric, source = section_metric
            else:
                metric, source = context, context_source
            part = parts.get(metric)
            if part is None:
                part = parts[metric] = _Part(metric, source, [])
            if column.index not in part.placed:  # by index: comparing whole columns was the slowest step
                part.placed.add(column.index)
                part.columns.append(column)
            line = grid.line_of(i)
            if not part.rows or part.rows[-1].line != line or part.rows[-1].name != name:
                part.rows.append(PublishedRow(name, line=line))
                part.sections.append(section)
            if not _put(part.rows[-1], column, row[column.index], raw[i][column.index]) \
                    and row[column.index].kind == cells.NUMBER:
                part.dropped[column.index] = part.dropped.get(column.index, 0) + 1
    tables = [_table(grid, path, part, not_placed, malformed if n == 0 else [])
              for n, part in enumerate(parts.values())]
    if tables:  # counted once, on the grid's first table, as its not-placed headers span all of them
        tables[0].unread = unread  # numeric cells in rows not read
        tables[0].unplaced += unplaced
    if body_end < len(raw):  # a second header inside the grid: another table below it
        rest = Grid(grid.rows[body_end:], grid.line_of(body_end), grid.form, 1, [], grid.caption,
                    grid.row_lines[body_end:], grid.spans_explicit)
        more, more_problems = tables_from_grid(rest, path)
        tables += more
        problems += more_problems
    if not tables and group_columns:
        problems.append(f"{grid.form} table at line {grid.line}: no rows with numbers"
                        + "".join(f"; row not read ({m})" for m in malformed))
    return tables, problems


def _put(row: PublishedRow, column: _Column, reading: cells.Reading, printed: str) -> bool:
    """False when the row already has the column's group (its cell is not read)."""
    key = column.key
    if key in row.cells or key in row.not_reported or key in row.unreadable:
        return False  # two columns for one group in one metric: the first is read (the second is named below)
    if reading.kind == cells.NUMBER:
        row.cells[key] = reading.cell
    elif reading.kind == cells.EMPTY:
        row.not_reported = [*row.not_reported, key]
    else:
        row.unreadable = {**row.unreadable, key: printed.strip()}
    return True


def _table(grid: Grid, path: Path, part: _Part, not_placed: list[str], malformed: list[str]) -> PublishedTable:
    table = PublishedTable(id="", title="", metric=part.metric or "", rows=part.rows, path=path,
                           metric_source=part.source, line=grid.line, form=grid.form,
                           columns=[(c.header, c.key) for c in part.columns], not_placed=list(not_placed))
    seen: dict[str, int] = {}
    for column in part.columns:
        seen[column.key] = seen.get(column.key, 0) + 1
        if seen[column.key] >= 2:
            numbers = part.dropped.get(column.index, 0)
            table.unplaced += numbers
            table.not_placed.append(f"'{column.header}' (a second {label(column.key)} column; the first is read; "
                                    f"{numbers} numeric cell{'s' if numbers != 1 else ''} not compared)")
    sections: dict[str, set[str]] = {}
    for row, section in zip(part.rows, part.sections, strict=True):
        sections.setdefault(row.name, set()).add(section)
    for row, section in zip(part.rows, part.sections, strict=True):
        if len(sections[row.name]) > 1 and section:  # one name under two section rows: the section tells them apart
            row.name = f"{section} / {row.name}"
    counts: dict[str, int] = {}
    for row in part.rows:
        counts[row.name] = counts.get(row.name, 0) + 1
        if counts[row.name] > 1:
            table.notes.append(f"row '{row.name}' at line {row.line} repeats a name: "
                               f"read as '{row.name} #{counts[row.name]}'")
            row.name = f"{row.name} #{counts[row.name]}"
    if malformed:
        table.notes += [f"row not read ({m})" for m in malformed]
    if not table.metric:
        has_std = any(c.std is not None for r in table.rows for c in r.cells.values())
        table.metric = SOPR if has_std else SOWR
        table.metric_source = (f"{GUESSED} nothing names the metric, and the cells carry ± (judge repeats)" if has_std
                               else f"{GUESSED} nothing names the metric, and no cell carries ±")
        mentioned = mentioned_metric(grid, table.metric)
        if mentioned is not None:  # the text does name one: the suggestion follows it, not the cells
            table.metric = mentioned[0]
            table.metric_source = (f"{GUESSED} nothing above the table names its metric alone, but the text "
                                   f"{mentioned[1]}")
    means = [c.mean for r in table.rows for c in r.cells.values()]
    if means and all(0 <= m <= 1 for m in means) and any(0 < m < 1 for m in means):
        table.scale = 100.0
        table.notes.append("every cell lies in [0, 1]: read as fractions (x 100)")
    return table
