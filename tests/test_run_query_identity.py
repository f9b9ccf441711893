"""A run's identity includes its queries (issue 33): a rerun into a run folder on other queries (another data
set, a changed query under a known id) is exit 2 before any model call, writing nothing; more groups or queries
of the same data, a copy of the same data at another path and a folder from before digests all go on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.compat import Compat
from toolbench_adapter.errors import InputError
from toolbench_adapter.queryset.queries import SAMPLE_ROOT, QuerySet
from toolbench_adapter.queryset.toolset import build_toolset, function_list

QUERIES = Path("solvable_queries") / "test_instruction" / "G1_instruction.json"
IDS = Path("solvable_queries") / "test_query_ids" / "G1_instruction.json"


def data_root(path: Path) -> Path:
    """A copy of the sample set whose G1_instruction evaluates both its queries (900001, 900002)."""
    shutil.copytree(SAMPLE_ROOT, path)
    (path / IDS).write_text(json.dumps({"900001": 0, "900002": 0}))
    return path


def edit_query(root: Path, index: int, **changes) -> None:
    """Change G1_instruction's query at ``index`` (and the test ids, for a new query_id)."""
    queries = json.loads((root / QUERIES).read_text())
    old_id = queries[index]["query_id"]
    queries[index].update(changes)
    (root / QUERIES).write_text(json.dumps(queries, indent=2))
    ids = json.loads((root / IDS).read_text())
    if "query_id" in changes and str(old_id) in ids:
        ids = {(str(changes["query_id"]) if k == str(old_id) else k): v for k, v in ids.items()}
        (root / IDS).write_text(json.dumps(ids))


def run(tmp_path: Path, root: Path, *extra: str, name: str = "r") -> int:
    return main(["run", "--name", name, "--out-root", str(tmp_path / "runs"), "--backend", "scripted", "--quiet",
                 "--stb-root", str(root), *extra])


def folder_bytes(run_dir: Path) -> dict:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def manifest(tmp_path: Path, name: str = "r") -> dict:
    return json.loads((tmp_path / "runs" / name / "manifest.json").read_text())


class CountingScripted(ScriptedBackend):
    """The scripted model, counting what the run asked of it (a local model would load in preflight)."""

    def __init__(self):
        super().__init__()
        self.calls = self.preflights = 0

    def preflight(self) -> None:
        self.preflights += 1
        super().preflight()

    def complete(self, request):
        self.calls += 1
        return super().complete(request)


def test_a_changed_query_under_a_known_id_is_refused_before_any_model_call(tmp_path, capsys):
    a = data_root(tmp_path / "A")
    assert run(tmp_path, a, "--groups", "G1_instruction") == 0
    changed = data_root(tmp_path / "changed")
    edit_query(changed, 0, query="What is the weather in Porto?")  # 900001, the same id
    run_dir = tmp_path / "runs" / "r"
    before = folder_bytes(run_dir)
    backend = CountingScripted()
    runner = Runner(RunConfig(name="r", out_root=str(tmp_path / "runs"), backend="scripted", stb_root=str(changed),
                              groups=["G1_instruction"]), backend=backend, progress=False)
    with pytest.raises(InputError) as refused:
        runner.run()
    assert (backend.calls, backend.preflights) == (0, 0)  # no model asked, none loaded
    assert folder_bytes(run_dir) == before  # nothing written
    text = str(refused.value)
    assert "G1_instruction/900001" in text and "changed under an id the run has" in text
    assert "--name" in refused.value.fix
    # the same through the command line: exit 2
    assert run(tmp_path, changed, "--groups", "G1_instruction") == 2
    assert "1 query (G1_instruction/900001) changed" in capsys.readouterr().err  # 900002 is as recorded
    assert folder_bytes(run_dir) == before


def test_another_query_set_is_refused_naming_the_ids_and_the_way_out(tmp_path, capsys):
    a = data_root(tmp_path / "A")
    assert run(tmp_path, a) == 0
    b = data_root(tmp_path / "B")
    edit_query(b, 0, query_id=777001, query="Another question entirely.")
    run_dir = tmp_path / "runs" / "r"
    before = folder_bytes(run_dir)
    capsys.readouterr()
    assert run(tmp_path, b) == 2
    err = capsys.readouterr().err
    assert "G1_instruction/777001" in err and "holds a run of other queries" in err
    assert f"--stb-root {a.resolve()}" in err and "new --name" in err
    assert folder_bytes(run_dir) == before
    # a group the run lacks, from data where one of the run's groups differs: another set too
    assert run(tmp_path, a, "--groups", "G1_instruction", name="one") == 0
    assert run(tmp_path, b, "--groups", "G1_tool", name="one") == 2
    assert "added from another data set" in capsys.readouterr().err


def test_more_groups_or_queries_of_the_same_data_go_on(tmp_path):
    a = data_root(tmp_path / "A")
    assert run(tmp_path, a, "--groups", "G1_instruction", "--limit", "1") == 0
    assert run(tmp_path, a, "--groups", "G1_instruction") == 0  # a larger limit: 900002 added
    assert run(tmp_path, a, "--groups", "G1_instruction", "G1_tool") == 0  # a group added
    recorded = manifest(tmp_path)["queries"]
    assert {g: sorted(v["ids"]) for g, v in recorded["groups"].items()} == {
        "G1_instruction": ["900001", "900002"], "G1_tool": ["900004"]}
    assert manifest(tmp_path)["totals"]["queries"] == 3


def test_a_copy_of_the_same_data_at_another_path_goes_on_and_is_recorded(tmp_path):
    a = data_root(tmp_path / "A")
    assert run(tmp_path, a, "--limit", "1") == 0
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(a, copy)
    assert run(tmp_path, copy) == 0  # the same digests: the same queries (and 900002 of the same set added)
    recorded = manifest(tmp_path)
    assert recorded["queries"]["root"] == str(copy.resolve())
    assert recorded["queries"]["roots"] == [str(a.resolve()), str(copy.resolve())]
    assert [s["stb_root"] for s in recorded["sessions"]] == [str(a.resolve()), str(copy.resolve())]
    assert recorded["totals"]["queries"] == 7


def test_a_run_folder_from_before_digests_resumes_and_records_them(tmp_path, capsys):
    a = data_root(tmp_path / "A")
    assert run(tmp_path, a, "--groups", "G1_instruction", "--limit", "1") == 0
    path = tmp_path / "runs" / "r" / "manifest.json"
    old = json.loads(path.read_text())
    del old["queries"]
    for session in old["sessions"]:
        session.pop("stb_root")
    path.write_text(json.dumps(old))
    capsys.readouterr()
    assert run(tmp_path, a, "--groups", "G1_instruction") == 0
    assert "records no query digests" in capsys.readouterr().err
    assert sorted(manifest(tmp_path)["queries"]["groups"]["G1_instruction"]["ids"]) == ["900001", "900002"]


def test_merge_refuses_shards_of_other_queries(tmp_path, capsys):
    a = data_root(tmp_path / "A")
    changed = data_root(tmp_path / "changed")
    edit_query(changed, 1, query="Something else.")  # 900002: the second shard's query
    assert run(tmp_path, a, "--groups", "G1_instruction", "--shard", "1/2", name="s1") == 0
    assert run(tmp_path, changed, "--groups", "G1_instruction", "--shard", "2/2", name="s2") == 0
    assert run(tmp_path, a, "--groups", "G1_instruction", "--shard", "2/2", name="s2a") == 0
    runs = tmp_path / "runs"
    capsys.readouterr()
    assert main(["merge", str(runs / "s1"), str(runs / "s2"), "--out", str(runs / "bad")]) == 2
    assert "another set of G1_instruction" in capsys.readouterr().err
    assert not (runs / "bad").exists()
    assert main(["merge", str(runs / "s1"), str(runs / "s2a"), "--out", str(runs / "all")]) == 0
    merged = json.loads((runs / "all" / "manifest.json").read_text())["queries"]
    assert sorted(merged["groups"]["G1_instruction"]["ids"]) == ["900001", "900002"]


def test_the_digested_function_list_is_the_one_sent():
    for query in QuerySet(SAMPLE_ROOT).iter():
        for flavour in ("legacy", "current"):
            for mode in ("stb", "strict"):
                compat = Compat.from_mode(mode)
                assert function_list(query, flavour, compat) == build_toolset(query, flavour, compat).functions
