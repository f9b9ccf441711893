"""SoPR / SoWR arithmetic: upstream's formulas, the strict and corrected variants, label files both ways."""

from __future__ import annotations

import json

import pytest

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.scoring.results import rows_from_labels
from toolbench_adapter.evaluation.scoring.scores import average, sopr, sowr
from toolbench_adapter.evaluation.storage import read_label_file, read_preference_file, write_label_files

S, U, N = Label.SOLVED, Label.UNSURE, Label.UNSOLVED


def test_label_parsing_round_trips_upstream_strings():
    assert Label.parse("AnswerStatus.Solved") is S and S.stored() == "AnswerStatus.Solved"
    assert Label.parse("AnswerStatus.Unsure") is U and Label.parse("Unsolved") is N
    assert Label.parse("garbage") is Label.ERROR and Label.ERROR.points == 0


def test_sopr_upstream_per_repeat_mean_and_population_std():
    labels = {"1": {0: S, 1: S, 2: N}, "2": {0: U, 1: N, 2: N}, "3": {0: S, 1: S}}  # repeat 2 missing for 3
    score = sopr(labels)
    # repeat 0: (1 + .5 + 1)/3, repeat 1: (1 + 0 + 1)/3, repeat 2: (0 + 0 + 0)/3 (missing counts 0)
    runs = [2.5 / 3, 2 / 3, 0.0]
    assert score.runs == pytest.approx([r * 100 for r in runs])
    mean = sum(runs) / 3
    std = (sum((r - mean) ** 2 for r in runs) / 3) ** 0.5  # ddof = 0, like np.std
    assert score.mean == pytest.approx(mean * 100) and score.std == pytest.approx(std * 100)
    assert score.n == 3


def test_strict_denominator_is_the_test_set_and_missing_answers_are_unsolved():
    labels = {"1": {0: S, 1: S}, "2": {0: S, 1: N}, "99": {0: S, 1: S}}  # 99 is not a test id
    upstream = sopr(labels)
    strict = sopr(labels, mode="strict", test_ids=["1", "2", "3", "4"])
    assert upstream.n == 3 and upstream.mean == pytest.approx((3 / 3 + 2 / 3) / 2 * 100)
    assert strict.n == 4 and strict.missing == 2
    assert strict.runs == pytest.approx([50.0, 25.0])
    assert strict.mean == pytest.approx(37.5) and strict.std == pytest.approx(12.5)
    with pytest.raises(InputError):
        sopr(labels, mode="strict")


def test_evaluate_times_override_counts_absent_repeats_as_zero():
    labels = {"1": {0: S}, "2": {0: S}}
    assert sopr(labels).runs == [100.0]
    assert sopr(labels, evaluate_times=2).runs == [100.0, 0.0]


def test_sowr_upstream_ignores_ties_corrected_counts_half():
    wins = {"1": (0, 3), "2": (1, 1), "3": (2, 1), "4": (0, 0)}  # win, tie, lose, tie
    assert sowr(wins).mean == pytest.approx(25.0) and sowr(wins).ties == 2
    assert sowr(wins, mode="corrected").mean == pytest.approx(50.0)


# README §12.3 rows (six group means/stds in the README column order) and their printed Average
README_ROWS = [
    ("GPT-3.5-Turbo-0613 (CoT)", "52.2±1.1 47.3±0.6 53.6±1.3 42.5±2.1 35.8±2.0 48.1±0.8", "46.6±1.3"),
    ("GPT-3.5-Turbo-0613 (DFS)", "60.3±1.3 66.2±1.2 67.1±0.0 59.1±0.4 51.3±1.2 73.8±2.3", "63.0±1.1"),
    ("GPT-4-0613 (CoT)", "45.5±0.4 57.4±0.3 48.8±0.7 43.0±0.7 46.5±0.9 48.1±1.5", "48.2±0.8"),
    ("GPT-4-0613 (DFS)", "57.3±0.6 57.3±0.3 60.9±1.0 57.9±1.0 51.3±0.8 66.4±2.4", "58.5±1.0"),
    ("ToolLLaMA v2 (CoT)", "51.8±0.4 53.1±0.6 46.4±1.2 51.6±1.1 48.9±0.4 37.2±0.8", "48.2±0.8"),
    ("ToolLLaMA v2 (DFS)", "61.0±1.8 58.8±0.5 45.6±0.9 60.3±1.3 53.5±1.8 48.1±1.5", "54.6±1.3"),
    ("GPT-3.5-Turbo-1106 (CoT)", "50.4±0.5 45.1±1.4 50.8±0.3 48.7±0.8 42.1±0.4 55.7±0.0", "48.8±0.6"),
    ("GPT-3.5-Turbo-1106 (DFS)", "62.8±0.3 63.9±1.2 65.6±0.3 56.5±0.7 56.9±1.2 67.2±1.3", "62.2±0.8"),
    ("GPT-4-Turbo-Preview (CoT)", "52.8±1.3 56.6±0.9 51.9±0.5 51.9±1.0 52.8±0.8 52.5±0.0", "53.1±0.8"),
    ("GPT-4-Turbo-Preview (DFS)", "59.2±0.5 61.7±0.7 65.7±1.0 55.6±0.6 55.2±0.4 66.1±4.3", "60.6±1.3"),
]


def readme_scores(cells: str):
    from toolbench_adapter.evaluation.scoring.scores import Score

    return [Score("SoPR", "upstream", *map(float, cell.split("±"))) for cell in cells.split()]


@pytest.mark.parametrize(("name", "cells", "expected"), README_ROWS)
def test_average_is_mean_of_means_and_mean_of_stds(name, cells, expected):
    avg = average(readme_scores(cells))
    mean, std = map(float, expected.split("±"))
    # the README averaged unrounded values; from the rounded cells we can only be within half a unit
    assert abs(avg.mean - mean) <= 0.05 + 1e-9 and abs(avg.std - std) <= 0.05 + 1e-9, name
    on_tie = any(abs((v * 100) % 10 - 5) < 1e-6 for v in (avg.mean, avg.std))
    if not on_tie:  # away from a rounding tie the printed cell is the README's
        assert avg.text() == expected, name


def test_average_of_a_row_that_is_not_the_mean_is_detected():
    # §12.4 ToolLLaMA v2 (DFS) SoWR: the README prints 54.0, the six cells average 46.1
    from toolbench_adapter.evaluation.scoring.scores import Score

    cells = [Score("SoWR", "upstream", v) for v in (42.3, 51.0, 31.0, 67.0, 54.0, 31.1)]
    assert average(cells).text(with_std=False) == "46.1"


def test_label_files_round_trip_json_and_csv(tmp_path):
    entries = {"5": {"query": "q\twith tab", "tool_names": ["a", "Finish"], "answer_steps": "Step 1: {'x': 1}",
                     "final_step": "Final step: {'name': 'Finish'}",
                     "is_solved": {"0": "AnswerStatus.Solved", "1": "AnswerStatus.Unsure", "2": "JudgeError"}}}
    path = write_label_files(tmp_path, "G2_instruction", "my_model_x", entries, {"judge": "j1", "method": "CoT@1"})
    from_json = read_label_file(path)
    from_csv = read_label_file(path.with_suffix(".csv"))
    assert from_json.group == "G2_instruction" and from_json.model == "my_model_x"
    assert from_json.labels == from_csv.labels == {"5": {0: S, 1: U, 2: Label.ERROR}}
    assert from_json.judge == "j1" and from_json.method == "CoT@1"
    assert "{0: 'AnswerStatus.Solved', 1: 'AnswerStatus.Unsure', 2: 'JudgeError'}" in path.with_suffix(".csv").read_text()


def test_released_label_and_preference_files_read_both_ways(stb_root):
    base = stb_root / "data_example"
    for suffix in (".json", ".csv"):
        cot = read_label_file(base / "pass_rate_results" / "virtual_chatgpt_cot" / f"G1_instruction_virtual_chatgpt_cot{suffix}")
        assert cot.labels["588"] == {0: N, 1: N, 2: N} and cot.labels["608"] == {0: S, 1: S, 2: S}
        prefs = read_preference_file(base / "preference_results" /
                                     f"G1_instruction_virtual_chatgpt_cot_virtual_chatgpt_dfs{suffix}")
        assert (prefs.reference, prefs.output) == ("virtual_chatgpt_cot", "virtual_chatgpt_dfs")
        assert set(prefs.wins) == {"588", "608", "1073"}
    assert read_preference_file(base / "preference_results" /
                                "G1_instruction_virtual_chatgpt_cot_virtual_chatgpt_dfs.json").wins["1073"] == (1, 2)


def test_rows_from_labels_adds_strict_only_with_test_ids(tmp_path):
    entries = {"1": {"query": "q", "tool_names": [], "answer_steps": "", "final_step": "",
                     "is_solved": {"0": "AnswerStatus.Solved"}}}
    write_label_files(tmp_path / "labels", "G1_tool", "m", entries, {})
    assert [r.score.mode for r in rows_from_labels([tmp_path / "labels"])] == ["upstream"]
    ids = tmp_path / "ids"
    ids.mkdir()
    (ids / "G1_tool.json").write_text(json.dumps({"1": 0, "2": 0}))
    rows = rows_from_labels([tmp_path / "labels"], ids)
    assert [(r.score.mode, r.score.mean) for r in rows] == [("upstream", 100.0), ("strict", 50.0)]


def test_score_reads_per_model_folders_and_names_the_model_from_the_folder(tmp_path, capsys):
    from runners.cli import main

    folder = tmp_path / "released" / "chatgpt_dfs"
    folder.mkdir(parents=True)
    (folder / "G1_tool.json").write_text(json.dumps({"7": {"is_solved": {"0": "AnswerStatus.Solved"}},
                                                     "8": {"is_solved": {"0": "AnswerStatus.Unsure"}}}))
    assert main(["score", str(tmp_path / "released")]) == 0
    out = capsys.readouterr().out
    assert "SoPR upstream  G1_tool         chatgpt_dfs: 75.0 (n=2;" in out  # one repeat: no ±


def test_score_on_a_folder_it_does_not_recognise_exits_2_naming_the_layouts(tmp_path, capsys):
    from runners.cli import main

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "results.json").write_text("{}")
    (tmp_path / "m" / "G1_tool.json").write_text(json.dumps({"1": {"query": "q", "answer": {}}}))  # answers, not labels
    assert main(["score", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "no label files recognised (2 files looked at)" in err
    assert "{model}/{group}_{model}.json" in err and "{model}/{group}.json" in err
    assert main(["score", str(tmp_path / "absent")]) == 2


def test_one_repeat_has_no_std_and_averages_keep_it_so():
    one = [sopr({"1": {0: S}, "2": {0: N}}), sopr({"1": {0: S}})]
    assert one[0].text() == "50.0" and average(one).text() == "75.0"
    three = sopr({"1": {0: S, 1: N, 2: S}})
    assert three.text() == "66.7±47.1" and average([three, three]).text() == "66.7±47.1"
