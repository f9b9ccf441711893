"""Backend and dialect options are checked, and an option a config file set is named with the file (issue 21,
item 10's spirit): every dialect declares the options it reads (toolbench_adapter/dialects/base.py), the
scripted backend has a known-options list as the others do, and a refused option from a --config file names the
file, the setting and the fix in YAML form instead of as a flag."""

from __future__ import annotations

import pytest

from runners.cli import main
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.dialects import DIALECTS, make_dialect
from toolbench_adapter.errors import OptionError

WRONG_TYPE = {str: 5, bool: "maybe", int: "many", float: "lots"}
DECLARED = [(name, option, spec) for name in DIALECTS.names()
            for option, spec in getattr(DIALECTS.get(name), "OPTIONS", {}).items()]


@pytest.mark.parametrize("dialect", DIALECTS.names())
def test_every_dialect_refuses_an_option_it_does_not_read(dialect):
    """Was: only toolllama checked; openai-tools, json-object, jsonl and hermes recorded any option and ran."""
    with pytest.raises(OptionError) as refused:
        make_dialect(dialect, bogus="1")
    assert refused.value.setting == "dialect_options" and "'bogus'" in refused.value.problem


@pytest.mark.parametrize("dialect,option,spec", DECLARED, ids=[f"{d}-{o}" for d, o, _ in DECLARED])
def test_a_declared_option_of_the_wrong_type_is_refused_and_its_default_taken(dialect, option, spec):
    with pytest.raises(OptionError, match=f"{option}="):
        make_dialect(dialect, **{option: WRONG_TYPE[spec.kind]})
    assert make_dialect(dialect).options[option] == spec.default


def test_flag_strings_are_typed_and_choices_kept():
    dialect = make_dialect("toolllama", history="thought", example=True, prefill="Thought: ")
    assert (dialect.options["history"], dialect.options["example"], dialect.options["prefill"]) == (
        "thought", True, "Thought: ")
    with pytest.raises(OptionError, match="is not 'raw' or 'chat'"):
        make_dialect("toolllama", template="jinja")


def run_args(tmp_path, *extra):
    return ["run", "--name", "o", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", *extra]


@pytest.mark.parametrize("dialect", DIALECTS.names())
def test_tba_run_exits_2_naming_dialect_options(tmp_path, capsys, dialect):
    """Was: `--dialect openai-tools --dialect-option history=5 --dialect-option bogus=1` exited 0 and recorded both."""
    assert main(run_args(tmp_path, "--dialect", dialect, "--dialect-option", "bogus=1")) == 2
    err = capsys.readouterr().err
    assert "field 'dialect_options (--dialect-option)'" in err and "'bogus'" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "manifest.json").exists()


@pytest.mark.parametrize("option,needle", [("retries=lots", "has no option 'retries'"),
                                           ("delay_s=soon", "delay_s='soon' is not a number"),
                                           ("delay_s=-1", "delay_s must be at least 0 (got -1.0)")])
def test_the_scripted_backend_checks_its_options(tmp_path, capsys, option, needle):
    """Was: ScriptedBackend(**_) took any option: `retries: lots` was recorded and ignored."""
    assert main(run_args(tmp_path, "--backend-option", option)) == 2
    err = capsys.readouterr().err
    assert needle in err and "backend_options" in err and "Traceback" not in err
    with pytest.raises(OptionError) as refused:
        ScriptedBackend(retries="lots")
    assert "known options: delay_s, model" in str(refused.value)


# -- options from a config file: the file named, the fix as YAML ------------------------------------------------

def config(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,fix", [
    ("backend: scripted\nbackend_options: {retries: lots}\n", "fix: known options: delay_s"),
    ("backend: openai-chat\nbase_url: http://127.0.0.1:9/v1\nmodel: m\ndialect: openai-tools\n"
     "backend_options: {retries: lots}\n", "fix: write e.g. backend_options: {retries: 3}"),
    ("backend: scripted\ndialect: toolllama\ndialect_options: {history: everything}\n",
     'fix: write e.g. dialect_options: {history: "raw"}'),
    ("backend: scripted\ndialect: hermes\ndialect_options: {history: 5}\n", "fix: it takes no options"),
], ids=["scripted-unknown", "openai-mistyped", "toolllama-choice", "hermes-unknown"])
def test_an_option_from_a_config_file_names_the_file_and_gives_the_fix_as_yaml(tmp_path, capsys, text, fix):
    """Was: "field 'retries': ... fix: write e.g. --backend-option retries=3", without the file, the fix a flag."""
    path = config(tmp_path, text)
    assert main(["run", "--config", str(path), "--name", "o", "--out-root", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    setting = "dialect_options" if "dialect_options" in text else "backend_options"
    assert f"{path}: field '{setting}'" in err and fix in err
    assert "--backend-option" not in err and "--dialect-option" not in err


def test_an_option_a_flag_set_over_the_file_keeps_the_flags_fix(tmp_path, capsys):
    path = config(tmp_path, "backend: openai-chat\nbase_url: http://127.0.0.1:9/v1\nmodel: m\ndialect: openai-tools\n"
                            "backend_options: {retries: 2}\n")
    assert main(["run", "--config", str(path), "--name", "o", "--out-root", str(tmp_path), "--quiet",
                 "--backend-option", "retries=lots"]) == 2
    err = capsys.readouterr().err
    assert str(path) not in err and "fix: write e.g. --backend-option retries=3" in err
