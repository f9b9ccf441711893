"""One vocabulary: queries / finished / valid / answered / win (and infrastructure failures) are the same numbers
under the same names in the run summary, --json, the manifest, the error taxonomy (Markdown and CSV), the
report's data and the leaderboard footnotes of one run."""

import csv
import io
import json
import re

import pytest

from runners.cli import main
from runners.judging.evaluate import evaluate_run
from runners.models import scripted
from runners.models.base import Completion
from runners.models.scripted import default_script, scripted_call
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.html import render_page
from toolbench_adapter.report.run_data import load_run

# data/sample, DFS_woFilter_w2: one query per group, each ending differently
ANSWERS, NEVER_FINISHES, GIVES_UP, ENDPOINT_FAILS = "answers", "never finishes", "gives up", "endpoint fails"
SCRIPT = {900001: ANSWERS, 900003: NEVER_FINISHES, 900004: GIVES_UP, 900005: ENDPOINT_FAILS, 900006: ANSWERS,
          900007: ANSWERS}
# 6 queries; 5 finished (the endpoint failure is an infrastructure failure); 4 valid (a DFSDT give-up is a valid
# answer upstream's converter keeps); 3 answered (give_answer) and 3 wins
EXPECTED = {"queries": 6, "finished": 5, "infra_failures": 1, "context_length": 0, "valid": 4, "answered": 3, "win": 3}


def mixed_script(request):
    kind = SCRIPT[request.key["query_id"]]
    if kind == NEVER_FINISHES:  # a tool call every turn, never Finish: an invalid answer
        return Completion(text=None, tool_calls=[scripted_call(request.tools, 0)])
    if kind == GIVES_UP:
        finish = {"name": "Finish", "arguments": json.dumps({"return_type": "give_up_and_restart"})}
        return Completion(text=None, tool_calls=[{"id": f"call_{len(request.key.get('path', []))}",
                                                  "type": "function", "function": finish}])
    if kind == ENDPOINT_FAILS:
        return Completion(error="endpoint gave up after 3 attempts", error_kind="model_endpoint")
    return default_script(request)


class SolvedJudge:
    name = "solved-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        arguments = json.dumps({"reason": "fine", "answer_status": "Solved"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


@pytest.fixture()
def mixed_run(tmp_path, monkeypatch, capsys):
    """The run through the CLI (the scripted backend plays mixed_script), then a --json rerun (which redoes the
    endpoint failure, failing again), then evaluated with --score-anyway."""
    monkeypatch.setattr(scripted, "default_script", mixed_script)
    argv = ["run", "--name", "mixed", "--out-root", str(tmp_path), "--backend", "scripted", "--method",
            "DFS_woFilter_w2", "--max-step", "4", "--quiet"]
    assert main(argv) == 3
    summary = capsys.readouterr().out
    assert main([*argv, "--json"]) == 3
    as_json = json.loads(capsys.readouterr().out)
    run_dir = tmp_path / "mixed"
    evaluation = evaluate_run(run_dir, SolvedJudge(), evaluate_times=1, cache_path=None, progress=False,
                              score_anyway=True)
    return run_dir, summary, as_json, evaluation


def counts_of(mapping: dict) -> dict:
    return {key: mapping[key] for key in EXPECTED}


def taxonomy_totals_md(text: str) -> dict:
    """The "total" column of the taxonomy's first table, by row name."""
    section = text.split("_queries_")[1].split("_status codes_")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return {cells[0]: int(cells[-1]) for cells in rows[1:] if cells[0] != "steps"}


def taxonomy_totals_csv(text: str) -> dict:
    rows = [r for r in csv.reader(io.StringIO(text)) if r[0] == "queries"]
    return {r[1]: int(r[-1]) for r in rows[1:] if r[1] != "steps"}


def md_cells(board: str) -> list[str]:
    line = next(line for line in board.splitlines() if line.startswith("| mixed"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def as_taxonomy_names(counts: dict) -> dict:
    return {k.replace("_", " "): v for k, v in counts.items()}


def test_one_run_s_counts_agree_everywhere_under_the_same_names(mixed_run):
    run_dir, summary, as_json, evaluation = mixed_run
    # the closing summary
    assert (f"{EXPECTED['queries']} queries" in summary and
            f"finished {EXPECTED['finished']}: valid {EXPECTED['valid']}, answered {EXPECTED['answered']}, "
            f"win {EXPECTED['win']} (not judged yet)" in summary)
    assert f"INFRASTRUCTURE FAILURES {EXPECTED['infra_failures']} (model_endpoint 1)" in summary
    # --json and the manifest's totals
    assert counts_of(as_json) == EXPECTED
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert counts_of(manifest["totals"]) == EXPECTED
    # the error taxonomy tba evaluate wrote, Markdown and CSV, and the one it printed
    wanted = as_taxonomy_names(EXPECTED)
    md = (run_dir / "tables" / "taxonomy.md").read_text()
    assert taxonomy_totals_md(md) == wanted
    assert taxonomy_totals_csv((run_dir / "tables" / "taxonomy.csv").read_text()) == wanted
    assert md.split("\n", 1)[1] in evaluation.text
    # the report: its headline, in the page's data too
    run = load_run(run_dir)
    top = headline(run)
    assert {"queries": top["queries"], "finished": top["finished"], "infra_failures": top["infra"],
            "context_length": top["context_length"], "valid": top["valid"], "answered": top["answered"],
            "win": top["win"]} == EXPECTED
    page = render_page([run])
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page,
                                re.S).group(1))
    assert {k: data["runs"][0]["headline"][k] for k in ("queries", "finished", "valid", "answered", "win")} == {
        k: EXPECTED[k] for k in ("queries", "finished", "valid", "answered", "win")}
    # the leaderboards: every finished query is judged (the upstream denominator), and the footnote counts the
    # answered ones with the same word, in tba evaluate's tables and on the report page
    boards = choose_evaluation(run_dir)[0].tables_dir  # tba evaluate keeps each judge's tables apart
    upstream = (boards / "leaderboard_sopr_upstream.md").read_text()
    footnote = f"{EXPECTED['answered']} answered of {EXPECTED['queries']} queries"
    assert footnote in upstream and footnote in (boards / "leaderboard_sopr_upstream.tex").read_text()
    judged = re.search(r"n = (.*?) queries judged", upstream).group(1)  # "I1 Inst 1, I1 Cat 1, ..."
    assert sum(int(n) for n in re.findall(r"I\d \w+ (\d+)", judged)) == EXPECTED["finished"]
    # G2_instruction's one query failed at the endpoint: no number there, and the same words say why
    assert md_cells(upstream)[4] == "–" and "no score in I2 Inst (nothing judged, 0 answered of 1 query)" in upstream
    boards = data["runs"][0]["boards"]
    assert any(footnote in (board["footnote"] or "") for board in boards)


def test_the_words_are_defined_once_in_run_help(capsys):
    from toolbench_adapter.evaluation.scoring.counts import DEFINITIONS

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for word in ("finished", "valid", "answered", "win"):
        assert f"{word} {' '.join(DEFINITIONS[word].split())}" in out
    assert "answered valid queries whose final answer is a give_answer" in out
    assert "pass-rate denominator" not in DEFINITIONS["answered"]  # the denominator is the judged queries


def test_the_outcome_words_are_defined_once_in_the_library():
    """How a query ended (finished / infra_failure, the failure kinds): toolbench_adapter/outcomes.py alone assigns
    them; runners/failures.py re-exports them, and the backend contract no longer does."""
    from pathlib import Path

    import runners.failures
    import runners.models.base
    from toolbench_adapter import outcomes

    words = ("FINISHED", "INFRA_FAILURE", "UNKNOWN", "MODEL_ENDPOINT", "REPLAY_GAP", "TOOL_SERVER", "HARNESS_ERROR",
             "CONTEXT_LENGTH")
    for word in words[:2] + words[3:]:
        assert getattr(runners.failures, word) is getattr(outcomes, word)
    assert not hasattr(runners.models.base, "MODEL_ENDPOINT")
    root = Path(__file__).resolve().parent.parent
    values = "|".join(re.escape(getattr(outcomes, word)) for word in words)
    # NAME = "word", or NAMES = "...", "word" (a constant of its own, not a key or a label in a table)
    assignment = re.compile(rf'^\s*[A-Z_]+(\s*,\s*[A-Z_]+)*\s*=\s*("[^"\n]*"\s*,\s*)*"({values})"', re.M)
    assigning = sorted(path.relative_to(root).as_posix() for package in ("toolbench_adapter", "runners")
                       for path in (root / package).rglob("*.py") if assignment.search(path.read_text(encoding="utf-8")))
    assert assigning == ["toolbench_adapter/outcomes.py"]
