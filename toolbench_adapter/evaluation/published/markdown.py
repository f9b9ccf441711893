"""Markdown tables in a file (a README, a paper's appendix pasted as text), with the lines above each one.

A table is a header line, a ``|---|---|`` line and the ``|`` lines after it (leading and trailing pipes
optional); lines of ``|`` cells without a separator line count too. ``\\|`` and pipes inside code spans are not
cell breaks. The heading or bold line just above a table (``**Win Rate:**``, ``### Pass rate``) is its context;
a ``Table 3: ...`` line right below it is its caption.
"""

from __future__ import annotations

import re
import sys

from toolbench_adapter.evaluation.published.grids import Grid

SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
CAPTION_RE = re.compile(r"^[\s*_>]*(table|tab\.)\s*\d+", re.I)


def split_cells(line: str) -> list[str]:
    text = line.strip()
    if "`" not in text and "\\|" not in text:  # no code span, no escaped pipe: every | is a break
        cells = text.split("|")
        if text.startswith("|"):
            cells = cells[1:]
        if text.endswith("|") and cells:
            cells = cells[:-1]
        return [sys.intern(c.strip()) for c in cells]  # a large table repeats its cells: kept once
    return split_cells_carefully(text)


def split_cells_carefully(text: str) -> list[str]:
    """Character by character: pipes inside code spans and escaped ones are no breaks."""
    cells, current, in_code, i = [], [], False, 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    cells.append("".join(current))
    if text.startswith("|"):
        cells = cells[1:]
    if text.endswith("|") and not text.endswith("\\|") and cells:
        cells = cells[:-1]
    return [c.strip() for c in cells]


def _is_separator(line: str) -> bool:
    return "-" in line and bool(SEPARATOR_RE.match(line)) and ("|" in line or line.strip().startswith("-"))


def markdown_grids(text: str) -> list[Grid]:
    lines = text.splitlines()
    grids: list[Grid] = []
    previous_end = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        starts = i + 1 < len(lines) and "|" in line and _is_separator(lines[i + 1]) and "|" in lines[i + 1]
        piped = line.strip().startswith("|") and i + 1 < len(lines) and lines[i + 1].strip().startswith("|")
        if not (starts or piped) or _is_separator(line):
            i += 1
            continue
        rows, row_lines = [split_cells(line)], [i + 1]
        header_rows = 1 if starts else 0
        j = i + (2 if starts else 1)
        while j < len(lines) and "|" in lines[j] and lines[j].strip():
            if not _is_separator(lines[j]):
                rows.append(split_cells(lines[j]))
                row_lines.append(j + 1)
            j += 1
        context = [raw.strip() for raw in reversed(lines[previous_end:i]) if raw.strip()
                   and not raw.strip().startswith("```")]
        shared = not context and bool(grids) and not any(raw.strip() for raw in lines[previous_end:i])
        if shared:  # two tables under one sentence: the text above the first is the second's too
            context = grids[-1].context
        caption = None
        after = next((raw for raw in lines[j:j + 3] if raw.strip()), "")
        if CAPTION_RE.match(after):
            caption = after.strip()
        grids.append(Grid(rows, i + 1, "Markdown", header_rows, context, caption, row_lines, context_shared=shared))
        previous_end = j
        i = j
    return grids
