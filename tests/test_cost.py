"""Issue 42 item 4: what a run cost and how fast its model answered (toolbench_adapter/runs/cost.py): per query
figures from queries.jsonl, latency percentiles over every model call, money only from a price file that is checked
entry by entry, and "not recorded" (never 0) for a run written before the figures were."""

from __future__ import annotations

import json

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.errors import InputError
from toolbench_adapter.runs.cost import read_prices, run_cost


class TimedBackend(ScriptedBackend):
    def complete(self, request):
        completion = super().complete(request)
        completion.latency_s = 0.01 if request.key.get("path") else 0.03
        completion.prompt_tokens, completion.completion_tokens = 100, 7
        return completion


def test_a_runs_cost_per_query_and_its_latency_percentiles(tmp_path):
    cfg = RunConfig(name="timed", out_root=str(tmp_path), backend="scripted")
    manifest = Runner(cfg, backend=TimedBackend(), progress=False).run()
    cost = run_cost(tmp_path / "timed")
    assert cost.queries == 6 and cost.model_calls == 12 and cost.per_query(cost.model_calls) == 2
    assert cost.prompt_tokens == 1200 and cost.completion_tokens == 84
    assert cost.latency_p50_s == pytest.approx(0.02) and cost.latency_p95_s == pytest.approx(0.03)
    assert manifest["totals"]["model_latency_p50_s"] == pytest.approx(0.02)
    assert manifest["totals"]["prompt_tokens"] == 1200
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\nmodels: {scripted: {input: 2.5, output: 10}}\n")
    priced = run_cost(tmp_path / "timed", read_prices(prices))
    assert priced.money == pytest.approx((1200 * 2.5 + 84 * 10) / 1e6) and priced.currency == "USD"
    other = tmp_path / "other.yaml"
    other.write_text("models: {gpt-4o: {input: 1, output: 1}}\n")
    assert run_cost(tmp_path / "timed", read_prices(other)).money_note.startswith("no price for model 'scripted'")


def test_a_run_from_before_says_not_recorded_never_zero(tmp_path):
    cfg = RunConfig(name="old", out_root=str(tmp_path), backend="scripted")
    Runner(cfg, backend=ScriptedBackend(), progress=False).run()
    path = tmp_path / "old" / "queries.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        for key in ("prompt_tokens", "completion_tokens", "model_latencies_s"):
            line.pop(key)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cost = run_cost(tmp_path / "old")
    assert cost.prompt_tokens is None and cost.latency_p50_s is None
    assert "tokens per query not recorded" in cost.text() and "model latency not recorded" in cost.text()
    assert cost.csv_cells()["prompt tokens per query"] == "" and cost.csv_cells()["model latency p50 s"] == ""


@pytest.mark.parametrize("text, field", [
    ("models: {m: {input: -1, output: 1}}", "models.m.input"),
    ("models: {m: {input: 1}}", "models.m"),
    ("models: {m: {input: 1, output: .nan}}", "models.m.output"),
    ("models: {m: {input: true, output: 1}}", "models.m.input"),
    ("models: {}", "models"),
    ("prices: {m: 1}", "models"),
    ("models: {m: {input: 1, output: 1}}\ncurrency: 5", "currency"),
    ("models: {m: {input: 1, output: 1}}\nextra: 1", "extra"),
])
def test_a_price_file_is_checked_entry_by_entry(tmp_path, text, field):
    path = tmp_path / "prices.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError) as err:
        read_prices(path)
    assert err.value.field == field and err.value.fix


def test_a_bad_price_file_is_refused_before_anything_is_judged(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {m: {input: -1, output: 1}}\n")
    assert main(["eval", "--backend", "scripted", "--name", "x", "--out-root", str(tmp_path), "--judge-url",
                 "http://127.0.0.1:9/v1", "--prices", str(bad), "--check-only"]) == 2
    err = capsys.readouterr().err
    assert "models.m.input" in err  # before the judge is asked anything (it is not even there)
    assert not (tmp_path / "x").exists()


def test_the_completion_of_a_failed_call_counts_its_latency_too(tmp_path):
    def failing(request):
        return Completion(error="HTTP 503", error_kind="model_endpoint", latency_s=0.5)

    cfg = RunConfig(name="failing", out_root=str(tmp_path), backend="scripted", stop_after_infra_failures=0)
    Runner(cfg, backend=ScriptedBackend(failing, natural_dialect="openai-tools"), progress=False).run()
    assert run_cost(tmp_path / "failing").latencies  # what the endpoint took before it failed is counted
