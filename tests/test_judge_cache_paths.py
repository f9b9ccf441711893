"""Issue 21's minor list: an unwritable judge ``--cache`` is exit 2 naming the flag before any request, and a
cache write that fails mid-judging (a full disk) loses no verdict: kept in memory and in the label files,
warned about once, counted in the meta file; a later run with space asks them again and fills the cache."""

from __future__ import annotations

import builtins
import errno
import json

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import command_inputs, solved
from tests.test_judge_loopback import example, give_answer
from toolbench_adapter.evaluation import cache as cache_module
from toolbench_adapter.evaluation.cache import JudgementCache
from toolbench_adapter.evaluation.storage import read_label_file


@pytest.mark.parametrize("command", ["evaluate", "judge", "prefer", "judge-audit"])
def test_an_unwritable_cache_is_exit_2_naming_the_flag_before_any_request(tmp_path, capsys, command):
    """Was: the judging ran and the first verdict's cache write raised NotADirectoryError (a traceback, exit 1)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    inputs = command_inputs(tmp_path, command)
    with OpenAIStandin(respond=solved) as judge:
        args = [command, *inputs, "--judge-url", judge.url, "--judge-model", judge.model,
                "--cache", str(blocker / "sub" / "j.jsonl"), "--quiet" if command == "evaluate" else "--no-progress"]
        capsys.readouterr()
        assert main(args) == 2
        assert judge.count() == 0 and not judge.probes  # refused before the judge was asked anything
    err = capsys.readouterr().err
    assert "field '--cache'" in err and str(blocker / "sub" / "j.jsonl") in err and "fix: a file is in the way" in err
    assert "Traceback" not in err


def test_a_cache_folder_at_the_files_name_is_exit_2(tmp_path, capsys):
    (tmp_path / "j.jsonl").mkdir()
    run_dir = command_inputs(tmp_path, "evaluate")[0]
    assert main(["evaluate", run_dir, "--judge-url", "http://127.0.0.1:9/v1", "--cache", str(tmp_path / "j.jsonl"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "field '--cache'" in err and "it is a folder" in err


def full_disk(monkeypatch):
    """The cache module's appends fail with ENOSPC (other files, labels included, are written as usual)."""
    real_open = builtins.open

    def failing_open(file, mode="r", *args, **kwargs):
        if "a" in mode:
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(cache_module, "open", failing_open, raising=False)
    monkeypatch.setattr(JudgementCache, "_warned", set())


def test_a_full_disk_while_judging_keeps_every_verdict_and_warns_once(tmp_path, capsys, monkeypatch):
    """Was: OSError from JudgementCache.put in the judging thread: a traceback, exit 1, no label file."""
    converted = tmp_path / "conv" / "m" / "G1_instruction.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({str(i): example(f"Q{i}", give_answer(f"a{i}")) for i in range(3)}))
    cache = tmp_path / "cache" / "j.jsonl"
    with OpenAIStandin(respond=solved) as judge:
        args = ["judge", "--converted", str(converted), "--out", str(tmp_path / "out"), "--judge-url", judge.url,
                "--judge-model", judge.model, "--cache", str(cache), "--evaluate-times", "2", "--no-progress"]
        with monkeypatch.context() as patch:
            full_disk(patch)
            assert main(args) == 0
        captured = capsys.readouterr()
        assert captured.err.count("cannot write (No space left on device)") == 1 and str(cache) in captured.err
        assert "SoPR upstream G1_instruction m: 100.0" in captured.out
        labels = read_label_file(tmp_path / "out" / "G1_instruction_m.json").labels
        assert len(labels) == 3 and all(len(repeats) == 2 for repeats in labels.values())  # no verdict lost
        meta = json.loads((tmp_path / "out" / "G1_instruction_m.meta.json").read_text())
        assert meta["cache_unwritten"] == 6
        asked = judge.count()
        assert main(args) == 0  # space again: the verdicts are asked again and cached this time
        assert judge.count() == asked + 6
        assert main(args) == 0
        assert judge.count() == asked + 6  # all from the cache now
    assert len(JudgementCache(cache)) == 6


def test_a_line_cut_by_a_full_disk_does_not_swallow_the_next_verdict(tmp_path):
    path = tmp_path / "j.jsonl"
    JudgementCache(path).put("a", {"label": "Solved"})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"key": "b", "val')  # what a write cut short by ENOSPC leaves
    JudgementCache(path).put("c", {"label": "Solved"})
    assert JudgementCache(path).get("c") == {"label": "Solved"} and JudgementCache(path).get("a")
