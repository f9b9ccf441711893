"""The report in a real browser: headless Chromium (Debian's package, installed here when absent) opens the
page of a real run, applies filters and a search through the URL hash, and the test reads what it shows.
Layout and keyboard checks drive the same browser over its DevTools pipe (--remote-debugging-pipe: no port,
no network): the headline is in the first screen, nothing is wider than a 1400 px window, the keys walk
the queries.

The run: StableToolBench's released ChatGPT CoT answers driven through the pipeline (replay backend,
embedded server answering from a cache built from the same answers), then evaluated (`tba evaluate`'s
evaluate_run) with a scripted in-process judge, so the page has a leaderboard row and labels with reasons. Set TBA_REPORT_EXAMPLE_DIR to keep the page and a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
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


class Chrome:
    """Headless Chromium driven over --remote-debugging-pipe: it reads commands on fd 3 and writes replies on
    fd 4, each a JSON object ended by a NUL byte (the DevTools protocol)."""

    def __init__(self, binary: str, profile: Path, width: int = 1400, height: int = 1000):
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()

        def wire() -> None:  # in the child, before exec: the pipe ends where Chromium looks for them
            os.dup2(commands_read, 3)
            os.dup2(replies_write, 4)

        flags = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]
        self.process = subprocess.Popen(
            [binary, *flags, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self._id, self._buffer = 0, b""
        page = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", page=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def send(self, method: str, page: bool = False, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if page:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._replies, 1 << 16)
                assert chunk, "chromium closed its DevTools pipe"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply.get("result", {})

    def js(self, expression: str):
        result = self.send("Runtime.evaluate", page=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.send("Page.navigate", page=True, url=url)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.js("location.href") == url and self.js(
                    "document.body && document.body.getAttribute('data-ready')") == "1":
                return
            time.sleep(0.05)
        raise AssertionError(f"the page did not render: {url}")

    def key(self, key: str, code: str, key_code: int) -> None:
        text = {"text": key} if len(key) == 1 else {}
        self.send("Input.dispatchKeyEvent", page=True, type="keyDown", key=key, code=code,
                  windowsVirtualKeyCode=key_code, **text)
        self.send("Input.dispatchKeyEvent", page=True, type="keyUp", key=key, code=code, windowsVirtualKeyCode=key_code)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", page=True, format="png")["data"]))

    def close(self) -> None:
        try:
            self.send("Browser.close")
        finally:
            self.process.wait(timeout=30)


@pytest.fixture
def chrome(chromium, tmp_path):
    browser = Chrome(chromium, tmp_path / "devtools-profile")
    yield browser
    browser.close()


# the right edge of everything shown, against the window's width (content wider than the window scrolls it)
WIDEST = """(() => { let right = 0, what = "";
  for (const node of document.querySelectorAll("body *")) {
    if (!node.getClientRects().length) continue;
    const r = node.getBoundingClientRect();
    if (r.right > right) { right = r.right; what = node.tagName + "." + node.className; } }
  return {right: right, what: what, scroll: document.documentElement.scrollWidth,
          width: document.documentElement.clientWidth}; })()"""


def assert_fits(chrome: Chrome, where: str) -> None:
    widest = chrome.js(WIDEST)
    assert widest["scroll"] <= widest["width"], (where, widest)
    assert widest["right"] <= widest["width"] + 1, (where, widest)


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
    # the prompts embedded for the step details are not searched: every query's system prompt has this word
    assert dump(chromium, page, "q=AutoGPT", profile).count('id="no-match"') == 1

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


def test_first_screen_step_details_and_keys_in_chromium(chrome, released_run, tmp_path):
    page = write_report([released_run], tmp_path / "report.html")
    chrome.open(page.as_uri())
    first = chrome.js("""(() => { const box = id => document.getElementById(id).getBoundingClientRect();
      const row = document.querySelector("tr.qrow").getBoundingClientRect();
      return {headline: [box("headline").top, box("headline").bottom], facts: box("facts").bottom,
              row: row.top, height: innerHeight, text: document.getElementById("first-screen").innerText,
              setupOpen: document.getElementById("setup").open}; })()""")
    assert 0 <= first["headline"][0] and first["headline"][1] <= first["height"]  # visible without scrolling
    assert first["row"] < first["height"]  # and the query table starts on the first screen too
    assert "released-chatgpt-cot" in first["text"] and "CoT@1" in first["text"]
    assert "openai-tools / openai-tools" in first["text"] and "scripted-judge" in first["text"]
    assert re.search(r"SoPR upstream\s+[\d.]+(±[\d.]+)?\s+n \d of 3", first["text"]), first["text"]
    assert re.search(r"valid answers\s+2 / 3", first["text"]) and "infrastructure failures" in first["text"]
    assert first["setupOpen"] is False  # set-up details fold below
    assert_fits(chrome, "first screen")
    chrome.js("document.getElementById('setup').open = true")
    assert_fits(chrome, "set-up details open (manifest with long paths)")

    chrome.open(page.as_uri() + f"#open={GROUP}/608")
    chrome.js("document.querySelectorAll('.trajectory details').forEach(d => d.open = true)")
    assert_fits(chrome, "a query open with every fold open")
    step = chrome.js("""(() => { const t = document.querySelector(".trajectory");
      return {calls: [...t.querySelectorAll(".call-head")].map(n => n.innerText),
              prompt: [...t.querySelectorAll("details.prompt > summary")].map(n => n.innerText),
              roles: [...t.querySelectorAll(".messages .badge.role")].map(n => n.innerText),
              tools: t.querySelectorAll("details.prompt details pre").length,
              toolCalls: [...t.querySelectorAll(".tool-call")].map(n => n.innerText),
              nav: document.getElementById("qnav").innerText}; })()""")
    assert step["calls"] and step["calls"][0].startswith("model call 1")
    assert all("tokens" in c and "latency" in c for c in step["calls"])
    # every call's prompt, as the run recorded it sent (steps.jsonl)
    assert len(step["prompt"]) == len(step["calls"]) and all("recorded" in p for p in step["prompt"])
    assert step["roles"][:2] == ["system", "user"] and step["tools"] >= 1  # the messages and the tools sent
    assert step["toolCalls"] and all(re.match(r"tool call: (HTTP \d+|HTTP status, reply kind, attempts and "
                                              r"latency unknown)", t) for t in step["toolCalls"])
    assert "query 2 of 3 shown" in step["nav"]

    def opened():
        return chrome.js("(new URLSearchParams(location.hash.slice(1))).get('open')")

    chrome.key("j", "KeyJ", 74)
    assert opened() == f"{GROUP}/1073"
    chrome.key("ArrowLeft", "ArrowLeft", 37)
    chrome.key("k", "KeyK", 75)
    assert opened() == f"{GROUP}/588"
    chrome.js("document.getElementById('next-query').click()")
    assert opened() == f"{GROUP}/608"
    chrome.key("Escape", "Escape", 27)
    assert not opened() and chrome.js("document.querySelectorAll('.trajectory').length") == 0

    keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
    if keep:
        chrome.open(page.as_uri())
        chrome.screenshot(Path(keep) / "released_chatgpt_cot_first_screen.png")
        chrome.open(page.as_uri() + f"#open={GROUP}/608")
        chrome.js("document.querySelector('details.prompt').open = true")
        chrome.js("document.querySelector('.call').scrollIntoView()")
        chrome.screenshot(Path(keep) / "released_chatgpt_cot_step_details.png")


def test_comparison_counts_missing_apart_in_chromium(chrome, tmp_path):
    runs = make_text_runs(tmp_path / "runs")
    for path in (runs[1] / "G3_instruction").glob("*.json"):
        path.unlink()  # the second run lacks one query: missing, not a differing outcome
    page = write_report(runs, tmp_path / "compare.html")
    chrome.open(page.as_uri())
    summary_text = chrome.js("document.getElementById('compare-summary').innerText")
    assert "1 missing from a run" in summary_text and "(1 not in react-robust)" in summary_text
    ranks = chrome.js("[...document.querySelectorAll('tr.crow')].map(r => r.dataset.rank)")
    assert ranks[-1] == "-1" and ranks.count("-1") == 1 and ranks == sorted(ranks, key=int, reverse=True)
    assert "none" not in chrome.js("[...document.querySelectorAll('tr.crow .badge')].map(b => b.innerText)")
    assert "unjudged" in chrome.js("document.querySelector('tr.crow').innerText")
    assert_fits(chrome, "comparison")
    chrome.open(page.as_uri() + "#view=compare&open=G1_category/900003")
    assert chrome.js("document.querySelectorAll('.trajectory').length") == 2
    readings = chrome.js("[...document.querySelectorAll('details.reading > summary')].map(s => s.innerText)")
    assert any("hallucinated_observation" in r for r in readings) and all(r.startswith("parser's reading:") for r in readings)
    assert_fits(chrome, "comparison, a query open side by side")
    keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
    if keep:
        chrome.screenshot(Path(keep) / "parser_variants_compare_open.png")
