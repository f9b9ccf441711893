"""Issue 21 item 2: a tool-server URL that no tool server answers (a wrong path, a gateway's 401/403, a dead
port) is exit 2 before any query, naming the URL; a 401/403/404 that no tool server wrote, met during a run,
is an infrastructure failure (tool_server), while a tool server's own error answers stay upstream's status 12."""

from __future__ import annotations

import json
import socket

import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from runners.cli import main
from tests.ray_support import needs_ray
from toolbench_adapter.protocol import env as E
from toolbench_adapter.queryset.queries import resolve_root
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.client import PREFLIGHT_TOOL_INPUT, ReplyKind, ServerClient
from toolbench_adapter.server.runner import EmbeddedServer
from toolbench_adapter.server.standin import Reply, StandInServer

SAMPLE_QUERIES = 6  # data/sample: one evaluated query per group


def run_args(tmp_path, name, *servers):
    args = ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--quiet",
            "--server-attempts", "1"]
    for url in servers:
        args += ["--server", url]
    return args


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def dead_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def embedded(**config):
    return EmbeddedServer(create_app(build_virtual_server(ServerConfig(simulator="schema", save=False, **config))))


class Info(BaseModel):
    """server/main.py's request model (module level: the route's annotation is resolved from here)."""

    category: str
    tool_name: str
    api_name: str
    tool_input: str | dict
    strip: str
    toolbench_key: str


def upstream_like_app() -> FastAPI:
    """StableToolBench's server/main.py request flow up to its cache, in its shape: a pydantic ``Info`` with
    every field required (a missing one is a 422), then a tool input that is not JSON answered with the
    parse-error text; the rest answers a fixed cached answer."""
    app = FastAPI()

    @app.post("/virtual")
    def virtual(info: Info):
        if isinstance(info.tool_input, str):
            try:
                json.loads(info.tool_input)
            except ValueError:
                if info.tool_input != "":
                    return {"error": E.TOOL_INPUT_PARSE_ERROR, "response": ""}
        return {"error": "", "response": "cached"}

    return app


def test_the_preflight_passes_against_our_server_and_an_upstream_shaped_one():
    with embedded() as ours, EmbeddedServer(upstream_like_app()) as upstream:
        client = ServerClient([ours.url, upstream.url + "/virtual"], attempts=1)
        client.preflight()  # no exception
        # and it cost our server no cache or simulator work: the probe is answered as a parse error
        assert client.check_endpoint(ours.url + "/virtual") is None


def test_a_wrong_path_is_exit_2_before_any_query(tmp_path, capsys):
    with embedded() as server:
        wrong = server.url + "/v1/virtual"  # FastAPI answers 404 {"detail": "Not Found"}
        assert main(run_args(tmp_path, "wrong", wrong)) == 2
    err = capsys.readouterr().err
    assert wrong in err and "HTTP 404" in err and "no /virtual endpoint at this path" in err
    assert "--server" in err
    assert not list((tmp_path / "wrong").glob("G*/*.json")) and not jsonl(tmp_path / "wrong" / "queries.jsonl")
    # no session is recorded for a refused preflight: one would read as an interrupted run to tba evaluate
    assert not (tmp_path / "wrong" / "manifest.json").exists()


@pytest.mark.parametrize("status", [401, 403])
def test_a_gateway_refusing_is_exit_2_naming_it(tmp_path, capsys, status):
    body = {"error": "forbidden"}  # a gateway's JSON, not a /virtual answer (no "response")
    with StandInServer(lambda exchange: Reply(status=status, body=body)) as gateway:
        assert main(run_args(tmp_path, "gate", gateway.url)) == 2
    err = capsys.readouterr().err
    assert f"{gateway.url}/virtual answered HTTP {status}" in err and "gateway or proxy refused" in err


def test_every_server_is_checked_and_only_the_bad_one_is_named(tmp_path, capsys):
    with embedded() as live, embedded() as other:
        wrong = other.url + "/v1/virtual"
        assert main(run_args(tmp_path, "several", live.url, wrong)) == 2
    err = capsys.readouterr().err
    assert "1 of 2 tool servers" in err and f"{wrong} answered HTTP 404" in err
    assert live.url not in err.replace(wrong, "")


def test_of_several_servers_a_silent_one_is_named_and_the_others_serve(tmp_path, capsys):
    # as the model endpoints' preflight: a server still starting joins when it answers; none answering is exit 2
    dead = dead_url()
    with embedded() as live:
        assert main(run_args(tmp_path, "silent", live.url, dead)) == 0
    err = capsys.readouterr().err
    assert f"warning: POST {dead}/virtual could not be reached" in err
    assert len(list((tmp_path / "silent").glob("G*/*.json"))) == SAMPLE_QUERIES
    assert main(run_args(tmp_path, "none", dead_url(), dead)) == 2
    assert "2 of 2 tool servers did not answer" in capsys.readouterr().err


def test_json_without_the_virtual_shape_is_refused():
    with StandInServer(lambda exchange: Reply(body={"id": 1, "object": "list"})) as other:
        problem = ServerClient(other.url, attempts=1).check_endpoint(other.url + "/virtual")
    assert "not a /virtual answer" in problem


def passes_preflight_then(status: int, body):
    """A server that answers the preflight as upstream does, then ``status`` with ``body`` to every call."""
    def respond(exchange):
        if exchange.json()["tool_input"] == PREFLIGHT_TOOL_INPUT:
            return Reply(body={"error": E.TOOL_INPUT_PARSE_ERROR, "response": ""})
        return Reply(status=status, body=body)
    return StandInServer(respond)


@pytest.mark.parametrize("executor", ["threads", pytest.param("ray", marks=needs_ray)])
def test_a_404_no_tool_server_wrote_is_an_infrastructure_failure(tmp_path, capsys, request, executor):
    ray = ["--executor", "ray", "--concurrency", "2"] if executor == "ray" else []
    if ray:  # the workers' own tool-server clients meet the 404; the driver records what they return
        request.getfixturevalue("ray_cluster")
    with passes_preflight_then(404, {"detail": "Not Found"}) as server:
        assert main([*run_args(tmp_path, "gone", server.url), *ray]) == 3
    run_dir = tmp_path / "gone"
    assert not list(run_dir.glob("G*/*.json"))  # no answer file: a rerun redoes every query
    errors = jsonl(run_dir / "errors.jsonl")
    assert len(errors) == SAMPLE_QUERIES and {e["failure_kind"] for e in errors} == {"tool_server"}
    assert all("wrong_endpoint HTTP 404" in e["failure_detail"] for e in errors)
    steps = [s for s in jsonl(run_dir / "steps.jsonl") if s["reply_kind"] is not None]
    assert steps and all((s["reply_kind"], s["status"], s["infra_failure"]) == ("wrong_endpoint", 12, "tool_server")
                         for s in steps)
    assert f"INFRASTRUCTURE FAILURES {SAMPLE_QUERIES} (tool_server {SAMPLE_QUERIES})" in capsys.readouterr().out


def test_a_tool_servers_own_404_answer_stays_upstreams_status_12():
    own = {"error": "request invalid: unknown api_name 'x'", "response": ""}
    with passes_preflight_then(404, own) as server:
        reply = ServerClient(server.url, attempts=1).call("Data", "t", "x", "{}")
    assert (reply.kind, reply.http_status) == (ReplyKind.HTTP_ERROR, 404)
    assert reply.answer == {"error": "request invalid, data error. status_code=404", "response": ""}


def test_our_servers_unknown_api_404_is_its_own_answer():
    with embedded(stb_root=resolve_root(None)) as server:
        reply = ServerClient(server.url, attempts=1).call("Nowhere", "t", "x", "{}")
    assert (reply.kind, reply.http_status) == (ReplyKind.HTTP_ERROR, 404)
