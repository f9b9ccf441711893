"""`make e2e` itself, as `make test` runs it: vLLM (CPU build, .venv-vllm) serving SmolLM2-135M-Instruct on
loopback, 3 queries per method through openai-completions (toolllama text prompt) and openai-chat with CoT@1
and DFS_woFilter_w2, judged by the served model, tables and taxonomy written, the engine stopped.

It takes minutes (engine start ~70 s, then the runs), so it runs only when asked: TBA_E2E_VLLM=1, which
`make test` sets after installing the engine (`make vllm`). A plain `pytest` skips it with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.serving.engine import DEFAULT_VLLM_PYTHON, port_is_free
from toolbench_adapter.evaluation.evaluations import choose_evaluation

PROJECT_ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("TBA_E2E_VLLM") != "1",
                       reason="the vLLM end to end takes minutes: TBA_E2E_VLLM=1 runs it (make test sets it)"),
    pytest.mark.skipif(not DEFAULT_VLLM_PYTHON.exists(), reason="no vLLM environment: run `make vllm`"),
]


def test_make_e2e_on_vllm(tmp_path):
    result = subprocess.run([sys.executable, "-m", "runners.serving.e2e", "--out", str(tmp_path)], cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=1800)
    print(result.stdout[-6000:])  # the tables, shown with -s or on failure
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    [out_dir] = tmp_path.glob("vllm-*")
    summary = json.loads((out_dir / "e2e-summary.json").read_text())
    assert summary["ok"] and summary["port_freed"] and summary["engine"].startswith("vLLM (CPU)")
    port = int(summary["base_url"].rsplit(":", 1)[1].split("/")[0])
    assert port_is_free(port)
    backends = ("openai-completions", "openai-chat")
    assert {(r["backend"], r["method"], r["constrain"]) for r in summary["runs"]} == {
        *((b, m, False) for b in backends for m in ("CoT@1", "DFS_woFilter_w2")), *((b, "CoT@1", True) for b in backends)}
    # --constrain schema through vLLM's structured outputs: every model turn a listed call with valid arguments
    # (unconstrained, the 135M model writes almost none); the judge constrained to the verdict's JSON
    for run in (r for r in summary["runs"] if r["constrain"]):
        totals = run["totals"]
        assert totals["model_turns"] >= 3 and totals["valid_turns"] >= 0.95 * totals["model_turns"], totals
        meta = json.loads(next(choose_evaluation(out_dir / run["name"])[0].eval_dir.glob("*.meta.json")).read_text())
        assert "constrained" in meta["judge"]
    for run in summary["runs"]:
        run_dir = out_dir / run["name"]
        assert (run["run_exit"], run["evaluate_exit"]) == (0, 0)
        assert run["totals"]["queries"] == 3 and run["totals"]["model_calls"] >= 3
        judged = choose_evaluation(run_dir)[0]  # the served model judged itself: --judge-self, kept apart
        board = (judged.tables_dir / "leaderboard_sopr_upstream.md").read_text()
        assert "Judge: SmolLM2-135M-Instruct @ http://127.0.0.1:" in board
        for group in ("G1_instruction", "G2_instruction", "G3_instruction"):
            assert any((run_dir / group).glob(f"*_{run['method']}.json"))
        meta = json.loads(next(judged.eval_dir.glob("G1_instruction_*.meta.json")).read_text())
        assert meta["evaluator"] == "e2e-short" and "self-judged" in meta["judge"]
        assert meta["judge"].split(";")[0].endswith("[json, constrained]" if run["constrain"] else "[json]")
    # the judge round trip through the engine happens every time: the probe is one answered query
    probe = summary["judge_probe"]
    assert probe["exit"] == 0 and probe["judge_requests"] >= 1 and probe["label"]
    assert (out_dir / "judge-probe" / "G1_instruction_judge-probe.meta.json").exists()
    # vLLM really served both request shapes
    log = (out_dir / "engine.log").read_text()
    assert '"POST /v1/completions HTTP/1.1" 200' in log and '"POST /v1/chat/completions HTTP/1.1" 200' in log
    assert f"engine stopped; port {port} free" in result.stdout
