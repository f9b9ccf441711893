"""The /virtual hot path (issue 26): replies byte-identical to the recorded ones, hits served from bytes
prepared once, counters that need no lock, and a hit that changes source after another server's save.

The recorded replies (tests/fixtures/server_hot_path_replies.json) were taken from the server before the
hot-path work; ``python tests/test_server_hot_path.py`` records them again (only for a deliberate change of
what the server answers)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
import requests

from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.names import api_key_for
from toolbench_adapter.server.runner import EmbeddedServer
from toolbench_adapter.server.stats import ServerStats

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "server_hot_path_replies.json"
MAX_BODY = 16384  # above the deeply nested bodies (2 x DEEP bytes)
TEMPLATE = {"results": [{"name": "str", "score": "float", "_list_length": 2}], "total": "int", "ok": "bool"}
QUERIES = [{"query_id": 1, "query": "find jobs", "api_list": [
    {"category_name": "Jobs", "tool_name": "USA Jobs for IT", "api_name": "Search Jobs",
     "api_description": "Search IT jobs.", "required_parameters": [
         {"name": "query", "type": "STRING", "description": "", "default": "python"}],
     "optional_parameters": [], "method": "GET", "template_response": TEMPLATE},
    {"category_name": "Jobs", "tool_name": "USA Jobs for IT", "api_name": "Ping",
     "api_description": "", "required_parameters": [], "optional_parameters": [], "method": "GET"}]}]
ROUTE = {"category": "Jobs", "tool_name": "usa_jobs_for_it", "api_name": "search_jobs"}
REL = Path("Jobs") / "usa_jobs_for_it_for_Jobs" / "search_jobs.json"
MAIN = {  # key -> answer, as a cache file holds them: unicode, floats, nesting, a non-object answer
    "{'query': 'python'}": {"error": "", "response": {"jobs": ["Python dev — Zürich", "数据工程师"], "n": 2,
                                                      "f": 1.5e-07, "big": 12345678901234567890,
                                                      "nested": {"a": [True, None, -0.0]}}},
    "{}": {"error": "", "response": "plain text \"quoted\" \\ and a tab\t"},
    "{'query': 'sim'}": {"error": "", "response": "simulated once"},
    "{'page': 2, 'query': 'rust'}": "a bare string answer",
}
SIMULATED = {"{'query': 'sim'}": MAIN["{'query': 'sim'}"]}
DEEP = 5000


def _body(tool_input="{}", **fields) -> bytes:
    return json.dumps({**ROUTE, "tool_input": tool_input, "strip": "truncate", "toolbench_key": "", **fields}).encode()


REQUESTS: list[tuple[str, bytes]] = [
    ("hit", _body('{"query": "python"}')),
    ("hit again (prepared bytes)", _body('{"query": "python"}')),
    ("hit, tool_input an object", _body({"query": "python"})),
    ("hit, empty tool_input", _body("")),
    ("hit, empty object", _body("{}")),
    ("hit, keys in another order", _body('{"page": 2, "query": "rust"}')),
    ("hit, a full function name", _body('{"query": "python"}', api_name="search_jobs_for_usa_jobs_for_it")),
    ("hit, display names", _body('{"query": "python"}', category="Jobs", tool_name="USA Jobs for IT",
                                 api_name="Search Jobs")),
    ("hit, no strip or key", json.dumps({**ROUTE, "tool_input": '{"query": "python"}'}).encode()),
    ("miss, a number tool_input (read as text)", _body(5)),
    ("simulated hit", _body('{"query": "sim"}')),
    ("simulated hit again", _body('{"query": "sim"}')),
    ("miss: schema simulator", _body('{"query": "java"}')),
    ("the miss, now cached", _body('{"query": "java"}')),
    ("miss, no template", _body('{"x": 1}', api_name="ping")),
    ("chat_with_user", _body("{}", api_name="chat_with_user")),
    ("tool_input parse error", _body("{not json")),
    ("not JSON", b"{not json"),
    ("not UTF-8", b"\xff\xfe"),
    ("not an object", b"[1, 2]"),
    ("missing fields", json.dumps({"category": "Jobs", "tool_name": "x"}).encode()),
    ("tool_input null", _body(None)),
    ("tool_input a list", _body([1])),
    ("tool_input a bool", _body(True)),
    ("category a number", _body(category=5)),
    ("category with ..", _body(category="../../etc")),
    ("tool_name a path", _body(tool_name="/etc/passwd")),
    ("tool_name a backslash", _body(tool_name="a\\b")),
    ("api_name a path", _body(api_name="x/../../y")),
    ("category _simulated", _body(category="_simulated")),
    ("category hidden", _body(category=".hidden")),
    ("category empty", _body(category="")),
    ("tool_name _", _body(tool_name="_")),
    ("category control char", _body(category="a\nb")),
    ("unknown category", _body(category="Nowhere")),
    ("unknown tool", _body(tool_name="other_tool")),
    ("unknown api", _body(api_name="no_such_api")),
    ("body nested too deeply", b"[" * DEEP + b"]" * DEEP),
    ("tool_input nested too deeply", _body("[" * DEEP + "]" * DEEP)),
    ("body too large", _body(json.dumps({"query": "x" * MAX_BODY}))),
    ("hit after the errors", _body('{"query": "python"}')),
]


def make_stb(root: Path) -> Path:
    (root / "solvable_queries" / "test_instruction").mkdir(parents=True)
    (root / "solvable_queries" / "test_instruction" / "G1_instruction.json").write_text(json.dumps(QUERIES))
    return root


def make_cache(cache: Path) -> Path:
    for tree, entries in ((cache, MAIN), (cache / "_simulated", SIMULATED)):
        (tree / REL).parent.mkdir(parents=True)
        (tree / REL).write_text(json.dumps(entries, indent=2, ensure_ascii=False), encoding="utf-8")
    return cache


def replies(tmp: Path) -> list[dict]:
    """Every request of REQUESTS, in order, against one fresh server: status, headers that matter, body."""
    server = build_virtual_server(ServerConfig(cache_dir=make_cache(tmp / "cache"), stb_root=make_stb(tmp / "stb"),
                                               max_body_bytes=MAX_BODY))
    out = []
    with EmbeddedServer(create_app(server, MAX_BODY)) as running, requests.Session() as session:
        for name, body in REQUESTS:
            response = session.post(running.url + "/virtual", data=body, timeout=10,
                                    headers={"content-type": "application/json"})
            out.append({"name": name, "status": response.status_code,
                        "content_type": response.headers.get("content-type"),
                        "content_length": response.headers.get("content-length"),
                        "source": response.headers.get("x-tba-source"),
                        "body": response.content.decode("utf-8")})
        stats = session.get(running.url + "/stats", timeout=10).json()
    out.append({"name": "/stats counts", "requests": stats["requests"], "hits": stats["hits"],
                "misses": stats["misses"], "counts": {k: v["count"] for k, v in stats["by_source"].items()}})
    return out


def test_replies_are_byte_identical_to_the_recorded_ones(tmp_path):
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    got = replies(tmp_path)
    assert [r["name"] for r in got] == [r["name"] for r in expected], "REQUESTS changed: record the fixture again"
    for mine, recorded in zip(got, expected, strict=True):
        assert mine == recorded, mine["name"]


def serve(server, body: bytes):
    """What the /virtual route does: the event loop's hit path, else handle() (in the thread pool there)."""
    return server.answer_hit(body) or server.handle(body)


def test_a_hit_is_served_from_bytes_prepared_once(tmp_path):
    server = build_virtual_server(ServerConfig(cache_dir=make_cache(tmp_path / "cache"), save=False))
    body = _body('{"query": "python"}')
    assert server.answer_hit(body) is None  # the file is not parsed yet: that is handle()'s (a disk read)
    first = server.handle(body)
    second, third = server.answer_hit(body), server.answer_hit(_body({"query": "python"}))
    assert first.source == second.source == third.source == "cache"
    assert first.body == json.dumps(MAIN["{'query': 'python'}"], ensure_ascii=False).encode("utf-8")
    assert second.body == first.body and third is second  # prepared on the first hit from memory, then reused
    assert server.answer_hit(_body('{"query": "absent"}')) is None  # a miss: handle() takes other servers' saves in
    stats = server.stats.snapshot()
    assert (stats["requests"], stats["hits"], stats["by_source"]["cache"]["count"]) == (3, 3, 3)


@pytest.mark.parametrize("name, body", [(n, b) for n, b in REQUESTS if not n.startswith(("hit", "simulated hit"))])
def test_the_hit_path_leaves_everything_else_to_handle(tmp_path, name, body):
    server = build_virtual_server(ServerConfig(cache_dir=make_cache(tmp_path / "cache"), stb_root=make_stb(tmp_path / "stb"),
                                               save=False))
    server.handle(_body('{"query": "python"}'))  # the file parsed: only the request decides
    assert server.answer_hit(body) is None, name


def test_a_hit_changes_source_when_another_server_marks_it_simulated(tmp_path):
    """Prepared bytes are per cache state: another server's save, taken in on a miss, is served after it."""
    cache = make_cache(tmp_path / "cache")
    server = build_virtual_server(ServerConfig(cache_dir=cache, save=False))
    key = api_key_for("Jobs", "usa_jobs_for_it", "search_jobs")
    assert serve(server, _body("{}")).source == "cache"
    assert serve(server, _body("{}")).source == "cache"  # now prepared
    other = build_virtual_server(ServerConfig(cache_dir=cache))  # a second server on the same folder
    other.cache.store_simulated(key, "{}", {"error": "", "response": "replaced"})
    other.cache.store_simulated(key, "{'query': 'new'}", {"error": "", "response": "new"})
    assert serve(server, _body("{}")).source == "cache"  # a hit never looks at the disk
    assert serve(server, _body('{"query": "new"}')).source == "cache_simulated"  # a miss: takes the files in
    again = serve(server, _body("{}"))
    assert again.source == "cache_simulated" and json.loads(again.body) == {"error": "", "response": "replaced"}


def test_counters_lose_nothing_across_threads():
    stats = ServerStats()

    def hammer(source: str) -> None:
        for _ in range(20000):
            stats.record(source, 0.001)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in ("cache", "cache", "simulator:schema", "bad_request")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snapshot = stats.snapshot()
    assert (snapshot["requests"], snapshot["hits"], snapshot["misses"]) == (80000, 40000, 20000)
    assert snapshot["by_source"]["cache"]["count"] == 40000 and snapshot["by_source"]["cache"]["p50_ms"] == 1.0


if __name__ == "__main__":  # record the fixture again: only when what the server answers changes on purpose
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_text(json.dumps(replies(Path(tmp)), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}", file=sys.stderr)
