"""Every numeric flag of every command has a range, checked while parsing (issue 35, items 2 and 7), with a top a
user would never need to pass and its reason in the message (issue 41, item 1)."""

from __future__ import annotations

import argparse

import pytest

from runners.cli import build_parser, main
from runners.cli.ranges import Ranged
from runners.config.settings_check import flag_for, top_reason
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging.passrate import judge_converted
from toolbench_adapter.evaluation.scoring.scores import sopr


def commands(parser: argparse.ArgumentParser, words=()):
    """(command words, parser) for every command and subcommand (tba cache build ...)."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*words, name))


def numeric_flags():
    for words, parser in commands(build_parser()):
        for action in parser._actions:
            if not action.option_strings:
                continue
            numeric_default = isinstance(action.default, (int, float)) and not isinstance(action.default, bool)
            if isinstance(action.type, Ranged) or action.type in (int, float) or (
                    numeric_default and action.nargs != 0 and action.type is None):
                yield words, action


FLAGS = list(numeric_flags())


def test_the_walk_finds_the_numeric_flags():
    names = {(" ".join(words), action.option_strings[-1]) for words, action in FLAGS}
    assert {("evaluate", "--evaluate-times"), ("evaluate", "--judge-timeout"), ("evaluate", "--judge-max-tokens"),
            ("evaluate", "--concurrency"), ("run", "--concurrency"), ("serve", "--port")} <= names
    assert len(FLAGS) >= 40


@pytest.mark.parametrize("words,action", FLAGS, ids=[f"{' '.join(w)} {a.option_strings[-1]}" for w, a in FLAGS])
def test_every_numeric_flag_has_a_range_and_refuses_what_is_outside(capsys, words, action):
    flag = action.option_strings[-1]
    assert isinstance(action.type, Ranged), f"tba {' '.join(words)} {flag}: give it a range (runners/cli/ranges.py)"
    assert flag_for(action.dest) == flag  # the fix names the flag by its setting name
    outside = action.type.outside()
    assert outside, f"{flag}: a range with no bound"
    for value in outside:
        assert main([*words, f"{flag}={value}"]) == 2
        err = capsys.readouterr().err
        assert f"({flag})" in err and "fix: write" in err and "Traceback" not in err


@pytest.mark.parametrize("words,action", FLAGS, ids=[f"{' '.join(w)} {a.option_strings[-1]}" for w, a in FLAGS])
def test_every_numeric_flag_has_a_top_and_says_why_past_it(capsys, words, action):
    """Was: --evaluate-times 99999999999999999999 grew to 2.4 GB, --concurrency 100000 was taken, --judge-timeout
    99999999999 was an OverflowError in socket.settimeout."""
    flag = action.option_strings[-1]
    bounds = action.type.bounds()
    assert "le" in bounds or "lt" in bounds, f"tba {' '.join(words)} {flag}: give it a top (runners/config/limits.py)"
    why = top_reason(action.type.hint)
    assert why, f"{flag}: say why its top is where it is (bounded(..., why=...))"
    top = bounds.get("le", bounds.get("lt"))
    for value in (top * 10 + 1, 10**20):
        assert main([*words, f"{flag}={action.type.kind(value)}"]) == 2
        err = capsys.readouterr().err
        assert why in err and f"({flag})" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "RUN", "--judge-timeout", "99999999999"], "judge_timeout must be at most 86400 (got 99999999999.0)"),
    (["evaluate", "RUN", "--evaluate-times", "99999999999999999999"], "evaluate_times must be at most 100"),
    (["evaluate", "RUN", "--evaluate-times", "1000000"], "one more judge request per answer"),
    (["evaluate", "RUN", "--judge-max-tokens", "99999999999"], "judge_max_tokens must be at most 100000"),
    (["evaluate", "RUN", "--concurrency", "100000"], "concurrency must be at most 1024"),
    (["run", "--concurrency", "100000"], "concurrency must be at most 1024"),
    (["judge-audit", "--set", "x", "--resamples", "999999999999"], "resamples must be at most 100000"),
    (["run", "--max-step", "100000000000000000000000"], "max_step must be at most 1000"),
    (["sweep", "SPEC", "--max-cells", "5000"], "a sweep has at most 1,000 cells"),
    (["evaluate", "RUN", "--evaluate-times", "0"], "evaluate_times must be at least 1 (got 0)"),
    (["evaluate", "RUN", "--evaluate-times", "-2"], "evaluate_times must be at least 1 (got -2)"),
    (["evaluate", "RUN", "--judge-timeout", "-5"], "judge_timeout must be above 0"),
    (["evaluate", "RUN", "--judge-timeout", "0"], "judge_timeout must be above 0"),
    (["evaluate", "RUN", "--judge-max-tokens", "0"], "judge_max_tokens must be at least 1 (got 0)"),
    (["evaluate", "RUN", "--concurrency", "-3"], "concurrency must be at least 1 (got -3)"),
    (["judge", "--evaluate-times", "0"], "evaluate_times must be at least 1"),
    (["run", "--concurrency", "4.5"], "'4.5' is not a whole number of at least 1"),
    (["run", "--seed", "-1"], "seed must be at least 0"),
    (["serve", "--port", "70000"], "port must be at most 65535"),
])
def test_the_issue_cases_exit_2_naming_the_range(tmp_path, capsys, argv, needle):
    argv = [str(tmp_path) if word in ("RUN", "SPEC") else word for word in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "fix: write" in err
    assert not list(tmp_path.iterdir())  # nothing read or written


def test_values_in_range_parse_to_numbers():
    args = build_parser().parse_args(["evaluate", "x", "--evaluate-times", "1", "--judge-timeout", "0.5",
                                      "--concurrency", "8"])
    assert (args.evaluate_times, args.judge_timeout, args.concurrency) == (1, 0.5, 8)
    assert build_parser().parse_args(["run", "--temperature", "0.7", "--query-ids", "0", "5"]).query_ids == [0, 5]


def test_the_library_refuses_zero_repeats_too():
    """A caller past the CLI (a script, a make variable read elsewhere) gets the same refusal, not a 0.0."""
    with pytest.raises(InputError, match="evaluate_times must be at least 1"):
        judge_converted({}, judge=None, evaluate_times=0)
    with pytest.raises(InputError, match="evaluate_times must be at least 1"):
        sopr({"1": {}}, evaluate_times=-2)


@pytest.mark.parametrize("option,needle", [("timeout=99999999999", "timeout must be at most 86400"),
                                           ("retries=1000000", "retries must be at most 100"),
                                           ("wait_max=1e308", "wait_max must be at most 3600"),
                                           ("wait_min=1e308", "an hour between two tries"),
                                           ("timeout=0", "timeout must be above 0"),
                                           ("timeout=nan", "timeout must be a finite number"),
                                           ("retries=0", "retries must be at least 1"),
                                           ("wait_min=-1", "wait_min must be at least 0"),
                                           ("timeout=soon", "'soon' is not a number above 0")])
def test_judge_options_have_the_ranges_of_the_flags(option, needle):
    """--judge-option timeout=0 (or nan) was let through, while --judge-timeout 0 is refused."""
    import argparse

    from runners.cli.commands._common import judge_client_options

    with pytest.raises(InputError) as refused:
        judge_client_options(argparse.Namespace(judge_option=[option]))
    assert needle in refused.value.problem and refused.value.field == "--judge-option"
    assert "e.g. --judge-option" in refused.value.fix
    assert judge_client_options(argparse.Namespace(judge_option=["timeout=2.5", "retries=4"])) == {
        "timeout": 2.5, "retries": 4}


def test_judge_options_refuse_a_first_wait_above_the_longest():
    from runners.cli.commands._common import judge_client_options

    with pytest.raises(InputError) as refused:
        judge_client_options(argparse.Namespace(judge_option=["wait_min=10", "wait_max=1"]))
    assert "wait_min=10 and wait_max=1" in refused.value.problem
    assert "--judge-option wait_min=1 --judge-option wait_max=10" in refused.value.fix
    with pytest.raises(InputError, match="wait_min=20 and wait_max=10"):  # against the client's default wait_max
        judge_client_options(argparse.Namespace(judge_option=["wait_min=20"]))


def test_judge_options_are_checked_before_the_run_folder_is_read(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "absent"), "--judge-option", "retries=1000000"]) == 2
    err = capsys.readouterr().err
    assert "retries must be at most 100" in err and "not a run folder" not in err


@pytest.mark.parametrize("option,needle", [
    ("timeout=99999999999", "backend option timeout must be at most 86400"),
    ("retries=1000000", "backend option retries must be at most 100"),
    ("backoff_max=1e308", "backend option backoff_max must be at most 3600"),
    ("rate_per_s=1e30", "backend option rate_per_s must be at most 100000"),
    ("backoff=20", "backoff=20 is above backoff_max=10"),
])
def test_backend_options_have_tops_too(tmp_path, capsys, option, needle):
    """--backend-option timeout=99999999999 reached the socket as the judge's timeout did."""
    argv = ["run", "--backend", "openai-chat", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
            "--out-root", str(tmp_path), "--backend-option", option, "--quiet"]
    if option.startswith("backoff="):
        argv += ["--backend-option", "backoff_max=10"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert main(["run", "--backend", "scripted", "--out-root", str(tmp_path), "--backend-option", "delay_s=1e9",
                 "--quiet"]) == 2
    assert "delay_s must be at most 3600" in capsys.readouterr().err


@pytest.mark.parametrize("line,needle", [
    ("max_step: 100000000000000000000000", "max_step must be at most 1000"),
    ("max_tokens: 99999999999", "max_tokens must be at most 1000000"),
    ("concurrency: 100000", "concurrency must be at most 1024"),
    ("server_timeout: 1.0e+23", "server_timeout must be at most 86400"),
])
def test_a_config_file_and_a_sweep_spec_have_the_same_tops(tmp_path, capsys, line, needle):
    """A sweep's max_step: 1e23 (written as a whole number) was taken: its dry run planned 1e23 model calls."""
    config = tmp_path / "c.yaml"
    config.write_text(line + "\n")
    assert main(["run", "--config", str(config), "--backend", "scripted", "--out-root", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: t\nbase: {{backend: scripted, {line}}}\naxes: {{parser: [react-find]}}\njudges: []\n")
    assert main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert needle in err and "field 'base." in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("endpoint,needle", [("max_in_flight: 100000", "max_in_flight must be at most 1024"),
                                             ("rate_per_s: 1.0e+300", "rate_per_s must be at most 100000")])
def test_a_sweep_specs_endpoint_numbers_have_tops(tmp_path, capsys, endpoint, needle):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: t\nbase: {backend: scripted}\naxes: {parser: [react-find]}\njudges: []\n"
                    f"endpoints: {{'http://127.0.0.1:9/v1': {{{endpoint}}}}}\n")
    assert main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    assert needle in capsys.readouterr().err


def test_a_sweep_judges_timeout_has_the_flags_top(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: t\nbase: {backend: scripted}\naxes: {parser: [react-find]}\n"
                    "judges: [{url: 'http://127.0.0.1:9/v1', model: j, timeout: 99999999999}]\n")
    assert main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--judge-timeout: value must be at most 86400" in err and "judges[0]" in err and "hung" in err
