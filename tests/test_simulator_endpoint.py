"""The llm / mirrorapi simulator's endpoint is checked before anything runs and recorded as evidence (the follow-up
to issue 40): one GET /models per command, as the judge's preflight; a dead endpoint, a refused key, no model list
or the model not listed is exit 2 before any query (tba run), before the model loads (tba eval), before binding (tba
serve). A run records the model id whole, the endpoint's host, whether it listed the model and whose prompt the
simulator sends, for every session (a rerun at another host adds one) and from an external server's /health; each
answer a model simulator makes is marked with that model and host (its cache mark, /stats' made_by)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from runners.cli import main
from tests.faulty_http import FaultyServer
from tests.openai_standin import OpenAIStandin
from tests.test_endpoints import dead_url
from toolbench_adapter.evaluation.comparability import PROMPT_FILE, PROMPT_OWN, PROMPT_STAND_IN
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.runner import EmbeddedServer
from toolbench_adapter.server.simulators import SimulatorOptions
from toolbench_adapter.server.simulators import endpoint as endpoint_module
from toolbench_adapter.server.simulators.endpoint import check_endpoint

SIMULATED = '{"error": "", "response": {"simulated": "by the stand-in"}}'
MAKER = "llm[gpt-4-turbo@127.0.0.1]"


def run_args(tmp_path: Path, name: str, *extra: str) -> list[str]:
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--stb-root",
            "data/sample", "--quiet", "--simulator", "llm", "--llm-model", "gpt-4-turbo", *extra]


def responses(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())["setup_facts"]["tool_responses"]


def refused(capsys, tmp_path: Path, url: str, *extra: str) -> str:
    started = time.monotonic()
    assert main(run_args(tmp_path, "r", "--llm-base-url", url, *extra)) == 2
    assert time.monotonic() - started < 30  # bounded: one GET, whatever the endpoint does
    assert not list((tmp_path / "r").rglob("*_CoT@1.json"))  # no query ran
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_dead_simulator_endpoint_is_exit_2_before_any_query(tmp_path, capsys):
    err = refused(capsys, tmp_path, dead_url("/v1"))
    assert "the llm simulator's endpoint http://127.0.0.1:" in err and "cannot be reached" in err
    assert "connection refused, reset or host unknown" in err and "Max retries" not in err
    assert "--llm-base-url" in err and "https://api.openai.com/v1" in err


def test_an_endpoint_serving_another_model_is_exit_2_naming_what_it_lists(tmp_path, capsys):
    with OpenAIStandin(models=("my-local/gpt-4-turbo",)) as endpoint:
        err = refused(capsys, tmp_path, endpoint.url)
        assert endpoint.model_lists == 1 and endpoint.count() == 0
    assert "does not serve 'gpt-4-turbo' (GET /models lists: my-local/gpt-4-turbo)" in err
    assert "--llm-model with an id it lists (e.g. my-local/gpt-4-turbo)" in err


def test_a_refused_key_and_an_endpoint_without_a_model_list_are_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIM_KEY", "sk-wrong")
    with FaultyServer([401]) as server:
        err = refused(capsys, tmp_path, server.url + "/v1", "--llm-api-key-env", "SIM_KEY")
    assert "refused the key in $SIM_KEY (HTTP 401)" in err and "--llm-api-key-env" in err
    with FaultyServer([404]) as server:
        err = refused(capsys, tmp_path, server.url + "/v1")
    assert "gives no model list (GET " in err and "HTTP 404" in err


def test_an_endpoint_that_never_answers_is_exit_2_after_the_checks_timeout(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(endpoint_module, "CHECK_TIMEOUT_S", 0.5)
    with FaultyServer(["hang"]) as server:
        err = refused(capsys, tmp_path, server.url + "/v1")
    assert "cannot be reached (GET " in err and "no answer within 0.5 s" in err


def test_tba_eval_and_tba_serve_check_the_endpoint_before_anything_runs(tmp_path, capsys):
    dead = dead_url("/v1")
    assert main(["eval", "--check-only", "--name", "e", "--out-root", str(tmp_path), "--backend", "scripted",
                 "--simulator", "llm", "--llm-model", "gpt-4-turbo", "--llm-base-url", dead]) == 2
    assert "cannot be reached" in capsys.readouterr().err and not (tmp_path / "e").exists()
    assert main(["serve", "--port", "0", "--simulator", "llm", "--llm-model", "gpt-4-turbo", "--llm-base-url",
                 dead]) == 2
    assert "cannot be reached" in capsys.readouterr().err


def test_a_run_records_the_simulator_it_asked_and_marks_its_answers(tmp_path):
    with OpenAIStandin(models=("gpt-4-turbo",), chat=[SIMULATED]) as endpoint:
        assert main(run_args(tmp_path, "r", "--llm-base-url", endpoint.url, "--cache-dir",
                             str(tmp_path / "cache"))) == 0
        assert endpoint.model_lists == 1  # one GET /models for the run
        facts = responses(tmp_path / "r")
        assert facts["simulator_endpoints"] == [{"simulator": "llm", "model": "gpt-4-turbo", "host": "127.0.0.1",
                                                 "listed": True, "prompt": PROMPT_OWN}]
        assert facts["made_by"] == {MAKER: facts["requests"]} and facts["misses"] == facts["requests"] > 0
        marks = {entry["_tba_made_by"] for path in (tmp_path / "cache" / "_simulated").rglob("*.json")
                 for entry in json.loads(path.read_text()).values()}
        assert marks == {MAKER}
        # the same run again, its simulator asked at another host name: both endpoints are kept
        assert main(run_args(tmp_path, "r", "--llm-base-url", endpoint.url.replace("127.0.0.1", "localhost"),
                             "--cache-dir", str(tmp_path / "cache"))) == 0
    hosts = [e["host"] for e in responses(tmp_path / "r")["simulator_endpoints"]]
    assert hosts == ["127.0.0.1", "localhost"]


def test_a_run_against_tba_serve_records_the_endpoint_its_health_names(tmp_path):
    with OpenAIStandin(models=("gpt-4-turbo",), chat=[SIMULATED]) as endpoint:
        options = SimulatorOptions(base_url=endpoint.url, model="gpt-4-turbo")
        server = build_virtual_server(ServerConfig(stb_root="data/sample", simulator="llm",
                                                   simulator_options=options, save=False))
        server.simulator_endpoint = check_endpoint("llm", options).facts()  # as tba serve does before binding
        with EmbeddedServer(create_app(server)) as tools:
            assert main(["run", "--name", "ext", "--out-root", str(tmp_path), "--backend", "scripted",
                         "--stb-root", "data/sample", "--quiet", "--server", tools.url]) == 0
    facts = responses(tmp_path / "ext")
    assert facts["simulator"] == "llm" and facts["server"] == tools.url
    assert facts["simulator_endpoints"] == [server.simulator_endpoint] and facts["made_by"] == {
        MAKER: facts["requests"]}


@pytest.mark.parametrize("with_prompt", [False, True])
def test_mirrorapi_records_whose_system_prompt_it_sends(tmp_path, with_prompt):
    prompt = tmp_path / "sft_system.txt"
    prompt.write_text("You are an API server.")
    with OpenAIStandin(models=("mirror",), chat=[SIMULATED]) as endpoint:
        assert main(["run", "--name", "m", "--out-root", str(tmp_path), "--backend", "scripted", "--stb-root",
                     "data/sample", "--quiet", "--limit", "1", "--simulator", "mirrorapi", "--llm-model", "mirror",
                     "--llm-base-url", endpoint.url, *(["--mirror-system-prompt", str(prompt)] if with_prompt
                                                       else [])]) == 0
    [found] = responses(tmp_path / "m")["simulator_endpoints"]
    assert found["prompt"] == (PROMPT_FILE if with_prompt else PROMPT_STAND_IN) and found["model"] == "mirror"


def test_a_parser_fan_out_checks_its_simulator_once_and_every_variant_records_it(tmp_path, capsys):
    """tba run --parsers: one embedded server for every variant, its simulator's endpoint checked before it starts
    and recorded by each variant run (they reach the server by its URL)."""
    fan_out = ["--dialect", "toolllama", "--parsers", "react-find,react-robust", "--limit", "1"]
    assert main(run_args(tmp_path, "dead", "--llm-base-url", dead_url("/v1"), *fan_out)) == 2
    assert "cannot be reached" in capsys.readouterr().err
    assert not list((tmp_path / "dead").rglob("*_CoT@1.json"))
    with OpenAIStandin(models=("gpt-4-turbo",), chat=[SIMULATED]) as endpoint:
        assert main(run_args(tmp_path, "fan", "--llm-base-url", endpoint.url, *fan_out)) == 0
        assert endpoint.model_lists == 1
    for variant in ("react-find", "react-robust"):
        facts = responses(tmp_path / "fan" / variant)
        assert [e["model"] for e in facts["simulator_endpoints"]] == ["gpt-4-turbo"], variant
