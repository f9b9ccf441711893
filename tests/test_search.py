"""CoT@N and DFSDT semantics on scripted models: give-up, backtracking, the diversity prompt, the call cap."""

import json

import pytest

from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend
from runners.search.agent import Agent, QueryContext, make_parse
from runners.search.cot import cot_file, run_cot
from runners.search.dfs import dfs_file, run_dfs
from runners.search.tree import Node
from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.env import ToolEnv
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.server.client import ReplyKind, ServerReply


class EchoServer:
    """In-process stand-in for the /virtual client: answers every call with its own arguments."""

    def __init__(self):
        self.calls = []

    def call_route(self, route, tool_input):
        self.calls.append((route.api_name, tool_input))
        return ServerReply(answer={"error": "", "response": f"ok {route.api_name} {tool_input}"},
                           kind=ReplyKind.OK, http_status=200, latency_s=0.0, attempts=1, waited_s=0.0)


def call(name, arguments):
    return {"id": "x", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def give_up():
    return Completion(text=None, tool_calls=[call("Finish", {"return_type": "give_up_and_restart"})])


def answer(text="done"):
    return Completion(text=None, tool_calls=[call("Finish", {"return_type": "give_answer", "final_answer": text})])


@pytest.fixture()
def setup():
    query = QuerySet().get("G1_instruction", 900001)  # the project's sample set
    toolset = build_toolset(query, "current")
    server = EchoServer()
    first = toolset.names[0]

    def make(script, dialect="openai-tools", parser="openai-tools"):
        backend = ScriptedBackend(script)
        agent = Agent(backend=backend, dialect=make_dialect(dialect), parse=make_parse(parser))
        ctx = QueryContext(toolset=toolset, group=query.group, method="x")

        def root():
            return Node.root(initial_messages(toolset), ToolEnv(toolset, server))
        return agent, ctx, root, backend
    return make, first, server


def test_cot_answer_after_one_call(setup):
    make, first, server = setup

    def script(request):
        return answer() if request.key["path"] else Completion(tool_calls=[call(first, {"city": "Oslo"})])
    agent, ctx, root, _ = make(script)
    result = run_cot(agent, ctx, root, pass_at=1, max_step=12)
    assert result.terminal is not None and result.terminal.depth == 4
    assert ctx.budget.query_count == 2 and len(server.calls) == 1
    data = cot_file(result, ctx, max_step=12, pass_at=1)
    assert data["win"] and data["answer_generation"]["valid_data"]
    assert json.loads(data["answer_generation"]["final_answer"])["final_answer"] == "done"
    last = data["answer_generation"]["train_messages"][-1]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant"]


def test_cot_depth_limit_prunes_and_second_try_starts_fresh(setup):
    make, first, _ = setup
    tries = []

    def script(request):
        if not request.key["path"]:
            tries.append(1)
        if len(tries) == 2:
            return answer()
        return Completion(tool_calls=[call(first, {"n": len(request.key["path"])})])
    agent, ctx, root, _ = make(script)
    result = run_cot(agent, ctx, root, pass_at=2, max_step=6)
    first_last = result.last_nodes[0]
    assert first_last.pruned and first_last.depth == 6  # 3 calls of 2 nodes each, then the limit
    assert result.terminal is result.last_nodes[1]
    data = cot_file(result, ctx, max_step=6, pass_at=2)
    assert data["try_count"] == 2 and [t["win"] for t in data["trys"]] == [False, True]


def test_cot_text_only_turn_requeries_the_model(setup):
    make, first, _ = setup
    replies = iter([Completion(text="Let me think."), answer()])
    agent, ctx, root, backend = make(lambda request: next(replies))
    result = run_cot(agent, ctx, root)
    assert result.terminal is not None and ctx.budget.query_count == 2
    # the second request carries the thought-only assistant message
    assert backend.requests[1].messages[-1] == {"role": "assistant", "content": "Let me think."}


def test_dfs_give_up_backtracks_two_levels_with_diversity_prompt(setup):
    make, first, _ = setup

    def script(request):
        path, attempt = request.key["path"], request.key["attempt"]
        if not path:
            return Completion(tool_calls=[call(first, {"try": attempt})])
        if path == [[first, json.dumps({"try": 0})]]:
            return give_up()
        return answer("second branch")
    agent, ctx, root, backend = make(script)
    result = run_dfs(agent, ctx, root(), width=2, max_step=12)
    assert len(result.terminal_nodes) == 1 and len(result.give_up_nodes) == 1
    # root -> [call try 0 -> give up], [call try 1 -> answer]
    assert len(result.root.children) == 2
    assert ctx.budget.query_count == 4
    sibling_request = backend.requests[2]
    assert sibling_request.key == {"group": "G1_instruction", "query_id": 900001, "method": "x", "path": [],
                                   "attempt": 1}
    diversity = sibling_request.messages[-1]
    assert diversity["role"] == "user" and "This is not the first time you try this task" in diversity["content"]
    assert '"arguments": "{\\"try\\": 0}"' in diversity["content"]
    # after that call the diversity message is invalid: the next OpenAI request does not carry it
    assert all("This is not the first time" not in (m.get("content") or "") for m in backend.requests[3].messages)
    data = dfs_file(result, ctx, __import__("random").Random(42), max_step=12, width=2, max_query_count=200)
    assert data["win"] and data["answer_generation"]["finish_type"] == "give_answer"
    assert "second branch" in data["answer_generation"]["final_answer"]
    assert data["tree"]["size"] == 1 + 4 + 4 and data["tree"]["tree"]["children"][1]["description"] == first


def test_dfs_prune_backtracks_one_level(setup):
    """A depth-limited leaf sends the search back one level: its parent tries a sibling."""
    make, first, _ = setup

    def script(request):
        path, attempt = request.key["path"], request.key["attempt"]
        if len(path) == 1 and attempt == 1:
            return answer("sibling at depth 2")
        return Completion(tool_calls=[call(first, {"depth": len(path), "attempt": attempt})])
    agent, ctx, root, _ = make(script)
    result = run_dfs(agent, ctx, root(), width=2, max_step=4)
    (terminal,) = result.terminal_nodes
    assert terminal.depth == 4 and "sibling" in terminal.description
    first_branch = result.root.children[0].children[0]
    assert len(first_branch.children) == 2  # the pruned child, then the answering sibling


def test_dfs_all_give_up_falls_back_to_a_give_up_node(setup):
    make, first, _ = setup
    agent, ctx, root, _ = make(lambda request: give_up())
    result = run_dfs(agent, ctx, root(), width=2, max_step=12)
    # a give-up right under the root abandons the root too: the search ends after one call
    assert not result.terminal_nodes and len(result.give_up_nodes) == 1 and ctx.budget.query_count == 1
    data = dfs_file(result, ctx, __import__("random").Random(42), max_step=12, width=2, max_query_count=200)
    generation = data["answer_generation"]
    assert not data["win"] and generation["valid_data"] and generation["finish_type"] == "give_up"
    assert "give_up_and_restart" in generation["final_answer"]


def test_dfs_stops_at_the_model_call_cap(setup):
    make, first, _ = setup
    counter = iter(range(10_000))

    def script(request):  # never answers: explores until the cap
        return Completion(tool_calls=[call(first, {"n": next(counter)})])
    agent, ctx, root, backend = make(script)
    result = run_dfs(agent, ctx, root(), width=2, max_step=40, max_query_count=200)
    assert result.out_of_budget and ctx.budget.query_count == 200 and len(backend.requests) == 200
    nodes = list(result.root.iter_tree())
    assert len([n for n in nodes if n.node_type == "Action"]) == 199  # the 200th reply is discarded
    data = dfs_file(result, ctx, __import__("random").Random(42), max_step=12, width=2, max_query_count=200)
    assert not data["answer_generation"]["valid_data"] and "train_messages" not in data["answer_generation"]


def test_status_1_renames_the_stored_call(setup):
    make, first, _ = setup
    replies = iter([Completion(tool_calls=[call("no_such_api", {})]), answer()])
    agent, ctx, root, _ = make(lambda request: next(replies))
    result = run_cot(agent, ctx, root)
    messages = result.terminal.messages
    assistant, tool = messages[2], messages[3]
    assert assistant["tool_calls"][0]["function"]["name"] == "invalid_hallucination_function_name"
    assert tool["name"] == "invalid_hallucination_function_name"
    assert json.loads(tool["content"]) == {"error": "No such function name: no_such_api", "response": ""}


def test_toolllama_text_turns_through_react_find(setup):
    make, first, server = setup
    replies = iter([
        f'Thought: check the weather\nAction: {first}\nAction Input: {{"city": "Oslo"}}',
        'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "sunny"}',
    ])
    agent, ctx, root, backend = make(lambda request: next(replies), dialect="toolllama", parser="react-find")
    result = run_cot(agent, ctx, root)
    assert result.terminal is not None
    assert server.calls == [(server.calls[0][0], '{"city": "Oslo"}')]
    # the second prompt shows the raw first generation and the pure JSON observation
    prompt = backend.requests[1].prompt
    assert f"Assistant: Thought: check the weather\nAction: {first}\n" in prompt
    assert '\nFunction: {"error": "", "response": "ok ' in prompt and prompt.endswith("Assistant:\n")


class FailingServer(EchoServer):
    """A tool server whose replies are the client's verdict after retries: ``kind`` with ``status``."""

    def __init__(self, kind, status=None):
        super().__init__()
        self.kind, self.status = kind, status

    def call_route(self, route, tool_input):
        self.calls.append((route.api_name, tool_input))
        return ServerReply(answer={"error": "failed", "response": ""}, kind=self.kind, http_status=self.status,
                           latency_s=0.1, attempts=3, waited_s=0.0)


def failing_setup(make, server):
    agent, ctx, _, backend = make(lambda request: None)
    toolset = ctx.toolset
    return agent, ctx, (lambda: Node.root(initial_messages(toolset), ToolEnv(toolset, server))), backend


@pytest.mark.parametrize("method", ["cot", "dfs"])
def test_a_tool_server_failure_stops_the_search_at_once(setup, method):
    make, first, _ = setup
    server = FailingServer(ReplyKind.TIMEOUT)
    agent, ctx, root, backend = failing_setup(make, server)
    backend.script = lambda request: Completion(tool_calls=[call(first, {"city": "Oslo"})])
    if method == "cot":
        result = run_cot(agent, ctx, root, pass_at=3, max_step=12)
        assert len(result.roots) == 1 and result.terminal is None
    else:
        run_dfs(agent, ctx, root(), width=2, max_step=12, max_query_count=50)
    assert ctx.budget.query_count == 1 and len(server.calls) == 1  # no further model or tool calls
    assert (ctx.infra_failure.kind, ctx.infra_failure.detail) == (
        "tool_server", f"tool call {first}: timeout after 3 attempt(s)")
    [record] = ctx.records
    assert (record["infra_failure"], record["reply_kind"], record["attempts"]) == ("tool_server", "timeout", 3)


def test_a_4xx_from_the_tool_server_is_the_models_own_failure(setup):
    make, first, _ = setup
    server = FailingServer(ReplyKind.HTTP_ERROR, 404)
    agent, ctx, root, backend = failing_setup(make, server)
    backend.script = lambda request: answer() if request.key["path"] else Completion(
        tool_calls=[call(first, {"city": "Oslo"})])
    result = run_cot(agent, ctx, root, pass_at=1, max_step=12)
    assert ctx.infra_failure is None and result.terminal is not None
    assert ctx.records[0]["http_status"] == 404 and ctx.records[0]["infra_failure"] is None


def test_a_model_endpoint_failure_stops_every_chain_but_a_plain_model_error_does_not(setup):
    make, _, _ = setup
    agent, ctx, root, _ = make(lambda request: Completion(error="gave up after 3 attempts",
                                                          error_kind="model_endpoint"))
    result = run_cot(agent, ctx, root, pass_at=3, max_step=12)
    assert len(result.roots) == 1 and ctx.budget.query_count == 1
    assert ctx.infra_failure.kind == "model_endpoint" and ctx.records[0]["infra_failure"] == "model_endpoint"
    agent, ctx, root, _ = make(lambda request: Completion(error="the model said something odd"))
    result = run_cot(agent, ctx, root, pass_at=3, max_step=12)
    assert len(result.roots) == 3 and ctx.infra_failure is None  # upstream: a pruned Thought, next chain
