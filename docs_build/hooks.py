"""MkDocs hooks (mkdocs.yml `hooks:`): the pages the build generates from the project itself.

- index.md: README.md, its links turned into the site's (`docs/runs.md` -> `runs.md`, DESIGN.md -> the
  architecture page), so the front door and the site's home page are one text;
- reference/cli.md: every `tba` command and flag from the argparse parsers (cli_reference.py);
- reference/make.md: every make target and variable from `make help` (make_reference.py);
- modules/...: a page per module and per package (module_pages.py);
- architecture.md: DESIGN.md included where the page says `<!-- DESIGN.md -->`, its layer tree's names linked to
  their module pages (design_map.py), followed by the index of every module.

Links from a page to a project file (`../DESIGN.md`, `../runners/cli/main.py`) become links to the page that
shows it, so they work both on GitHub and in the site, and `--strict` checks them."""

from __future__ import annotations

import html
import posixpath
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the docs describe this checkout's code, whatever is installed
    sys.path.insert(0, str(ROOT))

from docs_build import cli_reference, design_map, make_reference, module_pages  # noqa: E402

DESIGN_MARKER = "<!-- DESIGN.md -->"
DESIGN_ANCHOR = "design"
ARCHITECTURE = "architecture.md"
# the nav's pages that no file of docs/ holds: on_files makes them (and the module pages, outside the nav)
GENERATED_PAGES = ("index.md", "reference/cli.md", "reference/make.md")
# a Markdown link's target: ](target) or ](target#anchor)
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _relative(from_page: str, to_page: str) -> str:
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


def _project_target(target: str, page: str, generated: set[str]) -> str | None:
    """The docs page showing a project file a page links to (relative to the page), or None: not such a link."""
    if "://" in target or target.startswith(("mailto:", "/")):
        return None
    resolved = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page), target))
    if resolved.startswith("docs/"):
        return None  # a page or asset of the site: MkDocs checks it
    if resolved == "DESIGN.md":
        return _relative(page, ARCHITECTURE) + f"#{DESIGN_ANCHOR}"
    shown = module_pages.page_of(resolved, folder=(ROOT / resolved).is_dir())
    return _relative(page, shown) if shown in generated else None


def site_links(markdown: str, page: str, generated: set[str]) -> str:
    def replace(match: re.Match) -> str:
        target = _project_target(match.group(1), page, generated)
        if target is None:
            return match.group(0)
        anchor = match.group(2) or ""
        return f"]({target}{anchor if '#' not in target else ''})"
    return LINK.sub(replace, markdown)


def readme_as_index(readme: str) -> str:
    """README.md's text as the site's home page: its links are relative to the root, the page's to docs/."""
    def replace(match: re.Match) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target or target.startswith(("mailto:", "#")):
            return match.group(0)
        if target.startswith("docs/"):
            return f"]({target.removeprefix('docs/')}{anchor})"
        return f"](../{target}{anchor})"  # a project file: site_links shows it
    return LINK.sub(replace, readme)


def linked_tree(design: str, page, files) -> str:
    """DESIGN.md's layer tree as a <pre> block whose names link to their module and package pages (raw HTML:
    its links are URLs, which MkDocs does not rewrite, so each is the target page's URL relative to this one)."""
    from mkdocs.utils import get_relative_url

    block = design_map.tree_block(design)
    hrefs: dict[tuple[int, str], str] = {}
    for entry in design_map.tree_names(design, ROOT):
        found = entry.found()
        if found is None:
            continue
        relative = found.relative_to(ROOT).as_posix()
        shown = files.get_file_from_path(module_pages.page_of(relative, folder=found.is_dir()))
        if shown is not None:
            hrefs[(entry.line, entry.name)] = get_relative_url(shown.url, page.url)
    out = []
    for number, line in enumerate(block.splitlines()):
        spans: list[tuple[int, int, str]] = []
        row = design_map.TREE_ROW.match(line)
        if row:
            start = row.start(2)
            for name in row.group(2).rstrip(",").split(", "):
                at = line.index(name, start)
                spans.append((at, at + len(name), name))
                start = at + len(name)
        for match in design_map.PATH.finditer(line):
            if not any(a <= match.start(1) < b for a, b, _ in spans):
                spans.append((match.start(1), match.end(1), match.group(1)))
        pieces, at = [], 0
        for start, end, name in sorted(spans):
            href = hrefs.get((number, name))
            if href is None:
                continue
            pieces += [html.escape(line[at:start]), f'<a href="{html.escape(href)}">{html.escape(name)}</a>']
            at = end
        pieces.append(html.escape(line[at:]))
        out.append("".join(pieces))
    return '<pre class="design-map"><code>' + "\n".join(out) + "</code></pre>"


def design_section(page, files) -> str:
    design = design_map.DESIGN.read_text(encoding="utf-8")
    tree = design_map.tree_block(design)
    body = design.replace(f"```\n{tree}```", "\n" + linked_tree(design, page, files) + "\n", 1)
    body = re.sub(r"^(#+) ", r"#\1 ", body, flags=re.M)  # under the page's own title
    first, rest = body.split("\n", 1)
    return f"{first} {{#{DESIGN_ANCHOR}}}\n{rest}\n\n## Every module\n\n" \
           f"Each module of the code, by folder, with its docstring's first line.\n\n" \
           f"{module_pages.index(ROOT, page.file.src_uri)}"


# ---- the hooks ------------------------------------------------------------------------------------------------

_generated: set[str] = set()


def on_files(files, config):
    from mkdocs.structure.files import File

    home, cli, make = GENERATED_PAGES
    pages = {
        home: readme_as_index((ROOT / "README.md").read_text(encoding="utf-8")),
        cli: cli_reference.markdown(),
        make: make_reference.markdown(ROOT),
        **module_pages.pages(ROOT),
    }
    _generated.clear()
    _generated.update(pages)
    for src, content in pages.items():
        if files.get_file_from_path(src) is not None:
            raise ValueError(f"docs/{src} would hide the page the build generates: remove the file")
        files.append(File.generated(config, src, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri
    if src == ARCHITECTURE:
        if DESIGN_MARKER not in markdown:
            raise ValueError(f"docs/{ARCHITECTURE} lost its {DESIGN_MARKER} line: DESIGN.md goes there")
        markdown = markdown.replace(DESIGN_MARKER, design_section(page, files))
    return site_links(markdown, src, _generated)
