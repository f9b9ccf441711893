"""The pass-rate judge against a real OpenAI-compatible stand-in server on 127.0.0.1 with scripted verdicts."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runners.cli import main
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.evaluation.judging.judge import judge_answer, make_judge
from toolbench_adapter.evaluation.judging.preflight import PREFLIGHT_MARKER
from toolbench_adapter.evaluation.judging.run_judge import judge_file
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.scoring.scores import sopr
from toolbench_adapter.evaluation.storage import read_label_file


class StandIn:
    """A chat-completions endpoint: ``script(payload) -> assistant message``; it counts requests."""

    def __init__(self, script):
        self.script = script
        self.payloads: list[dict] = []
        self.fail_next = 0  # answer this many requests with HTTP 500 first
        self.probes = 0  # preflight test requests answered (not in payloads: scripts see judge requests only)
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                if PREFLIGHT_MARKER in json.dumps(body.get("messages")):  # the judge preflight's test request
                    with lock:
                        stand_in.probes += 1
                    # a tool-calling endpoint: a forced tool call comes back as one (auto then picks tools)
                    choice = body.get("tool_choice")
                    self.reply(tool_reply(choice["function"]["name"], {"reason": "preflight", "answer_status": "Solved"})
                               if isinstance(choice, dict) else {"role": "assistant", "content": "ok"}, body)
                    return
                with lock:
                    stand_in.payloads.append(body)
                    fail = stand_in.fail_next > 0
                    stand_in.fail_next -= int(fail)
                if fail:
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"overloaded")
                    return
                self.reply(stand_in.script(body), body)

            def reply(self, message, body):
                data = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                                   "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args):
                pass

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return len(self.payloads)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    servers = []

    def start(script):
        server = StandIn(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def function_of(payload: dict) -> str:
    """Which judge function a request asks: the forced tool, or (JSON mode) the prompt of our template."""
    if payload.get("tool_choice"):
        return payload["tool_choice"]["function"]["name"]
    return "parse_answer_status" if "Trace:" in payload["messages"][0]["content"] else "check_answer_status"


def tool_reply(function: str, arguments) -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": function, "arguments": text}}]}


def json_reply(status: str) -> dict:
    return {"role": "assistant", "content": f'Here is my verdict:\n{{"reason": "because", "answer_status": "{status}"}}'}


def verdicts(table: dict[tuple[str, str], str], mode: str = "tools"):
    """Script: the query marker in the prompt + the function -> status."""
    def script(payload):
        function = function_of(payload)
        prompt = payload["messages"][0]["content"]
        for (marker, fn), status in table.items():
            if marker in prompt and fn == function:
                if mode == "tools":
                    return tool_reply(function, {"reason": "scripted", "answer_status": status})
                return json_reply(status)
        raise AssertionError(f"unscripted request {function}: {prompt[:80]}")
    return script


def finish_answer(final_answer: str, with_finish: bool = True) -> dict:
    """A converted answer: system -> user -> a tool call -> Finish (or no Finish)."""
    finish = {"role": "tool", "message": {"name": "Finish", "arguments": final_answer, "response": ""}, "next": []}
    call = {"role": "tool", "message": {"name": "get_weather_for_demo", "arguments": "{}", "response": "sunny"},
            "next": [finish] if with_finish else []}
    details = [{"role": "system", "message": "", "next": [{"role": "user", "message": "", "next": [call]}]}]
    return {"method": "CoT@1", "total_steps": 4 if with_finish else 3, "final_answer": final_answer,
            "answer_details": details}


def example(query: str, final_answer: str, with_finish: bool = True) -> dict:
    return {"query": query, "available_tools": [{"name": "get_weather_for_demo"}, {"name": "Finish"}],
            "answer": finish_answer(final_answer, with_finish)}


def give_answer(text: str) -> str:
    return json.dumps({"return_type": "give_answer", "final_answer": text}, indent=2)


@pytest.fixture
def spec():
    return load_evaluator("default")


def client_for(server: StandIn, tools: bool = True) -> OpenAIChatClient:
    return OpenAIChatClient(server.url, "judge-standin", api_key="k", supports_tools=tools, retries=3,
                            wait_min=0, wait_max=0, timeout=10)


def test_early_unsolved_rules_make_no_request(stand_in, spec):
    server = stand_in(verdicts({}))
    judge = make_judge(client_for(server), spec)
    cases = [finish_answer(give_answer("x"), with_finish=False),  # no Finish in the final step
             finish_answer(json.dumps({"return_type": "give_up_and_restart"})),
             finish_answer("")]
    results = [judge_answer(judge, "Q", answer) for answer in cases]
    assert [r.label for r in results] == [Label.UNSOLVED] * 3
    assert [r.reason for r in results] == ["No answer", "Empty final answer!", "Empty final answer!"]
    assert all(r.calls == [] for r in results)
    assert server.count == 0


def test_tools_mode_forces_the_function_and_adds_reason(stand_in, spec):
    server = stand_in(verdicts({("MARK-1", "check_answer_status"): "Solved"}))
    judge = make_judge(client_for(server), spec)
    assert judge.mode == "tools"
    result = judge_answer(judge, "MARK-1 what is the weather?", finish_answer(give_answer("sunny")))
    assert result.label is Label.SOLVED and result.reason == "scripted"
    payload = server.payloads[0]
    assert payload["tool_choice"] == {"type": "function", "function": {"name": "check_answer_status"}}
    schema = payload["tools"][0]["function"]
    assert schema["parameters"]["required"] == ["answer_status", "reason"]
    assert schema["parameters"]["properties"]["answer_status"]["enum"] == ["Unsure", "Unsolved", "Solved"]
    assert "response_format" not in payload
    # the final answer is judged as the raw Finish arguments string
    assert give_answer("sunny") in payload["messages"][0]["content"]


def test_unsure_escalates_to_parse_answer_status_over_the_whole_answer(stand_in, spec):
    server = stand_in(verdicts({("MARK-2", "check_answer_status"): "Unsure",
                                ("MARK-2", "parse_answer_status"): "Unsolved"}))
    judge = make_judge(client_for(server), spec)
    answer = finish_answer(give_answer("it is sunny"))
    result = judge_answer(judge, "MARK-2 weather", answer)
    assert result.label is Label.UNSOLVED
    assert result.calls == ["check_answer_status", "parse_answer_status"]
    assert server.count == 2
    assert json.dumps(answer) in server.payloads[1]["messages"][0]["content"]


def test_repeats_are_independent_and_scored(stand_in, spec, tmp_path):
    sequence = iter(["Solved", "Unsolved", "Unsure", "Solved"])  # the Unsure repeat escalates

    def script(payload):
        return tool_reply(function_of(payload), {"reason": "r", "answer_status": next(sequence)})

    server = stand_in(script)
    judge = make_judge(client_for(server), spec)
    converted = tmp_path / "m" / "G1_instruction.json"
    converted.parent.mkdir()
    converted.write_text(json.dumps({"7": example("Q7", give_answer("a"))}))
    outcome = judge_file(converted, judge, tmp_path / "out", group="G1_instruction", model="m", evaluate_times=3,
                         concurrency=1, progress=False)
    labels = outcome.run.labels()["7"]
    assert labels == {0: Label.SOLVED, 1: Label.UNSOLVED, 2: Label.SOLVED}
    assert server.count == 4
    score = outcome.rows[0].score
    assert score.runs == [100.0, 0.0, 100.0]
    assert round(score.mean, 1) == 66.7


def test_second_scoring_is_served_from_the_cache(stand_in, spec, tmp_path):
    server = stand_in(verdicts({("Q1", "check_answer_status"): "Solved", ("Q2", "check_answer_status"): "Unsure",
                                ("Q2", "parse_answer_status"): "Solved"}))
    converted = tmp_path / "m" / "G1_tool.json"
    converted.parent.mkdir()
    converted.write_text(json.dumps({"1": example("Q1", give_answer("a")), "2": example("Q2", give_answer("b")),
                                     "3": example("Q3", give_answer("c"), with_finish=False)}))
    cache = tmp_path / "cache.jsonl"
    first = judge_file(converted, make_judge(client_for(server), spec), tmp_path / "a", group="G1_tool", model="m",
                       evaluate_times=2, cache_path=cache, progress=False)
    assert server.count == 2 * (1 + 2)
    assert first.run.requests == 6 and first.run.cache_hits == 0
    second = judge_file(converted, make_judge(client_for(server), spec), tmp_path / "b", group="G1_tool",
                        model="m", evaluate_times=2, cache_path=cache, progress=False)
    assert server.count == 6  # no new request
    assert second.run.requests == 0 and second.run.cache_hits == 4
    assert second.run.entries == first.run.entries
    # a third repeat is a new judgement: only it costs requests
    judge_file(converted, make_judge(client_for(server), spec), tmp_path / "c", group="G1_tool", model="m",
               evaluate_times=3, cache_path=cache, progress=False)
    assert server.count == 6 + 3


def test_malformed_verdicts_are_retried_then_recorded_as_judge_errors(stand_in, spec, tmp_path):
    def script(payload):
        prompt = payload["messages"][0]["content"]
        if "BAD-ARGS" in prompt:
            return tool_reply("check_answer_status", "{not json")
        if "BAD-ENUM" in prompt:
            return tool_reply("check_answer_status", {"answer_status": "Maybe"})
        return tool_reply("check_answer_status", {"reason": "ok", "answer_status": "Solved"})

    server = stand_in(script)
    judge = make_judge(client_for(server), spec, attempts=3)
    converted = tmp_path / "m" / "G2_category.json"
    converted.parent.mkdir()
    converted.write_text(json.dumps({"1": example("BAD-ARGS", give_answer("a")),
                                     "2": example("BAD-ENUM", give_answer("b")),
                                     "3": example("fine", give_answer("c"))}))
    outcome = judge_file(converted, judge, tmp_path / "out", group="G2_category", model="m", evaluate_times=1,
                         progress=False, cache_path=tmp_path / "cache.jsonl")
    assert server.count == 3 + 3 + 1
    labels = outcome.run.labels()
    assert labels["1"][0] is Label.ERROR and labels["2"][0] is Label.ERROR and labels["3"][0] is Label.SOLVED
    assert outcome.run.errors == 2
    stored = read_label_file(outcome.label_file)
    assert stored.entries["1"]["is_solved"] == {"0": "JudgeError"}
    assert "after 3 attempts" in stored.entries["1"]["reasons"]["0"]
    assert stored.meta["judge_errors"] == 2
    score = sopr(stored.labels)
    # a failed judgement is no verdict: left out of the denominator, not scored as Unsolved (was 33.3)
    assert score.errors == 2 and score.mean == 100.0 and score.n == 1
    # errors are not cached: judging again asks again for those two only
    judge_file(converted, judge, tmp_path / "out", group="G2_category", model="m", evaluate_times=1,
               progress=False, cache_path=tmp_path / "cache.jsonl")
    assert server.count == 7 + 6


def test_json_mode_sends_no_tools_and_reads_the_reply_with_the_ladder(stand_in, spec):
    server = stand_in(verdicts({("MARK-J", "check_answer_status"): "Unsure",
                                ("MARK-J", "parse_answer_status"): "Solved"}, mode="json"))
    judge = make_judge(client_for(server, tools=False), spec)
    assert judge.mode == "json"
    result = judge_answer(judge, "MARK-J weather", finish_answer(give_answer("sunny")))
    assert result.label is Label.SOLVED and result.reason == "because"
    assert result.calls == ["check_answer_status", "parse_answer_status"]
    for payload in server.payloads:
        assert "tools" not in payload and "tool_choice" not in payload and "response_format" not in payload
        assert '"answer_status": "<one of: Unsure, Unsolved, Solved>"' in payload["messages"][0]["content"]


def test_json_mode_malformed_reply_becomes_an_error(stand_in, spec):
    server = stand_in(lambda payload: {"role": "assistant", "content": "I think it is fine."})
    judge = make_judge(client_for(server, tools=False), spec, attempts=2)
    result = judge_answer(judge, "Q", finish_answer(give_answer("x")))
    assert result.label is Label.ERROR and "after 2 attempts" in result.error
    assert server.count == 2


def test_forcing_json_mode_on_a_tool_capable_client(stand_in, spec):
    server = stand_in(verdicts({("Q", "check_answer_status"): "Unsolved"}, mode="json"))
    judge = make_judge(client_for(server, tools=True), spec, "json")
    assert judge_answer(judge, "Q", finish_answer(give_answer("x"))).label is Label.UNSOLVED
    assert "tools" not in server.payloads[0]


def test_client_retries_server_errors(stand_in, spec):
    server = stand_in(verdicts({("Q", "check_answer_status"): "Solved"}))
    server.fail_next = 2
    judge = make_judge(client_for(server), spec)
    assert judge_answer(judge, "Q", finish_answer(give_answer("x"))).label is Label.SOLVED
    assert server.count == 3


def test_unreachable_judge_is_an_error_label_not_a_crash(spec):
    client = OpenAIChatClient("http://127.0.0.1:9/v1", "nobody", retries=1, wait_min=0, wait_max=0, timeout=2)
    result = judge_answer(make_judge(client, spec), "Q", finish_answer(give_answer("x")))
    assert result.label is Label.ERROR and "cannot reach" in result.error


def test_cli_judge_writes_upstream_layout_labels_and_scores(stand_in, tmp_path, capsys):
    server = stand_in(verdicts({("Q1", "check_answer_status"): "Solved", ("Q2", "check_answer_status"): "Unsolved"}))
    converted = tmp_path / "conv" / "mymodel" / "G1_instruction.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({"1": example("Q1", give_answer("a")), "2": example("Q2", give_answer("b")),
                                     "9": example("Q9", give_answer("c"))}))
    ids = tmp_path / "ids"
    ids.mkdir()
    (ids / "G1_instruction.json").write_text(json.dumps({"1": 0, "2": 0, "3": 0}))  # 3 has no answer, 9 not a test id
    code = main(["judge", "--converted", str(converted), "--out", str(tmp_path / "labels"), "--judge-url", server.url,
                 "--judge-model", "standin-judge", "--test-ids", str(ids), "--no-cache", "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "SoPR upstream" in out and "50.0±0.0" in out  # 1 of 2 answered
    assert "SoPR strict" in out and "33.3±0.0" in out  # 1 of 3 test ids
    labels = read_label_file(tmp_path / "labels" / "G1_instruction_mymodel.json")
    assert set(labels.labels) == {"1", "2"}
    assert labels.entries["1"]["is_solved"] == {"0": "AnswerStatus.Solved", "1": "AnswerStatus.Solved",
                                                "2": "AnswerStatus.Solved"}
    assert labels.judge == f"standin-judge @ {server.url} [tools]"
    assert labels.method == "CoT@1"
    csv_labels = read_label_file(tmp_path / "labels" / "G1_instruction_mymodel.csv")
    assert csv_labels.labels == labels.labels
    assert server.count == 2 * 3


def test_upstream_evaluator_folder_is_read_at_run_time(stb_root):
    spec = load_evaluator(stb_root / "toolbench" / "tooleval" / "evaluators" / "tooleval_gpt-3.5-turbo_default")
    assert set(spec.templates) >= {"check_answer_status", "parse_answer_status"}
    prompt = spec.prompt("check_answer_status", query="QQQ", answer="AAA")
    assert "QQQ" in prompt and "AAA" in prompt
    assert spec.temperature == 0.2 and spec.max_tokens == 1000
    assert spec.fingerprint != load_evaluator("default").fingerprint


PREFER_ARGS = ["--ref", "a.json", "--out-answers", "b.json", "--out", "o"]


def test_the_judge_model_default_follows_the_backend(monkeypatch):
    """hf without --judge-model judges with the local model; it must not be handed an OpenAI model name."""
    from runners.cli import build_parser
    from runners.cli.commands._common import judge_model_from_args

    monkeypatch.delenv("TBA_JUDGE_MODEL", raising=False)
    parser = build_parser()
    for command in (["judge", "--converted", "c.json", "--out", "o"], ["prefer", *PREFER_ARGS]):
        hf = parser.parse_args([*command, "--judge-backend", "hf"])
        assert judge_model_from_args(hf) is None
        openai = parser.parse_args(command)
        assert judge_model_from_args(openai) == "gpt-4o-mini"
        named = parser.parse_args([*command, "--judge-backend", "hf", "--judge-model", "smollm2"])
        assert judge_model_from_args(named) == "smollm2"
    monkeypatch.setenv("TBA_JUDGE_MODEL", "my-judge")
    assert judge_model_from_args(parser.parse_args(["judge", "--converted", "c.json", "--out", "o"])) == "my-judge"
