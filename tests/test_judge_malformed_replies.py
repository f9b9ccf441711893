"""Issue 41, item 4: a judge reply of the wrong shape ("message": null, a string, choices empty or not a list,
content not text, odd tool calls, a huge reply) is a failed judgement, counted and asked again like a malformed
verdict, never a TypeError traceback (evaluate, judge-audit, judge, prefer, FAC).

The judge is the loopback stand-in (tests/openai_standin.py) answering a raw JSON body of that shape."""

from __future__ import annotations

import json

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin, Reply
from tests.test_judge_audit import released_set
from tests.test_judge_failures import command_inputs, evaluate_args, scripted_run, solved
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import (
    MAX_REPLY_CHARS,
    MalformedReply,
    assistant_message,
    check_message,
)
from toolbench_adapter.evaluation.judging.judge import JsonJudge, ToolsJudge
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.protocol.evaluation import CHECK_ANSWER_STATUS

HUGE = "x" * (MAX_REPLY_CHARS + 1)
CALL = {"id": "c1", "type": "function", "function": {"name": CHECK_ANSWER_STATUS, "arguments": "{}"}}
# chat completion bodies a judge endpoint may send, none of them an assistant message a judge can read
MALFORMED = {
    "message null": {"choices": [{"message": None}]},
    "message a string": {"choices": [{"message": "Solved"}]},
    "message a list": {"choices": [{"message": [1, 2]}]},
    "choices empty": {"choices": []},
    "choices an object": {"choices": {"message": {"content": "x"}}},
    "choices a string": {"choices": "none"},
    "choice a number": {"choices": [7]},
    "no choices": {"id": "x"},
    "body a list": [1, 2, 3],
    "content a number": {"choices": [{"message": {"role": "assistant", "content": 42}}]},
    "content an object": {"choices": [{"message": {"role": "assistant", "content": {"answer_status": "Solved"}}}]},
    "tool_calls an object": {"choices": [{"message": {"content": None, "tool_calls": CALL}}]},
    "tool_calls a string": {"choices": [{"message": {"content": None, "tool_calls": "call"}}]},
    "tool call a string": {"choices": [{"message": {"content": None, "tool_calls": ["call"]}}]},
    "tool call no function": {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c"}]}}]},
    "function a list": {"choices": [{"message": {"content": None, "tool_calls": [{"function": [1]}]}}]},
    "arguments a number": {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": CHECK_ANSWER_STATUS, "arguments": 5}}]}}]},
    "content huge": {"choices": [{"message": {"content": HUGE}}]},
    "arguments huge": {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": CHECK_ANSWER_STATUS, "arguments": HUGE}}]}}]},
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_every_malformed_shape_is_a_malformed_reply_naming_what_is_wrong(name):
    with pytest.raises(MalformedReply) as raised:
        assistant_message(MALFORMED[name], "http://judge/v1")
    assert "http://judge/v1 answered a malformed" in str(raised.value)
    assert raised.value.fault is None and raised.value.status is None


def test_well_formed_messages_pass_as_they_are():
    text = {"role": "assistant", "content": "Solved"}
    call = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    assert assistant_message({"choices": [{"message": text}]}, "j") is text
    assert check_message(call, "j") is call
    assert check_message({"content": None}, "j") == {"content": None}


class ListClient:
    """A plug-in ChatClient (no HTTP) that answers from a list: the judge checks its replies too."""

    name = "list-client"
    supports_tools = True

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = 0

    def chat(self, messages, **_):
        self.asked += 1
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@pytest.mark.parametrize("judge_class", [ToolsJudge, JsonJudge])
@pytest.mark.parametrize("bad", [None, "Solved", {"content": 3}, {"tool_calls": {"x": 1}}, {"tool_calls": [None]}])
def test_a_malformed_reply_is_asked_again_and_counted_then_the_verdict_is_read(judge_class, bad):
    good = ({"content": None, "tool_calls": [{"function": {"name": CHECK_ANSWER_STATUS, "arguments": json.dumps(
        {"reason": "r", "answer_status": "Solved"})}}]} if judge_class is ToolsJudge else
            {"content": '{"reason": "r", "answer_status": "Solved"}'})
    client = ListClient([bad, good])
    judge = judge_class(client, load_evaluator(), attempts=2)
    assert judge.ask(CHECK_ANSWER_STATUS, {"query": "q", "answer": "a"})["answer_status"] == "Solved"
    assert (client.asked, judge.requests, judge.malformed) == (2, 2, 1)


def test_only_malformed_replies_end_in_a_failed_judgement_not_an_exception():
    from tests.test_judge_audit import converted_answer
    from toolbench_adapter.evaluation.judging.judge import judge_answer

    client = ListClient([None])
    judge = ToolsJudge(client, load_evaluator(), attempts=3)
    judgement = judge_answer(judge, "q", converted_answer("an answer"))
    assert judgement.label is Label.ERROR and "choices" not in judgement.error
    assert "no usable verdict after 3 attempts" in judgement.error and "the message is null" in judgement.error
    assert (client.asked, judge.malformed) == (3, 3)


def malformed_after_preflight(shape: dict):
    """The preflight's test request is answered well (the stand-in answers it apart); every judgement not."""
    return lambda endpoint, body: Reply(raw=shape)


@pytest.mark.parametrize("shape", ["message null", "message a string", "choices empty", "content a number",
                                   "tool_calls a string"])
def test_tba_evaluate_counts_malformed_replies_as_failed_judgements_exit_3(tmp_path, capsys, shape):
    """Was: TypeError: 'NoneType' object is not a mapping (a traceback) in evaluate."""
    run_dir = scripted_run(tmp_path)
    with OpenAIStandin(respond=malformed_after_preflight(MALFORMED[shape])) as judge:
        capsys.readouterr()
        assert main(evaluate_args(run_dir, judge, tmp_path / "c.jsonl", "--score-anyway")) == 3
        assert judge.count() == 6 * 3  # six judgements, each asked three times (the judge's attempts)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert "JUDGE FAILURES 6 of 6 judgements" in captured.out and "answered a malformed" in captured.out


def test_tba_evaluate_mends_by_asking_again_when_one_reply_was_malformed(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)
    replies = iter([Reply(raw=MALFORMED["message null"])])

    def once_malformed(endpoint, body):
        return next(replies, None) or solved(endpoint, body)

    with OpenAIStandin(respond=once_malformed) as judge:
        assert main(evaluate_args(run_dir, judge, tmp_path / "c.jsonl")) == 0
        assert judge.count() == 7  # six judgements, one of them asked twice
    assert "JUDGE FAILURES" not in capsys.readouterr().out


@pytest.mark.parametrize("shape", ["message null", "message a string"])
def test_tba_judge_audit_counts_malformed_replies_exit_3(tmp_path, capsys, shape):
    """Was: the same TypeError traceback in judge-audit."""
    labels, converted = released_set(tmp_path)
    with OpenAIStandin(respond=malformed_after_preflight(MALFORMED[shape])) as judge:
        code = main(["judge-audit", "--labels", str(labels), "--converted", str(converted), "--judge-url", judge.url,
                     "--judge-model", judge.model, "--no-progress", "--no-cache", "--attempts", "2",
                     "--resamples", "10"])
    captured = capsys.readouterr()
    assert code == 3 and "Traceback" not in captured.err + captured.out
    assert "JUDGE FAILURES 6 of 6 judgements" in captured.out


@pytest.mark.parametrize("command", ["judge", "prefer"])
def test_tba_judge_and_prefer_count_malformed_replies_exit_3(tmp_path, capsys, command):
    inputs = command_inputs(tmp_path, command)
    with OpenAIStandin(respond=malformed_after_preflight(MALFORMED["message null"])) as judge:
        code = main([command, *inputs, "--judge-url", judge.url, "--judge-model", judge.model, "--no-cache",
                     "--no-progress", "--attempts", "2", "--evaluate-times", "1"])
    captured = capsys.readouterr()
    assert code == 3 and "Traceback" not in captured.err + captured.out
    assert "JUDGE FAILURES" in captured.out


def test_a_judge_whose_test_request_gets_a_malformed_reply_is_refused_before_any_work(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)

    class Standin(OpenAIStandin):
        def _probe_reply(self, body):
            return Reply(raw=MALFORMED["message null"])

    with Standin(respond=solved) as judge:
        assert main(evaluate_args(run_dir, judge, tmp_path / "c.jsonl")) == 2
        assert judge.count() == 0
    err = capsys.readouterr().err
    assert "did not answer a test request (3 tries)" in err and "message is null" in err
    assert "Traceback" not in err and not (run_dir / "converted").exists()


def test_tba_judge_fac_counts_a_malformed_reply_as_a_failed_judgement(tmp_path, capsys):
    from tests.test_judge_loopback import example, give_answer

    converted = tmp_path / "conv" / "m" / "G1_tool.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({"1": example("Q1 fine", give_answer("a"))}))
    with OpenAIStandin(respond=malformed_after_preflight(MALFORMED["content an object"])) as judge:
        code = main(["judge", "--metric", "fac", "--converted", str(converted), "--out", str(tmp_path / "o"),
                     "--judge-url", judge.url, "--judge-model", judge.model, "--no-progress"])
    captured = capsys.readouterr()
    assert code == 3 and "Traceback" not in captured.err + captured.out
    assert "JUDGE FAILURES 1 of 1 judgements" in captured.out
