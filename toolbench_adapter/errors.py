"""Errors about the user's input: they name the file, the field and the fix, and map to exit status 2."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# the fix of every "not a run folder" error (evaluate, report, table, merge, the comparisons)
RUN_FOLDER_FIX = "give a folder written by `tba run` (results/runs/NAME), or run `make eval` first"


class InputError(Exception):
    """Bad input from the user (a file, a flag, a folder). The CLI prints it and exits with status 2."""

    def __init__(self, problem: str, *, path: str | Path | None = None, field: str | None = None, fix: str | None = None):
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.field = field
        self.fix = fix
        super().__init__(self.message())

    def message(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}: "
        if self.field:
            where += f"field {self.field!r}: "
        text = where + self.problem
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class OptionError(InputError):
    """A backend or dialect option that is unknown, of the wrong type or out of range. ``setting``: the run
    setting that holds it (backend_options, dialect_options); ``key``: the option; ``example``: a value that
    would do. The fix is written as flags; ``in_file(path)`` is the same error for an option a config file
    set: it names the file and writes the fix as that file's YAML."""

    FLAGS = {"backend_options": "--backend-option", "dialect_options": "--dialect-option"}

    def __init__(self, problem: str, *, setting: str, key: str, example: Any = None, known: Iterable[str] = ()):
        self.setting, self.key, self.example, self.known = setting, key, example, list(known)
        flag = self.FLAGS.get(setting)
        super().__init__(problem, field=f"{setting} ({flag})" if flag else setting, fix=self.fix_text(in_file=False))

    def fix_text(self, in_file: bool) -> str | None:
        parts = []
        if self.example is not None:
            if in_file:  # a YAML flow mapping; JSON scalars are YAML scalars
                parts.append(f"write e.g. {self.setting}: {{{self.key}: {json.dumps(self.example)}}}")
            else:
                value = self.example if isinstance(self.example, str) else json.dumps(self.example)
                parts.append(f"write e.g. {self.FLAGS.get(self.setting, self.setting)} {self.key}={value}")
        if self.known:
            parts.append(f"known options: {', '.join(self.known)}")
        elif self.example is None:
            parts.append("it takes no options: leave them out")
        return "; ".join(parts)

    def in_file(self, path: str | Path) -> InputError:
        return InputError(self.problem, path=path, field=self.setting, fix=self.fix_text(in_file=True))
