"""Examples that cannot go stale: the docs' command blocks marked runnable, run by tests/test_docs_examples.py on
the offline set-up, their output checked loosely.

The marker is the fence's attribute list: ```` ```{.bash .run} ```` (MkDocs renders it as a bash block). Inside:

    $ tba queries --stb-root data/stabletoolbench     <- a command (a line ending in \\ goes on below)
    G1_instruction   163                               <- a line its output must hold
    …                                                  <- (alone) output left out: ignored
    total            765
    $ make eval GROUP=G1_tool   # exit 2                <- the exit status it must end with (default 0)
    …unknown variable GROUP; did you mean GROUPS?…

An expected line matches an output line (stdout and stderr together) that contains it, runs of spaces counting
as one and `…` (or `...`) standing for any text; the expected lines must appear in their order. A block's
commands run in one bash, from the project's root (so paths print as a reader's would), one after the other:
`S=...` set by one is seen by the next. `make` runs with the installed environment as it is (`make -o
VENV/.installed VENV=...`), so no example installs anything."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})\s*\{([^}]*)\}\s*$")
EXIT = re.compile(r"#\s*exit\s+(\d+)\b[^#\n]*$")  # `# exit 2`, or `# exit 1: why` at the end of the command
MARK = "@@tba-docs-example-exit"
WILDCARD = re.compile(r"…|\.\.\.")


@dataclass
class Command:
    text: str  # as bash reads it (continuation lines joined by their newlines)
    exit: int
    expected: list[str] = field(default_factory=list)


@dataclass
class Example:
    page: str  # docs/sweeps.md
    line: int  # the fence's line, 1-based
    commands: list[Command]

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str) -> list[tuple[int, list[str]]]:
    """(the fence's line, the block's lines) of every fenced block marked `.run`."""
    found, lines, number = [], text.splitlines(), 0
    while number < len(lines):
        opened = FENCE_OPEN.match(lines[number])
        if opened and ".run" in opened.group(2).split():
            fence, start, body = opened.group(1), number, []
            number += 1
            while number < len(lines) and not lines[number].startswith(fence):
                body.append(lines[number])
                number += 1
            found.append((start + 1, body))
        number += 1
    return found


def parse(body: list[str]) -> list[Command]:
    commands: list[Command] = []
    lines = iter(body)
    for line in lines:
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\"):
                text += "\n" + next(lines, "")
            exit_status = EXIT.search(text)
            commands.append(Command(text, int(exit_status.group(1)) if exit_status else 0))
        elif commands and line.strip() and line.strip() not in ("…", "..."):
            commands[-1].expected.append(line)
        elif not commands and line.strip():
            raise ValueError(f"a runnable block starts with output, not a `$ ` command: {line!r}")
    return commands


def examples(docs: Path, root: Path) -> list[Example]:
    found = []
    for page in sorted(docs.rglob("*.md")):
        for line, body in blocks(page.read_text(encoding="utf-8")):
            found.append(Example(page.relative_to(root).as_posix(), line, parse(body)))
    return found


def normal(text: str) -> str:
    return " ".join(text.split())


def pattern(expected: str) -> re.Pattern:
    return re.compile(".*?".join(re.escape(part) for part in WILDCARD.split(normal(expected))))


def missing(expected: list[str], output: str) -> list[str]:
    """The expected lines not found, in order, among the output's lines."""
    lines = [normal(line) for line in output.splitlines()]
    at, absent = 0, []
    for line in expected:
        wanted = pattern(line)
        for number in range(at, len(lines)):
            if wanted.search(lines[number]):
                at = number + 1
                break
        else:
            absent.append(line)
    return absent


def script(example: Example) -> str:
    parts = ['make() { command make -o "$TBA_DOCS_VENV/.installed" VENV="$TBA_DOCS_VENV" "$@"; }']
    for command in example.commands:
        parts += [command.text, f'printf "\\n{MARK} %s@@\\n" "$?"']
    return "\n".join(parts) + "\n"


def run(example: Example, root: Path, env: dict[str, str], timeout: float = 180) -> list[str]:
    """Run an example's commands; what did not hold, one line each (empty: it holds)."""
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script(example)], cwd=root, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    pieces = re.split(rf"\n{MARK} (\d+)@@\n", "\n" + done.stdout)
    outputs, statuses = pieces[0::2], [int(s) for s in pieces[1::2]]
    problems = []
    for number, command in enumerate(example.commands):
        shown = command.text.splitlines()[0][:80]
        if number >= len(statuses):
            problems.append(f"$ {shown}: did not run (the block stopped: bash exit {done.returncode})")
            continue
        output = outputs[number]
        if statuses[number] != command.exit:
            problems.append(f"$ {shown}: exit {statuses[number]}, the page says {command.exit}\n{output[-1500:]}")
        absent = missing(command.expected, output)
        if absent:
            problems.append(f"$ {shown}: output lacks {absent}\n--- its output:\n{output[-3000:]}")
    return problems


def environment(venv: Path, root: Path) -> dict[str, str]:
    """A reader's offline shell: the installed tba first on PATH, this checkout's code, no TBA_ setting (they
    choose the data), no network (proxies to a closed port), Hugging Face offline."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TBA_") and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "OPENAI_API_KEY")}
    closed = "http://127.0.0.1:9"
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(root), TBA_DOCS_VENV=str(venv),
               HTTP_PROXY=closed, HTTPS_PROXY=closed, http_proxy=closed, https_proxy=closed,
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    return env
