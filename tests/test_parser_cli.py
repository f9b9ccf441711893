"""`tba parse` and `tba compare-parsers` end to end through the CLI entry point."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.cli import main

TEXTS = [
    'Thought: t\nAction: get_x\nAction Input: {"a": 1}\nObservation: fake',
    "Thought: The answer is 42.",
]


def _jsonl(path, texts):
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


def test_parse_writes_one_line_per_input_in_order(tmp_path, capsys):
    source = _jsonl(tmp_path / "in.jsonl", TEXTS)
    assert main(["parse", "--parser", "react-find", "--input", str(source)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["error"] for line in lines] == ["hallucinated_observation", "no_action"]
    assert lines[0]["calls"] == [{"name": "get_x", "arguments_raw": '{"a": 1}\nObservation: fake', "arguments": None}]
    assert set(lines[0]) == {"parser", "thought", "calls", "final_answer", "error", "rung"}


def test_parse_reads_one_text_from_stdin(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXTS[0]))
    assert main(["parse", "--parser", "react-robust"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["calls"][0]["arguments"] == {"a": 1} and line["rung"] == "strict"


def test_parse_bad_line_names_file_and_line(tmp_path, capsys):
    source = tmp_path / "bad.jsonl"
    source.write_text('{"text": "ok"}\n{"txt": "wrong field"}\n', encoding="utf-8")
    assert main(["parse", "--parser", "react-find", "--input", str(source)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing half-written
    assert "bad.jsonl" in captured.err and "line 2" in captured.err and "text" in captured.err


def test_parse_unknown_parser_is_an_input_error(capsys):
    assert main(["parse", "--parser", "react-fnd"]) == 2
    assert "react-find" in capsys.readouterr().err


def test_compare_parsers_writes_the_report(tmp_path, fixtures_root, capsys):
    texts = _jsonl(tmp_path / "texts.jsonl", TEXTS)
    answer_file = next(p for p in sorted((fixtures_root / "trajectories").glob("*CoT@3.json")))
    out = tmp_path / "report"
    code = main(["compare-parsers", "--input", str(texts), str(answer_file), "--out", str(out), "--no-progress"])
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"summary.md", "parsers.csv", "error_kinds.csv", "rungs.csv",
                                               "agreement.csv", "disagreements.jsonl", "parsers.png"}
    rows = {r["parser"]: r for r in csv.DictReader((out / "parsers.csv").open(encoding="utf-8"))}
    total = int(rows["react-find"]["applicable"])
    assert total > len(TEXTS)  # the answer file contributed its assistant messages
    # openai-tools applies only to the answer file's messages, not to the two plain texts
    assert int(rows["openai-tools"]["applicable"]) == total - len(TEXTS)
    assert (out / "parsers.png").read_bytes().startswith(b"\x89PNG")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "not applicable" in summary and "| react-robust |" in summary
    disagreements = [json.loads(line) for line in (out / "disagreements.jsonl").read_text().splitlines()]
    assert any(d["text"].startswith("Thought: t\nAction: get_x") for d in disagreements)


def test_compare_parsers_missing_input_is_an_input_error(tmp_path, capsys):
    assert main(["compare-parsers", "--input", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


SURROGATE_TEXTS = {  # each parser's own format, with a lone surrogate in the thought and in an argument
    "fenced-json": 'note \ud800\n```json\n{"name": "get_x", "arguments": {"a": "b\udfff"}}\n```',
    "hermes": 'note \ud800<tool_call>{"name": "get_x", "arguments": {"a": "b\udfff"}}</tool_call>',
    "react-find": 'Thought: note \ud800\nAction: get_x\nAction Input: {"a": "b\udfff"}',
    "react-regex": 'Thought: note \ud800\nAction: get_x\nAction Input: {"a": "b\udfff"}',
    "react-robust": 'Thought: note \ud800\nAction: get_x\nAction Input: {"a": "b\udfff"}',
}


@pytest.mark.parametrize("parser", sorted(SURROGATE_TEXTS))
def test_parse_writes_a_lone_surrogate_as_a_json_escape(tmp_path, parser):
    # a real process: its stdout is strict UTF-8, which a lone surrogate used to crash (exit 1)
    source = _jsonl(tmp_path / "in.jsonl", [SURROGATE_TEXTS[parser]])
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-m", "runners.cli", "parse", "--parser", parser, "--input", str(source)],
                          capture_output=True, cwd=Path(__file__).resolve().parents[1], env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    line = json.loads(done.stdout.decode("utf-8"))  # valid UTF-8 and valid JSON
    assert line["calls"][0]["name"] == "get_x"
    assert line["calls"][0]["arguments"] == {"a": "b\udfff"}  # the escape decodes back to the same text
    assert "\ud800" in (line["thought"] or "")
