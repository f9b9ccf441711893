"""Issue 42: `tba run --trials K` writes a set of trials (NAME/trial-i, each an ordinary run folder in upstream's
layout, with seed + i sent to endpoints that take one), resumes and grows, refuses what cannot be a set (a
deterministic agent, a run folder without trials, other settings, fewer trials), and `tba evaluate` / `tba table`
read the set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from runners.cli import main
from runners.config import RunConfig
from runners.execution.trials import TrialSet
from runners.judging.evaluate_trials import evaluate_trials
from tests.openai_standin import OpenAIStandin, Reply
from tests.ray_support import needs_ray
from tests.test_run_outcomes import SolvedJudge
from toolbench_adapter.answers.convert import convert_folder
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.evaluation.scoring.trial_figures import read_figures

RATED = ["--backend", "scripted", "--backend-option", "answer_rate=0.5", "--quiet"]


def run(tmp_path: Path, *flags: str, name: str = "set") -> int:
    return main(["run", "--name", name, "--out-root", str(tmp_path), *flags])


def answers(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.glob("trial-*/G*/*.json"))}


def test_a_deterministic_agent_is_refused_before_anything_runs(tmp_path, capsys):
    assert run(tmp_path, "--backend", "scripted", "--trials", "3", "--quiet") == 2
    err = capsys.readouterr().err
    assert "3 trials of a deterministic agent measure the judge only" in err and "answer_rate" in err
    assert not (tmp_path / "set").exists()


def test_trial_folders_keep_upstreams_layout_with_their_seeds_and_a_rerun_runs_nothing(tmp_path, capsys):
    assert run(tmp_path, *RATED, "--trials", "3") == 0
    out = capsys.readouterr()
    assert "3 trials x 6 queries = 18 query runs, at most 216 model calls" in out.err
    assert "run " in out.out and "3 trials, 18 query runs (18 ran now, 0 already done)" in out.out
    folder = tmp_path / "set"
    record = json.loads((folder / "trials.json").read_text())
    assert record["trials"] == 3 and record["seeds"] == [42, 43, 44] and record["totals"]["queries"] == 18
    for index in range(3):
        trial = folder / f"trial-{index}"
        manifest = json.loads((trial / "manifest.json").read_text())
        assert manifest["config"]["seed"] == 42 + index and manifest["config"]["trial"] == index
        # one answer file per query per trial, as upstream names it; the converter reads a trial as a run
        assert [p.name for p in trial.glob("G1_instruction/*.json")] == ["900001_CoT@1.json"]
        assert set(convert_folder(trial / "G1_instruction", "CoT@1")) == {"900001"}
    # the trials drew differently (the seed reaches the agent): not every answer file is the same in every trial
    finals = [[json.loads(p.read_text())["answer_generation"]["final_answer"] != ""
               for p in sorted((folder / f"trial-{i}").glob("G*/*.json"))] for i in range(3)]
    assert len({tuple(f) for f in finals}) > 1
    before = answers(folder)
    assert run(tmp_path, *RATED, "--trials", "3") == 0
    assert "(0 ran now, 18 already done)" in capsys.readouterr().out
    assert answers(folder) == before


def test_more_trials_run_only_the_new_ones_and_fewer_or_other_settings_are_refused(tmp_path, capsys):
    assert run(tmp_path, *RATED, "--trials", "2") == 0
    before = answers(tmp_path / "set")
    assert run(tmp_path, *RATED, "--trials", "3") == 0
    after = answers(tmp_path / "set")
    assert {k: v for k, v in after.items() if not k.startswith("trial-2")} == before
    assert any(k.startswith("trial-2/") for k in after)
    capsys.readouterr()
    assert run(tmp_path, *RATED, "--trials", "2") == 2
    assert "holds 3 trials; --trials 2 would leave 1 of them out" in capsys.readouterr().err
    assert run(tmp_path, *RATED, "--trials", "3", "--method", "DFS_woFilter_w2") == 2
    assert "a set of trials of other settings (method: 'CoT@1' -> 'DFS_woFilter_w2')" in capsys.readouterr().err


def test_a_run_folder_without_trials_is_not_turned_into_a_set(tmp_path, capsys):
    assert run(tmp_path, "--backend", "scripted", "--quiet") == 0
    assert run(tmp_path, *RATED, "--trials", "2") == 2
    assert "holds a run without trials" in capsys.readouterr().err
    assert not (tmp_path / "set" / "trials.json").exists()


def test_trials_are_bounded_and_not_a_config_files_trial_setting(tmp_path, capsys):
    assert run(tmp_path, *RATED, "--trials", "101") == 2
    assert "at most 100" in capsys.readouterr().err
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"backend": "scripted", "trial": 1}))
    assert run(tmp_path, "--config", str(config), "--quiet") == 2
    assert "trial is set by tba run --trials" in capsys.readouterr().err


def test_the_parser_fanout_takes_no_trials(tmp_path, capsys):
    assert run(tmp_path, *RATED, "--trials", "2", "--parsers", "react-find,react-robust", "--dialect",
               "toolllama") == 2
    assert "--trials" in capsys.readouterr().err


def seeded_reply(endpoint: str, body: dict) -> Reply:
    """A model that calls Finish at once, its answer naming the seed it was sent."""
    arguments = json.dumps({"return_type": "give_answer", "final_answer": f"seed {body.get('seed')}"})
    return Reply(tool_calls=[{"id": "c1", "type": "function", "function": {"name": "Finish", "arguments": arguments}}])


def test_each_trial_sends_its_seed_and_a_run_without_trials_sends_none(tmp_path):
    with OpenAIStandin(respond=seeded_reply) as model:
        flags = ["--backend", "openai-chat", "--base-url", model.url, "--model", model.model, "--api-key", "x",
                 "--groups", "G1_instruction", "--quiet", "--temperature", "0.7", "--dialect", "openai-tools"]
        assert run(tmp_path, *flags, "--trials", "2", "--seed", "7") == 0
        seeds = sorted(body["seed"] for body in model.bodies("chat/completions"))
        assert seeds == [7, 8]  # one query, two trials
        for index in range(2):
            answer = json.loads(next((tmp_path / "set" / f"trial-{index}" / "G1_instruction").glob("*.json"))
                                .read_text())
            assert f"seed {7 + index}" in answer["answer_generation"]["final_answer"]
        asked = model.count()
        assert run(tmp_path, *flags, name="plain") == 0
        assert all("seed" not in body for body in model.bodies("chat/completions")[asked:])


def test_a_set_is_judged_trial_by_trial_and_as_a_set(tmp_path):
    cfg = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", backend_options={"answer_rate": 0.5},
                    trials=3)
    TrialSet(cfg, progress=False).run()
    result = evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=2, cache_path=None, progress=False)
    assert len(result.trials) == 3 and result.judge_failures == 0
    chosen, _ = choose_evaluation(tmp_path / "set")
    assert chosen.id == result.evaluation_id and chosen.data["trials"]["count"] == 3
    figures = read_figures(chosen.eval_dir)["upstream"]
    # the judge says Solved to every answer: a trial is Solved exactly when the agent answered
    answered = {}
    for index in range(3):
        for path in (tmp_path / "set" / f"trial-{index}").glob("G*/*.json"):
            solved = json.loads(path.read_text())["answer_generation"]["final_answer"] != ""
            answered.setdefault((path.parent.name, path.name.split("_")[0]), []).append(solved)
    for (group, qid), trials in answered.items():
        assert figures.solved[group][qid] == [sum(trials), 3]
    table = (chosen.tables_dir / "leaderboard_sopr_upstream.md").read_text()
    assert "3 trials, 2 judge repeat(s) each" in table and "| pass^3 |" in table
    header = (chosen.tables_dir / "leaderboard_sopr_upstream.csv").read_text().splitlines()[0].split(",")
    assert {"pass@3", "pass^3", "SoPR ci95 low", "flip rate"} <= set(header)
    for index in range(3):  # each trial's own evaluation, as any run's
        assert choose_evaluation(tmp_path / "set" / f"trial-{index}")[0].id == result.evaluation_id


def test_a_set_with_a_trial_not_run_is_refused_unless_scored_anyway(tmp_path):
    cfg = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", backend_options={"answer_rate": 0.5},
                    trials=2)
    TrialSet(cfg, progress=False).run()
    record = json.loads((tmp_path / "set" / "trials.json").read_text())
    record["trials"] = 3  # as a set whose third trial was never started
    (tmp_path / "set" / "trials.json").write_text(json.dumps(record))
    with pytest.raises(InputError, match="trial-2 of the set has not run"):
        evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    result = evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=1, cache_path=None, progress=False,
                             score_anyway=True)
    assert any("scored without trial-2" in note for note in result.notes)
    assert "†" in result.text


def test_tba_table_shows_a_sets_row_with_its_trials(tmp_path, capsys):
    cfg = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", backend_options={"answer_rate": 0.5},
                    trials=2)
    TrialSet(cfg, progress=False).run()
    evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    assert main(["table", str(tmp_path / "set"), "--out", str(tmp_path / "tables"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert "a set of trials" in out and "| pass@2 |" in out and "set (CoT@1)" in out
    assert (tmp_path / "tables" / "taxonomy_set_trial-1.md").is_file()


def test_shards_of_a_set_merge_trial_by_trial_into_the_set_one_machine_would_write(tmp_path, capsys):
    for index in (1, 2):
        assert run(tmp_path, *RATED, "--trials", "2", "--shard", f"{index}/2", name=f"shard{index}") == 0
    assert run(tmp_path, *RATED, "--trials", "2", name="whole") == 0
    assert main(["merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "--out", str(tmp_path / "merged")]) == 0
    summary = capsys.readouterr().out
    assert json.loads(summary[summary.index('{\n  "trials"'):])["trials"] == 2
    merged = tmp_path / "merged"
    assert answers(merged) == answers(tmp_path / "whole")  # the seeds travel with the trials, not the shards
    record = json.loads((merged / "trials.json").read_text())
    assert record["config"]["shard"] is None and record["totals"]["queries"] == 12
    assert main(["merge", str(tmp_path / "shard1"), "--out", str(tmp_path / "half")]) == 2
    assert "shard 2/2 of the run is missing" in capsys.readouterr().err and not (tmp_path / "half").exists()
    assert main(["merge", str(tmp_path / "shard1"), str(tmp_path / "whole" / "trial-0"), "--out",
                 str(tmp_path / "mixed")]) == 2
    assert "a set merges only with sets" in capsys.readouterr().err


@needs_ray
def test_a_set_on_ray_writes_the_answer_files_of_a_set_on_threads(tmp_path, ray_cluster):
    for executor in ("threads", "ray"):
        assert run(tmp_path, *RATED, "--trials", "2", "--executor", executor, "--concurrency", "2",
                   name=executor) == 0
    assert answers(tmp_path / "ray") == answers(tmp_path / "threads")
    assert all(json.loads((tmp_path / "ray" / f"trial-{i}" / "manifest.json").read_text())["sessions"][-1]
               ["executor"] == "ray" for i in range(2))


def test_a_broken_set_record_or_figures_file_is_named_not_a_traceback(tmp_path, capsys):
    cfg = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", backend_options={"answer_rate": 0.5},
                    trials=2)
    TrialSet(cfg, progress=False).run()
    evaluate_trials(tmp_path / "set", SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    figures = choose_evaluation(tmp_path / "set")[0].eval_dir / "trials.json"
    figures.write_text('{"format": "toolbench-adapter/trial-figures", "modes": {"upstream": {"mode": 1}}}')
    assert main(["table", str(tmp_path / "set"), "--out", str(tmp_path / "t")]) == 2
    assert "malformed figures over trials" in capsys.readouterr().err
    (tmp_path / "set" / "trials.json").write_text('{"format": "toolbench-adapter/trials", "trials": "two"}')
    assert main(["evaluate", str(tmp_path / "set"), "--judge-url", "http://127.0.0.1:9/v1", "--quiet"]) == 2
    assert "the record names no trial count" in capsys.readouterr().err
    assert run(tmp_path, *RATED, "--trials", "2") == 2
    assert "the record names no trial count" in capsys.readouterr().err
