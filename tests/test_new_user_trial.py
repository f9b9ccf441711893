"""Issue 41, a new user's trial (fresh clone, README in order): the judge's settings are checked before the model
loads and a given JUDGE_URL means a served judge; every fix line names what works for this run (make eval's own
run is judged as make eval judges it, --judge-backend hf), and to a make user in make's words (RUN=, JUDGE_URL=)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import runners.models.local_model as local_model
from runners.cli import main
from runners.cli.make_hints import ENV, for_make, make_variables
from runners.config import RunConfig
from runners.execution.runner import Runner

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SMOLLM2 = "runners/configs/smollm2.yaml"
needs_make = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")



def make_dry(*arguments: str) -> subprocess.CompletedProcess:
    """`make -n` in the project: the commands make would run (nothing runs, the install neither)."""
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "-n", *arguments], cwd=PROJECT_ROOT, env=base, capture_output=True, text=True,
                          timeout=60)


# ---- JUDGE_URL means a served judge, and every judge setting is checked before the model loads ------------------


@needs_make
def test_a_judge_url_given_to_make_eval_means_an_openai_judge():
    """Was: JUDGE_BACKEND stayed hf on the default backend and JUDGE_URL was ignored."""
    given = make_dry("eval", "RUN=x", "GROUPS=G1_instruction", "JUDGE_URL=http://127.0.0.1:9999/v1",
                     "JUDGE_MODEL=gpt-4o").stdout
    assert "--judge-backend=openai" in given and "--judge-url=http://127.0.0.1:9999/v1" in given
    assert "--judge-backend=hf" in make_dry("eval").stdout  # the offline default keeps its local judge


def eval_args(tmp_path, *judge: str) -> list[str]:
    return ["eval", "--name", "x", "--out-root", str(tmp_path / "runs"), "--backend", "hf", "--config", SMOLLM2,
            "--tool-root", "data/sample/toolenv/tools", "--groups", "G1_instruction", *judge]


@pytest.mark.parametrize("check_only", [True, False])
def test_an_hf_judge_given_a_url_is_refused_before_the_model_loads(tmp_path, capsys, no_model_load, check_only):
    """Was: the model ran first, then "field 'model': 'gpt-4o' is not a local model folder"; --check-only said
    every check passed."""
    argv = eval_args(tmp_path, "--judge-backend", "hf", "--judge-url", "http://127.0.0.1:9999/v1", "--judge-model",
                     "gpt-4o") + (["--check-only"] if check_only else [])
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "every check passed" not in captured.out
    assert "field '--judge-backend': --judge-url is given, but --judge-backend hf judges with a local model" in \
        captured.err
    assert "fix: pass --judge-backend openai to judge at that URL" in captured.err
    assert no_model_load == [] and not (tmp_path / "runs").exists()


def test_an_hf_judge_named_as_a_served_model_is_refused_naming_judge_model(tmp_path, capsys, no_model_load):
    assert main(eval_args(tmp_path, "--judge-backend", "hf", "--judge-model", "gpt-4o", "--check-only")) == 2
    err = capsys.readouterr().err
    assert "field '--judge-model': --judge-backend hf: 'gpt-4o' is not a local model folder" in err
    assert "--judge-backend openai --judge-url URL --judge-model NAME" in err
    assert no_model_load == []


def test_a_judge_url_that_answers_nothing_is_said_before_the_model_loads(tmp_path, capsys, no_model_load):
    """The issue's `make eval RUN=x GROUPS=G1_instruction JUDGE_URL=... JUDGE_MODEL=gpt-4o`, as make now runs it."""
    assert main(eval_args(tmp_path, "--judge-backend", "openai", "--judge-url", "http://127.0.0.1:9/v1",
                          "--judge-model", "gpt-4o")) == 2
    assert "cannot be reached" in capsys.readouterr().err
    assert no_model_load == [] and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("judge,needle", [
    (["--judge-backend", "hf", "--evaluator", "bogus"], "evaluator 'bogus' not found"),
    (["--judge-backend", "hf", "--judge-mode", "tools"], "the local judge takes no tools"),
    (["--judge-backend", "hf", "--judge-mode", "tools", "--judge-constrain"], "--judge-constrain with --judge-mode tools"),
])
def test_every_judge_setting_is_checked_before_the_model_loads(tmp_path, capsys, no_model_load, judge, needle):
    """An evaluator that does not exist, a mode the judge cannot do: found after the run before, now first."""
    assert main(eval_args(tmp_path, *judge, "--check-only")) == 2
    captured = capsys.readouterr()
    assert needle in captured.err and "every check passed" not in captured.out
    assert no_model_load == []


def test_a_judge_constrain_the_served_judge_cannot_take_is_said_before_the_run(tmp_path, capsys):
    from tests.openai_standin import OpenAIStandin
    from tests.test_judge_failures import solved

    with OpenAIStandin(models=("j",), respond=solved) as judge:  # not vLLM, lists no structured_outputs
        assert main(["eval", "--name", "r", "--out-root", str(tmp_path / "runs"), "--backend", "scripted",
                     "--judge-url", judge.url, "--judge-model", "j", "--judge-constrain", "--check-only"]) == 2
        assert judge.count() == 0
    assert "--judge-constrain: the judge at" in capsys.readouterr().err


# ---- the fix loop: every suggestion works for the run it is about ---------------------------------------------


def local_run(tmp_path: Path) -> Path:
    """A finished run whose manifest reads as make eval's (backend hf, the default local model): a scripted run of
    one query with its manifest's backend set so (the local model is not needed to make one)."""
    Runner(RunConfig(name="eval-hf", out_root=str(tmp_path), backend="scripted", groups=["G1_instruction"]),
           progress=False).run()
    path = tmp_path / "eval-hf" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["backend"] = manifest["config"]["backend"] = "hf"
    manifest["model"] = manifest["config"]["model"] = None
    manifest.pop("weights", None)
    path.write_text(json.dumps(manifest))
    return tmp_path / "eval-hf"


def test_evaluate_on_make_evals_run_suggests_the_judge_make_eval_uses(tmp_path, capsys, monkeypatch):
    """Was: --judge-url or --judge-self; --judge-self then said the run "asked no model endpoint", and neither
    named --judge-backend hf."""
    monkeypatch.delenv("TBA_JUDGE_URL", raising=False)
    run_dir = local_run(tmp_path)
    capsys.readouterr()
    assert main(["evaluate", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "fix: judge it as make eval does, --judge-backend hf" in err
    assert "--judge-backend hf --judge-self" in err and "--judge-url URL --judge-model NAME" in err
    assert main(["evaluate", str(run_dir), "--judge-self", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "asked no model endpoint (backend hf)" in err
    assert "fix: its model is local: let it judge in this process, --judge-backend hf --judge-self" in err


def test_a_run_without_an_endpoint_suggests_a_judge_of_its_own_or_the_local_one(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TBA_JUDGE_URL", raising=False)
    Runner(RunConfig(name="s", out_root=str(tmp_path), backend="scripted", groups=["G1_instruction"]),
           progress=False).run()
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "s"), "--judge-self", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--judge-url URL --judge-model NAME" in err and "--judge-backend hf (SmolLM2-135M" in err


@pytest.mark.skipif(not local_model.is_converted(local_model.default_cache_folder()),
                    reason="the local SmolLM2 is not converted here (make model converts it, ~30 s, offline)")
@pytest.mark.parametrize("flags", [["--judge-backend", "hf"], ["--judge-backend", "hf", "--judge-self"]])
def test_each_suggested_judge_judges_make_evals_run(tmp_path, capsys, flags):
    """The suggestions are commands that work: the local judge (a pipeline check) and the run's own local model."""
    run_dir = local_run(tmp_path)
    code = main(["evaluate", str(run_dir), *flags, "--evaluate-times", "1", "--quiet",
                 "--cache", str(tmp_path / "c.jsonl")])
    out = capsys.readouterr().out
    assert code in (0, 3), out  # 3: the 135M judge gave no usable verdict (counted); never exit 2
    assert "evaluation: SmolLM2-135M-Instruct@local-json-x1" in out


# ---- make's words to a make user -------------------------------------------------------------------------------


MAKEFILE_HINTS = ("--name=RUN --backend=BACKEND --judge-url=JUDGE_URL --judge-model=JUDGE_MODEL "
                  "--judge-backend=JUDGE_BACKEND --judge-self=JUDGE=self --evaluate-times=EVAL_TIMES")


def test_flags_become_make_variables_and_tba_commands_stay_as_typed():
    variables = make_variables({ENV: MAKEFILE_HINTS})
    assert variables["--name"] == "RUN" and variables["--judge-self"] == "JUDGE=self"
    assert for_make("choose another --name, or delete that folder", variables) == \
        "choose another RUN, or delete that folder"
    assert for_make("pass --judge-url http://h:8000/v1 --judge-model NAME (its key: --judge-api-key)", variables) == \
        "pass JUDGE_URL=http://h:8000/v1 JUDGE_MODEL=NAME (its key: --judge-api-key)"
    assert for_make("pass --judge-url with an endpoint, or --judge-self to let it", variables) == \
        "pass JUDGE_URL with an endpoint, or JUDGE=self to let it"
    assert for_make("write e.g. --evaluate-times 3; rerun: tba eval --name x --judge-self", variables) == \
        "write e.g. EVAL_TIMES=3; rerun: tba eval --name x --judge-self"
    assert for_make("--judge-backend hf", variables) == "JUDGE_BACKEND=hf"
    assert make_variables({}) == {} and for_make("--name x", {}) == "--name x"


@needs_make
def test_the_makefile_names_a_make_variable_for_each_flag_of_make_eval():
    """The map the Makefile hands tba names a variable the Makefile has, for every flag make eval passes."""
    text = (PROJECT_ROOT / "Makefile").read_text()
    printed = make_dry("eval", "BACKEND=scripted", "JUDGE_URL=http://127.0.0.1:9/v1", "JUDGE_MODEL=j",
                       "GROUPS=G1_tool", "MODEL=m", "PARSER=react-find", "JUDGE=self").stdout
    command = next(line for line in printed.splitlines() if " eval " in line)
    flags = {word.split("=")[0] for word in command.split() if word.startswith("--")}
    hints = text.split("MAKE_HINTS   =", 1)[1].split("\ndata eval", 1)[0].replace("\\\n", " ")
    variables = make_variables({ENV: hints})
    assert flags - {"--tool-root"} <= set(variables), flags - set(variables)  # --tool-root: no variable sets it
    for variable in variables.values():
        assert f"{variable.split('=')[0]} " in text or f"{variable.split('=')[0]}=" in text


def test_under_make_a_range_error_names_the_make_variable(capsys, monkeypatch):
    monkeypatch.setenv(ENV, MAKEFILE_HINTS)
    assert main(["eval", "--evaluate-times", "1000000"]) == 2
    err = capsys.readouterr().err
    assert "field 'evaluate_times (EVAL_TIMES)'" in err and "e.g. EVAL_TIMES=3" in err
    monkeypatch.delenv(ENV)
    assert main(["eval", "--evaluate-times", "1000000"]) == 2
    assert "e.g. --evaluate-times 3" in capsys.readouterr().err
