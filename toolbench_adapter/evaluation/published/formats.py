"""Which grids a file holds: the format of each table decided here, so the readers of each format
(markdown.py, latex.py, CSV / TSV below) import only the Grid they build, never each other."""

from __future__ import annotations

import csv
from pathlib import Path

from toolbench_adapter.evaluation.published.grids import Grid
from toolbench_adapter.evaluation.published.latex import latex_grids
from toolbench_adapter.evaluation.published.markdown import markdown_grids


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
