"""runners/cli/make_front.py: the Makefile's plumbing (help page, unknown-variable refusal, run folder name) in
Python, and the Makefile kept free of make-language programming (subst, awk substr, shell loops)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runners.cli import make_front
from runners.cli.make_recipes import run_name

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = PROJECT_ROOT / "runners" / "cli" / "make_front.py"

SMALL_MAKEFILE = """\
PYTHON ?= python3
BACKEND ?= hf
EMPTY ?=
DERIVED = $(BACKEND)-x $(READ_ONLY)
lower_case := 1
zeta: install  ## last, reads $(BACKEND) and $(EMPTY)
alpha:  ## first: $(NOT_A_VALUE) stays ## the text after the last mark
alpha-beta:  ## after alpha, before zeta
notes: # no help mark
"""


# ---- run-name --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("settings, name", [
    (("hf", "CoT@1", "schema", ""), "eval-hf-CoT1@constrain-schema"),
    (("hf", "CoT@1", "off", ""), "eval-hf-CoT1"),
    (("openai-chat", "CoT@1", "", ""), "eval-openai-chat-CoT1"),
    (("openai-chat", "CoT@1", "schema", "reask:2"), "eval-openai-chat-CoT1@constrain-schema@reask-2"),
    (("scripted", "DFS_woFilter_w2", "", "observe"), "eval-scripted-DFS_woFilter_w2"),
    (("hf", "CoT@5", "off", "reask:3"), "eval-hf-CoT5@reask-3"),
    (("openai-chat", "CoT@1", "", "", "5"), "eval-openai-chat-CoT1-trials5"),  # a set of trials (issue 42)
    (("openai-chat", "CoT@1", "", "", "1"), "eval-openai-chat-CoT1"),
    (("openai-chat", "CoT@1", "schema", "", "3"), "eval-openai-chat-CoT1-trials3@constrain-schema"),
])
def test_run_name_says_each_setting_that_is_not_upstreams(settings, name):
    assert run_name(*settings) == name


def test_the_run_folder_and_its_leaderboard_row_have_one_name():
    """Was: folder eval-hf-CoT1-constrain-schema, row eval-hf-CoT1@constrain-schema."""
    from toolbench_adapter.structured.describe import row_name

    for constrain, on_invalid in (("schema", ""), ("schema", "reask:2"), ("off", "reask:1"), ("off", "")):
        folder = run_name("hf", "CoT@1", constrain, on_invalid)
        assert row_name(folder, {"constrain": constrain or "off", "on_invalid": on_invalid or "observe"}) == folder


# ---- check-vars ------------------------------------------------------------------------------------------------

def test_known_variables_are_the_assigned_the_read_and_makes_own():
    known = make_front.known_variables([SMALL_MAKEFILE])
    assert {"PYTHON", "BACKEND", "EMPTY", "DERIVED", "lower_case", "READ_ONLY", "NOT_A_VALUE", "MAKEFLAGS",
            "SHELL"} <= set(known)
    assert "zeta" not in known and "install" not in known
    assert known == sorted(known)


@pytest.mark.parametrize("a, b, distance", [("", "", 0), ("GROUP", "GROUPS", 1), ("BACKND", "BACKEND", 1),
                                            ("JUDGE_MODLE", "JUDGE_MODEL", 2), ("KITTEN", "SITTING", 3),
                                            ("", "ABC", 3), ("ABC", "", 3)])
def test_edit_distance(a, b, distance):
    assert make_front.edit_distance(a, b) == distance == make_front.edit_distance(b, a)


def test_the_closest_name_ignores_case_prefers_the_first_on_a_tie_and_must_be_near():
    known = ["BACKEND", "GROUPS", "PORT", "RUN", "STB", "TBA"]
    assert make_front.closest_variable("groups", known) == "GROUPS"  # case alone: distance 0
    assert make_front.closest_variable("TB", known) == "STB"  # STB and TBA both 1 away: the first
    assert make_front.closest_variable("BACKENDXYZ", known) == "BACKEND"  # 3 edits, a third of 10 letters
    assert make_front.closest_variable("BACKXYZ", known) is None  # 3 edits of 7 letters: not a typo
    assert make_front.closest_variable("TOTALLY_UNRELATED", known) is None
    assert make_front.closest_variable("X", []) is None


def test_the_refusal_names_every_unknown_variable_and_nothing_when_all_are_known():
    known = ["BACKEND", "GROUPS"]
    assert make_front.unknown_variables_message(["GROUPS", "BACKEND"], known) == ""
    assert make_front.unknown_variables_message(["GROUP", "GROUPS", "ZZZ_UNRELATED"], known) == (
        "unknown variable GROUP; did you mean GROUPS? unknown variable ZZZ_UNRELATED (no target reads it)"
        " (`make help` lists the variables)")


def test_check_vars_runs_with_the_system_python_alone(tmp_path):
    """make runs it before .venv exists: -I -S (no site packages, no project on the path) must be enough."""
    makefile = tmp_path / "Makefile"
    makefile.write_text(SMALL_MAKEFILE)
    refused = subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), "check-vars", str(makefile), "--", "BACKND",
                              "EMPTY"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 0 and refused.stderr == ""  # make stops on the text (an exit would hide it)
    assert refused.stdout.strip() == ("unknown variable BACKND; did you mean BACKEND? "
                                      "(`make help` lists the variables)")
    passed = subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), "check-vars", str(makefile), "--", "BACKEND",
                             "SHELL"], capture_output=True, text=True, timeout=60)
    assert (passed.returncode, passed.stdout) == (0, "")


# ---- help ------------------------------------------------------------------------------------------------------

def test_help_fills_in_values_sorts_targets_and_lists_the_set_if_unset_variables():
    page = make_front.help_page([SMALL_MAKEFILE, "extra: ## from $(PYTHON)\nOTHER ?= 1\n"],
                                {"BACKEND": "openai-chat", "EMPTY": "", "PYTHON": "python3.12"})
    assert page == (
        "Targets (make TARGET [VAR=value ...]):\n"
        "  alpha            the text after the last mark\n"
        "  alpha-beta       after alpha, before zeta\n"
        "  extra            from python3.12\n"
        "  zeta             last, reads openai-chat and (empty)\n"
        "Variables (now):\n"
        "  PYTHON=python3.12\n"
        "  BACKEND=openai-chat\n"
        "  EMPTY=(empty)\n")
    assert make_front.fill_in("$(NOT_A_VALUE) and $(lower)", {"lower": "x"}) == "$(NOT_A_VALUE) and x"


def test_help_reads_the_environment_and_fills_in_the_derived_defaults(tmp_path, monkeypatch, capsys):
    """make exports every variable into the recipe's environment: help reads it there (no quoting of any kind)."""
    makefile = tmp_path / "Makefile"
    makefile.write_text(SMALL_MAKEFILE + "RUN ?=\n")
    monkeypatch.setenv("BACKEND", "scripted")
    monkeypatch.setenv("EMPTY", "")
    monkeypatch.setenv("METHOD", "CoT@1")
    monkeypatch.setenv("RUN", "")
    assert make_front.main(["help", str(makefile)]) == 0
    out = capsys.readouterr().out
    assert "  zeta             last, reads scripted and (empty)\n" in out
    assert "  RUN=eval-scripted-CoT1\n" in out  # empty: the name make eval gives its run


# ---- through make -----------------------------------------------------------------------------------------------

needs_make = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")


def make(*arguments: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", *arguments], cwd=PROJECT_ROOT, env=base, capture_output=True, text=True,
                          timeout=60)


@needs_make
def test_make_help_shows_values_as_given_quotes_and_all():
    done = make("-s", "help", "MODEL=it's \"q\" & $$HOME ;", "BACKEND=scripted", "METHOD=DFS_woFilter_w2")
    assert done.returncode == 0, done.stderr
    assert "\n  MODEL=it's \"q\" & $HOME ;\n" in done.stdout
    assert "-> results/runs/eval-scripted-DFS_woFilter_w2 (offline default" in done.stdout
    assert "\n  RUN=eval-scripted-DFS_woFilter_w2\n" in done.stdout


@needs_make
def test_a_python_that_cannot_run_the_script_stops_make():
    """Were the check's output empty because the script never ran, every variable would pass unchecked."""
    done = make("-n", "eval", "GROUP=G1_tool", "PYTHON=/nonexistent/python3")
    assert done.returncode == 2 and "tba" not in done.stdout
    assert "PYTHON=/nonexistent/python3 cannot run runners/cli/make_front.py: PYTHON names a Python 3" in done.stderr


# ---- the Makefile itself ---------------------------------------------------------------------------------------

PROGRAMMING = re.compile(r"\$\((?:subst|patsubst)\b|\bsubstr\(|\bfor\s*\(|\bfor\s+\w+\s+in\b")


def makefile_programming(text: str, allowed: set[str]) -> list[str]:
    """Lines (comments and "## " help texts left out) that use make's string functions, awk's substr or a
    loop, outside the rules and variables named in ``allowed``."""
    found, skipping, previous = [], False, ""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("\t") and not (skipping and previous.endswith("\\")):
            head = re.match(r"^(?:override\s+)?([A-Za-z0-9_.-]+)\s*(?::|\?=|=)", line)
            skipping = bool(head and head.group(1) in allowed)
        previous = line
        code = line.split("##", 1)[0] if not line.startswith("\t") else line
        if skipping or code.lstrip().startswith("#"):
            continue
        if PROGRAMMING.search(code):
            found.append(f"{number}: {line.strip()}")
    return found


def test_the_checker_finds_what_it_forbids():
    sample = ("X = $(subst a,b,c)\n# a comment for x in y\nt:  ## for each in it\n\tfor f in a b; do :; done\n"
              "\tawk '{ print substr($$0, 1) }'\nkept:\n\tfor x in 1; do \\\n\t  for y in 2; do :; done; done\n")
    assert [hit.split(":")[0] for hit in makefile_programming(sample, set())] == ["1", "4", "5", "7", "8"]
    assert [hit.split(":")[0] for hit in makefile_programming(sample, {"kept", "X"})] == ["4", "5"]


def test_the_makefile_has_no_make_language_programming():
    """subst, awk's substr and shell loops made the Makefile a program nobody tested: make_front.py does it now."""
    text = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    # shell_word: the one quoting make still does (make 4.3's $(shell) gets no exported variable: the check of
    # the command line's variables is passed its words quoted); every recipe takes its values from the environment
    assert makefile_programming(text, {"shell_word"}) == []
    assert "runners/cli/make_front.py" in text
