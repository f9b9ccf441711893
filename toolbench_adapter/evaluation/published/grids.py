"""The tables in a file, as grids of printed cell texts with the text around them (for the metric).

Markdown (markdown.py), LaTeX ``tabular`` (latex.py) and CSV / TSV (formats.py)
give the same ``Grid``: rows of raw cells, how many leading rows the format marks as header, the heading / caption lines
nearest first, and the line each row starts on (for messages).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # the context is the one above the table before this one: nothing but blank lines stands between the two (a
    # list item above two tables names the metric of both)
    context_shared: bool = False

    def line_of(self, index: int) -> int:
        return self.row_lines[index] if index < len(self.row_lines) else self.line + index
