"""Published tables: reading (Markdown / CSV, either column order), the Average check, the shipped data and its
provenance, and the cell-by-cell marks."""

from __future__ import annotations

import re

import pytest

from runners.cli import main
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.scoring.aggregates import BoardLine
from toolbench_adapter.evaluation.scoring.scores import Score

SOWR_ORDER = """\
| Method | I1 Instruction | I1 Category | I1 Tool | I2 Instruction | I2 Category | I3 Instruction | Average |
|---|---|---|---|---|---|---|---|
| A | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 | 3.5 |
"""


def test_columns_are_read_by_name_in_either_order(tmp_path):
    path = tmp_path / "sowr.md"
    path.write_text("some text first\n\n" + SOWR_ORDER)
    table = published.read_table(path)
    row = table.rows[0]
    assert table.metric == "SoWR"  # no ± anywhere
    assert row.cells["G2_instruction"].mean == 4.0 and row.cells["G2_category"].mean == 5.0
    assert published.check_average(table, row).mark == published.FOLLOWS


@pytest.mark.parametrize(("header", "key"), [("I1 Inst", "G1_instruction"), ("I2 Category", "G2_category"),
                                             ("G3_instruction_WinRate", "G3_instruction"), ("I1-Tool", "G1_tool"),
                                             ("Average", "Average"), ("WinRate", "Average"), ("Avg", "Average"),
                                             ("G1_tool_StdError", None), ("Method", None)])
def test_column_key(header, key):
    assert published.column_key(header) == key


def test_a_malformed_table_is_read_as_far_as_it_goes_and_says_what_it_left(tmp_path):
    path = tmp_path / "bad.md"
    path.write_text(SOWR_ORDER.replace("| 3.0 |", "| three |"))
    table = published.read_table(path)  # one unreadable cell no longer stops the file: it is named
    assert table.rows[0].unreadable == {"G1_tool": "three"} and len(table.rows[0].cells) == 6
    assert "unreadable cell (not compared): A, I1 Tool: 'three' (line 3)" in "\n".join(published.reading_lines(table))
    path.write_text(SOWR_ORDER.replace("| 6.0 | 3.5 |", "| 6.0 |"))
    with pytest.raises(InputError, match="line 3: 7 cells where the header has 8"):
        published.read_table(path)
    path.write_text("no table here\n")
    with pytest.raises(InputError, match="no readable published table"):
        published.read_table(path)
    path.write_text(SOWR_ORDER.splitlines()[0] + "\n")
    with pytest.raises(InputError, match="no readable published table"):
        published.read_table(path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="no readable published table"):
        published.read_table(empty)


def test_shipped_tables_carry_their_provenance():
    index = published.shipped_index()
    ids = {t["id"] for t in index}
    assert {"stb-gpt-cache-sopr", "stb-gpt-cache-sowr", "stb-mirrorapi-sopr",
            "toolbench-leaderboard-chatgpt-dfsdt", "toolbench-leaderboard-gpt35-cot"} <= ids
    for entry in index:
        assert re.fullmatch(r"[0-9a-f]{40}", entry["source"]["commit"]), entry["id"]
        assert entry["source"]["repo"] and entry["source"]["path"]
        table = published.read_table(published.DATA_DIR / entry["file"], meta=entry)
        assert table.rows and all(len(r.cells) >= 7 for r in table.rows), entry["id"]
    sopr = published.load_published("stb-gpt-cache-sopr")[0]
    assert sopr.metric == "SoPR" and len(sopr.rows) == 10
    assert sopr.rows[0].cells["G1_instruction"].text == "52.2±1.1"
    assert sopr.provenance == "THUNLP-MT/StableToolBench README.md @ aa4ed9f"


def test_average_check_flags_the_readme_rows_that_do_not_follow():
    sowr = published.load_published("stb-gpt-cache-sowr")[0]
    checks = {c.row.name: c for c in published.check_averages(sowr)}
    bad = checks["ToolLLaMA v2 (DFS)"]
    assert bad.mark == published.NOT_FOLLOWING and f"{bad.mean:.1f}" == "46.1" and bad.printed.text == "54.0"
    assert checks["GPT-4-Turbo-Preview (DFS)"].mark == published.ROUNDING  # 70.27 printed as 70.2
    assert [c.mark for c in checks.values()].count(published.NOT_FOLLOWING) == 1
    mirror = {c.row.name: c for c in published.check_averages(published.load_published("stb-mirrorapi-sopr")[0])}
    assert mirror.pop("GPT 4o CoT").mark == published.STD_DIFFERS  # 32.0 follows; only the ± is another one
    assert all(c.mark == published.NOT_FOLLOWING for c in mirror.values())
    gpt_cache = published.load_published("stb-gpt-cache-sopr")[0]
    assert all(c.mark != published.NOT_FOLLOWING for c in published.check_averages(gpt_cache))


def test_check_only_prints_the_shipped_tables_consistency(capsys):
    assert main(["reproduce", "--published", "stb", "--check-only"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("ToolLLaMA v2 (DFS)") and "54.0" in x)
    assert "46.067" in line and "DOES NOT FOLLOW" in line
    assert "SoPR (THUNLP-MT/StableToolBench README.md @ aa4ed9f): 10 of 10 printed Averages follow" in out
    assert "MirrorAPI-Cache system, SoPR" in out and "1 of 6 printed Averages follow" in out
    assert main(["reproduce", "--check-only"]) == 2  # nothing to check
    assert main(["reproduce", "--published", "nosuch", "--check-only"]) == 2


def test_toolbench_csv_reads_fractions_and_skips_std_errors():
    table = published.load_published("toolbench-leaderboard-gpt35-cot")[0]
    row = table.rows[0]
    assert row.name == "llama-65B-finetuned-5k_CoT" and table.scale == 100
    assert set(row.cells) == {"G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category",
                              "G3_instruction", "Average"}
    assert row.cells["Average"].mean == 0.675


def _line(name: str, **means: float) -> BoardLine:
    return BoardLine(name, name, cells={g: Score("SoPR", "upstream", m, 1.0, 10, [m - 1, m + 1])
                                        for g, m in means.items()})


def test_cells_are_marked_exact_within_rounding_or_differs(tmp_path):
    path = tmp_path / "t.md"
    path.write_text("| Method | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |\n|---|---|---|---|---|---|---|---|\n"
                    "| My Model | 50.0±1.0 | 40.0±1.0 | 30.0±1.0 | 20.0±1.0 | 10.0±1.0 | 0.0±1.0 | 25.0±1.0 |\n"
                    "| Other | 1.0±1.0 | 1.0±1.0 | 1.0±1.0 | 1.0±1.0 | 1.0±1.0 | 1.0±1.0 | 1.0±1.0 |\n")
    table = published.read_table(path)
    line = _line("my_model", G1_instruction=50.04, G1_category=40.09, G1_tool=31.0, G2_category=20.0,
                 G2_instruction=10.0, G3_instruction=0.0)
    result = published.compare(table, [line])  # "My Model" matches my_model up to case and punctuation
    marks = {c.column: c.mark for c in result.cells if c.row.name == "My Model"}
    assert marks["G1_instruction"] == published.EXACT  # 50.04 prints 50.0
    assert marks["G1_category"] == published.ROUNDING  # 40.09 prints 40.1: one unit off
    assert marks["G1_tool"] == published.DIFFERS
    assert marks["Average"] == published.DIFFERS  # (50.04 + 40.09 + 31 + 20 + 10 + 0) / 6 = 25.19
    assert result.summary == ("4 of 14 published cells reproduced exactly, 1 within rounding, 2 differ, "
                              "7 without labels, 0 not reported")
    explicit = published.compare(table, [_line("zzz", G1_instruction=1.0)], {"Other": "zzz"})
    assert [c.mark for c in explicit.cells if c.column == "G1_instruction"] == [published.NO_LABELS, published.EXACT]
