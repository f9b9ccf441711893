"""Errors about the user's input: they name the file, the field and the fix, and map to exit status 2."""

from __future__ import annotations

from pathlib import Path


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
