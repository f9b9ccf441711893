"""Leaderboard tables (Markdown, CSV, LaTeX, PNG) and the per-run error taxonomy."""

from __future__ import annotations

import csv
import io
import json

from runners.cli import main
from toolbench_adapter.evaluation.scoring.results import ScoreRow, read_score_file, write_score_file
from toolbench_adapter.evaluation.scoring.scores import Score
from toolbench_adapter.report import taxonomy
from toolbench_adapter.report.tables import build_leaderboards, to_csv, to_latex, to_markdown

# README §12.3, GPT-4-0613 (CoT), in the README column order
ROW = {"G1_instruction": (45.5, 0.4), "G1_category": (57.4, 0.3), "G1_tool": (48.8, 0.7),
       "G2_category": (43.0, 0.7), "G2_instruction": (46.5, 0.9), "G3_instruction": (48.1, 1.5)}


def readme_rows(model="GPT-4-0613", method="CoT", judge="gpt-4-turbo-2024-04-09 @ http://x/v1 [tools]"):
    return [ScoreRow(model, group, Score("SoPR", "upstream", mean, std, 100), method=method, judge=judge)
            for group, (mean, std) in ROW.items()]


def test_markdown_row_matches_the_readme_layout_and_average():
    board = build_leaderboards(readme_rows())[0]
    text = to_markdown(board)
    assert "| Method | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |" in text
    assert "| GPT-4-0613 (CoT) | 45.5±0.4 | 57.4±0.3 | 48.8±0.7 | 43.0±0.7 | 46.5±0.9 | 48.1±1.5 | 48.2±0.8 |" in text
    assert "Judge: gpt-4-turbo-2024-04-09 @ http://x/v1 [tools]" in text
    assert "denominator = judged queries" in text  # the scoring mode is labelled
    assert "GPT-4-0613 (CoT): n = I1 Inst 100, I1 Cat 100, I1 Tool 100" in text  # and each cell's denominator


def test_boards_split_by_metric_and_mode_and_mark_incomplete_averages():
    rows = readme_rows()[:2] + [ScoreRow("m", "G1_tool", Score("SoPR", "strict", 10.0, 1.0, 5))]
    boards = build_leaderboards(rows)
    assert [(b.metric, b.mode) for b in boards] == [("SoPR", "upstream"), ("SoPR", "strict")]
    body = boards[0].body()[0]
    assert body[-1] == "51.5±0.3*" and body[3] == "–"  # (45.5+57.4)/2, (0.4+0.3)/2 -> 0.35 shown as 0.3
    assert "* GPT-4-0613 (CoT): Average over 2 of 6 groups" in to_markdown(boards[0])


def test_csv_and_latex_carry_the_same_cells():
    board = build_leaderboards(readme_rows())[0]
    parsed = list(csv.reader(io.StringIO(to_csv(board))))
    assert parsed[0][:8] == ["Method", "I1 Inst", "I1 Cat", "I1 Tool", "I2 Cat", "I2 Inst", "I3 Inst", "Average"]
    assert parsed[1][:8] == ["GPT-4-0613 (CoT)", "45.5±0.4", "57.4±0.3", "48.8±0.7", "43.0±0.7", "46.5±0.9",
                             "48.1±1.5", "48.2±0.8"]
    assert parsed[1][8:10] == ["SoPR", "upstream"]
    latex = to_latex(board)
    assert r"GPT-4-0613 (CoT) & 45.5$\pm$0.4 &" in latex and r"48.2$\pm$0.8 \\" in latex
    assert r"\begin{tabular}{lccccccc}" in latex


def test_sowr_board_shows_single_numbers():
    rows = [ScoreRow("dfs", "G1_instruction", Score("SoWR", "upstream", 60.7, n=28), reference="cot")]
    line = to_markdown(build_leaderboards(rows)[0]).splitlines()[6]  # after the caption and comparability lines
    assert line.startswith("| dfs vs cot | 60.7 | – |")


def test_cli_table_from_score_files_and_label_folders(tmp_path, stb_root, capsys):
    scores = write_score_file(tmp_path / "scores.json", readme_rows())
    assert len(read_score_file(scores)) == 6
    out = tmp_path / "tables"
    labels = stb_root / "data_example" / "pass_rate_results"
    assert main(["table", str(scores), str(labels), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| virtual_chatgpt_cot | 66.7±0.0 |" in printed and "| GPT-4-0613 (CoT) | 45.5±0.4 |" in printed
    for suffix in (".md", ".csv", ".tex", ".png"):
        assert (out / f"leaderboard_sopr_upstream{suffix}").stat().st_size > 0
    assert (out / "leaderboard_sopr_upstream.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _run_folder(tmp_path):
    run = tmp_path / "run1"
    steps = [
        {"group": "G1_tool", "query_id": 1, "method": "CoT@1", "step": 1, "parser": "react-find", "error": "none",
         "rung": "strict", "call": "f_for_t", "status": 0},
        {"group": "G1_tool", "query_id": 1, "method": "CoT@1", "step": 2, "parser": "react-find",
         "error": "invalid_json", "rung": None, "call": "f_for_t", "status": 2},
        {"group": "G1_tool", "query_id": 1, "method": "CoT@1", "step": 3, "parser": "react-find", "error": "none",
         "rung": "strict", "call": "Finish", "status": 3},
        {"group": "G1_tool", "query_id": 2, "method": "CoT@1", "step": 1, "parser": "react-find",
         "error": "no_action", "rung": None, "call": None, "status": None},
        {"group": "G2_category", "query_id": 7, "method": "CoT@1", "step": 1, "parser": "react-find",
         "error": "none", "rung": "strict", "call": "nope", "status": 1},
    ]
    run.mkdir()
    (run / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (run / "G1_tool").mkdir()
    for qid, valid in ((1, True), (2, False)):
        generation = {"valid_data": valid, "final_answer": "x" if valid else "", "function": [], "query": "q",
                      "train_messages": [[{"role": "system", "content": ""}]] if valid else [], "chain": []}
        (run / "G1_tool" / f"{qid}_CoT@1.json").write_text(json.dumps(
            {"win": valid, "try_count": 1, "trys": [], "compare_candidates": [], "forward_args": {},
             "answer_generation": generation}))
    return run


def test_taxonomy_counts_status_codes_errors_and_answers(tmp_path):
    tax = taxonomy.read_taxonomy(_run_folder(tmp_path))
    tables = taxonomy.taxonomy_tables(tax)
    header, counts = tables["queries"]
    assert header == ["", "G1_tool", "G2_category", "total"]
    # the run summary's words (evaluation/scoring/counts.py); G2_category's query 7 has steps but no outcome (killed mid-query)
    assert counts == [["queries", "2", "0", "2"], ["finished", "2", "0", "2"], ["infra failures", "0", "0", "0"],
                      ["context length", "0", "0", "0"], ["valid", "1", "0", "1"], ["answered", "0", "0", "0"], ["win", "1", "0", "1"],
                      ["steps", "4", "1", "5"]]
    status = {row[0]: row[1:] for row in tables["status codes"][1]}
    assert status["0 normal"] == ["1", "0", "1"] and status["2 input_error"] == ["1", "0", "1"]
    assert status["1 no_such_function"] == ["0", "1", "1"] and status["no call"] == ["1", "0", "1"]
    errors = {row[0]: row[1:] for row in tables["parse errors"][1]}
    assert errors == {"none": ["2", "1", "3"], "invalid_json": ["1", "0", "1"], "no_action": ["1", "0", "1"]}


def test_cli_table_writes_taxonomy_for_run_folders(tmp_path, capsys):
    run = _run_folder(tmp_path)
    assert main(["table", str(run), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    md = (tmp_path / "t" / "taxonomy_run1.md").read_text()
    assert "| invalid_json | 1 | 0 | 1 |" in md and "| 3 final_answer | 1 | 0 | 1 |" in md
    assert (tmp_path / "t" / "taxonomy_run1.csv").exists()
    (run / "steps.jsonl").write_text("{broken\n")
    assert main(["table", str(run), "--out", str(tmp_path / "t")]) == 2
    assert "line 1" in capsys.readouterr().err
