"""``replay``: the assistant turns of recorded answer files, so a released run goes through the whole
pipeline deterministically, with no model.

The runner says which turn it wants in ``request.key``: {"group", "query_id", "method", "path", "attempt"},
path = [[name, arguments_raw], ...] of the calls made so far on the current branch, attempt = how many
children the current node already has. Answer files are found as {folder}/{group}/{query_id}_{method}.json
or, when the folder is the group folder itself, {folder}/{query_id}_{method}.json (`tba replay` lays any other
layout out that way). Recorded names and arguments are served byte for byte. A request with no recorded turn
is a replay gap: an error Completion with error_kind "replay_gap" (an infrastructure failure of the run,
not the model's). ``natural_dialect`` is what the recordings hold: "openai-tools" for function-call messages
and node-only recordings, "toolllama" for ReAct text; a text prompt (toolllama dialect) gets the turn
written as ReAct text.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.files.input_files import read_json

from ..failures import REPLAY_GAP
from .base import Completion, ModelRequest, reject_unknown_options
from .recorded_turns import Turn, TurnKey, index_turns, turn_trees

KEY_FIELDS = ("group", "query_id", "method", "path", "attempt")
_REACT_TEXT = re.compile(r"(^|\n)Action:.*\nAction Input:", re.DOTALL)


def recording_dialect(answer: dict) -> str | None:
    """"openai-tools" (function_call / tool_calls messages), "toolllama" (ReAct text in assistant
    messages, no native call anywhere), or None when the file holds no assistant message to tell."""
    react = False
    for messages in (answer.get("answer_generation") or {}).get("train_messages") or []:
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            if message.get("function_call") or message.get("tool_calls"):
                return "openai-tools"
            react = react or bool(_REACT_TEXT.search(str(message.get("content") or "")))
    return "toolllama" if react else None


def react_text(turn: Turn) -> str:
    """A recorded turn as the ReAct text a ToolLLaMA-style model writes (for text-prompt dialects)."""
    parts = [f"Thought: {turn.text}" if turn.text else "Thought: "]
    if turn.call is not None:
        parts += [f"Action: {turn.call[0]}", f"Action Input: {turn.call[1]}"]
    return "\n".join(parts)


class _RecordedQuery:
    """One answer file's turns plus how often each key has been asked (keys shared by several turns are
    served in recorded order, then from the start again)."""

    def __init__(self, path: Path):
        self.path = path
        self.index = index_turns(turn_trees(read_json(path, "answer file")))
        self.asked: dict[TurnKey, int] = {}
        self.calls_served = 0

    def next_turn(self, key: TurnKey) -> Turn | None:
        turns = self.index.get(key)
        if not turns:
            return None
        n = self.asked.get(key, 0)
        self.asked[key] = n + 1
        return turns[n % len(turns)]


class ReplayBackend:
    name = "replay"
    accepts_messages = True
    supports_tools = True

    def __init__(
        self,
        *,
        answers: str | Path | list[str | Path] | None = None,
        model: str | None = None,  # `--model FOLDER` works too, so the CLI needs no replay-only flag
        base_url: str | None = None,  # accepted so every backend takes the same keywords; not used
        api_key: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        **unknown,
    ):
        reject_unknown_options(type(self), unknown)
        folders = answers if answers is not None else model
        if folders is None:
            raise InputError("the replay backend needs answer folders", field="model",
                             fix="pass --model with a folder of {group}/{query_id}_{method}.json answer files")
        if isinstance(folders, (str, Path)):
            folders = [folders]
        self.folders = [Path(f).expanduser() for f in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise InputError("answer folder not found", path=folder,
                                 fix="pass a folder of {group}/{query_id}_{method}.json files (or a group folder)")
        self.model = "replay:" + ",".join(str(f) for f in self.folders)
        self._queries: dict[tuple[str, int, str], _RecordedQuery | None] = {}
        self._lock = threading.Lock()

    def natural_dialect(self) -> str:
        """What the recordings hold (the first file that tells); node-only recordings replay as native calls."""
        for folder in self.folders:
            for path in files_under(folder, "*.json"):
                try:
                    found = recording_dialect(json.loads(path.read_text(encoding="utf-8")))
                except (OSError, ValueError, AttributeError):
                    continue
                if found:
                    return found
        return "openai-tools"

    def preflight(self) -> None:
        if not any(next(folder.rglob("*.json"), None) for folder in self.folders):
            raise InputError("no answer files (*.json) in the replay folders", path=", ".join(map(str, self.folders)),
                             fix="pass the output folder of a run ({group}/{query_id}_{method}.json)")

    def answer_file(self, group: str, query_id: int, method: str) -> Path | None:
        name = f"{query_id}_{method}.json"
        for folder in self.folders:
            for candidate in (folder / group / name, folder / name if folder.name == group else None):
                if candidate is not None and candidate.is_file():
                    return candidate
        return None

    def _query(self, group: str, query_id: int, method: str) -> _RecordedQuery | None:
        ident = (group, query_id, method)
        if ident not in self._queries:
            path = self.answer_file(group, query_id, method)
            self._queries[ident] = _RecordedQuery(path) if path else None
        return self._queries[ident]

    def complete(self, request: ModelRequest) -> Completion:
        start = time.perf_counter()
        key = request.key
        missing = [f for f in KEY_FIELDS if f not in key]
        if missing:
            return Completion(error=f"replay: request.key lacks {', '.join(missing)} (got {sorted(key)})")
        group, query_id, method = str(key["group"]), int(key["query_id"]), str(key["method"])
        path = tuple((str(name), str(arguments)) for name, arguments in key["path"])
        attempt = int(key["attempt"])
        with self._lock:  # one run asks from many threads; the ask counters must not race
            try:
                recorded = self._query(group, query_id, method)
            except (OSError, ValueError, InputError) as exc:  # the reader's refusals (too deep, not UTF-8, ...)
                return Completion(error=f"replay: cannot read the answer file for {group}/{query_id}_{method}: {exc}")
            if recorded is None:
                return Completion(error=f"replay: no answer file {group}/{query_id}_{method}.json in "
                                        f"{', '.join(map(str, self.folders))}", error_kind=REPLAY_GAP)
            turn = recorded.next_turn((path, attempt))
            if turn is None:
                return Completion(error=f"replay: no recorded turn for {group}/{query_id}_{method} after "
                                        f"{[name for name, _ in path]} (attempt {attempt})", error_kind=REPLAY_GAP)
            if request.prompt is not None or (request.messages is not None and not request.tools):  # text dialect
                return Completion(text=react_text(turn), latency_s=time.perf_counter() - start, finish_reason="stop")
            tool_calls = None
            if turn.call is not None:
                recorded.calls_served += 1
                name, arguments = turn.call
                tool_calls = [{"id": f"replay_{recorded.calls_served}", "type": "function",
                               "function": {"name": name, "arguments": arguments}}]
        return Completion(
            text=turn.text,
            tool_calls=tool_calls,
            latency_s=time.perf_counter() - start,
            finish_reason="tool_calls" if tool_calls else "stop",
        )
