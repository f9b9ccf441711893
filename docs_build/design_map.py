"""DESIGN.md's map read as data: the paths its text names and the names of its layer tree, each with where it
may be in the project. tests/test_docs.py checks that each exists; the site's architecture page links each to
its module page (hooks.py), so the map reaches any module in one click.

The layer tree is the code block that opens with `Makefile`: each row's names (`cli/`, `failures.py`,
`naming.py, compat.py`: a module or a package) sit under the folder the row sits in (a row indented two more than
a folder's row sits in that folder), and the `name.py` / `name/` its description mentions under
that row's folder, a folder above it, or a package root. Placeholders (NAME, `<judge-id>`, `{group}`) and globs
(`published*.py`) are not paths and are left out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DESIGN = PROJECT_ROOT / "DESIGN.md"
PACKAGES = (PROJECT_ROOT / "runners", PROJECT_ROOT / "toolbench_adapter")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
# a relative path ending in .py or /, not part of a longer one, a placeholder (<id>, {group}) or a glob (*)
PATH = re.compile(r"(?<![\w./<>{*-])(\w[\w.-]*(?:/[\w.-]+)*(?:\.py|/))(?![\w<>{*])")
# a tree row: its indent and its names (`cli/`, `naming, queries`, `compat, registry,`), then the description
TREE_ROW = re.compile(r"^( *)([\w.]+/?(?:[\w.]+/)*(?:, [\w.]+/?)*,?)(?=\s|$)")


@dataclass(frozen=True)
class TreeName:
    line: int  # the line of the tree block it is on (0-based)
    row: str  # that line, stripped
    name: str  # as written: `cli/`, `failures.py`, `naming`
    where: tuple[Path, ...]  # where it may be, the first existing one is it

    def found(self) -> Path | None:
        return next((p for p in self.where if p.exists()), None)


def placeholder(path: str) -> bool:
    return "NAME" in path or any(c in path for c in "*{}<>…")


def tree_block(text: str) -> str:
    return next(block for block in FENCE.findall(text) if block.startswith("Makefile"))


def tree_names(text: str, root: Path = PROJECT_ROOT) -> list[TreeName]:
    """Every name of the layer tree in DESIGN.md's text, with where it may be under root."""
    packages = tuple(root / p.relative_to(PROJECT_ROOT) for p in PACKAGES)
    entries: list[TreeName] = []
    folders: dict[int, Path] = {}  # indent -> the folder a row at that indent opened (rows below it sit inside)
    row_dir = root  # the folder of the row being read (its description's paths are relative to it)
    for number, line in enumerate(tree_block(text).splitlines()):
        row = TREE_ROW.match(line)
        indent = len(line) - len(line.lstrip())
        description = line
        if row and indent % 2 == 0 and (indent == 0 or indent - 2 in folders):
            base = root if indent == 0 else folders[indent - 2]
            names = row.group(2).rstrip(",").split(", ")
            for name in names:
                folder_or_file = name.endswith("/") or "." in name or name == "Makefile"
                where = (base / name,) if folder_or_file else (base / f"{name}.py", base / name)
                entries.append(TreeName(number, line.strip(), name, where))
            first = base / names[0]
            for deeper in [i for i in folders if i >= indent]:
                del folders[deeper]
            if names[0].endswith("/"):
                folders[indent] = first
            row_dir = first if names[0].endswith("/") else base
            description = line[row.end():]
        for name in PATH.findall(description):
            if not placeholder(name):
                where = tuple(folder / name for folder in (row_dir, *row_dir.parents, *packages)
                              if folder.is_relative_to(root))
                entries.append(TreeName(number, line.strip(), name, where))
    return entries
