"""A mistyped flag, command or choice is named beside its closest spellings, for every subcommand (exit 2)."""

import argparse

import pytest

from runners.cli import build_parser, main
from toolbench_adapter.errors import InputError


def refused(capsys, *argv):
    with pytest.raises(SystemExit) as stopped:
        main(list(argv))
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == ""
    return err


@pytest.mark.parametrize("argv,line", [
    (["run", "--concurency", "4"], "tba run: error: unknown flag --concurency; did you mean --concurrency?"),
    (["run", "--concurency=4"], "tba run: error: unknown flag --concurency; did you mean --concurrency?"),
    (["evaluate", "results/runs/x", "--judge-ulr", "http://127.0.0.1:1/v1"],
     "tba evaluate: error: unknown flag --judge-ulr; did you mean --judge-url?"),
    (["reproduce", "--publshed", "stb"], "tba reproduce: error: unknown flag --publshed; did you mean --published"),
    (["serve", "--prot", "8080"], "tba serve: error: unknown flag --prot; did you mean --port?"),
    (["cache", "build", "--answres", "a", "--out", "b"],
     "tba cache build: error: unknown flag --answres; did you mean --answers?"),
])
def test_a_mistyped_flag_names_the_closest_flags_of_its_own_command(capsys, argv, line):
    err = refused(capsys, *argv)
    assert err.splitlines()[0].startswith(line)
    assert "usage: tba [-h] COMMAND" not in err  # not the top-level usage
    assert f"{line.split(': error')[0]} --help lists every flag" in err


def test_the_suggestions_are_the_command_s_own_flags_only(capsys):
    err = refused(capsys, "serve", "--prot", "8080")
    assert "--port?" in err and "--stb-root" not in err  # only those about as close as the best one
    err = refused(capsys, "run", "--zzzqqq")
    assert "unknown flag --zzzqqq\n" in err and "did you mean" not in err


def test_several_unknown_flags_are_each_named(capsys):
    err = refused(capsys, "run", "--concurency", "4", "--limt", "2")
    assert ("unknown flags --concurency (did you mean --concurrency?), --limt (did you mean --limit?)"
            in err)


def test_a_stray_positional_is_named(capsys):
    err = refused(capsys, "run", "extra")
    assert "tba run: error: unexpected argument: extra" in err


@pytest.mark.parametrize("argv,needle", [
    (["rnu"], "tba: error: unknown command 'rnu'; did you mean run?"),
    (["evalute", "x"], "tba: error: unknown command 'evalute'; did you mean evaluate?"),
    (["cache", "bulid"], "tba cache: error: unknown command 'bulid'; did you mean build?"),
    (["run", "--compat", "stbb"], "invalid choice: 'stbb' (choose from 'stb', 'strict'); did you mean stb?"),
])
def test_a_mistyped_command_or_choice_names_the_closest(capsys, argv, needle):
    assert needle in refused(capsys, *argv)


def test_correct_and_abbreviated_flags_still_parse():
    args = build_parser().parse_args(["run", "--concurrency", "4", "--lim", "2"])
    assert (args.concurrency, args.limit) == (4, 2)
    assert build_parser().parse_args(["run", "--temperature", "0.5"]).temperature == 0.5
    with pytest.raises(InputError, match="temperature must be at least 0"):  # a value, refused by its range
        build_parser().parse_args(["run", "--temperature", "-1"])


# ---- every command's own flags --------------------------------------------------------------------------------


def command_parsers(parser=None, path=()):
    """(words after `tba`, parser) for every subcommand and sub-subcommand (`cache build`), aliases once."""
    parser = parser or build_parser()
    seen = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if id(child) not in seen:
                    seen.add(id(child))
                    yield (*path, name), child
                    yield from command_parsers(child, (*path, name))


def typo(flag: str, options: list[str]) -> str | None:
    """The flag with two neighbouring letters swapped (--port: --prot), as long as that is no flag, nor a prefix
    of one (argparse would take it as an abbreviation)."""
    name = flag[2:]
    for i in [len(name) // 2, *range(1, len(name))]:
        if 0 < i < len(name) and name[i - 1] != name[i]:
            wrong = "--" + name[:i - 1] + name[i] + name[i - 1] + name[i + 1:]
            if not any(option.startswith(wrong) for option in options):
                return wrong
    return None


def mistyped_flags():
    cases = []
    for path, parser in command_parsers():
        options = [o for action in parser._actions for o in action.option_strings]
        for flag in options:
            if flag.startswith("--") and flag != "--help" and (wrong := typo(flag, options)):
                cases.append(pytest.param(path, flag, wrong, id=f"{' '.join(path)} {wrong}"))
    return cases


MISTYPED = mistyped_flags()


def test_every_command_is_covered():
    commands = {" ".join(path) for path, _ in command_parsers()}
    assert {"run", "evaluate", "report", "cache", "cache build", "serve", "reproduce"} <= commands
    flagged = {" ".join(case.values[0]) for case in MISTYPED}
    # every command that has a long flag of its own has it mistyped below
    assert flagged == {" ".join(path) for path, parser in command_parsers()
                       if any(o.startswith("--") and o != "--help" for a in parser._actions for o in a.option_strings)}


@pytest.mark.parametrize("path, flag, wrong", MISTYPED)
def test_each_commands_own_long_flags_are_named_when_mistyped(capsys, path, flag, wrong):
    err = refused(capsys, *path, wrong)
    first = err.splitlines()[0]
    assert first.startswith(f"tba {' '.join(path)}: error: unknown flag {wrong}; did you mean "), err
    suggested = first.split("; did you mean ", 1)[1].rstrip("?").split(" or ")
    assert flag in suggested, first


@pytest.mark.parametrize("path", [path for path, _ in command_parsers()], ids=" ".join)
def test_a_mistyped_help_names_help(capsys, path):
    """Was: --help was no candidate, so `tba cache --hlep` got no hint."""
    err = refused(capsys, *path, "--hlep")
    assert err.splitlines()[0] == f"tba {' '.join(path)}: error: unknown flag --hlep; did you mean --help?"
