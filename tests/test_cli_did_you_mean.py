"""A mistyped flag, command or choice is named beside its closest spellings, for every subcommand (exit 2)."""

import pytest

from runners.cli import build_parser, main


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
    assert build_parser().parse_args(["run", "--temperature", "-1"]).temperature == -1
