"""`tba reproduce` recomputes the released example figures from the label files, and follows them."""

from __future__ import annotations

import json
import re
import shutil

from runners.cli import main


def _line(out: str, *needles: str) -> str:
    lines = [line for line in out.splitlines() if all(n in line for n in needles)]
    assert lines, f"no line with {needles} in:\n{out}"
    return lines[0]


def _reproduce(capsys, root, *extra) -> str:
    assert main(["reproduce", "--stb-root", str(root), *extra]) == 0
    return capsys.readouterr().out


def test_reproduce_prints_the_released_example_figures(stb_root, capsys):
    out = _reproduce(capsys, stb_root)
    upstream = out.split("SoPR, upstream")[1].split("SoPR, strict")[0]
    cot = _line(upstream, "virtual_chatgpt_cot ", "G1_instruction")
    dfs = _line(upstream, "virtual_chatgpt_dfs ", "G1_instruction")
    assert re.search(r"\b66\.7±0\.0 \| 66\.7±0\.0\b", cot)  # JSON | CSV agree
    assert re.search(r"\b100\.0±0\.0 \| 100\.0±0\.0\b", dfs)
    win = _line(out.split("SoWR, upstream")[1], "virtual_chatgpt_dfs vs virtual_chatgpt_cot")
    assert re.search(r"\b100\.0 \| 100\.0\b", win)


def test_reproduce_leaderboard_table(stb_root, capsys):
    out = _reproduce(capsys, stb_root, "--leaderboard")
    assert "| Method | I1 Inst | I1 Cat | I1 Tool | I2 Cat | I2 Inst | I3 Inst | Average |" in out
    assert "| virtual_chatgpt_cot | 66.7±0.0 |" in out and "| virtual_chatgpt_dfs | 100.0±0.0 |" in out


def test_figures_follow_the_label_files(stb_root, tmp_path, capsys):
    root = tmp_path / "stb"
    shutil.copytree(stb_root / "data_example" / "pass_rate_results", root / "data_example" / "pass_rate_results")
    shutil.copytree(stb_root / "data_example" / "preference_results", root / "data_example" / "preference_results")
    labels = root / "data_example" / "pass_rate_results" / "virtual_chatgpt_dfs" / "G1_instruction_virtual_chatgpt_dfs.json"
    data = json.loads(labels.read_text())
    data["588"]["is_solved"]["1"] = "AnswerStatus.Unsolved"  # flip one label of one repeat
    labels.write_text(json.dumps(data))
    prefs = root / "data_example" / "preference_results" / "G1_instruction_virtual_chatgpt_cot_virtual_chatgpt_dfs.json"
    counts = json.loads(prefs.read_text())
    counts["1073"].update({"virtual_chatgpt_cot": 2, "virtual_chatgpt_dfs": 1})  # CoT now wins 1073
    prefs.write_text(json.dumps(counts))
    out = _reproduce(capsys, root)
    upstream = out.split("SoPR, upstream")[1].split("SoWR")[0]
    dfs = _line(upstream, "virtual_chatgpt_dfs ", "G1_instruction")
    # runs 100, 66.7, 100 -> mean 88.9, population std 15.7; the untouched CSV still says 100.0
    assert re.search(r"\b88\.9±15\.7 \| 100\.0±0\.0\b", dfs)
    win = _line(out.split("SoWR, upstream")[1], "virtual_chatgpt_dfs vs virtual_chatgpt_cot")
    assert re.search(r"\b66\.7 \|", win)


def test_reproduce_without_a_checkout_is_an_input_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    assert main(["reproduce"]) == 2
    assert main(["reproduce", "--stb-root", str(tmp_path)]) == 2
    assert "pass_rate_results" in capsys.readouterr().err
