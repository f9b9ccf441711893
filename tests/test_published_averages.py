"""The Average check keeps the ± apart from the mean: a mean that follows with another ± convention is not a
wrong Average, and each source's ± convention is named from its own cells."""

from __future__ import annotations

import statistics

from runners.cli import main
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.averages import (
    MEAN_OF_STDS,
    ROUNDING,
    STD_OF_MEANS,
    followed_by,
)

HEADER = "| Model | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |\n|---|---|---|---|---|---|---|---|\n"


def _line(out: str, start: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(start))


def test_a_matching_mean_with_another_plus_minus_is_not_flagged(capsys):
    assert main(["reproduce", "--published", "stb-mirrorapi-sopr", "--check-only"]) == 0
    out = capsys.readouterr().out
    line = _line(out, "GPT 4o CoT")
    assert "printed 32.0±2.2" in line and "DOES NOT FOLLOW" not in line and "<--" not in line
    assert "mean follows, ± differs (printed: 2.2; mean of cell stds: 1.700)" in line
    assert "1 of 6 printed Averages follow from their six cells (0 only within rounding), 5 do not; 1 of those " \
           "that follow print another ± (mean follows, ± differs)" in out
    assert "DOES NOT FOLLOW" in _line(out, "GPT 4o DFS")  # a mean that does not follow is still flagged


def test_each_source_says_its_plus_minus_convention(capsys):
    assert main(["reproduce", "--published", "stb", "--check-only"]) == 0
    out = capsys.readouterr().out
    blocks = {b.split(" (")[0]: b for b in out.split("Averages of ")[1:]}
    assert "± convention: mean of the cell stds (10 of 10 rows)" in blocks[
        "StableToolBench README, GPT-based caching system, SoPR"]
    mirror = blocks["StableToolBench README, MirrorAPI-Cache system, SoPR"]
    assert ("± convention: no single one: mean of the cell stds in 1 of 6 rows, std of the per-group means in 0; "
            "1 could be the std over repeats of the average") in mirror
    assert "4 print a ± above the mean of their cell stds, which no std over repeats of the average can be" in mirror
    assert "± convention" not in blocks["StableToolBench README, GPT-based caching system, SoWR"]  # no ± printed


def test_a_table_whose_plus_minus_is_the_std_of_the_group_means(tmp_path):
    means = [50.0, 40.0, 30.0, 20.0, 10.0, 0.0]
    std = statistics.pstdev(means)  # 17.08
    path = tmp_path / "t.md"
    path.write_text(HEADER + "| A | " + " | ".join(f"{m:.1f}±1.0" for m in means) + f" | 25.0±{std:.1f} |\n"
                    + "| B | " + " | ".join(f"{m + 1:.1f}±2.0" for m in means) + f" | 26.0±{std:.1f} |\n")
    checks = published.check_averages(published.read_table(path))
    assert [c.mark for c in checks] == [published.STD_DIFFERS] * 2
    assert all(c.conventions == [STD_OF_MEANS] for c in checks)
    assert "which it follows" in checks[0].verdict
    text = published.averages_text([published.read_table(path)])
    assert "± convention: std of the per-group means (2 of 2 rows)" in text and "DOES NOT FOLLOW" not in text


def test_rounded_cells_or_unrounded_values(tmp_path):
    path = tmp_path / "t.md"
    # B: the six rounded cells give 3.567, which prints 3.6; printed 3.5 can only come from unrounded values
    path.write_text(HEADER + "| A | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 | 3.5 |\n| B | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.4 | 3.5 |\n")
    table = published.read_table(path)
    a, b = published.check_averages(table)
    assert a.mean_mark == published.FOLLOWS and "follows the six rounded cells" in a.verdict
    assert b.mean_mark == ROUNDING and "not the six rounded cells, unrounded values can give it" in b.verdict
    assert followed_by(table.rows[0], 3.46) == ("Average 3.5 follows both the six rounded cells and the unrounded "
                                                "values (six rounded cells 3.500, unrounded values 3.460)")
    assert "follows the unrounded values, not the six rounded cells" in followed_by(table.rows[1], 3.54)
    assert "follows neither" in followed_by(table.rows[1], 3.71)
    assert MEAN_OF_STDS not in a.conventions  # no ± printed: no convention to name


def test_half_way_figures_follow_either_rounding_rule():
    from toolbench_adapter.evaluation.published.cells import prints_as

    mean = statistics.fmean([61.0, 58.8, 45.6, 60.3, 53.5, 48.1])  # 54.55, computed as 54.549999...
    assert prints_as(mean, 54.6, 1) and prints_as(0.125, 0.12, 2) and prints_as(0.125, 0.13, 2)
    assert not prints_as(54.54, 54.6, 1)
    sopr = published.load_published("stb-gpt-cache-sopr")[0]
    checks = {c.row.name: c for c in published.check_averages(sopr)}
    assert checks["GPT-3.5-Turbo-1106 (DFS)"].mark == published.FOLLOWS  # 62.15 printed 62.2: half up


def test_the_full_output_names_every_average_not_simply_from_its_cells(tmp_path, capsys, monkeypatch):
    from tests.test_reproduce import per_model_set

    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    labels, _ids = per_model_set(tmp_path)  # my_model: G1_instruction 50.0±0.0, the rest 100.0±0.0
    path = tmp_path / "t.md"
    path.write_text(HEADER + "| my_model | 50.0±0.0 | " + "100.0±0.0 | " * 5 + "91.7±0.0 |\n"
                    "| Near | 10.0 | 10.0 | 10.0 | 10.0 | 10.0 | 10.2 | 10.1 |\n"  # 10.033 printed 10.1
                    "| Wrong | 10.0 | 10.0 | 10.0 | 10.0 | 10.0 | 10.2 | 12.0 |\n")
    assert main(["reproduce", "--labels", str(labels), "--published", str(path), "--published-metric", "SoPR"]) == 0
    averages = capsys.readouterr().out.split("Averages of ")[1]
    assert "2 of 3 printed Averages follow from their six cells (1 only within rounding), 1 do not" in averages
    near = _line(averages, "Near")  # counted "only within rounding", so named too
    assert "printed 10.1" in near and "within rounding: not the six rounded cells" in near
    assert "DOES NOT FOLLOW" in _line(averages, "Wrong")
    assert "my_model" not in averages  # an Average that simply follows its cells is only counted
