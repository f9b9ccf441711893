"""DESIGN.md stays true: every path it names exists, and README.md links it (issue 23 item 5: the map lives in the
project and is kept true as the code changes). README.md stays a front door (issue 44): short, the two commands
first, one click to every page of docs/, and every page in the site's nav (mkdocs.yml).

Checked: (1) the paths in its text (outside code blocks, backticked or not) that start with a top folder of the
project (runners/, toolbench_adapter/, benchmarks/, data/, tests/), each as written from the root; (2) the
module paths it gives relative to a package (`execution/runner.py`, `parsers/base.py`): some file of the
project ends with that path; (3) the layer tree (the code block that opens with `Makefile`), read by
docs_build/design_map.py: each row's names under the folder the row sits in, and the `name.py` / `name/` its
description mentions, under that row's folder, a folder above it, or a package root."""

from __future__ import annotations

import re
from pathlib import Path

from docs_build.design_map import DESIGN, FENCE, PATH, PROJECT_ROOT, placeholder, tree_names

TOP_FOLDERS = ("runners/", "toolbench_adapter/", "benchmarks/", "data/", "tests/")


def project_files() -> list[str]:
    return [p.relative_to(PROJECT_ROOT).as_posix() for top in TOP_FOLDERS for p in (PROJECT_ROOT / top).rglob("*.py")]


def prose_paths() -> list[str]:
    """The paths of DESIGN.md's text (code blocks left out): from the root, or module paths such as
    ``execution/runner.py``."""
    prose = FENCE.sub("", DESIGN.read_text(encoding="utf-8"))
    found = dict.fromkeys(p for p in PATH.findall(prose) if not placeholder(p))
    return [p for p in found if p.startswith(TOP_FOLDERS) or (p.endswith(".py") and "/" in p)]


def tree_entries() -> list[tuple[str, str, list[Path]]]:
    """(the row as written, the name, where it may be) for every name of the layer tree (docs_build/design_map.py
    reads it: the site links the same names)."""
    return [(n.row, n.name, list(n.where)) for n in tree_names(DESIGN.read_text(encoding="utf-8"))]


def test_every_path_in_the_text_exists():
    files = project_files()
    missing = []
    for path in prose_paths():
        if path.startswith(TOP_FOLDERS):
            if not (PROJECT_ROOT / path).exists():
                missing.append(path)
        elif not any(f == path or f.endswith("/" + path) for f in files):
            missing.append(path)
    assert missing == [], f"DESIGN.md names paths that do not exist: {missing}"


def test_every_entry_of_the_layer_tree_exists():
    missing = [f"{name} (row: {row[:60]!r})" for row, name, where in tree_entries()
               if not any(p.exists() for p in where)]
    assert missing == [], "DESIGN.md's layer tree names what does not exist:\n" + "\n".join(missing)


def test_the_checks_read_what_the_page_holds():
    """A change of the page's layout that the parsing above no longer follows would pass unchecked: it must
    still find the tree's rows and the text's paths."""
    names = {name for _, name, _ in tree_entries()}
    assert {"Makefile", "runners/", "cli/", "execution/", "failures.py", "toolbench_adapter/", "evaluation/",
            "naming.py", "net/", "audit/", "scoring/", "data/published/", "tests/", "runner.py", "main.py",
            "rejudge.py", "docs_build/", "hooks.py"} <= names
    paths = prose_paths()
    assert "toolbench_adapter/runs/folder.py" in paths and "execution/runner.py" in paths
    assert not any(placeholder(p) for p in paths)


def test_readme_links_the_design_page():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\]\((\./)?DESIGN\.md(#[\w-]*)?\)", readme), "README.md has no link to DESIGN.md"


README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def docs_pages() -> list[str]:
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: the front door keeps at most 250 (the rest: docs/)"
    opening = "\n".join(lines[:60])
    for command in ("make eval", "make test"):
        assert command in opening, f"README.md's first 60 lines do not give `{command}`"


def test_readme_reaches_every_docs_page_in_one_click():
    links = {target.split("#")[0] for target in LINK.findall(README.read_text(encoding="utf-8"))}
    pages = docs_pages()
    assert len(pages) >= 8
    broken = [t for t in links if t.startswith("docs/") and not (PROJECT_ROOT / t).exists()]
    assert broken == [], f"README.md links pages that do not exist: {broken}"
    unlinked = [page for page in pages if f"docs/{page}" not in links]
    assert unlinked == [], f"README.md does not link these docs pages: {unlinked}"


def test_every_docs_page_is_in_the_site_nav():
    import yaml

    def listed(nav) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        items = nav.values() if isinstance(nav, dict) else nav
        return [page for item in items for page in listed(item)]

    nav = listed(yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    assert [p for p in docs_pages() if p not in nav] == [], "docs pages missing from mkdocs.yml's nav"
    from docs_build.hooks import GENERATED_PAGES  # the build makes these: the home page and the references

    assert [p for p in nav if not (DOCS / p).exists() and p not in GENERATED_PAGES] == [], \
        "mkdocs.yml's nav names pages that do not exist"
    assert [p for p in GENERATED_PAGES if (DOCS / p).exists()] == [], "a file in docs/ would hide a generated page"
