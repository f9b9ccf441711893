"""The embedded /virtual server on a free loopback port: schema simulation, marked saves, bad requests."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import requests

from toolbench_adapter.compat import STB, STRICT
from toolbench_adapter.protocol import env as E
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.names import api_key_for
from toolbench_adapter.server.runner import EmbeddedServer

TEMPLATE = {"results": [{"name": "str", "score": "float", "url": "str", "_list_length": 4}],
            "total": "int", "tags": "list of str with length 3", "next": "NoneType", "ok": "bool"}
QUERIES = [{
    "query_id": 1, "query": "find jobs",
    "api_list": [
        {"category_name": "Jobs", "tool_name": "USA Jobs for IT", "api_name": "Search Jobs",
         "api_description": "Search IT jobs.", "required_parameters": [
             {"name": "query", "type": "STRING", "description": "", "default": "python"}],
         "optional_parameters": [], "method": "GET", "template_response": TEMPLATE},
        {"category_name": "Jobs", "tool_name": "USA Jobs for IT", "api_name": "Ping",
         "api_description": "", "required_parameters": [], "optional_parameters": [], "method": "GET"},
    ],
}]
ROUTE = {"category": "Jobs", "tool_name": "usa_jobs_for_it", "api_name": "search_jobs"}


@pytest.fixture(scope="module")
def stb(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stb")
    (root / "solvable_queries" / "test_instruction").mkdir(parents=True)
    (root / "solvable_queries" / "test_instruction" / "G1_instruction.json").write_text(json.dumps(QUERIES))
    return root


def start(stb: Path, cache: Path | None, **config) -> EmbeddedServer:
    server = build_virtual_server(ServerConfig(cache_dir=cache, stb_root=stb, **config))
    return EmbeddedServer(create_app(server, config.get("max_body_bytes", 1 << 20)))


@pytest.fixture()
def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture()
def served(stb, cache_dir):
    with start(stb, cache_dir) as running:
        yield running


def post(running, tool_input="{}", **fields):
    payload = {**ROUTE, "tool_input": tool_input, "strip": "truncate", "toolbench_key": "", **fields}
    return requests.post(running.url + "/virtual", json=payload, timeout=10)


# ---------------------------------------------------------------- schema simulator

def test_schema_answers_follow_the_template(served):
    response = post(served, '{"query": "python"}')
    assert response.status_code == 200 and response.headers["x-tba-source"] == "simulator:schema"
    answer = response.json()
    assert answer["error"] == "" and set(answer["response"]) == {"results", "total", "tags", "next", "ok"}
    body = answer["response"]
    assert len(body["results"]) == 4 and all(set(r) == {"name", "score", "url"} for r in body["results"])
    assert body["results"][0]["name"].startswith("name ") and body["results"][0]["url"].startswith("https://")
    assert isinstance(body["total"], int) and isinstance(body["ok"], bool) and body["next"] is None
    assert len(body["tags"]) == 3 and len(set(body["tags"])) == 3


def test_schema_is_deterministic_across_servers(stb, tmp_path):
    answers = []
    for run in range(2):  # two servers, no shared cache: the hash alone decides
        with start(stb, tmp_path / f"c{run}", save=False) as running:
            answers.append(post(running, '{"query": "python"}').json())
            other = post(running, '{"query": "rust"}').json()
    assert answers[0] == answers[1]
    assert other != answers[1]


def test_schema_reports_missing_required_parameters(served):
    assert post(served, '{"limit": 3}').json() == {"error": "", "response": {"message": "Missing required parameter: query"}}


def test_schema_without_template_still_answers(served):
    answer = post(served, "{}", api_name="ping").json()
    assert answer["error"] == "" and answer["response"]["api"] == "ping" and len(answer["response"]["results"]) == 3


# ---------------------------------------------------------------- saving and marking

def _files(cache: Path) -> tuple[Path, Path]:
    rel = api_key_for(**ROUTE).relative_path()
    return cache / rel, cache / "_simulated" / rel


def test_simulated_saves_are_marked_stb(served, cache_dir):
    first = post(served, '{"query": "go"}')
    second = post(served, '{"query": "go"}')
    assert first.json() == second.json()
    assert (first.headers["x-tba-source"], second.headers["x-tba-source"]) == ("simulator:schema", "cache_simulated")
    main, marks = _files(cache_dir)
    # upstream layout, python-repr key; stb mode also writes the main file as upstream does (its entry as
    # upstream's); the mirror's entry also names the simulator that made it (provenance.py, issue 40)
    assert json.loads(main.read_text()) == {"{'query': 'go'}": first.json()}
    assert json.loads(marks.read_text()) == {"{'query': 'go'}": {**first.json(), "_tba_made_by": "schema"}}
    assert "_tba_made_by" not in first.json() and "_tba_made_by" not in second.json()  # never served
    assert main.parent.name == "usa_jobs_for_it_for_Jobs"


def test_strict_keeps_simulated_answers_out_of_the_main_file(stb, cache_dir):
    with start(stb, cache_dir, compat=STRICT) as running:
        answer = post(running, '{"query": "go"}').json()
    main, marks = _files(cache_dir)
    assert not main.exists() and json.loads(marks.read_text()) == {"{'query': 'go'}": {**answer,
                                                                                       "_tba_made_by": "schema"}}
    with start(stb, cache_dir, compat=STRICT) as running:  # a restarted server reads the marks back
        again = post(running, '{"query": "go"}')
    assert again.json() == answer and again.headers["x-tba-source"] == "cache_simulated"


def test_real_entries_are_served_as_cache(stb, cache_dir):
    main, _ = _files(cache_dir)
    main.parent.mkdir(parents=True)
    real = {"error": "", "response": "real answer"}
    main.write_text(json.dumps({"{'query': 'java'}": real, "{}": {"error": "", "response": "empty input"}}))
    with start(stb, cache_dir, compat=STB) as running:
        hit = post(running, '{"query":   "java"}')
        empty = post(running, "")  # upstream reads "" as {}
    assert hit.json() == real and hit.headers["x-tba-source"] == "cache"
    assert empty.json() == {"error": "", "response": "empty input"}


def test_no_save_writes_nothing(stb, cache_dir):
    with start(stb, cache_dir, save=False) as running:
        post(running, '{"query": "go"}')
        assert post(running, '{"query": "go"}').headers["x-tba-source"] == "cache_simulated"  # memory only
    assert not cache_dir.exists() or not any(cache_dir.rglob("*.json"))


def test_concurrent_saves_keep_every_entry(served, cache_dir):
    def call(i):
        post(served, json.dumps({"query": f"q{i}"}))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    main, marks = _files(cache_dir)
    assert len(json.loads(main.read_text())) == 24 and len(json.loads(marks.read_text())) == 24
    assert not list(cache_dir.rglob("*.tmp"))


def test_unreadable_cache_file_is_never_overwritten(stb, cache_dir):
    main, _ = _files(cache_dir)
    main.parent.mkdir(parents=True)
    main.write_text("{broken")
    with start(stb, cache_dir) as running:
        assert post(running, '{"query": "go"}').status_code == 200
    assert main.read_text() == "{broken"


# ---------------------------------------------------------------- protocol details

def test_chat_with_user_and_tool_input_parse_error(served):
    assert post(served, "{}", api_name="chat_with_user").json() == {"error": "", "response": "Chat with user."}
    assert post(served, "{not json").json() == {"error": E.TOOL_INPUT_PARSE_ERROR, "response": ""}


def test_tool_name_with_for_inside_keeps_its_documentation(served):
    # upstream split "usa_jobs_for_it" on the first "_for_" and lost the docs; the template proves we did not
    key = api_key_for("Jobs", "usa_jobs_for_it", "search_jobs")
    assert (key.tool_folder, key.tool) == ("usa_jobs_for_it_for_Jobs", "usa_jobs_for_it")
    assert "results" in post(served, '{"query": "x"}', tool_name="usa_jobs_for_it_for_Jobs").json()["response"]


# ---------------------------------------------------------------- bad requests

def raw_post(running, body: bytes, **headers):
    return requests.post(running.url + "/virtual", data=body, timeout=10,
                         headers={"content-type": "application/json", **headers})


@pytest.mark.parametrize("body, status, needle", [
    (b"{not json", 400, "not JSON"),
    (b"\xff\xfe", 400, "not JSON"),
    (b"[1, 2]", 422, "JSON object"),
    (json.dumps({"category": "Jobs", "tool_name": "x"}).encode(), 422, "api_name, tool_input"),
    (json.dumps({**ROUTE, "tool_input": None}).encode(), 422, "tool_input"),
    (json.dumps({**ROUTE, "tool_input": [1]}).encode(), 422, "tool_input"),
    (json.dumps({**ROUTE, "category": 5, "tool_input": "{}"}).encode(), 422, "category"),
    (json.dumps({**ROUTE, "category": "../../etc", "tool_input": "{}"}).encode(), 400, "'..'"),
    (json.dumps({**ROUTE, "tool_name": "/etc/passwd", "tool_input": "{}"}).encode(), 400, "tool_name"),
    (json.dumps({**ROUTE, "tool_name": "a\\b", "tool_input": "{}"}).encode(), 400, "tool_name"),
    (json.dumps({**ROUTE, "api_name": "x/../../y", "tool_input": "{}"}).encode(), 400, "api_name"),
    (json.dumps({**ROUTE, "category": "Nowhere", "tool_input": "{}"}).encode(), 404, "unknown category"),
    (json.dumps({**ROUTE, "tool_name": "other_tool", "tool_input": "{}"}).encode(), 404, "unknown tool_name"),
    (json.dumps({**ROUTE, "api_name": "no_such_api", "tool_input": "{}"}).encode(), 404, "unknown api_name"),
])
def test_bad_requests_get_clear_4xx(served, cache_dir, body, status, needle):
    response = raw_post(served, body)
    assert response.status_code == status
    answer = response.json()
    assert needle in answer["error"] and answer["response"] == ""
    assert requests.get(served.url + "/health", timeout=5).json()["status"] == "ok"  # still serving
    outside = [p for p in cache_dir.parent.rglob("*") if p.is_file() and cache_dir not in p.parents]
    assert outside == []


def test_huge_body_is_413(stb, cache_dir):
    with start(stb, cache_dir, max_body_bytes=1000) as running:
        response = post(running, json.dumps({"query": "x" * 5000}))
        chunked = requests.post(running.url + "/virtual", timeout=10,
                                data=iter([b'{"category": "', b"x" * 2000, b'"}']))  # no content-length
        assert post(running, '{"query": "fits"}').status_code == 200
    assert response.status_code == 413 and "larger than 1000 bytes" in response.json()["error"]
    assert chunked.status_code == 413


def test_lenient_where_upstream_is(served):
    # strip and toolbench_key may be left out; a number tool_input is read as its text (pydantic v1 did that)
    payload = {**ROUTE, "tool_input": '{"query": "python"}'}
    assert requests.post(served.url + "/virtual", json=payload, timeout=10).status_code == 200
    assert requests.post(served.url + "/virtual", json={**ROUTE, "tool_input": 5}, timeout=10).status_code == 200


def test_stats_and_health(served):
    post(served, '{"query": "a"}')
    post(served, '{"query": "a"}')
    raw_post(served, b"nope")
    stats = requests.get(served.url + "/stats", timeout=5).json()
    assert (stats["requests"], stats["hits"], stats["misses"]) == (3, 1, 1)
    assert set(stats["by_source"]) == {"simulator:schema", "cache_simulated", "bad_request"}
    assert stats["by_source"]["cache_simulated"]["p50_ms"] >= 0
    health = requests.get(served.url + "/health", timeout=5).json()
    assert health["simulator"] == "schema" and health["catalog_apis"] == 2


# ---------------------------------------------------------------- deep nesting and reserved names

DEEP = 100_000


@pytest.mark.parametrize("body", [
    b"[" * DEEP + b"]" * DEEP,  # the body itself
    json.dumps({**ROUTE, "tool_input": "[" * DEEP + "]" * DEEP}).encode(),  # a tool_input string holding it
    json.dumps({**ROUTE, "tool_input": '{"a": ' * DEEP + "1" + "}" * DEEP}).encode(),
], ids=["body", "tool_input-list", "tool_input-object"])
def test_deeply_nested_json_is_a_4xx_not_a_500(served, body):
    response = raw_post(served, body)
    assert 400 <= response.status_code < 500, response.text[:200]
    assert "nested too deeply" in response.json()["error"]
    assert requests.get(served.url + "/health", timeout=5).json()["status"] == "ok"  # still serving


@pytest.mark.parametrize("names", [
    {"category": "."}, {"category": "_simulated"}, {"category": "_Simulated"}, {"category": ".hidden"},
    {"tool_name": "."}, {"tool_name": "_"}, {"api_name": "."}, {"category": "a\nb"}, {"category": ""},
    {"category": ".."}, {"tool_name": "a/b"},
])
def test_names_outside_the_cache_layout_are_refused(tmp_path, names):
    cache = tmp_path / "cache"
    server = build_virtual_server(ServerConfig(cache_dir=cache))  # no catalog: any name reaches the simulator
    with EmbeddedServer(create_app(server)) as running:
        response = post(running, '{"query": "x"}', **names)
        assert 400 <= response.status_code < 500 and response.json()["response"] == ""
        assert post(running, '{"query": "x"}').status_code == 200  # an ordinary name is still served
    files = sorted(p.relative_to(cache).parts for p in cache.rglob("*") if p.is_file())
    # only {category}/{tool}_for_{category}/{api}.json and its _simulated/ mirror
    assert files == [("Jobs", "usa_jobs_for_it_for_Jobs", "search_jobs.json"),
                     ("_simulated", "Jobs", "usa_jobs_for_it_for_Jobs", "search_jobs.json")]
