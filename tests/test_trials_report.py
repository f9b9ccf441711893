"""Issue 42 on the report: a set of trials' page opens with SoPR over trials [95% CI], pass@K / pass^K and the
flip rate, says per query "Solved in c of K trials", and every page says what the run cost (calls, tokens, latency)."""

from __future__ import annotations

import json

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.execution.trials import TrialSet
from runners.judging.evaluate_trials import evaluate_trials
from runners.models.scripted import ScriptedBackend
from tests.test_report_chromium import chromium, dump  # noqa: F401 (the fixture)
from tests.test_run_outcomes import SolvedJudge
from toolbench_adapter.report.html import build_report, write_report


def judged_set(tmp_path, trials=3):
    cfg = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", backend_options={"answer_rate": 0.5},
                    trials=trials)
    TrialSet(cfg, progress=False).run()
    evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    return tmp_path / "set"


def payload(page: str) -> dict:
    start = page.index('<script type="application/json" id="report-data">') + len('<script type="application/json" id="report-data">')
    return json.loads(page[start:page.index("</script>", start)])


def test_a_sets_page_has_its_figures_over_trials_and_each_querys_trials(tmp_path):
    set_dir = judged_set(tmp_path)
    run = payload(build_report([set_dir]))["runs"][0]
    headline = run["headline"]
    assert headline["trials"]["count"] == 3 and headline["trials"]["k"] == 3
    assert headline["sopr"]["upstream"]["text"] == headline["trials"]["text"]  # SoPR over trials [CI]
    answered = {}
    for index in range(3):
        for path in (set_dir / f"trial-{index}").glob("G*/*.json"):
            solved = json.loads(path.read_text())["answer_generation"]["final_answer"] != ""
            answered[path.name.split("_")[0]] = answered.get(path.name.split("_")[0], 0) + solved
    assert {q["id"]: q["tr"] for q in run["queries"]} == {
        qid: f"Solved in {n} of 3 trials" for qid, n in answered.items()}
    upstream = next(board for board in run["boards"] if board["caption"].startswith("SoPR (upstream)"))
    assert upstream["rows"][0][-1] == headline["trials"]["text"]  # the set's Average: SoPR over trials [95% CI]
    assert "a set of 3 trials" in run["notes"][0]


def test_every_page_says_what_the_run_cost(tmp_path):
    cfg = RunConfig(name="plain", out_root=str(tmp_path), backend="scripted")
    Runner(cfg, backend=ScriptedBackend(), progress=False).run()
    cost = payload(build_report([tmp_path / "plain"]))["runs"][0]["headline"]["cost"]
    assert cost.startswith("12 model calls (2.0 per query)") and "model latency p50" in cost
    assert "no --prices file" in cost


def test_the_first_screen_in_chromium(chromium, tmp_path):  # noqa: F811
    page = write_report([judged_set(tmp_path)], tmp_path / "set.html")
    dom = dump(chromium, page, "", tmp_path / "profile")
    assert 'id="card-trials"' in dom and "over 3 trials" in dom and "pass^3" in dom
    assert "Solved in" in dom and 'id="cost"' in dom
