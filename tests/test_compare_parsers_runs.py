"""tba compare-parsers on runs (pass rate per parser, paired interval, McNemar, flips) and the agreement fix."""

from __future__ import annotations

import csv
import json

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.fanout import run_fanout
from runners.judging.evaluate import evaluate_run
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.storage import write_label_files
from toolbench_adapter.report.parser_corpus import ModelOutput
from toolbench_adapter.report.parser_runs import (
    call_texts,
    compare_runs,
    divergence_text,
    first_divergence,
    load_variant,
)
from toolbench_adapter.report.parsers import compare_parsers

SOLVED, UNSURE, UNSOLVED = "AnswerStatus.Solved", "AnswerStatus.Unsure", "AnswerStatus.Unsolved"


class ParseErrorJudge:
    """Unsolved when the final answer says the result could not be had (react_script after a failed call)."""

    name = "parse-error-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        status = "Unsolved" if "could not get the result" in messages[-1]["content"] else "Solved"
        arguments = json.dumps({"reason": "by rule", "answer_status": status})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


@pytest.fixture(scope="module")
def judged_set(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fanout")
    cfg = RunConfig(name="set", out_root=str(tmp), backend="scripted", dialect="toolllama",
                    tool_root="data/sample/toolenv/tools")
    run_fanout(cfg, ["react-find", "react-robust", "hermes"], backend=ScriptedBackend(script=react_script),
               progress=False)
    for parser in ("react-find", "react-robust", "hermes"):
        evaluate_run(tmp / "set" / parser, ParseErrorJudge(), evaluate_times=1, cache_path=str(tmp / "judge.jsonl"),
                     progress=False)
    return tmp / "set"


def test_compare_runs_of_a_fanout_set_end_to_end(judged_set, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare-parsers", "--runs", str(judged_set), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # headline first: react-find loses the two queries whose call carries a connective line
    assert lines[0].startswith("react-robust: +33.3 points over react-find on 6 queries, 95% CI [")
    assert "exact McNemar p = 0.5 (2 flip up, 0 down)" in lines[0]  # 2 * C(2,0) / 2^2
    assert any(line.startswith("read no call in any step (format does not apply): hermes") for line in lines)
    assert not any(line.startswith("hermes ") for line in lines)  # folded, not a row
    assert "react-robust vs react-find: trajectories differ on 2 of 6 queries, the pass flips on 2" in lines
    # the divergence leads with the two calls: react-find kept the connective line in the arguments
    calls = ('react-find convert_for_get_24h_currency_desk({"query": "900003"} and then I will read what it…) / '
             'react-robust convert_for_get_24h_currency_desk({"query": "900003"})')
    assert (f"  first divergence 2x (differ in: arguments, rung): {calls} (react-find trailing_text, tool input "
            "parse error / react-robust trailing_text); e.g. G1_category/900003 turn 1") in lines
    # rows carry the model and the parser
    assert "model     parser         pass rate  passed  (on 6 queries)" in lines
    assert "scripted  react-find         66.7%       4  (baseline)" in lines
    flips = [json.loads(line) for line in (out / "flips.jsonl").read_text().splitlines()]
    assert sorted(f["query_id"] for f in flips) == ["900003", "900006"]
    for flip in flips:
        divergence = flip["divergence"]
        assert divergence["turn"] == 1
        assert divergence["react-find"]["kind"] == "trailing_text, tool input parse error"
        assert divergence["react-robust"]["kind"] == "trailing_text"
    rows = {r["parser"]: r for r in csv.DictReader((out / "pass_rates.csv").open(encoding="utf-8"))}
    assert rows["react-find"]["pass_rate"] == "66.67" and rows["react-robust"]["pass_rate"] == "100.00"
    assert rows["hermes"]["applies"] == "False" and rows["react-find"]["model"] == "scripted"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.splitlines()[2].startswith("react-robust: +33.3 points")
    assert ("first divergence at turn 1 (step 3, differ in: arguments, rung): react-find "
            "convert_for_get_24h_currency_desk(") in summary


def fake_run(root, parser, labels: dict[str, list[str]], steps: dict[str, list[dict]] | None = None,
             default="react-find"):
    """A judged run folder as tba run + tba evaluate leave it: manifest, eval/ label files, steps.jsonl."""
    run = root / parser
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"parser": parser, "dialect": {"name": "toolllama",
                                                                                   "default_parser": default}}))
    entries = {qid: {"query": "q", "tool_names": [], "answer_steps": [], "final_step": "",
                     "is_solved": {str(i): label for i, label in enumerate(repeats)}}
               for qid, repeats in labels.items()}
    write_label_files(run / "eval", "G1_tool", "m", entries, {"judge": "test"})
    lines = []
    for qid, records in (steps or {}).items():
        lines += [json.dumps({"group": "G1_tool", "query_id": int(qid), **r}) for r in records]
    (run / "steps.jsonl").write_text("".join(line + "\n" for line in lines))
    return run


CALL = {"turn": 1, "step": 3, "call": "get_x", "status": 0, "error": "none", "rung": "strict"}


def test_pass_rate_averages_repeats_and_pass_needs_more_than_half(tmp_path):
    base = fake_run(tmp_path, "react-find", {"1": [SOLVED, UNSOLVED, UNSOLVED], "2": [UNSURE, UNSURE, SOLVED],
                                             "3": [SOLVED] * 3, "4": [UNSOLVED] * 3}, {"1": [CALL]})
    other = fake_run(tmp_path, "react-robust", {"1": [SOLVED, SOLVED, UNSURE], "2": [UNSURE] * 3,
                                                "3": [SOLVED] * 3, "4": [UNSOLVED] * 3, "5": [SOLVED] * 3},
                     {"1": [CALL]})
    result = compare_runs([load_variant(other), load_variant(base)])
    assert result.baseline == "react-find"  # the dialect's default, wherever it is in the list
    assert result.queries == [("G1_tool", q) for q in ("1", "2", "3", "4")]  # query 5 only in one run
    # react-find: (1/3 + 2/3 + 1 + 0) / 4; react-robust: (5/6 + 1/2 + 1 + 0) / 4
    assert result.pass_rates["react-find"] == pytest.approx(50.0)
    assert result.pass_rates["react-robust"] == pytest.approx(7 / 12 * 100)
    # passes (mean > 0.5): react-find 2 and 3; react-robust 1 and 3 (query 2 at exactly 0.5 does not pass)
    assert result.passed == {"react-robust": 2, "react-find": 2}
    paired = result.paired["react-robust"]
    assert (paired.up, paired.down, paired.p_value) == (1, 1, 1.0)
    assert paired.difference == pytest.approx(7 / 12 * 100 - 50)
    assert {f.key[1] for f in paired.flips} == {"1", "2"}
    same_steps = next(f for f in paired.flips if f.key[1] == "1")
    assert same_steps.divergence is None  # identical steps: the judge, not the parser, made the difference


def test_first_divergence_names_the_step_and_each_side():
    a = [CALL, {**CALL, "turn": 2, "step": 6, "call": "Finish", "status": 3}]
    b = [CALL, {**CALL, "turn": 2, "step": 4, "call": None, "status": None, "error": "no_action", "rung": None}]
    divergence = first_divergence(a, b, "react-find", "react-robust")
    assert divergence["turn"] == 2
    assert divergence["react-find"] == {"kind": "final_answer", "call": "Finish", "arguments": None}
    assert divergence["react-robust"] == {"kind": "no_action, no call", "call": None, "arguments": None}
    assert first_divergence(a, a[:1], "x", "y")["y"]["kind"] == "ended"
    assert first_divergence(a, a, "x", "y") is None


def test_runs_without_labels_or_in_common_are_input_errors(tmp_path, capsys):
    run = fake_run(tmp_path, "react-find", {"1": [SOLVED]})
    (run / "eval" / "G1_tool_m.json").unlink()
    (run / "eval" / "G1_tool_m.csv").unlink()
    assert main(["compare-parsers", "--runs", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "tba evaluate" in capsys.readouterr().err
    a = fake_run(tmp_path / "x", "react-find", {"1": [SOLVED]})
    b = fake_run(tmp_path / "x", "react-robust", {"2": [SOLVED]})
    with pytest.raises(InputError, match="no judged query in common"):
        compare_runs([load_variant(a), load_variant(b)])
    with pytest.raises(InputError, match="at least two"):
        compare_runs([load_variant(a)])
    with pytest.raises(InputError, match="baseline"):
        compare_runs([load_variant(a), load_variant(b)], baseline="react-regex")
    assert main(["compare-parsers", "--runs", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_bootstrap_interval_is_seeded(tmp_path):
    labels_a = {str(q): [SOLVED if q % 2 else UNSOLVED] for q in range(20)}
    labels_b = {str(q): [SOLVED if q % 3 else UNSOLVED] for q in range(20)}
    variants = [load_variant(fake_run(tmp_path, "react-find", labels_a)),
                load_variant(fake_run(tmp_path, "react-robust", labels_b))]
    first = compare_runs(variants, seed=3).paired["react-robust"]
    assert compare_runs(variants, seed=3).paired["react-robust"] == first
    assert first.low <= first.difference <= first.high


def test_fixed_output_agreement_counts_only_outputs_where_a_call_was_read():
    outputs = [ModelOutput(text='Thought: t\nAction: get_x\nAction Input: {"a": 1}', source="s1"),
               ModelOutput(text="just prose, no call in any format", source="s2")]
    result = compare_parsers(outputs, ["react-robust", "react-regex", "hermes", "jsonl", "fenced-json"],
                             progress=False)
    matrix = result.agreement()
    # hermes, jsonl and fenced-json read nothing anywhere: they do not "agree", there is nothing to compare
    assert matrix[("hermes", "jsonl")] == (0, 0)
    assert matrix[("hermes", "hermes")] == (0, 0)
    # react-robust vs hermes: only the first output counts (one side read a call), and they differ there
    assert matrix[("react-robust", "hermes")] == (0, 1)
    assert matrix[("react-robust", "react-regex")] == (1, 1)
    assert result.inapplicable_parsers() == ["hermes", "jsonl", "fenced-json"]


def test_fixed_output_cli_folds_parsers_that_read_nothing_into_one_line(tmp_path, capsys):
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"text": 'Thought: t\nAction: get_x\nAction Input: {"a": 1}'}) + "\n")
    out = tmp_path / "report"
    assert main(["compare-parsers", "--input", str(texts), "--parsers", "react-find,react-robust,hermes,jsonl",
                 "--out", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 model output"
    assert [line.split()[0] for line in lines[1:3]] == ["react-find", "react-robust"]
    assert lines[3] == "read no call from any of the 1 outputs (format does not apply): hermes, jsonl"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| hermes |" not in summary.split("## Error kinds")[0]  # folded in the per-parser table
    assert "format does not apply): hermes, jsonl" in summary
    agreement = {r["parser"]: r for r in csv.DictReader((out / "agreement.csv").open(encoding="utf-8"))}
    # two parsers that read nothing do not "agree": left out of the matrix, as of the disagreements
    assert set(agreement) == {"react-find", "react-robust"} and "hermes" not in agreement["react-find"]


def test_a_divergence_shows_the_two_calls_where_they_differ():
    """The issue's line read "react-find no_action_input, no_such_function / react-robust no_action_input,
    no_such_function (the steps differ in: call)": the same on both sides. The calls themselves now lead."""
    find = {**CALL, "call": "get_weathe", "arguments": "", "status": 1, "error": "no_action_input", "rung": None}
    robust = {**find, "call": "get_weather"}
    d = first_divergence([find], [robust], "react-find", "react-robust")
    assert d["differ_in"] == ["call"]
    assert divergence_text(d, "react-find", "react-robust") == (
        "react-find get_weathe() / react-robust get_weather() (both no_action_input, no_such_function)")
    # long arguments that differ only at their end: the common start is cut, the difference stays in view
    long_a = {**CALL, "arguments": '{"query": "' + "x" * 80 + '", "units": "metric"}'}
    long_b = {**CALL, "arguments": '{"query": "' + "x" * 80 + '", "units": "imperial"}'}
    d = first_divergence([long_a], [long_b], "a", "b")
    text_a, text_b = call_texts(d["a"], d["b"])
    assert text_a.startswith("get_x(…") and '"units": "metric"}' in text_a
    assert '"units": "imperial"}' in text_b and len(text_b) < 80
    # the same call on both sides is shown once
    d = first_divergence([CALL], [{**CALL, "rung": "repaired", "arguments": '{"a": 1}'}], "a", "b")
    assert divergence_text(d, "a", "b").startswith("a get_x() / b get_x({\"a\": 1})")
    same_call = first_divergence([{**CALL, "arguments": "{}"}], [{**CALL, "arguments": "{}", "rung": "x"}], "a", "b")
    assert divergence_text(same_call, "a", "b") == "both get_x({}) (both ok)"
