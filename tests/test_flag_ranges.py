"""Every numeric flag of every command has a range, checked while parsing (issue 35, items 2 and 7)."""

from __future__ import annotations

import argparse

import pytest

from runners.cli import build_parser, main
from runners.cli.ranges import Ranged
from runners.config.settings_check import flag_for
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


@pytest.mark.parametrize("argv,needle", [
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
    argv = [str(tmp_path) if word == "RUN" else word for word in argv]
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


@pytest.mark.parametrize("option,needle", [("timeout=0", "timeout must be above 0"),
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
