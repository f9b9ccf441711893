"""Every make target, run from a fresh copy of the repository, as a new user's clone would run it.

The copy holds what git would commit (tracked files and untracked ones that are not ignored) in a temporary
folder: no ../shared beside it, no results/ of earlier runs, no data fetched. Nothing is reinstalled: VENV
points at the installed .venv (and `make -o` keeps its stamp from being remade), TBA_MODEL_CACHE at the
converted local model, PYTHONPATH at the copy so its own code runs. The settings that name upstream data
(TBA_STB_ROOT, TBA_TOOL_ROOT) are removed: they choose the query set, and pointing them at an empty folder
would be bad input (exit 2), not a missing ../shared; TBA_SHARED_ROOT, read by tests and benchmarks, points at
an empty folder. There is no network: HTTP(S)_PROXY is a closed loopback port (loopback itself is exempt),
Hugging Face is offline. The models are scripted or served by the OpenAI stand-in on loopback, which also judges.

Each target's default run must exit 0 with a non-empty result; a target that needs something from outside
(a network, vLLM) must exit non-zero naming it. A target in `make help` that is in neither CASES nor EXCLUDED
fails the test, so a new target is covered from the day it is added.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.openai_standin import OpenAIStandin, Reply

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)

# targets the test does not run, and why (each needs something a fresh clone cannot hold, or is run elsewhere)
EXCLUDED = {
    "test": "runs this very suite, and with E2E_VLLM=1 (its default) installs vLLM over the network",
    "vllm": "installs vLLM (3.4 GB) with pip: needs a network once",
    "e2e": "needs vLLM (make vllm) or a running engine (BASE_URL=... MODEL=...); tests/test_e2e_vllm.py runs it",
    "bench-engine": "needs vLLM (make vllm); minutes of engine start-up and load",
    "compare-structured": "a sweep of eight cells of the local model, four with --constrain schema, which the scripted "
                          "backend cannot take (about an hour on 2 cores); tests/test_sweep_specs.py runs its spec on "
                          "the scripted agent, tests/test_structured_compare.py and tests/test_structured_runs.py "
                          "cover the comparison and the flags",
    "e2e-light": "minutes of local-model generation and judging on 2 cores; tests/test_e2e_light.py runs the "
                 "same orchestrator with a smaller budget",
}
NEEDS_EXTERNAL = {"test", "vllm", "e2e", "bench-engine", "install", "data", "bench-report", "screenshot"}  # marked "[needs ...]"

REACT_FINISH = ('Thought: I can answer now.\nAction: Finish\nAction Input: {"return_type": "give_answer", '
                '"final_answer": "stand-in answer"}')
VERDICT = json.dumps({"reason": "stand-in verdict", "answer_status": "Solved"})


def standin_reply(endpoint: str, body: dict) -> Reply | str:
    """A ReAct model on /completions (it answers at once) and a judge on /chat/completions: a tool call to the
    function the judge asks for (tools mode), else the verdict as JSON text (json mode)."""
    if endpoint == "completions":
        return REACT_FINISH
    tools = body.get("tools") or []
    if tools:
        choice = body.get("tool_choice")
        name = choice["function"]["name"] if isinstance(choice, dict) else tools[0]["function"]["name"]
        call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": VERDICT}}
        return Reply(tool_calls=[call])
    return VERDICT


@pytest.fixture(scope="module")
def standin():
    with OpenAIStandin(respond=standin_reply) as server:
        yield server


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    if not shutil.which("make") or not shutil.which("git"):
        pytest.skip("make and git are needed to copy the repository and run its targets")
    if not (VENV / ".installed").exists():
        pytest.skip(f"no installed environment at {VENV} (run `make install`, then this test with its python)")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    root = tmp_path_factory.mktemp("fresh") / "clone"
    for name in filter(None, listed.stdout.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():  # a file deleted in the working tree but still tracked is not copied
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    assert not (root.parent / "shared").exists() and not (root / "results" / "runs").exists()
    return root


@pytest.fixture(scope="module")
def env(clone, tmp_path_factory) -> dict:
    from runners.models.local_model import default_cache_folder

    empty = tmp_path_factory.mktemp("empty-shared")
    values = {k: v for k, v in os.environ.items()
              if not k.startswith("TBA_") and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "OPENAI_API_KEY")}
    values.update(PYTHONPATH=str(clone), TBA_SHARED_ROOT=str(empty), TBA_MODEL_CACHE=str(default_cache_folder()),
                  HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9",
                  https_proxy="http://127.0.0.1:9", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
                  HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TBA_HF_THREADS="1")
    return values


def make(clone: Path, env: dict, *arguments: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """make ARGUMENTS (targets, flags, VAR=value) in the copy, with the installed environment kept as it is."""
    command = ["make", "-o", f"{VENV}/.installed", f"VENV={VENV}", *arguments]
    return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def judge_vars(standin: OpenAIStandin) -> list[str]:
    return [f"JUDGE_URL={standin.url}", f"JUDGE_MODEL={standin.model}", "EVAL_TIMES=1"]


@pytest.fixture(scope="module")
def scripted_eval(clone, env, standin) -> subprocess.CompletedProcess:
    """`make eval` with the scripted model (the local model takes minutes) and the stand-in judge."""
    return make(clone, env, "eval", "BACKEND=scripted", *judge_vars(standin))


def help_targets(clone: Path, env: dict) -> dict[str, str]:
    lines = ok(make(clone, env, "help")).splitlines()
    return {m.group(1): m.group(2) for line in lines if (m := re.match(r"^  ([a-z0-9-]+)\s+(.*)$", line))}


# ---------------------------------------------------------------- one check per target


def check_help(clone, env, standin):
    targets = help_targets(clone, env)
    assert {"eval", "reproduce", "compare-parsers", "report", "bench-parsers"} <= set(targets)
    for target in NEEDS_EXTERNAL:
        assert "[needs" in targets[target], f"{target} is not marked: {targets[target]}"
    assert "../shared" not in (clone / "Makefile").read_text()


def check_install(clone, env, standin):
    ok(make(clone, env, "install"))
    assert (VENV / ".installed").exists()


def check_lint(clone, env, standin):
    assert "All checks passed" in ok(make(clone, env, "lint"))


def check_reproduce(clone, env, standin):
    out = ok(make(clone, env, "reproduce"))
    assert "3 queries of G1_instruction" in out and "published cells" in out
    assert re.search(r"virtual_chatgpt_cot\s+G1_instruction\s+66\.7", out)


def check_compare_parsers(clone, env, standin):
    """Before any run: the shipped corpus of real outputs."""
    assert not (clone / "results" / "runs").exists()
    out = ok(make(clone, env, "compare-parsers"))
    assert "data/parser_corpus/react_outputs.jsonl" in make(clone, env, "-n", "compare-parsers").stdout
    assert re.search(r"react-robust\s+read a call\s+\d+\s+parsed\s+\d+/\d+", out)
    assert (clone / "results" / "parser_comparison" / "summary.md").stat().st_size > 0


def check_bench_parsers(clone, env, standin):
    out = ok(make(clone, env, "bench-parsers", "BENCH_ARGS=--repeats 2"))
    assert "data/parser_corpus/react_outputs.jsonl" in out and "ratio react-robust/react-find" in out


def check_bench_parsers_adversarial(clone, env, standin):
    out = ok(make(clone, env, "bench-parsers-adversarial", "BENCH_ARGS=--sizes 2000 --timeout 20"))
    assert "react-robust" in out


def check_bench_published(clone, env, standin):
    out = ok(make(clone, env, "bench-published", "BENCH_ARGS=--rows 300 --megabytes 0.2 --timeout 120"))
    assert re.search(r"\d+ s", out) and "MiB" in out, out[-2000:]


def check_eval(clone, env, standin, scripted_eval):
    out = ok(scripted_eval)
    assert re.search(r"\| eval-scripted-CoT1[^|]*\| 100\.0", out), out[-2000:]
    assert any((clone / "results" / "runs" / "eval-scripted-CoT1" / "tables").rglob("taxonomy.md"))


def check_compare_parsers_after_eval(clone, env, standin, scripted_eval):
    """After `make eval`: that run's recorded outputs (same variables, so the same RUN)."""
    ok(scripted_eval)
    assert "results/runs/eval-scripted-CoT1" in make(clone, env, "-n", "compare-parsers", "BACKEND=scripted").stdout
    out = ok(make(clone, env, "compare-parsers", "BACKEND=scripted", "PARSER_OUT=results/parser_comparison_run"))
    assert re.search(r"openai-tools\b.*\b12/12\b", out), out


def check_report(clone, env, standin, scripted_eval):
    ok(scripted_eval)
    ok(make(clone, env, "report", "BACKEND=scripted"))
    page = clone / "results" / "runs" / "eval-scripted-CoT1" / "report.html"
    assert page.stat().st_size > 10_000 and "eval-scripted-CoT1" in page.read_text(encoding="utf-8")


def check_docs(clone, env, standin):
    ok(make(clone, env, "docs", timeout=600))
    assert (clone / "site" / "index.html").is_file()
    assert "tba run" in (clone / "site" / "reference" / "cli.html").read_text(encoding="utf-8")


def check_screenshot(clone, env, standin, scripted_eval):
    """The README's picture from the eval's run (the scripted one here) in headless Chromium; without Chromium
    the command fails naming it."""
    ok(scripted_eval)
    shot = clone / "results" / "shot.png"
    args = ("screenshot", "BACKEND=scripted", *judge_vars(standin), f"SCREENSHOT={shot}")
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        done = make(clone, env, *args)
        assert done.returncode != 0 and "chromium" in (done.stdout + done.stderr).lower()
        return
    out = ok(make(clone, env, *args))
    assert "written:" in out and shot.read_bytes().startswith(b"\x89PNG")


def check_report_before_eval(clone, env, standin):
    """The defaults name the hf eval's folder, which nothing here writes: a new user's `make report` before
    `make eval`. Exit 2 with what to run first, not only `tba run`'s "pass a folder written by tba run"."""
    done = make(clone, env, "report")
    assert done.returncode == 2, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "REPORT_RUN='results/runs/eval-hf-CoT1@constrain-schema': run folder not found" in done.stderr, done.stderr
    assert "run `make eval` first" in done.stderr and "REPORT_RUN=DIR" in done.stderr, done.stderr
    assert not (clone / "results" / "runs" / "eval-hf-CoT1@constrain-schema").exists()


def check_compare_parsers_live(clone, env, standin):
    """The parser sweep (runners/sweeps/compare-parsers-live.yaml) with a served model (the stand-in on loopback
    answering ReAct text) instead of the local one; the stand-in is the judge too, so it judges itself: JUDGE=self
    (without it make stops, tests/test_self_judge.py)."""
    out = ok(make(clone, env, "compare-parsers-live", "BACKEND=openai-completions", f"BASE_URL={standin.url}",
                  f"MODEL={standin.model}", "JUDGE=self", "EVAL_TIMES=1"))
    assert re.search(r"react-robust[^\n]*100\.0%", out), out[-2000:]
    assert (clone / "results" / "parser_comparison_live" / "summary.md").is_file()
    # the sweep's matrix and the comparison, not each evaluation's leaderboards and file lists (issue 29 item 6)
    assert "react-robust vs react-find: trajectories differ on" in out, out[-2000:]
    assert "ΔSoPR vs react-find (95% CI)" in out, out[-2000:]
    for marker in ("**SoPR (upstream)", "**SoPR (strict)", "| Method | I1 Inst", "**Error taxonomy of",
                   "\nevaluation: ", "\nwritten: "):
        assert marker not in out, f"{marker!r} printed by make compare-parsers-live:\n{out[-3000:]}"
    state = json.loads((clone / "results" / "sweeps" / "parsers-live" / "sweep.json").read_text(encoding="utf-8"))
    assert [(c["name"], c["state"]) for c in state["cells"]] == [("react-find", "done"), ("react-robust", "done")]
    for cell in state["cells"]:  # each cell judged by the one judge, its leaderboards in its own run folder
        [evaluation] = cell["evaluations"].values()
        tables = clone / "results" / "sweeps" / "parsers-live" / cell["name"] / "tables" / evaluation
        assert (tables / "leaderboard_sopr_upstream.md").is_file()


def check_sweep(clone, env, standin):
    """The shipped demo spec (runners/sweeps/demo.yaml: the scripted agent, 2 methods x 2 parsers): its plan with the
    default judge, then run with the stand-in judging (SWEEP_ARGS), twice: the second run has nothing to do."""
    planned = ok(make(clone, env, "sweep", "SWEEP_ARGS=--dry-run"))
    assert "4 cells (method 2 x parser 2)" in planned and "judge smollm2-135m" in planned, planned[-2000:]
    judge = f"--judge-url {standin.url} --judge-model {standin.model} --evaluate-times 1"
    out = ok(make(clone, env, "sweep", f"SWEEP_ARGS={judge} --name demo-standin --quiet"))
    assert "4 cells: 4 done (4 ran now, 0 done before), 0 failed" in out, out[-2000:]
    assert (clone / "results" / "sweeps" / "demo-standin" / "matrix.md").is_file()
    again = ok(make(clone, env, "sweep", f"SWEEP_ARGS={judge} --name demo-standin --quiet"))
    assert "4 done (0 ran now, 4 done before)" in again, again[-2000:]


def check_serve(clone, env, standin):
    command = ["make", "-o", f"{VENV}/.installed", "serve", f"VENV={VENV}", "PORT=0", "CACHE=results/serve_cache"]
    server = subprocess.Popen(command, cwd=clone, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url = None
        for line in server.stdout:
            if found := re.search(r"serving (http://127\.0\.0\.1:\d+)/virtual", line):
                url = found.group(1)
                break
        assert url, f"make serve printed no URL (exit {server.poll()})"
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{url}/health", timeout=30) as reply:
            assert reply.status == 200 and reply.read()
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # make and the server it started: the group this test created
        server.wait(timeout=30)


def check_bench_runner(clone, env, standin):
    out = ok(make(clone, env, "bench-runner", "BENCH_ARGS=--queries 6 --concurrency 2 --executors threads "
                  "--no-endpoints --model-delay-ms 5 --server-delay-ms 5"))
    assert re.search(r"threads\s+2\s+[\d.]+", out), out


def check_bench_http(clone, env, standin):
    out = ok(make(clone, env, "bench-http", "BENCH_ARGS=--calls 20"))
    assert re.search(r"post_json lean\s+\d+", out) and re.search(r"post_json requests\s+\d+", out), out


def check_bench_server(clone, env, standin):
    out = ok(make(clone, env, "bench-server", "BENCH_ARGS=--seconds 0.5 --apis 2 --entries 5 --threads 2"))
    assert "req/s" in out


def check_profile_server(clone, env, standin):
    out = ok(make(clone, env, "profile-server", "BENCH_ARGS=--seconds 1 --apis 2 --entries 5 --threads 2"))
    assert "req/s" in out and "own %" in out and "0 wrong answers" in out, out


def check_profile_runner(clone, env, standin):
    out = ok(make(clone, env, "profile-runner", "BENCH_ARGS=--queries 6 --concurrency 2 --idle --model-delay-ms 5 "
                  "--server-delay-ms 5"))
    assert "CPU per query" in out and "own %" in out and "incl %" in out, out


def check_bench_fanout(clone, env, standin):
    out = ok(make(clone, env, "bench-fanout", "BENCH_ARGS=--model-delay-ms 0"))
    assert re.search(r"^ 2\s+react-find", out, re.M), out


def check_bench_sweep(clone, env, standin):
    out = ok(make(clone, env, "bench-sweep", "BENCH_ARGS=--tool-turns 1 --model-delay-ms 5 --no-sequential"))
    assert re.search(r"model calls\s+96\s+utilisation \d+%", out) and "goal (sweep)" in out, out


def check_bench_trials(clone, env, standin):
    out = ok(make(clone, env, "bench-trials", "BENCH_ARGS=--sweeps 100 --queries 40 --trials 1 3 --resamples 500"))
    assert re.search(r"^\s+40\s+3\s+\d+\.\d%", out, re.M) and "lowest coverage" in out, out


def check_model(clone, env, standin):
    ok(make(clone, env, "model", timeout=600))
    assert Path(env["TBA_MODEL_CACHE"]).is_dir()


def check_bench_hf(clone, env, standin):
    out = ok(make(clone, env, "bench-hf", "BENCH_ARGS=--repeats 1 --tokens 4", timeout=600))
    assert "tokens/s" in out


def check_bench_report(clone, env, standin):
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        done = make(clone, env, "bench-report", "BENCH_ARGS=--queries 3 --repeats 1")
        assert done.returncode != 0 and "chromium" in done.stdout + done.stderr
        return
    out = ok(make(clone, env, "bench-report", "BENCH_ARGS=--queries 3 --repeats 1"))
    assert "rendered" in out


def check_data(clone, env, standin):
    """Refreshes the shipped query files, so it needs a network: offline it exits 2 naming the network, and the
    shipped files stay as they are (every download is checked before any file is replaced)."""
    from toolbench_adapter.protocol.query_files import QUERY_FILE_SHA256

    done = make(clone, env, "data", timeout=120)
    assert done.returncode == 2 and "network" in done.stderr, done.stderr[-2000:]
    for rel, digest in QUERY_FILE_SHA256.items():
        assert hashlib.sha256((clone / "data" / "stabletoolbench" / rel).read_bytes()).hexdigest() == digest, rel


def check_doctor(clone, env, standin):
    """Nothing beside the clone: the shipped queries are StableToolBench's; the cache, a simulator for misses and
    the judge are missing, each with how to get it, and the command fails."""
    done = make(clone, env, "doctor", timeout=120)
    assert done.returncode != 0, done.stdout
    for line in ("OK       query files", "MISSING  response cache", "MISSING  simulator", "MISSING  judge"):
        assert line in done.stdout, done.stdout


def check_clean(clone, env, standin):
    (clone / ".pytest_cache").mkdir(exist_ok=True)
    ok(make(clone, env, "clean"))
    assert not (clone / ".pytest_cache").exists() and (clone / "results").is_dir()


CASES = {
    "help": check_help, "install": check_install, "lint": check_lint, "reproduce": check_reproduce,
    "compare-parsers": check_compare_parsers, "bench-parsers": check_bench_parsers,
    "bench-parsers-adversarial": check_bench_parsers_adversarial, "eval": check_eval,
    "compare-parsers (after eval)": check_compare_parsers_after_eval, "report": check_report,
    "report (before eval)": check_report_before_eval, "docs": check_docs, "screenshot": check_screenshot,
    "compare-parsers-live": check_compare_parsers_live, "sweep": check_sweep, "serve": check_serve,
    "bench-runner": check_bench_runner, "bench-http": check_bench_http, "bench-server": check_bench_server,
    "profile-server": check_profile_server, "profile-runner": check_profile_runner, "bench-fanout": check_bench_fanout,
    "bench-sweep": check_bench_sweep, "bench-trials": check_bench_trials, "model": check_model,
    "bench-hf": check_bench_hf, "bench-report": check_bench_report, "data": check_data, "doctor": check_doctor,
    "bench-published": check_bench_published,
    "clean": check_clean,
}


@pytest.mark.parametrize("case", list(CASES))
def test_target_from_a_fresh_clone(case, clone, env, standin, request):
    check = CASES[case]
    extra = {"scripted_eval": request.getfixturevalue("scripted_eval")} \
        if "scripted_eval" in check.__code__.co_varnames[:check.__code__.co_argcount] else {}
    check(clone, env, standin, **extra)


def test_every_help_target_is_run_or_excluded_with_a_reason(clone, env):
    targets = set(help_targets(clone, env))
    covered = {case.split(" ")[0] for case in CASES} | set(EXCLUDED)
    assert targets - covered == set(), f"targets neither run here nor excluded with a reason: {targets - covered}"
    assert set(EXCLUDED) <= targets and all(EXCLUDED.values())
