"""On-disk cache of judgements, keyed by (judge, evaluator fingerprint, query, answer, repeat index).

One JSON line per judgement, appended under a lock; the whole file is read at start. Judge errors are
not cached, so scoring again retries them; everything else costs no request the second time.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any


def cache_key(judge: str, fingerprint: str, query: str, answer: dict[str, Any], repeat: int) -> str:
    text = json.dumps([judge, fingerprint, query, answer, repeat], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgementCache:
    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._entries: dict[str, dict] = {}
        if self.path and self.path.exists():
            with open(self.path, encoding="utf-8") as handle:
                for line in handle:
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "value": value}, ensure_ascii=False) + "\n")

    def __len__(self) -> int:
        return len(self._entries)
