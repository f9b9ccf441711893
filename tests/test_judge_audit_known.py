"""Issue 36: judges of known behaviour on loopback, audited against released labels. A judge that agrees with the
released label with probability p gets a kappa interval holding the kappa p implies; a constant judge gets kappa 0
or n/a, never 1 (the constant-"Solved" judge on StableToolBench's example no longer gets 1.000); a judge that
copies the released labels gets 1. Pairs decided by rule are counted apart; the judge's card is kept under the
id evaluations use, and its citation line is the one tables print."""

from __future__ import annotations

import json
import random
import re

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin, Reply
from tests.test_judge_audit import converted_answer
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.audit.sample import allocate, stratified_sample
from toolbench_adapter.evaluation.evaluations import JudgeIdentity
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.steps import get_steps
from toolbench_adapter.evaluation.storage import write_label_files

S, N = Label.SOLVED, Label.UNSOLVED
JUDGED, BY_RULE = 200, 400  # answers the judge decides (half released Solved), answers without a Finish


def known_set(root):
    """One label file: JUDGED answers with a Finish (released Solved / Unsolved alternately) and BY_RULE answers
    without one (released Unsolved, as upstream labels them by rule). Returns (labels dir, released per qid)."""
    entries, converted, released = {}, {}, {}
    for number in range(JUDGED + BY_RULE):
        qid = str(number + 1)
        finish = number < JUDGED
        label = (S if number % 2 == 0 else N) if finish else N
        example = {"query": f"Q{qid} what is the weather?", "available_tools": [{"name": "get_weather_for_demo"}],
                   "answer": converted_answer(f"answer {qid}" if finish else None)}
        steps, final = get_steps(example)
        entries[qid] = {"query": example["query"], "tool_names": ["get_weather_for_demo", "Finish"],
                        "answer_steps": steps, "final_step": final, "is_solved": {"0": label.stored()}}
        converted[qid] = example
        released[qid] = label
    write_label_files(root / "labels" / "released_model", "G1_instruction", "released_model", entries, {})
    (root / "converted" / "released_model").mkdir(parents=True)
    (root / "converted" / "released_model" / "G1_instruction.json").write_text(json.dumps(converted))
    return root / "labels", root / "converted", released


def judge_replying(verdict_of):
    """A loopback judge whose verdict for query id q is verdict_of(q)."""
    def respond(_endpoint, body):
        found = re.search(r"Q(\d+) what", body["messages"][0]["content"])
        qid = found.group(1) if found else None  # the released example's queries: constant judges only
        function = body["tool_choice"]["function"]["name"]
        arguments = json.dumps({"reason": "scripted", "answer_status": verdict_of(qid).value})
        return Reply(tool_calls=[{"id": "c1", "type": "function", "function": {"name": function,
                                                                              "arguments": arguments}}])
    return respond


def audit(capsys, standin, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["judge-audit", *args, "--judge-url", standin.url, "--judge-model", standin.model, "--no-cache",
                 "--no-progress"])
    return code, capsys.readouterr().out


def kappa_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("Accuracy"))


def interval(text: str) -> tuple[float, float]:
    low, high = re.search(r"\[([-+\d.]+), ([-+\d.]+)", text).groups()
    return float(low), float(high)


def test_a_judge_agreeing_with_probability_p_gets_the_kappa_p_implies(tmp_path, capsys):
    labels, converted, released = known_set(tmp_path)
    p = 0.8
    rng = random.Random(7)
    agrees = {qid: rng.random() < p for qid in released}
    flip = {S: N, N: S}
    with OpenAIStandin(respond=judge_replying(lambda q: released[q] if agrees[q] else flip[released[q]])) as judge:
        code, out = audit(capsys, judge, "--labels", str(labels), "--converted", str(converted))
        assert judge.count() == JUDGED  # the answers without a Finish are decided by rule: no request
    assert code == 0, out
    # balanced released labels, symmetric flips: p_o = p, p_e = 1/2, so kappa = 2p - 1
    low, high = interval(kappa_line(out).split("Cohen's kappa")[1])
    assert low <= 2 * p - 1 <= high and high - low < 0.35, kappa_line(out)
    assert f"{JUDGED} decided by the judge, {BY_RULE} by rule" in out
    assert f"decided by rule (no Finish, or an empty / give-up final answer: Unsolved without a request, in neither " \
           f"accuracy nor kappa): {BY_RULE}, released Unsolved on {BY_RULE}" in out


def test_a_constant_judge_gets_kappa_0_and_a_copying_judge_gets_1(tmp_path, capsys):
    labels, converted, released = known_set(tmp_path)
    with OpenAIStandin(respond=judge_replying(lambda q: S)) as judge:
        code, out = audit(capsys, judge, "--labels", str(labels), "--converted", str(converted))
    assert code == 0, out
    # released half Solved on the pairs the judge decided; the judge says Solved to all: kappa exactly 0
    assert "Cohen's kappa 0.000 [0.000, 0.000] (our judge said Solved to every pair)" in kappa_line(out)
    assert f"Accuracy 50.0% ({JUDGED // 2} of {JUDGED})" in kappa_line(out)
    # SoPR over every answer: released 100 of 600, ours 200 of 600: +16.7 points, and so in every resample
    # of the 100 released-Unsolved answers the judge called Solved
    average = next(line for line in out.splitlines() if line.startswith("SoPR shift"))
    low, high = interval(average)
    assert "Average +16.7" in average and low < 16.7 < high
    with OpenAIStandin(respond=judge_replying(lambda q: released[q])) as judge:
        code, out = audit(capsys, judge, "--labels", str(labels), "--converted", str(converted))
    assert code == 0, out
    assert "Cohen's kappa 1.000 [1.000, 1.000]" in kappa_line(out)
    assert "Average +0.0 [+0.0, +0.0]" in out


@pytest.mark.parametrize("verdict", [S, N])
def test_the_constant_judge_of_the_issue_on_the_released_example(capsys, verdict):
    """Was: accuracy 100.0% (18 of 18), Cohen's kappa 1.000 for the constant-Solved judge: the three released
    Unsolved labels are answers without a Finish, decided by rule on both sides with no request."""
    with OpenAIStandin(respond=judge_replying(lambda q: verdict)) as judge:
        code, out = audit(capsys, judge, "--set", "stb-example")
        assert judge.count() == 15
    assert code == 0, out
    assert out.startswith("Audit plan: 6 answers x repeats = 18 judgements: 3 decided by rule (no request), "
                          "0 cached, 15 to ask: 15 to 90 judge requests")  # before the first request
    # issue 41: the time is measured on a judgement of the audit's own (made alone, first), not on the preflight
    plan, pace = out.splitlines()[:2]
    assert "how long: measured on the first judgement, below" in plan
    assert pace.startswith("First judgement: ") and "for 1 request (measured); the other 14 judgements: about" in pace
    agreed = 15 if verdict is S else 0
    assert kappa_line(out).startswith(f"Accuracy {agreed * 100 / 15:.1f}% ({agreed} of 15), Cohen's kappa n/a: the "
                                      "released labels are all Solved on the 15 pairs the judge decided")
    assert "1.000" not in out
    assert "18 pairs over 6 answers: 15 decided by the judge, 3 by rule" in out
    assert ": 3, released Unsolved on 3" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  virtual_chatgpt")}
    assert rows["virtual_chatgpt_cot"][2:4] == ["6", "3"] and rows["virtual_chatgpt_dfs"][2:4] == ["9", "0"]


def test_the_card_is_kept_under_the_evaluations_judge_id_and_cited(tmp_path, capsys):
    cards = tmp_path / "cards"
    with OpenAIStandin(respond=judge_replying(lambda q: S)) as judge:
        code, out = audit(capsys, judge, "--set", "stb-example", "--judge-cards", str(cards))
        identity = JudgeIdentity(f"{judge.model} @ {judge.url} [tools]", judge.model, (judge.url,), "tools", 3,
                                 "default", "sha")
        other = JudgeIdentity(f"other @ {judge.url} [tools]", "other", (judge.url,), "tools", 3, "default", "sha")
    assert code == 0, out
    [card_file] = cards.iterdir()
    assert card_file.name == f"{identity.short_id}.json"  # standin-model@127.0.0.1_PORT-tools-x3
    card = json.loads(card_file.read_text())
    [entry] = card["audits"]
    assert (entry["set"], entry["answers"], entry["pairs"], entry["pairs_by_rule"]) == ("stb-example", 6, 15, 3)
    assert entry["kappa"] is None and "all Solved" in entry["kappa_why"] and entry["sopr_shift"] == 0.0
    assert entry["date"] and card["judge"]["id"] == identity.short_id
    line = citation(identity, cards)
    assert line.startswith(f"judge {identity.short_id}: kappa n/a (the released labels are all Solved")
    assert line.endswith("SoPR shift +0.0 [+0.0, +0.0] points against the released labels on 6 answers "
                         "(set stb-example)")
    assert f"cite as: {line}" in out
    assert citation(other, cards) == (f"judge {other.short_id} not audited: run `tba judge-audit --set stb-example "
                                      f"--judge-url {judge.url} --judge-model other --judge-mode tools "
                                      "--evaluate-times 3`")
    card_file.write_text("[]")  # a damaged card is never cited, and citing it raises nothing (issue 40)
    assert citation(identity, cards).startswith(f"judge card unreadable: {card_file}: not a judge card; run `tba "
                                                "judge-audit --set stb-example")


def test_a_judge_that_failed_judgements_gets_no_card(tmp_path, capsys):
    cards = tmp_path / "cards"
    with OpenAIStandin(chat=["no tool call here"]) as judge:
        capsys.readouterr()
        code = main(["judge-audit", "--set", "stb-example", "--judge-url", judge.url, "--judge-model", judge.model,
                     "--no-cache", "--no-progress", "--attempts", "1", "--judge-cards", str(cards)])
    assert code == 3 and not cards.exists()


def test_the_sample_is_stratified_by_group_and_released_label(tmp_path, capsys):
    groups = ["G1_instruction", "G2_category"]
    released = [{str(i): {0: S if i < 30 else N} for i in range(100)}, {str(i): {0: N} for i in range(50)}]
    chosen = stratified_sample(groups, released, 30, seed=1)
    counts = {(g, lab): 0 for g in groups for lab in ("Solved", "Unsolved")}
    for index, qid in chosen:
        counts[(groups[index], released[index][qid][0].value)] += 1
    # shares 30/150, 70/150, 50/150 of 30 answers: 6, 14, 10
    assert counts == {("G1_instruction", "Solved"): 6, ("G1_instruction", "Unsolved"): 14,
                      ("G2_category", "Solved"): 0, ("G2_category", "Unsolved"): 10}
    assert chosen == stratified_sample(groups, released, 30, seed=1) != stratified_sample(groups, released, 30, seed=2)
    assert sum(allocate({("a", "x"): 1, ("b", "y"): 1, ("c", "z"): 1}, 2).values()) == 2
    with pytest.raises(InputError, match="more than the set's 150 answers"):
        stratified_sample(groups, released, 151, seed=1)
    labels, converted, _released = known_set(tmp_path)
    with OpenAIStandin(respond=judge_replying(lambda q: S)) as judge:
        code, out = audit(capsys, judge, "--labels", str(labels), "--converted", str(converted), "--sample", "60",
                          "--seed", "3")
        # 100 released Solved, 100 + 400 Unsolved (with and without a Finish) of 600: 10 Solved, 50 Unsolved drawn
        assert out.startswith("Audit plan: 60 answers x repeats = 60 judgements")
        to_ask = int(re.search(r"(\d+) to ask", out).group(1))
        assert judge.count() == to_ask
    assert code == 0 and "Accuracy" in out
    assert re.search(r"Solved\s+(\d+)\s+0\s+0", out).group(1) == "10"  # released Solved row of the matrix


def test_the_example_set_ships_upstreams_converted_answers_byte_for_byte(stb_root):
    from toolbench_adapter.evaluation.audit.sets import audit_set

    shipped = audit_set("stb-example").converted
    files = sorted(path.relative_to(shipped) for path in shipped.rglob("*.json"))
    assert [str(f) for f in files] == ["virtual_chatgpt_cot/G1_instruction.json", "virtual_chatgpt_dfs/G1_instruction.json"]
    for name in files:
        assert (shipped / name).read_bytes() == (stb_root / "data_example" / "model_predictions_converted" / name).read_bytes()


def test_a_label_file_no_answer_was_drawn_from_is_no_row(capsys):
    with OpenAIStandin(respond=judge_replying(lambda q: S)) as judge:
        code, out = audit(capsys, judge, "--set", "stb-example", "--sample", "1", "--seed", "0")
    assert code == 0 and out.startswith("Audit plan: 1 answer x repeats = 3 judgements")
    assert len([line for line in out.splitlines() if line.startswith("  virtual_chatgpt")]) == 1


def test_tables_cite_the_audit_of_their_judge_and_say_not_audited_for_another(tmp_path, capsys):
    """Issue 36's done-when: after `tba judge-audit` with a judge, `tba evaluate` with that judge writes tables
    (MD, CSV, LaTeX, `tba table`, the report's headline) citing its card; another judge's say "not audited"."""
    import csv
    import io

    from runners.config import RunConfig
    from runners.execution.runner import Runner
    from toolbench_adapter.evaluation.evaluations import choose_evaluation
    from toolbench_adapter.report.headline import headline
    from toolbench_adapter.report.run_data import load_run

    def judged_boards(run_dir, judge, model):
        code = main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", model,
                     "--evaluate-times", "3", "--cache", str(tmp_path / f"cache-{model}.json"), "--quiet"])
        assert code == 0, capsys.readouterr().out
        tables = next(e for e in choose_evaluation(run_dir)[1] if e.data["judge"]["model"] == model).tables_dir
        return {suffix: (tables / f"leaderboard_sopr_upstream.{suffix}").read_text() for suffix in ("md", "csv", "tex")}

    runs = {}
    for name in ("audited", "other"):
        Runner(RunConfig(name=name, out_root=str(tmp_path), backend="scripted"), progress=False).run()
        runs[name] = tmp_path / name
    with OpenAIStandin(respond=judge_replying(lambda q: S), models=("standin-model", "another-judge")) as judge:
        code, out = audit(capsys, judge, "--set", "stb-example", "--evaluate-times", "3")
        assert code == 0, out
        cited = next(line for line in out.splitlines() if line.startswith("cite as: ")).removeprefix("cite as: ")
        assert "kappa n/a" in cited and "(set stb-example)" in cited
        boards = judged_boards(runs["audited"], judge, judge.model)
        other = judged_boards(runs["other"], judge, "another-judge")
    assert cited in boards["md"].splitlines()
    assert next(csv.DictReader(io.StringIO(boards["csv"])))["judge audit"] == cited
    assert "kappa n/a" in boards["tex"] and "set stb-example" in boards["tex"]
    capsys.readouterr()
    assert main(["table", str(runs["audited"]), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert cited in capsys.readouterr().out.splitlines()
    assert headline(load_run(runs["audited"]))["judgeCard"] == cited
    [not_audited] = [line for line in other["md"].splitlines() if " not audited: run `tba judge-audit" in line]
    assert "--judge-model another-judge" in not_audited and "kappa" not in not_audited
