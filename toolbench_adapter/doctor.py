"""`tba doctor`: is each piece of a run comparable with the StableToolBench leaderboard here?

Five pieces, each checked where it lives and answered OK or MISSING with what it is and how to get it: the
query files (StableToolBench's by digest), the tool documents, the tool-response cache, a simulator for cache
misses (a GPT-based `llm` or MirrorAPI endpoint: the `schema` simulator answers with synthetic data), and the
judge (reachable, serving the model named: the judge preflight of evaluation/judging/preflight.py, and whether it is
the leaderboard's judge). Every network check is one short request (``timeout_s``), so the command ends in
bounded time whatever answers or hangs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.evaluation.judging.chat import ChatError, OpenAIChatClient
from toolbench_adapter.evaluation.judging.preflight import PREFLIGHT_PROMPT, preflight_judge
from toolbench_adapter.files.input_files import UnreadableFile, read_bytes, read_json
from toolbench_adapter.queryset.datafetch import sha256_of
from toolbench_adapter.queryset.queries import GROUPS, PROJECT_DATA, QuerySet

from .errors import InputError
from .naming import standardize
from .protocol.leaderboard import (
    CACHE_URL,
    CACHE_URL_MIRROR,
    EVALUATE_TIMES,
    GPT_CACHE_JUDGE,
    LEADERBOARD_JUDGES,
    MIRRORAPI_JUDGE,
    MIRRORAPI_MODEL_URL,
    SIMULATOR_MODEL,
    TOOLENV_URL,
)
from .protocol.query_files import QUERY_FILE_SHA256, SOLVABLE_QUERY_COUNT, UPSTREAM_COMMIT
from .server.names import SIMULATED_DIR
from .server.simulators import SIMULATORS

SHIPPED_ROOT = PROJECT_DATA / "stabletoolbench"
DEFAULT_TIMEOUT_S = 5.0
SYNTHETIC_SIMULATORS = {"schema": "answers cache misses with synthetic data built from the response schema",
                        "none": "answers cache misses with an error"}


@dataclass(frozen=True)
class Check:
    piece: str  # "query files", "tool documents", ...
    ok: bool
    detail: str  # what was found (or not)
    get: str = ""  # the command or link that gets it, when missing

    def line(self) -> str:
        text = f"{'OK' if self.ok else 'MISSING':<8} {self.piece:<16} {self.detail}"
        return text + (f". Get it: {self.get}" if not self.ok and self.get else "")


@dataclass
class DoctorSettings:
    stb_root: str | None = None  # default: $TBA_STB_ROOT, else data/stabletoolbench
    tool_root: str | None = None  # default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools
    cache: str | None = None
    simulator: str = "schema"
    llm_base_url: str = "http://127.0.0.1:12345/v1"
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"
    mirror_system_prompt: str | None = None
    judge_urls: list[str] | None = None
    judge_model: str = "gpt-4o-mini"
    judge_api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


def run_checks(settings: DoctorSettings) -> list[Check]:
    """Every piece, in the order a run needs them. Raises InputError only for a flag that names nothing (an
    unknown simulator): a missing piece is a MISSING line, never an exception."""
    SIMULATORS.get(settings.simulator)  # an unknown name is bad input (exit 2, "did you mean")
    root = Path(settings.stb_root or os.environ.get("TBA_STB_ROOT") or SHIPPED_ROOT).expanduser()
    queries, query_check = check_queries(root)
    return [query_check, check_tools(settings.tool_root, root, queries), check_cache(settings.cache),
            check_simulator(settings), check_judge(settings)]


# ---- query files ---------------------------------------------------------------------------------------------

FETCH = (f"--stb-root {SHIPPED_ROOT.relative_to(PROJECT_DATA.parent)} (shipped with the project), or `make data` / "
         "`tba data fetch --overwrite --out DIR` (StableToolBench's files, checked by digest)")


def check_queries(root: Path) -> tuple[QuerySet | None, Check]:
    try:
        queries = QuerySet(root)
        count = sum(queries.counts().values())
    except InputError as exc:
        return None, Check("query files", False, f"{shown(Path(exc.path or root))}: {exc.problem}", FETCH)
    folder = queries.query_dir.parent  # solvable_queries/ (or the root of a folder laid out like it)
    same = 0
    for rel, digest in QUERY_FILE_SHA256.items():
        path = folder / rel.removeprefix("solvable_queries/")
        same += _digest(path) == digest
    where = f"{shown(root)}: {count} queries"
    if same == len(QUERY_FILE_SHA256) and count == SOLVABLE_QUERY_COUNT:
        return queries, Check("query files", True, f"{where}, StableToolBench's {SOLVABLE_QUERY_COUNT} solvable "
                              f"queries ({same} files byte for byte as at {UPSTREAM_COMMIT[:7]})")
    return queries, Check("query files", False, f"{where}, not StableToolBench's {SOLVABLE_QUERY_COUNT} solvable "
                          f"queries ({same} of {len(QUERY_FILE_SHA256)} files are StableToolBench @ "
                          f"{UPSTREAM_COMMIT[:7]}'s)", FETCH)


def _digest(path: Path) -> str | None:
    """sha256 of a query file's bytes; None where there is no regular file to read (the reader's refusals)."""
    try:
        return sha256_of(read_bytes(path, "query file"))
    except UnreadableFile:
        return None


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when it lies below it."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(Path.cwd())))  # no link followed: a loop
    except ValueError:
        return str(path)


# ---- tool documents ------------------------------------------------------------------------------------------

TOOLS_GET = (f"the tool environment: {TOOLENV_URL} (ToolEnv2404), or the tools/ folder of StableToolBench's cache "
             f"archive ({CACHE_URL}); pass --tool-root DIR (or TBA_TOOL_ROOT). Without it each tool's description "
             "line of the prompt reads None")


def check_tools(tool_root: str | None, stb_root: Path, queries: QuerySet | None) -> Check:
    chosen = tool_root or os.environ.get("TBA_TOOL_ROOT")
    path = Path(chosen).expanduser() if chosen else stb_root / "toolenv" / "tools"
    if not path.is_dir():
        return Check("tool documents", False, f"{path}: no such folder" if chosen else
                     f"no tool environment (--tool-root and TBA_TOOL_ROOT not given; none at {shown(path)})", TOOLS_GET)
    count = sum(1 for _ in path.glob("*/*.json"))
    if not count:
        return Check("tool documents", False, f"{path}: no {{Category}}/{{tool}}.json file", TOOLS_GET)
    detail = f"{shown(path)}: {count} tool files"
    if queries is not None:
        tools = {(api.get("category_name", ""), standardize(api.get("tool_name", "")))
                 for group in queries.available_groups() if group in GROUPS for q in queries.load(group)
                 for api in q.api_list}
        found = sum((path / category / f"{tool}.json").is_file() for category, tool in tools)
        detail += f", {found} of the query set's {len(tools)} tools"
        if tools and not found:
            return Check("tool documents", False, detail + " (another tool set?)", TOOLS_GET)
    return Check("tool documents", True, detail)


# ---- the tool-response cache ---------------------------------------------------------------------------------

CACHE_GET = (f"StableToolBench's cache: {CACHE_URL} (or {CACHE_URL_MIRROR}); unzip it and pass its "
             "tool_response_cache folder as --cache DIR (tba serve --cache, tba run --cache-dir)")


def check_cache(cache: str | None) -> Check:
    if not cache:
        return Check("response cache", False, "no --cache given: every tool call would go to the simulator", CACHE_GET)
    path = Path(cache).expanduser()
    if not path.is_dir():
        return Check("response cache", False, f"{path}: no such folder", CACHE_GET)
    files = entries = simulated = 0
    for file in path.glob("*/*/*.json"):  # {category}/{tool}_for_{category}/{api}.json
        files += 1
        entries += _entries(file)
    for file in (path / SIMULATED_DIR).glob("*/*/*.json"):
        simulated += _entries(file)
    if not entries:
        return Check("response cache", False, f"{path}: {files} cache files, no entries", CACHE_GET)
    marked = f" ({simulated} marked simulated by this project's server)" if simulated else ""
    return Check("response cache", True, f"{path}: {entries} entries in {files} api files{marked}")


def _entries(file: Path) -> int:
    try:
        data = read_json(file, "cache file")
    except UnreadableFile:  # not a cache file (a FIFO, a link loop, not JSON, ...): no entries counted
        return 0
    return len(data) if isinstance(data, dict) else 0


# ---- the simulator for cache misses --------------------------------------------------------------------------

SIMULATOR_GET = (f"a GPT-based simulator: --simulator llm --llm-base-url https://api.openai.com/v1 --llm-model "
                 f"{SIMULATOR_MODEL} (the model of upstream's cache server), its key in $OPENAI_API_KEY (or "
                 f"--llm-api-key-env VAR); or MirrorAPI-Cache ({MIRRORAPI_MODEL_URL}) served by vLLM: --simulator "
                 "mirrorapi --llm-base-url URL --llm-model NAME --mirror-system-prompt FILE (as tba serve takes them)")


def check_simulator(settings: DoctorSettings) -> Check:
    name = settings.simulator
    if name in SYNTHETIC_SIMULATORS:
        return Check("simulator", False, f"--simulator {name} {SYNTHETIC_SIMULATORS[name]}: numbers on it are not "
                     "comparable with the leaderboard", SIMULATOR_GET)
    if name not in ("llm", "mirrorapi"):
        return Check("simulator", False, f"--simulator {name}: a third-party simulator, not one the leaderboard "
                     "used", SIMULATOR_GET)
    what = "GPT-based (llm)" if name == "llm" else "MirrorAPI"
    if not settings.llm_model:
        return Check("simulator", False, f"{what}: no --llm-model given", SIMULATOR_GET)
    if name == "mirrorapi" and not (settings.mirror_system_prompt and Path(settings.mirror_system_prompt).is_file()):
        return Check("simulator", False, "MirrorAPI without upstream's SFT_SYSTEM prompt (--mirror-system-prompt "
                     "FILE): a stand-in prompt is not the one MirrorAPI was trained with",
                     "save the SFT_SYSTEM text of StableToolBench's server/system_prompts.py to a file and pass "
                     "--mirror-system-prompt FILE")
    key = os.environ.get(settings.llm_api_key_env)
    url = settings.llm_base_url.rstrip("/")
    client = OpenAIChatClient(url, settings.llm_model, key or "EMPTY", timeout=settings.timeout_s, retries=1)
    try:
        served = client.served_models(url)
    except ChatError as exc:
        refused = exc.status in (401, 403)
        return Check("simulator", False, f"{what} at {url}: " + (f"the key in ${settings.llm_api_key_env} was "
                     f"refused (HTTP {exc.status})" if refused else f"cannot be reached ({exc})"),
                     f"set ${settings.llm_api_key_env} to the endpoint's key" if refused else
                     f"start the endpoint, or pass --llm-base-url with its URL. {SIMULATOR_GET}")
    if served is not None and settings.llm_model not in served:
        return Check("simulator", False, f"{what} at {url} does not serve {settings.llm_model!r} (served: "
                     f"{', '.join(served) or 'none'})", f"pass --llm-model {served[0]}" if served else SIMULATOR_GET)
    keyed = f"key from ${settings.llm_api_key_env}" if key else f"no ${settings.llm_api_key_env} set"
    return Check("simulator", True, f"{what}: {settings.llm_model} at {url} answers ({keyed})")


# ---- the judge -----------------------------------------------------------------------------------------------

JUDGE_GET = (f"an OpenAI-compatible endpoint serving the leaderboard's judge: --judge-url URL --judge-model "
             f"{GPT_CACHE_JUDGE} (GPT-based cache tables; {MIRRORAPI_JUDGE} for the MirrorAPI-Cache tables), the key "
             f"in $OPENAI_API_KEY; tba evaluate --evaluate-times {EVALUATE_TIMES} as the leaderboard")


def check_judge(settings: DoctorSettings) -> Check:
    if not settings.judge_urls:
        return Check("judge", False, "no --judge-url given (nor TBA_JUDGE_URL)", JUDGE_GET)
    model = settings.judge_model
    client = OpenAIChatClient(settings.judge_urls, model, settings.judge_api_key, timeout=settings.timeout_s,
                              retries=1)
    try:
        preflight_judge(client, lambda: client.chat([{"role": "user", "content": PREFLIGHT_PROMPT}], temperature=0,
                                                    max_tokens=16), warn=lambda _text: None)
    except InputError as exc:
        return Check("judge", False, f"{client.name}: {exc.problem}", f"{exc.fix}. {JUDGE_GET}" if exc.fix else JUDGE_GET)
    expected = MIRRORAPI_JUDGE if settings.simulator == "mirrorapi" else GPT_CACHE_JUDGE
    if model not in LEADERBOARD_JUDGES or (settings.simulator in ("llm", "mirrorapi") and model != expected):
        return Check("judge", False, f"{client.name} answers, but {model} is not the leaderboard's judge "
                     f"({expected} judged {LEADERBOARD_JUDGES[expected]})", JUDGE_GET)
    return Check("judge", True, f"{client.name} answers and serves {model}, the judge of {LEADERBOARD_JUDGES[model]}")
