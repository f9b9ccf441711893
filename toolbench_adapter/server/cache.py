"""The response cache, in StableToolBench's layout, indexed once and held in memory.

Layout (upstream): ``{root}/{category}/{tool}_for_{category}/{api}.json``, each file a JSON object mapping
``str(parsed_tool_input)`` (the Python repr) to a stored answer ``{"error": ..., "response": ...}``.

Simulated entries are marked by a mirror tree in the same layout: ``{root}/_simulated/{category}/
{tool}_for_{category}/{api}.json`` holds exactly the entries a simulator produced (same key -> answer
format, so any upstream reader can read it too). A key present there is simulated, whether or not it is
also in the main file. With ``simulated_into_main`` (compat stb: upstream stores simulated answers in the
cache) they are written to both; otherwise (strict) only to the mirror tree, so the main tree stays real.

Upstream re-reads the JSON file on every request; here the folder is listed once at start, a file is
parsed on its first use and kept, and writes go to a temp file then os.replace, one lock per file.
A file that is not valid JSON is served as empty and never written over.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from ..fileio import write_text_atomic
from .names import SIMULATED_DIR, ApiKey

log = logging.getLogger(__name__)


class _Store:
    """One tree (main or simulated): relative path -> entries, loaded lazily."""

    def __init__(self, root: Path | None):
        self.root = root
        self.files: set[str] = set()
        self.entries: dict[str, dict] = {}
        self.broken: set[str] = set()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        if root is not None and root.is_dir():
            for path in root.glob("*/*/*.json"):
                if path.is_file():
                    self.files.add(path.relative_to(root).as_posix())

    def lock(self, rel: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(rel, threading.Lock())

    def get_file(self, rel: str) -> dict:
        entries = self.entries.get(rel)
        if entries is not None:
            return entries
        with self.lock(rel):
            if rel in self.entries:
                return self.entries[rel]
            entries = {}
            if rel in self.files:
                entries = self._read(rel)
            self.entries[rel] = entries
            return entries

    def _read(self, rel: str) -> dict:
        path = self.root / rel
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            log.warning("cache file %s unreadable (%s): served as empty, never overwritten", path, exc)
            self.broken.add(rel)
            return {}
        if not isinstance(data, dict):
            log.warning("cache file %s is not a JSON object: served as empty, never overwritten", path)
            self.broken.add(rel)
            return {}
        return data

    def known(self, rel: str) -> dict | None:
        """The entries of a file this tree has (on disk or in memory), else None."""
        if rel in self.entries or rel in self.files:
            return self.get_file(rel)
        return None

    def put(self, rel: str, key: str, value: Any, save: bool) -> bool:
        """Add one entry (memory always; disk when ``save``). Returns True when written to disk."""
        entries = self.get_file(rel)
        with self.lock(rel):
            entries[key] = value
            if not save or self.root is None or rel in self.broken:
                return False
            write_json_atomic(self.root / rel, entries, self.root)
            self.files.add(rel)
            return True


def write_json_atomic(path: Path, data: Any, root: Path) -> None:
    """temp file in the same folder + os.replace (fileio): readers see the old file or the new one, never half."""
    resolved_root = root.resolve()
    target = path.resolve()
    if resolved_root not in target.parents:
        raise ValueError(f"refusing to write {target}: outside {resolved_root}")
    write_text_atomic(target, json.dumps(data, indent=2, ensure_ascii=False))


class ResponseCache:
    def __init__(self, root: str | Path | None = None, save: bool = True, simulated_into_main: bool = True):
        self.root = Path(root).resolve() if root is not None else None
        if self.root is not None and self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(str(self.root))
        self.save = save and self.root is not None
        self.simulated_into_main = simulated_into_main
        self.main = _Store(self.root)
        self.simulated = _Store(self.root / SIMULATED_DIR if self.root is not None else None)
        self.main.files = {rel for rel in self.main.files if not rel.startswith(SIMULATED_DIR + "/")}

    @property
    def file_count(self) -> int:
        return len(self.main.files)

    def lookup(self, api: ApiKey, key: str) -> tuple[Any, bool] | None:
        """(answer, simulated) for a cached key, else None."""
        rel = api.relative_path()
        simulated = self.simulated.known(rel)
        main = self.main.known(rel)
        if main is not None and key in main:
            return main[key], bool(simulated) and key in simulated
        if simulated is not None and key in simulated:
            return simulated[key], True
        return None

    def examples(self, api: ApiKey, limit: int = 5) -> list[tuple[str, Any]]:
        """Real (non-simulated) entries of an API, in file order: few-shot material for the LLM simulators."""
        rel = api.relative_path()
        main = self.main.known(rel)
        if not main:
            return []
        simulated = self.simulated.known(rel) or {}
        real = [(k, v) for k, v in list(main.items()) if k not in simulated]
        return real[:limit]

    def store_simulated(self, api: ApiKey, key: str, answer: Any) -> bool:
        rel = api.relative_path()
        # the mark first: a crash between the two writes must never leave an unmarked simulated entry
        written = self.simulated.put(rel, key, answer, self.save)
        if self.simulated_into_main:
            written = self.main.put(rel, key, answer, self.save) and written
        return written

    def store_real(self, api: ApiKey, key: str, answer: Any) -> bool:
        return self.main.put(api.relative_path(), key, answer, self.save)
