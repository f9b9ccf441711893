"""``tba evaluate --executor ray``: the judge requests of a group as Ray tasks, each a batch of answers.

The driver (toolbench_adapter/evaluation/judging/passrate.py) reads the judgement cache, sends only the misses here,
writes the cache as results come back and writes every output file, so an evaluation is the same files under
threads and ray. A task gets plain settings (JudgeRecipe: chat backend, model, URLs, key, options, mode,
evaluator, budget) and rebuilds the judge in its worker process, once per process: no live HTTP session or
lock crosses a process, and workers never touch the cache file. A task lost with its worker is retried by Ray
(``max_retries``); one that still fails gives error labels for its batch (not cached: a rerun asks again).
Error labels are failed judgements, as under threads: never scored, counted, and the command exits 3 with its
redo. The judge preflight runs once, in the driver, before any task; the workers' clients carry the same
retry options (``--judge-option``) in the recipe.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import EvaluatorSpec
from toolbench_adapter.evaluation.judging.chat import build_chat_client
from toolbench_adapter.evaluation.judging.judge import JUDGES, FunctionJudge, Judgement, judge_answer
from toolbench_adapter.evaluation.labels import Label

from ..execution.executors import connect_ray, require_ray


@dataclass
class ChatRecipe:
    """How to build the judge's chat client: ``build_chat_client(backend, model=, base_url=, api_key=, **options)``.
    ``api_key`` None: each worker reads $OPENAI_API_KEY from its own environment, as the client does."""

    backend: str
    model: str | None
    base_url: str | list[str] | None = None
    api_key: str | None = None
    options: dict = field(default_factory=dict)

    def build(self):
        return build_chat_client(self.backend, model=self.model, base_url=self.base_url, api_key=self.api_key,
                                 **self.options)


@dataclass
class JudgeRecipe:
    """A judge as plain data: the chat client's recipe and what the driver's judge was built with."""

    chat: ChatRecipe
    mode: str  # resolved ("tools" or "json"), never "auto": workers judge as the driver decided
    spec: EvaluatorSpec
    attempts: int
    with_reason: bool
    temperature: float | None
    max_tokens: int | None
    constrain: bool = False  # --judge-constrain

    @classmethod
    def of(cls, judge: FunctionJudge, chat: ChatRecipe) -> JudgeRecipe:
        return cls(chat, judge.mode, judge.spec, judge.attempts, judge.with_reason, judge.temperature,
                   judge.max_tokens, judge.constrain)

    def key(self) -> str:
        return json.dumps([self.chat.backend, self.chat.model, self.chat.base_url, self.chat.api_key,
                           self.chat.options, self.mode, self.spec.fingerprint, str(self.spec.path), self.attempts,
                           self.with_reason, self.temperature, self.max_tokens, self.constrain], sort_keys=True,
                          default=str)

    def build(self) -> FunctionJudge:
        return JUDGES.get(self.mode)(self.chat.build(), self.spec, attempts=self.attempts,
                                     with_reason=self.with_reason, temperature=self.temperature,
                                     max_tokens=self.max_tokens, constrain=self.constrain)


_built: dict[str, FunctionJudge] = {}  # per worker process: the judge of the current recipe (a local model loads once)
_built_lock = threading.Lock()


def _judge_for(recipe: JudgeRecipe) -> FunctionJudge:
    key = recipe.key()
    with _built_lock:
        if key not in _built:
            _built.clear()  # an earlier evaluation's judge goes
            _built[key] = recipe.build()
        return _built[key]


def judge_batch(recipe: JudgeRecipe, asks: list[tuple[str, dict]], threads: int) -> dict[str, Any]:
    """One Ray task: judge each (query, answer) once, ``threads`` at a time. Ray runs one task at a time in a
    worker process, so the judge's counters moved by exactly this batch's requests."""
    judge = _judge_for(recipe)
    requests, malformed = judge.requests, judge.malformed
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        judgements = list(pool.map(lambda ask: judge_answer(judge, *ask), asks))
    return {"judgements": [j.as_dict() for j in judgements], "requests": judge.requests - requests,
            "malformed": judge.malformed - malformed}


class RayJudgeExecutor:
    """Judge requests as Ray tasks on the cluster at ``address`` (None: the one this process joined, else a new
    local one, shut down by ``close``). About ``concurrency`` requests in flight over the cluster: up to one
    task per CPU at once, each judging a batch of concurrency/tasks answers in threads."""

    name = "ray"

    def __init__(self, chat: ChatRecipe, concurrency: int = 4, address: str | None = None, max_retries: int = 3):
        require_ray()  # a missing extra is bad input before anything is converted or judged
        self.chat = chat
        self.concurrency = max(1, concurrency)
        self.address = address
        self.max_retries = max_retries
        self._started_here = False
        self._remote = None

    def _connect(self):
        ray, started = connect_ray(self.address)
        self._started_here = self._started_here or started
        if self._remote is None:
            self._remote = ray.remote(judge_batch).options(num_cpus=1, max_retries=self.max_retries)
        return ray

    def map(self, judge: FunctionJudge, asks: list[tuple[str, dict]]) -> Iterator[tuple[int, Judgement]]:
        if not asks:
            return
        ray = self._connect()
        recipe = JudgeRecipe.of(judge, self.chat)
        slots = max(1, min(self.concurrency, int(ray.cluster_resources().get("CPU", 1))))
        threads = math.ceil(self.concurrency / slots)
        batches = [list(range(start, min(start + threads, len(asks)))) for start in range(0, len(asks), threads)]
        in_flight: dict[Any, list[int]] = {}
        position = 0
        while position < len(batches) or in_flight:
            while position < len(batches) and len(in_flight) < slots:
                batch = batches[position]
                position += 1
                in_flight[self._remote.remote(recipe, [asks[i] for i in batch], threads)] = batch
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                batch = in_flight.pop(ref)
                yield from self._results(ray, ref, batch, judge)

    def _results(self, ray, ref, batch: list[int], judge: FunctionJudge) -> Iterator[tuple[int, Judgement]]:
        try:
            result = ray.get(ref)
        except Exception as exc:  # lost more often than max_retries, or the worker could not build the judge
            cause = getattr(exc, "cause", None)
            if isinstance(cause, InputError):  # e.g. a missing judge model: bad input, as under threads
                raise cause from None
            first_line = (str(cause or exc).strip().splitlines() or [""])[0][:300]
            error = f"ray task failed: {type(cause or exc).__name__}: {first_line}"
            for index in batch:
                yield index, Judgement(Label.ERROR, "", [], error)
            return
        judge.add_counts(result["requests"], result["malformed"])
        for index, data in zip(batch, result["judgements"], strict=True):
            yield index, Judgement.from_dict(data)

    def close(self) -> None:
        if self._started_here:  # a cluster started for this evaluation goes with it
            require_ray().shutdown()
            self._started_here = False
