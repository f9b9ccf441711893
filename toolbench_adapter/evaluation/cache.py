"""On-disk cache of judgements, keyed by (judge, evaluator fingerprint, query, answer, repeat index).

One JSON line per judgement, appended under a lock; the whole file is read at start. Judge errors are
not cached, so scoring again retries them; everything else costs no request the second time.

The path is checked before any work (``check_cache_path``: exit 2 naming ``--cache``). A write that fails later
(a full disk) loses no verdict: it is kept in memory (the label files get it), counted in ``unwritten`` and
warned about once; the next run asks it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from toolbench_adapter.files.fileio import OutputPathError, check_output_file


def cache_key(judge: str, fingerprint: str, query: str, answer: dict[str, Any], repeat: int) -> str:
    text = json.dumps([judge, fingerprint, query, answer, repeat], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_cache_path(path: str | Path | None, flag: str = "--cache") -> None:
    """Preflight of a judgement cache file, before any judge is asked: its folder can be written (no file in
    the way), no folder sits at its name, and an existing file can be appended to. OutputPathError (exit 2)
    naming ``flag`` otherwise: before this, the first verdict raised a traceback."""
    if not path:
        return
    try:
        check_output_file(path)
        if Path(path).exists() and not os.access(path, os.W_OK):
            raise OutputPathError("cannot write here (Permission denied)", path=path,
                                  fix="make the file writable or choose another cache file")
    except OutputPathError as exc:
        raise OutputPathError(exc.problem, path=path, field=flag, fix=exc.fix) from None  # the file as given


class JudgementCache:
    _warned: set[str] = set()  # paths whose failed write was already reported (once per process, not per group)

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        self.unwritten = 0  # verdicts kept in memory only: the file could not be appended to
        self._torn = False  # the file may end without a newline: the next record starts a fresh line
        if self.path and self.path.exists():
            with open(self.path, encoding="utf-8") as handle:
                for line in handle:
                    self._torn = not line.endswith("\n")
                    try:
                        record = json.loads(line)
                        self._entries[record["key"]] = record["value"]
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut short by a crash: ignore it, it will be judged again

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            self._entries[key] = value
            if self.path is None:
                return
            line = json.dumps({"key": key, "value": value}, ensure_ascii=False) + "\n"
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(("\n" if self._torn else "") + line)
                self._torn = False
            except OSError as exc:  # a full disk mid-judging: the verdict stays in memory, the judging goes on
                self._torn = True  # part of the line may be on disk; an empty or cut line is skipped on reading
                self.unwritten += 1
                if str(self.path) not in JudgementCache._warned:
                    JudgementCache._warned.add(str(self.path))
                    print(f"warning: judge cache {self.path}: cannot write ({exc.strerror or exc}): verdicts are "
                          "kept in memory and in the label files, not in the cache (a later run asks them again); "
                          "free space or pass another --cache", file=sys.stderr)

    def __len__(self) -> int:
        return len(self._entries)
