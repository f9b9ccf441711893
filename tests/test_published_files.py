"""`tba reproduce --published` on what is not a table printed as text (issue 35 item 4): exit 2 naming the file,
never a traceback, and never a read without bound."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from runners.cli import main
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.markdown import split_cells, split_cells_carefully
from toolbench_adapter.files import input_files

TABLE = ("| Method | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |\n|---|---|---|---|---|---|---|---|\n"
         "| A | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 | 3.5 |\n")


def refused(capsys, path) -> str:
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    return err


def test_a_binary_file_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "table.md"
    path.write_bytes(b"| a | b |\n\x00\x01\x02\xff" * 10)
    assert "binary file" in refused(capsys, path)


def test_bytes_that_are_not_utf8_are_refused_by_name(tmp_path, capsys):
    path = tmp_path / "table.md"
    path.write_bytes(TABLE.encode("utf-8") + "| B | 52,2 é |\n".encode("latin-1"))
    assert "not UTF-8 text" in refused(capsys, path)


def test_a_folder_is_refused_by_name(tmp_path, capsys):
    assert "not a regular file (a folder)" in refused(capsys, tmp_path)


def test_a_file_over_the_cap_is_refused_before_it_is_read_whole(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(input_files.KINDS, "published table",
                        dataclasses.replace(input_files.KINDS["published table"], max_bytes=100))
    path = tmp_path / "table.md"
    path.write_text(TABLE * 5)
    assert "larger than" in refused(capsys, path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "table.md"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "runners.cli", "reproduce", "--published", str(fifo), "--check-only"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_is_refused_at_once_not_read_until_memory_runs_out():
    done = subprocess.run([sys.executable, "-m", "runners.cli", "reproduce", "--published", "/dev/zero",
                           "--check-only"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "/dev/zero: not a regular file" in done.stderr


def test_a_text_table_still_reads_with_its_newlines_as_text_mode_gives_them(tmp_path):
    path = tmp_path / "table.md"
    path.write_bytes(TABLE.replace("\n", "\r\n").encode("utf-8"))
    table = published.read_table(path)
    assert [row.name for row in table.rows] == ["A"] and table.rows[0].cells["Average"].mean == 3.5


@pytest.mark.parametrize("line", ["| a | b |", "a|b", "|", "| a | b | ", "  | 52.2 ± 1.1 |  **x** |", "||", "| a |b"])
def test_the_quick_cell_split_agrees_with_the_careful_one(line):
    assert split_cells(line) == split_cells_carefully(line.strip())


def test_a_table_whose_metric_nothing_names_is_asked_about_not_guessed(tmp_path, capsys):
    """Issue 35, published tables round two: the metric was guessed from ± (SoPR) and printed as such."""
    path = tmp_path / "t.md"
    path.write_text(TABLE)
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 2
    err = capsys.readouterr().err
    assert "nothing names the metric of t.md#1" in err and f"--published-metric '{path}#1=SoWR'" in err
    assert main(["reproduce", "--published", str(path), "--check-only", "--published-metric", f"{path}#1=SoWR"]) == 0
    path.write_text("Pass rate of each model:\n\n" + TABLE)  # a paragraph above the table names it
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 0


ROUND_TWO = """\
**Pass rate:**

| Model | G1 | G2 | G3 | Overall |
|---|---|---|---|---|
| A | 12/20 (60.0%) | 10/20 (50.0%) | 4/10 (40.0%) | 26/50 (52.0%) |
"""


def test_counts_with_a_rate_level_columns_and_a_pooled_overall_read_as_papers_print_them(tmp_path, capsys):
    """Issue 35, round two: `k/n (p%)` cells are p; G1 / G2 / G3 columns are the I1 / I2 / I3 means; a pooled
    Overall (52.0 here, not the mean 50.0 of its row) is named as such and never flagged as a wrong Average."""
    path = tmp_path / "paper.md"
    path.write_text(ROUND_TWO)
    table = published.read_table(path)
    cells = table.rows[0].cells
    assert {key: cell.mean for key, cell in cells.items()} == {"I1": 60.0, "I2": 50.0, "I3": 40.0, "Overall": 52.0}
    assert published.check_averages(table) == []  # no Average: the pooled figure is not checked as one
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 0
    out = capsys.readouterr().out
    assert "Overall: pooled over every query, not the mean of the six groups" in out
    assert "DOES NOT FOLLOW" not in out


@pytest.mark.parametrize("above,metric,source", [
    ("## Results\n\nWin rate (%) against ChatGPT:\n\n", "SoWR", "the text 'Win rate (%) against ChatGPT:'"),
    ("### Pass rate\n\n- Win rate of each method, in %:\n\n", "SoWR", "the list item 'Win rate of each method, in %:'"),
    ("### Pass rate\n\n", "SoPR", "the heading 'Pass rate'"),
])
def test_the_metric_comes_from_the_nearest_text_above_the_table(tmp_path, above, metric, source):
    """Round two: a paragraph or list item nearer the table than a heading names its metric, and is named as what
    it is (it was called 'the heading')."""
    path = tmp_path / "t.md"
    path.write_text(above + TABLE)
    table = published.read_table(path)
    assert (table.metric, table.metric_source) == (metric, source)


def _pairs_as_before(rows, models):
    """The quadratic pairing this replaced (each row's words against every other row's), as the reference."""
    from toolbench_adapter.evaluation.published.names import BY_NAME, BY_WORDS, name_words, normalise

    by_norm = {}
    for model in models:
        by_norm.setdefault(normalise(model), model)
    out = {}
    for row in rows:
        if normalise(row) in by_norm:
            out[row] = (by_norm[normalise(row)], BY_NAME)
            continue
        same = [m for m in models if name_words(m) == name_words(row)]
        others = [r for r in rows if r != row and name_words(r) == name_words(row)]
        if len(same) == 1 and not others:
            out[row] = (same[0], BY_WORDS)
    return out


def test_pairing_by_name_words_is_what_it_was_row_for_row():
    """Issue 35 item 3: the pairing is now linear (words indexed); on names built to collide it pairs exactly the
    rows the old quadratic pass paired, with the same model and the same reason."""
    import random

    from toolbench_adapter.evaluation.published.names import pair_rows

    rng = random.Random(35)
    parts = ["GPT-4", "DFS", "CoT", "ToolLLaMA", "v2", "7b", "(DFS)", "/", "StepTool"]
    names = {" ".join(rng.sample(parts, rng.randint(1, 4))) for _ in range(400)}
    rows, models = sorted(names)[::2], sorted(names)[1::3] + ["dfs gpt 4", "cot_toolllama"]
    got = {row: (pair.model, pair.how) for row, pair in pair_rows(rows, models, {}).items()}
    assert got == _pairs_as_before(rows, models) and got  # and some pair at all
    assert pair_rows(["DFS / GPT-4", "DFS GPT 4"], ["gpt4_dfs"], {}) == {}  # two rows of the same words: neither
    assert pair_rows(["DFS / GPT-4"], ["gpt4_dfs"], {})["DFS / GPT-4"].model == "gpt4_dfs"


# ---- round three (issue 41): a metric named inside CJK text --------------------------------------------------

CJK_TWO_TABLES = """\
# 结果

- 下表为各模型在SoPR指标上的得分（%）：

| Model | I1-Inst. | I1-Cat. | Avg |
|---|---|---|---|
| GPT-4 | 53.1% | 52.0% | 52.6% |

| Model | I2-Inst. | I2-Cat. | Avg |
|---|---|---|---|
| GPT-4 | 43.3% | 40.1% | 41.7% |
"""


def test_a_metric_named_between_cjk_characters_names_both_tables_under_it(tmp_path, capsys):
    """Was: "nothing names the metric" (\\b finds no boundary between 在 and SoPR: both are word characters), and the
    fix then suggested SoWR for both tables (no ± in their cells)."""
    path = tmp_path / "README_zh.md"
    path.write_text(CJK_TWO_TABLES, encoding="utf-8")
    first, second = published.read_tables(path)
    assert (first.metric, second.metric) == ("SoPR", "SoPR")
    assert first.metric_source == "the list item '下表为各模型在SoPR指标上的得分（%）：'"
    assert second.metric_source.endswith("above the table before it (nothing stands between the two)")
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 0
    assert "nothing names the metric" not in capsys.readouterr().err


@pytest.mark.parametrize("sentence,metric", [
    ("在SoPR上的结果", "SoPR"), ("本表为SoWR（胜率）", "SoWR"), ("各模型的通过率如下", "SoPR"), ("胜率如下", "SoWR"),
    ("SoPR的结果", "SoPR"), ("结果（ＳｏＰＲ）", "SoPR"), ("の FAC です", "FAC"), ("Pass rate:", "SoPR"),
    ("bypass rates", None), ("SoPRx results", None), ("G3_instruction_WinRate", None), ("FACT sheet", None),
])
def test_word_boundaries_do_not_split_cjk_text_but_still_split_latin_words(sentence, metric):
    from toolbench_adapter.evaluation.published.columns import metric_in_text

    assert metric_in_text(sentence) == metric


def test_a_suggestion_never_contradicts_text_that_names_the_metric(tmp_path, capsys):
    """A sentence naming SoPR but too far above the table (or beside another metric) does not name the table's
    metric, yet the fix's suggestion follows it rather than the cells' guess (SoWR: no ±)."""
    far = "本节的指标是SoPR。\n\n" + "".join(f"第{i}段说明。\n\n" for i in range(10)) + TABLE
    path = tmp_path / "far.md"
    path.write_text(far, encoding="utf-8")
    assert main(["reproduce", "--published", str(path), "--check-only"]) == 2
    err = capsys.readouterr().err
    assert "nothing names the metric of far.md#1" in err
    assert "far.md#1=SoPR'" in err and "names SoPR" in err and "=SoWR" not in err
    both = tmp_path / "both.md"
    both.write_text("本文报告SoPR和SoWR两个指标。\n\n" + TABLE, encoding="utf-8")
    assert main(["reproduce", "--published", str(both), "--check-only"]) == 2
    err = capsys.readouterr().err
    assert "names SoPR and SoWR" in err and "check it against the paper" in err
