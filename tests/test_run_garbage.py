"""A query leaves no cyclic garbage behind (issue 26). Its tree (nodes and their parents) and recursive closures
(the indented-JSON encoder, DFSDT's walk) were reference cycles: each ended query's tree, prompts included, stayed
in memory until a full collection, and every full collection walked all of them (19-50 ms in one pass at
concurrency 32). Now a written query's tree is unlinked (search/tree.release) and the closures let go of
themselves, so reference counting frees a query as it ends."""

from __future__ import annotations

import gc
from collections import Counter

import pytest

from runners.config import RunConfig, select_queries
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.server.client import ServerClient
from toolbench_adapter.server.standin import Reply, StandInServer

# what one query allocates; none of it may be left to the cyclic collector
QUERY_TYPES = {"Node", "QueryContext", "Toolset", "ToolEnv", "CallRecorder", "Budget", "DFSResult", "CoTResult"}
CLOSURES = {"dumps_indented.<locals>.encode", "run_dfs.<locals>.dfs", "QueryRunner.search.<locals>.new_root"}


@pytest.mark.parametrize("method", ["CoT@1", "CoT@2", "DFS_woFilter_w2"])
def test_a_query_leaves_no_cyclic_garbage(tmp_path, method):
    cfg = RunConfig(name="garbage", out_root=str(tmp_path), method=method)
    queries = select_queries(cfg)
    assert len(queries) >= 3
    with StandInServer(lambda exchange: Reply(body={"error": "", "response": "ok"})) as server:
        runner = Runner(cfg, backend=ScriptedBackend(), progress=False)
        runner.run_dir.mkdir(parents=True)
        client = ServerClient(f"{server.url}/virtual", timeout_s=10)
        runner.run_query(queries[0], client)  # first-use caches (schemas, sessions) are not a query's garbage
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds unreachable is kept in gc.garbage to look at
        try:
            outcomes = [runner.run_query(query, client) for query in queries[1:]]
            gc.collect()
            left = Counter(type(o).__name__ for o in gc.garbage if type(o).__name__ in QUERY_TYPES)
            left.update(o.__qualname__ for o in gc.garbage if callable(o) and getattr(o, "__qualname__", "") in CLOSURES)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        client.close()
    assert all(outcome.finished for outcome in outcomes)
    assert left == Counter()
