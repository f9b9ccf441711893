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
| agent | the backend and the model it asked | a model backend (hf, openai-*) | a replay: replayed recordings of MODEL; an outside agent (tba run --agent); a backend another package registers | the scripted backend; not recorded |
| queries | each query record's digest against StableToolBench's 765 (toolbench_adapter/data/stb_queries/) | all 765 | never | a subset, other queries |
| tool documents | a readable document for each tool the queries list, n of N | N of N | never | fewer |
| tool responses | who made each response (server/provenance.py: the schema simulator's answers by content, the model simulators' marks naming the model and its host, the _simulated mirror), summed over sessions and shards; what answers misses, misses or not: the simulator, its model id whole, the endpoint's host, whether its GET /models listed the model, whose prompt it sends | the run's own server: every response from the cache, misses answered by gpt-4-turbo listed by its provider's own API host | responses made by gpt-4-turbo with this project's simulation prompt (upstream's is not shipped); gpt-4-turbo at another host; MirrorAPI (a name cannot prove its weights); an external tool server (its /stats and /health are its own account) | a synthetic response; the schema or no simulator; another model, or one not recorded or not listed; MirrorAPI with a stand-in prompt; counts not reported |
| judge | the model id whole (no prefix stripped), the endpoint's model list, its host, the repeats, the evaluator, the self-judge rule | gpt-4-turbo-2024-04-09 (gpt-4o with MirrorAPI) listed by its provider's own API host, 3 evaluations, the default evaluator | the same id listed by another host (a name cannot prove which weights answer) | another id; not listed; other repeats or evaluator; self-judged |
| method | method, --constrain, --on-invalid | CoT@1 / DFS_woFilter_w2 without them | never | another method or option |

The simulator is judged as the judge is (``miss_answerer`` and ``judge_maker``): not by its name ``llm``, but by
the model id it asked, whole (the leaderboard's simulator is gpt-4-turbo: StableToolBench's server/config.yml), the
host that served it and whether that host's GET /models listed it (server/simulators/endpoint.py checks it before a
run and the run records it); MirrorAPI (a local vLLM of stabletoolbench/MirrorAPI) is a name that cannot prove its
weights. This project's ``llm`` simulator sends its own prompt: upstream's exact simulation prompt is not available
here, so an answer it made is not upstream's even with the right model, and a run with such answers is at best
"as declared"; a run every response of which came from the cache, its misses left to the leaderboard's model at the
provider's host, is verified. Only OpenAI's own API host (PROVIDER_HOSTS) shows which weights answer to a name;
tests stand a loopback fake in for it by replacing PROVIDER_HOSTS in their own process, never by a user's setting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from toolbench_adapter.protocol.leaderboard import SIMULATOR_MODEL
from toolbench_adapter.queryset.tool_coverage import coverage_figure, merge_coverage

from .stb_queries import STB_QUERIES, merge_queries, stb_digests

LEADERBOARD = "the StableToolBench leaderboard"
COMPARABLE = f"comparable with {LEADERBOARD}: yes"
AS_DECLARED = f"comparable with {LEADERBOARD} as declared"
NOT_COMPARABLE = f"not comparable with {LEADERBOARD}"
VERIFIED, DECLARED, FAILED = "verified", "declared", "failed"  # a condition's state
YES, AS_DECLARED_VERDICT, NO = "yes", "as declared", "not comparable"  # the verdicts
# the leaderboard's judges are OpenAI's models: only OpenAI's own API host shows which weights answer to the name
# a provider's own API host -> how its API is reached (scheme, port; None: any port): the same name reached
# otherwise (http, another port) is a tunnel or proxy, not the provider
PROVIDER_HOSTS: dict[str, tuple[str, int | None]] = {"api.openai.com": ("https", 443)}
DEFAULT_PORTS = {"https": 443, "http": 80}
PROJECT = Path(__file__).resolve().parents[2]  # the checkout: query folders inside it are named relative to it
METHODS = ("CoT@1", "DFS_woFilter_w2")
MODEL_BACKENDS = ("hf", "openai-chat", "openai-completions")  # the shipped backends that ask a model
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
    if backend not in MODEL_BACKENDS:  # registered by another package: this project cannot tell what it asks
        return Condition("agent", DECLARED, measured, f"{model} through the {backend} backend, which this project "
                         f"does not ship (whether and which model it asks cannot be checked here)")
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
    late = facts.get("missing_earlier")
    if isinstance(late, int) and late > 0 and not note:
        note = (f"{late} of them documented only after an earlier session of the run had answered without them: "
                "run the queries again under a new name")
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


def endpoint_host(url: str) -> str:
    """The host a verdict names for an endpoint URL: its host name, except a provider's host name reached otherwise
    than the provider serves its API (PROVIDER_HOSTS: https on port 443), which is named whole
    (http://api.openai.com:8080): a tunnel or proxy under the provider's name, which no provider host equals."""
    parts = urlsplit(str(url))
    host = parts.hostname
    if not host:
        return str(url)
    if host in PROVIDER_HOSTS:
        scheme, port = PROVIDER_HOSTS[host]
        try:
            reached = parts.port or DEFAULT_PORTS.get(parts.scheme)
        except ValueError:  # a port that is not a number
            reached = -1
        if parts.scheme != scheme or port not in (None, reached):
            return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    return host


def provider_host(host_or_url: str | None) -> bool:
    """Whether a host (or a URL's host, endpoint_host) is a provider's own API host, PROVIDER_HOSTS, read at each
    call: tests stand a loopback fake in for the provider by replacing PROVIDER_HOSTS in their own process
    (monkeypatch); no flag, setting, file or environment variable changes it."""
    text = str(host_or_url or "")
    host = endpoint_host(text) if "://" in text else text
    return bool(host) and host in PROVIDER_HOSTS


def _providers() -> str:
    return ", ".join(sorted(PROVIDER_HOSTS))


def judge_maker(maker: str) -> tuple[str, str]:
    """Who made a simulated response (a maker_id: its mark, /stats' made_by), judged as the judge is: (state, the
    words after "N of M made by"). Every simulated response is at best declared: this project's llm simulator
    sends its own prompt (upstream's exact simulation prompt is not shipped), a MirrorAPI name cannot prove its
    weights; another model, one not recorded, or a synthetic answer fails."""
    name, model, host = parse_maker(maker)
    if name not in LEADERBOARD_SIMULATORS:
        return FAILED, _maker(name)
    if model is None:
        return FAILED, f"the {name} simulator, its model not recorded (marked before models were)"
    if name == "llm" and model != SIMULATOR_MODEL:
        return FAILED, f"{model} (the llm simulator), not the leaderboard's {SIMULATOR_MODEL}"
    where = host or "a host not recorded"
    if name == "mirrorapi":
        return DECLARED, f"MirrorAPI served as {model} at {where} (a name cannot prove which weights answer)"
    prompt = "with this project's simulation prompt (upstream's prompt is not shipped)"
    if not provider_host(host):
        return DECLARED, (f"{model} at {where} {prompt}; {where} is not the provider's API host ({_providers()}), so "
                          "which weights answered cannot be checked here")
    return DECLARED, f"{model} {prompt}"


def miss_answerer(simulator: str | None, endpoints, server: str = "?") -> tuple[str, str]:
    """What answers cache misses, judged as the judge is, misses or not: (state, words). Verified only for the
    leaderboard's simulator model (SIMULATOR_MODEL, whole) listed by its provider's own API host; declared for the
    same name at another host or for MirrorAPI (a name cannot prove its weights); failed for the schema or no
    simulator, another model, a model not recorded or not listed, MirrorAPI with a stand-in prompt. ``endpoints``:
    every session's (tool_responses' simulator_endpoints); the worst decides."""
    if simulator is None:
        return FAILED, f"what answers cache misses is unknown (server {server})"
    if simulator not in LEADERBOARD_SIMULATORS:
        return FAILED, f"cache misses answered by {SIMULATOR_WORDS.get(simulator, simulator)}"
    endpoints = [e for e in endpoints or [] if isinstance(e, dict)]
    if not endpoints:
        return FAILED, f"cache misses answered by the {simulator} simulator, its model not recorded"
    found: dict[str, list[str]] = {FAILED: [], DECLARED: [], VERIFIED: []}
    for endpoint in endpoints:
        model, host = str(endpoint.get("model") or "?"), str(endpoint.get("host") or "?")
        if simulator == "llm" and model != SIMULATOR_MODEL:
            found[FAILED].append(f"cache misses answered by {model} (the llm simulator), not the leaderboard's "
                                 f"{SIMULATOR_MODEL}")
        elif endpoint.get("listed") is not True:
            found[FAILED].append(f"the simulator's model {model} is not in the model list of {host}")
        elif simulator == "mirrorapi" and endpoint.get("prompt") != PROMPT_FILE:
            found[FAILED].append(f"cache misses answered by MirrorAPI ({model}) with "
                                 f"{endpoint.get('prompt') or 'an unrecorded'} system prompt, not upstream's "
                                 "SFT_SYSTEM (--mirror-system-prompt FILE)")
        elif simulator == "mirrorapi":
            found[DECLARED].append(f"cache misses answered by MirrorAPI served as {model} at {host}: a name cannot "
                                   "prove which weights answer")
        elif not provider_host(host):
            found[DECLARED].append(f"cache misses answered by {model} at {host}, not the provider's API host "
                                   f"({_providers()}): which weights answer cannot be checked here")
        else:
            found[VERIFIED].append(f"cache misses answered by {model} at {host}")
    state = next(state for state in (FAILED, DECLARED, VERIFIED) if found[state])
    return state, "; ".join(dict.fromkeys(found[state]))


def _tool_responses(facts) -> Condition:
    measured = ("who made each tool response (the cache, or a simulator: its mark naming the model and host, the "
                "schema simulator's answer by content), over every session, and what answers cache misses (the "
                "simulator, the model id whole, its endpoint's host and model list, whose prompt)")
    if not isinstance(facts, dict):
        return Condition("tool responses", FAILED, measured, "not recorded")
    requests, hits, simulator = facts.get("requests"), facts.get("hits"), facts.get("simulator")
    server = str(facts.get("server") or "?")
    made = _made_by(facts)
    if not isinstance(requests, int) or not isinstance(hits, int) or made is None:
        return Condition("tool responses", FAILED, measured, f"not reported by the tool server ({server}): who "
                         "answered each call is unknown")
    found: dict[str, list[str]] = {FAILED: [], DECLARED: []}
    for maker, n in sorted(made.items(), key=lambda item: (-item[1], item[0])):
        state, words = judge_maker(maker)
        found[state].append(f"{n} of {requests} made by {words}")
    answerer, words = miss_answerer(simulator, facts.get(ENDPOINTS), server)
    if answerer != VERIFIED:
        found[answerer].append(words)
    if found[FAILED]:
        return Condition("tool responses", FAILED, measured, "; ".join(found[FAILED]))
    real = requests - sum(made.values())
    head = f"{real} of {requests} from the cache" if requests else "no tool call reached the server"
    if server != "embedded":
        return Condition("tool responses", DECLARED, measured, "; ".join([
            f"{head}, as counted by the tool server {server} (its own /stats and /health: this run cannot check "
            "what answered there)", *found[DECLARED]]))
    if found[DECLARED]:
        return Condition("tool responses", DECLARED, measured, "; ".join([head, *found[DECLARED]]))
    return Condition("tool responses", VERIFIED, measured, f"{head}; {words}")


def _hosts(endpoints) -> list[str]:
    return [endpoint_host(str(url)) for url in endpoints or []]


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
    if not all(provider_host(host) for host in hosts):
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
