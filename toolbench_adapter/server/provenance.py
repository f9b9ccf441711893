"""Who made a stored tool response, read from the response itself: this project's simulators' answers are
recognised wherever they sit (issue 40), so a cache folder made of them never passes for StableToolBench's.

- ``schema`` (deterministic): an entry equal to the answer it gives for that request (the entry's key parsed
  back into the tool input; the API's documentation as this server has it, and without any) is its answer,
  marked or not, in any folder;
- every simulator's answer is stored with a mark, ``MARK`` (the simulator's name) inside the entry; the server
  strips it before answering (an observation is the answer's JSON text: the model never sees it) and the cache
  reader checks it;
- the cache's ``_simulated/`` mirror tree (cache.py) marks the keys a simulator made in that folder.

What cannot be told apart (README): an ``llm`` or ``mirrorapi`` answer stored without its mark (copied as
``{"error", "response"}`` only, or written before marks existed) from a real answer; StableToolBench's own
cache, which keeps GPT-simulated answers unmarked, from real ones (it is the leaderboard's cache as released and
counts as the cache); a ``schema`` answer made with other documentation (another query set or tool folder) than
this reader's.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from .catalog import ApiDoc
from .names import ApiKey
from .simulators.base import SimulationRequest
from .simulators.schema import SchemaSimulator, could_have_made

MARK = "_tba_made_by"  # an entry's mark: the name of the simulator that made it
UNMARKED = "a simulator (unmarked)"  # in the _simulated/ mirror, without a mark: which one is not known
KEY_CHARS_MAX = 100_000  # a cache key parsed back longer than this is not a tool call a model wrote
_SCHEMA = SchemaSimulator()


def marked(answer: Any, simulator: str) -> Any:
    """The answer as it is stored: with the name of the simulator that made it."""
    return {**answer, MARK: simulator} if isinstance(answer, dict) else answer


def served(answer: Any) -> Any:
    """The answer as it is sent: without the mark."""
    if isinstance(answer, dict) and MARK in answer:
        return {k: v for k, v in answer.items() if k != MARK}
    return answer


def mark_of(answer: Any) -> str | None:
    mark = answer.get(MARK) if isinstance(answer, dict) else None
    return mark if isinstance(mark, str) and mark else None


def parse_key(cache_key: str) -> tuple[bool, Any]:
    """(parsed, tool input) from a cache key (``str(parsed tool input)``, a Python literal)."""
    if not isinstance(cache_key, str) or len(cache_key) > KEY_CHARS_MAX:
        return False, None
    try:
        return True, ast.literal_eval(cache_key)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _canonical(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None


def is_schema_answer(answer: Any, key: ApiKey, tool_input: Any, cache_key: str, doc: ApiDoc | None) -> bool:
    """Whether ``answer`` is what the schema simulator answers to this request (with ``doc``, or without any)."""
    if not isinstance(answer, dict) or answer.get("error") != "":
        return False  # its answers always carry an empty error
    if not could_have_made(answer.get("response"), doc):  # most real answers end here, with no simulation
        return False
    stored = _canonical(served(answer))
    if stored is None:
        return False
    for documentation in (doc, None) if doc is not None else (None,):
        try:
            made = _SCHEMA.simulate(SimulationRequest(key, tool_input, cache_key, documentation)).answer
        except Exception:  # noqa: BLE001 (a template it cannot fill: then it did not make this answer)
            continue
        if _canonical(made) == stored:
            return True
    return False


def made_by(answer: Any, key: ApiKey, tool_input: Any, cache_key: str, doc: ApiDoc | None,
            in_mirror: bool = False) -> str | None:
    """The simulator that made a stored answer (its mark, else ``schema`` by content, else UNMARKED for a key of
    the _simulated/ mirror); None: nothing says a simulator of this project made it."""
    mark = mark_of(answer)
    if mark is not None:
        return mark
    if is_schema_answer(answer, key, tool_input, cache_key, doc):
        return "schema"
    return UNMARKED if in_mirror else None
