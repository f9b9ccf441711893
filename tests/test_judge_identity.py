"""Issue 29 items 2 and 3: the judge mode comes from asking the endpoint, and each evaluation of a run is kept
apart under its judge's identity (toolbench_adapter/evaluation/evaluations.py).

Judges are loopback servers: the stand-in of tests/openai_standin.py (it answers a forced tool call with one) and
the project's own `tba serve-model` app (runners/serving/openai_server.py) around a scripted text-only backend, which
answers every request with text as `tba serve-model` does for the local model. Runs are real `tba run`s of the
sample set with the scripted model."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runlock import RunFolderLock
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from runners.serving.openai_server import LoopbackServer, build_app
from tests.openai_standin import OpenAIStandin, Reply
from tests.test_judge_failures import FAST_RETRIES, Broken, solved
from tests.test_report_chromium import Chrome, chromium  # noqa: F401 (a fixture)
from toolbench_adapter.evaluation.evaluations import (
    INDEX,
    RECORD,
    JudgeIdentity,
    choose_evaluation,
    list_evaluations,
)
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import ChatError
from toolbench_adapter.evaluation.judging.preflight import prepare_judge
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.storage import read_label_file
from toolbench_adapter.net.transport import FaultKind
from toolbench_adapter.report.html import write_report
from toolbench_adapter.report.run_data import load_run

VERDICT = json.dumps({"reason": "fine", "answer_status": "Solved"})


def unsolved(endpoint: str, body: dict) -> Reply:
    function = body["tool_choice"]["function"]["name"]
    return Reply(tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": function, "arguments": json.dumps({"reason": "no", "answer_status": "Unsolved"})}}])


def scripted_run(tmp_path: Path, name: str = "r") -> Path:
    Runner(RunConfig(name=name, out_root=str(tmp_path), backend="scripted"), progress=False).run()
    return tmp_path / name


def evaluate(run_dir: Path, judge: OpenAIStandin, cache: Path, *extra: str) -> int:
    return main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge.model, "--quiet",
                 "--evaluate-times", "1", "--cache", str(cache), *FAST_RETRIES, *extra])


def row(table: str, name: str = "r (CoT@1)") -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| {name}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def board(record, mode: str = "upstream") -> str:
    return (record.tables_dir / f"leaderboard_sopr_{mode}.md").read_text()


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- evaluations kept apart ---------------------------------------------------------------------------------------


def test_judge_b_keeps_judge_a_and_the_latest_complete_is_shown(tmp_path, capsys):
    """Was: tables/ and eval/ held only B's results afterwards, the file names carrying no judge."""
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved) as a:
        assert evaluate(run_dir, a, tmp_path / "cache.jsonl") == 0
    with OpenAIStandin(models=("judge-b",), respond=unsolved) as b:
        assert evaluate(run_dir, b, tmp_path / "cache.jsonl") == 0
    out = capsys.readouterr().out
    records = {r.id.split("@")[0]: r for r in list_evaluations(run_dir)}
    assert set(records) == {"judge-a", "judge-b"} and all(r.complete for r in records.values())
    a, b = records["judge-a"], records["judge-b"]
    assert re.fullmatch(r"judge-a@127\.0\.0\.1_\d+-tools-x1", a.id)  # model @ endpoint - mode - repeats
    assert f"evaluation: {b.id} (RUN/eval/{b.id}, RUN/tables/{b.id})" in out
    # both are there, each in its own folders: A's labels and tables untouched by B
    assert set(row(board(a))[1:]) == {"100.0"} and set(row(board(b))[1:]) == {"0.0"}
    assert read_label_file(a.eval_dir / "G1_tool_r.json").labels["900004"] == {0: Label.SOLVED}
    assert read_label_file(b.eval_dir / "G1_tool_r.json").labels["900004"] == {0: Label.UNSOLVED}
    record = json.loads((a.eval_dir / RECORD).read_text())
    assert record["judge"]["model"] == "judge-a" and record["judge"]["evaluate_times"] == 1
    assert record["judge_mode"] == {"requested": "auto", "chosen": "tools",
                                    "how": "auto: the endpoint answered a forced tool call with one: tools"}
    index = json.loads((run_dir / INDEX).read_text())
    assert index["default"] == b.id and [e["id"] for e in index["evaluations"]] == [a.id, b.id]
    # the default is the latest complete one, named; any other is shown on request
    capsys.readouterr()
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert f"evaluation {b.id} (the latest complete one" in out and f"also: {a.id} (complete" in out
    assert set(row(out.split("**SoPR (upstream)")[1])[1:]) == {"0.0"}
    assert main(["table", str(run_dir), "--judge-id", "judge-a", "--out", str(tmp_path / "t"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert f"evaluation {a.id} (chosen with --judge-id" in out
    assert set(row(out.split("**SoPR (upstream)")[1])[1:]) == {"100.0"}
    assert load_run(run_dir).evaluation.id == b.id
    assert {q.label for q in load_run(run_dir).queries} == {"Unsolved"}
    assert {q.label for q in load_run(run_dir, judge_id=a.id).queries} == {"Solved"}
    assert main(["table", str(run_dir), "--judge-id", "nobody", "--out", str(tmp_path / "t")]) == 2
    assert "no evaluation 'nobody'" in capsys.readouterr().err
    # the same judge again (its cache): only its own folders are rewritten, nothing asked twice
    before = folder_bytes(b.eval_dir)
    with OpenAIStandin(models=("judge-a",), respond=solved) as again:
        again_id = f"judge-a@127.0.0.1_{again.url.split(':')[-1].split('/')[0]}-tools-x1"
        assert evaluate(run_dir, again, tmp_path / "cache.jsonl") == 0 and again.count() == 6  # another port
    assert folder_bytes(b.eval_dir) == before
    assert choose_evaluation(run_dir)[0].id == again_id


def test_a_failed_rejudge_replaces_nothing(tmp_path, capsys):
    """Was: a re-judge that failed wrote its JudgeError labels over the good ones (eval/ and tables/ flat)."""
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "a.jsonl") == 0
        good = choose_evaluation(run_dir)[0]
        good_eval, good_tables = folder_bytes(good.eval_dir), folder_bytes(good.tables_dir)
        judge.fail_when = Broken()
        capsys.readouterr()
        assert evaluate(run_dir, judge, tmp_path / "fresh.jsonl") == 3  # same judge, a cache without its verdicts
        out = capsys.readouterr().out
        assert f"the run's default evaluation stays {good.id} (complete)" in out
        assert f"this one is kept apart as {good.id}.failed" in out
        assert folder_bytes(good.eval_dir) == good_eval and folder_bytes(good.tables_dir) == good_tables
        failed = next(r for r in list_evaluations(run_dir) if r.id == good.id + ".failed")
        assert failed.status == "failed" and failed.data["failed_judgements"] == 2
        assert read_label_file(failed.eval_dir / "G1_tool_r.json").labels["900004"] == {0: Label.ERROR}
        assert choose_evaluation(run_dir)[0].id == good.id
        assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
        assert set(row(capsys.readouterr().out.split("**SoPR (upstream)")[1])[1:]) == {"100.0"}
        # --score-anyway writes the failed one's tables, marked, still beside the good ones
        assert evaluate(run_dir, judge, tmp_path / "fresh.jsonl", "--score-anyway") == 3
        assert folder_bytes(good.tables_dir) == good_tables
        assert "| r (CoT@1) † |" in board(choose_evaluation(run_dir, good.id + ".failed")[0])
        # mended: the redo completes, replaces the judge's folder and the failed attempt is gone
        judge.fail_when = None
        assert evaluate(run_dir, judge, tmp_path / "fresh.jsonl") == 0
    assert [r.id for r in list_evaluations(run_dir)] == [good.id]
    # another judge that fails leaves the good one the default too, and the report says a later one failed
    with OpenAIStandin(models=("judge-c",), respond=solved, fail_when=Broken()) as other:
        assert evaluate(run_dir, other, tmp_path / "c.jsonl") == 3
    shown = load_run(run_dir)
    assert shown.evaluation.id == good.id and {q.label for q in shown.queries} == {"Solved"}
    assert any(note.startswith(f"evaluation {good.id} (the latest complete one") and "judge-c@" in note
               for note in shown.notes)


def test_a_run_whose_only_evaluation_failed_has_no_table_and_table_says_how_to_redo(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved, fail_when=Broken()) as judge:
        args = ["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge.model, "--quiet",
                "--evaluate-times", "1", "--cache", str(tmp_path / "c.jsonl"), *FAST_RETRIES]
        assert main(args) == 3
    assert "the run has no complete evaluation yet" in capsys.readouterr().out
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 3
    out = capsys.readouterr().out
    assert "no leaderboard: no complete evaluation" in out and "tba " + " ".join(args) in out
    assert "**SoPR" not in out
    # the report shows the failed one (its judge warning), saying it is not complete
    shown = load_run(run_dir)
    assert shown.evaluation.status == "failed" and shown.failed_judgements() == (2, 6)
    assert any(note.startswith("no complete evaluation: showing the latest") for note in shown.notes)


def test_run_folders_of_the_flat_layout_read_as_one_legacy_evaluation(tmp_path, capsys):
    """A run evaluated before evaluations were kept apart: labels in eval/, tables in tables/."""
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
    record = choose_evaluation(run_dir)[0]
    for folder, flat in ((record.eval_dir, run_dir / "eval"), (record.tables_dir, run_dir / "tables")):
        for path in folder.iterdir():
            path.rename(flat / path.name)
        folder.rmdir()
    (run_dir / "eval" / RECORD).unlink()
    (run_dir / INDEX).unlink()
    [legacy] = list_evaluations(run_dir)
    assert legacy.id == "legacy" and legacy.complete and legacy.tables_dir == run_dir / "tables"
    assert {q.label for q in load_run(run_dir).queries} == {"Solved"}
    capsys.readouterr()
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert set(row(capsys.readouterr().out.split("**SoPR (upstream)")[1])[1:]) == {"100.0"}
    with OpenAIStandin(models=("judge-b",), respond=unsolved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
    ids = [r.id for r in list_evaluations(run_dir)]
    assert ids[0] == "legacy" and ids[1].startswith("judge-b@") and choose_evaluation(run_dir)[0].id == ids[1]
    assert {q.label for q in load_run(run_dir, judge_id="legacy").queries} == {"Solved"}  # its own files only
    assert main(["score", str(run_dir / "eval")]) == 2  # two judges' labels in one folder are not one score
    assert "holds 2 evaluations" in capsys.readouterr().err


def test_judge_ids_are_readable_file_names_and_never_collide(tmp_path):
    def identity(name, model, urls, mode="tools", times=3, evaluator="default"):
        return JudgeIdentity(name, model, tuple(urls), mode, times, evaluator, "sha")

    assert identity("x", "gpt-4o-mini", ["https://api.openai.com/v1"]).short_id == "gpt-4o-mini@api.openai.com-tools-x3"
    assert identity("x", "ToolBench/ToolLLaMA-2-7b-v2", ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"],
                    "json", 1).short_id == "ToolBench_ToolLLaMA-2-7b-v2@127.0.0.1_8000+1-json-x1"
    assert identity("x", "hf:SmolLM2-135M-Instruct", [], "json").short_id == "SmolLM2-135M-Instruct@local-json-x3"
    assert identity("x", "m", [], evaluator="tooleval_gpt-3.5-turbo_default").short_id == (
        "m@local-tools-x3-tooleval_gpt-3.5-turbo_default")
    long = identity("x", "a/" + "very-long-model-name" * 8, ["http://h/v1"]).short_id
    assert len(long) <= 96 and re.fullmatch(r"[A-Za-z0-9._+@-]+", long)
    # two judges that read alike (the same model and host on another path): the second gets a digest, never A's folder
    from toolbench_adapter.evaluation.evaluations import folder_id

    first = identity("m @ http://h/a/v1 [tools]", "m", ["http://h/a/v1"])
    second = identity("m @ http://h/b/v1 [tools]", "m", ["http://h/b/v1"])
    assert first.short_id == second.short_id
    (tmp_path / "eval" / first.short_id).mkdir(parents=True)
    (tmp_path / "eval" / first.short_id / RECORD).write_text(json.dumps({"judge": {"key": first.key()}}))
    assert folder_id(tmp_path, first) == first.short_id
    assert re.fullmatch(re.escape(first.short_id) + r"-[0-9a-f]{6}", folder_id(tmp_path, second))


def test_the_same_judge_twice_at_once_is_refused(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
        record = choose_evaluation(run_dir)[0]
        with RunFolderLock(record.eval_dir, "tba evaluate (the other one)"):
            capsys.readouterr()
            assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 2
        err = capsys.readouterr().err
        assert "tba evaluate (the other one)" in err and "another judge" in err
    assert choose_evaluation(run_dir)[0].complete  # the refused one left the folder as it was


# ---- the judge mode, asked ----------------------------------------------------------------------------------------


def text_only_judge(verdicts: list[str]) -> ScriptedBackend:
    """`tba serve-model`'s view of a text-only model: tools in the request are not the model's business."""
    def answer(request):
        text = json.dumps(request.messages)
        if "tba-judge-preflight" not in text:
            verdicts.append(text)
        return '{"reason": "fine", "answer_status": "Solved"}'
    return ScriptedBackend(answer, model="text-judge")


def test_auto_asks_the_endpoint_and_judges_a_text_only_server_in_json(tmp_path, capsys):
    """Was: auto chose forced tool calls against tba serve-model; every judgement failed ("no tool call")."""
    run_dir = scripted_run(tmp_path)
    asked: list[str] = []
    with LoopbackServer(build_app(text_only_judge(asked), served_name="text-judge")) as server:
        url = server.url
        args = ["evaluate", str(run_dir), "--judge-url", url, "--judge-model", "text-judge", "--quiet",
                "--evaluate-times", "1", "--cache", str(tmp_path / "c.jsonl")]
        capsys.readouterr()
        assert main([*args, "--judge-mode", "tools"]) == 2  # a mode the endpoint cannot do: before any answer
        err = capsys.readouterr().err
        assert "cannot judge in --judge-mode tools" in err and "no tool call in the reply" in err
        assert "fix: pass --judge-mode json" in err and not asked and not (run_dir / "eval").exists()
        assert main(args) == 0
        out = capsys.readouterr().out
        assert len(asked) == 6  # every answer judged once
    assert "judge mode json (auto: the endpoint answered a forced tool call without one" in out
    record = choose_evaluation(run_dir)[0]
    assert record.id.endswith("-json-x1") and set(row(board(record))[1:]) == {"100.0"}
    data = json.loads((record.eval_dir / RECORD).read_text())
    assert data["judge_mode"]["requested"] == "auto" and data["judge_mode"]["chosen"] == "json"
    meta = json.loads(next(record.eval_dir.glob("*.meta.json")).read_text())
    assert meta["mode"] == "json" and meta["judge_mode_chosen_by"].startswith("auto: the endpoint answered")


def test_auto_judges_with_tools_where_the_endpoint_calls_them_and_json_where_it_refuses_them(tmp_path):
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
        assert [probe["tool_choice"]["function"]["name"] for _, probe in judge.probes] == ["check_answer_status"]
    assert choose_evaluation(run_dir)[0].id.endswith("-tools-x1")

    class RefusesTools:  # an endpoint without a tool parser: a request with tools is HTTP 400 (vLLM says so)
        name, supports_tools, asked = "plain @ http://h/v1", True, []

        def chat(self, messages, *, tools=None, **_):
            self.asked.append(bool(tools))
            if tools:
                raise ChatError("HTTP 400: tool choice needs --enable-auto-tool-choice", fault=FaultKind.HTTP_4XX,
                                status=400)
            return {"role": "assistant", "content": VERDICT}

    client = RefusesTools()
    judge = prepare_judge(client, load_evaluator())
    assert judge.mode == "json" and judge.mode_choice.startswith("auto: the endpoint refused a forced tool call (HTTP")
    assert client.asked == [True, False]  # the forced call, then the one test request in the json shape


# ---- small ones ---------------------------------------------------------------------------------------------------


def test_evaluate_says_a_run_is_still_running_when_its_lock_is_held(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["sessions"][-1]["finished"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    next(run_dir.glob("G1_tool/*.json")).unlink()
    with RunFolderLock(run_dir, "tba run --name r (still at it)"):
        assert main(["evaluate", str(run_dir), "--judge-url", "http://127.0.0.1:9/v1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"the run is still running (pid {os.getpid()} on" in err and "tba run --name r (still at it)" in err
    assert "1 of 6 selected queries have no answer file and no recorded failure yet" in err
    assert "wait for it to end" in err and "interrupted" not in err
    assert main(["evaluate", str(run_dir), "--judge-url", "http://127.0.0.1:9/v1", "--quiet"]) == 2
    assert "the run was interrupted" in capsys.readouterr().err  # the lock released: nobody is at it


def test_evaluate_checks_the_run_once(tmp_path, monkeypatch):
    """check_run reads every answer file (summarize, the unrun queries): the CLI's check is handed on."""
    import runners.judging.evaluate as evaluate_module

    calls = []
    real = evaluate_module.check_run
    monkeypatch.setattr(evaluate_module, "check_run", lambda *a, **k: calls.append(a) or real(*a, **k))
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
    assert len(calls) == 1


def test_table_marks_a_row_whose_score_left_failed_judgements_out(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(respond=solved, fail_when=Broken()) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl", "--score-anyway") == 3
    scores = choose_evaluation(run_dir, fallback=True)[0].score_files()
    capsys.readouterr()
    assert main(["table", *map(str, scores), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert "| r (CoT@1) † |" in out
    assert "† r (CoT@1): scored with 2 failed judgements (no verdict) left out of every denominator" in out


# ---- the report's first screen, in a real browser -----------------------------------------------------------------


def test_the_first_screen_names_the_evaluation_and_a_later_failed_one_in_chromium(chromium, tmp_path):  # noqa: F811
    run_dir = scripted_run(tmp_path, "judged-twice")
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 0
    with OpenAIStandin(models=("judge-b",), respond=solved, fail_when=Broken()) as judge:
        assert evaluate(run_dir, judge, tmp_path / "c.jsonl") == 3
    good = choose_evaluation(run_dir)[0]
    page = write_report([run_dir], tmp_path / "report.html")
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        chrome.open(page.as_uri())
        warning = chrome.js("(document.getElementById('evaluation-warning') || {}).innerText")
        assert warning.startswith("A later evaluation failed: judge-b@") and "2 of 6 judgements without a verdict" in warning
        assert f"shown is {good.id} (the latest complete evaluation)" in warning
        facts = chrome.js("document.getElementById('facts').innerText")
        assert f"evaluation {good.id} (the latest complete evaluation; 2 evaluations)" in facts
        assert chrome.js("document.getElementById('judge-warning')") is None  # the one shown has every verdict
        sopr = chrome.js("document.getElementById('card-sopr-upstream').innerText")
        assert "100.0" in sopr
        box = chrome.js("(() => { const r = document.getElementById('evaluation-warning').getBoundingClientRect();"
                        " return [r.top, r.bottom, innerHeight]; })()")
        assert 0 <= box[0] and box[1] <= box[2]  # on the first screen
        keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
        if keep:
            chrome.screenshot(Path(keep) / "judge_failed_later_first_screen.png")
        failed = write_report([run_dir], tmp_path / "failed.html",
                              judge_id=next(r.id for r in list_evaluations(run_dir) if not r.complete))
        chrome.open(failed.as_uri())
        assert chrome.js("document.getElementById('judge-warning').innerText").startswith(
            "Warning: 2 of 6 judgements failed")
        assert "(chosen with --judge-id; 2 evaluations)" in chrome.js("document.getElementById('facts').innerText")
        if keep:
            chrome.screenshot(Path(keep) / "judge_failed_chosen_first_screen.png")
    finally:
        chrome.close()
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
