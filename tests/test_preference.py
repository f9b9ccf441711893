"""SoWR judgements (tba prefer) against a real OpenAI-compatible stand-in on 127.0.0.1 with scripted verdicts."""

from __future__ import annotations

import json

import pytest

from runners.cli import main
from tests.test_judge_loopback import StandIn, client_for, example, give_answer, tool_reply
from toolbench_adapter.evaluation.cache import JudgementCache
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.judge import make_judge
from toolbench_adapter.evaluation.judging.preference import compare_converted, prefer_files, truncate_answer
from toolbench_adapter.evaluation.scoring.results import rows_from_label_file
from toolbench_adapter.evaluation.storage import read_preference_file

REF, OUT = "ref_model", "out_model"


def scripted(select=None):
    """Status from a marker in the prompt (SOLVED / UNSURE / UNSOLVED); select_better_answer by ``select``.

    The default ``select`` picks the answer containing BEST, whichever position it was shown in.
    """
    def prefer_best(prompt: str):
        first, second = prompt.split("Answer 1:")
        assert "Answer 0:" in first
        return {"reason": "scripted", "index": 0 if "BEST" in first else 1}

    def script(payload):
        function = payload["tool_choice"]["function"]["name"]
        prompt = payload["messages"][0]["content"]
        if function == "select_better_answer":
            return tool_reply(function, (select or prefer_best)(prompt))
        for marker in ("UNSOLVED", "UNSURE", "SOLVED"):  # UNSOLVED before SOLVED: it contains it
            if marker in prompt:
                status = "Unsure" if marker == "UNSURE" and function == "check_answer_status" else marker.title()
                return tool_reply(function, {"reason": "scripted", "answer_status": status})
        raise AssertionError(f"unscripted request {function}: {prompt[:80]}")
    return script


@pytest.fixture
def server():
    servers = []

    def start(script):
        servers.append(StandIn(script))
        return servers[-1]

    yield start
    for item in servers:
        item.close()


@pytest.fixture
def spec():
    return load_evaluator("default")


def functions_asked(stand_in: StandIn) -> list[str]:
    return [p["tool_choice"]["function"]["name"] for p in stand_in.payloads]


def compare(stand_in, spec, reference, output, **options):
    judge = make_judge(client_for(stand_in), spec, options.pop("mode", "auto"), attempts=options.pop("attempts", 3))
    return compare_converted(reference, output, judge, reference_model=REF, output_model=OUT, progress=False,
                             concurrency=options.pop("concurrency", 2), **options)


def test_missing_answers_decide_rounds_without_requests(server, spec):
    stand_in = server(scripted())
    run = compare(stand_in, spec, {"1": example("Q1", give_answer("SOLVED"))},
                  {"2": example("Q2", give_answer("SOLVED"))}, test_ids=["1", "2", "3"], evaluate_times=3)
    assert stand_in.count == 0
    complete = {"round_0": "complete", "round_1": "complete", "round_2": "complete"}
    assert run.prefer_dict == {"1": {REF: 3, OUT: 0, **complete},  # no output answer -> reference
                               "2": {REF: 0, OUT: 3, **complete},  # no reference answer -> output
                               "3": {REF: 0, OUT: 3, **complete}}  # neither: upstream checks the reference first
    assert list(run.prefer_dict["1"]) == [REF, OUT, "round_0", "round_1", "round_2"]


def test_exactly_one_solved_or_one_unsure_wins_without_comparison(server, spec):
    stand_in = server(scripted())
    run = compare(stand_in, spec,
                  {"1": example("Q1", give_answer("SOLVED a")), "2": example("Q2", give_answer("UNSOLVED a"))},
                  {"1": example("Q1", give_answer("UNSOLVED b")), "2": example("Q2", give_answer("UNSURE b"))},
                  evaluate_times=2)
    assert run.prefer_dict["1"][REF] == 2 and run.prefer_dict["1"][OUT] == 0
    assert run.prefer_dict["2"][REF] == 0 and run.prefer_dict["2"][OUT] == 2
    assert "select_better_answer" not in functions_asked(stand_in)
    assert {rec.rule for rec in run.records["1"].values()} == {"one-solved"}
    assert {rec.rule for rec in run.records["2"].values()} == {"one-unsure"}
    assert run.records["2"][0].statuses == ["Unsolved", "Unsure"]  # reference first, whatever the order shown
    # per round: two check_answer_status, plus parse_answer_status for the Unsure one
    assert stand_in.count == 2 * 2 + 2 * 3


def test_comparison_is_undone_through_the_shuffle(server, spec):
    stand_in = server(scripted())
    reference, output = {}, {}
    for qid in "1234":
        best_is_output = qid in "13"
        reference[qid] = example(f"Q{qid}", give_answer("SOLVED ref" + ("" if best_is_output else " BEST")))
        output[qid] = example(f"Q{qid}", give_answer("SOLVED out" + (" BEST" if best_is_output else "")))
    reference["5"] = example("Q5", give_answer("UNSOLVED ref"))  # all Unsolved: compared too
    output["5"] = example("Q5", give_answer("UNSOLVED out BEST"))
    run = compare(stand_in, spec, reference, output, evaluate_times=3)
    orders = {tuple(rec.order) for rounds in run.records.values() for rec in rounds.values()}
    assert orders == {(0, 1), (1, 0)}  # both orders were shown
    for qid in "135":
        assert (run.prefer_dict[qid][REF], run.prefer_dict[qid][OUT]) == (0, 3), qid
    for qid in "24":
        assert (run.prefer_dict[qid][REF], run.prefer_dict[qid][OUT]) == (3, 0), qid
    assert functions_asked(stand_in).count("select_better_answer") == 5 * 3
    select = next(p for p in stand_in.payloads if p["tool_choice"]["function"]["name"] == "select_better_answer")
    assert select["tools"][0]["function"]["parameters"]["required"] == ["index", "reason"]
    # the judge sees truncated answers: no method, final answer cut at 1000 characters
    assert '"method"' not in select["messages"][0]["content"]
    long_answer = example("Q", "x" * 1500)["answer"]
    assert len(truncate_answer(long_answer)["final_answer"]) == 1000 and "method" in long_answer


def test_identical_answers_are_not_sent_for_comparison(server, spec):
    stand_in = server(scripted())
    same = example("Q1", give_answer("SOLVED same"))
    run = compare(stand_in, spec, {"1": same}, {"1": json.loads(json.dumps(same))}, evaluate_times=4)
    assert "select_better_answer" not in functions_asked(stand_in)
    assert {rec.rule for rec in run.records["1"].values()} == {"identical"}
    assert run.prefer_dict["1"][REF] + run.prefer_dict["1"][OUT] == 4


@pytest.mark.parametrize("bad_index", [2, "first", None])
def test_malformed_index_is_retried_then_a_reported_tie(server, spec, bad_index):
    stand_in = server(scripted(select=lambda prompt: {"reason": "?", "index": bad_index}))
    run = compare(stand_in, spec, {"1": example("Q1", give_answer("SOLVED a"))},
                  {"1": example("Q1", give_answer("SOLVED b"))}, evaluate_times=1, attempts=3)
    assert functions_asked(stand_in).count("select_better_answer") == 3
    assert run.prefer_dict["1"] == {REF: 0, OUT: 0, "round_0": "incomplete"}
    assert len(run.errors) == 1 and "after 3 attempts" in run.errors[0]
    assert run.records["1"][0].rule == "judge-error"


def test_written_file_is_scored_by_the_sowr_scorer(server, spec, tmp_path):
    stand_in = server(scripted())
    ref_file, out_file = tmp_path / "conv" / REF / "G1_tool.json", tmp_path / "conv" / OUT / "G1_tool.json"
    for path in (ref_file, out_file):
        path.parent.mkdir(parents=True)
    ref_file.write_text(json.dumps({"1": example("Q1", give_answer("UNSOLVED r")),
                                    "2": example("Q2", give_answer("SOLVED r")),
                                    "3": example("Q3", give_answer("SOLVED r same"))}))
    out_file.write_text(json.dumps({"1": example("Q1", give_answer("SOLVED o")),
                                    "2": example("Q2", give_answer("UNSOLVED o")),
                                    "4": example("Q4", give_answer("SOLVED o"))}))
    # 3: the output has no answer -> reference; 4: no reference answer -> output; 5: neither -> output
    ids = tmp_path / "ids"
    ids.mkdir()
    (ids / "G1_tool.json").write_text(json.dumps({q: 0 for q in "12345"}))
    # 1 out, 2 ref, 3 ref, 4 out, 5 out: 3 wins of 5
    judge = make_judge(client_for(stand_in), spec)
    outcome = prefer_files(ref_file, out_file, judge, tmp_path / "prefs", group="G1_tool", reference_model=REF,
                           output_model=OUT, test_ids_dir=ids, progress=False)
    assert outcome.preference_file.name == f"G1_tool_{REF}_{OUT}.json"
    for path in (outcome.preference_file, outcome.preference_file.with_suffix(".csv")):
        prefs = read_preference_file(path)
        assert (prefs.reference, prefs.output) == (REF, OUT)
        rows = {row.score.mode: row.score for row in rows_from_label_file(path)}
        assert rows["upstream"].mean == pytest.approx(60.0) and rows["corrected"].mean == pytest.approx(60.0)
        assert rows["upstream"].n == 5
    header = outcome.preference_file.with_suffix(".csv").read_text().splitlines()[0].split("\t")
    assert header[6] == "preference_label" and header[-2:] == ["ref_model", "output_model"]
    meta = json.loads((tmp_path / "prefs" / f"G1_tool_{REF}_{OUT}.meta.json").read_text())
    assert meta["seed"] == 0 and meta["rounds"]["1"]["0"]["winner"] == "output"


def test_ties_count_half_only_in_the_corrected_score(server, spec, tmp_path):
    # both answers Solved, so select_better_answer decides, always for the answer shown first: seed 0 shows
    # query 1's output first in both rounds (won) and query 3's output first in one round of two (a tie)
    stand_in = server(scripted(select=lambda prompt: {"index": 0}))
    ref_file, out_file = tmp_path / REF / "G2_category.json", tmp_path / OUT / "G2_category.json"
    for path, text in ((ref_file, "r"), (out_file, "o")):
        path.parent.mkdir()
        path.write_text(json.dumps({"1": example("Q1", give_answer(f"SOLVED {text}")),
                                    "3": example("Q3", give_answer(f"SOLVED {text}"))}))
    outcome = prefer_files(ref_file, out_file, make_judge(client_for(stand_in), spec, attempts=1), tmp_path / "p",
                           group="G2_category", reference_model=REF, output_model=OUT, evaluate_times=2,
                           progress=False)
    assert outcome.run.wins() == {"1": (0, 2), "3": (1, 1)} and not outcome.run.errors
    scores = {row.score.mode: row.score for row in outcome.rows}
    assert scores["upstream"].mean == pytest.approx(50.0) and scores["corrected"].mean == pytest.approx(75.0)
    assert scores["upstream"].ties == 1


def test_second_run_is_served_from_the_cache(server, spec, tmp_path):
    stand_in = server(scripted())
    reference = {"1": example("Q1", give_answer("SOLVED r BEST")), "2": example("Q2", give_answer("UNSURE r"))}
    output = {"1": example("Q1", give_answer("SOLVED o")), "2": example("Q2", give_answer("SOLVED o"))}
    cache = tmp_path / "cache.jsonl"
    first = compare(stand_in, spec, reference, output, evaluate_times=2, cache=JudgementCache(cache))
    asked = stand_in.count
    assert asked > 0 and first.cache_hits == 0
    second = compare(stand_in, spec, reference, output, evaluate_times=2, cache=JudgementCache(cache))
    assert stand_in.count == asked and second.requests == 0
    assert second.prefer_dict == first.prefer_dict
    assert second.cache_hits == 2 * 2 * 2 + 2  # two statuses per round, and the one comparison per round of 1
    # another seed shows other orders: comparisons asked again, statuses still cached
    compare(stand_in, spec, reference, output, evaluate_times=2, cache=JudgementCache(cache), seed=7)
    assert set(functions_asked(stand_in)[asked:]) <= {"select_better_answer"}


def test_json_mode_asks_for_the_index_in_the_prompt(server, spec):
    def script(payload):
        prompt = payload["messages"][0]["content"]
        assert "tools" not in payload
        if "Answer 1:" in prompt:
            first = prompt.split("Answer 1:")[0]
            return {"role": "assistant", "content": f'{{"reason": "r", "index": {0 if "BEST" in first else 1}}}'}
        return {"role": "assistant", "content": '{"reason": "r", "answer_status": "Solved"}'}

    stand_in = server(script)
    run = compare(stand_in, spec, {"1": example("Q1", give_answer("a"))},
                  {"1": example("Q1", give_answer("b BEST"))}, evaluate_times=2, mode="json")
    assert run.prefer_dict["1"][OUT] == 2 and not run.errors
    assert '"index": <0 or 1>' in stand_in.payloads[-1]["messages"][0]["content"]


def test_cli_prefer_prints_both_win_rates(server, tmp_path, capsys):
    stand_in = server(scripted())
    for model, text in ((REF, "SOLVED r"), (OUT, "UNSOLVED o")):
        path = tmp_path / "conv" / model / "G1_instruction.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"1": example("Q1", give_answer(text))}))
    code = main(["prefer", "--ref", str(tmp_path / "conv" / REF / "G1_instruction.json"),
                 "--out-answers", str(tmp_path / "conv" / OUT / "G1_instruction.json"), "--out", str(tmp_path / "p"),
                 "--judge-url", stand_in.url, "--judge-model", "standin", "--no-cache", "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "SoWR upstream" in out and "SoWR corrected" in out and ": 0.0" in out
    assert (tmp_path / "p" / f"G1_instruction_{REF}_{OUT}.json").exists()
    assert main(["prefer", "--ref", str(tmp_path / "conv" / REF / "G1_instruction.json"), "--out-answers",
                 str(tmp_path / "conv" / OUT / "G1_instruction.json"), "--out", str(tmp_path / "p"), "--judge-url",
                 stand_in.url, "--ref-model", "same", "--output-model", "same", "--no-cache", "--no-progress"]) == 2
