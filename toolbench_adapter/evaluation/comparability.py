"""How far an evaluation's setup stands from the StableToolBench leaderboard's, in one rule.

A run records what it knows (``setup_facts`` in its manifest: the queries, tool documents, tool responses, the
method); an evaluation adds its judge. ``assess`` turns those facts into (comparable, reasons) and ``line`` into
the one line every leaderboard, `tba table`, the report and every comparison print.

The leaderboard's setup (StableToolBench README at aa4ed9f, its GPT-based caching and MirrorAPI tables): the 765 solvable queries
(recognised here by a digest of each query record, the table in toolbench_adapter/data/stb_queries/), tool
documents present, tool responses from the cache with misses answered by a GPT-based simulator (judge
gpt-4-turbo-2024-04-09, 3 evaluations) or MirrorAPI (judge gpt-4o; the README does not say its repeats, 3
assumed), and the methods CoT@1 / DFS_woFilter_w2 without structured options (none of them upstream's). The
``llm`` simulator counts as GPT-based: it asks the chat model it is given, with this project's prompt.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from toolbench_adapter.queryset.query_identity import canonical_sha256

LEADERBOARD = "the StableToolBench leaderboard"
COMPARABLE = f"comparable with {LEADERBOARD}: yes"
NOT_COMPARABLE = f"not comparable with {LEADERBOARD}"
DIGESTS = Path(__file__).resolve().parent.parent / "data" / "stb_queries" / "digests.json"
STB_QUERIES = 765
METHODS = ("CoT@1", "DFS_woFilter_w2")
# what answered the cache misses -> the judge of the leaderboard table made with it
JUDGE_BY_SIMULATOR = {"llm": "gpt-4-turbo-2024-04-09", "mirrorapi": "gpt-4o"}
JUDGE_REPEATS = 3
SIMULATOR_WORDS = {"schema": "synthetic schema simulator",
                   "none": "no simulator (misses answered with an error)",
                   "llm": "GPT-based simulator", "mirrorapi": "MirrorAPI"}


def query_digest(record: dict) -> str:
    """sha256 of a query record as canonical JSON (keys sorted, no spaces, UTF-8): the query, its id, its API list
    and every other field, so a changed query under a known id is another query."""
    return canonical_sha256(record)


def digest_table(query_dir: str | Path) -> dict[str, dict[str, str]]:
    """group -> query id -> digest, over every record of each ``{group}.json`` of a test_instruction folder (how
    the shipped table was made: ``python -m toolbench_adapter.evaluation.comparability DIR``)."""
    table = {}
    for path in sorted(Path(query_dir).glob("*.json")):
        records = json.loads(path.read_text(encoding="utf-8"))
        table[path.stem] = {str(r["query_id"]): query_digest(r) for r in records}
    return table


@lru_cache(maxsize=1)
def stb_digests() -> dict[str, dict[str, str]]:
    return json.loads(DIGESTS.read_text(encoding="utf-8"))["groups"]


def classify_queries(queries, root: str | Path) -> dict:
    """The facts of a selection (Query objects): which of them are StableToolBench's (same group, id and
    digest) and which are not, as {group: [ids]} each."""
    known = stb_digests()
    stb: dict[str, list[int]] = {}
    other: dict[str, list[int]] = {}
    for query in queries:
        same = known.get(query.group, {}).get(str(query.query_id)) == query_digest(query.raw)
        (stb if same else other).setdefault(query.group, []).append(query.query_id)
    return {"root": str(root), "stb": stb, "other": other}


def merge_queries(old: dict | None, new: dict) -> dict:
    """A run folder's queries over its sessions: the ids of each side, united."""
    if not isinstance(old, dict):
        return new
    merged = {"root": new.get("root")}
    for side in ("stb", "other"):
        groups = {**(old.get(side) or {})}
        for group, ids in (new.get(side) or {}).items():
            groups[group] = sorted(set(groups.get(group, [])) | set(ids))
        merged[side] = groups
    return merged


def merge_setups(setups: list) -> dict | None:
    """The setup facts of a run merged from shards (tba merge): their queries united, their tool-server counts
    added (unknown when one shard's are), tool documents found only when every shard found them."""
    setups = [s for s in setups if isinstance(s, dict)]
    if not setups:
        return None
    merged = dict(setups[0])
    queries = setups[0].get("queries")
    for other in setups[1:]:
        if isinstance(other.get("queries"), dict):
            queries = merge_queries(queries, other["queries"])
    merged["queries"] = queries
    docs = [s.get("tool_documents") or {} for s in setups]
    merged["tool_documents"] = {**docs[0], "found": all(d.get("found") for d in docs)}
    responses = [s.get("tool_responses") or {} for s in setups]
    counts = {key: None if any(not isinstance(r.get(key), int) for r in responses) else sum(r[key] for r in responses)
              for key in RESPONSE_COUNTS}
    merged["tool_responses"] = {**responses[0], **counts}
    return merged


def _short(root: str) -> str:
    """A query folder as the reason names it: relative to the project when inside it (data/sample)."""
    try:
        return str(Path(root).resolve().relative_to(DIGESTS.parents[3]))
    except (ValueError, OSError):
        return root


def _queries_reason(facts: dict | None) -> str | None:
    if not isinstance(facts, dict):
        return "queries: not recorded (a run written before this was recorded)"
    stb, other = facts.get("stb") or {}, facts.get("other") or {}
    n_stb, n_other = sum(map(len, stb.values())), sum(map(len, other.values()))
    root = _short(str(facts.get("root") or "?"))
    if n_other and not n_stb:
        return f"queries: {root} (not StableToolBench's)"
    if n_other:
        return f"queries: {n_other} of {n_stb + n_other} are not StableToolBench's ({root})"
    if n_stb < STB_QUERIES:
        totals = stb_digests()
        groups = ", ".join(f"{g} {len(ids)} of {len(totals.get(g, {}))}" for g, ids in stb.items())
        return f"queries: {n_stb} of StableToolBench's {STB_QUERIES} ({groups})"
    return None


def _tool_docs_reason(facts: dict | None) -> str | None:
    if not isinstance(facts, dict):
        return "tool documents: not recorded"
    if not facts.get("found"):
        return "tool documents: none (no --tool-root: tool descriptions read None)"
    return None


def hit_share(facts: dict | None) -> str:
    """``97 of 100 tool responses from the cache`` (``; 3 more replayed the simulator's earlier answers``: hits on
    entries this project's server simulated, which are simulated answers too) or ``cache hits not reported``."""
    facts = facts or {}
    requests, hits, replayed = facts.get("requests"), facts.get("hits"), facts.get("simulated_hits")
    if not isinstance(requests, int) or not isinstance(hits, int):
        return "cache hits not reported"
    if not requests:
        return "no tool call reached the server"
    if not isinstance(replayed, int) or not replayed:
        return f"{hits} of {requests} tool responses from the cache"
    return (f"{hits - replayed} of {requests} tool responses from the cache; {replayed} more replayed the "
            "simulator's earlier answers")


def _responses_reason(facts: dict | None) -> str | None:
    if not isinstance(facts, dict):
        return "tool responses: not recorded"
    simulator, misses = facts.get("simulator"), facts.get("misses")
    share = hit_share(facts)
    if misses == 0 and not facts.get("simulated_hits") and facts.get("requests"):
        return None  # every response came from the cache, none of it simulated here
    if simulator is None:
        return f"tool responses: what answered cache misses is unknown (server {facts.get('server')}; {share})"
    if simulator not in JUDGE_BY_SIMULATOR:
        return f"tool responses: {SIMULATOR_WORDS.get(simulator, simulator)} ({share})"
    return None


def _judge_reason(judge: dict | None, simulator: str | None) -> str | None:
    if not isinstance(judge, dict):
        return "judge: not evaluated"
    model = str(judge.get("model") or "judge model not recorded").rstrip("/").rsplit("/", 1)[-1].removeprefix("hf:")  # a local folder: its name
    expected = JUDGE_BY_SIMULATOR.get(simulator or "", JUDGE_BY_SIMULATOR["llm"])
    if judge.get("self_judged"):
        return f"judge: {model} self-judged, not {expected}"
    problems = []
    if model.lower() != expected:
        problems.append(f"{model}, not {expected}")
    times = judge.get("evaluate_times")
    if times is None:
        problems.append(f"evaluations not recorded, {JUDGE_REPEATS} needed")
    elif times != JUDGE_REPEATS:
        problems.append(f"{times} evaluation{'' if times == 1 else 's'}, not {JUDGE_REPEATS}")
    if judge.get("evaluator") not in (None, "default"):
        problems.append(f"evaluator {judge.get('evaluator')}, not the default")
    return "judge: " + ", ".join(problems) if problems else None


def _method_reason(facts: dict | None) -> str | None:
    if not isinstance(facts, dict):
        return "method: not recorded"
    method, agent = facts.get("method"), facts.get("agent")
    if agent:  # an outside agent over MCP (tba run --agent): its own loop, none of the leaderboard's methods
        problems = [f"outside agent {agent} over MCP (the leaderboard's: {', '.join(METHODS)})"]
    else:
        problems = [] if method in METHODS else [f"{method} (the leaderboard's: {', '.join(METHODS)})"]
    structured = [f"{k.replace('_', '-')} {facts.get(k)}" for k, up in (("constrain", "off"), ("on_invalid", "observe"))
                  if facts.get(k) not in (None, up)]
    if structured:
        problems.append(", ".join(structured) + " (not upstream's)")
    return "method: " + "; ".join(problems) if problems else None


def assess(setup: dict | None, judge: dict | None) -> tuple[bool, list[str]]:
    """(comparable, reasons) from a run's recorded ``setup`` (its manifest's setup_facts) and the ``judge`` of
    an evaluation (its evaluation.json's judge: model, evaluate_times, self_judged, evaluator)."""
    setup = setup if isinstance(setup, dict) else {}
    responses = setup.get("tool_responses")
    simulator = responses.get("simulator") if isinstance(responses, dict) else None
    reasons = [_queries_reason(setup.get("queries")), _tool_docs_reason(setup.get("tool_documents")),
               _responses_reason(responses), _judge_reason(judge, simulator), _method_reason(setup.get("method"))]
    reasons = [r for r in reasons if r]
    return not reasons, reasons


def line(comparable: bool, reasons: list[str]) -> str:
    return COMPARABLE if comparable else f"{NOT_COMPARABLE}: " + "; ".join(reasons)


def line_of(setup: dict | None, judge: dict | None) -> str:
    return line(*assess(setup, judge))


def run_line(manifest: dict | None, judge: dict | None) -> str:
    """The line of one evaluation: its run's manifest (setup_facts) and its judge (evaluation.json's)."""
    return line_of((manifest or {}).get(SETUP_FIELD), judge)


# the tool server's counts a run records (setup_facts.py): simulated_hits are hits on answers the server's own
# simulator made (its _simulated mirror), so they count with the simulator, not with the cache
RESPONSE_COUNTS = ("requests", "hits", "simulated_hits", "misses")
SETUP_FIELD = "setup_facts"  # the manifest's key (runners/execution/setup_facts.py writes it)
NOT_RECORDED = line(False, ["setup not recorded (score or label files, not an evaluation of a tba run)"])


if __name__ == "__main__":  # rebuild the shipped table from a test_instruction folder
    import sys

    source = Path(sys.argv[1])
    data = {"note": "sha256 of each query record as canonical JSON (json.dumps sort_keys=True, ensure_ascii=False, "
                    "separators=(',', ':'), UTF-8): comparability.query_digest; from "
                    "data/stabletoolbench/solvable_queries/test_instruction, StableToolBench commit aa4ed9f",
            "groups": digest_table(source)}
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{sum(map(len, data['groups'].values()))} digests written to {DIGESTS}")
