"""LaTeX tables: every ``tabular`` (``tabular*``, ``tabularx``, ``longtable``) in a file, as a grid of raw cells.

Rows end at ``\\\\``; cells split at ``&`` (not ``\\&``, not inside braces); rules (``\\hline``, ``\\toprule``,
``\\midrule``, ``\\cmidrule(lr){2-4}``...) and comments are dropped; ``\\multicolumn{3}{c}{I1}`` stands in each
column it spans, so a spanning header reads with the one below it. The ``\\caption`` of the surrounding
``table`` environment and the text above the tabular are its context.
"""

from __future__ import annotations

import re

from toolbench_adapter.evaluation.published.grids import Grid

BEGIN_RE = re.compile(r"\\begin\{(tabular\*?|tabularx|tabulary|longtable|tabu)\}")
ARGUMENTS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1, "tabu": 1}
RULES_RE = re.compile(
    r"\\(?:hline|toprule|midrule|bottomrule|hdashline|endhead|endfirsthead|endfoot|endlastfoot|morecmidrules)\b"
    r"(?:\[[^\]]*\])?"
    r"|\\(?:cmidrule|cline|cdashline)(?:\([^)]*\))?\{[^{}]*\}"
    r"|\\(?:addlinespace|vspace\*?)(?:\[[^\]]*\]|\{[^{}]*\})?"
    r"|\\specialrule\{[^{}]*\}\{[^{}]*\}\{[^{}]*\}"
    r"|\\(?:rowcolor|arrayrulecolor)(?:\[[^\]]*\])?\{[^{}]*\}"
    r"|\\noalign\{[^{}]*\}")
MULTICOLUMN_RE = re.compile(r"^\s*\\multicolumn\{(\d+)\}")


def strip_comments(text: str) -> str:
    """Drop ``%`` comments (not ``\\%``), keeping the lines so line numbers stay right."""
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in text.split("\n"))


def _group_end(text: str, start: int) -> int:
    """Index after the brace group opening at ``start`` (``text[start] == "{"``)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _skip_arguments(text: str, pos: int, count: int) -> int:
    while True:
        while pos < len(text) and text[pos] in " \t\n":
            pos += 1
        if pos < len(text) and text[pos] == "[":
            pos = text.find("]", pos) + 1 or len(text)
        elif pos < len(text) and text[pos] == "{" and count > 0:
            pos = _group_end(text, pos)
            count -= 1
        else:
            return pos


def _split_top(text: str, separator: str) -> list[tuple[int, str]]:
    """Pieces of ``text`` between top-level separators (not escaped, not in braces), with their offsets."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if depth == 0 and text.startswith(separator, i):
            pieces.append((start, text[start:i]))
            i += len(separator)
            start = i
            continue
        char = text[i]
        if char == "\\":  # \& \{ \} and commands: the next character is not structure
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        i += 1
    pieces.append((start, text[start:]))
    return pieces


def _row_cells(chunk: str) -> list[str]:
    cells = []
    for _, cell in _split_top(chunk, "&"):
        span = MULTICOLUMN_RE.match(cell)
        cells.extend([cell.strip()] * (int(span.group(1)) if span else 1))
    return cells


def _caption(text: str, begin: int, end: int) -> str | None:
    """The \\caption of the table environment around [begin, end)."""
    env_start = text.rfind("\\begin{table", 0, begin)
    env_end = text.find("\\end{table", end)
    if env_start < 0 or env_end < 0 or "\\end{table" in text[env_start:begin]:
        return None
    where = text.find("\\caption", env_start, env_end)
    if where < 0:
        return None
    brace = text.find("{", where)
    return text[brace + 1:_group_end(text, brace) - 1].strip() if brace >= 0 else None


def latex_grids(text: str) -> list[Grid]:
    text = strip_comments(text)
    grids: list[Grid] = []
    previous_end = 0
    for match in BEGIN_RE.finditer(text):
        if match.start() < previous_end:
            continue  # a tabular nested in a cell of another
        env = match.group(1)
        body_start = _skip_arguments(text, match.end(), ARGUMENTS[env])
        end = text.find(f"\\end{{{env}}}", body_start)
        end = len(text) if end < 0 else end
        rows, lines = [], []
        for offset, chunk in _split_top(text[body_start:end], "\\\\"):
            chunk = re.sub(r"^\s*\[[^\]]*\]", "", chunk)  # the [2pt] of "\\[2pt]"
            chunk = RULES_RE.sub(" ", chunk).replace("\\tabularnewline", "")
            if not chunk.strip():
                continue
            rows.append(_row_cells(chunk))
            lead = len(chunk) - len(chunk.lstrip())
            lines.append(text.count("\n", 0, body_start + offset) + 1 + chunk[:lead].count("\n"))
        if rows:
            before = text[previous_end:match.start()].splitlines()
            context = [line.strip() for line in reversed(before) if line.strip()]
            grids.append(Grid(rows, lines[0], "LaTeX", 0, context, _caption(text, match.start(), end), lines,
                              spans_explicit=True))
        previous_end = end
    return grids
