"""The docs site (issue 44 item 2): `mkdocs build --strict` builds it offline from docs/ and from pages generated out
of the code (docs_build/): the home page is README.md, the `tba` reference names every command and flag the
argparse parsers define, the make reference every target and variable of `make help`, and the architecture page
links DESIGN's map and every module to the module's page. No page asks a browser for anything outside the site.
The README's picture is headless Chromium's first screen of a report page (docs_build/screenshot.py)."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from docs_build import cli_reference, design_map, make_reference, module_pages
from tests.test_report_chromium import chromium  # noqa: F401 (a fixture)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).with_name("mkdocs")
# what a page would make a browser fetch: stylesheets, scripts, images, frames, fonts (not plain <a> links)
FETCHED = re.compile(r"<(?:link|script|img|iframe|source)\b[^>]*\b(?:href|src)=\"((?:https?:)?//[^\"]+)\"", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not MKDOCS.exists():
        pytest.skip(f"mkdocs is not installed beside {sys.executable}: pip install -e '.[docs]' (make install does)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--quiet", "-d", str(out)], cwd=PROJECT_ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return out


def test_the_site_has_its_home_page_and_every_docs_page(site):
    assert (site / "index.html").is_file()
    pages = sorted(p.relative_to(PROJECT_ROOT / "docs").with_suffix(".html")
                   for p in (PROJECT_ROOT / "docs").rglob("*.md"))
    assert len(pages) >= 8
    assert [p for p in pages if not (site / p).is_file()] == []
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "make eval" in home and 'src="report-first-screen.png"' in home  # README.md, its links made the site's
    assert (site / "report-first-screen.png").is_file()


def test_no_page_asks_for_anything_outside_the_site(site):
    fetched = {(p.relative_to(site).as_posix(), url) for p in site.rglob("*.html")
               for url in FETCHED.findall(p.read_text(encoding="utf-8"))}
    assert fetched == set(), f"pages that fetch from outside the site: {sorted(fetched)[:10]}"
    assert not any("fonts.googleapis" in p.read_text(encoding="utf-8", errors="replace")
                   for p in site.rglob("*.css")), "a stylesheet loads Google's fonts"


def test_the_cli_reference_names_every_command_and_flag(site):
    from runners.cli.main import build_parser

    page = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    found = list(cli_reference.commands(build_parser()))
    assert len(found) >= 25 and ("run",) in [words for words, _, _ in found]
    for words, _, parser in found:
        section = page.split(f'id="{cli_reference.anchor(words)}"', 1)
        assert len(section) == 2, f"no section for tba {' '.join(words)}"
        text = section[1].split("<h2", 1)[0]
        missing = [flag for flag in cli_reference.flags(parser) if flag not in text]
        assert missing == [], f"tba {' '.join(words)}: flags not in its section: {missing}"


def test_the_cli_reference_follows_the_parsers():
    """A flag added to a command is in the generated page, with no hand edit."""
    import argparse

    parser = argparse.ArgumentParser(prog="tba")
    sub = parser.add_subparsers()
    run = sub.add_parser("run", help="a run")
    run.add_argument("--brand-new-flag", help="added today")
    found = list(cli_reference.commands(parser))
    assert [(w, s) for w, s, _ in found] == [(("run",), "a run")]
    assert cli_reference.flags(found[0][2]) == ["--brand-new-flag"]


def test_the_make_reference_names_every_target_and_variable(site):
    page = (site / "reference" / "make.html").read_text(encoding="utf-8")
    help_text = make_reference.make_help(PROJECT_ROOT)
    targets = re.findall(r"^  ([a-z0-9-]+)\s", help_text.split("Variables", 1)[0], re.M)
    variables = re.findall(r"^  ([A-Z][A-Z0-9_]*)=", help_text, re.M)
    assert {"eval", "test", "docs", "screenshot"} <= set(targets) and {"BACKEND", "CONSTRAIN"} <= set(variables)
    assert [t for t in targets if f"make {t}</code>" not in page] == []
    assert [v for v in variables if f"<code>{v}</code>" not in page] == []
    # a variable's description is the Makefile's comment above it
    assert "every part can be overridden" in make_reference.comments((PROJECT_ROOT / "Makefile").read_text())["BACKEND"]


def test_the_architecture_page_links_the_map_and_every_module(site):
    page = (site / "architecture.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'href="(modules/[^"#]+)"', page)
    assert [h for h in hrefs if not (site / h).is_file()] == [], "links to module pages that were not built"
    linked = set(hrefs)
    design = design_map.DESIGN.read_text(encoding="utf-8")
    # the map's names of modules and of folders holding modules (data/ and results/ hold none)
    names = [n for n in design_map.tree_names(design)
             if (found := n.found()) is not None and (found.suffix == ".py" or any(found.rglob("*.py")))]
    assert len(names) > 100
    map_html = page.split('class="design-map"', 1)[1].split("</pre>", 1)[0]
    unlinked = [n.name for n in names if f">{n.name}</a>" not in map_html]
    assert unlinked == [], f"names of DESIGN's map with no link: {unlinked[:20]}"
    modules = [m for m in module_pages.modules(PROJECT_ROOT)
               if m.path.startswith(tuple(f + "/" for f in module_pages.INDEXED_FOLDERS))]
    unreached = [m.path for m in modules if m.page.removesuffix(".md") + ".html" not in linked]
    assert unreached == [], f"modules the architecture page does not link: {unreached[:20]}"


def test_the_build_is_strict_and_checks_links_and_anchors():
    config = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True
    assert all(config["validation"][k] == "warn" for k in ("not_found", "anchors", "omitted_files"))
    assert config["theme"]["font"] is False  # Material would fetch Google's fonts
    assert "--strict" in (PROJECT_ROOT / "Makefile").read_text()


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_the_readme_shows_the_screenshot():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/report-first-screen.png)" in "\n".join(readme.splitlines()[:40])
    assert png_size(PROJECT_ROOT / "docs" / "report-first-screen.png") == (1400, 900)


def test_the_screenshot_is_chromiums_first_screen_of_the_page(chromium, tmp_path):  # noqa: F811
    page = tmp_path / "report.html"
    page.write_text("<!doctype html><title>r</title><body style='margin:0;background:#c00'>"
                    "<script>document.body.append('drawn by its script')</script></body>", encoding="utf-8")
    out = tmp_path / "shot.png"
    done = subprocess.run([sys.executable, "docs_build/screenshot.py", str(page), "--out", str(out),
                           "--width", "640", "--height", "400", "--chromium", chromium],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert png_size(out) == (640, 400) and "written:" in done.stdout


def test_the_screenshot_without_chromium_or_page_says_what_to_do(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("<p>x</p>", encoding="utf-8")
    missing = subprocess.run([sys.executable, "docs_build/screenshot.py", str(page), "--out", str(tmp_path / "s.png"),
                              "--chromium", str(tmp_path / "no-chromium")], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "apt-get install chromium" in missing.stderr
    no_page = subprocess.run([sys.executable, "docs_build/screenshot.py", str(tmp_path / "none.html"), "--out",
                              str(tmp_path / "s.png")], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert no_page.returncode == 2 and "make report" in no_page.stderr
    assert not (tmp_path / "s.png").exists()


def test_site_is_ignored_by_git():
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    done = subprocess.run(["git", "check-ignore", "-q", "site/index.html"], cwd=PROJECT_ROOT)
    assert done.returncode == 0, "site/ is not git-ignored"
