"""`tba data fetch` refreshes a query folder: every download is checked (JSON, the pinned commit's SHA-256)
before any file is replaced; files already there stay unless --overwrite. Against a loopback server."""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from functools import partial
from pathlib import Path

import pytest

from runners.cli import main
from toolbench_adapter.protocol.query_files import QUERY_FILE_SHA256
from toolbench_adapter.queryset.queries import PROJECT_DATA

SHIPPED = PROJECT_DATA / "stabletoolbench"
INSTRUCTION = "solvable_queries/test_instruction/G3_instruction.json"
IDS = "solvable_queries/test_query_ids/G3_instruction.json"


@pytest.fixture
def served(tmp_path):
    """A copy of the shipped query files, served over HTTP on 127.0.0.1: (its folder, its base URL)."""
    root = tmp_path / "upstream"
    shutil.copytree(SHIPPED / "solvable_queries", root / "solvable_queries")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fetch(capsys, base, out, *extra):
    code = main(["data", "fetch", "--out", str(out), "--base-url", base, "--groups", "G3_instruction", *extra])
    out_text, err = capsys.readouterr()
    return code, out_text, err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_shipped_files_are_the_pinned_commits():
    for rel, expected in QUERY_FILE_SHA256.items():
        assert digest(SHIPPED / rel) == expected, rel


def test_a_stale_folder_is_kept_without_overwrite_and_refreshed_with_it(capsys, tmp_path, served):
    _, base = served
    out = tmp_path / "data"
    (out / INSTRUCTION).parent.mkdir(parents=True)
    (out / INSTRUCTION).write_text("[]")  # an older or edited copy
    code, text, _ = fetch(capsys, base, out)
    assert code == 0 and "wrote 1 file(s)" in text and "kept 1 already there (--overwrite replaces them)" in text
    assert "1 of 2 are StableToolBench @ aa4ed9f's files" in text
    assert (out / INSTRUCTION).read_text() == "[]"
    code, text, _ = fetch(capsys, base, out, "--overwrite")
    assert code == 0 and "wrote 2 file(s)" in text and "2 of 2 are StableToolBench" in text
    assert digest(out / INSTRUCTION) == QUERY_FILE_SHA256[INSTRUCTION]


def test_files_that_are_not_the_pinned_commits_replace_nothing(capsys, tmp_path, served):
    root, base = served
    out = tmp_path / "data"
    (out / INSTRUCTION).parent.mkdir(parents=True)
    (out / INSTRUCTION).write_text("[]")
    # the instruction file (fetched first) is upstream's, the ids file changed (still JSON): refused before any write
    (root / IDS).write_text((SHIPPED / IDS).read_text().replace("}", ', "1": 0}'))
    code, _, err = fetch(capsys, base, out, "--overwrite")
    assert code == 2 and "not StableToolBench @ aa4ed9f's" in err and "nothing was written" in err
    assert "--any-commit" in err
    assert (out / INSTRUCTION).read_text() == "[]" and not (out / IDS).exists()
    code, text, _ = fetch(capsys, base, out, "--overwrite", "--any-commit")
    assert code == 0 and "wrote 2 file(s)" in text and "1 of 2 are StableToolBench" in text
    assert (out / IDS).read_text() == (root / IDS).read_text()


def test_a_download_that_is_not_json_replaces_nothing(capsys, tmp_path, served):
    root, base = served
    out = tmp_path / "data"
    (out / INSTRUCTION).parent.mkdir(parents=True)
    (out / INSTRUCTION).write_text("[]")
    (root / IDS).write_text("<html>rate limited</html>")  # fetched after the (good) instruction file
    code, _, err = fetch(capsys, base, out, "--overwrite", "--any-commit")
    assert code == 2 and "did not return JSON" in err and "nothing was written" in err
    assert (out / INSTRUCTION).read_text() == "[]" and not (out / IDS).exists()
