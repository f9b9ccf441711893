"""The road to a leaderboard number is a route that can print "yes" (the follow-up to issue 40): an embedded run of
StableToolBench's 765 queries with the response cache, a document for every tool and the simulator flags, judged by
gpt-4-turbo-2024-04-09 three times at the provider's host, the command docs/comparability.md shows. Every piece is a
loopback fake: the agent (an OpenAI-compatible stand-in that calls one tool per query, then gives up, so the judge
is asked nothing but its preflight), the simulator's and the judge's endpoints, the cache (the agent's calls recorded
with answers no simulator of this project made) and the tool documents. The provider's host is stood in for by
loopback in this process only (comparability.PROVIDER_HOSTS replaced: no flag, setting or variable can do that).

Then each single departure turns the line into "as declared" or "not comparable", naming that departure only: one
tool document missing, one synthetic response in the cache, the simulator's model renamed, the simulator or the judge
at a host that is not the provider's.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.cli import main
from runners.models.scripted import GIVE_UP, scripted_call
from tests.openai_standin import OpenAIStandin, Reply
from tests.test_judge_failures import solved
from toolbench_adapter.evaluation import comparability
from toolbench_adapter.evaluation.comparability import AS_DECLARED, COMPARABLE, NOT_COMPARABLE
from toolbench_adapter.protocol.leaderboard import GPT_CACHE_JUDGE, SIMULATOR_MODEL
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.tool_coverage import tools_of

STB = "data/stabletoolbench"
PROVIDER = {"127.0.0.1": ("http", None)}  # loopback stands in for api.openai.com, in this process only
ENV = ("TBA_STB_ROOT", "TBA_TOOL_ROOT", "TBA_JUDGE_URL", "TBA_JUDGE_MODEL", "OPENAI_API_KEY")


def agent(endpoint: str, body: dict) -> Reply:
    """A tool-calling model: the first listed function with its example values, then Finish giving up (no final
    answer: labelled Unsolved by rule, so the judge is asked nothing but its preflight)."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    call = scripted_call(body.get("tools"), turn)
    if call["function"]["name"] == "Finish":
        call["function"]["arguments"] = GIVE_UP
    return Reply(text=None, tool_calls=[call])


def tool_documents(root: Path) -> Path:
    """A document for each of the 814 tools StableToolBench's 765 queries use."""
    for query in QuerySet(STB).iter():
        for category, tool in tools_of(query):
            (root / category).mkdir(parents=True, exist_ok=True)
            (root / category / f"{tool}.json").write_text(json.dumps({"tool_name": tool, "api_list": []}))
    return root


def recorded_cache(root: Path) -> Path:
    """A stand-in for StableToolBench's cache: every call the agent makes, recorded with an answer no simulator of
    this project made (the keys from a scripted run of the same calls; the answers written anew)."""
    assert main(["run", "--name", "seed", "--out-root", str(root / "seed_runs"), "--backend", "scripted",
                 "--dialect", "openai-tools", "--stb-root", STB, "--cache-dir", str(root / "seed"), "--concurrency",
                 "4", "--quiet"]) == 0
    count = 0
    for path in sorted((root / "seed" / "_simulated").rglob("*.json")):
        out = root / "cache" / path.relative_to(root / "seed" / "_simulated")
        out.parent.mkdir(parents=True, exist_ok=True)
        keys = list(json.loads(path.read_text()))
        out.write_text(json.dumps({key: {"error": "", "response": f"recorded answer {count + i}"}
                                   for i, key in enumerate(keys)}))
        count += len(keys)
    assert count > 500
    return root / "cache"


@dataclass
class World:
    root: Path
    tools: Path
    cache: Path
    agent: OpenAIStandin
    simulator: OpenAIStandin
    judge: OpenAIStandin

    def eval_args(self, name: str, *, tools: Path | None = None, cache: Path | None = None,
                  simulator: OpenAIStandin | None = None, llm_model: str = SIMULATOR_MODEL) -> list[str]:
        """docs/comparability.md's command, with the fakes' URLs for OpenAI's."""
        return ["eval", "--name", name, "--out-root", str(self.root / "runs"),
                "--backend", "openai-chat", "--base-url", self.agent.url, "--model", "standin-model",
                "--dialect", "openai-tools", "--method", "CoT@1", "--stb-root", STB,
                "--tool-root", str(tools or self.tools), "--cache-dir", str(cache or self.cache),
                "--simulator", "llm", "--llm-base-url", (simulator or self.simulator).url, "--llm-model", llm_model,
                "--concurrency", "8", "--quiet",
                "--judge-url", self.judge.url, "--judge-model", GPT_CACHE_JUDGE, "--evaluate-times", "3",
                "--judge-cache", str(self.root / "judge.jsonl")]


def tba(*argv: str) -> str:
    """tba's stdout (exit 0 asserted)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    assert code == 0, out.getvalue()[-3000:]
    return out.getvalue()


def verdict_lines(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if "with the StableToolBench leaderboard" in line]
    assert lines, text[-3000:]
    return lines


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("route")
    with pytest.MonkeyPatch.context() as patch:
        for name in ENV:
            patch.delenv(name, raising=False)
        patch.setattr(comparability, "PROVIDER_HOSTS", PROVIDER)
        with OpenAIStandin(respond=agent) as model, OpenAIStandin(models=(SIMULATOR_MODEL,)) as simulator, \
                OpenAIStandin(models=(GPT_CACHE_JUDGE,), respond=solved) as judge:
            yield World(root, tool_documents(root / "tools"), recorded_cache(root), model, simulator, judge)


@pytest.fixture(autouse=True)
def provider_is_loopback(monkeypatch):
    monkeypatch.setattr(comparability, "PROVIDER_HOSTS", PROVIDER)


@pytest.fixture(scope="module")
def leaderboard_run(world) -> tuple[Path, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(comparability, "PROVIDER_HOSTS", PROVIDER)
        out = tba(*world.eval_args("route"))
    return world.root / "runs" / "route", out


def table(run_dir: Path, tmp_path: Path) -> str:
    return tba("table", str(run_dir), "--out", str(tmp_path / "tables"), "--no-png")


def test_the_route_prints_comparable_yes(world, leaderboard_run, tmp_path):
    run_dir, out = leaderboard_run
    for text in (out, table(run_dir, tmp_path)):
        assert set(verdict_lines(text)) == {COMPARABLE} == {"comparable with the StableToolBench leaderboard: yes"}
    facts = json.loads((run_dir / "manifest.json").read_text())["setup_facts"]
    responses = facts["tool_responses"]
    assert responses["requests"] == responses["hits"] == 765 and responses["made_by"] == {}  # all from the cache
    assert responses["simulator_endpoints"] == [{"simulator": "llm", "model": SIMULATOR_MODEL, "host": "127.0.0.1",
                                                 "listed": True, "prompt": comparability.PROMPT_OWN}]
    assert facts["tool_documents"]["covered"] == facts["tool_documents"]["tools"] == 814
    assert world.simulator.count() == 0 and world.simulator.model_lists >= 1  # listed, never asked: no miss
    assert world.judge.count() == 0 and world.judge.probes  # the preflight only: every answer gave up


def test_one_missing_tool_document_is_not_comparable(world, leaderboard_run, tmp_path):
    tools = tmp_path / "tools"
    shutil.copytree(world.tools, tools)
    missing = sorted(tools.glob("*/*.json"))[0]
    missing.unlink()
    name = f"{missing.parent.name}/{missing.stem}"
    [line] = set(verdict_lines(tba(*world.eval_args("one-tool-missing", tools=tools))))
    assert line == f"{NOT_COMPARABLE}: tool documents: 813 of 814 tools (missing: {name})"


def test_one_synthetic_response_is_not_comparable(world, leaderboard_run, tmp_path):
    """One cache entry replaced by the answer the schema simulator gives for that request: recognised by content."""
    from toolbench_adapter.server.catalog import ApiCatalog
    from toolbench_adapter.server.names import ApiKey
    from toolbench_adapter.server.provenance import parse_key
    from toolbench_adapter.server.simulators import SimulationRequest
    from toolbench_adapter.server.simulators.schema import SchemaSimulator

    cache = tmp_path / "cache"
    shutil.copytree(world.cache, cache)
    path = sorted(cache.glob("*/*/*.json"))[0]
    entries = json.loads(path.read_text())
    cache_key = next(iter(entries))
    category, tool_folder, api = path.relative_to(cache).with_suffix("").parts
    key = ApiKey(category, tool_folder, api)
    catalog = ApiCatalog()
    catalog.add_query_files(STB)
    request = SimulationRequest(key, parse_key(cache_key)[1], cache_key, catalog.get(key))
    entries[cache_key] = SchemaSimulator().simulate(request).answer
    path.write_text(json.dumps(entries))
    [line] = set(verdict_lines(tba(*world.eval_args("one-synthetic", cache=cache))))
    steps = (world.root / "runs" / "one-synthetic" / "steps.jsonl").read_text().splitlines()
    served = sum(json.loads(step).get("source") == "cache_simulated" for step in steps)  # as the client saw them
    assert served >= 1
    assert line == f"{NOT_COMPARABLE}: tool responses: {served} of 765 made by the schema simulator"


def test_a_renamed_simulator_model_is_not_comparable(world, leaderboard_run):
    """A local model served under another name: the id is compared whole, the host does not help it."""
    renamed = f"my-local/{SIMULATOR_MODEL}"
    with OpenAIStandin(models=(renamed,)) as simulator:
        [line] = set(verdict_lines(tba(*world.eval_args("renamed", simulator=simulator, llm_model=renamed))))
        assert simulator.count() == 0  # no miss: what would answer one decides
    assert line == (f"{NOT_COMPARABLE}: tool responses: cache misses answered by {renamed} (the llm simulator), not "
                    f"the leaderboard's {SIMULATOR_MODEL}")


def copy_run(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs" / run_dir.name
    shutil.copytree(run_dir, copy)
    return copy


def test_the_simulator_at_another_host_is_comparable_as_declared(world, leaderboard_run, tmp_path):
    """The leaderboard's model name at a host that is not the provider's: the same run resumed asking its simulator
    at localhost (every query already done: the session records the endpoint it checked)."""
    copy = copy_run(leaderboard_run[0], tmp_path)
    args = world.eval_args(copy.name)
    run_args = ["run", *args[1:args.index("--judge-url")]]
    run_args[run_args.index("--out-root") + 1] = str(copy.parent)
    run_args[run_args.index("--llm-base-url") + 1] = world.simulator.url.replace("127.0.0.1", "localhost")
    tba(*run_args)
    [line] = set(verdict_lines(table(copy, tmp_path)))
    assert line == (f"{AS_DECLARED}: tool responses: 765 of 765 from the cache; cache misses answered by "
                    f"{SIMULATOR_MODEL} at localhost, not the provider's API host (127.0.0.1): which weights answer "
                    "cannot be checked here")


def test_a_judge_at_another_host_is_comparable_as_declared(world, leaderboard_run, tmp_path):
    copy = copy_run(leaderboard_run[0], tmp_path)
    out = tba("evaluate", str(copy), "--judge-url", world.judge.url.replace("127.0.0.1", "localhost"),
              "--judge-model", GPT_CACHE_JUDGE, "--evaluate-times", "3", "--cache", str(tmp_path / "j.jsonl"),
              "--quiet")
    [line] = set(verdict_lines(out))
    assert line == (f"{AS_DECLARED}: judge: {GPT_CACHE_JUDGE} listed by localhost, 3 evaluations: localhost is not "
                    "the provider's API host (127.0.0.1), so which weights answer to the name cannot be checked here")
