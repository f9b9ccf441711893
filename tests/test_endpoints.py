"""Several endpoints per role (issue 15): model (--base-url), judge (--judge-url) and tool server (--server)
each take several URLs; a dead one among live ones changes no answer file, and the manifest counts what
each endpoint served."""

from __future__ import annotations

import json
import socket

import pytest

from runners.cli import main
from runners.config import RunConfig, load_yaml
from runners.models.openai_http import OpenAIEndpoint, UnreachableEndpoint
from runners.models.scripted import scripted_call
from tests.faulty_http import FaultyServer
from tests.openai_standin import OpenAIStandin, Reply
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.net.transport import merge_stats, url_list
from toolbench_adapter.queryset.queries import resolve_root
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.client import ServerClient
from toolbench_adapter.server.runner import EmbeddedServer


def dead_url(path: str = "") -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}{path}"


def agent_reply(endpoint: str, body: dict) -> Reply:
    """A deterministic tool-calling model: the scripted agent's call for this turn (the turn number makes the
    ids, so every endpoint answers a request the same)."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return Reply(text=None, tool_calls=[scripted_call(body.get("tools"), turn, final_answer="done")],
                 usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


def tool_server():
    server = build_virtual_server(ServerConfig(stb_root=resolve_root(None), simulator="schema", save=False))
    return EmbeddedServer(create_app(server))


def answers(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("*/*.json"))}


def run_args(tmp_path, name, model_urls, server_urls):
    args = ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "openai-chat", "--model",
            "standin-model", "--dialect", "openai-tools", "--quiet", "--concurrency", "3",
            "--backend-option", "backoff=0", "--server-attempts", "2"]
    for url in model_urls:
        args += ["--base-url", url]
    for url in server_urls:
        args += ["--server", url]
    return args


def test_a_dead_endpoint_among_live_ones_changes_no_answer_file(tmp_path):
    with OpenAIStandin(respond=agent_reply) as one, OpenAIStandin(respond=agent_reply) as two, \
            tool_server() as first, tool_server() as second, FaultyServer(["reset"], answers_preflight=True) as dying:
        assert main(run_args(tmp_path, "live", [one.url], [first.url])) == 0
        assert one.count() == 12  # 6 queries x 2 turns
        # a tool server that answers the preflight, then dies (one dead from the start is exit 2)
        dead_model, dead_server = dead_url("/v1"), dying.url
        code = main(run_args(tmp_path, "mixed", [dead_model, one.url, two.url], [dead_server, first.url, second.url]))
        assert code == 0
        assert one.count() - 12 + two.count() == 12 and one.count() > 12 and two.count() > 0  # both took requests
    live, mixed = answers(tmp_path / "live"), answers(tmp_path / "mixed")
    assert len(live) == 6 and live == mixed

    manifest = json.loads((tmp_path / "mixed" / "manifest.json").read_text())
    assert manifest["config"]["base_url"] == [dead_model, one.url, two.url]
    assert manifest["totals"]["infra_failures"] == 0
    endpoints = manifest["sessions"][-1]["endpoints"]
    model = {e["url"]: e for e in endpoints["model"]}
    assert model[dead_model]["served"] == 0 and model[dead_model]["faults"] == {"connection_error": 1}
    assert model[dead_model]["cooldowns"] == 1  # out after its first failure: the others took the rest
    assert model[one.url]["served"] + model[two.url]["served"] == 12
    servers = {e["url"]: e for e in endpoints["tool_server"]}
    assert servers[dead_server + "/virtual"]["served"] == 0 and servers[dead_server + "/virtual"]["failed"] == 1
    assert sum(e["served"] for e in servers.values()) == 6  # one tool call per query
    # a single URL stays a plain string in the recorded config, as before
    single = json.loads((tmp_path / "live" / "manifest.json").read_text())
    assert single["config"]["base_url"] == one.url and single["config"]["server"] == first.url


def test_preflight_checks_every_endpoint(capsys):
    with OpenAIStandin() as live, OpenAIStandin(models=("other-model",)) as other:
        dead = dead_url("/v1")
        endpoint = OpenAIEndpoint(base_url=[dead, live.url], model="standin-model")
        endpoint.preflight()  # one answering is enough: the dead one is named and kept in the pool
        assert f"cannot reach the model endpoint {dead}" in capsys.readouterr().err
        with pytest.raises(InputError, match=f"not served at {other.url}"):
            OpenAIEndpoint(base_url=[live.url, other.url], model="standin-model").preflight()
        adopted = OpenAIEndpoint(base_url=[dead, live.url])
        adopted.preflight()
        assert adopted.model == "standin-model"
        with pytest.raises(InputError, match="do not serve exactly one model"):
            OpenAIEndpoint(base_url=[live.url, other.url]).preflight()
    with pytest.raises(UnreachableEndpoint, match="none of the 2 model endpoints answers"):
        OpenAIEndpoint(base_url=[dead_url("/v1"), dead_url("/v1")], model="m").preflight()
    with pytest.raises(InputError, match="listed twice"):
        OpenAIEndpoint(base_url=[live.url, live.url + "/"])


def test_a_run_refuses_model_endpoints_that_all_are_dead(tmp_path, capsys):
    with tool_server() as server:
        code = main(run_args(tmp_path, "dead", [dead_url("/v1"), dead_url("/v1")], [server.url]))
    assert code == 2
    assert "none of the 2 model endpoints answers" in capsys.readouterr().err
    assert not list((tmp_path / "dead").glob("*/*.json"))


def test_one_url_stays_a_string_and_several_a_list(tmp_path):
    assert RunConfig(base_url=["http://a/v1"]).base_url == "http://a/v1"
    assert RunConfig(server=["http://s:1"], base_url=("http://a/v1", "http://b/v1")).base_url == [
        "http://a/v1", "http://b/v1"]
    config = tmp_path / "run.yaml"
    config.write_text("base_url:\n  - http://a/v1\n  - http://b/v1\nserver: http://s:8080\n")
    cfg = RunConfig(**load_yaml(config))
    assert (cfg.base_url, cfg.server) == (["http://a/v1", "http://b/v1"], "http://s:8080")
    with pytest.raises(InputError, match="embedded"):
        RunConfig(server=["embedded", "http://s:1"]).validate()
    assert url_list(None) == [] and url_list("http://a") == ["http://a"] and url_list(["x", " "]) == ["x"]


def test_the_tool_server_client_spreads_calls_and_skips_a_dead_server():
    with tool_server() as one, tool_server() as two:
        client = ServerClient([dead_url(), one.url, two.url], attempts=1)
        replies = [client.call("Finance", "24h_currency_desk", "convert", "{}") for _ in range(8)]
        stats = client.pool_stats()
    assert all(r.http_status == 200 for r in replies)
    assert stats[0]["served"] == 0 and stats[0]["cooldowns"] == 1
    assert stats[1]["served"] > 0 and stats[2]["served"] > 0 and stats[1]["served"] + stats[2]["served"] == 8


def test_the_judge_takes_several_urls(monkeypatch):
    from runners.cli.commands._common import judge_urls

    with OpenAIStandin(chat=["fine"]) as live:
        client = OpenAIChatClient([dead_url("/v1"), live.url], "standin-model", retries=1, wait_min=0)
        assert [client.chat([{"role": "user", "content": "x"}])["content"] for _ in range(3)] == ["fine"] * 3
        assert live.count() == 3
    args = type("Args", (), {"judge_url": None})()
    monkeypatch.setenv("TBA_JUDGE_URL", "http://a/v1, http://b/v1")
    assert judge_urls(args) == ["http://a/v1", "http://b/v1"]
    args.judge_url = ["http://c/v1"]
    assert judge_urls(args) == ["http://c/v1"]


@pytest.mark.parametrize("command", [["evaluate", "RUN"], ["judge", "--converted", "F", "--out", "D"], ["run"]])
def test_each_role_takes_its_flag_repeated(command):
    from runners.cli import build_parser

    flag = "--base-url" if command == ["run"] else "--judge-url"
    args = build_parser().parse_args([*command, flag, "http://a/v1", flag, "http://b/v1"])
    assert getattr(args, flag[2:].replace("-", "_")) == ["http://a/v1", "http://b/v1"]
    if command == ["run"]:
        servers = build_parser().parse_args(["run", "--server", "http://s:1", "--server", "http://s:2"]).server
        assert servers == ["http://s:1", "http://s:2"]


def test_stats_of_several_pools_add_up():
    a = [{"url": "u1", "served": 2, "failed": 1, "faults": {"timeout": 1}, "cooldowns": 1}]
    b = [{"url": "u1", "served": 3, "failed": 0, "faults": {}, "cooldowns": 0},
         {"url": "u2", "served": 1, "failed": 2, "faults": {"timeout": 1, "http_5xx": 1}, "cooldowns": 1}]
    assert merge_stats(a, b) == [
        {"url": "u1", "served": 5, "failed": 1, "faults": {"timeout": 1}, "cooldowns": 1},
        {"url": "u2", "served": 1, "failed": 2, "faults": {"timeout": 1, "http_5xx": 1}, "cooldowns": 1}]

