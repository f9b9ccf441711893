"""Issue 42 in sweeps: a spec's top-level trials: K makes every cell a set of trials; --dry-run sizes each comparison
(the smallest detectable difference, falling with more trials; from an assumption or a pilot's variances); after the
sweep the matrix calls a clear difference settled, and its CSV carries latency p50 / p95, tokens and cost."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import solved


@pytest.fixture(scope="module")
def judge():
    with OpenAIStandin(models=("judge-x",), respond=solved) as standin:
        yield standin


def spec_text(judge, trials: int | None = 3, **extra) -> str:
    text = f"""name: skill
base: {{backend: scripted}}
axes:
  backend_options:
    - {{label: answers95, backend_options: {{answer_rate: 0.95}}}}
    - {{label: answers05, backend_options: {{answer_rate: 0.05}}}}
judges:
  - {{backend: openai, url: "{judge.url}", model: judge-x, api_key: x, evaluate_times: 1}}
baseline: {{backend_options: answers95}}
"""
    if trials is not None:
        text += f"trials: {trials}\n"
    for key, value in extra.items():
        text += f"{key}: {value}\n"
    return text


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


DETECTABLE = re.compile(r"answers05: smallest detectable difference: ([\d.]+) points \((\d+) shared queries x (\d+) "
                        r"trial\(s\); (.*)\)")


def detectable(out: str) -> tuple[float, str]:
    found = DETECTABLE.search(out)
    assert found, out
    return float(found[1]), found[4]


def test_the_dry_run_sizes_each_comparison_and_more_trials_detect_less(tmp_path, judge, capsys):
    spec = write(tmp_path, spec_text(judge))
    sizes = {}
    for trials in ("2", "8"):
        assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--dry-run", "--trials", trials]) == 0
        out = capsys.readouterr().out
        sizes[trials], source = detectable(out)
        assert "assumed: pass rate 0.5 in both cells" in source and "nothing run (--dry-run)" in out
    assert sizes["8"] == pytest.approx(sizes["2"] / 2, abs=0.1)  # four times the trials: half the difference
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--dry-run", "--assume-pass-rate", "0.9",
                 "--assume-correlation", "0.5"]) == 0
    smaller, source = detectable(capsys.readouterr().out)
    assert smaller < sizes["2"] and "pass rate 0.9" in source and "correlation 0.5" in source
    assert not (tmp_path / "out" / "skill" / "answers95").exists()  # nothing ran


@pytest.mark.parametrize("value", ["0", "'3'", "101", "true"])
def test_a_bad_trials_key_is_refused(tmp_path, judge, capsys, value):
    spec = write(tmp_path, spec_text(judge, trials=None) + f"trials: {value}\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "field 'trials'" in err and "trials must be a whole number from 1 to 100" in err


def test_trials_in_base_or_as_an_axis_are_refused(tmp_path, judge, capsys):
    spec = write(tmp_path, spec_text(judge).replace("base: {backend: scripted}", "base: {backend: scripted, trials: 3}"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    assert "trials is the sweep's, not a cell's setting" in capsys.readouterr().err


def test_a_deterministic_cell_is_refused_before_anything_runs(tmp_path, judge, capsys):
    text = spec_text(judge).replace("answer_rate: 0.05", "delay_s: 0")
    spec = write(tmp_path, text)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert "3 trials of a deterministic agent measure the judge only" in capsys.readouterr().err


@pytest.fixture(scope="module")
def swept(tmp_path_factory, judge):
    folder = tmp_path_factory.mktemp("sweep")
    spec = write(folder, spec_text(judge))
    prices = folder / "prices.yaml"
    prices.write_text("currency: USD\nmodels: {scripted: {input: 1.0, output: 2.0}}\n")
    code = main(["sweep", str(spec), "--out", str(folder / "out"), "--quiet", "--judge-cache",
                 str(folder / "judge.jsonl"), "--prices", str(prices)])
    assert code == 0
    return folder


def test_a_clear_difference_is_settled_in_the_matrix(swept):
    rows = {r["cell"]: r for r in csv.DictReader((swept / "out" / "skill" / "matrix.csv").open(encoding="utf-8"))}
    assert rows["answers05"]["verdict"] == "settled" and float(rows["answers05"]["ΔSoPR vs answers95"]) < -50
    assert rows["answers95"]["trials"] == rows["answers05"]["trials"] == "3"
    assert float(rows["answers95"]["pass@3"]) >= float(rows["answers95"]["pass^3"])
    md = (swept / "out" / "skill" / "matrix.md").read_text(encoding="utf-8")
    assert "): settled |" in md and "pass@3 / pass^3" in md


def test_the_matrix_csv_has_latency_tokens_and_cost(swept):
    rows = list(csv.DictReader((swept / "out" / "skill" / "matrix.csv").open(encoding="utf-8")))
    for row in rows:
        assert float(row["latency_p50_s"]) <= float(row["latency_p95_s"])
        assert float(row["prompt_tokens_per_query"]) > 0 and float(row["completion_tokens_per_query"]) > 0
        tokens = float(row["prompt_tokens_per_query"]) * 18 * 1.0 + float(row["completion_tokens_per_query"]) * 18 * 2.0
        assert float(row["cost"]) == pytest.approx(tokens / 1e6, rel=1e-3) and row["cost_currency"] == "USD"


def test_a_pilot_gives_the_dry_run_its_observed_variances(swept, capsys):
    spec = swept / "spec.yaml"
    assert main(["sweep", str(spec), "--out", str(swept / "next"), "--dry-run", "--pilot",
                 str(swept / "out" / "skill"), "--trials", "5"]) == 0
    size, source = detectable(capsys.readouterr().out)
    assert source.startswith("observed in the pilot (6 shared queries, 3 trials")
    assert size < 40  # the pilot's cells differ little within a query: a small difference is detectable
    assert main(["sweep", str(spec), "--out", str(swept / "next"), "--pilot", str(swept / "out" / "skill")]) == 2
    assert "add --dry-run" in capsys.readouterr().err


def close_spec(judge) -> str:
    return (spec_text(judge, trials=2).replace("answer_rate: 0.95", "answer_rate: 0.6")
            .replace("answer_rate: 0.05", "answer_rate: 0.4"))


def test_until_settled_adds_trials_to_the_unsettled_comparison_and_says_what_it_spent(tmp_path, judge, capsys):
    spec = write(tmp_path, close_spec(judge))
    flags = ["--out", str(tmp_path / "out"), "--quiet", "--judge-cache", str(tmp_path / "judge.jsonl")]
    assert main(["sweep", str(spec), *flags, "--until-settled", "--max-trials", "12"]) == 0
    out = capsys.readouterr().out
    assert "until settled: round 1: answers05 to 12 trials, answers95 to 12 trials" in out
    final = re.search(r"until settled: (.*) after (\d+) round\(s\); spent (\d+) more query runs and (\d+) more model "
                      r"calls", out)
    assert final and int(final[3]) == 2 * 10 * 6 and int(final[4]) > 0  # two cells, 10 more trials, 6 queries
    rows = {r["cell"]: r for r in csv.DictReader((tmp_path / "out" / "skill" / "matrix.csv").open(encoding="utf-8"))}
    assert rows["answers05"]["trials"] == rows["answers95"]["trials"] == "12"
    assert (rows["answers05"]["verdict"] == "settled") == (final[1] == "every comparison settled")
    # the same sweep again: the grown sets are kept (not refused as fewer trials), nothing runs
    assert main(["sweep", str(spec), *flags]) == 0
    assert "2 done (0 ran now, 2 done before)" in capsys.readouterr().out


@pytest.mark.parametrize("change, flags, needle", [
    ("", ["--max-trials", "2"], "--max-trials must be above"),
    ("", [], "--max-trials must be above"),
    ("trials: 2", ["--trials", "1", "--max-trials", "5"], "the cells run one trial each"),
    ("baseline", ["--max-trials", "5"], "names none"),
])
def test_until_settled_is_refused_where_it_cannot_work(tmp_path, judge, capsys, change, flags, needle):
    text = close_spec(judge)
    if change == "baseline":
        text = "\n".join(line for line in text.splitlines() if not line.startswith("baseline")) + "\n"
    spec = write(tmp_path, text)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--until-settled", *flags]) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "out" / "skill" / "answers95").exists()
