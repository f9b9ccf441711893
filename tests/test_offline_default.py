"""The offline default of `make eval`, on a tiny budget: SmolLM2 through the hf backend with the
project's SmolLM2 config, the embedded server, then `tba evaluate` with the same local model as judge."""

import json

import pytest

from runners.cli import main


@pytest.mark.slow
def test_hf_run_then_local_judge_table(tmp_path, capsys):
    code = main(["run", "--config", "runners/configs/smollm2.yaml", "--name", "offline", "--out-root",
                 str(tmp_path), "--groups", "G1_instruction", "--tool-root", "data/sample/toolenv/tools",
                 "--max-tokens", "24", "--max-step", "3", "--quiet"])
    assert code == 0
    run_dir = tmp_path / "offline"
    answer = json.loads((run_dir / "G1_instruction" / "900001_CoT@1.json").read_text())
    first = answer["trys"][0]["chain"][0]
    assert first["node_type"] == "Thought" and first["description"].startswith("Thought: ")  # the prefill
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["dialect"]["prefill"] == "Thought: " and manifest["dialect"]["template"] == "chat"
    assert manifest["totals"]["model_calls"] >= 1 and manifest["totals"]["total_tokens"] > 0
    capsys.readouterr()
    code = main(["evaluate", str(run_dir), "--judge-backend", "hf", "--evaluate-times", "1", "--quiet",
                 "--cache", str(tmp_path / "judge.jsonl")])
    out = capsys.readouterr().out
    assert code == 0
    assert "Judge: hf:SmolLM2-135M-Instruct (local)" in out  # the table names the local judge
    assert "a 135M judge checks the pipeline, not the model." in out  # ...and what its verdicts are worth
    assert "| offline (CoT@1) (self-judged) |" in out  # SmolLM2 judged SmolLM2's answers: the row says so
    assert "Error taxonomy" in out
    assert (run_dir / "tables" / "SmolLM2-135M-Instruct@local-json-x1" / "leaderboard_sopr_upstream.md").exists()
