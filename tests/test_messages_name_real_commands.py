"""Every `tba X` and every `--flag` a message, fix line or help text names exists (issue 41: a hint named
`tba parsers`, which does not exist; a fix line named --max-observation-length, a setting without a flag).

The source's string literals are read (f-strings with their values left as a placeholder): a `tba X` must name a
command, a `--flag` a flag of some tba command, unless it is another program's flag, listed below with whose it is;
a command word made from a value (f"tba {name}s") is refused outright: nothing checks what it becomes. The flags
made from names (a run setting's, a backend or dialect option's, a sweep judge key's) exist too."""

from __future__ import annotations

import argparse
import ast
import re
from dataclasses import fields
from pathlib import Path

from runners.cli import build_parser
from runners.config import RunConfig
from runners.config.settings_check import NO_FLAG, flag_for

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VALUE = "\x00"  # an f-string's {value}
TBA = re.compile(r"\btba ([a-z\x00][a-z\x00-]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")

# flags of other programs, named in messages and help on purpose: whose each is
OTHER_PROGRAMS = {
    "--dtype": "vllm serve", "--enforce-eager": "vllm serve", "--max-model-len": "vllm serve",
    "--served-model-name": "vllm serve", "--no-deps": "pip", "--force-reinstall": "pip", "--always": "git describe",
    "--dirty": "git describe", "--sample-id": "inspect eval", "--answer_dir": "StableToolBench's converter script",
    # python -m runners.serving.e2e's own parser (runners/serving/e2e.py), not a tba command
    "--backends": "e2e", "--compiled": "e2e", "--constrained-method": "e2e", "--engine": "e2e",
    "--engine-command": "e2e", "--judge-evaluator": "e2e", "--methods": "e2e", "--model-folder": "e2e",
    "--profile": "e2e", "--vllm-arg": "e2e", "--vllm-python": "e2e",
    # make's plumbing (runners/cli/make_front.py's own parser) and what its recipes run besides tba
    "--makefile": "runners/cli/make_front.py", "--corpus": "benchmarks/bench_parsers.py",
    "--adversarial": "benchmarks/bench_parsers.py", "--strict": "mkdocs build",
    "--flag": "a placeholder in make_recipes' messages (--flag=VALUE)",
    "--judge-": "the --judge-* flags, as a family", "--llm-": "the simulator's --llm-* flags, as a family", "--prot": "a typo in an example of did-you-mean",
}
# "tba X" where X is not a command word: the error prefix of every command ("tba {command}: error")
DYNAMIC_ALLOWED = {("runners/cli/main.py", "tba \x00: error: \x00"), ("runners/cli/main.py", "tba \x00: interrupted")}
NOT_COMMANDS = {"does", "preflight"}  # "when tba does not run under make"; a probe's name ("tba preflight: ...")


def all_commands(parser: argparse.ArgumentParser, words=()):
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from all_commands(sub, (*words, name))


PARSERS = dict(all_commands(build_parser()))
COMMANDS = {words[0] for words in PARSERS if words}
FLAGS = {option for parser in PARSERS.values() for action in parser._actions for option in action.option_strings}


def literals(project: Path = PROJECT_ROOT):
    """(file, line, text) of every string literal in runners/ and toolbench_adapter/ (f-strings: values as VALUE)."""
    for root in ("runners", "toolbench_adapter"):
        for path in sorted((project / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            joined_parts = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.JoinedStr):
                    text = "".join(part.value if isinstance(part, ast.Constant) else VALUE for part in node.values)
                    joined_parts.update(id(part) for part in node.values)
                    yield str(path.relative_to(project)), node.lineno, text
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in joined_parts:
                    yield str(path.relative_to(project)), node.lineno, node.value


def test_every_tba_command_named_exists():
    wrong = []
    for path, line, text in literals():
        for match in TBA.finditer(text):
            word = match.group(1)
            if VALUE in word:
                if (path, text) not in DYNAMIC_ALLOWED:
                    wrong.append(f"{path}:{line}: a command made from a value: {text!r}")
            elif word not in COMMANDS and word not in NOT_COMMANDS:
                wrong.append(f"{path}:{line}: tba {word}")
    assert wrong == []


def test_every_flag_named_exists():
    wrong = [f"{path}:{line}: {match.group()}" for path, line, text in literals()
             for match in FLAG.finditer(text) if match.group() not in FLAGS and match.group() not in OTHER_PROGRAMS]
    assert wrong == []


def test_the_flags_made_from_names_exist():
    """A setting's flag (settings_check.flag_for), the option flags and a sweep judge's keys."""
    from runners.sweep.spec import JUDGE_KEYS
    from toolbench_adapter.errors import OptionError

    run = PARSERS[("run",)]
    run_flags = {option for action in run._actions for option in action.option_strings}
    missing = [f.name for f in fields(RunConfig) if f.name not in NO_FLAG and flag_for(f.name) not in run_flags]
    assert missing == []
    assert set(OptionError.FLAGS.values()) <= run_flags
    evaluate = {option for action in PARSERS[("evaluate",)]._actions for option in action.option_strings}
    assert set(JUDGE_KEYS.values()) - {"--concurrency"} <= evaluate


def test_the_scan_finds_a_command_and_a_flag_that_do_not_exist(tmp_path):
    """The tests above can fail: a made-up hint is found."""
    bad = tmp_path / "runners" / "bad.py"
    bad.parent.mkdir()
    bad.write_text('FIX = "see tba parsers --help, or pass --no-such-flag"\nname = "x"\nHINT = f"tba {name}s"\n')
    found = list(literals(tmp_path))
    commands = [m.group(1) for _, _, text in found for m in TBA.finditer(text)]
    assert "parsers" in commands and f"{VALUE}s" in commands and "parsers" not in COMMANDS
    assert "--no-such-flag" in [m.group() for _, _, text in found for m in FLAG.finditer(text)]
