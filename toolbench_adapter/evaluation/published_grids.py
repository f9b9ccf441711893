"""The tables in a file, as grids of printed cell texts with the text around them (for the metric).

Markdown (published_markdown.py), LaTeX ``tabular`` (published_latex.py) and CSV / TSV (here) give the same
``Grid``: rows of raw cells, how many leading rows the format marks as header, the heading / caption lines
nearest first, and the line each row starts on (for messages).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Grid:
    rows: list[list[str]]
    line: int  # 1-based line of the first row
    form: str  # "Markdown", "LaTeX", "CSV", "TSV"
    header_rows: int = 0  # leading rows the format itself marks as header (Markdown: above the |---| line)
    context: list[str] = field(default_factory=list)  # headings / text before the table, nearest first
    caption: str | None = None  # a caption given with the table (LaTeX \caption, "Table 2: ..." after it)
    row_lines: list[int] = field(default_factory=list)
    spans_explicit: bool = False  # LaTeX writes spans out (\multicolumn); Markdown / CSV leave empty cells

    def line_of(self, index: int) -> int:
        return self.row_lines[index] if index < len(self.row_lines) else self.line + index


def csv_grids(text: str, delimiter: str) -> list[Grid]:
    """A CSV / TSV file: one grid (a second header line inside it starts another table later on)."""
    rows, lines = [], []
    for number, row in enumerate(csv.reader(text.splitlines(), delimiter=delimiter), start=1):
        if any(cell.strip() for cell in row):
            rows.append(row)
            lines.append(number)
    if not rows:
        return []
    return [Grid(rows, lines[0], "TSV" if delimiter == "\t" else "CSV", 1, row_lines=lines)]


def find_grids(path: Path, text: str) -> list[Grid]:
    """Every table in the file, in file order: LaTeX tabulars and Markdown tables wherever they are (a README may
    hold both); a .csv / .tsv file, or a file with neither, read as comma- or tab-separated."""
    from .published_latex import latex_grids
    from .published_markdown import markdown_grids

    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return csv_grids(text, "\t" if suffix == ".tsv" else ",")
    grids = latex_grids(text) + markdown_grids(text)
    if grids:
        return sorted(grids, key=lambda g: g.line)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "\t" in first:
        return csv_grids(text, "\t")
    if "," in first:
        return csv_grids(text, ",")
    return []
