"""`tba run` configures its embedded server's `llm` / `mirrorapi` simulator (the follow-up to issue 40): the flags
`tba serve` has, from ONE definition shared by serve, run / eval / serve-tools and doctor; RunConfig settings that are
part of the run's identity (a rerun asking another simulator model is refused like another model) and that a config
file or a sweep spec sets too. Loopback fakes: an OpenAI-compatible stand-in as the simulator's endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners.cli import build_parser, main
from runners.config import RunConfig, load_yaml
from runners.config.run_config import settings_problems
from tests.openai_standin import OpenAIStandin

SIMULATED = '{"error": "", "response": {"simulated": "by the stand-in"}}'
SIMULATOR_FLAGS = ("--simulator", "--llm-base-url", "--llm-model", "--llm-api-key-env", "--llm-temperature",
                   "--mirror-system-prompt")


def actions(command: str) -> dict:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[command]
    return {option: action for action in sub._actions for option in action.option_strings}


def described(action) -> tuple:
    kind = getattr(action.type, "words", None)  # a range (runners/cli/ranges.py): compared by what it takes
    return action.dest, action.help, kind() if kind else action.type, action.metavar, action.default, action.choices


@pytest.mark.parametrize("command", ["run", "eval", "serve-tools", "doctor"])
def test_serve_and_every_run_command_take_the_same_simulator_flags(command):
    serve, other = actions("serve"), actions(command)
    shared = [flag for flag in SIMULATOR_FLAGS if flag in other]
    expected = set(SIMULATOR_FLAGS) - ({"--llm-temperature"} if command == "doctor" else set())
    assert set(shared) == expected, command  # doctor sends no simulation request: no temperature to take
    for flag in shared:
        assert described(other[flag]) == described(serve[flag]), (command, flag)


def test_the_simulator_flags_are_defined_once():
    """No copied argparse code: the --llm-* flags are added in one place only."""
    sources = [p for p in Path("runners").rglob("*.py") if "add_argument(\"--llm-model\"" in p.read_text()
               or "add_argument('--llm-model'" in p.read_text()]
    assert sources == [Path("runners/cli/commands/_common.py")], sources


def llm_endpoint(**kwargs) -> OpenAIStandin:
    return OpenAIStandin(models=("gpt-4-turbo",), chat=[SIMULATED], **kwargs)


def run_args(tmp_path: Path, name: str, *extra: str) -> list[str]:
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--stb-root",
            "data/sample", "--quiet", *extra]


def test_tba_run_answers_misses_with_the_llm_simulator_it_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMULATOR_KEY", "sk-test")
    with llm_endpoint() as endpoint:
        code = main(run_args(tmp_path, "llm", "--simulator", "llm", "--llm-base-url", endpoint.url,
                             "--llm-model", "gpt-4-turbo", "--llm-api-key-env", "SIMULATOR_KEY",
                             "--llm-temperature", "0.25", "--cache-dir", str(tmp_path / "cache")))
        bodies = endpoint.bodies("chat/completions")
    assert code == 0
    assert bodies and {b["model"] for b in bodies} == {"gpt-4-turbo"} and {b["temperature"] for b in bodies} == {0.25}
    manifest = json.loads((tmp_path / "llm" / "manifest.json").read_text())
    assert manifest["config"]["llm_model"] == "gpt-4-turbo" and manifest["config"]["llm_temperature"] == 0.25
    steps = [json.loads(line) for line in (tmp_path / "llm" / "steps.jsonl").read_text().splitlines()]
    assert {s["source"] for s in steps if s.get("call") != "Finish" and s.get("source") != "finish"} == {"simulator:llm"}
    saved = [json.loads(p.read_text()) for p in (tmp_path / "cache" / "_simulated").rglob("*.json")]
    assert saved and all(a["response"] == {"simulated": "by the stand-in"} for entries in saved for a in entries.values())


def test_a_config_file_and_a_sweep_spec_set_the_simulator(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("simulator: llm\nllm_model: gpt-4-turbo\nllm_base_url: https://api.openai.com/v1\n"
                    "llm_api_key_env: MY_KEY\nllm_temperature: 0\n")
    settings = load_yaml(path)
    cfg = RunConfig(**settings)
    assert (cfg.llm_model, cfg.llm_base_url, cfg.llm_api_key_env, cfg.llm_temperature) == (
        "gpt-4-turbo", "https://api.openai.com/v1", "MY_KEY", 0)
    assert settings_problems({"simulator": "llm", "llm_model": "gpt-4-turbo"}, in_file=True) == []  # a spec's base


def test_a_rerun_asking_another_simulator_model_is_refused(tmp_path, capsys):
    with llm_endpoint() as endpoint:
        common = ["--simulator", "llm", "--llm-base-url", endpoint.url, "--limit", "1"]
        assert main(run_args(tmp_path, "r", *common, "--llm-model", "gpt-4-turbo")) == 0
        capsys.readouterr()
        assert main(run_args(tmp_path, "r", *common, "--llm-model", "gpt-4-turbo-preview")) == 2
    err = capsys.readouterr().err
    assert "holds a different run" in err and "llm_model: 'gpt-4-turbo' -> 'gpt-4-turbo-preview'" in err


@pytest.mark.parametrize(("extra", "words"), [
    (["--simulator", "llm"], "the llm simulator asks a model: --llm-model is not given"),
    (["--llm-model", "gpt-4-turbo"], "--simulator schema asks no model"),
    (["--simulator", "llm", "--llm-model", "gpt-4-turbo", "--server", "http://127.0.0.1:9/virtual"],
     "the tool server at http://127.0.0.1:9/virtual answers misses with its own simulator"),
    (["--simulator", "llm", "--llm-model", "m", "--mirror-system-prompt", "p.txt"],
     "--mirror-system-prompt is MirrorAPI's system prompt"),
    (["--simulator", "llm", "--llm-model", "m", "--llm-temperature", "-1"], "llm_temperature"),
])
def test_simulator_settings_that_cannot_work_are_refused_before_anything_runs(tmp_path, capsys, extra, words):
    assert main(run_args(tmp_path, "bad", *extra)) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    assert not (tmp_path / "bad").exists()


def test_a_sweep_takes_the_simulator_in_its_base_and_axes_and_checks_each_cells_endpoint(tmp_path, capsys):
    """A sweep spec sets the simulator like a config file; every cell's endpoint is checked while the sweep plans
    (one GET /models each), before any cell runs."""
    with OpenAIStandin(models=("gpt-4-turbo", "judge-x")) as endpoint:
        spec = tmp_path / "spec.yaml"
        spec.write_text(f"""name: simulators
base: {{backend: scripted, groups: [G1_instruction], limit: 1, simulator: llm, llm_base_url: "{endpoint.url}"}}
axes:
  llm_model: [gpt-4-turbo, my-local/model]
judges:
  - {{backend: openai, url: "{endpoint.url}", model: judge-x, api_key: x, evaluate_times: 1}}
""")
        code = main(["sweep", str(spec), "--out", str(tmp_path / "sweeps"), "--dry-run", "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and endpoint.count() == 0, err
    assert "does not serve 'my-local/model'" in err and "--llm-model" in err and "spec.yaml" in err
    assert not list((tmp_path / "sweeps").rglob("*_CoT@1.json"))
