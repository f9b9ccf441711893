"""Issue 21, items 1 and 5 (evaluate side): a judge that fails, and a run that was cut short, are never scored
as if nothing happened.

The judge is a loopback stand-in (tests/openai_standin.py) that answers every verdict Solved and fails on
purpose: unreachable (a closed port), a model it does not serve, a gateway answering 404 (tests/faulty_http.py),
or HTTP 500 for the judge requests about two of the six sample queries (a third of them) until it is mended.
A run is cut short by killing a real `tba run` process."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from tests.faulty_http import FaultyServer
from tests.openai_standin import OpenAIStandin, Reply
from tests.ray_support import needs_ray
from tests.test_judge_loopback import example, give_answer
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.scoring.results import rows_from_label_file
from toolbench_adapter.evaluation.scoring.scores import sopr
from toolbench_adapter.evaluation.steps import get_steps
from toolbench_adapter.evaluation.storage import read_label_file, write_label_files

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# two of the six sample queries (G1_tool, G2_category): their judge requests fail while the judge is broken
FAILING = ("chickpeas", "Riverside Sunday League")
FAST_RETRIES = ["--judge-option", "retries=2", "--judge-option", "wait_min=0", "--judge-option", "wait_max=0"]
S, E = Label.SOLVED, Label.ERROR


def solved(endpoint: str, body: dict) -> Reply:
    """Every verdict Solved (select_better_answer: the second answer shown); FAC: a Solved text."""
    if not body.get("tool_choice"):
        return Reply(text="Answer Status\nSolved\nReason\nfine")
    function = body["tool_choice"]["function"]["name"]
    verdict = {"reason": "fine", "index": 1} if function == "select_better_answer" else {
        "reason": "fine", "answer_status": "Solved"}
    return Reply(tool_calls=[{"id": "c1", "type": "function",
                              "function": {"name": function, "arguments": json.dumps(verdict)}}])


class Broken:
    """``fail_when`` of the stand-in: HTTP 500 for requests about the FAILING queries until ``mend()``."""

    def __init__(self, markers=FAILING):
        self.markers = markers
        self.broken = True

    def __call__(self, endpoint: str, body: dict) -> int | None:
        return 500 if self.broken and self.about(body) else None

    def about(self, body: dict) -> bool:
        return any(marker in json.dumps(body.get("messages")) for marker in self.markers)

    def mend(self) -> None:
        self.broken = False


def scripted_run(tmp_path: Path, name: str = "r") -> Path:
    Runner(RunConfig(name=name, out_root=str(tmp_path), backend="scripted"), progress=False).run()
    return tmp_path / name


def evaluate_args(run_dir: Path, judge: OpenAIStandin, cache: Path, *extra: str) -> list[str]:
    return ["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge.model, "--quiet",
            "--evaluate-times", "1", "--cache", str(cache), *FAST_RETRIES, *extra]


def redo_of(out: str) -> list[str]:
    """The argv of the printed redo command (`tba ...` after "redo them (...): ")."""
    line = next(line for line in out.splitlines() if line.strip().startswith("redo them ("))
    command = shlex.split(line.split("): ", 1)[1])
    assert command[0] == "tba"
    return command[1:]


def shown(run_dir: Path):
    """The evaluation tba table / report show (evaluations.py: the latest complete), else the latest."""
    return choose_evaluation(run_dir, fallback=True)[0]


def board_row(run_dir: Path, name: str) -> list[str]:
    table = (shown(run_dir).tables_dir / "leaderboard_sopr_upstream.md").read_text()
    line = next(line for line in table.splitlines() if line.startswith(f"| {name} "))
    return [cell.strip() for cell in line.strip("|").split("|")]


# ---- the preflight ---------------------------------------------------------------------------------------


def closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def command_inputs(tmp_path: Path, command: str) -> list[str]:
    """Valid input for each judging command (one answer file, or a run folder, or released labels)."""
    conv = tmp_path / "conv"
    for model in ("ref", "out"):
        (conv / model).mkdir(parents=True, exist_ok=True)
        (conv / model / "G1_instruction.json").write_text(json.dumps({"1": example("Q1", give_answer("a"))}))
    if command == "evaluate":
        return [str(scripted_run(tmp_path))]
    if command == "judge":
        return ["--converted", str(conv / "out" / "G1_instruction.json"), "--out", str(tmp_path / "out")]
    if command == "prefer":
        return ["--ref", str(conv / "ref" / "G1_instruction.json"), "--out-answers",
                str(conv / "out" / "G1_instruction.json"), "--out", str(tmp_path / "out")]
    steps, final = get_steps(example("Q1", give_answer("a")))
    write_label_files(tmp_path / "labels", "G1_instruction", "released", {"1": {
        "query": "Q1", "tool_names": ["Finish"], "answer_steps": steps, "final_step": final,
        "is_solved": {"0": S.stored()}}}, {})
    return ["--labels", str(tmp_path / "labels"), "--out", str(tmp_path / "out" / "audit.json")]


@pytest.mark.parametrize("command", ["evaluate", "judge", "prefer", "judge-audit"])
def test_an_unreachable_judge_is_refused_before_any_work(tmp_path, capsys, command):
    """Was: every judgement failed, SoPR 0.0 (SoWR all ties), exit 0."""
    args = [command, *command_inputs(tmp_path, command), "--judge-url", closed_port_url(), "--judge-model", "j"]
    args += ["--cache", str(tmp_path / "c.jsonl")] + (["--quiet"] if command == "evaluate" else ["--no-progress"])
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "cannot be reached" in err and "field '--judge-url'" in err and "fix: start the judge server" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "r" / "converted").exists()
    assert not (tmp_path / "c.jsonl").exists()


def test_a_judge_that_does_not_serve_the_model_is_refused_naming_the_served_ones(tmp_path, capsys):
    args = command_inputs(tmp_path, "judge")
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        assert main(["judge", *args, "--judge-url", judge.url, "--judge-model", "judge-b", "--no-cache"]) == 2
        assert judge.count() == 0 and not judge.probes  # refused from GET /models: nothing was asked
    err = capsys.readouterr().err
    assert "judge model 'judge-b' is not served at" in err and "fix: pass --judge-model judge-a" in err
    # a gateway without a model list that answers 404 for an unknown model: the one test request finds it
    with FaultyServer([404]) as gateway:
        assert main(["judge", *args, "--judge-url", gateway.url + "/v1", "--judge-model", "judge-b", "--no-cache"]) == 2
        assert gateway.count == 2  # GET /models, the test request; no judgement
    err = capsys.readouterr().err
    assert "did not answer a test request" in err and "HTTP 404" in err and "field '--judge-model'" in err
    assert not (tmp_path / "out").exists()


def test_the_preflight_sends_one_request_in_the_judges_own_shape(tmp_path, capsys):
    args = command_inputs(tmp_path, "judge")
    with OpenAIStandin(respond=solved) as judge:
        assert main(["judge", *args, "--judge-url", judge.url, "--judge-model", judge.model, "--no-cache",
                     "--evaluate-times", "1", "--no-progress"]) == 0
        [(endpoint, probe)] = judge.probes
        assert judge.count() == 1  # the one real judgement; the test request is not counted as one
    assert endpoint == "chat/completions" and probe["model"] == judge.model
    assert probe["tool_choice"]["function"]["name"] == "check_answer_status"  # the forced call the judging sends
    meta = json.loads((tmp_path / "out" / "G1_instruction_out.meta.json").read_text())
    assert meta["requests"] == 1


# ---- failed judgements: counted apart, exit 3, the redo ----------------------------------------------------


def test_failed_judgements_are_not_scored_exit_3_and_the_printed_command_redoes_only_them(tmp_path, capsys):
    """Was: exit 0 with 0.0 in the two groups whose judgements failed (the average 66.7 where every answer wins)."""
    run_dir = scripted_run(tmp_path)
    broken = Broken()
    with OpenAIStandin(respond=solved, fail_when=broken) as judge:
        args = evaluate_args(run_dir, judge, tmp_path / "cache.jsonl")
        capsys.readouterr()
        assert main(args) == 3
        out = capsys.readouterr().out
        assert "JUDGE FAILURES 2 of 6 judgements" in out and "HTTP 500" in out
        assert "never counted as Unsolved" in out and "no score files or tables written" in out
        # retried through the HTTP layer: each failed judgement was sent twice (--judge-option retries=2)
        assert sum(broken.about(body) for _, body in judge.requests) == 4
        assert not list((run_dir / "tables").rglob("leaderboard_*"))
        tool = read_label_file(shown(run_dir).eval_dir / "G1_tool_r.json")
        assert tool.labels == {"900004": {0: E}} and "HTTP 500" in tool.entries["900004"]["reasons"]["0"]
        assert not (shown(run_dir).eval_dir / "scores_G1_tool_r.json").exists()  # no score over a failed judgement
        assert (shown(run_dir).eval_dir / "scores_G1_instruction_r.json").exists()  # a whole group is scored
        redo = redo_of(out)
        assert redo == args  # the command as typed
        asked = judge.count()
        broken.mend()
        capsys.readouterr()
        assert main(redo) == 0
        assert judge.count() == asked + 2  # the cached verdicts were not asked again
    assert "JUDGE FAILURES" not in capsys.readouterr().out
    assert set(board_row(run_dir, "r (CoT@1)")[1:]) == {"100.0"}  # every group, and the average


def test_score_anyway_writes_the_table_marked_with_the_failed_judgements_left_out(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(respond=solved, fail_when=Broken()) as judge:
        capsys.readouterr()
        assert main(evaluate_args(run_dir, judge, tmp_path / "cache.jsonl", "--score-anyway")) == 3
    out = capsys.readouterr().out
    assert "scores written anyway (--score-anyway)" in out
    cells = board_row(run_dir, "r (CoT@1) †")
    # I1 Tool (G1_tool) and I2 Cat (G2_category) have no verdict: no cell, not 0.0; the average says so
    assert cells[1:] == ["100.0", "100.0", "–", "–", "100.0", "100.0", "100.0*"]
    table = (shown(run_dir).tables_dir / "leaderboard_sopr_upstream.md").read_text()
    assert "† r (CoT@1): scored with 2 of 6 judgements failed (no verdict): left out of every denominator" in table


@needs_ray
def test_under_ray_failed_judgements_exit_3_and_the_redo_completes(tmp_path, ray_cluster, capsys):
    run_dir = scripted_run(tmp_path)
    broken = Broken()
    with OpenAIStandin(respond=solved, fail_when=broken) as judge:
        args = evaluate_args(run_dir, judge, tmp_path / "cache.jsonl", "--executor", "ray", "--concurrency", "2")
        capsys.readouterr()
        assert main(args) == 3
        out = capsys.readouterr().out
        assert "JUDGE FAILURES 2 of 6 judgements" in out
        assert sum(broken.about(body) for _, body in judge.requests) == 4  # the workers retried them too
        assert not list((run_dir / "tables").rglob("leaderboard_*"))
        asked = judge.count()
        broken.mend()
        assert main(redo_of(out)) == 0
        assert judge.count() == asked + 2
    assert set(board_row(run_dir, "r (CoT@1)")[1:]) == {"100.0"}


def test_tba_judge_exits_3_without_a_score_file_and_its_redo_completes(tmp_path, capsys):
    converted = tmp_path / "conv" / "m" / "G1_instruction.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({"1": example("Q1 fine", give_answer("a")),
                                     "2": example("Q2 chickpeas", give_answer("b")),
                                     "3": example("Q3 fine", give_answer("c"))}))
    out_dir = tmp_path / "labels"
    broken = Broken()
    with OpenAIStandin(respond=solved, fail_when=broken) as judge:
        args = ["judge", "--converted", str(converted), "--out", str(out_dir), "--judge-url", judge.url,
                "--judge-model", judge.model, "--cache", str(tmp_path / "c.jsonl"), "--no-progress", *FAST_RETRIES]
        assert main(args) == 3
        out = capsys.readouterr().out
        assert "JUDGE FAILURES 3 of 9 judgements" in out and "SoPR upstream" not in out
        assert not (out_dir / "scores_G1_instruction_m.json").exists()
        assert read_label_file(out_dir / "G1_instruction_m.json").labels["2"] == {0: E, 1: E, 2: E}
        asked = judge.count()
        broken.mend()
        assert main(redo_of(out)) == 0
        assert judge.count() == asked + 3
    assert "SoPR upstream G1_instruction m: 100.0±0.0" in capsys.readouterr().out
    assert (out_dir / "scores_G1_instruction_m.json").exists()


def test_tba_prefer_leaves_a_failed_round_out_instead_of_counting_a_tie(tmp_path, capsys):
    conv = tmp_path / "conv"
    for model in ("ref", "out"):
        (conv / model).mkdir(parents=True)
        (conv / model / "G1_tool.json").write_text(json.dumps({
            "1": example("Q1 weather", give_answer(f"{model} a")), "2": example("Q2 chickpeas", give_answer(model))}))
    with OpenAIStandin(respond=solved, fail_when=Broken()) as judge:
        args = ["prefer", "--ref", str(conv / "ref" / "G1_tool.json"), "--out-answers", str(conv / "out" / "G1_tool.json"),
                "--out", str(tmp_path / "p"), "--judge-url", judge.url, "--judge-model", judge.model,
                "--evaluate-times", "1", "--no-cache", "--no-progress", *FAST_RETRIES]
        assert main(args) == 3
        out = capsys.readouterr().out
        assert "JUDGE FAILURES 1 of 2 rounds" in out and "never counted as ties" in out
        assert not (tmp_path / "p" / "scores_G1_tool_ref_out.json").exists()
        assert main([*args, "--score-anyway"]) == 3
    rows = rows_from_label_file(tmp_path / "p" / "G1_tool_ref_out.json")  # read back: the meta file names the failure
    for row in rows:
        assert (row.score.n, row.score.errors, row.score.ties) == (1, 1, 0)  # was n 2 with one tie


def test_tba_judge_fac_leaves_failed_judgements_out_and_exits_3(tmp_path, capsys):
    converted = tmp_path / "conv" / "m" / "G1_tool.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({"1": example("Q1 fine", give_answer("a")),
                                     "2": example("Q2 chickpeas", give_answer("b"))}))
    with OpenAIStandin(respond=solved, fail_when=Broken()) as judge:
        args = ["judge", "--metric", "fac", "--converted", str(converted), "--out", str(tmp_path / "o"),
                "--judge-url", judge.url, "--judge-model", judge.model, *FAST_RETRIES]
        assert main(args) == 3
        out = capsys.readouterr().out
        assert "JUDGE FAILURES 1 of 2 judgements" in out and not (tmp_path / "o" / "scores_fac_G1_tool_m.json").exists()
        assert main([*args, "--score-anyway"]) == 3
    assert "FAC upstream G1_tool m: 100.0" in capsys.readouterr().out  # was 50.0: the failure scored 0


def test_sopr_leaves_failed_judgements_out_of_numerator_and_denominator():
    labels = {"1": {0: S, 1: S}, "2": {0: E, 1: Label.UNSOLVED}, "3": {0: E, 1: E}}
    score = sopr(labels)
    # repeat 0: 1 of 1 judged; repeat 1: 1 of 2 judged; query 3 has no verdict at all
    assert score.runs == [100.0, 50.0] and score.errors == 3 and score.n == 2
    strict = sopr(labels, mode="strict", test_ids=["1", "2", "3", "4"])  # 4: no answer, Unsolved
    assert strict.runs == pytest.approx([50.0, 100 / 3]) and strict.missing == 1
    assert sopr({"1": {0: E}}).n == 0 and not sopr({"1": {0: E}}).runs


def test_tba_score_counts_failed_judgements_apart_and_writes_the_score_file_only_anyway(tmp_path, capsys):
    write_label_files(tmp_path / "labels", "G1_tool", "m", {
        "1": {"query": "Q1", "tool_names": [], "answer_steps": "", "final_step": "", "is_solved": {"0": S.stored()}},
        "2": {"query": "Q2", "tool_names": [], "answer_steps": "", "final_step": "", "is_solved": {"0": "JudgeError"}}},
        {})
    out = tmp_path / "scores.json"
    assert main(["score", str(tmp_path / "labels"), "--out", str(out)]) == 3
    printed = capsys.readouterr().out
    assert "SoPR upstream  G1_tool         m: 100.0 (n=1, 1 failed judgements left out" in printed  # was 50.0, n=2
    assert "JUDGE FAILURES 1 judgements without a verdict" in printed and not out.exists()
    assert main(["score", str(tmp_path / "labels"), "--out", str(out), "--score-anyway"]) == 3
    assert json.loads(out.read_text())["rows"][0]["score"]["errors"] == 1


# ---- an interrupted run ------------------------------------------------------------------------------------


def test_an_interrupted_run_is_named_scored_only_anyway_and_finished_by_its_own_command(tmp_path, capsys):
    """Was: the partial run scored without a word (or, with no steps.jsonl, "pass a folder written by tba run")."""
    run_dir = tmp_path / "cut"
    # a real tba run, slowed down (0.3 s per model call, 2 calls per query), killed once two queries are done
    command = ["run", "--name", "cut", "--out-root", str(tmp_path), "--backend", "scripted",
               "--backend-option", "delay_s=0.3", "--quiet"]
    process = subprocess.Popen([sys.executable, "-m", "runners.cli", *command], cwd=PROJECT_ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(2400):  # at most 2 minutes on a loaded machine; a poll, not a timing
            if len(list(run_dir.glob("G*/*_CoT@1.json"))) >= 2 or process.poll() is not None:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    answered = len(list(run_dir.glob("G*/*_CoT@1.json")))
    assert 2 <= answered < 6, "the run must have been killed part way"
    session = json.loads((run_dir / "manifest.json").read_text())["sessions"][-1]
    assert "finished" not in session and session["command"] == "tba " + shlex.join(command)
    missing = 6 - answered
    with OpenAIStandin(respond=solved) as judge:
        args = evaluate_args(run_dir, judge, tmp_path / "cache.jsonl")
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "the run was interrupted" in err and f"{missing} of 6 selected queries have no answer file" in err
        assert f"finish it with `{session['command']}`" in err and "--score-anyway" in err
        assert judge.count() == 0 and not judge.probes and not (run_dir / "converted").exists()
        assert main([*args, "--score-anyway"]) == 0
        table = (shown(run_dir).tables_dir / "leaderboard_sopr_upstream.md").read_text()
        assert f"† cut (CoT@1): scored with {missing} of 6 queries never run (the run was interrupted)" in table
        # the recorded command finishes it; then it is scored without a mark
        assert main(shlex.split(session["command"])[1:]) == 0
        assert len(list(run_dir.glob("G*/*_CoT@1.json"))) == 6
        assert main(args) == 0
    assert set(board_row(run_dir, "cut (CoT@1)")[1:]) == {"100.0"}


def test_an_interrupted_run_whose_query_files_moved_is_refused_without_a_count(tmp_path):
    import shutil

    stb = tmp_path / "stb"
    shutil.copytree(PROJECT_ROOT / "data" / "sample", stb)
    Runner(RunConfig(name="m", out_root=str(tmp_path), backend="scripted", stb_root=str(stb),
                     tool_root=str(stb / "toolenv" / "tools")), progress=False).run()
    run_dir = tmp_path / "m"
    shutil.rmtree(stb)  # the selection cannot be rebuilt here any more
    evaluate_run(run_dir, SolvedClient(), evaluate_times=1, cache_path=None, progress=False)  # a whole run: fine
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["sessions"][-1]["finished"]  # ...but its last session was killed
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="how many queries are missing is unknown"):
        evaluate_run(run_dir, SolvedClient(), evaluate_times=1, cache_path=None, progress=False)


def test_a_run_killed_before_its_manifest_is_named_so(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    (run_dir / "manifest.json").unlink()
    assert main(["evaluate", str(run_dir), "--judge-url", closed_port_url(), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "interrupted before it wrote manifest.json" in err and "rerun the tba run command" in err


class SolvedClient:
    """An in-process judge client: every answer Solved."""

    name = "solved"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, **_):
        return {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": tool_choice["function"]["name"], "arguments": json.dumps({"answer_status": "Solved"})}}]}
