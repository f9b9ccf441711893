"""How fast a large run's report opens: a synthetic 765-query DFSDT run (the six StableToolBench groups at
their solvable sizes, trees of realistic size up to ~200 nodes, ReAct raw outputs with the usual
malformations, truncated observations, step records, query stats and judge labels) is written, rendered
with ``tba report`` and opened in headless Chromium.

Figures printed:
- render: seconds to read the run and write the HTML (Python), and the file size;
- open:   the page's own "rendered in N ms" (navigation start to the first full render, measured by the
          page's script with performance.now()), median of --repeats: the plain page, the largest
          trajectory opened through the hash, and a search that has to read every trajectory's text;
- wall:   Chromium's wall time to load the page and paint its first screen (--screenshot), minus the
          same on an empty page.

    .venv/bin/python benchmarks/bench_report.py [--queries 765] [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolbench_adapter.protocol.prompts import SYSTEM_PROMPT  # noqa: E402
from toolbench_adapter.report.html import write_report  # noqa: E402

GROUP_SIZES = {"G1_instruction": 163, "G1_category": 153, "G1_tool": 158, "G2_instruction": 106,
               "G2_category": 124, "G3_instruction": 61}  # 765 in all
METHOD = "DFS_woFilter_w2"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-default-browser-check", "--host-resolver-rules=MAP * ~NOTFOUND"]
WORDS = ("weather forecast currency rate league match recipe flight hotel stock price movie song artist "
         "player team score city country museum ticket event album review rating address").split()


# ---------------------------------------------------------------- the synthetic run

def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def raw_output(rng: random.Random, name: str) -> tuple[str, str, str]:
    """(raw ReAct text, error kind, arguments) with the malformations real runs show, at plausible rates."""
    arguments = json.dumps({"query": sentence(rng, 3), "limit": rng.randint(1, 20)})
    text = f"Thought: {sentence(rng, rng.randint(15, 60))}\nAction: {name}\nAction Input: {arguments}"
    roll = rng.random()
    if roll < 0.06:
        return text[:-6], "truncated_json", arguments[:-6]
    if roll < 0.10:
        return text + f"\nObservation: {{\"made\": \"{sentence(rng, 4)}\"}}", "hallucinated_observation", arguments
    if roll < 0.13:
        return text + " " + sentence(rng, 8), "trailing_text", arguments
    return text, "none", arguments


def observation(rng: random.Random) -> tuple[str, int]:
    code = rng.choices([0, 1, 6, 8, 12], weights=[85, 4, 5, 3, 3])[0]
    body = json.dumps({"error": "" if code == 0 else "API not working error...",
                       "response": sentence(rng, rng.randint(20, 220))})
    return (body[:1024] + "...") if len(body) > 1024 else body, code


def grow_tree(rng: random.Random, size: int, group: str, qid: int) -> tuple[dict, list[dict]]:
    """A DFSDT-shaped tree (width 2, Thought -> Action -> Action Input per turn) of about ``size`` nodes,
    and its step records in creation (= pre-order) order."""
    root = {"node_type": "Action Input", "description": "", "depth": 0, "children": []}
    records: list[dict] = []
    count = 0

    def turn(parent: dict, depth_turns: int) -> None:
        nonlocal count
        if count >= size or depth_turns >= 9:
            return
        name = f"{rng.choice(WORDS)}_for_{rng.choice(WORDS)}_api"
        text, error, arguments = raw_output(rng, name)
        obs, code = observation(rng)
        depth = parent["depth"]
        action_input = {"node_type": "Action Input", "description": arguments, "depth": depth + 3,
                        "observation": obs, "observation_code": code, "children": []}
        action = {"node_type": "Action", "description": name, "depth": depth + 2, "children": [action_input]}
        thought = {"node_type": "Thought", "description": text, "depth": depth + 1, "children": [action]}
        parent["children"].append(thought)
        count += 3
        records.append({"group": group, "query_id": qid, "method": METHOD, "turn": len(records) + 1,
                        "step": depth + 3, "parser": "react-robust", "error": error,
                        "rung": "strict" if error == "none" else "repair", "call": name, "status": code,
                        "suffix_match_differs": False, "source": "cache"})
        for _ in range(2 if rng.random() < 0.55 else 1):
            turn(action_input, depth_turns + 1)

    while count < size:
        turn(root, 0)
    return root, records


def tree_size(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.6:
        return rng.randint(6, 30)
    if roll < 0.9:
        return rng.randint(30, 100)
    return rng.randint(100, 200)


def write_run(run_dir: Path, total: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    scale = total / sum(GROUP_SIZES.values())
    all_records, stats, labels, nodes_total = [], [], {}, 0
    qid = 1000
    for group, size in GROUP_SIZES.items():
        (run_dir / group).mkdir(parents=True)
        labels[group] = {}
        for _ in range(max(1, round(size * scale))):
            qid += 1
            root, records = grow_tree(rng, tree_size(rng), group, qid)
            nodes_total += sum(1 for _ in walk(root)) - 1
            win = rng.random() < 0.6
            functions = [{"name": f"{rng.choice(WORDS)}_for_{rng.choice(WORDS)}_api", "description": sentence(rng, 40),
                          "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                         "required": ["query"]}} for _ in range(8)]
            messages = answer_path_messages(root, functions, rng) if win else []
            final = json.dumps({"return_type": "give_answer", "final_answer": sentence(rng, 30)}) if win else ""
            answer = {"win": win, "tree": {"size": len(records) * 3 + 1, "max_length": 28, "tree": root},
                      "forward_args": {"single_chain_max_step": 12, "tree_beam_size": 2, "max_query_count": 200,
                                       "answer": 1, "with_filter": False},
                      "compare_candidates": [],
                      "answer_generation": {"valid_data": win, "final_answer": final, "finish_type": "give_answer",
                                            "function": functions, "query_count": len(records), "total_tokens": 0,
                                            "train_messages": [messages] if messages else [],
                                            "chain": [], "query": f"Query {qid}: " + sentence(rng, 25)}}
            (run_dir / group / f"{qid}_{METHOD}.json").write_text(json.dumps(answer))
            all_records.extend(records)
            stats.append({"group": group, "query_id": qid, "query_count": len(records), "total_tokens": 0,
                          "model_seconds": round(rng.uniform(1, 40), 3), "env_seconds": round(rng.uniform(0, 5), 3),
                          "wall_seconds": round(rng.uniform(2, 60), 3), "win": win, "valid_data": win})
            verdicts = {str(r): rng.choice(["AnswerStatus.Solved", "AnswerStatus.Unsolved", "AnswerStatus.Unsure"])
                        for r in range(3)}
            labels[group][str(qid)] = {"query": "", "tool_names": [], "answer_steps": "", "final_step": "",
                                       "is_solved": verdicts, "reasons": {r: "synthetic" for r in verdicts}}
    (run_dir / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in all_records))
    (run_dir / "queries.jsonl").write_text("".join(json.dumps(s) + "\n" for s in stats))
    (run_dir / "manifest.json").write_text(json.dumps({
        "name": "synthetic-dfsdt", "model": "synthetic", "backend": "scripted", "parser": "react-robust",
        "dialect": {"name": "toolllama"}, "config": {"method": METHOD, "groups": list(GROUP_SIZES)}}))
    (run_dir / "eval").mkdir()
    for group, entries in labels.items():
        (run_dir / "eval" / f"{group}_synthetic.json").write_text(json.dumps(entries))
    return nodes_total


def answer_path_messages(root: dict, functions: list[dict], rng: random.Random) -> list[dict]:
    """Mark the first branch down the tree as the answer path (finished) and return its conversation, the
    way a run stores it: system (task and functions, ~4 KB as upstream's), user, then per turn the
    assistant's raw output with its call and the tool's observation (the report rebuilds prompts from it)."""
    task = "".join(f"{n}.{rng.choice(WORDS)}: {sentence(rng, 40)}\n" for n in range(1, 4))
    messages = [{"role": "system", "content": SYSTEM_PROMPT.replace("{task_description}", task)},
                {"role": "user", "content": sentence(rng, 30) + "\nBegin!\n"}]
    node = root
    while node["children"]:
        thought = node["children"][0]
        action = thought["children"][0]
        action_input = action["children"][0]
        for done in (thought, action, action_input):
            done["finished"] = True
        messages.append({"role": "assistant", "content": thought["description"], "tool_calls": [
            {"id": "call_x", "type": "function",
             "function": {"name": action["description"], "arguments": action_input["description"]}}]})
        messages.append({"role": "tool", "name": action["description"], "content": action_input["observation"],
                         "tool_call_id": "call_x"})
        node = action_input
    return messages


def walk(node: dict):
    yield node
    for child in node.get("children", []):
        yield from walk(child)


# ---------------------------------------------------------------- the measurements

def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("chromium not found: apt-get install -y chromium (the report test set-up does this)")
    return found


def rendered_ms(chromium: str, page: Path, fragment: str, profile: Path) -> int | None:
    """The page's own figure, read back from the DOM (dumping a 20 MB DOM is slow: not timed here)."""
    done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                           f"{page.as_uri()}#{fragment}"], capture_output=True, text=True, timeout=300)
    match = re.search(r"rendered in (\d+) ms", done.stdout)
    return int(match.group(1)) if match else None


def screenshot_wall(chromium: str, page: Path, fragment: str, profile: Path) -> float:
    """Wall time of Chromium loading the page and painting its first screen."""
    started = time.perf_counter()
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={profile / 'shot.png'}",
                    "--window-size=1400,1000", f"{page.as_uri()}#{fragment}"], capture_output=True, timeout=300)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=765)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", default=None, help="write the run and report here instead of a temp folder")
    args = parser.parse_args()
    chromium = chromium_binary()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        run_dir = work / "synthetic-dfsdt"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        started = time.perf_counter()
        nodes = write_run(run_dir, args.queries)
        print(f"synthetic run: {args.queries} queries, {nodes} nodes "
              f"({nodes / args.queries:.0f} per tree), written in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        page = write_report([run_dir], work / "report.html")
        print(f"render (tba report): {time.perf_counter() - started:.2f} s, {page.stat().st_size / 1e6:.1f} MB")
        empty = work / "empty.html"
        empty.write_text("<!DOCTYPE html><title>empty</title><p>empty</p>")
        largest = max(run_dir.glob("G*/*.json"), key=lambda p: p.stat().st_size)
        fragment_open = f"open={largest.parent.name}/{largest.name.split('_')[0]}"
        profile = work / "profile"
        profile.mkdir(parents=True, exist_ok=True)
        screenshot_wall(chromium, empty, "", profile)  # warm the profile and the binary
        baseline = statistics.median(screenshot_wall(chromium, empty, "", profile) for _ in range(args.repeats))
        views = (("page", ""), ("page + largest tree opened", fragment_open),
                 ("page + a search that reads every trajectory", "q=no-such-text"))
        for label, fragment in views:
            rendered = [rendered_ms(chromium, page, fragment, profile) for _ in range(args.repeats)]
            walls = [screenshot_wall(chromium, page, fragment, profile) for _ in range(args.repeats)]
            shown = f"{statistics.median(rendered)} ms" if None not in rendered else "no marker (script failed?)"
            print(f"open ({label}): rendered in {shown} (runs: {rendered}); load + first paint: chromium wall "
                  f"{statistics.median(walls):.2f} s - empty page {baseline:.2f} s = "
                  f"{statistics.median(walls) - baseline:.2f} s")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
