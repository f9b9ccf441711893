"""Issue 42's acceptance, end to end: `tba eval --trials 5` of an agent that answers each query with probability
0.5 (the scripted agent, answer_rate=0.5, drawn per query and trial from the trial's seed) on StableToolBench's 163
G1_instruction queries, judged by a judge that says Solved to every answer (a loopback stand-in): the leaderboard's
CSV reports SoPR about 50 with a 95% interval that holds it, pass@5 >= 80 (1 - 0.5^5 = 96.9) and pass^5 <= 20
(0.5^5 = 3.1)."""

from __future__ import annotations

import csv

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import solved
from toolbench_adapter.evaluation.evaluations import choose_evaluation


@pytest.fixture(scope="module")
def half(stb_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("known")
    with OpenAIStandin(models=("judge-x",), respond=solved) as judge:
        code = main(["eval", "--name", "half", "--out-root", str(out), "--backend", "scripted", "--backend-option",
                     "answer_rate=0.5", "--trials", "5", "--stb-root", str(stb_root), "--groups", "G1_instruction",
                     "--concurrency", "8", "--judge-url", judge.url, "--judge-model", "judge-x", "--judge-api-key",
                     "x", "--evaluate-times", "1", "--judge-cache", str(out / "judge.jsonl"), "--quiet"])
    assert code == 0
    return out / "half"


def test_the_leaderboard_csv_reports_sopr_about_50_pass_at_5_and_pass_hat_5(half):
    chosen, _ = choose_evaluation(half)
    row = next(csv.DictReader((chosen.tables_dir / "leaderboard_sopr_upstream.csv").open(encoding="utf-8")))
    sopr, low, high = float(row["Average"].split(" [")[0]), float(row["SoPR ci95 low"]), float(row["SoPR ci95 high"])
    assert low <= 50 <= high and 42 <= sopr <= 58 and high - low < 15
    assert float(row["pass@5"]) >= 80 and float(row["pass^5"]) <= 20
    assert float(row["pass@5"]) == pytest.approx(96.9, abs=4) and float(row["pass^5"]) == pytest.approx(3.1, abs=4)
    assert row["trials"] == "5" and float(row["pass@1"]) == pytest.approx(sopr, abs=0.1)  # 1 repeat: Solved = points
    for name in ("model latency p50 s", "model latency p95 s", "prompt tokens per query", "cost"):
        assert name in row  # cost and latency in every row: money only with --prices
    assert row["cost"] == "" and row["cost currency"] == "no --prices file"


def test_each_trial_is_a_run_an_existing_command_reads(half, tmp_path, capsys):
    assert main(["table", str(half / "trial-3"), "--out", str(tmp_path), "--no-png"]) == 0
    assert "| half@trial-3 (CoT@1) |" in capsys.readouterr().out
