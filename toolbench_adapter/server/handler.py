"""The /virtual request flow, free of any web framework: body bytes in, (HTTP status, answer, source) out.

Order as upstream's server/main.py: names, chat_with_user, tool input parsing, cache lookup, then (where
upstream calls the real RapidAPI server and an LLM) a simulator chosen by name. Bad input gets a 4xx with
an ``{"error", "response"}`` body; nothing a client sends can make it answer 500 or touch files outside
its folders.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..protocol import env as E
from ..protocol import server as S
from .cache import ResponseCache
from .catalog import ApiCatalog
from .names import ApiKey, UnsafeName, api_key_for
from .provenance import made_by, served
from .simulators import SimulationRequest, Simulator
from .stats import ServerStats

log = logging.getLogger(__name__)
REQUIRED_FIELDS = ("category", "tool_name", "api_name", "tool_input")


@dataclass(frozen=True)
class Outcome:
    status: int  # HTTP status
    answer: Any
    source: str  # cache, cache_simulated, simulator:<name>, chat_with_user, tool_input_parse_error, bad_request
    body: bytes = b""  # the answer as sent (JSON, UTF-8); serialised here when not given
    made_by: str | None = None  # the simulator that made the answer (provenance.py), None: not one of ours

    def __post_init__(self) -> None:
        if not self.body:
            object.__setattr__(self, "body", json.dumps(self.answer, ensure_ascii=False).encode("utf-8"))


def _bad(status: int, problem: str) -> Outcome:
    return Outcome(status, {"error": f"request invalid: {problem}", "response": ""}, "bad_request")


class VirtualServer:
    def __init__(self, cache: ResponseCache, simulator: Simulator, catalog: ApiCatalog | None = None):
        self.cache = cache
        self.simulator = simulator
        self.catalog = catalog or ApiCatalog()
        self.stats = ServerStats()
        # what was checked of the endpoint the simulator asks (simulators/endpoint.py: model, host, listed, prompt),
        # set by whoever checked it before serving; /health says it, a run against this server records it
        self.simulator_endpoint: dict | None = None
        # the hit path's memory: names as clients send them -> cache location, and (location, key) -> the
        # reply prepared on its first hit; both bounded, the replies valid for one cache generation
        self._keys: dict[tuple[str, str, str], tuple[ApiKey, str]] = {}  # -> (key, its relative path)
        self._prepared: dict[tuple[str, str], Outcome] = {}
        self._prepared_bytes = 0
        self._prepared_generation: tuple[int, int] | None = None

    def answer_hit(self, body: bytes) -> Outcome | None:
        """The reply to a cache hit from memory only, without touching the disk or blocking: for the event
        loop. None for anything else (a miss, a file not parsed yet, any bad input): handle() answers those.
        Only a request that passes every check handle() makes before its lookup is answered here, so a hit
        gets the bytes handle() would give (tests/test_server_hot_path.py holds replies recorded before)."""
        started = time.perf_counter()
        try:
            payload = json.loads(body)
            category, tool_name, api_name = payload["category"], payload["tool_name"], payload["api_name"]
            tool_input = payload["tool_input"]
            if type(category) is not str or type(tool_name) is not str or type(api_name) is not str:
                return None
            if type(tool_input) is str:
                parsed = json.loads(tool_input) if tool_input else {}
            elif type(tool_input) is dict:
                parsed = tool_input
            else:
                return None
            cache_key = str(parsed)
        except (ValueError, TypeError, KeyError, RecursionError):  # not JSON, not an object, a field missing
            return None
        located = self._key_for(category, tool_name, api_name)
        if located is None or located[0].api == S.CHAT_WITH_USER_API:
            return None
        rel = located[1]
        generation = self.cache.generation
        if generation != self._prepared_generation:
            self._prepared.clear()
            self._prepared_bytes = 0
            self._prepared_generation = generation
        outcome = self._prepared.get((rel, cache_key))
        if outcome is None:
            hit = self.cache.lookup_in_memory(rel, cache_key)
            if hit is None:
                return None
            outcome = self._hit(located[0], parsed, cache_key, *hit)
            if self._prepared_bytes + len(outcome.body) > PREPARED_BYTES_MAX:
                self._prepared.clear()
                self._prepared_bytes = 0
            self._prepared[(rel, cache_key)] = outcome
            self._prepared_bytes += len(outcome.body)
        self.stats.record_on_loop(outcome.source, time.perf_counter() - started, outcome.made_by)
        return outcome

    def _hit(self, key: ApiKey, tool_input, cache_key: str, answer, in_mirror: bool, mark: str | None) -> Outcome:
        """A cache hit, with who made the answer (provenance.py: its mark, the schema simulator's answer by
        content, the _simulated mirror): a simulated answer is never counted as the cache's."""
        maker = mark or made_by(answer, key, tool_input, cache_key, self.catalog.get(key), in_mirror)
        return Outcome(200, served(answer), "cache_simulated" if maker else "cache", made_by=maker)

    def _key_for(self, category: str, tool_name: str, api_name: str) -> tuple[ApiKey, str] | None:
        """api_key_for and the key's relative path, remembered (a few thousand names at most); None for a
        name handle() refuses."""
        names = (category, tool_name, api_name)
        located = self._keys.get(names)
        if located is None:
            try:
                key = api_key_for(category, tool_name, api_name)
            except UnsafeName:
                return None
            if len(self._keys) >= NAMES_MAX:
                self._keys.clear()
            located = self._keys[names] = (key, key.relative_path())
        return located

    def handle(self, body: bytes) -> Outcome:
        started = time.perf_counter()
        try:
            outcome = self._handle(body)
        except RecursionError:  # JSON nested deeper than Python's recursion limit: the client's fault, not a 500
            outcome = _bad(400, f"JSON nested too deeply (more than about {_MAX_DEPTH_HINT} levels)")
        self.stats.record(outcome.source, time.perf_counter() - started, outcome.made_by)
        return outcome

    def _handle(self, body: bytes) -> Outcome:
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return _bad(400, f"the body is not JSON ({exc})")
        except RecursionError:
            return _bad(400, f"the body is JSON nested too deeply (more than about {_MAX_DEPTH_HINT} levels)")
        if not isinstance(payload, dict):
            return _bad(422, "the body must be a JSON object with " + ", ".join(S.PAYLOAD_FIELDS))
        missing = [f for f in REQUIRED_FIELDS if f not in payload or payload[f] is None]
        if missing:
            return _bad(422, f"missing field(s): {', '.join(missing)}")
        names = {f: payload[f] for f in ("category", "tool_name", "api_name")}
        wrong = [f for f, v in names.items() if not isinstance(v, str)]
        if wrong:
            return _bad(422, f"field(s) {', '.join(wrong)} must be strings")
        tool_input = payload["tool_input"]
        if isinstance(tool_input, bool) or not isinstance(tool_input, str | dict | int | float):
            return _bad(422, "tool_input must be a JSON string or an object")
        if isinstance(tool_input, int | float):
            tool_input = str(tool_input)  # pydantic v1 (upstream) coerces numbers to str
        try:
            key = api_key_for(names["category"], names["tool_name"], names["api_name"])
        except UnsafeName as exc:
            return _bad(400, str(exc))
        if key.api == S.CHAT_WITH_USER_API:
            return Outcome(200, {"error": "", "response": S.CHAT_WITH_USER_RESPONSE}, "chat_with_user")
        parsed = self._parse_tool_input(tool_input)
        if parsed is _UNPARSABLE:
            return Outcome(200, {"error": E.TOOL_INPUT_PARSE_ERROR, "response": ""}, "tool_input_parse_error")
        cache_key = str(parsed)
        hit = self.cache.lookup(key, cache_key)
        if hit is not None:
            return self._hit(key, parsed, cache_key, *hit)
        unknown = self.catalog.unknown_part(key)
        if unknown is not None:
            value = {"category": key.category, "tool_name": key.tool_folder, "api_name": key.api}[unknown]
            return _bad(404, f"unknown {unknown} {value!r}: not in the query files this server was started with")
        return self._simulate(SimulationRequest(key=key, tool_input=parsed, cache_key=cache_key,
                                                doc=self.catalog.get(key), examples=self.cache.examples(key)))

    @staticmethod
    def _parse_tool_input(tool_input: str | dict) -> Any:
        if isinstance(tool_input, dict):
            return tool_input
        try:
            return json.loads(tool_input)
        except ValueError:
            return {} if tool_input == "" else _UNPARSABLE
        # RecursionError (tool_input nested too deeply) goes up to handle(): a 400, as for the body

    def _simulate(self, request: SimulationRequest) -> Outcome:
        name = self.simulator.name
        source = f"simulator:{name}"
        maker = getattr(self.simulator, "maker", name)  # llm / mirrorapi: the model and its host too (provenance.py)
        try:
            result = self.simulator.simulate(request)
        except Exception:  # a simulator bug must not take the server down or leak a 500
            log.exception("simulator %s failed", name)
            return Outcome(200, {"error": E.FAKE_RESPONSE_FAILED, "response": ""}, source, made_by=maker)
        if result.cacheable:
            try:  # a disk that refuses is counted and logged by the cache itself (one line, no traceback)
                # the mirror's entry keeps its maker (provenance.py); the answer is served without it
                self.cache.store_simulated(request.key, request.cache_key, result.answer, made_by=maker)
            except ValueError as exc:  # a symlink in the cache folder that points outside it
                log.warning("simulated answer for %s not saved: %s", request.key.relative_path(), exc)
        return Outcome(200, served(result.answer), source, made_by=maker)


_UNPARSABLE = object()
PREPARED_BYTES_MAX = 64 << 20  # prepared replies kept: past it they are dropped and prepared again on use
NAMES_MAX = 4096  # distinct (category, tool, api) spellings remembered
_MAX_DEPTH_HINT = 1000  # CPython's default recursion limit, which json.loads and repr() stop at
