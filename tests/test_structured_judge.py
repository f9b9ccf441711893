"""--judge-constrain: the judge's reply constrained to the evaluator's JSON with the label enum."""

import json

import pytest

from runners.models.base import Completion
from runners.models.chat_adapter import BackendChatClient
from runners.models.scripted import ScriptedBackend
from tests.openai_standin import OpenAIStandin
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.evaluation.judging.judge import judge_answer, make_judge
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.protocol.evaluation import ANSWER_STATUS_FIELD, CHECK_ANSWER_STATUS

ANSWER = {"method": "CoT@1", "total_steps": 1, "final_answer": "It is 21 degrees in Lisbon.",
          "answer_details": [{"role": "tool", "message": {"name": "Finish", "arguments": {
              "return_type": "give_answer", "final_answer": "It is 21 degrees in Lisbon."}, "response": ""},
              "next": []}]}


@pytest.fixture(scope="module")
def spec():
    return load_evaluator(None, [])


class ConstrainingBackend(ScriptedBackend):
    name = "scripted"
    accepts_messages = True

    def constraint_support(self, kind):
        return None


def test_tools_mode_with_constrain_is_the_refused_trap(spec):
    client = BackendChatClient(ConstrainingBackend(script=lambda r: "{}"))
    with pytest.raises(InputError, match="skips the tool call"):
        make_judge(client, spec, "tools", constrain=True)


def test_a_client_that_cannot_constrain_is_refused(spec):
    client = BackendChatClient(ScriptedBackend(script=lambda r: "{}"))
    with pytest.raises(InputError, match="cannot constrain"):
        make_judge(client, spec, "auto", constrain=True)


def test_the_request_carries_the_label_enum_and_no_prefill(spec):
    backend = ConstrainingBackend(script=lambda r: json.dumps({ANSWER_STATUS_FIELD: "Solved"}))
    client = BackendChatClient(backend)
    client.accepts_prefill = True  # a local model: unconstrained it would get the prefill and stops
    judge = make_judge(client, spec, "auto", constrain=True)
    assert judge.mode == "json" and "constrained" in judge.name
    assert judge_answer(judge, "weather in Lisbon?", ANSWER).label is Label.SOLVED
    request = backend.requests[-1]
    schema = request.extra["constraint"].json_schema
    assert schema["properties"][ANSWER_STATUS_FIELD]["enum"] == judge._choices(CHECK_ANSWER_STATUS)
    assert schema["required"] == [ANSWER_STATUS_FIELD]
    assert "prefill" not in request.extra and request.stop == []


def test_a_vllm_judge_gets_structured_outputs(spec):
    with OpenAIStandin(chat=[json.dumps({ANSWER_STATUS_FIELD: "Unsolved"})], owned_by="vllm") as standin:
        client = OpenAIChatClient(standin.url, standin.model)
        judge = make_judge(client, spec, "auto", constrain=True)
        assert judge_answer(judge, "q", ANSWER).label is Label.UNSOLVED
        body = standin.bodies("chat/completions")[0]
    enum = body["structured_outputs"]["json"]["properties"][ANSWER_STATUS_FIELD]["enum"]
    assert set(enum) >= {"Solved", "Unsolved", "Unsure"} and "tools" not in body


def test_an_endpoint_that_is_not_vllm_is_refused_before_judging(spec):
    with OpenAIStandin(owned_by="standin") as standin:
        with pytest.raises(InputError, match="owned_by: standin"):
            make_judge(OpenAIChatClient(standin.url, standin.model), spec, "auto", constrain=True)
        assert standin.count() == 0


def test_the_local_model_answers_a_parseable_label_when_constrained(spec):
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    from runners.models import local_model
    from runners.models.hf import HFBackend

    if not local_model.is_converted(local_model.default_cache_folder()):
        pytest.skip("the local model is not converted yet (make model)")
    backend = HFBackend()
    judge = make_judge(BackendChatClient(backend), spec, "auto", constrain=True, max_tokens=24)
    original = backend.complete
    outputs = []

    def record(request):
        completion: Completion = original(request)
        outputs.append(completion.text)
        return completion

    backend.complete = record
    judgement = judge_answer(judge, "What is the weather in Lisbon?", ANSWER)
    assert judgement.label in (Label.SOLVED, Label.UNSOLVED, Label.UNSURE) and judgement.error is None
    assert all(json.loads(text)[ANSWER_STATUS_FIELD] in ("Solved", "Unsolved", "Unsure") for text in outputs)
