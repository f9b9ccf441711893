"""tba report on real runs of the sample set: a scripted ReAct model whose outputs are malformed in known
ways, run once with react-find and once with react-robust (parser variants over the same queries)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.report import plots
from toolbench_adapter.report.html import render_page, script_json
from toolbench_adapter.report.run_compare import OUTCOME_DIFFERS, compare_runs, summary
from toolbench_adapter.report.run_data import load_run

FIRST_OUTPUTS = [  # by query id modulo 3
    'Thought: I will look it up.\nAction: {fn}\nAction Input: {{"query": "x"}}\nObservation: {{"made": "up"}}',
    'Thought: calling\nAction: {fn}\nAction Input: {{"query": "x", "n": }}',
    "I am not sure what to do here.",
]
FINISH = 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "the answer"}'
FUNCTION_NAME = re.compile(r"""["']name["']: ["']([^"']+)["']""")


def react_script(request):
    """First turn: a known malformation; then Finish. Function names come from the rendered prompt."""
    if request.key["path"] or request.key["attempt"]:
        return FINISH
    name = FUNCTION_NAME.search(request.prompt).group(1)
    return FIRST_OUTPUTS[request.key["query_id"] % len(FIRST_OUTPUTS)].format(fn=name)


def make_text_runs(root, parsers=("react-find", "react-robust")):
    """One CoT@1 run per parser on the sample set (6 queries, one per group), embedded server."""
    runs = []
    for parser in parsers:
        cfg = RunConfig(name=parser, out_root=str(root), backend="scripted", dialect="toolllama", parser=parser,
                        method="CoT@1", max_step=6)
        Runner(cfg, backend=ScriptedBackend(react_script), progress=False).run()
        runs.append(root / parser)
    return runs


@pytest.fixture(scope="module")
def text_runs(tmp_path_factory):
    return make_text_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def loaded(text_runs):
    return [load_run(path) for path in text_runs]


def by_id(run):
    return {q.query_id: q for q in run.queries}


def test_run_data_holds_trajectories_records_and_reparses(loaded):
    find, robust = loaded
    assert find.parser == "react-find" and robust.parser == "react-robust"
    assert len(find.queries) == 6 and {q.group for q in find.queries} == set(find.groups)
    assert any("not evaluated" in note for note in find.notes) and not find.evaluated
    for query in find.queries:
        inputs = [n for n in query.nodes if n["t"] == "I"]
        assert inputs and all("rec" in n for n in inputs)  # every call found its step record
        assert all("parse" in n for n in query.nodes if n["t"] == "T")
        assert query.stats["wall_seconds"] >= 0 and query.model_calls >= 2
    queries = by_id(find)
    assert queries["900001"].error_kinds == ["invalid_json"]  # 900001 % 3 == 1: the broken JSON output
    first = next(n for n in queries["900001"].nodes if n["t"] == "T")
    assert first["parse"]["e"] == "invalid_json"
    assert [s[2] for s in first["parse"]["sp"]][-1] == "bad"


def test_the_cut_region_of_a_hallucinated_observation_is_marked(loaded):
    robust = by_id(loaded[1])
    thought = next(n for n in robust["900003"].nodes if n["t"] == "T")  # 900003 % 3 == 0
    assert thought["parse"]["e"] == "hallucinated_observation"
    cut = [thought["d"][s:e] for s, e, kind in thought["parse"]["sp"] if kind == "cut"]
    assert cut == ['Observation: {"made": "up"}']
    assert thought["parse"]["calls"][0][2] is True  # react-robust decoded the arguments before the cut


def test_parser_variants_compare_with_disagreements_first(loaded):
    rows = compare_runs(loaded)
    ranks = [row.rank for row in rows]
    assert ranks == sorted(ranks, reverse=True) and len(rows) == 6
    counts = summary(rows)
    parts = ("outcome_differs", "trace_differs", "same", "missing")
    assert counts["queries"] == 6 and sum(counts[k] for k in parts) == 6 and counts["missing"] == 0
    # react-find keeps the hallucinated observation inside the arguments; react-robust cuts it: same outcome,
    # different call arguments
    differing = {row.query_id for row in rows if row.rank > 0}
    assert "900003" in differing
    for row in rows:
        if row.rank == OUTCOME_DIFFERS:
            a, b = row.cells
            assert (a.win, a.valid, a.label) != (b.win, b.valid, b.label)


def embedded(page: str, element_id: str):
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert match, element_id
    return json.loads(match.group(1))


def test_page_is_self_contained_and_embeds_every_trajectory(loaded):
    page = render_page(loaded)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<link" not in page and not re.search(r"<script[^>]+src=", page)
    data = embedded(page, "report-data")
    assert [run["name"] for run in data["runs"]] == ["react-find", "react-robust"]
    assert data["compare"]["summary"]["queries"] == 6
    for index, run in enumerate(data["runs"]):
        assert run["boards"] == []  # not evaluated
        assert len(run["queries"]) == 6
        for number, query in enumerate(run["queries"]):
            detail = embedded(page, f"d{index}_{number}")
            assert detail["nodes"]
            if query["valid"]:
                assert detail["fa_raw"].startswith("{") and query["fa"] == "the answer"
            else:  # react-robust never finds a call in the no-action output: the chain runs out of steps
                assert detail["fa_raw"] == query["fa"] == "" and run["name"] == "react-robust"
    figures = {fig["title"]: fig for fig in data["runs"][0]["figs"]}
    assert figures["Pass rate per group"]["png"] is None and "not evaluated" in figures["Pass rate per group"]["why"]
    assert figures["Error kinds per group"]["png"] and figures["Latency"]["png"]


def test_figures_are_png_or_say_why_not(loaded):
    run = loaded[0]
    assert plots.pass_rate([run]) is None
    for png in (plots.error_kinds(run), plots.latency(run)):
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # every query made two model calls: a histogram of one bar says nothing the table does not
    assert {q.model_calls for q in run.queries} == {2} and plots.steps_per_query(run) is None
    run.queries[0].stats = {**run.queries[0].stats, "query_count": 3}
    try:
        assert plots.steps_per_query(run)[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        run.queries[0].stats = {**run.queries[0].stats, "query_count": 2}


def test_script_json_cannot_close_its_script_block():
    value = {"raw": "</script><script>alert(1)</script><!-- x", "ü": "ok"}
    text = script_json(value)
    assert "<" not in text and json.loads(text) == value


def test_cli_writes_the_page_atomically_and_rejects_bad_input(text_runs, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(text_runs[0]), "--compare", str(text_runs[1]), "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o644
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert "written:" in capsys.readouterr().out
    missing = tmp_path / "missing.html"
    assert main(["report", str(tmp_path / "no-such-run"), "--out", str(missing)]) == 2
    assert "run folder not found" in capsys.readouterr().err and not missing.exists()
    assert main(["report", str(text_runs[0]), "--out", str(tmp_path / "report.txt")]) == 2
    assert main(["report", str(text_runs[0]), "--parser", "react-robsut", "--out", str(missing)]) == 2
    assert "react-robust" in capsys.readouterr().err  # did you mean
    assert not missing.exists() and list(tmp_path.glob(".*")) == []  # no temp file left behind


def test_without_out_the_page_goes_beside_the_run(text_runs, tmp_path, capsys):
    """Issue 41: `tba report RUN` without --out said "nothing to report"; it writes RUN/report.html (as make report
    and --index do), a comparison RUN/compare.html, and without RUN_DIR says so."""
    run = tmp_path / "run"
    shutil.copytree(text_runs[0], run)
    assert main(["report", str(run)]) == 0
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert f"written: {run / 'report.html'}" in capsys.readouterr().out
    assert main(["report", str(run), "--compare", str(text_runs[1])]) == 0
    assert (run / "compare.html").exists()
    capsys.readouterr()
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert "no run folder given" in err and "nothing to report" not in err and "tba report --index DIR" in err


def test_folder_of_answer_files_without_manifest_is_reparsed(text_runs, tmp_path):
    bare = tmp_path / "answers"
    for group_dir in text_runs[0].glob("G*"):
        shutil.copytree(group_dir, bare / group_dir.name)
    run = load_run(bare, parser="react-robust")
    assert run.manifest is None and any("no manifest" in note for note in run.notes)
    assert any("no steps.jsonl" in note for note in run.notes)
    queries = by_id(run)
    assert queries["900001"].error_kinds == ["invalid_json"]  # from the re-parse
    assert 3 in queries["900001"].statuses  # the stored code of the Finish call
    assert "<!DOCTYPE html>" in render_page([run])
