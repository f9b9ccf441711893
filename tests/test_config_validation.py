"""Run settings from a config file or from flags: every setting typed and range-checked, exit 2 naming the
file, the setting and the fix; unknown settings named with the closest known one; nothing is run."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig, load_yaml
from runners.config.settings_check import describe, type_hints
from toolbench_adapter.errors import InputError

CONFIGS = Path(__file__).resolve().parent.parent / "runners" / "configs"

def run_config(tmp_path, text: str, *flags: str) -> list[str]:
    config = tmp_path / "run.yaml"
    config.write_text(text)
    return ["run", "--config", str(config), "--name", "x", "--out-root", str(tmp_path / "runs"), "--backend",
            "scripted", "--quiet", *flags]


def test_a_string_where_a_number_goes_names_file_field_and_fix(tmp_path, capsys):
    args = run_config(tmp_path, 'concurrency: "4"\n')
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run.yaml'}: field 'concurrency': \"4\" is a string" in err
    assert "fix: write a whole number of at least 1 and at most 1024, e.g. concurrency: 4" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_a_word_where_a_temperature_goes_is_refused_not_recorded(tmp_path, capsys):
    assert main(run_config(tmp_path, "temperature: hot\n")) == 2
    err = capsys.readouterr().err
    assert "field 'temperature': \"hot\" is a string" in err and "e.g. temperature: 0" in err
    assert not (tmp_path / "runs").exists()  # no run, no manifest recording "hot"


def test_flags_go_through_the_same_checks(tmp_path, capsys):
    args = ["run", "--name", "x", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    assert main([*args, "--temperature", "-1"]) == 2
    err = capsys.readouterr().err
    assert "temperature (--temperature)" in err and "temperature must be at least 0" in err
    assert "e.g. --temperature 0" in err
    assert main([*args, "--server-timeout", "0"]) == 2
    assert "server_timeout must be above 0" in capsys.readouterr().err
    assert main(run_config(tmp_path, "temperature: -1\n")) == 2  # the same check, worded for the file
    assert "field 'temperature': temperature must be at least 0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_unknown_settings_get_did_you_mean(tmp_path, capsys):
    assert main(run_config(tmp_path, "temprature: 0.2\nmax-step: 6\nnmae: y\n")) == 2
    err = capsys.readouterr().err
    assert "3 settings are wrong" in err
    # the closest first (the simulator's llm_temperature is the next)
    assert "unknown setting(s) temprature\n    fix: did you mean temperature or llm_temperature?" in err
    assert "unknown setting(s) max-step\n    fix: did you mean max_step?" in err
    assert "unknown setting(s) nmae\n    fix: did you mean name?" in err


def test_every_problem_of_a_file_is_listed_at_once(tmp_path, capsys):
    text = 'concurrency: "4"\ngroups: G1_instruction\nquery_ids: [1, "x"]\nflavour: modern\nmethod: CoT@0\n'
    with pytest.raises(InputError) as err:
        load_yaml(_write(tmp_path, text))
    message = str(err.value)
    assert "4 settings are wrong" in message  # the method is checked once the types are right
    assert 'groups: "G1_instruction" is a string\n    fix: write a list (each item text), e.g. groups: ' \
           "[G1_instruction]" in message
    assert 'query_ids: [1, "x"]: "x" is a string' in message
    assert 'flavour: "modern" is not one of the choices\n    fix: write one of legacy, current' in message
    with pytest.raises(InputError, match="CoT@N needs N >= 1"):
        load_yaml(_write(tmp_path, "method: CoT@0\n"))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


# a YAML value of another type, by what the setting takes (its annotation in words)
WRONG_VALUE = {"a whole number": '"4"', "a number": "hot", "text": "5", "a list": "G1_instruction",
               "a mapping": "[a, b]", "one of": "nope"}


@pytest.mark.parametrize("name", [f.name for f in fields(RunConfig)])
def test_every_setting_has_its_type_checked(tmp_path, name):
    takes = describe(type_hints(RunConfig)[name])
    wrong = next(value for start, value in WRONG_VALUE.items() if takes.startswith(start))
    if takes.startswith("text or a list"):  # base_url, server
        wrong = "{a: b}"
    with pytest.raises(InputError) as err:
        load_yaml(_write(tmp_path, f"{name}: {wrong}\n"))
    assert err.value.field == name and err.value.fix and "write " in err.value.fix
    with pytest.raises(InputError):  # the same check on a config made in code
        RunConfig(**{name: load_yaml_value(wrong)}).validate()


def load_yaml_value(text: str):
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize("text", ["max_step: 0", "limit: 0", "server_attempts: 0", "max_tokens: -5",
                                  "stop_after_infra_failures: -1", "server_rate: 0", "temperature: .nan",
                                  "server_timeout: .inf", "name: ''", "concurrency: true"])
def test_ranges_are_checked(tmp_path, text):
    with pytest.raises(InputError) as err:
        load_yaml(_write(tmp_path, text + "\n"))
    assert err.value.field == text.split(":")[0]


def test_right_values_pass_unchanged(tmp_path):
    settings = load_yaml(_write(tmp_path, "temperature: 0\nserver_rate: 8\nbase_url: [http://a/v1, http://b/v1]\n"
                                          "stop_after_infra_failures: 0\ncompat_flags: {dfs_no_give_up_answer: true}\n"
                                          "backend_options: {rate_per_s: 6}\n"))
    assert settings["temperature"] == 0 and isinstance(settings["temperature"], int)  # as written
    RunConfig(**settings).validate()


@pytest.mark.parametrize("config", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_configs_load(config):
    RunConfig(**load_yaml(config)).validate()


def test_a_config_made_in_code_with_a_wrong_type_is_an_input_error_not_a_type_error():
    with pytest.raises(InputError, match="concurrency"):
        RunConfig(concurrency="4").validate()
