"""tba evaluate --executor ray (issue 15): judge request batches as Ray tasks give the same label files and
tables as threads, and the judgement cache is read and written by the driver the same way. One local cluster
per module; the judge is a loopback stand-in in this process, which the Ray workers reach over HTTP."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from tests.ray_support import needs_ray
from tests.test_judge_loopback import StandIn, function_of, tool_reply


def verdict(payload: dict) -> dict:
    """A verdict that depends on the query only, the same in any process: some Solved, some Unsolved, some
    Unsure (which asks parse_answer_status too)."""
    function = function_of(payload)
    digest = hashlib.sha256(payload["messages"][0]["content"].split("Answer:")[0].encode()).digest()[0]
    status = ("Solved", "Unsolved", "Unsure")[digest % 3] if function == "check_answer_status" else (
        "Solved", "Unsolved")[digest % 2]
    return tool_reply(function, {"reason": f"scripted {digest}", "answer_status": status})


def outputs(run_dir: Path) -> dict[str, bytes]:
    """Every file tba evaluate writes, but the clock readings (meta files, the evaluation's record and the
    run's list of evaluations) and the command recorded (--executor differs)."""
    found = {}
    written = [*run_dir.glob("converted/*/*"), *run_dir.rglob("eval/**/*"), *run_dir.rglob("tables/**/*"),
               run_dir / "evaluations.json"]
    for path in sorted(p for p in written if p.is_file()):
        data = path.read_bytes()
        if path.name.endswith(".meta.json"):
            meta = json.loads(data)
            meta.pop("seconds")
            data = json.dumps(meta, sort_keys=True).encode()
        elif path.name in ("evaluation.json", "evaluations.json"):  # evaluations.py
            record = json.loads(data)
            for entry in [record, *record.get("evaluations", [])]:
                for key in ("started", "finished", "command"):
                    entry.pop(key, None)
            data = json.dumps(record, sort_keys=True).encode()
        found[path.relative_to(run_dir).as_posix()] = data
    return found


def clear(run_dir: Path) -> None:
    for name in ("converted", "eval", "tables"):
        shutil.rmtree(run_dir / name, ignore_errors=True)
    (run_dir / "evaluations.json").unlink(missing_ok=True)


def cache_keys(path: Path) -> list[str]:
    return sorted(json.loads(line)["key"] for line in path.read_text().splitlines())


@needs_ray
def test_ray_gives_the_same_labels_and_tables_as_threads_and_uses_the_cache_alike(tmp_path, ray_cluster, capsys,
                                                                                  monkeypatch):
    from toolbench_adapter.evaluation.judging.passrate import ThreadJudgeExecutor

    Runner(RunConfig(name="r", out_root=str(tmp_path), backend="scripted"), progress=False).run()
    run_dir = tmp_path / "r"
    judge = StandIn(verdict)
    try:
        def evaluate(cache: str, *extra: str) -> int:
            return main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", "j", "--quiet",
                         "--evaluate-times", "2", "--concurrency", "3", "--cache", str(tmp_path / cache), *extra])

        assert evaluate("threads.jsonl") == 0
        on_threads, asked = outputs(run_dir), judge.count
        assert asked >= 12, "every answer must have gone to the judge"  # 6 queries x 2 repeats, some twice
        clear(run_dir)

        def no_threads(*_args):
            raise AssertionError("under --executor ray the judging must not run on this process's threads")

        monkeypatch.setattr(ThreadJudgeExecutor, "map", no_threads)
        assert evaluate("ray.jsonl", "--executor", "ray") == 0
        on_ray = outputs(run_dir)
        assert judge.count == 2 * asked  # the same requests, none served from the threads run's cache
        assert on_ray == on_threads and any(name.startswith("tables/") for name in on_ray)
        meta = [json.loads(on_ray[name]) for name in on_ray if "meta" in name]
        assert sum(m["requests"] for m in meta) == asked and all(m["cache_hits"] == 0 for m in meta)
        # the driver wrote the cache as the threads run did: the same judgements under the same keys
        assert cache_keys(tmp_path / "ray.jsonl") == cache_keys(tmp_path / "threads.jsonl")
        clear(run_dir)
        assert evaluate("ray.jsonl", "--executor", "ray") == 0
        assert judge.count == 2 * asked, "a second evaluation under ray must be served from the cache"
        again = outputs(run_dir)
        meta = [json.loads(again[name]) for name in again if "meta" in name]
        assert all(m["requests"] == 0 and m["cache_hits"] == m["queries"] * 2 for m in meta)
        for name, data in on_ray.items():
            if "meta" not in name:
                assert again[name] == data, name
    finally:
        judge.close()


@needs_ray
def test_a_judge_worker_that_cannot_reach_the_judge_gives_error_labels_not_a_crash(tmp_path, ray_cluster, capsys):
    from runners.judging.judge_ray import ChatRecipe, RayJudgeExecutor
    from toolbench_adapter.evaluation.evaluator import load_evaluator
    from toolbench_adapter.evaluation.judging.judge import make_judge
    from toolbench_adapter.evaluation.labels import Label

    judge = StandIn(verdict)
    try:
        chat = ChatRecipe("openai", "j", judge.url, options={"retries": 1, "wait_min": 0})
        driver_judge = make_judge(chat.build(), load_evaluator())
    finally:
        judge.close()  # the workers find nobody there
    asks = [("q1", {"final_answer": "x", "answer_details": [{"role": "tool", "message": "{'name': 'Finish'}",
                                                            "next": []}]})]
    executor = RayJudgeExecutor(chat, concurrency=2)
    [(index, judgement)] = list(executor.map(driver_judge, asks))
    assert index == 0 and judgement.label is Label.ERROR and "cannot reach" in judgement.error
    assert driver_judge.requests == 1  # the worker's request, counted in the driver


def test_evaluate_executor_ray_without_ray_installed_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # import ray raises ImportError
    Runner(RunConfig(name="r", out_root=str(tmp_path), backend="scripted"), progress=False).run()
    args = ["evaluate", str(tmp_path / "r"), "--judge-url", "http://127.0.0.1:9/v1", "--quiet", "--executor", "ray",
            "--cache", str(tmp_path / "c.jsonl")]
    assert main(args) == 2
    assert "pip install -e '.[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "r" / "converted").exists() and not (tmp_path / "r" / "eval").exists()


def test_evaluate_help_names_the_ray_executor(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    assert "--executor {threads,ray}" in text and "--ray-address" in text
