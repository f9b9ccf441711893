"""Issue 29 item 1: a served model never judges its own answers unless asked, and when asked every table, CSV row
and report headline says self-judged. `make eval` with a served model and no judge stops before the run (exit 2,
naming JUDGE_URL / JUDGE_MODEL, OPENAI_API_KEY and JUDGE=self); `tba evaluate` refuses a judge that is the run's
own model (exit 2 naming --judge-self). The offline default keeps its local 135M judge, labelled as a check of
the pipeline, not of the model.

The served model is a loopback stand-in (tests/openai_standin.py) that answers the agent with a Finish call and
a judge's forced tool call with a Solved verdict; the run is a real `tba run` against it."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runners.cli import main
from runners.judging.evaluate import evaluate_run
from tests.openai_standin import OpenAIStandin, Reply
from tests.test_judge_failures import solved
from tests.test_report_chromium import Chrome, chromium  # noqa: F401 (a fixture)
from toolbench_adapter.evaluation.evaluations import PIPELINE_CHECK, SELF_JUDGED, JudgeIdentity, choose_evaluation
from toolbench_adapter.report.html import write_report

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SERVED = "served-model"
FINISH = Reply(tool_calls=[{"id": "c1", "type": "function", "function": {
    "name": "Finish", "arguments": json.dumps({"return_type": "give_answer", "final_answer": "done"})}}])


def served(endpoint: str, body: dict) -> Reply:
    """The agent gets a Finish call; a judge (a forced call of its function) gets a Solved verdict."""
    return solved(endpoint, body) if isinstance(body.get("tool_choice"), dict) else FINISH


@pytest.fixture
def endpoint():
    with OpenAIStandin(models=(SERVED,), respond=served) as standin:
        yield standin


def served_run(tmp_path: Path, standin: OpenAIStandin, name: str = "served") -> Path:
    assert main(["run", "--name", name, "--out-root", str(tmp_path), "--backend", "openai-chat", "--base-url",
                 standin.url, "--model", SERVED, "--dialect", "openai-tools", "--quiet"]) == 0
    return tmp_path / name


def evaluate(run_dir: Path, tmp_path: Path, *extra: str) -> int:
    return main(["evaluate", str(run_dir), "--quiet", "--evaluate-times", "1", "--cache", str(tmp_path / "c.jsonl"),
                 *extra])


def make(*args: str, dry: bool = True) -> subprocess.CompletedProcess:
    """`make -n` (the commands, nothing run); ``dry=False`` runs them: for refusals, which `tba eval` (its checks
    before any model call: runners/cli/commands/eval.py) gives before anything is loaded or asked."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "TBA_JUDGE_URL")}
    return subprocess.run(["make", *(["-n"] if dry else []), *args], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, env=env, timeout=120)


# ---- make eval --------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_eval_with_a_served_model_and_no_judge_stops_before_the_run():
    """Was: `tba evaluate ... --judge-model MODEL --judge-url BASE_URL` (JUDGE_MODEL ?= $(MODEL)): self-judged.
    The check is `tba eval`'s now (the Makefile has no JUDGE_CHECK): BASE_URL answers nothing, so an exit 2 naming
    the judge came before the model endpoint was asked."""
    served_flags = ["BACKEND=openai-completions", "BASE_URL=http://127.0.0.1:9/v1", "MODEL=ToolLLaMA-2-7b-v2"]
    done = make("eval", *served_flags, dry=False)
    assert done.returncode == 2
    for needle in ("JUDGE_URL=", "JUDGE_MODEL=", "OPENAI_API_KEY", "JUDGE=self", "no judge given"):
        assert needle in done.stderr, needle
    for target in ("compare-parsers-live", "compare-structured"):
        refused = make(target, *served_flags, dry=False)
        assert refused.returncode == 2 and "no judge given" in refused.stderr
        assert "tba run" not in refused.stdout  # stopped at `tba eval --check-only`, before the run
    asked = make("eval", *served_flags, "JUDGE=self")
    assert asked.returncode == 0 and "--judge=self" in asked.stdout and "--judge-url" not in asked.stdout
    judged = make("eval", *served_flags, "JUDGE_URL=https://api.openai.com/v1", "JUDGE_MODEL=gpt-4o-mini")
    assert judged.returncode == 0
    assert "--judge-model=gpt-4o-mini --judge-url=https://api.openai.com/v1" in judged.stdout
    assert "--judge=self" not in judged.stdout and "ToolLLaMA-2-7b-v2 --judge-url" not in judged.stdout
    wrong = make("eval", *served_flags, "JUDGE=yes", dry=False)
    assert wrong.returncode == 2 and "argument --judge: invalid choice: 'yes'" in wrong.stderr
    offline = make("eval")  # the offline default keeps its local judge
    assert offline.returncode == 0 and "--judge-backend=hf" in offline.stdout and "--judge=self" not in offline.stdout


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["eval", "compare-parsers-live", "compare-structured"])
@pytest.mark.parametrize("model, judge_model", [("x", "x"), ("ToolLLaMA-2-7b-v2", "toolllama-2-7b-v2"),
                                                ("ToolBench/ToolLLaMA-2-7b-v2", "ToolLLaMA-2-7b-v2")])
def test_make_refuses_a_judge_that_is_the_runs_own_model_before_the_run(target, model, judge_model):
    """Was: JUDGE_URL given, so JUDGE_CHECK passed; the whole run was spent before `tba evaluate` refused (exit 2).
    The same model by `tba evaluate`'s rule (case, an organisation folder) is refused before the run by `tba eval`,
    which applies that rule itself (runners/judging/evaluate.py: check_self_judging), naming JUDGE=self."""
    served_flags = ["BACKEND=openai-completions", "BASE_URL=http://127.0.0.1:9/v1", f"MODEL={model}",
                    "JUDGE_URL=http://127.0.0.1:9/v1", f"JUDGE_MODEL={judge_model}"]
    done = make(target, *served_flags, dry=False)
    assert done.returncode == 2, done.stdout
    assert "is the run's own model" in done.stderr and "JUDGE=self" in done.stderr
    assert "tba run" not in done.stdout and "tba evaluate" not in done.stdout  # stopped before any model call
    asked = make(target, *served_flags, "JUDGE=self")
    assert asked.returncode == 0 and "--judge=self" in asked.stdout
    other = make(target, *served_flags[:-1], "JUDGE_MODEL=gpt-4o-mini")
    assert other.returncode == 0 and "--judge-model=gpt-4o-mini" in other.stdout


# ---- tba evaluate ------------------------------------------------------------------------------------------------


def test_a_judge_that_is_the_runs_own_model_is_refused_unless_asked(tmp_path, capsys, endpoint):
    """What make used to pass (the run's model at the run's endpoint) was judged without a word."""
    run_dir = served_run(tmp_path, endpoint)
    asked = endpoint.count()
    capsys.readouterr()
    assert evaluate(run_dir, tmp_path, "--judge-url", endpoint.url, "--judge-model", SERVED) == 2
    err = capsys.readouterr().err
    assert "is the run's own model" in err and "--judge-self" in err and "--judge-url URL --judge-model NAME" in err
    assert "OPENAI_API_KEY" in err and "JUDGE=self" not in err  # tba typed by hand: flags only
    # the same model name elsewhere (another endpoint, an organisation prefix) is the same model
    assert evaluate(run_dir, tmp_path, "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", f"org/{SERVED}") == 2
    assert endpoint.count() == asked and not endpoint.probes  # refused before the judge was asked anything
    assert not (run_dir / "eval").exists() and not (run_dir / "converted").exists()


def test_no_judge_given_is_refused_naming_the_flags(tmp_path, capsys, endpoint, monkeypatch):
    monkeypatch.delenv("TBA_JUDGE_URL", raising=False)
    run_dir = served_run(tmp_path, endpoint)
    capsys.readouterr()
    assert evaluate(run_dir, tmp_path) == 2
    err = capsys.readouterr().err
    assert "no judge given" in err and "field '--judge-url'" in err
    for needle in ("--judge-model NAME", "OPENAI_API_KEY", "--judge-self"):
        assert needle in err, needle
    assert not endpoint.probes
    # under make (the Makefile names its variables in TBA_MAKE_VARIABLES), the same fix in make's words
    monkeypatch.setenv("TBA_MAKE_VARIABLES", "--judge-url=JUDGE_URL --judge-model=JUDGE_MODEL --judge-self=JUDGE=self")
    assert evaluate(run_dir, tmp_path) == 2
    err = capsys.readouterr().err
    for needle in ("JUDGE_URL=URL JUDGE_MODEL=NAME", "OPENAI_API_KEY", "or JUDGE=self to let", "field 'JUDGE_URL'"):
        assert needle in err, needle
    assert "--judge-" not in err.replace("--judge-api-key", "")


def test_judge_self_judges_with_the_runs_model_and_every_output_says_self_judged(tmp_path, capsys, endpoint):
    run_dir = served_run(tmp_path, endpoint)
    capsys.readouterr()
    assert evaluate(run_dir, tmp_path, "--judge-self") == 0  # no --judge-url: the run's own endpoint and model
    out = capsys.readouterr().out
    [(_, probe)] = endpoint.probes
    assert probe["model"] == SERVED
    record, _ = choose_evaluation(run_dir)
    assert record.self_judged and record.id == f"{SERVED}@127.0.0.1_{endpoint.url.split(':')[-1].split('/')[0]}-tools-x1"
    for mode in ("upstream", "strict"):
        md = (record.tables_dir / f"leaderboard_sopr_{mode}.md").read_text()
        assert re.search(rf"Judge: {SERVED} @ \S+ \[tools\]; {SELF_JUDGED} \(the run's own model", md)  # caption
        assert f"| served (CoT@1) ({SELF_JUDGED}) | 100.0 |" in md  # the row itself
        rows = list(csv.DictReader(io.StringIO((record.tables_dir / f"leaderboard_sopr_{mode}.csv").read_text())))
        assert rows and all(SELF_JUDGED in row["judge"] and SELF_JUDGED in row["Method"] for row in rows)
        assert SELF_JUDGED in (record.tables_dir / f"leaderboard_sopr_{mode}.tex").read_text()
    assert f"({SELF_JUDGED}) | 100.0 |" in out
    meta = json.loads(next(record.eval_dir.glob("G1_tool_*.meta.json")).read_text())
    assert meta["self_judged"] is True and SELF_JUDGED in meta["judge"]
    # tba table re-reads the score files: the mark travels with them
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert f"| served (CoT@1) ({SELF_JUDGED}) |" in capsys.readouterr().out
    page = write_report([run_dir], tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    assert data["runs"][0]["evaluation"]["selfJudged"] is True  # the page's first screen warns (Chromium below)


def test_the_offline_default_judge_is_labelled_a_pipeline_check(tmp_path):
    """The local 135M model judging its own run is let through (no --judge-self), and every table says what it
    is worth. In-process stand-in for hf_chat_client's client (the real one: tests/test_offline_default.py)."""
    from runners.config import RunConfig
    from runners.execution.runner import Runner

    Runner(RunConfig(name="offline", out_root=str(tmp_path), backend="scripted"), progress=False).run()
    manifest = json.loads((tmp_path / "offline" / "manifest.json").read_text())

    class LocalJudge:  # what hf_chat_client builds for the default model: model and note set, no tools
        name = "hf:SmolLM2-135M-Instruct (local)"
        model = manifest["model"]  # the run's own model, as on the offline default
        supports_tools = False
        judge_note = PIPELINE_CHECK

        def chat(self, messages, **_):
            return {"role": "assistant", "content": '{"reason": "ok", "answer_status": "Solved"}'}

    result = evaluate_run(tmp_path / "offline", LocalJudge(), evaluate_times=1, cache_path=None, progress=False)
    assert result.identity.self_judged and PIPELINE_CHECK in result.identity.label
    md = (choose_evaluation(tmp_path / "offline")[0].tables_dir / "leaderboard_sopr_upstream.md").read_text()
    assert f"{PIPELINE_CHECK}." in md.splitlines()[0]  # the caption
    # without the note (any other judge that is the run's model) the same run is refused
    LocalJudge.judge_note = None
    with pytest.raises(Exception, match="--judge-self"):
        evaluate_run(tmp_path / "offline", LocalJudge(), evaluate_times=1, cache_path=None, progress=False)


def test_hf_judge_of_the_default_local_model_carries_the_note():
    """hf_chat_client marks the project's default local judge (and only it) with the pipeline-check note."""
    from runners.models import local_model
    from runners.models.chat_adapter import hf_chat_client

    if not local_model.is_converted(local_model.default_cache_folder()):
        pytest.skip("the local SmolLM2 is not converted here (make model converts it, ~30 s, offline)")
    client = hf_chat_client()
    assert client.judge_note == PIPELINE_CHECK and client.model == f"hf:{local_model.DEFAULT_MODEL}"
    identity = JudgeIdentity(client.name, client.model, (), "json", 3, "default", "x", note=client.judge_note)
    assert identity.short_id == "SmolLM2-135M-Instruct@local-json-x3"


def test_the_self_judged_banner_says_what_the_user_did(tmp_path, endpoint):
    """Issue 41: the banner cited --judge-self to a user who never passed it (make eval JUDGE=self passes
    --judge self; the offline default's local judge runs the run's own weights without being asked)."""
    from toolbench_adapter.report.html import self_judged_how

    run_dir = served_run(tmp_path, endpoint)
    assert evaluate(run_dir, tmp_path, "--judge", "self") == 0
    page = write_report([run_dir], tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    how = data["runs"][0]["evaluation"]["selfJudgedHow"]
    assert how.startswith("asked for with JUDGE=self (make) or --judge self: tba evaluate") and "--judge-self" not in how
    offline = self_judged_how({"command": "tba eval --name eval-hf-CoT1 --judge-backend hf",
                               "judge": {"model": "hf:SmolLM2-135M-Instruct", "note": PIPELINE_CHECK}})
    assert offline.startswith("the local judge hf:SmolLM2-135M-Instruct runs the same weights as the run's model, "
                              "unasked") and "--judge-self" not in offline
    assert "the same weights under another name" in self_judged_how({"command": "tba evaluate r --judge-url u"})
    # make eval JUDGE=self: make_recipes passes --judge=self, one word
    made = self_judged_how({"command": "tba eval --name r --judge-backend=hf --evaluate-times=3 --judge=self"})
    assert made.startswith("asked for with JUDGE=self (make) or --judge self: tba eval"), made


# ---- the report, in a real browser -------------------------------------------------------------------------------


def test_the_first_screen_of_a_self_judged_run_says_so_in_chromium(chromium, tmp_path, endpoint):  # noqa: F811
    run_dir = served_run(tmp_path, endpoint)
    assert evaluate(run_dir, tmp_path, "--judge-self") == 0
    page = write_report([run_dir], tmp_path / "report.html")
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        chrome.open(page.as_uri())
        warning = chrome.js("(document.getElementById('self-judged-warning') || {}).innerText")
        assert warning and warning.startswith("Self-judged: the run's own model judged its answers (asked for with "
                                              "--judge-self: tba evaluate")
        facts = chrome.js("document.getElementById('facts').innerText")
        assert SELF_JUDGED in facts and "evaluation" in facts
        box = chrome.js("(() => { const r = document.getElementById('self-judged-warning').getBoundingClientRect();"
                        " return [r.top, r.bottom, innerHeight]; })()")
        assert 0 <= box[0] and box[1] <= box[2]  # on the first screen
        keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
        if keep:
            chrome.screenshot(Path(keep) / "self_judged_first_screen.png")
    finally:
        chrome.close()
