"""The light end-to-end path that `make test` runs (vLLM does not fit in CI's time: see the Makefile's e2e note).

`python -m runners.serving.e2e --engine hf` starts the local SmolLM2-135M-Instruct behind `tba serve-model` as a
real subprocess on a free loopback port, drives it through openai-completions (toolllama text prompt) and
openai-chat with CoT@1 and DFS_woFilter_w2 on a tiny budget, judges with the same served model, writes the
tables and the error taxonomy, and stops the engine. `make e2e` runs the identical orchestrator on vLLM.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runners.serving.engine import port_is_free
from toolbench_adapter.evaluation.evaluations import choose_evaluation

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_light_end_to_end_through_both_openai_backends(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "runners.serving.e2e", "--engine", "hf", "--out", str(tmp_path), "--groups", "G1_instruction",
         "--max-step", "2", "--max-tokens", "24", "--max-query-count", "3", "--concurrency", "1"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    [out_dir] = tmp_path.glob("hf-*")
    summary = json.loads((out_dir / "e2e-summary.json").read_text())
    assert summary["ok"] and summary["port_freed"] and summary["model"] == "SmolLM2-135M-Instruct"
    port = int(summary["base_url"].rsplit(":", 1)[1].split("/")[0])
    assert port_is_free(port)
    assert [(r["backend"], r["method"]) for r in summary["runs"]] == [
        ("openai-completions", "CoT@1"), ("openai-completions", "DFS_woFilter_w2"),
        ("openai-chat", "CoT@1"), ("openai-chat", "DFS_woFilter_w2")]
    for run in summary["runs"]:
        run_dir = out_dir / run["name"]
        assert (run["run_exit"], run["evaluate_exit"]) == (0, 0)
        assert run["totals"]["queries"] == 1 and run["totals"]["model_calls"] >= 1
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["backend"] == run["backend"] and manifest["config"]["base_url"] == summary["base_url"]
        assert (run_dir / "G1_instruction" / f"900001_{run['method']}.json").exists()
        judged = choose_evaluation(run_dir)[0]  # the served model judged itself: --judge-self, kept apart
        board = (judged.tables_dir / "leaderboard_sopr_upstream.md").read_text()
        # the judge is the served model, and the table says so
        assert "Judge: SmolLM2-135M-Instruct @ http://127.0.0.1:" in board and "[json]" in board
        assert f"SmolLM2-135M-Instruct_via_{run['backend']} ({run['method']})" in board
        taxonomy = (run_dir / "tables" / "taxonomy.md").read_text()
        assert "_status codes_" in taxonomy and "G1_instruction" in taxonomy
    # the judge round trip through the engine happens every time: the probe is one answered query
    probe = summary["judge_probe"]
    assert probe["exit"] == 0 and probe["judge_requests"] >= 1 and probe["label"]
    assert (out_dir / "judge-probe" / "G1_instruction_judge-probe.meta.json").exists()
    assert "judge: the served model itself (SmolLM2-135M-Instruct)" in result.stdout
    assert result.stdout.count("Error taxonomy of") == 4
    assert f"engine stopped; port {port} free" in result.stdout
