"""An evaluator folder's config.yaml is checked before any judge is asked (issue 21, item 10's spirit): the
completions kwargs the judge sends (temperature, max_tokens, functions) are typed, and a wrong one is exit 2
naming config.yaml, the field and the fix. Upstream's evaluator folders and the project's own pass."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import command_inputs, solved
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import PROJECT_EVALUATORS, load_evaluator


def evaluator_with(tmp_path: Path, **kwargs) -> Path:
    """The project's default evaluator, copied, with these completions_kwargs replaced."""
    folder = tmp_path / "ev"
    shutil.copytree(PROJECT_EVALUATORS / "default", folder)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    config["completions_kwargs"].update(kwargs)
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


@pytest.mark.parametrize("kwargs,field,fix", [
    ({"temperature": "hot"}, "completions_kwargs.temperature", "temperature: 0.2"),
    ({"temperature": -1}, "completions_kwargs.temperature", "temperature: 0.2"),
    ({"temperature": True}, "completions_kwargs.temperature", "temperature: 0.2"),
    ({"max_tokens": "lots"}, "completions_kwargs.max_tokens", "max_tokens: 1000"),
    ({"max_tokens": 0}, "completions_kwargs.max_tokens", "max_tokens: 1000"),
    ({"max_tokens": 10.5}, "completions_kwargs.max_tokens", "max_tokens: 1000"),
    ({"max_tokens": 99999999999}, "completions_kwargs.max_tokens", "max_tokens: 1000"),  # issue 41: a top
    ({"temperature": 1e308}, "completions_kwargs.temperature", "temperature: 0.2"),
    ({"functions": "check_answer_status"}, "completions_kwargs.functions", "- name: check_answer_status"),
    ({"functions": [{"description": "no name"}]}, "completions_kwargs.functions[0].name", "- name:"),
    ({"functions": ["check_answer_status"]}, "completions_kwargs.functions[0]", "- name:"),
])
def test_a_wrong_completions_kwarg_names_config_yaml_the_field_and_the_fix(tmp_path, kwargs, field, fix):
    """Was: load_evaluator took `temperature: hot` and `max_tokens: "lots"` and the judge sent them."""
    folder = evaluator_with(tmp_path, **kwargs)
    with pytest.raises(InputError) as refused:
        load_evaluator(folder)
    error = refused.value
    assert error.path == str(folder / "config.yaml") and error.field == field and fix in error.fix


def test_completions_kwargs_that_are_not_a_mapping_are_refused(tmp_path):
    folder = evaluator_with(tmp_path)
    (folder / "config.yaml").write_text("evaluator_name: x\ncompletions_kwargs: [1, 2]\n")
    with pytest.raises(InputError, match="completions_kwargs must be a mapping"):
        load_evaluator(folder)


@pytest.mark.parametrize("command", ["evaluate", "judge"])
def test_tba_exits_2_before_the_judge_is_asked(tmp_path, capsys, command):
    folder = evaluator_with(tmp_path, temperature="hot")
    with OpenAIStandin(respond=solved) as judge:
        args = [command, *command_inputs(tmp_path, command), "--judge-url", judge.url, "--judge-model", judge.model,
                "--evaluator", str(folder), "--cache", str(tmp_path / "c.jsonl"),
                "--quiet" if command == "evaluate" else "--no-progress"]
        capsys.readouterr()
        assert main(args) == 2
        assert judge.count() == 0 and not judge.probes
    err = capsys.readouterr().err
    assert f"{folder / 'config.yaml'}: field 'completions_kwargs.temperature'" in err
    assert 'temperature must be a number of at least 0 and at most 10' in err and '(got "hot")' in err
    assert "fix: write e.g. temperature: 0.2" in err


def test_the_project_evaluators_and_extra_upstream_keys_pass(tmp_path):
    assert load_evaluator("default").temperature == 0.2
    assert load_evaluator(Path(__file__).resolve().parents[1] / "runners" / "configs" / "e2e-judge").max_tokens == 160
    # upstream's completions_kwargs also hold model and timeout: read by nothing here, accepted
    spec = load_evaluator(evaluator_with(tmp_path, model="gpt-3.5-turbo-16k", timeout=10, temperature=0))
    assert spec.temperature == 0 and spec.max_tokens == 1000
