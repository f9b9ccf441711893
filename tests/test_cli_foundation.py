"""`tba queries / functions / prompt / data fetch`: output and bad input (exit 2, file named, nothing written)."""

import http.server
import json
import shutil
import threading
from functools import partial

import pytest

from runners.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_queries_counts(capsys, stb_root):
    code, out, _ = run_cli(capsys, "queries", "--stb-root", str(stb_root))
    assert code == 0
    assert "G1_instruction   163" in out and out.strip().endswith("765")


def test_queries_default_is_the_sample_set(capsys, monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    code, out, _ = run_cli(capsys, "queries")
    assert code == 0 and "data/sample" in out


def test_prompt_prints_exact_text(capsys, stb_root):
    code, out, _ = run_cli(capsys, "prompt", "--stb-root", str(stb_root), "--group", "G1_instruction",
                           "--query-id", "608", "--dialect", "toolllama")
    assert code == 0
    assert out.startswith("System: You are AutoGPT") and out.endswith("Begin!\n\nAssistant:\n")


@pytest.fixture()
def broken_root(tmp_path, stb_root):
    root = tmp_path / "stb"
    shutil.copytree(stb_root / "solvable_queries_example", root / "solvable_queries")
    return root


def test_missing_checkout(capsys, tmp_path):
    code, _, err = run_cli(capsys, "queries", "--stb-root", str(tmp_path / "nope"))
    assert code == 2 and "nope" in err and "checkout not found" in err
    # the fix names the shipped queries and the command that fetches them again
    assert "--stb-root data/stabletoolbench" in err and "tba data fetch" in err


def test_unknown_group(capsys, broken_root):
    code, _, err = run_cli(capsys, "functions", "--stb-root", str(broken_root), "--group", "G9_x", "--query-id", "1")
    assert code == 2 and "unknown group 'G9_x'" in err and "G1_instruction" in err


def test_query_id_not_in_group(capsys, broken_root):
    code, _, err = run_cli(capsys, "functions", "--stb-root", str(broken_root), "--group", "G1_instruction",
                           "--query-id", "42")
    assert code == 2 and "query id 42 is not an evaluated query of G1_instruction" in err
    assert "G1_instruction.json" in err


def test_malformed_query_file(capsys, broken_root):
    path = broken_root / "solvable_queries" / "test_instruction" / "G1_instruction.json"
    path.write_text('[{"query": "x", "query_id": 1, "api_list": [}')
    code, out, err = run_cli(capsys, "functions", "--stb-root", str(broken_root), "--group", "G1_instruction",
                             "--query-id", "588")
    assert code == 2 and str(path) in err and "not valid JSON" in err and out == ""


def test_query_missing_field(capsys, broken_root):
    path = broken_root / "solvable_queries" / "test_instruction" / "G1_instruction.json"
    data = json.loads(path.read_text())
    del data[1]["api_list"]
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "queries", "--stb-root", str(broken_root), "--group", "G1_instruction")
    assert code == 2 and "field '[1]'" in err and "api_list" in err


def test_tool_file_that_does_not_parse(capsys, broken_root, tmp_path):
    tools = tmp_path / "tools" / "Data"
    tools.mkdir(parents=True)
    bad = tools / "theclique.json"
    bad.write_text("{not json")
    code, out, err = run_cli(capsys, "prompt", "--stb-root", str(broken_root), "--group", "G1_instruction",
                             "--query-id", "588", "--tool-root", str(tmp_path / "tools"))
    assert code == 2 and str(bad) in err and "tool document is not valid JSON" in err and out == ""


def test_data_fetch_from_loopback(capsys, tmp_path, stb_root):
    """The fetch command against a loopback server serving a StableToolBench-shaped folder."""
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(stb_root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        out_dir = tmp_path / "fetched"
        code, out, _ = run_cli(capsys, "data", "fetch", "--out", str(out_dir), "--base-url", base,
                               "--groups", "G1_instruction", "G3_instruction")
        assert code == 0 and "wrote 4 file(s)" in out
        code, out, _ = run_cli(capsys, "queries", "--stb-root", str(out_dir))
        assert "G3_instruction    61" in out
        # a missing group: clear error, and the files already there stay
        code, _, err = run_cli(capsys, "data", "fetch", "--out", str(out_dir), "--base-url", base,
                               "--groups", "G7_nothing")
        assert code == 2 and "HTTP 404" in err
        assert not list(out_dir.rglob("G7_nothing*")) and not list(out_dir.rglob(".*.json.*"))
    finally:
        server.shutdown()


def test_an_unknown_registry_name_reads_in_the_singular_with_suggestions():
    from toolbench_adapter.parsers import PARSERS
    from toolbench_adapter.registry import UnknownNameError

    with pytest.raises(UnknownNameError) as unknown:
        PARSERS.get("react-fnd")
    assert str(unknown.value).startswith("unknown parser 'react-fnd'. Did you mean react-find")
    assert "Known parsers: " in str(unknown.value) and "parserss" not in str(unknown.value)
