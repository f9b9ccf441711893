"""The body of ``inspect eval toolbench_adapter/stabletoolbench`` (named in toolbench_adapter/tasks/inspect_task.py).

Samples are the selected queries (their text; group and id in the metadata). Each sample's tools are its query's
functions as the function-call run sends them, answered through a query session (runners/outside/session.py:
the run's environment step on the embedded tool server, status codes, observations, the call cap), Finish ending
the sample. The solver is inspect's own tool loop (``generate(tool_calls="loop")``); the scorer is this project's
judge on the converted answer (Solved 1, Unsure 0.5, Unsolved 0, the mean over the judged repeats: a one-query
SoPR; label and reason in the log; no verdict is a sample error, never a 0: judging.py).
With ``run`` the run folder is written as ``tba run`` writes it (run_folder.py), its agent named
"inspect_ai MODEL" (the comparability line names it)."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams
from inspect_ai.util._json import JSONSchema

from toolbench_adapter.errors import InputError
from toolbench_adapter.protocol.functions import FINISH_NAME

from ..config import RunConfig, select_queries
from ..outside.session import QuerySession
from ..search.agent import QueryContext
from .judging import NoVerdict, judge_session
from .offline_tokens import use_installed_encodings
from .run_folder import InspectRun

AGENT_PREFIX = "inspect_ai"  # a run folder's agent: "inspect_ai MODEL" (its loop: generate with the tool loop)
STORE_KEY = "toolbench_adapter"


def _listed(value: Any, kind: type = str) -> list:
    if value is None or value == "":
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        return [kind(str(item).strip()) for item in items if str(item).strip()]
    except ValueError:
        raise InputError(f"cannot read {value!r} as a list of {kind.__name__}", field="-T query_ids",
                         fix="write query_ids=1,2") from None


def stabletoolbench_task(*, groups=None, query_ids=None, limit=None, data_root=None, tool_root=None,
                         simulator="schema", cache_dir=None, server="embedded", max_step=12, run=None,
                         out_root="results/runs", judge_url=None, judge_model=None, judge_api_key=None,
                         evaluate_times=1) -> Task:
    use_installed_encodings()  # inspect counts tokens with tiktoken, which would download its file (offline_tokens.py)
    cfg = RunConfig(name=run or "inspect", out_root=out_root, stb_root=data_root, tool_root=tool_root,
                    groups=_listed(groups), query_ids=_listed(query_ids, int), limit=limit, simulator=simulator,
                    cache_dir=cache_dir, server=server, max_step=max_step, agent=f"{AGENT_PREFIX} (model unknown yet)")
    cfg.validate()
    queries = select_queries(cfg)
    world = World(cfg, write=run is not None, total=len(queries))
    todo = world.pending(queries)
    samples = [Sample(input=q.query, id=f"{q.group}/{q.query_id}", metadata={"group": q.group, "query_id": q.query_id})
               for q in todo]
    judge = {"url": judge_url, "model": judge_model, "api_key": judge_api_key, "times": evaluate_times}
    # no judge, no scorer: answers (and with run=, a run folder for tba evaluate), never a 0 standing for "not judged"
    scorer = stabletoolbench_judge(judge) if judge_url and judge_model else None
    return Task(dataset=MemoryDataset(samples, name="stabletoolbench"), solver=query_tools_loop(world),
                scorer=scorer, message_limit=4 * max_step + 10,
                metadata={"run_folder": str(cfg.run_dir) if run else None})


class World:
    """What the samples share: the queries by id, the tool server (started with the first sample) and, with
    ``run``, the run folder (run_folder.py) whose agent names the model inspect evaluates."""

    def __init__(self, cfg: RunConfig, *, write: bool, total: int):
        self.cfg = cfg
        self.write = write
        self.total = total
        self.todo = total
        self.queries: dict[tuple[str, int], Any] = {}
        self.run: InspectRun | None = None
        self._lock = threading.Lock()

    def pending(self, queries: list) -> list:
        self.queries = {(q.group, q.query_id): q for q in queries}
        todo = InspectRun.pending_of(self.cfg, queries) if self.write else queries
        self.todo = len(todo)
        return todo

    def begin(self) -> InspectRun:
        """The run (tool server, identity checks, manifest) at the first sample, when inspect's model is known."""
        with self._lock:
            if self.run is None:
                model = str(get_model())
                cfg = RunConfig(**{**self.cfg.as_dict(), "agent": f"{AGENT_PREFIX} {model}"})
                self.run = InspectRun(cfg, write=self.write, selected=list(self.queries.values()), expected=self.todo)
            return self.run


def _schema(name: str, value: Any) -> JSONSchema:
    """A parameter's schema as inspect takes it; inspect wants a description for each (Finish's return_type has
    none): its name stands in."""
    value = value if isinstance(value, dict) else {}
    try:
        schema = JSONSchema.model_validate(value)
    except ValueError:  # a type inspect's schema does not know: described, untyped
        schema = JSONSchema(description=str(value.get("description") or ""))
    if not schema.description:
        schema.description = name
    return schema


def tool_of(session: QuerySession, function: dict, state: TaskState) -> Any:
    """One query function as an inspect tool: its name, description and parameters (the run's; inspect drops the
    schema's non-standard keys, e.g. "optional", and the empty names upstream lists first)."""
    name = function["name"]
    parameters = function.get("parameters") or {}

    async def call(**arguments: Any) -> str:
        reply = await anyio.to_thread.run_sync(session.call, name, arguments)
        if name == FINISH_NAME and session.ended is not None:
            state.completed = True  # Finish accepted (or the session over): the sample's loop ends here
        return reply.text

    params = ToolParams(properties={k: _schema(k, v) for k, v in (parameters.get("properties") or {}).items()},
                        required=[r for r in parameters.get("required") or [] if r])
    return ToolDef(call, name=name, description=function.get("description") or name, parameters=params).as_tool()


@solver
def query_tools_loop(world: World):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        run = await anyio.to_thread.run_sync(world.begin)
        query = world.queries[(state.metadata["group"], state.metadata["query_id"])]
        session, ctx = run.open(query)
        started = time.perf_counter()
        state.tools = [tool_of(session, f, state) for f in session.tools()]
        try:
            state = await generate(state, tool_calls="loop")
        finally:
            session.close()
            data = session.answer_file()
            state.store.set(STORE_KEY, {"answer": data, "group": query.group, "query_id": query.query_id})
            await anyio.to_thread.run_sync(run.finish_query, query, ctx, session, data,
                                           time.perf_counter() - started)
        return state

    return solve


@scorer(metrics=[mean()])
def stabletoolbench_judge(judge: dict):
    async def score(state: TaskState, target: Target) -> Score:
        stored = state.store.get(STORE_KEY) or {}
        answer = stored.get("answer")
        if answer is None:
            raise NoVerdict("no answer: the sample ended before its session closed")
        judgement = await anyio.to_thread.run_sync(judge_session, answer, judge)
        failed = judgement.get("failed_judgements")
        note = f" ({failed} of {len(judgement['labels'])} judgements failed, left out)" if failed else ""
        return Score(value=judgement["value"], answer=answer["answer_generation"].get("final_answer", ""),
                     explanation=f"{judgement['label']}: {judgement['reason']}{note}", metadata=judgement)

    return score


__all__ = ["QueryContext", "stabletoolbench_task"]
