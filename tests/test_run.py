"""Runs: the embedded server, resume after a kill, shards and merge, manifest, bad settings."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend


def run_args(tmp_path, name, *extra):
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--dialect",
            "openai-tools", "--quiet", *extra]


def answers(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("*/*.json"))}


def test_run_writes_upstream_files_and_manifest(tmp_path, capsys):
    assert main(run_args(tmp_path, "r1")) == 0
    run_dir = tmp_path / "r1"
    files = answers(run_dir)
    assert len(files) == 6  # the sample set: one evaluated query per group
    for content in files.values():
        data = json.loads(content)
        assert data["win"] and data["answer_generation"]["valid_data"]
        assert data["forward_args"] == {"single_chain_max_step": 12, "pass_at": 1, "answer": 1}
        assert data["answer_generation"]["function"][-1]["function"]["name"] == "Finish"  # current flavour
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["totals"]["queries"] == 6 and manifest["totals"]["model_calls"] == 12
    assert manifest["parser"] == "openai-tools" and manifest["compat"]["mode"] == "stb"
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == 12 and {s["status"] for s in steps} == {0, 3}
    for step in steps:  # what the tool-server client knew about each call (Finish makes none)
        server_call = step["status"] == 0
        assert (step["reply_kind"], step["http_status"], step["attempts"], step["faults"]) == (
            ("ok", 200, 1, []) if server_call else (None, None, None, None))
        assert (step["latency_s"] > 0) if server_call else step["latency_s"] is None
        # the model call behind the step: tokens and latency per call (the run page shows them)
        assert step["prompt_tokens"] > 0 and step["model_latency_s"] >= 0 and "completion_tokens" in step
    assert (manifest["totals"]["finished"], manifest["totals"]["infra_failures"]) == (6, 0)
    # a second run of the same command has nothing to do and changes nothing
    before = answers(run_dir)
    assert main(run_args(tmp_path, "r1")) == 0
    assert answers(run_dir) == before
    assert json.loads((run_dir / "manifest.json").read_text())["sessions"][-1]["skipped_as_done"] == 6


def test_killed_run_resumes_without_loss_or_duplicates(tmp_path, project_root):
    cmd = [sys.executable, "-m", "runners.cli", *run_args(tmp_path, "k", "--concurrency", "2",
                                                          "--backend-option", "delay_s=0.25")]
    proc = subprocess.Popen(cmd, cwd=project_root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    run_dir = tmp_path / "k"
    deadline = time.monotonic() + 60
    while len(list(run_dir.glob("*/*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = answers(run_dir)
    assert 2 <= len(done) < 6, "the kill should land mid-run"
    for content in done.values():
        json.loads(content)  # every answer file on disk is whole
    assert main(run_args(tmp_path, "k", "--concurrency", "2")) == 0
    after = answers(run_dir)
    assert len(after) == 6
    assert all(after[name] == content for name, content in done.items())  # finished work untouched
    stats = [json.loads(line) for line in (run_dir / "queries.jsonl").read_text().splitlines()]
    ids = [s["query_id"] for s in stats]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6  # each query ran exactly once


def test_shards_merge_into_the_full_run(tmp_path, capsys):
    for shard in ("1/2", "2/2"):
        assert main(run_args(tmp_path, f"s{shard[0]}", "--shard", shard)) == 0
    sizes = [len(answers(tmp_path / name)) for name in ("s1", "s2")]
    assert sizes == [3, 3]
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 0
    merged = answers(tmp_path / "all")
    assert len(merged) == 6
    assert json.loads((tmp_path / "all" / "manifest.json").read_text())["totals"]["queries"] == 6
    assert len((tmp_path / "all" / "steps.jsonl").read_text().splitlines()) == 12
    # a shard run with other settings is refused
    assert main(run_args(tmp_path, "odd", "--shard", "1/2", "--max-step", "6")) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "odd"), "--out", str(tmp_path / "bad")]) == 2
    assert "max_step" in capsys.readouterr().err


def test_merge_refuses_a_shard_twice_and_an_incomplete_set_unless_allowed(tmp_path, capsys):
    """Issue 35 minor: `tba merge A A` and a merge of one shard of two exited 0 (the first with every
    queries.jsonl line twice)."""
    for shard in ("1/2", "2/2"):
        assert main(run_args(tmp_path, f"s{shard[0]}", "--shard", shard)) == 0
    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    capsys.readouterr()
    assert main(["merge", str(s1), str(s1), "--out", str(tmp_path / "twice")]) == 2
    assert "the same shard folder is given twice" in capsys.readouterr().err
    shutil.copytree(s1, tmp_path / "s1-copy")
    assert main(["merge", str(s1), str(tmp_path / "s1-copy"), str(s2), "--out", str(tmp_path / "copy")]) == 2
    assert "two folders of shard 1/2" in capsys.readouterr().err
    assert main(["merge", str(s1), "--out", str(tmp_path / "half")]) == 2
    err = capsys.readouterr().err
    assert "shard 2/2 of the run is missing (1 of 2 given)" in err and "--allow-partial" in err
    assert not any((tmp_path / name).exists() for name in ("twice", "copy", "half"))
    assert main(["merge", str(s1), "--out", str(tmp_path / "half"), "--allow-partial"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["partial"] == "1 of 2 shards merged; missing: 2/2" and "PARTIAL" in captured.err
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    assert manifest["merged_partial"] == "1 of 2 shards merged; missing: 2/2" and manifest["totals"]["queries"] == 3


def test_changed_settings_in_an_existing_run_are_refused(tmp_path, capsys):
    assert main(run_args(tmp_path, "c", "--limit", "1", "--groups", "G1_instruction")) == 0
    capsys.readouterr()
    assert main(run_args(tmp_path, "c", "--method", "DFS_woFilter_w2")) == 2
    assert "holds a different run" in capsys.readouterr().err


@pytest.mark.parametrize("extra,needle", [
    (["--method", "BFS@3"], "unknown method"),
    (["--shard", "3/2"], "bad shard"),
    (["--groups", "G5_x"], "unknown group"),
    (["--dialect", "toolllamma"], "Did you mean toolllama"),
    (["--dialect-option", "nothing"], "KEY=VALUE"),
])
def test_bad_settings_exit_2_and_write_nothing(tmp_path, capsys, extra, needle):
    assert main(run_args(tmp_path, "bad", *extra)) == 2
    assert needle in capsys.readouterr().err
    assert not list((tmp_path / "bad").glob("*/*.json"))


def test_yaml_config_and_flags(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("name: y\nmethod: DFS_woFilter_w2\ngroups: [G1_tool]\nbackend: scripted\n"
                      "dialect: openai-tools\n")
    assert main(["run", "--config", str(config), "--out-root", str(tmp_path), "--quiet"]) == 0
    assert [p.name for p in (tmp_path / "y").glob("*/*.json")] == ["900004_DFS_woFilter_w2.json"]
    config.write_text("nmae: typo\n")
    assert main(["run", "--config", str(config), "--out-root", str(tmp_path)]) == 2
    assert "unknown setting(s) nmae" in capsys.readouterr().err


def test_concurrency_gives_the_same_files(tmp_path):
    outputs = []
    for name, concurrency in (("one", 1), ("four", 4)):
        cfg = RunConfig(name=name, out_root=str(tmp_path), backend="scripted", dialect="openai-tools",
                        concurrency=concurrency)
        Runner(cfg, backend=ScriptedBackend(delay_s=0.01), progress=False).run()
        outputs.append(answers(tmp_path / name))
    assert outputs[0] == outputs[1]


def _two_shards(tmp_path):
    for shard in ("1/2", "2/2"):
        assert main(run_args(tmp_path, f"s{shard[0]}", "--shard", shard)) == 0
    return tmp_path / "s1", tmp_path / "s2"


def test_merge_refuses_a_truncated_shard_answer_and_writes_nothing(tmp_path, capsys):
    s1, s2 = _two_shards(tmp_path)
    victim = sorted(s2.glob("*/*.json"))[0]
    victim.write_bytes(victim.read_bytes()[:200])  # a shard file cut short (disk full, killed copy)
    capsys.readouterr()
    assert main(["merge", str(s1), str(s2), "--out", str(tmp_path / "all")]) == 2
    err = capsys.readouterr().err
    assert str(victim) in err and "rerun that shard" in err
    assert not (tmp_path / "all").exists()
    victim.write_text(json.dumps({"win": True}))  # whole JSON, but not an answer file
    assert main(["merge", str(s1), str(s2), "--out", str(tmp_path / "all")]) == 2
    assert "answer_generation" in capsys.readouterr().err and not (tmp_path / "all").exists()
    assert not list(tmp_path.glob(".all.merging-*"))  # no staging folder left behind


def test_merge_refusing_overlapping_shards_leaves_no_half_written_folder(tmp_path, capsys):
    s1, s2 = _two_shards(tmp_path)
    clash = sorted(s1.glob("*/*.json"))[-1]  # s2 claims a query of s1 with a different answer
    data = json.loads(clash.read_text())
    data["answer_generation"]["final_answer"] = "something else"
    (s2 / clash.relative_to(s1)).parent.mkdir(exist_ok=True)
    (s2 / clash.relative_to(s1)).write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["merge", str(s1), str(s2), "--out", str(tmp_path / "all")]) == 2
    assert "different files for the same query" in capsys.readouterr().err
    assert not (tmp_path / "all").exists() and not list(tmp_path.glob(".all.merging-*"))


def test_merge_into_an_unwritable_or_used_place_is_exit_2(tmp_path, capsys):
    s1, s2 = _two_shards(tmp_path)
    (tmp_path / "blocker").write_text("a file in the way of the folder")
    for out, needle in ((tmp_path / "blocker" / "all", "in the way"), (tmp_path / "blocker", "is a file"),
                        (s1, "not empty"), ("/proc/self/tba-merged", "cannot write")):
        capsys.readouterr()
        assert main(["merge", str(s1), str(s2), "--out", str(out)]) == 2, out
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err, err
    assert (tmp_path / "blocker").read_text() == "a file in the way of the folder"
    (tmp_path / "empty").mkdir()  # an empty folder is fine to merge into
    assert main(["merge", str(s1), str(s2), "--out", str(tmp_path / "empty")]) == 0
    assert len(answers(tmp_path / "empty")) == 6


def test_run_into_an_unwritable_place_is_exit_2_before_any_query(tmp_path, capsys):
    (tmp_path / "blocker").write_text("a file in the way of the run folder")
    for root in (tmp_path / "blocker", "/proc/self"):  # /proc: read-only even for root (chmod is not)
        capsys.readouterr()
        args = run_args(tmp_path, "r")
        args[args.index("--out-root") + 1] = str(root)
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "cannot write" in err and "fix:" in err and "Traceback" not in err
    assert (tmp_path / "blocker").read_text() == "a file in the way of the run folder"


def test_a_lost_stats_line_is_recovered_from_the_answer_file(tmp_path):
    """A kill between the answer file and its queries.jsonl line must not make the totals undercount."""
    assert main(run_args(tmp_path, "lost")) == 0
    run_dir = tmp_path / "lost"
    stats_path = run_dir / "queries.jsonl"
    lines = stats_path.read_text().splitlines()
    lost = json.loads(lines[0])
    stats_path.write_text("".join(line + "\n" for line in lines[1:]))  # as if killed before the append
    assert main(run_args(tmp_path, "lost")) == 0
    records = [json.loads(line) for line in stats_path.read_text().splitlines()]
    recovered = [r for r in records if r.get("recovered")]
    assert [(r["group"], r["query_id"]) for r in recovered] == [(lost["group"], lost["query_id"])]
    assert (recovered[0]["query_count"], recovered[0]["win"], recovered[0]["valid_data"]) == (
        lost["query_count"], lost["win"], lost["valid_data"])
    totals = json.loads((run_dir / "manifest.json").read_text())["totals"]
    assert (totals["queries"], totals["finished"], totals["model_calls"]) == (6, 6, 12)
