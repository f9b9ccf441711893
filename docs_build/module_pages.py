"""A page per module of the project (its path, its package, its source), a page per package (its modules, each
with its docstring's first line), and the index of every module on the architecture page: so DESIGN's map and the
index reach any module in one click. Generated at every build from the files themselves."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# what gets pages: the code (and the tests, which DESIGN's map names), and the build files the map names
SOURCE_FOLDERS = ("toolbench_adapter", "runners", "benchmarks", "examples", "docs_build", "tests")
INDEXED_FOLDERS = ("toolbench_adapter", "runners", "benchmarks", "examples", "docs_build")  # the architecture page's index
OTHER_FILES = ("Makefile", ".importlinter", "setup.cfg", "mkdocs.yml")
PREFIX = "modules"
NOT_IN_SEARCH = "---\nsearch:\n  exclude: true\n---\n\n"  # Material's search: the source would drown the pages


@dataclass(frozen=True)
class Module:
    path: str  # from the project's root: toolbench_adapter/net/transport.py
    summary: str  # the docstring's first sentence (or line), "" without one

    @property
    def page(self) -> str:
        return page_of(self.path, folder=False)


def page_of(path: str, folder: bool) -> str:
    """The docs page (src path) of a project file or folder."""
    path = path.rstrip("/")
    return f"{PREFIX}/{path}/index.md" if folder else f"{PREFIX}/{path}.md"


def summary(source: str) -> str:
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except (SyntaxError, ValueError):
        return ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    return first.split(". ", 1)[0].rstrip(".") if ". " in first else first.rstrip(".")


def modules(root: Path) -> list[Module]:
    found = []
    for top in SOURCE_FOLDERS:
        for path in sorted((root / top).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            found.append(Module(path.relative_to(root).as_posix(),
                                summary(path.read_text(encoding="utf-8", errors="replace"))))
    return found


def fenced(text: str, language: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def cell(text: str) -> str:
    return text.replace("|", "&#124;").replace("<", "&lt;").replace("*", "\\*").replace("_", "\\_")


def link(from_page: str, to_page: str) -> str:
    """A relative link between two docs pages (src paths)."""
    import posixpath
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


def pages(root: Path) -> dict[str, str]:
    """Every generated page: src path -> markdown."""
    found = modules(root)
    out: dict[str, str] = {}
    folders: dict[str, list[Module]] = {}
    for module in found:
        folders.setdefault(str(Path(module.path).parent.as_posix()), []).append(module)
        folder = Path(module.path).parent.as_posix()
        source = (root / module.path).read_text(encoding="utf-8", errors="replace")
        up = link(module.page, page_of(folder, folder=True))
        lines = len(source.splitlines())
        out[module.page] = (f"{NOT_IN_SEARCH}# {module.path}\n\nIn [{folder}/]({up}) · {lines} lines"
                            f"{' · ' + cell(module.summary) if module.summary else ''}\n\n"
                            f"{fenced(source, 'python')}\n")
    # a page for every folder on the way to a module, listing its modules and subfolders
    all_folders = set(folders)
    for folder in list(folders):
        parts = folder.split("/")
        all_folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for folder in sorted(all_folders):
        page = page_of(folder, folder=True)
        subfolders = sorted(f for f in all_folders if f.rsplit("/", 1)[0] == folder and "/" in f)
        body = [f"{NOT_IN_SEARCH}# {folder}/", ""]
        if "/" in folder:
            parent = folder.rsplit("/", 1)[0]
            body += [f"In [{parent}/]({link(page, page_of(parent, folder=True))})", ""]
        if subfolders:
            body += ["Folders: " + ", ".join(f"[{f.rsplit('/', 1)[1]}/]({link(page, page_of(f, folder=True))})"
                                             for f in subfolders), ""]
        if folders.get(folder):
            body += ["| module | what it is (its docstring) |", "|---|---|"]
            body += [f"| [{Path(m.path).name}]({link(page, m.page)}) | {cell(m.summary)} |" for m in folders[folder]]
        out[page] = "\n".join(body) + "\n"
    for name in OTHER_FILES:
        if (root / name).is_file():
            text = (root / name).read_text(encoding="utf-8", errors="replace")
            language = {"mkdocs.yml": "yaml", "setup.cfg": "ini", ".importlinter": "ini"}.get(name, "makefile")
            out[page_of(name, folder=False)] = f"{NOT_IN_SEARCH}# {name}\n\n{fenced(text, language)}\n"
    return out


def index(root: Path, from_page: str) -> str:
    """Every module of the indexed folders, by folder, each linked to its page with its docstring's first line."""
    lines = []
    current = None
    for module in modules(root):
        if not module.path.startswith(tuple(f + "/" for f in INDEXED_FOLDERS)):
            continue
        folder = Path(module.path).parent.as_posix()
        if folder != current:
            current = folder
            lines += ["", f"**[{folder}/]({link(from_page, page_of(folder, folder=True))})**", ""]
        text = f": {cell(module.summary)}" if module.summary else ""
        lines.append(f"- [{Path(module.path).name}]({link(from_page, module.page)}){text}")
    return "\n".join(lines).strip() + "\n"
