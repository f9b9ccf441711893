"""The sweep matrix (toolbench_adapter/report/sweep_matrix.py): real cell run folders (the scripted model through
the Runner, judged by evaluate_run) under OUT/NAME, a sweep.json in TEAM's format, and the rows, files and the
`tba report --index` front page built from them."""

from __future__ import annotations

import csv
import itertools
import json
import re
import threading
import time
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend
from tests.test_report_chromium import chromium  # noqa: F401 (a fixture)
from toolbench_adapter.errors import InputError
from toolbench_adapter.report.sweep_matrix import build_matrix, read_sweep, write_matrix
from toolbench_adapter.report.sweep_matrix_render import header, row_texts

BASE = "CoT@1__react-find"
DELTA = f"ΔSoPR vs {BASE} (95% CI)"
FAILED = "DFS_woFilter_w2__react-robust"
DEAD = "model endpoint http://127.0.0.1:9/v1 refused the connection"


class AlternatingJudge:
    """Solved, then Unsolved, call after call (one at a time): the two repeats disagree, so SoPR has a ±; a final
    answer that says the call's result was not had (react-find's misread arguments) is Unsolved every time."""

    name = model = "alternating-judge"
    supports_tools = True

    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        with self.lock:
            self.calls += 1
            odd = self.calls % 2
        text = messages[-1]["content"]
        status = "Unsolved" if "could not get the result" in text or not odd else "Solved"
        arguments = json.dumps({"reason": "by rule", "answer_status": status})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


def cell_record(method, parser, evaluation=None, state="done", reason=None):
    name = f"{method}__{parser}"
    return {"name": name, "axes": {"method": method, "parser": parser}, "run_dir": name, "state": state,
            "reason": reason, "redo": f"tba sweep demo.yaml --cells {name}",
            "evaluations": {"judge-x": evaluation}, "seconds": None}


def sweep_record(cells, baseline=BASE):
    return {"format": "tba-sweep/1", "name": "demo", "spec_file": "/abs/demo.yaml", "spec": {},
            "spec_sha256": "0" * 64, "axes": ["method", "parser"], "baseline": baseline,
            "judges": [{"label": "judge-x", "settings": {"backend": "openai", "evaluate_times": 2}}],
            "cells": cells, "sessions": []}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """OUT/demo: three cells run and judged (2 repeats), the fourth failed (its endpoint dead, no folder)."""
    root = tmp_path_factory.mktemp("sweeps") / "demo"
    cells = []
    for method, parser in itertools.product(["CoT@1", "DFS_woFilter_w2"], ["react-find", "react-robust"]):
        if f"{method}__{parser}" == FAILED:
            cells.append(cell_record(method, parser, state="failed", reason=DEAD))
            continue
        cfg = RunConfig(name=f"{method}__{parser}", out_root=str(root), backend="scripted", dialect="toolllama",
                        parser=parser, method=method, tool_root="data/sample/toolenv/tools")
        Runner(cfg, backend=ScriptedBackend(script=react_script), progress=False).run()
        result = evaluate_run(root / cfg.name, AlternatingJudge(), evaluate_times=2, concurrency=1,
                              cache_path=str(root.parent / f"judge-{cfg.name}.jsonl"), progress=False)
        cells.append(cell_record(method, parser, result.evaluation_id))
    (root / "sweep.json").write_text(json.dumps(sweep_record(cells)), encoding="utf-8")
    return root


def rows_by_cell(matrix):
    return {row.cell: row for row in matrix.rows}


def table_average(run_dir: Path, out: Path, capsys) -> str:
    """The Average cell `tba table RUN` prints for the run's row (the leaderboard's SoPR upstream)."""
    capsys.readouterr()
    assert main(["table", str(run_dir), "--out", str(out), "--no-png"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"| {run_dir.name} (")]
    return lines[0].strip("| ").split(" | ")[-1]


def test_a_row_per_cell_with_its_axes_and_the_sopr_tba_table_prints(sweep, tmp_path, capsys):
    matrix = build_matrix(sweep)
    assert [row.cell for row in matrix.rows] == [BASE, "CoT@1__react-robust", "DFS_woFilter_w2__react-find", FAILED]
    assert header(matrix) == ["cell", "method", "parser", "judge", "state", "SoPR", "n", "valid turns",
                              "model calls", "tokens", "seconds", "latency p50 / p95 (s)", "cost", DELTA, "comparable"]
    rows = rows_by_cell(matrix)
    assert row_texts(matrix, rows["DFS_woFilter_w2__react-find"])[1:4] == ["DFS_woFilter_w2", "react-find", "judge-x"]
    for name in (BASE, "CoT@1__react-robust", "DFS_woFilter_w2__react-find"):
        texts = dict(zip(header(matrix), row_texts(matrix, rows[name]), strict=True))
        assert "±" in texts["SoPR"] and texts["SoPR"] == table_average(sweep / name, tmp_path / name, capsys)
        assert texts["n"] == "6" and texts["state"] == "done"
        manifest = json.loads((sweep / name / "manifest.json").read_text())
        assert texts["model calls"] == str(manifest["totals"]["model_calls"])
        assert texts["tokens"] == str(manifest["totals"]["total_tokens"])
        totals = manifest["totals"]
        assert texts["valid turns"] == (f"{totals['valid_turns'] / totals['model_turns']:.1%} "
                                        f"({totals['valid_turns']}/{totals['model_turns']})")
        # the scripted backend, data/sample, a rule judge: not the leaderboard's
        assert texts["comparable"].startswith("no: agent, queries")


def test_the_paired_column_is_compare_parsers_runs_difference_and_the_baseline_is_marked(sweep, tmp_path, capsys):
    matrix = build_matrix(sweep)
    rows = rows_by_cell(matrix)
    texts = {name: dict(zip(header(matrix), row_texts(matrix, row), strict=True))[DELTA] for name, row in rows.items()}
    assert texts[BASE] == "baseline" and rows[BASE].baseline
    capsys.readouterr()
    assert main(["compare-parsers", "--runs", str(sweep / BASE), str(sweep / "CoT@1__react-robust"), "--out",
                 str(tmp_path / "cmp")]) == 0
    headline = capsys.readouterr().out.splitlines()[0]  # react-robust: +16.7 points over react-find on 6 queries, ...
    found = re.match(r"react-robust: ([+-][\d.]+) points over react-find on 6 queries, 95% CI \[(\S+), (\S+)\]",
                     headline)
    assert found, headline
    # never a bare difference (issue 42): the interval touches 0, so what would settle it follows
    assert texts["CoT@1__react-robust"] == (f"{found[1]} [{found[2]}, {found[3]}] (n=6): not settled: about 13 more "
                                            "queries would detect the observed difference (one trial per query: "
                                            "whether more trials would is not known; trials: K measures it)")
    assert found[1] != "+0.0"  # the parsers differ: the column shows a real difference
    assert texts["DFS_woFilter_w2__react-find"] == "+0.0 [+0.0, +0.0] (n=6): not settled: no difference observed"
    assert texts[FAILED] == ""  # no numbers, so nothing to pair


def test_a_failed_cell_keeps_its_row_with_its_reason_and_no_numbers(sweep, tmp_path):
    matrix = build_matrix(sweep)
    row = rows_by_cell(matrix)[FAILED]
    texts = dict(zip(header(matrix), row_texts(matrix, row), strict=True))
    assert texts["state"] == f"failed: {DEAD}; redo: tba sweep demo.yaml --cells {FAILED}"
    assert all(texts[column] == "" for column in ("SoPR", "n", "valid turns", "model calls", "tokens", "seconds"))
    assert any(FAILED in note and DEAD in note for note in matrix.notes)


def test_a_done_cell_without_this_judges_evaluation_is_listed_not_judged(sweep, tmp_path):
    data = json.loads((sweep / "sweep.json").read_text())
    data["cells"][1]["evaluations"] = {"judge-x": None}
    for cell in data["cells"]:
        cell["run_dir"] = str(sweep / cell["run_dir"])  # absolute: this sweep.json lives elsewhere
    data["cells"][2]["run_dir"] = str(tmp_path / "gone")  # done, but its folder is not there: listed, with why
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    rows = rows_by_cell(build_matrix(tmp_path))
    row = rows["CoT@1__react-robust"]
    assert row.state == "not judged" and "no evaluation by judge-x" in row.reason and row.sopr is None
    gone = rows["DFS_woFilter_w2__react-find"]
    assert gone.state == "unreadable" and str(tmp_path / "gone") in gone.reason and gone.sopr is None


def test_a_cell_judged_by_its_own_model_is_marked_self_judged(tmp_path):
    cfg = RunConfig(name="CoT@1__react-find", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    parser="react-find", groups=["G1_instruction"], tool_root="data/sample/toolenv/tools")
    Runner(cfg, backend=ScriptedBackend(script=react_script), progress=False).run()
    judge = AlternatingJudge()
    judge.model = "scripted"  # the run's own model
    result = evaluate_run(tmp_path / cfg.name, judge, evaluate_times=1, judge_self=True, progress=False,
                          cache_path=str(tmp_path / "judge.jsonl"))
    data = sweep_record([cell_record("CoT@1", "react-find", result.evaluation_id)], baseline=None)
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    matrix = build_matrix(tmp_path)
    texts = dict(zip(matrix.columns, row_texts(matrix, matrix.rows[0]), strict=True))
    assert texts["judge"] == "judge-x (self-judged)" and "±" not in texts["SoPR"]  # one repeat: no ±
    assert texts["comparable"].startswith("no: ") and "judge" in texts["comparable"]


def test_the_files_are_written_with_a_title_notes_and_the_named_paired_column(sweep):
    written = write_matrix(build_matrix(sweep), sweep)
    assert [p.name for p in written] == ["matrix.csv", "matrix.md", "matrix.tex"]
    md = (sweep / "matrix.md").read_text(encoding="utf-8").splitlines()
    assert md[0] == "# Sweep demo: 4 rows (cell × judge)"
    assert any(line.startswith(f"| {BASE} | CoT@1 | react-find | judge-x | done |") and "| baseline |" in line
               for line in md)
    assert any("n shared queries" in line for line in md) and any("not audited" in line for line in md)
    rows = list(csv.DictReader((sweep / "matrix.csv").open(encoding="utf-8")))
    assert [r["cell"] for r in rows] == [BASE, "CoT@1__react-robust", "DFS_woFilter_w2__react-find", FAILED]
    assert rows[0][f"ΔSoPR vs {BASE}"] == "baseline" and rows[1]["shared_queries"] == "6"
    assert rows[3]["state"] == "failed" and DEAD in rows[3]["reason"] and rows[3]["sopr"] == ""
    assert rows[0]["judge_repeats"] == "2" and rows[0]["comparability"].startswith("not comparable with")
    assert rows[0]["self_judged"] == "False"
    tex = (sweep / "matrix.tex").read_text(encoding="utf-8")
    assert r"\begin{tabular}" in tex and r"$\Delta$SoPR vs CoT@1\_\_react-find" in tex


def test_no_baseline_no_paired_column(sweep, tmp_path):
    data = json.loads((sweep / "sweep.json").read_text())
    data["baseline"] = None
    for cell in data["cells"]:
        cell["run_dir"] = str(sweep / cell["run_dir"])
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    matrix = build_matrix(tmp_path)
    assert not any(h.startswith("ΔSoPR") for h in header(matrix)) and not any(r.baseline for r in matrix.rows)


@pytest.mark.parametrize(("text", "field"), [
    ("{not json", None),
    (json.dumps({"format": "other"}), "format"),
    (json.dumps({**sweep_record([]), "cells": []}), "cells"),
    (json.dumps(sweep_record([{**cell_record("CoT@1", "react-find"), "state": "finished"}])), "cells[0].state"),
    (json.dumps(sweep_record([cell_record("CoT@1", "react-find")], baseline="nope")), "baseline"),
])
def test_a_malformed_sweep_json_is_an_input_error_naming_the_file(tmp_path, text, field):
    (tmp_path / "sweep.json").write_text(text)
    with pytest.raises(InputError) as caught:
        read_sweep(tmp_path)
    assert caught.value.path == str(tmp_path / "sweep.json") and caught.value.field == field and caught.value.fix


def test_a_missing_sweep_json_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not a sweep folder"):
        build_matrix(tmp_path)


def test_report_index_starts_with_the_matrix_each_cell_linking_to_its_run_page(sweep, capsys):
    assert main(["report", "--index", str(sweep)]) == 0
    page = (sweep / "index.html").read_text(encoding="utf-8")
    matrix, runs = page.index('<section id="matrix">'), page.index("<th>infrastructure failures</th>")
    assert matrix < runs  # the matrix first, the run list below it
    assert '<a href="CoT%401__react-find/report.html">CoT@1__react-find</a>' in page[matrix:runs]
    assert (sweep / BASE / "report.html").is_file() and f"<th>{DELTA}</th>" in page
    assert f"failed: {DEAD}" in page[matrix:runs]  # the failed cell is on the front page too


def test_report_index_on_a_malformed_sweep_json_is_exit_2(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "sweep.json").write_text("[]")
    assert main(["report", "--index", str(tmp_path)]) == 2
    assert "sweep.json" in capsys.readouterr().err and not (tmp_path / "index.html").exists()


def test_report_index_fits_a_1400_px_window_in_chromium(sweep, chromium, tmp_path, capsys):  # noqa: F811
    """Was: every cell of the index's tables kept to one line, so a failed cell's reason and the comparability
    column pushed the last columns past a 1,400 px window (3,155 px here): they wrap now."""
    from tests.test_report_chromium import Chrome, assert_fits

    assert main(["report", "--index", str(sweep)]) == 0
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        url = (sweep / "index.html").as_uri()
        chrome.send("Page.navigate", page=True, url=url)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not chrome.js(f"location.href === {json.dumps(url)} && "
                                                           "document.readyState === 'complete'"):
            time.sleep(0.05)
        assert chrome.js("document.querySelectorAll('#matrix td').length") > 0
        assert_fits(chrome, "sweep index")
    finally:
        chrome.close()


def test_the_latex_matrix_of_a_sweep_of_trials_escapes_pass_hat_k(tmp_path):
    """LaTeX reads a bare ^ as a superscript outside math mode and stops: the header 'pass@3 / pass^3' must be
    escaped, as in every LaTeX table the project writes (one escaper, report/tables.py)."""
    from toolbench_adapter.report.sweep_matrix_render import Matrix, to_latex

    text = to_latex(Matrix(name="s~1", axes=["parser"], baseline=None, rows=[], notes=[], sweep_dir=tmp_path,
                           trials=3))
    assert r"pass@3 / pass\^{}3" in text and r"s\~{}1" in text
    assert "^3" not in text.replace(r"\^{}3", "")
