"""A search method is a plug-in (runners/search/methods.py): a toy method from outside the project, declared by
an entry point in the group toolbench_adapter.search_methods (as a third-party package would), runs end to end
through `tba run` (answer files, steps, manifest totals), and `tba convert` and `tba evaluate` read its answer
files, an unanswered (invalid) one included: its fallback comes from the file's shape, not from the method's name.
No file of the project names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import FAST_RETRIES, solved

PROJECT_ROOT = Path(__file__).resolve().parent.parent

TOY_METHOD = textwrap.dedent('''
    """Toy@N: one chain of at most N model turns, then its answer file in the CoT shape. Query 900003 gets one
    turn only (its tool call, no Finish): an unanswered query, whose answer file is invalid."""
    import re

    from runners.search.answer_file import chain, generation
    from runners.search.methods import suffix_number
    from toolbench_adapter.answers.write import cot_answer


    class OneChain:
        family, form, example = "Toy", "Toy@N", "Toy@3"

        def __init__(self, turns, name):
            self.turns, self.name = turns, name

        @classmethod
        def parse(cls, name):
            match = re.fullmatch(r"Toy@(\\d+)", name)
            return cls(suffix_number(name, cls, match.group(1)), name) if match else None

        def search(self, agent, ctx, new_root, limits):
            node = new_root()
            for _ in range(1 if ctx.toolset.query.query_id == 900003 else self.turns):
                node = agent.expand(node, ctx)
                if node.is_terminal or node.pruned:
                    break
            valid = node.is_terminal and not node.pruned
            answer = generation(ctx, node if valid else None, valid, node.description if valid else "", [])
            return cot_answer(win=valid, trys=[{"chain": chain(node), "win": valid}],
                              compare_candidates=[chain(node)] if valid else [], max_step=self.turns, pass_at=1,
                              generation=answer)
''')


def install_toy(root: Path) -> dict:
    """The toy method as an installed distribution would be: a module and its dist-info with an entry point."""
    root.mkdir(parents=True)
    (root / "toy_search.py").write_text(TOY_METHOD, encoding="utf-8")
    info = root / "toy_search-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-search\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[toolbench_adapter.search_methods]\nToy = toy_search:OneChain\n",
                                           encoding="utf-8")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(PROJECT_ROOT)])}


def tba(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners.cli", *args], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_search_method_registered_from_outside_runs_end_to_end(tmp_path):
    env = install_toy(tmp_path / "site")
    runs = tmp_path / "runs"
    done = tba(env, "run", "--name", "toy", "--out-root", str(runs), "--backend", "scripted", "--method", "Toy@4",
               "--quiet", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    run = runs / "toy"
    answers = sorted(run.glob("G*/*_Toy@4.json"))
    assert len(answers) == 6  # every evaluated query of the sample set
    data = json.loads((run / "G1_instruction" / "900001_Toy@4.json").read_text(encoding="utf-8"))
    assert data["win"] is True and data["forward_args"]["single_chain_max_step"] == 4
    assert data["answer_generation"]["valid_data"] is True
    unanswered = run / "G1_category" / "900003_Toy@4.json"
    assert json.loads(unanswered.read_text(encoding="utf-8"))["answer_generation"]["valid_data"] is False
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["method"] == "Toy@4"
    assert manifest["totals"]["finished"] == 6 and manifest["totals"]["answered"] == 5
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    # a call, then Finish, per query; the unanswered one: its call only
    assert {s["method"] for s in steps} == {"Toy@4"} and len(steps) == 11
    converted = tmp_path / "converted.json"
    for group in ("G1_instruction", "G1_category"):  # an answered query, then the unanswered one
        done = tba(env, "convert", "--answers", str(run / group), "--method", "Toy@4", "--out", str(converted))
        assert done.returncode == 0, done.stdout + done.stderr
        [entry] = json.loads(converted.read_text(encoding="utf-8")).values()
        assert entry["answer"]["method"] == "Toy@4" and entry["answer"]["answer_details"]
    # the invalid answer's fallback: its one try (the CoT shape), walked as upstream walks a CoT try
    assert entry["answer"]["final_answer"] == "" and entry["answer"]["total_steps"] > 2
    with OpenAIStandin(respond=solved) as judge:  # every verdict Solved
        done = tba(env, "evaluate", str(run), "--judge-url", judge.url, "--judge-model", judge.model, "--quiet",
                   "--evaluate-times", "1", "--cache", str(tmp_path / "judge.jsonl"), *FAST_RETRIES)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (run / "converted").glob("*/*.json")) == sorted(p.parent.name + ".json"
                                                                                 for p in answers)
    assert "Toy@4" in done.stdout


def test_every_registered_method_is_named_when_a_method_is_unknown(tmp_path):
    env = install_toy(tmp_path / "site")
    done = tba(env, "run", "--name", "x", "--out-root", str(tmp_path), "--backend", "scripted", "--method", "Toi@1")
    assert done.returncode == 2
    assert "unknown method 'Toi@1'" in done.stderr
    assert "CoT@N (e.g. CoT@1), DFS_woFilter_wN (e.g. DFS_woFilter_w2) or Toy@N (e.g. Toy@3)" in done.stderr
    done = tba(env, "run", "--name", "x", "--out-root", str(tmp_path), "--backend", "scripted", "--method", "Toy@0")
    assert done.returncode == 2 and "Toy@N needs N >= 1" in done.stderr
    (tmp_path / "run.yaml").write_text("method: 2\n", encoding="utf-8")  # a config file's method of a wrong type
    done = tba(env, "run", "--config", str(tmp_path / "run.yaml"))
    assert done.returncode == 2 and "or Toy@N (e.g. Toy@3)" in done.stderr
    done = tba(env, "run", "--help")  # the help names the registered methods too
    assert done.returncode == 0 and "Toy@N" in done.stdout


def test_a_plugin_methods_answer_file_names_are_read_in_any_layout():
    """Recorded answers (replay, cache building) name their method in the file name: a plug-in's is the tail
    after the query id, as upstream's CoT@N and DFS_woFilter_wN are (those still found behind a model name)."""
    from toolbench_adapter.answers.read import AnswerIdentity, identify_answer_path

    assert identify_answer_path("G1_category/900003_Toy@4.json") == AnswerIdentity(900003, "Toy@4", "G1_category")
    assert identify_answer_path("A_G2_instruction_m/x_G2_instruction_m_81506_Beam_w3.json") == \
        AnswerIdentity(81506, "Beam_w3", "G2_instruction")
    assert identify_answer_path("G1_answer/69_ChatGPT_DFS_woFilter_w2.json").method == "DFS_woFilter_w2"
    assert identify_answer_path("G1_answer/69.json").method is None
