"""``tba replay``: answer files in any layout -> a cache built from them -> every recorded model turn replayed
through the live pipeline (embedded server answering from that cache, no simulator) -> ``replay.jsonl``.

Layout of ``{out_root}/{name}/``:
- ``input/{batch}/test_instruction/{group}.json``: the queries (StableToolBench's when there, else from
  ``--queries`` or the answer file), ``input/{batch}/answers/{group}/{qid}_{method}.json``: copies of the
  recordings in the layout the replay backend reads;
- ``cache/``: the response cache, each recording's calls under its own category (no two recordings fight);
- ``{batch}/``: one run folder per method (and dialect, limits, and the compat flags an older ToolBench DFSDT
  recording needs: search_rule.py): manifest, answer files, steps, queries.jsonl;
- ``replay.jsonl``: one line per input file (see docs/replay.md / ``tba replay --help``).

Groups: the group named in the file's path, else "G0_ungrouped"; a second recording of the same query and
method is replayed under ``{group}_2`` (and so on) so that each recording keeps its own answer file.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.answers.read import RecordedAnswer, UnusableAnswer, expand_answer_inputs, read_recorded
from toolbench_adapter.answers.recorded_query import QueryResolver, ResolvedQuery
from toolbench_adapter.answers.replay_compare import actions_of, compare_answers
from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import write_text_atomic
from toolbench_adapter.queryset.queries import RECORDED_FUNCTIONS, is_group_name
from toolbench_adapter.queryset.toolset import Toolset, build_toolset
from toolbench_adapter.runs.folder import ERRORS, answer_path, failed_path
from toolbench_adapter.server.cache_build import CacheBuilder, RecordedCall, not_replayable, usable_calls

from ..config import RunConfig
from ..models.recorded_turns import index_turns, turn_trees
from ..models.replay import recording_dialect
from .search_rule import compat_flags_for

REPLAY_LINES = "replay.jsonl"
UNGROUPED = "G0_ungrouped"
DEFAULT_MAX_STEP, DEFAULT_MAX_QUERY_COUNT = 12, 200


@dataclass
class Planned:
    """One input file that can be replayed: where it goes in the run."""

    answer: RecordedAnswer
    resolved: ResolvedQuery
    group: str
    query_id: int
    method: str
    toolset: Toolset
    calls: list[RecordedCall]  # what the cache is built from
    key: tuple = ()  # the batch it goes to (_batch_key)
    batch: str = ""
    compat_flags: dict = field(default_factory=dict)


@dataclass
class ReplayResult:
    replay_dir: Path
    lines: list[dict] = field(default_factory=list)

    @property
    def reasons(self) -> Counter:
        return Counter(line["reason"] for line in self.lines if line["reason"])

    def totals(self) -> dict:
        replayed = [line for line in self.lines if not line["reason"]]
        return {"files": len(self.lines), "replayed": len(replayed),
                "actions_recorded": sum(line["actions_recorded"] for line in replayed),
                "actions_exact": sum(line["actions_exact"] for line in replayed),
                "observations_recorded": sum(line["observations_recorded"] for line in replayed),
                "observations_exact": sum(line["observations_exact"] for line in replayed),
                "final_answer_equal": sum(bool(line["final_answer_equal"]) for line in replayed),
                "not_replayed": dict(self.reasons),
                "differences": dict(Counter(d["kind"] for line in replayed for d in line["differences"]))}


def _refused(path: Path, reason: str, message: str, field: str | None = None) -> dict:
    return {"source": str(path), "answer": None, "reason": reason, "field": field, "message": message,
            "actions_recorded": None, "actions_exact": None, "observations_recorded": None,
            "observations_exact": None, "final_answer_equal": None, "differences": []}


def _group_for(answer: RecordedAnswer, resolved: ResolvedQuery) -> str:
    group = resolved.query.group or answer.identity.group or UNGROUPED
    return group if is_group_name(group) and re.fullmatch(r"[\w.-]+", group) else UNGROUPED


def plan(files: list[Path], resolver: QueryResolver) -> tuple[list[Planned], list[dict]]:
    planned: list[Planned] = []
    refused: list[dict] = []
    taken: Counter = Counter()
    for path in files:
        try:
            answer = read_recorded(path)
            resolved = resolver.resolve(answer)
            toolset = build_toolset(resolved.query, answer.flavour)
            calls = usable_calls(answer, toolset)
            key = _walked_key(answer)
        except UnusableAnswer as exc:
            refused.append(_refused(path, exc.reason, exc.problem, exc.field))
            continue
        except InputError as exc:
            refused.append(_refused(path, "query_not_found", exc.problem, exc.field))
            continue
        base = _group_for(answer, resolved)
        query_id, method = resolved.query.query_id, answer.method
        taken[(base, query_id, method)] += 1
        n = taken[(base, query_id, method)]
        group = base if n == 1 else f"{base}_{n}"
        planned.append(Planned(answer, resolved, group, query_id, method, toolset, calls, key))
    return planned, refused


def _batch_key(answer: RecordedAnswer) -> tuple:
    args = answer.data.get("forward_args") or {}
    dialect = recording_dialect(answer.data) or "openai-tools"
    flags = tuple(sorted(compat_flags_for(answer.data)))  # an older ToolBench search: its own batch
    return (answer.method, dialect, int(args.get("single_chain_max_step") or DEFAULT_MAX_STEP),
            int(args.get("max_query_count") or DEFAULT_MAX_QUERY_COUNT), flags)


def _walked_key(answer: RecordedAnswer) -> tuple:
    """The file's batch key, after walking it as the replay backend and the comparison will: a file those
    walks cannot take (a chain or tree deeper than Python recurses, content of an unexpected shape) is
    refused here, by name, rather than failing later inside the run."""
    try:
        index_turns(turn_trees(answer.data))
        actions_of(answer.data)
        not_replayable(answer.data)
        return _batch_key(answer)
    except RecursionError:
        raise UnusableAnswer("too_deeply_nested", "a chain or tree too deep to walk (RecursionError)",
                             path=answer.path, field="tree / trys", fix="leave this file out") from None
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        raise UnusableAnswer("malformed", f"unexpected content ({type(exc).__name__}: {exc})", path=answer.path,
                             fix="leave this file out") from None


def _batches(planned: list[Planned]) -> dict[tuple, list[Planned]]:
    batches: dict[tuple, list[Planned]] = {}
    for item in planned:
        batches.setdefault(item.key, []).append(item)
    names: Counter = Counter(key[0] for key in batches)
    for key, items in batches.items():
        method, dialect, max_step, max_queries, flags = key
        name = method if names[method] == 1 else f"{method}-{dialect}-s{max_step}-q{max_queries}"
        if flags and names[method] > 1:
            name += "-" + "-".join(flags)
        for item in items:
            item.batch = name
            item.compat_flags = dict.fromkeys(flags, True)
    return batches


def _write_inputs(input_dir: Path, items: list[Planned]) -> None:
    """The batch's queries as a query folder the runner reads, and its recordings in {group}/{qid}_{method}.json."""
    if input_dir.exists():
        shutil.rmtree(input_dir)  # regenerated from the inputs every time (a resumed replay gets the same)
    by_group: dict[str, list[dict]] = {}
    for item in items:
        query = item.resolved.query
        entry = {"query": query.query, "query_id": item.query_id, "api_list": query.api_list,
                 RECORDED_FUNCTIONS: query.functions}
        by_group.setdefault(item.group, []).append(entry)
        target = input_dir / "answers" / item.group / f"{item.query_id}_{item.method}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(item.answer.path, target)
    for group, entries in by_group.items():
        write_text_atomic(input_dir / "test_instruction" / f"{group}.json", json.dumps(entries, ensure_ascii=False))


def replay(inputs: list[str | Path], name: str, out_root: str | Path = "results/replays",
           stb_root: str | Path | None = None, queries_file: str | Path | None = None, compat: str = "stb",
           concurrency: int = 4, progress: bool = False) -> ReplayResult:
    from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
    from toolbench_adapter.server.runner import EmbeddedServer

    from ..execution.runner import Runner

    files = expand_answer_inputs(inputs)
    if not files:
        raise InputError("no answer files (*.json) in the inputs", path=", ".join(map(str, inputs)),
                         fix="pass answer files or folders holding them")
    replay_dir = Path(out_root) / name
    if replay_dir.exists() and not replay_dir.is_dir():
        raise InputError("the replay folder is a file", path=replay_dir, fix="choose another --name or --out-root")
    resolver = QueryResolver(stb_root, queries_file, isolate=True)
    planned, refused = plan(files, resolver)
    batches = _batches(planned)
    result = ReplayResult(replay_dir)
    cache_dir = replay_dir / "cache"
    builder = CacheBuilder(stb_root, queries_file, isolate=True)
    for item in planned:
        builder.add_answer(item.answer.data, item.toolset, item.calls)
    if planned:
        builder.write(cache_dir)
        server = build_virtual_server(ServerConfig(cache_dir=cache_dir, simulator="none", save=False))
        with EmbeddedServer(create_app(server)) as embedded:
            for (method, dialect, max_step, max_queries, _), items in batches.items():
                batch = items[0].batch
                input_dir = replay_dir / "input" / batch
                _write_inputs(input_dir, items)
                cfg = RunConfig(name=batch, out_root=str(replay_dir), stb_root=str(input_dir),
                                groups=sorted({item.group for item in items}), method=method, max_step=max_step,
                                max_query_count=max_queries, backend="replay",
                                backend_options={"answers": str(input_dir / "answers")}, dialect=dialect,
                                flavour="legacy", compat=compat, compat_flags=items[0].compat_flags,
                                simulator="none", concurrency=concurrency)
                Runner(cfg, server_url=embedded.url, progress=progress).run()
    result.lines = [_line(item, replay_dir / item.batch) for item in planned] + refused
    order = {str(path): index for index, path in enumerate(files)}
    result.lines.sort(key=lambda line: order.get(line["source"], len(order)))
    replay_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(replay_dir / REPLAY_LINES, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                                         for line in result.lines))
    return result


def _failure(run_dir: Path, item: Planned) -> tuple[str, str]:
    """(kind, detail) of an infrastructure-failed query, from the run's errors.jsonl."""
    kind, detail = "replay_failed", "the run wrote no answer file"
    path = run_dir / ERRORS
    if path.exists():
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if record.get("group") == item.group and record.get("query_id") == item.query_id:
                kind = record.get("failure_kind") or kind
                detail = record.get("failure_detail") or record.get("error") or detail
    return kind, detail


def _line(item: Planned, run_dir: Path) -> dict:
    ours = answer_path(run_dir, item.group, item.query_id, item.method)
    base = {"source": str(item.answer.path), "group": item.group, "query_id": item.query_id, "method": item.method,
            "query_source": item.resolved.source, "compat_flags": item.compat_flags}
    notes = [{"kind": note} for note in item.resolved.notes]
    if not ours.exists():
        kind, detail = _failure(run_dir, item)
        line = _refused(item.answer.path, kind, detail)
        partial = failed_path(run_dir, item.group, item.query_id, item.method)
        if partial.exists():  # what was replayed before the gap, compared all the same
            comparison = compare_answers(item.answer.data, json.loads(partial.read_text(encoding="utf-8")),
                                         not_replayable(item.answer.data))
            line.update(comparison.as_dict(), partial=str(partial))
            line["differences"] = notes + line["differences"]
        return {**base, **line}
    replayed = json.loads(ours.read_text(encoding="utf-8"))
    comparison = compare_answers(item.answer.data, replayed, not_replayable(item.answer.data))
    line = {**base, "answer": str(ours), "reason": None, **comparison.as_dict()}
    line["differences"] = notes + line["differences"]
    return line


def format_totals(result: ReplayResult) -> str:
    totals = result.totals()
    lines = [f"replayed {totals['replayed']} of {totals['files']} files",
             f"actions exact {totals['actions_exact']} / {totals['actions_recorded']}, observations exact "
             f"{totals['observations_exact']} / {totals['observations_recorded']}, final answer equal "
             f"{totals['final_answer_equal']} / {totals['replayed']}"]
    if totals["differences"]:
        lines.append("differences: " + ", ".join(f"{k} {v}" for k, v in sorted(totals["differences"].items())))
    if totals["not_replayed"]:
        lines.append("not replayed: " + ", ".join(f"{k} {v}" for k, v in sorted(totals["not_replayed"].items())))
    lines.append(f"per file: {result.replay_dir / REPLAY_LINES}")
    return "\n".join(lines)
