"""Hostile input files (issue 41 item 2 and its minors): a binary file, JSON nested 200,000 deep, a symbolic link
loop or a FIFO in place of a query file; a FIFO, a 300 MB file or a key given twice as a run config; /proc/self/mem
as a published table; a FIFO handed to convert. Each is exit 2 naming the file and the fix, in bounded time, never
a traceback, and nothing written. One reader does it (toolbench_adapter/files/input_files.py); its own refusals
are tested here too. Commands run as subprocesses with a timeout, so a hang fails the test instead of the suite."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from toolbench_adapter.files import input_files
from toolbench_adapter.files.input_files import UnreadableFile, read_json, read_jsonl, read_text, read_yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
NEEDS_FIFO = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
QUERY = {"query_id": 5, "query": "q", "api_list": [{"category_name": "Weather", "tool_name": "Sky", "api_name": "Now",
                                                   "required_parameters": [], "optional_parameters": []}]}


def tba(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners.cli", *args], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=timeout)


def hostile(path: Path, kind: str) -> str:
    """Make ``path`` the hostile ``kind``; the words the refusal must hold."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "binary":
        path.write_bytes(b"[{\"query\": \x00\x01\x02\xff\xfe" * 100)
        return "binary file (a NUL byte at offset 11)"
    if kind == "nested 200,000 deep":
        path.write_text("[" * 200_000 + "]" * 200_000)
        return "nested too deeply to read"
    if kind == "link loop":
        path.symlink_to(path.name)
        return "symbolic link loop"
    if kind == "FIFO":
        os.mkfifo(path)
        return "not a regular file (a FIFO"
    raise ValueError(kind)


KINDS = ["binary", "nested 200,000 deep", "link loop", pytest.param("FIFO", marks=NEEDS_FIFO)]


def query_root(tmp_path: Path, kind: str) -> tuple[Path, Path, str]:
    root = tmp_path / "stb"
    path = root / "solvable_queries" / "test_instruction" / "G1_instruction.json"
    return root, path, hostile(path, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_query_file_is_exit_2_naming_it_in_queries_and_run(tmp_path, kind):
    root, path, needle = query_root(tmp_path, kind)
    for args in (["queries", "--stb-root", str(root)],
                 ["run", "--backend", "scripted", "--stb-root", str(root), "--name", "x", "--out-root",
                  str(tmp_path / "runs"), "--quiet"]):
        done = tba(*args)
        assert done.returncode == 2, (args[0], done.stderr[-2000:])
        assert f"{path}: " in done.stderr and needle in done.stderr and "fix: " in done.stderr
        assert "Traceback" not in done.stderr
    assert not list((tmp_path / "runs").rglob("*"))  # nothing written (the run lock's empty --out-root aside)


@pytest.mark.parametrize("kind", KINDS)
def test_doctor_says_a_hostile_query_file_is_missing_by_name_and_goes_on(tmp_path, kind):
    root, path, needle = query_root(tmp_path, kind)
    done = tba("doctor", "--stb-root", str(root), "--timeout", "1")
    line = next(line for line in done.stdout.splitlines() if "query files" in line)
    assert line.split()[0] == "MISSING" and str(path) in line and needle in line, line
    assert "judge" in done.stdout and "Traceback" not in done.stderr  # every other piece still checked


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_test_id_file_is_refused_not_taken_for_no_file(tmp_path, kind):
    """A link loop "does not exist" to Path.exists(): it was read as no id file (every query counted)."""
    root = tmp_path / "stb"
    (root / "solvable_queries" / "test_instruction").mkdir(parents=True)
    (root / "solvable_queries" / "test_instruction" / "G1_instruction.json").write_text(json.dumps([QUERY]))
    ids = root / "solvable_queries" / "test_query_ids" / "G1_instruction.json"
    needle = hostile(ids, kind)
    done = tba("queries", "--stb-root", str(root))
    assert done.returncode == 2 and f"{ids}: " in done.stderr and needle in done.stderr, done.stderr[-2000:]


@NEEDS_FIFO
def test_a_fifo_as_run_config_is_exit_2_at_once(tmp_path):
    config = tmp_path / "run.yaml"
    os.mkfifo(config)
    done = tba("run", "--config", str(config), "--name", "x", "--out-root", str(tmp_path / "runs"), "--quiet",
               timeout=60)
    assert done.returncode == 2 and f"{config}: not a regular file (a FIFO" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "runs").exists()


def test_a_300_mb_config_is_refused_by_its_size_before_a_byte_is_read(tmp_path):
    config = tmp_path / "run.yaml"
    with open(config, "wb") as handle:  # sparse: 300 MB on the books, nothing on the disk
        handle.truncate(300 << 20)
    done = tba("run", "--config", str(config), "--name", "x", "--out-root", str(tmp_path / "runs"), "--quiet",
               timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{config}: config file is larger than 4 MiB (314,572,800 bytes" in done.stderr
    assert "refused before reading it" in done.stderr


def test_a_key_given_twice_in_a_run_config_is_refused_naming_it_and_its_lines(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("backend: scripted\nconcurrency: 2\nmethod: CoT@1\nconcurrency: 8\n")
    done = tba("run", "--config", str(config), "--name", "x", "--out-root", str(tmp_path / "runs"), "--quiet")
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{config}: field 'concurrency': key 'concurrency' is given twice in one mapping (on lines 2 and 4)" \
        in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_key_given_twice_in_a_sweep_spec_is_refused(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: s\nbase: {backend: scripted}\naxes: {seed: [1]}\njudges: []\naxes: {seed: [2]}\n")
    done = tba("sweep", str(spec), "--dry-run", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "key 'axes' is given twice in one mapping (on lines 3 and 5)" in done.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="no /proc/self/mem on this system")
def test_proc_self_mem_as_a_published_table_is_exit_2_not_a_traceback():
    done = tba("reproduce", "--published", "/proc/self/mem", "--check-only", timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "/proc/self/mem: cannot read the published table" in done.stderr and "Traceback" not in done.stderr


@NEEDS_FIFO
def test_convert_names_a_fifo_as_one_not_as_a_missing_folder(tmp_path):
    fifo = tmp_path / "5_CoT@1.json"
    os.mkfifo(fifo)
    done = tba("convert", "--answers", str(fifo), "--method", "CoT@1", "--out", str(tmp_path / "out.json"),
               timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "not a regular file (a FIFO" in done.stderr and "answer folder not found" not in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_convert_names_a_missing_answer_file_as_missing(tmp_path):
    done = tba("convert", "--answers", str(tmp_path / "7_CoT@1.json"), "--method", "CoT@1", "--out",
               str(tmp_path / "out.json"))
    assert done.returncode == 2 and "answer folder or file not found" in done.stderr


def test_cache_build_on_a_run_folder_reads_its_answer_files_only(tmp_path):
    """The run's manifest.json (and evaluations.json, eval/ labels, the partial trees of failed/) were counted as
    refused answer files: `REFUSED 1 ... not_an_answer_file`."""
    from tests.test_server_cache_build import API_LIST, cot_answer, write
    from toolbench_adapter.server.cache_build import build_cache

    stb = tmp_path / "stb" / "solvable_queries" / "test_instruction"
    stb.mkdir(parents=True)
    (stb / "G1_instruction.json").write_text(json.dumps([{"query_id": 5, "query": "q", "api_list": API_LIST}]))
    run = tmp_path / "run"
    write(run, "5_CoT@1.json", cot_answer())
    (run / "manifest.json").write_text(json.dumps({"config": {}, "totals": {}}))
    (run / "evaluations.json").write_text("{}")
    (run / "eval" / "judge-1").mkdir(parents=True)
    (run / "eval" / "judge-1" / "G1_instruction_x.json").write_text("{}")
    (run / "failed" / "G1_instruction").mkdir(parents=True)
    (run / "failed" / "G1_instruction" / "6_CoT@1.json").write_text("{}")
    report = build_cache([run], tmp_path / "stb", tmp_path / "cache")
    assert report.answer_files == 1 and report.skipped_files == {} and report.refused == []


def test_serve_model_calls_a_too_deep_body_too_deep_not_not_json():
    from runners.serving.openai_server import LoopbackServer, build_app
    from tests.test_models_server import ScriptedBackend

    body = '{"messages": [{"role": "user", "content": "hi"}], "x": ' + "[" * 5000 + "]" * 5000 + "}"
    with LoopbackServer(build_app(ScriptedBackend())) as server:
        reply = requests.post(f"{server.url}/chat/completions", data=body, timeout=10,
                              headers={"Content-Type": "application/json"})
        plain = requests.post(f"{server.url}/chat/completions", data="{nope", timeout=10)
    assert reply.status_code == 400 and "nests deeper than this server reads" in reply.json()["error"]["message"]
    assert plain.status_code == 400 and plain.json()["error"]["message"] == "the body is not JSON"


# ---- the other readers route through it --------------------------------------------------------------------


def in_subprocess(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Python code in a child, so a reader that blocks on a FIFO fails by the timeout, not by hanging pytest."""
    return subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=timeout)


READERS = {  # a reader of the project, the file name it reads in a folder, what it is called
    "label file": ("from toolbench_adapter.evaluation.storage import read_label_file as r; r(P)",
                   "G1_instruction_m.json"),
    "score file": ("from toolbench_adapter.evaluation.scoring.results import read_score_file as r; r(P)",
                   "scores.json"),
    "converted answer file": ("from toolbench_adapter.evaluation.judging.run_judge import read_converted as r; r(P)",
                              "G1_instruction.json"),
    "evaluator config": ("from toolbench_adapter.evaluation.evaluator import load_evaluator as r; "
                         "r(P.parent)", "config.yaml"),
    "answer file": ("from toolbench_adapter.answers.read import read_recorded as r; r(P)", "5_CoT@1.json"),
    "tool document": ("from toolbench_adapter.queryset.toolset import ToolEnvironment as T; "
                      "T(P.parent.parent).tool_json('Cat', 'sky')", "Cat/sky.json"),
    "prompt file": ("from toolbench_adapter.server.simulators.mirrorapi import load_system_prompt as r; "
                    "r(str(P))", "prompt.txt"),
    "corpus": ("from toolbench_adapter.report.parser_corpus import read_jsonl as r; list(r(P))", "outputs.jsonl"),
    "price file": ("from toolbench_adapter.runs.cost import read_prices as r; r(P)", "prices.yaml"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_of_a_users_file_refuses_it_by_name(tmp_path, reader, kind):
    if reader == "prompt file" and kind.startswith("nested"):
        pytest.skip("a prompt is text, not JSON: brackets in it are no nesting")
    code, name = READERS[reader]
    path = tmp_path / "in" / name
    needle = hostile(path, kind)
    done = in_subprocess(f"""
from pathlib import Path
from toolbench_adapter.errors import InputError
P = Path({str(path)!r})
try:
    {code}
except InputError as exc:
    print(exc.message())
else:
    print("ACCEPTED")
""")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert str(path) in done.stdout and (needle in done.stdout or reader == "answer file" and kind == "nested "
                                         "200,000 deep" and "levels deep" in done.stdout), done.stdout


def test_an_answer_file_refused_by_the_reader_keeps_its_reason_codes(tmp_path):
    from toolbench_adapter.answers.read import UnusableAnswer, read_recorded

    codes = {}
    for kind in ("binary", "nested 200,000 deep", "link loop"):
        path = tmp_path / kind / "5_CoT@1.json"
        hostile(path, kind)
        with pytest.raises(UnusableAnswer) as refused:
            read_recorded(path)
        codes[kind] = refused.value.reason
    assert codes == {"binary": "not_json", "nested 200,000 deep": "too_deeply_nested", "link loop": "special_file"}


# ---- the reader itself ---------------------------------------------------------------------------------------


def test_a_file_past_its_kinds_limit_is_refused_with_the_limit_and_why(tmp_path, monkeypatch):
    monkeypatch.setitem(input_files.KINDS, "query file",
                        dataclasses.replace(input_files.KINDS["query file"], max_bytes=1000))
    path = tmp_path / "q.json"
    path.write_text(json.dumps([QUERY] * 20))
    with pytest.raises(UnreadableFile) as refused:
        read_json(path, "query file")
    assert refused.value.reason == "too_large"
    assert "larger than 1,000 bytes" in refused.value.problem and "StableToolBench's are about 1 MB" in \
        refused.value.problem


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc here")
def test_a_file_whose_size_says_0_is_still_read_and_still_bounded(monkeypatch):
    """/proc files say size 0: read until the end, and never past the limit."""
    assert "Pid:" in read_text("/proc/self/status", "prompt file")
    monkeypatch.setitem(input_files.KINDS, "prompt file",
                        dataclasses.replace(input_files.KINDS["prompt file"], max_bytes=10))
    with pytest.raises(UnreadableFile, match="larger than 10 bytes"):
        read_text("/proc/self/status", "prompt file")


def test_a_folder_a_dangling_link_and_a_device(tmp_path):
    (tmp_path / "gone.json").symlink_to(tmp_path / "nowhere.json")
    cases = {tmp_path: ("special_file", "not a regular file (a folder)"),
             tmp_path / "gone.json": ("not_found", "a link to a missing file"),
             tmp_path / "absent.json": ("not_found", "label file not found")}
    if os.path.exists("/dev/zero"):
        cases[Path("/dev/zero")] = ("special_file", "not a regular file (a character device)")
    for path, (reason, words) in cases.items():
        with pytest.raises(UnreadableFile) as refused:
            read_json(path, "label file")
        assert (refused.value.reason, refused.value.path) == (reason, str(path)) and words in refused.value.problem


def test_bytes_that_are_not_utf8_are_refused_by_offset_and_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b'{\n"q": "caf\xe9"}')
    with pytest.raises(UnreadableFile, match=r"not UTF-8 text \(byte 11, line 2") as refused:
        read_json(path, "query file")
    assert refused.value.reason == "not_utf8"


def test_jsonl_names_the_line_that_is_not_json(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a"}\n\n{"text": \n' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UnreadableFile) as refused:
        read_jsonl(path, "corpus")
    assert refused.value.field == "line 3" and refused.value.reason == "not_json"
    path.write_text('{"text": "a"}\n' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UnreadableFile, match="nested too deeply to read on line 2"):
        read_jsonl(path, "corpus")
    path.write_text('{"text": "a"}\n\n[1]\n')
    assert read_jsonl(path, "corpus") == [(1, {"text": "a"}), (3, [1])]
    # a raw line or paragraph separator inside a JSON string is no line break (json.dumps(ensure_ascii=False))
    path.write_text('{"text": "a\u2028b\u2029c\x85d"}\r\n[2]\n', encoding="utf-8")
    assert read_jsonl(path, "corpus") == [(1, {"text": "a\u2028b\u2029c\x85d"}), (2, [2])]


def test_yaml_keys_given_twice_are_refused_anywhere_but_merge_keys_still_merge(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb:\n  x: 1\n  y: 2\n  x: 3\n")
    with pytest.raises(UnreadableFile, match=r"key 'x' is given twice in one mapping \(on lines 3 and 5\)"):
        read_yaml(path, "config file")
    path.write_text("b: {x: 1, x: 2}\n")
    with pytest.raises(UnreadableFile, match=r"key 'x' is given twice in one mapping \(on line 1\)"):
        read_yaml(path, "config file")
    path.write_text("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\nd: [{x: 1}, {x: 2}]\n")
    assert read_yaml(path, "config file") == {"base": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2},
                                              "d": [{"x": 1}, {"x": 2}]}


def test_a_kind_not_in_the_list_is_the_callers_mistake(tmp_path):
    with pytest.raises(ValueError, match="no input file kind 'query fille'"):
        read_json(tmp_path / "x.json", "query fille")


def test_the_replay_backend_reports_a_too_deep_recording_as_an_unreadable_answer_file(tmp_path):
    """It raised RecursionError out of complete() (a harness error with a traceback in errors.jsonl)."""
    from runners.models.base import ModelRequest
    from runners.models.replay import ReplayBackend

    hostile(tmp_path / "G1_instruction" / "5_CoT@1.json", "nested 200,000 deep")
    backend = ReplayBackend(answers=tmp_path)
    completion = backend.complete(ModelRequest(prompt="p", key={"group": "G1_instruction", "query_id": 5,
                                                                 "method": "CoT@1", "path": [], "attempt": 0}))
    assert "cannot read the answer file for G1_instruction/5_CoT@1" in completion.error
    assert "nested too deeply to read" in completion.error
