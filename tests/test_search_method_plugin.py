"""A search method is a plug-in (runners/search/methods.py): a toy method from outside the project, declared by
an entry point in the group toolbench_adapter.search_methods (as a third-party package would), runs end to end
through `tba run` (answer files, steps, manifest totals), and `tba convert` reads its answer files. No file of
the project names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

TOY_METHOD = textwrap.dedent('''
    """Toy@N: one chain of at most N model turns, then its answer file in the CoT shape."""
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
            for _ in range(self.turns):
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
    data = json.loads(answers[0].read_text(encoding="utf-8"))
    assert data["win"] is True and data["forward_args"]["single_chain_max_step"] == 4
    assert data["answer_generation"]["valid_data"] is True
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["method"] == "Toy@4"
    assert manifest["totals"]["finished"] == 6 and manifest["totals"]["answered"] == 6
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {s["method"] for s in steps} == {"Toy@4"} and len(steps) == 12  # a call, then Finish, per query
    converted = tmp_path / "converted.json"
    done = tba(env, "convert", "--answers", str(answers[0].parent), "--method", "Toy@4", "--out", str(converted))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(json.loads(converted.read_text(encoding="utf-8"))) == len(list(answers[0].parent.glob("*.json")))


def test_every_registered_method_is_named_when_a_method_is_unknown(tmp_path):
    env = install_toy(tmp_path / "site")
    done = tba(env, "run", "--name", "x", "--out-root", str(tmp_path), "--backend", "scripted", "--method", "Toi@1")
    assert done.returncode == 2
    assert "unknown method 'Toi@1'" in done.stderr
    assert "CoT@N (e.g. CoT@1), DFS_woFilter_wN (e.g. DFS_woFilter_w2) or Toy@N (e.g. Toy@3)" in done.stderr
    done = tba(env, "run", "--name", "x", "--out-root", str(tmp_path), "--backend", "scripted", "--method", "Toy@0")
    assert done.returncode == 2 and "Toy@N needs N >= 1" in done.stderr
