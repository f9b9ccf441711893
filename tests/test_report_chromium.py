"""The report in a real browser: headless Chromium (Debian's package, installed here when absent) opens the
page of a real run, applies filters and a search through the URL hash, and the test reads what it shows.

The run: StableToolBench's released ChatGPT CoT answers driven through the pipeline (replay backend,
embedded server answering from a cache built from the same answers), then evaluated (`tba evaluate`'s
evaluate_run) with a scripted in-process judge, so the page has a leaderboard row and labels with reasons. Set TBA_REPORT_EXAMPLE_DIR to keep the page and a screenshot.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runners.config import RunConfig
from runners.evaluate import evaluate_run
from runners.run import Runner
from tests.test_report_html import make_text_runs
from toolbench_adapter.report.html import write_report
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.cache_build import build_cache
from toolbench_adapter.server.runner import EmbeddedServer

GROUP = "G1_instruction"
QUERY_IDS = [588, 608, 1073]
# what the scripted judge says, by a phrase of each query (588 has no final answer: Unsolved without asking)
VERDICTS = {"gmhikaru": "Solved", "birthday party": "Unsolved"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-default-browser-check", "--host-resolver-rules=MAP * ~NOTFOUND",  # no network at all
         "--virtual-time-budget=5000"]


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium; installed with apt-get when absent (skips only where that is impossible)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("chromium is not installed and cannot be (needs root and apt-get): apt-get install chromium")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"could not install chromium ({' '.join(command)}: {done.stderr.strip()[-300:]})")
    found = shutil.which("chromium")
    if not found:
        pytest.skip("apt-get installed chromium but no chromium binary is on PATH")
    return found


def browse(chromium: str, page: Path, fragment: str, profile: Path, *extra: str) -> str:
    result = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *extra, f"{page.as_uri()}#{fragment}"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def dump(chromium: str, page: Path, fragment: str, profile: Path) -> str:
    dom = browse(chromium, page, fragment, profile, "--dump-dom")
    assert 'data-ready="1"' in dom, "the page's script did not finish"
    return re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # what is shown: no data, no code


def shown_rows(dom: str) -> list[str]:
    return re.findall(r'<tr class="qrow[^"]*" data-key="([^"]+)"', dom)


def count_line(dom: str) -> str:
    return re.search(r'id="count"[^>]*>([^<]*)<', dom).group(1)


class ScriptedJudge:
    """An in-process judge client (the ChatClient protocol): verdicts by a phrase of the query."""

    name = "scripted-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None):
        prompt = messages[0]["content"]
        status = next((v for phrase, v in VERDICTS.items() if phrase in prompt), "Unsolved")
        arguments = json.dumps({"reason": f"scripted: {status.lower()} because of the {status} rule",
                                "answer_status": status})
        function = tool_choice["function"]["name"]
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": function, "arguments": arguments}}]}


@pytest.fixture(scope="module")
def released_run(stb_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("released")
    answers = stb_root / "data_example" / "answer" / "virtual_chatgpt_cot"
    build_cache([answers], stb_root, tmp / "cache")
    server = build_virtual_server(ServerConfig(cache_dir=tmp / "cache", stb_root=stb_root, simulator="none",
                                               save=False))
    cfg = RunConfig(name="released-chatgpt-cot", out_root=str(tmp / "runs"), stb_root=str(stb_root), groups=[GROUP],
                    query_ids=QUERY_IDS, method="CoT@1", backend="replay",
                    backend_options={"answers": str(answers)}, dialect="openai-tools", flavour="legacy")
    with EmbeddedServer(create_app(server)) as embedded:
        Runner(cfg, server_url=embedded.url, progress=False).run()
    run_dir = tmp / "runs" / cfg.name
    evaluate_run(run_dir, ScriptedJudge(), evaluate_times=3, cache_path=None, progress=False)  # tba evaluate
    return run_dir


def test_released_run_report_filters_and_search_in_chromium(chromium, released_run, tmp_path):
    page = write_report([released_run], tmp_path / "report.html")
    profile = tmp_path / "profile"

    everything = dump(chromium, page, "", profile)
    assert sorted(shown_rows(everything)) == sorted(f"{GROUP}/{q}" for q in map(str, QUERY_IDS))
    assert count_line(everything) == "3 of 3 queries"
    assert "SoPR (upstream)" in everything and "scripted-judge" in everything  # the leaderboard row
    assert 'id="not-evaluated"' not in everything

    solved = dump(chromium, page, f"group={GROUP}&label=Solved", profile)
    assert shown_rows(solved) == [f"{GROUP}/608"] and count_line(solved) == "1 of 3 queries"
    assert '<option value="Solved">' in solved and 'id="f-label"' in solved

    # 588 never answered: it has no Finish, so no status 3; the taxonomy link #status=3 leaves it out
    finished = dump(chromium, page, "status=3", profile)
    assert sorted(shown_rows(finished)) == [f"{GROUP}/1073", f"{GROUP}/608"]
    assert 'href="#run=0&amp;status=3"' in finished or 'href="#run=0&status=3"' in finished

    # the search reads raw outputs and observations, not only the query text
    needle = observation_only_in(released_run, "1073")
    searched = dump(chromium, page, "q=" + needle.replace(" ", "%20"), profile)
    assert shown_rows(searched) == [f"{GROUP}/1073"]
    assert dump(chromium, page, "q=no-such-text-anywhere-42", profile).count('id="no-match"') == 1

    opened = dump(chromium, page, f"label=Solved&open={GROUP}/608", profile)
    trajectory = re.search(r'<div class="trajectory".*', opened, re.S).group(0)
    assert "status 3 final_answer" in trajectory and "observation" in trajectory
    assert "scripted: solved because of the Solved rule" in trajectory  # judge reasons per repeat
    assert "gmhikaru" in trajectory and "Final answer" in trajectory

    shot = tmp_path / "report.png"
    browse(chromium, page, f"label=Solved&open={GROUP}/608", profile, f"--screenshot={shot}", "--window-size=1400,1000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 30_000  # a blank page is ~6 kB
    keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(page, Path(keep) / "released_chatgpt_cot.html")
        shutil.copy(shot, Path(keep) / "released_chatgpt_cot_solved.png")


def observation_only_in(run_dir: Path, query_id: str) -> str:
    """A phrase of one query's observations that no other answer file of the run contains."""
    answers = {p.name.split("_")[0]: p.read_text() for p in (run_dir / GROUP).glob("*.json")}
    data = json.loads(answers[query_id])
    for node in data["trys"][0]["chain"]:
        for word in re.findall(r"[A-Za-z]{7,}", node.get("observation", "")):
            if all(word.lower() not in text.lower() for qid, text in answers.items() if qid != query_id) \
                    and word.lower() not in data["answer_generation"]["query"].lower():
                return word
    pytest.fail("no distinctive observation word found")


def test_parser_variant_comparison_in_chromium(chromium, tmp_path):
    runs = make_text_runs(tmp_path / "runs")
    page = write_report(runs, tmp_path / "compare.html")
    profile = tmp_path / "profile"
    everything = dump(chromium, page, "", profile)
    assert 'id="compare-summary"' in everything and count_line(everything) == "6 of 6 queries"
    ranks = re.findall(r'<tr class="qrow crow[^"]*" data-key="[^"]+" data-rank="(\d)"', everything)
    assert ranks == sorted(ranks, reverse=True) and ranks[0] == "2"  # disagreements first
    only_outcome = dump(chromium, page, "view=compare&rank=2", profile)
    assert set(re.findall(r'data-rank="(\d)"', only_outcome)) == {"2"}
    alone = dump(chromium, page, "run=1", profile)
    assert 'id="not-evaluated"' in alone and count_line(alone) == "6 of 6 queries"
    side = dump(chromium, page, "view=compare&open=G1_category/900003", profile)
    assert side.count('<div class="trajectory"') == 2  # both parsers' trajectories, side by side
    assert 'class="hl-cut"' in side and "hallucinated_observation" in side
    keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
    if keep:
        shot = Path(keep) / "parser_variants_compare.png"
        browse(chromium, page, "view=compare&open=G1_category/900003", profile, f"--screenshot={shot}",
               "--window-size=1400,1000")
