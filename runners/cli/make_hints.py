"""Fix lines for a make user: the make variable that sets a flag (``RUN=NAME``, not ``--name NAME``).

The Makefile runs ``tba`` with ``TBA_MAKE_VARIABLES`` in its environment (only the commands it starts, not
``make test``'s pytest): each flag its targets set from a make variable, as FLAG=VARIABLE pairs, e.g.
``--name=RUN --judge-url=JUDGE_URL --judge-self=JUDGE=self``. When it is there, an error's field and fix are
written with those variables (main.py), so a make user is told what to type on the make command line. A ``tba
...`` command inside a fix is left as it is (one runs it as is), and so is a flag no make variable sets.
"""

from __future__ import annotations

import os
import re

ENV = "TBA_MAKE_VARIABLES"

# a `tba ...` command or a `quoted` span: copied as is (up to the end of its clause)
_KEEP = re.compile(r"`[^`]*`|\btba [a-z][\w-]*[^;\n)`]*")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)(?:(=| )('[^']*'|\"[^\"]*\"|[^\s,;)]+))?")
# words that follow a flag in a sentence without being its value ("pass --judge-url with an endpoint")
_NOT_VALUES = {"with", "or", "and", "to", "for", "of", "the", "a", "an", "is", "in", "on", "at", "as", "that",
               "which", "when", "then", "from", "if", "not", "instead", "here", "only", "too", "out", "takes",
               "given", "says", "would", "(default", "first", "again", "too:", "also"}


def make_variables(environ=None) -> dict[str, str]:
    """FLAG -> make variable (``--judge-self`` -> ``JUDGE=self``) from the Makefile's TBA_MAKE_VARIABLES; empty
    when tba does not run under make."""
    text = (os.environ if environ is None else environ).get(ENV, "")
    pairs = {}
    for item in text.split():
        flag, sep, variable = item.partition("=")
        if flag.startswith("--") and sep and variable:
            pairs[flag] = variable
    return pairs


def for_make(text: str | None, variables: dict[str, str]) -> str | None:
    """``text`` with each flag a make variable sets written as that variable: ``--name x`` -> ``RUN=x``,
    ``--judge-url with ...`` -> ``JUDGE_URL with ...``, ``--judge-self`` -> ``JUDGE=self``."""
    if not text or not variables:
        return text
    out, at = [], 0
    for kept in _KEEP.finditer(text):
        out.append(_flags(text[at:kept.start()], variables))
        out.append(kept.group())
        at = kept.end()
    out.append(_flags(text[at:], variables))
    return "".join(out)


def _flags(text: str, variables: dict[str, str]) -> str:
    def one(match: re.Match) -> str:
        flag, sep, value = match.groups()
        variable = variables.get(flag)
        if variable is None:
            return match.group()
        if "=" in variable:  # a switch set by a variable's value: --judge-self -> JUDGE=self
            return variable + (f"{sep}{value}" if value else "")
        if value is None or value.startswith("-") or (sep == " " and value.lower() in _NOT_VALUES):
            return variable + (f"{sep}{value}" if value else "")
        return f"{variable}={value}"

    return _FLAG.sub(one, text)
