"""The served path (issue 33, item 7): `tba serve-model` lists its model config's generation limits, the weights
it serves and whether it can constrain (GET /v1/models); a run that sets no max_tokens uses the served limit and
prints the limits it used; a judge on it is constrained to the verdict's JSON schema (auto), so a model that
writes no valid JSON unconstrained still judges; and the same weights under another served name are the run's
own model. A fake model behind the real server (a real one is minutes per query on this machine)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
import requests

from runners.cli import main
from runners.cli.commands.serve_model import generation_limits
from runners.models.base import Completion, ModelRequest
from runners.models.local_model import ModelSource
from runners.serving.openai_server import LoopbackServer, build_app

FINISH = 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "42"}'
VERDICT = '{"reason": "it answers", "answer_status": "Solved"}'


class FakeModel:
    """A local model as the server sees one: its weights' folder, constrained decoding, and a habit a small
    model has: unconstrained, its judge replies are no JSON."""

    name = "fake"

    def __init__(self, folder: Path):
        self.source = ModelSource(folder, None, "fake:tiny")
        self.model = "fake:tiny"
        self.requests: list[ModelRequest] = []

    def preflight(self) -> None:
        pass

    def constraint_support(self, dialect: str) -> str | None:
        return None

    def complete(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        if request.prompt is not None:  # the run's turn (toolllama text)
            return Completion(text=FINISH, prompt_tokens=5, completion_tokens=5)
        constrained = request.extra.get("constraint") is not None
        return Completion(text=VERDICT if constrained else "Solved, I would say!", prompt_tokens=5, completion_tokens=5)


def served_run(tmp_path: Path, url: str, model: str, *extra: str, name: str = "r") -> Path:
    assert main(["run", "--name", name, "--out-root", str(tmp_path), "--backend", "openai-completions",
                 "--base-url", url, "--model", model, "--groups", "G1_instruction", "--quiet", *extra]) == 0
    return tmp_path / name


def test_a_run_that_sets_no_max_tokens_uses_the_served_models_limit_and_prints_it(tmp_path, capsys):
    model = FakeModel(tmp_path / "weights")
    generation = {"max_tokens": 77, "config": "runners/configs/tiny.yaml"}
    with LoopbackServer(build_app(model, served_name="tiny", generation=generation)) as server:
        [entry] = requests.get(f"{server.url}/models", timeout=5).json()["data"]
        assert entry["generation"] == generation and entry["structured_outputs"] == ["json", "grammar"]
        assert entry["root"] == str((tmp_path / "weights").resolve())
        # a request that gives no max_tokens gets the config's
        requests.post(f"{server.url}/completions", json={"prompt": "x"}, timeout=5)
        assert model.requests.pop().max_tokens == 77

        run_dir = served_run(tmp_path, server.url, "tiny")
        err = capsys.readouterr().err
        assert {r.max_tokens for r in model.requests} == {77}  # every turn, not the 1,024 default
        assert json.loads((run_dir / "manifest.json").read_text())["config"]["max_tokens"] == 77
        assert (f"generation limits: max_tokens 77 per turn (the served model's config runners/configs/tiny.yaml "
                f"(GET {server.url}/models)); stop \"</s>\"; temperature 0") in err

        model.requests.clear()  # a limit of the run's own wins, and the line says where it came from
        served_run(tmp_path, server.url, "tiny", "--max-tokens", "50", name="own")
        assert {r.max_tokens for r in model.requests} == {50}
        assert "generation limits: max_tokens 50 per turn (--max-tokens)" in capsys.readouterr().err

    with LoopbackServer(build_app(FakeModel(tmp_path / "weights"), served_name="tiny")) as server:
        served_run(tmp_path, server.url, "tiny", name="unlisted")
        assert ("max_tokens 1024 per turn (the default: the server lists no limit for the model)"
                in capsys.readouterr().err)


def test_serve_model_takes_the_default_models_config_and_a_given_one(tmp_path):
    def args(**given):
        return argparse.Namespace(**{"backend": "hf", "model": None, "config": None, **given})

    default = generation_limits(args())
    assert default["max_tokens"] == 256 and default["config"].endswith("runners/configs/smollm2.yaml")
    assert generation_limits(args(model=str(tmp_path))) is None  # another model: no config known
    config = tmp_path / "c.yaml"
    config.write_text("max_tokens: 64\n")
    assert generation_limits(args(model=str(tmp_path), config=str(config)))["max_tokens"] == 64
    config.write_text("method: CoT@1\n")
    assert main(["serve-model", "--config", str(config), "--port", "0"]) == 2


def test_the_server_constrains_a_request_that_asks_and_refuses_where_it_cannot(tmp_path):
    model = FakeModel(tmp_path)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with LoopbackServer(build_app(model, served_name="tiny")) as server:
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        for field, value in (("structured_outputs", {"json": schema}),
                             ("response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})):
            reply = requests.post(f"{server.url}/chat/completions", json={**chat, field: value}, timeout=5)
            assert reply.json()["choices"][0]["message"]["content"] == VERDICT
            assert model.requests.pop().extra["constraint"].json_schema == schema
        grammar = requests.post(f"{server.url}/completions", json={"prompt": "x", "structured_outputs": {
            "grammar": 'root ::= "a"'}}, timeout=5)
        assert grammar.status_code == 200 and model.requests.pop().extra["constraint"].ebnf == 'root ::= "a"'
        bad = requests.post(f"{server.url}/chat/completions", json={**chat, "structured_outputs": {"json": 3}}, timeout=5)
        assert bad.status_code == 400 and "structured_outputs.json" in bad.json()["error"]["message"]

    class Plain(FakeModel):
        constraint_support = None

    with LoopbackServer(build_app(Plain(tmp_path), served_name="tiny")) as server:
        assert "structured_outputs" not in requests.get(f"{server.url}/models", timeout=5).json()["data"][0]
        refused = requests.post(f"{server.url}/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}], "structured_outputs": {"json": {}}}, timeout=5)
        assert refused.status_code == 400 and "cannot constrain" in refused.json()["error"]["message"]


def test_serve_model_judges_with_the_verdict_constrained(tmp_path, capsys):
    """Was: 5 of 6 judgements failed (invalid JSON) with SmolLM2 behind tba serve-model as the judge."""
    with LoopbackServer(build_app(FakeModel(tmp_path / "run-weights"), served_name="tiny")) as run_server:
        run_dir = served_run(tmp_path, run_server.url, "tiny")
    judge = FakeModel(tmp_path / "judge-weights")
    with LoopbackServer(build_app(judge, served_name="judge")) as server:
        capsys.readouterr()
        assert main(["evaluate", str(run_dir), "--judge-url", server.url, "--judge-model", "judge", "--quiet",
                     "--evaluate-times", "1", "--cache", str(tmp_path / "c.jsonl")]) == 0
        out = capsys.readouterr().out
    assert "json (auto: the endpoint answered a forced tool call without one" in out
    assert "constrained (the endpoint lists structured_outputs" in out
    asked = [r for r in judge.requests if "tba-judge-preflight" not in json.dumps(r.messages)]
    assert asked and all(r.extra.get("constraint") is not None for r in asked)
    [evaluation] = (run_dir / "eval").glob("*-json-constrained-x1")
    record = json.loads((evaluation / "evaluation.json").read_text())
    assert (record["status"], record["judgements"], record["failed_judgements"]) == ("complete", 1, 0)


def test_the_same_weights_under_another_served_name_are_the_runs_own_model(tmp_path, capsys):
    weights = tmp_path / "weights"
    with LoopbackServer(build_app(FakeModel(weights), served_name="tiny")) as run_server:
        run_dir = served_run(tmp_path, run_server.url, "tiny")
    assert json.loads((run_dir / "manifest.json").read_text())["weights"] == str(weights.resolve())
    with LoopbackServer(build_app(FakeModel(weights), served_name="judge")) as server:
        args = ["evaluate", str(run_dir), "--judge-url", server.url, "--judge-model", "judge", "--quiet",
                "--evaluate-times", "1", "--cache", str(tmp_path / "c.jsonl")]
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert re.search(r"the judge 'judge' is the run's own model \('tiny' at .*\) under another name \(the same "
                         r"weights: .*weights\)", err)
        assert "--judge-self" in err and not (run_dir / "eval").exists()
        assert main([*args, "--judge-self"]) == 0
    evaluation = json.loads(next((run_dir / "eval").glob("*/evaluation.json")).read_text())
    assert evaluation["judge"]["self_judged"] is True


@pytest.mark.slow
def test_smollm2_served_judges_one_answer_with_a_valid_verdict():
    """The real model behind the server: auto settles on json, constrained, and the verdict is one of the labels."""
    from runners.models.hf import HFBackend
    from toolbench_adapter.evaluation.evaluator import load_evaluator
    from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
    from toolbench_adapter.evaluation.judging.judge import judge_answer
    from toolbench_adapter.evaluation.judging.preflight import prepare_judge
    from toolbench_adapter.evaluation.labels import Label

    answer = {"method": "CoT@1", "total_steps": 1, "final_answer": "It is 21 degrees in Lisbon.",
              "answer_details": [{"role": "tool", "message": {"name": "Finish", "arguments": {
                  "return_type": "give_answer", "final_answer": "It is 21 degrees in Lisbon."}, "response": ""},
                  "next": []}]}
    with LoopbackServer(build_app(HFBackend(), served_name="judge")) as server:
        judge = prepare_judge(OpenAIChatClient(server.url, "judge"), load_evaluator(None, []), "auto",
                              warn=lambda text: None, max_tokens=96)
        assert judge.mode == "json" and judge.constrain
        assert judge_answer(judge, "What is the weather in Lisbon?", answer).label in set(Label)
        assert judge.malformed == 0
