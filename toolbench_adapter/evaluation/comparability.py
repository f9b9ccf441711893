"""How far an evaluation's setup stands from the StableToolBench leaderboard's, decided from evidence in one rule.

A run records what it measured (``setup_facts`` in its manifest: runners/execution/setup_facts.py); an evaluation
adds its judge (evaluation.json's ``judge``: the model id, the endpoints, whether their GET /models listed it).
``verdict`` turns them into one condition each, with what was measured, the figure and a state:

- verified: measured here, and the leaderboard's;
- declared: named like the leaderboard's, but what stands behind the name cannot be checked here;
- failed: measured here and not the leaderboard's, or not recorded.

One rule gives the verdict (``decide``; tests/test_evidence_rules.py holds the code to this table: "–" is either):

| a condition failed | a condition only declared | verdict | the line |
|---|---|---|---|
| yes | – | not comparable | not comparable with the StableToolBench leaderboard: each failed condition and its figure |
| no | yes | as declared | comparable with the StableToolBench leaderboard as declared: each declared piece and why it cannot be checked here |
| no | no | yes | comparable with the StableToolBench leaderboard: yes |

The conditions (the leaderboard's setup: StableToolBench README at aa4ed9f, its GPT-based caching and MirrorAPI
tables):

| condition | measured | verified | declared | failed |
|---|---|---|---|---|
| agent | the backend and the model it asked | a model backend (hf, openai-*) | a replay: replayed recordings of MODEL; an outside agent (tba run --agent) | the scripted backend; not recorded |
| queries | each query record's digest against StableToolBench's 765 (toolbench_adapter/data/stb_queries/) | all 765 | never | a subset, other queries |
| tool documents | a readable document for each tool the queries list, n of N | N of N | never | fewer |
| tool responses | who made each response (server/provenance.py: the schema simulator's answers by content, the other simulators' marks, the _simulated mirror), summed over sessions and shards; the simulator that answers misses, misses or not | the run's own server: no response made by schema / none / an unmarked simulator, misses answered by a GPT-based simulator (llm) or MirrorAPI | an external tool server (its /stats and /health are its own account) | a synthetic response; the schema or no simulator; counts not reported |
| judge | the model id whole (no prefix stripped), the endpoint's model list, its host, the repeats, the evaluator, the self-judge rule | gpt-4-turbo-2024-04-09 (gpt-4o with MirrorAPI) listed by its provider's own API host, 3 evaluations, the default evaluator | the same id listed by another host (a name cannot prove which weights answer) | another id; not listed; other repeats or evaluator; self-judged |
| method | method, --constrain, --on-invalid | CoT@1 / DFS_woFilter_w2 without them | never | another method or option |

The ``llm`` simulator counts as GPT-based: it asks the chat model it is given, with this project's prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from toolbench_adapter.queryset.tool_coverage import coverage_figure, merge_coverage

from .stb_queries import STB_QUERIES, merge_queries, stb_digests

LEADERBOARD = "the StableToolBench leaderboard"
COMPARABLE = f"comparable with {LEADERBOARD}: yes"
AS_DECLARED = f"comparable with {LEADERBOARD} as declared"
NOT_COMPARABLE = f"not comparable with {LEADERBOARD}"
VERIFIED, DECLARED, FAILED = "verified", "declared", "failed"  # a condition's state
YES, AS_DECLARED_VERDICT, NO = "yes", "as declared", "not comparable"  # the verdicts
# the leaderboard's judges are OpenAI's models: only OpenAI's own API host shows which weights answer to the name
PROVIDER_HOSTS = frozenset({"api.openai.com"})
PROJECT = Path(__file__).resolve().parents[2]  # the checkout: query folders inside it are named relative to it
METHODS = ("CoT@1", "DFS_woFilter_w2")
# what answered the cache misses -> the judge of the leaderboard table made with it
JUDGE_BY_SIMULATOR = {"llm": "gpt-4-turbo-2024-04-09", "mirrorapi": "gpt-4o"}
JUDGE_REPEATS = 3
SIMULATOR_WORDS = {"schema": "the schema simulator (synthetic)",
                   "none": "no simulator (an error answer)",
                   "llm": "the GPT-based simulator", "mirrorapi": "MirrorAPI"}
LEADERBOARD_SIMULATORS = ("llm", "mirrorapi")
# whose prompt a simulator that asks a model sends (recorded with its endpoint: server/simulators/endpoint.py)
PROMPT_OWN = "this project's"  # llm: server/simulators/llm.py's; upstream's exact text is not shipped
PROMPT_FILE = "a file given as upstream's SFT_SYSTEM"  # mirrorapi --mirror-system-prompt FILE: its text unchecked
PROMPT_STAND_IN = "a stand-in"  # mirrorapi without --mirror-system-prompt: not what MirrorAPI was trained with
ENDPOINTS = "simulator_endpoints"  # tool_responses' record of each endpoint that answered (or would answer) misses


def add_endpoints(before: Iterable, found: Iterable) -> list[dict]:
    """The distinct simulator endpoints of every session (or shard), in the order first seen: a rerun that asks
    the same model at another host adds one; the verdict judges each."""
    endpoints = [dict(e) for e in before or [] if isinstance(e, dict)]
    for endpoint in found or []:
        if isinstance(endpoint, dict) and endpoint not in endpoints:
            endpoints.append(dict(endpoint))
    return endpoints


def maker_id(simulator: str, model: str | None = None, host: str | None = None) -> str:
    """Who made a response as the server records it (a cache entry's mark, /stats' made_by): the simulator's name,
    and for one that asks a model the model id whole and its endpoint's host, e.g. ``llm[gpt-4-turbo@api.openai.com]``
    (a mark of the name alone: written before the model was recorded, or by a simulator that asks none)."""
    return f"{simulator}[{model}@{host or '?'}]" if model else simulator


_MAKER = re.compile(r"(?P<name>[^\[\]]+)\[(?P<model>.+)@(?P<host>[^@\]]*)\]")


def parse_maker(maker: str) -> tuple[str, str | None, str | None]:
    """(simulator, model, host) of a maker_id; the model and host None for a name alone."""
    found = _MAKER.fullmatch(str(maker))
    if found is None:
        return str(maker), None, None
    return found["name"], found["model"], None if found["host"] in ("", "?") else found["host"]


def merge_setups(setups: list) -> dict | None:
    """The setup facts of a run merged from shards (tba merge): their queries united, their tool-server counts and
    who made the answers added (unknown when one shard's are), the tool documents' coverage over every shard's
    tools, the agent of the first shard (tba merge refuses shards of different runs)."""
    setups = [s for s in setups if isinstance(s, dict)]
    if not setups:
        return None
    merged = dict(setups[0])
    queries = setups[0].get("queries")
    for other in setups[1:]:
        if isinstance(other.get("queries"), dict):
            queries = merge_queries(queries, other["queries"])
    merged["queries"] = queries
    merged["tool_documents"] = merge_coverage([s.get("tool_documents") for s in setups])
    responses = [s.get("tool_responses") or {} for s in setups]
    counts = {key: None if any(not isinstance(r.get(key), int) for r in responses) else sum(r[key] for r in responses)
              for key in RESPONSE_COUNTS}
    made = [r.get(MADE_BY) for r in responses]
    counts[MADE_BY] = None if any(not isinstance(m, dict) for m in made) else {
        name: sum(int(m.get(name) or 0) for m in made) for name in sorted({n for m in made for n in m})}
    counts[ENDPOINTS] = add_endpoints([], [e for r in responses for e in r.get(ENDPOINTS) or []])
    merged["tool_responses"] = {**responses[0], **counts}
    return merged


def _short(root: str) -> str:
    """A query folder as the reason names it: relative to the project when inside it (data/sample)."""
    try:
        return str(Path(root).resolve().relative_to(PROJECT))
    except (ValueError, OSError):
        return root


# ---------------------------------------------------------------- the conditions


@dataclass(frozen=True)
class Condition:
    """One piece of the setup: what was measured, the figure (for a failed or declared one, why) and its state."""

    name: str  # agent, queries, tool documents, tool responses, judge, method
    state: str  # VERIFIED, DECLARED or FAILED
    measured: str
    figure: str

    @property
    def text(self) -> str:
        return f"{self.name}: {self.figure}"

    def as_dict(self) -> dict:
        return {"condition": self.name, "state": self.state, "measured": self.measured, "figure": self.figure}


def _agent(facts) -> Condition:
    measured = "the backend the run used and the model it asked"
    if not isinstance(facts, dict) or not facts.get("backend"):
        return Condition("agent", FAILED, measured, "not recorded (a run written before this was recorded)")
    backend, model = str(facts["backend"]), str(facts.get("model") or "?")
    if backend == "scripted":
        return Condition("agent", FAILED, measured, "the scripted backend, not a model")
    if backend == "agent":  # an outside agent over MCP (tba run --agent): the model it asks is its own business
        return Condition("agent", DECLARED, measured, f"an outside agent ({model}): which model it asks cannot be "
                         "checked here")
    if backend == "replay":
        replays = ", ".join(Path(str(f)).name or str(f) for f in facts.get("replays") or []) or model
        return Condition("agent", DECLARED, measured, f"replayed recordings of {replays} (no model ran here: "
                         "comparable only as the model that made them)")
    return Condition("agent", VERIFIED, measured, f"{model} ({backend})")


def _queries(facts) -> Condition:
    measured = "each query record's digest against StableToolBench's 765"
    if not isinstance(facts, dict):
        return Condition("queries", FAILED, measured, "not recorded (a run written before this was recorded)")
    stb, other = facts.get("stb") or {}, facts.get("other") or {}
    n_stb, n_other = sum(map(len, stb.values())), sum(map(len, other.values()))
    root = _short(str(facts.get("root") or "?"))
    if n_other and not n_stb:
        return Condition("queries", FAILED, measured, f"{root} (not StableToolBench's)")
    if n_other:
        return Condition("queries", FAILED, measured,
                         f"{n_other} of {n_stb + n_other} are not StableToolBench's ({root})")
    if n_stb < STB_QUERIES:
        totals = stb_digests()
        groups = ", ".join(f"{g} {len(ids)} of {len(totals.get(g, {}))}" for g, ids in stb.items())
        return Condition("queries", FAILED, measured, f"{n_stb} of StableToolBench's {STB_QUERIES} ({groups})")
    return Condition("queries", VERIFIED, measured, f"StableToolBench's {STB_QUERIES}")


def _tool_documents(facts) -> Condition:
    measured = "a readable tool document for each tool the run's queries list"
    if not isinstance(facts, dict) or not isinstance(facts.get("tools"), int):
        return Condition("tool documents", FAILED, measured, "coverage not recorded (a run written before it was)")
    note = ("no --tool-root given" if not facts.get("tool_root") else
            "" if facts.get("found") else f"no folder {facts['tool_root']}")
    figure = coverage_figure(facts, note)
    complete = facts["tools"] > 0 and facts.get("covered") == facts["tools"]
    return Condition("tool documents", VERIFIED if complete else FAILED, measured, figure)


def _made_by(facts: dict) -> dict[str, int] | None:
    """simulator -> responses it made; from a run recorded before ``made_by``: its misses and simulated hits."""
    made = facts.get(MADE_BY)
    if isinstance(made, dict):
        return {str(k): int(v) for k, v in made.items() if isinstance(v, int) and v}
    if MADE_BY in facts:  # recorded as unknown: a session (or shard) whose server did not say
        return None
    misses, replayed = facts.get("misses"), facts.get("simulated_hits")
    if not isinstance(misses, int):
        return None
    simulated = misses + (replayed if isinstance(replayed, int) else 0)
    return {str(facts.get("simulator") or "an unknown simulator"): simulated} if simulated else {}


def _maker(name: str) -> str:
    return {"schema": "the schema simulator", "none": "no simulator (an error answer)"}.get(name, name)


def _tool_responses(facts) -> Condition:
    measured = ("who made each tool response (the cache, or a simulator: its mark, the schema simulator's answer "
                "by content), over every session, and what answers cache misses")
    if not isinstance(facts, dict):
        return Condition("tool responses", FAILED, measured, "not recorded")
    requests, hits, simulator = facts.get("requests"), facts.get("hits"), facts.get("simulator")
    server = str(facts.get("server") or "?")
    made = _made_by(facts)
    if not isinstance(requests, int) or not isinstance(hits, int) or made is None:
        return Condition("tool responses", FAILED, measured, f"not reported by the tool server ({server}): who "
                         "answered each call is unknown")
    problems = [f"{n} of {requests} made by {_maker(name)}" for name, n in sorted(made.items(), key=lambda x: -x[1])
                if parse_maker(name)[0] not in LEADERBOARD_SIMULATORS]
    if simulator is None:
        problems.append(f"what answers cache misses is unknown (server {server})")
    elif simulator not in LEADERBOARD_SIMULATORS:
        problems.append(f"cache misses answered by {SIMULATOR_WORDS.get(simulator, simulator)}")
    if problems:
        return Condition("tool responses", FAILED, measured, "; ".join(problems))
    real = requests - sum(made.values())
    figure = (f"{real} of {requests} from the cache" + "".join(f", {n} made by {SIMULATOR_WORDS.get(k, k)}"
                                                              for k, n in made.items())
              if requests else "no tool call reached the server")
    figure += f"; misses answered by {SIMULATOR_WORDS.get(simulator, simulator)}"
    if server != "embedded":
        return Condition("tool responses", DECLARED, measured, f"{figure}, as counted by the tool server {server} "
                         "(its own /stats and /health: this run cannot check what answered there)")
    return Condition("tool responses", VERIFIED, measured, figure)


def _hosts(endpoints) -> list[str]:
    return [urlsplit(str(url)).hostname or str(url) for url in endpoints or []]


def _judge(judge, simulator: str | None) -> Condition:
    measured = ("the judge's model id whole, whether its endpoint's GET /models lists it and on which host, the "
                "repeats, the evaluator, the self-judge rule")
    if not isinstance(judge, dict):
        return Condition("judge", FAILED, measured, "not evaluated")
    model = str(judge.get("model") or "judge model not recorded")
    expected = JUDGE_BY_SIMULATOR.get(simulator or "", JUDGE_BY_SIMULATOR["llm"])
    if judge.get("self_judged"):
        return Condition("judge", FAILED, measured, f"{model} self-judged, not {expected}")
    problems = []
    if model != expected:  # whole: an org or folder prefix, another case, is another id
        problems.append(f"{model}, not {expected}")
    times = judge.get("evaluate_times")
    if times is None:
        problems.append(f"evaluations not recorded, {JUDGE_REPEATS} needed")
    elif times != JUDGE_REPEATS:
        problems.append(f"{times} evaluation{'' if times == 1 else 's'}, not {JUDGE_REPEATS}")
    if judge.get("evaluator") not in (None, "default"):
        problems.append(f"evaluator {judge.get('evaluator')}, not the default")
    hosts = _hosts(judge.get("endpoints"))
    if not problems and not hosts:
        problems.append(f"{model} is a model of this process, not one an endpoint serves")
    elif not problems and judge.get("listed") is not True:
        problems.append(f"{model} is not in the model list of {', '.join(hosts)} (GET /models "
                        f"{'not read' if judge.get('listed') is None else 'lists other ids'})")
    if problems:
        return Condition("judge", FAILED, measured, ", ".join(problems))
    where = ", ".join(dict.fromkeys(hosts))
    figure = f"{model} listed by {where}, {times} evaluations"
    if any(host not in PROVIDER_HOSTS for host in hosts):
        return Condition("judge", DECLARED, measured, f"{figure}: {where} is not the provider's API host "
                         f"({', '.join(sorted(PROVIDER_HOSTS))}), so which weights answer to the name cannot be "
                         "checked here")
    return Condition("judge", VERIFIED, measured, figure)


def _method(facts) -> Condition:
    measured = "the search method and the structured-output options"
    if not isinstance(facts, dict):
        return Condition("method", FAILED, measured, "not recorded")
    method, agent = facts.get("method"), facts.get("agent")
    if agent:  # an outside agent over MCP (tba run --agent): its own loop, none of the leaderboard's methods
        problems = [f"outside agent {agent} over MCP (the leaderboard's: {', '.join(METHODS)})"]
    else:
        problems = [] if method in METHODS else [f"{method} (the leaderboard's: {', '.join(METHODS)})"]
    structured = [f"{k.replace('_', '-')} {facts.get(k)}" for k, up in (("constrain", "off"), ("on_invalid", "observe"))
                  if facts.get(k) not in (None, up)]
    if structured:
        problems.append(", ".join(structured) + " (not upstream's)")
    if problems:
        return Condition("method", FAILED, measured, "; ".join(problems))
    return Condition("method", VERIFIED, measured, str(method))


# ---------------------------------------------------------------- the one rule


def decide(states: Iterable[str]) -> str:
    """The verdict from the conditions' states: any failed -> not comparable; else any declared -> as declared;
    else yes (the module docstring's table)."""
    states = list(states)
    if not states or FAILED in states:
        return NO
    return AS_DECLARED_VERDICT if DECLARED in states else YES


@dataclass(frozen=True)
class Verdict:
    conditions: tuple[Condition, ...]

    @property
    def kind(self) -> str:
        return decide(c.state for c in self.conditions)

    @property
    def comparable(self) -> bool:
        return self.kind == YES

    @property
    def reasons(self) -> list[str]:
        """Each failed condition and its figure."""
        return [c.text for c in self.conditions if c.state == FAILED]

    @property
    def declared(self) -> list[str]:
        """Each condition only declared, and why it cannot be checked here."""
        return [c.text for c in self.conditions if c.state == DECLARED]

    @property
    def line(self) -> str:
        kind = self.kind
        if kind == YES:
            return COMPARABLE
        if kind == AS_DECLARED_VERDICT:
            return f"{AS_DECLARED}: " + "; ".join(self.declared)
        return f"{NOT_COMPARABLE}: " + "; ".join(self.reasons)

    @property
    def word(self) -> str:
        """The verdict in one or two words for a table column: yes, as declared, no."""
        return {YES: "yes", AS_DECLARED_VERDICT: "as declared", NO: "no"}[self.kind]

    def as_dict(self) -> dict:
        return {"verdict": self.kind, "comparable": self.comparable, "line": self.line, "reasons": self.reasons,
                "declared": self.declared, "conditions": [c.as_dict() for c in self.conditions]}


def verdict(setup: dict | None, judge: dict | None) -> Verdict:
    """The verdict of a run's recorded ``setup`` (its manifest's setup_facts) and the ``judge`` of an evaluation
    (its evaluation.json's judge: model, endpoints, listed, evaluate_times, self_judged, evaluator)."""
    setup = setup if isinstance(setup, dict) else {}
    responses = setup.get("tool_responses")
    simulator = responses.get("simulator") if isinstance(responses, dict) else None
    conditions = (_agent(setup.get("agent")), _queries(setup.get("queries")),
                  _tool_documents(setup.get("tool_documents")), _tool_responses(responses), _judge(judge, simulator),
                  _method(setup.get("method")))
    return Verdict(conditions)


CONDITIONS = ("agent", "queries", "tool documents", "tool responses", "judge", "method")  # in the line's order


def line_of(setup: dict | None, judge: dict | None) -> str:
    return verdict(setup, judge).line


def run_line(manifest: dict | None, judge: dict | None) -> str:
    """The line of one evaluation: its run's manifest (setup_facts) and its judge (evaluation.json's)."""
    return line_of((manifest or {}).get(SETUP_FIELD), judge)


def kind_of_line(text: str | None) -> str | None:
    """A printed line's verdict (YES, AS_DECLARED_VERDICT, NO), None for no line: for readers of stored lines."""
    if not text:
        return None
    if text == COMPARABLE:
        return YES
    return AS_DECLARED_VERDICT if text.startswith(AS_DECLARED + ":") else NO


def run_notice(setup: dict | None) -> str | None:
    """The line a run prints before its first query when its setup is not the leaderboard's (issue 41): what
    fails, or what stays declared, the judge left to `tba evaluate`; None when nothing does."""
    conditions = [c for c in verdict(setup, None).conditions if c.name != "judge"]
    kind = decide(c.state for c in conditions)
    if kind == YES:
        return None
    texts = [c.text for c in conditions if c.state == (FAILED if kind == NO else DECLARED)]
    head = NOT_COMPARABLE if kind == NO else AS_DECLARED
    return (f"{head} (before the judge): " + "; ".join(texts) + ". The run goes on; `tba doctor` says how to get "
            "each piece")


# the tool server's counts a run records (setup_facts.py): simulated_hits are hits on answers a simulator of this
# project made (server/provenance.py), so they count with the simulators, not with the cache; made_by names them
RESPONSE_COUNTS = ("requests", "hits", "simulated_hits", "misses")
MADE_BY = "made_by"
SETUP_FIELD = "setup_facts"  # the manifest's key (runners/execution/setup_facts.py writes it)
NOT_RECORDED = f"{NOT_COMPARABLE}: setup not recorded (score or label files, not an evaluation of a tba run)"
