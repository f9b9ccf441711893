"""Folder readers skip what is not a regular file and say so (issue 35 item 5), and cache build refuses a file
whose tool-call arguments nest too deeply by name and builds the rest (item 6). Every command runs as a
subprocess bounded by a timeout (a FIFO blocked the reader forever) and a memory limit (a link to /dev/zero
was read until MemoryError)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

from tests.test_hostile_inputs import GROUP, good_answer, write

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE = PROJECT / "data" / "stabletoolbench_example" / "data_example"


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # /dev/zero read whole stops here, not the machine


def tba(*argv, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners.cli", *map(str, argv)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=60, preexec_fn=_limit_memory,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})


def add_specials(folder: Path, fifo: str, zero: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / fifo)
    os.symlink("/dev/zero", folder / zero)


def said(stderr: str, *names: str) -> bool:
    line = next((line for line in stderr.splitlines() if "not regular files" in line), "")
    return "FIFO 1, character device 1" in line and all(name in line for name in names)


def answers_with_specials(tmp_path: Path) -> Path:
    answers = tmp_path / "answers"
    write(answers, "1_CoT@1.json", good_answer(1, "Oslo"))
    add_specials(answers / GROUP, "2_CoT@1.json", "3_CoT@1.json")
    return answers


def test_convert_cache_build_replay_and_compare_parsers_skip_a_fifo_and_dev_zero(tmp_path):
    answers = answers_with_specials(tmp_path)
    for folder in (answers / GROUP, answers):  # upstream's one-group layout, and any layout
        out = tmp_path / f"converted-{folder.name}.json"
        done = tba("convert", "--answers", folder, "--method", "CoT@1", "--out", out, home=tmp_path)
        assert done.returncode == 0 and said(done.stderr, "2_CoT@1.json", "3_CoT@1.json"), done.stderr
        assert sorted(json.loads(out.read_text())) == ["1"]
    done = tba("cache", "build", "--answers", answers, "--out", tmp_path / "cache", home=tmp_path)
    assert done.returncode == 0 and said(done.stderr, "2_CoT@1.json"), done.stderr
    assert json.loads(done.stdout)["answer_files"] == 1
    done = tba("replay", answers, "--name", "r", "--out-root", tmp_path / "replays", home=tmp_path)
    assert done.returncode == 0 and said(done.stderr, "3_CoT@1.json") and "replayed 1 of 1 files" in done.stdout
    done = tba("compare-parsers", "--input", answers, "--out", tmp_path / "cmp", "--no-progress", home=tmp_path)
    assert done.returncode == 0 and said(done.stderr, "2_CoT@1.json"), done.stderr


def test_reproduce_labels_skip_a_fifo_and_dev_zero(tmp_path):
    labels = tmp_path / "labels"
    shutil.copytree(EXAMPLE / "pass_rate_results", labels)
    model = next(p for p in labels.iterdir() if p.is_dir())
    add_specials(model, f"G2_instruction_{model.name}.json", f"G3_instruction_{model.name}.json")
    done = tba("reproduce", "--labels", labels, home=tmp_path)
    assert done.returncode == 0 and said(done.stderr, "G2_instruction", "G3_instruction"), done.stderr


def test_cache_build_refuses_the_file_with_100000_deep_arguments_and_builds_the_ten_others(tmp_path):
    answers = tmp_path / "answers"
    for query_id in range(1, 11):
        write(answers, f"{query_id}_CoT@1.json", good_answer(query_id, f"city{query_id}"))
    deep = "[" * 100_000 + "]" * 100_000
    bad = good_answer(20, "Deep")
    bad["trys"][0]["chain"][2]["description"] = deep
    bad["answer_generation"]["train_messages"][0][2]["function_call"]["arguments"] = deep
    write(answers, "20_CoT@1.json", bad)
    out = tmp_path / "cache"
    done = tba("cache", "build", "--answers", answers, "--out", out, home=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "20_CoT@1.json: too_deeply_nested: field tool call now_for_sky_tool arguments" in done.stderr
    assert "nest 100000 levels deep" in done.stderr
    assert json.loads(done.stdout)["answer_files"] == 10
    cached = {key for path in out.rglob("*.json") for key in json.loads(path.read_text())}
    assert cached == {str({"city": f"city{i}"}) for i in range(1, 11)}
