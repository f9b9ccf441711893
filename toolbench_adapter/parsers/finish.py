"""Finish-call arguments: ``return_type`` and ``final_answer`` out of the raw arguments string.

Two variants:

- ``upstream`` reproduces StableToolBench's ``rapidapi_wrapper._step`` (reference §5.1): first
  ``json.loads(raw, strict=False)``; when that fails, the substring heuristic: return_type is
  ``give_answer`` / ``give_up_and_restart`` when ``"return_type": "<value>"`` occurs literally (exactly
  one space), else the text between the marker and the first ``",`` (``find`` returning -1 when there
  is none, so the slice then drops the last character); final_answer is everything after
  ``"final_answer": "`` to the end of the string, closing ``"}`` and junk included.
- ``robust`` decodes through the JSON ladder (no-space, single-quoted and truncated forms), and falls
  back to a tolerant regex that accepts either quote and any spacing.

Mapping to statuses (done by the environment): return_type None -> 2 "must have return_type";
give_up_and_restart -> 4; give_answer with final_answer None -> 2; give_answer with an answer -> 3;
anything else -> 2 "not a valid choice".

Deviations from upstream, both so that the status outcome stays the same under a str-only interface:
- A decoded value that is present but not a string (``"final_answer": null``, a number, a list) is
  rendered with ``json.dumps``: upstream only checks that the key exists, so an answer of ``null``
  still yields status 3 and a ``return_type`` of ``null`` yields "not a valid choice".
- JSON that decodes to a non-object (a list, a string) goes to the heuristic. Upstream calls
  ``.keys()`` on it and crashes the step with AttributeError; there is no upstream outcome to copy.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..protocol.env import FINISH_FINAL_ANSWER_MARKER, FINISH_RETURN_TYPE_END, FINISH_RETURN_TYPE_MARKER
from ..protocol.functions import GIVE_ANSWER, GIVE_UP
from .ladder import decode_json

VARIANTS = ("upstream", "robust")

# robust fallback: either quote, any spacing; the value runs to the matching quote (or the end)
_ROBUST_RETURN_TYPE = re.compile(r"""["']return_type["']\s*:\s*["']([^"'\n]*)""")
_ROBUST_FINAL_ANSWER = re.compile(r"""["']final_answer["']\s*:\s*(["'])((?:\\.|(?!\1).)*+)""", re.DOTALL)  # *+: no
# backtracking state per character (nothing follows the group, so giving characters back never helps)


@dataclass
class FinishArgs:
    return_type: str | None
    final_answer: str | None
    method: str  # "json", "heuristic", a ladder rung name, or "none"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _from_dict(data: dict, method: str) -> FinishArgs:
    return_type = _as_text(data["return_type"]) if "return_type" in data else None
    final_answer = _as_text(data["final_answer"]) if "final_answer" in data else None
    return FinishArgs(return_type, final_answer, method)


def parse_finish(raw: str, variant: str = "upstream") -> FinishArgs:
    """Parse Finish arguments. Never raises on any string; an unknown variant is a programming error."""
    if variant == "upstream":
        return _parse_upstream(raw if isinstance(raw, str) else "")
    if variant == "robust":
        return _parse_robust(raw if isinstance(raw, str) else "")
    raise ValueError(f"unknown Finish variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def _parse_upstream(raw: str) -> FinishArgs:
    try:
        data = json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        return _from_dict(data, "json")
    return _upstream_heuristic(raw)


def _upstream_heuristic(raw: str) -> FinishArgs:
    return_type = None
    final_answer = None
    if FINISH_RETURN_TYPE_MARKER in raw:
        if FINISH_RETURN_TYPE_MARKER + GIVE_ANSWER + '"' in raw:
            return_type = GIVE_ANSWER
        elif FINISH_RETURN_TYPE_MARKER + GIVE_UP + '"' in raw:
            return_type = GIVE_UP
        else:
            start = raw.find(FINISH_RETURN_TYPE_MARKER) + len(FINISH_RETURN_TYPE_MARKER)
            return_type = raw[start:raw.find(FINISH_RETURN_TYPE_END)]  # find() == -1 drops the last char
    if FINISH_FINAL_ANSWER_MARKER in raw:
        final_answer = raw[raw.find(FINISH_FINAL_ANSWER_MARKER) + len(FINISH_FINAL_ANSWER_MARKER):]
    method = "heuristic" if return_type is not None or final_answer is not None else "none"
    return FinishArgs(return_type, final_answer, method)


def _parse_robust(raw: str) -> FinishArgs:
    value, rung, _kind = decode_json(raw)
    if isinstance(value, str):  # double-encoded: the arguments are a JSON string holding the object
        inner, inner_rung, _ = decode_json(value)
        if isinstance(inner, dict):
            value, rung = inner, inner_rung
    if isinstance(value, dict) and ("return_type" in value or "final_answer" in value):
        args = _from_dict(value, rung.value if rung else "none")
        if args.return_type is not None:
            args.return_type = args.return_type.strip()
        return args
    return _robust_heuristic(raw)


def _robust_heuristic(raw: str) -> FinishArgs:
    return_type = None
    final_answer = None
    match = _ROBUST_RETURN_TYPE.search(raw)
    if match:
        return_type = match.group(1).strip()
    match = _ROBUST_FINAL_ANSWER.search(raw)
    if match:
        final_answer = match.group(2)
        try:  # undo JSON escapes when the captured text is a valid JSON string body
            final_answer = json.loads(f'"{final_answer}"', strict=False)
        except ValueError:
            pass
    method = "heuristic" if return_type is not None or final_answer is not None else "none"
    return FinishArgs(return_type, final_answer, method)
