"""``inspect eval toolbench_adapter/stabletoolbench --model PROVIDER/MODEL``: StableToolBench as an inspect_ai task.

This module is what inspect_ai loads (setup.cfg's ``inspect_ai`` entry point): it names the task and its options
(``-T name=value``) and hands them to the task's body, found by name (INSPECT_TASKS: runners/inspect_eval/task.py).
Samples are the queries; each sample's tools are its query's functions served by the embedded tool server; the
solver is inspect's own tool loop; the scorer is this project's judge. ``-T run=NAME`` also writes the run folder
results/runs/NAME that every ``tba`` command reads."""

from __future__ import annotations

from inspect_ai import Task, task

from . import INSPECT_TASKS


@task
def stabletoolbench(groups: str | list[str] | None = None, query_ids: str | list[int] | None = None,
                    limit: int | None = None, data_root: str | None = None, tool_root: str | None = None,
                    simulator: str = "schema", cache_dir: str | None = None, server: str = "embedded",
                    max_step: int = 12, run: str | None = None, out_root: str = "results/runs",
                    judge_url: str | None = None, judge_model: str | None = None, judge_api_key: str | None = None,
                    evaluate_times: int = 1) -> Task:
    """StableToolBench's queries, tools and judge.

    Args:
        groups: query groups, e.g. G1_instruction or "G1_instruction,G1_tool" (default: every group of the data).
        query_ids: only these query ids ("1,2" or a list).
        limit: at most this many queries per group.
        data_root: a StableToolBench checkout or query folder (default: $TBA_STB_ROOT, else the shipped sample).
        tool_root: toolenv/tools, for tool descriptions.
        simulator: what answers tool-cache misses on the embedded server: schema, llm, mirrorapi or none.
        cache_dir: the tool-response cache folder (StableToolBench layout).
        server: "embedded" (started in this process) or a /virtual URL.
        max_step: tool calls per query (Finish included); calls past it are refused.
        run: also write the run folder OUT_ROOT/RUN, read by tba evaluate, table, report, compare-runs.
        out_root: where run folders go (default results/runs).
        judge_url: the judge's OpenAI-compatible endpoint (answers without a final answer need none).
        judge_model: the judge model's name at judge_url.
        judge_api_key: the judge's key (default: $OPENAI_API_KEY).
        evaluate_times: judgements per answer (the label is the majority, as StableToolBench's).
    """
    return INSPECT_TASKS.get("stabletoolbench")(
        groups=groups, query_ids=query_ids, limit=limit, data_root=data_root, tool_root=tool_root,
        simulator=simulator, cache_dir=cache_dir, server=server, max_step=max_step, run=run, out_root=out_root,
        judge_url=judge_url, judge_model=judge_model, judge_api_key=judge_api_key, evaluate_times=evaluate_times)
