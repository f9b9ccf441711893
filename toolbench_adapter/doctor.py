"""`tba doctor`: is each piece of a run comparable with the StableToolBench leaderboard here?

Five pieces, each checked where it lives on the evidence the comparability line reads
(evaluation/comparability.py), and answered OK, DECLARED (there, but what stands behind its name cannot be
checked here) or MISSING with what it is and how to get it: the query files (StableToolBench's by digest), the
tool documents (n of the N tools the query set uses: queryset/tool_coverage.py), the tool-response cache (its
entries by who made them, each maker judged by the rule: server/provenance.py, comparability.judge_maker), a
simulator for cache misses (its endpoint checked as a run checks it, judged by comparability.miss_answerer: the
leaderboard's gpt-4-turbo at its provider's host is OK, the same name elsewhere or MirrorAPI DECLARED, another model
or the synthetic `schema` simulator MISSING), and the judge (reachable, listing and serving the
model id whole: the judge preflight of evaluation/judging/preflight.py; the leaderboard's judge; verified only at
its provider's own API host). Every network check is one short request (``timeout_s``), so the command ends in
bounded time whatever answers or hangs; a file of the cache or tool folder that cannot be read (a FIFO, a
device, binary, too big, nested too deeply, a link loop) is named, never opened past what it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.evaluation import comparability
from toolbench_adapter.evaluation.comparability import (
    DECLARED,
    FAILED,
    judge_maker,
    miss_answerer,
    provider_host,
)
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.evaluation.judging.preflight import PREFLIGHT_PROMPT, preflight_judge
from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.files.input_files import UnreadableFile, read_bytes, read_json
from toolbench_adapter.queryset.datafetch import sha256_of
from toolbench_adapter.queryset.queries import GROUPS, PROJECT_DATA, QuerySet
from toolbench_adapter.queryset.tool_coverage import tool_coverage

from .errors import InputError
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
from .server.catalog import ApiCatalog
from .server.names import SIMULATED_DIR, ApiKey
from .server.provenance import UNMARKED, made_by, mark_of, parse_key
from .server.simulators import MODEL_SIMULATORS, SIMULATORS, SimulatorOptions
from .server.simulators.base import DEFAULT_API_KEY_ENV
from .server.simulators.endpoint import check_endpoint

SHIPPED_ROOT = PROJECT_DATA / "stabletoolbench"
DEFAULT_TIMEOUT_S = 5.0
SYNTHETIC_SIMULATORS = {"schema": "answers cache misses with synthetic data built from the response schema",
                        "none": "answers cache misses with an error"}


@dataclass(frozen=True)
class Check:
    piece: str  # "query files", "tool documents", ...
    ok: bool  # there (verified, or only declared)
    detail: str  # what was found (or not)
    get: str = ""  # the command or link that gets it, when missing (or verified, when declared)
    declared: bool = False  # there by name, but what stands behind the name cannot be checked here

    @property
    def status(self) -> str:
        return "MISSING" if not self.ok else "DECLARED" if self.declared else "OK"

    def line(self) -> str:
        text = f"{self.status:<8} {self.piece:<16} {self.detail}"
        return text + (f". Get it: {self.get}" if not self.ok and self.get else "")


@dataclass
class DoctorSettings:
    stb_root: str | None = None  # default: $TBA_STB_ROOT, else data/stabletoolbench
    tool_root: str | None = None  # default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools
    cache: str | None = None
    simulator: str = "schema"
    llm_base_url: str | None = None  # None: SimulatorOptions' default
    llm_model: str = ""
    llm_api_key_env: str | None = None  # None: OPENAI_API_KEY
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
    return [query_check, check_tools(settings.tool_root, root, queries),
            check_cache(settings.cache, catalog_of(queries)), check_simulator(settings), check_judge(settings)]


def catalog_of(queries: QuerySet | None) -> ApiCatalog:
    """The APIs' documentation as a run's server has it from the query files: what the schema simulator's answers
    are recomputed with (server/provenance.py)."""
    catalog = ApiCatalog()
    for query in (queries.iter() if queries is not None else ()):
        for api in query.api_list:
            catalog.add(api)
    return catalog


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
             f"archive ({CACHE_URL}); pass --tool-root DIR (or TBA_TOOL_ROOT). Without its document a tool's "
             "description line in the prompt reads the word None, as upstream's does")


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
    if queries is None:
        return Check("tool documents", False, detail + "; the query files cannot be read, so which tools they use "
                     "is not known", TOOLS_GET)
    selected = [q for group in queries.available_groups() if group in GROUPS for q in queries.load(group)]
    coverage = tool_coverage(selected, path)
    detail += f", documents for {coverage.figure().replace(' tools', ' tools the query set uses', 1)}"
    if not coverage.complete:  # the prompt of every query using a missing tool describes it as None
        return Check("tool documents", False, detail, TOOLS_GET)
    return Check("tool documents", True, detail)


# ---- the tool-response cache ---------------------------------------------------------------------------------

CACHE_GET = (f"StableToolBench's cache: {CACHE_URL} (or {CACHE_URL_MIRROR}); unzip it and pass its "
             "tool_response_cache folder as --cache DIR (tba serve --cache, tba run --cache-dir)")


UNREADABLE_SHOWN = 3


def check_cache(cache: str | None, catalog: ApiCatalog | None = None) -> Check:
    """The cache's entries by who made them (server/provenance.py): this project's synthetic answers (the schema
    simulator's, by content or mark, and unmarked ones of the _simulated mirror) make it MISSING."""
    if not cache:
        return Check("response cache", False, "no --cache given: every tool call would go to the simulator", CACHE_GET)
    path = Path(cache).expanduser()
    if not path.is_dir():
        return Check("response cache", False, f"{path}: no such folder", CACHE_GET)
    census = CacheCensus(catalog or ApiCatalog())
    main = {f.relative_to(path).as_posix(): f for f in files_under(path, "*/*/*.json", recursive=False)
            if f.relative_to(path).parts[0] != SIMULATED_DIR}  # {category}/{tool}_for_{category}/{api}.json
    mirror = {f.relative_to(path / SIMULATED_DIR).as_posix(): f
              for f in files_under(path / SIMULATED_DIR, "*/*/*.json", recursive=False)}
    for rel in sorted(set(main) | set(mirror)):
        census.add(rel, main.get(rel), mirror.get(rel))
    unreadable = ""
    if census.unreadable:
        first = "; ".join(census.unreadable[:UNREADABLE_SHOWN])
        unreadable = f"; {len(census.unreadable)} files unreadable, served as empty ({first})"
    if not census.entries:
        return Check("response cache", False, f"{path}: {census.files} cache files, no entries{unreadable}", CACHE_GET)
    where = f"{path}: {census.entries} entries in {census.files} api files"
    judged = {maker: judge_maker(maker) for maker in census.made}
    others = {state: "; ".join(f"{n} of {census.entries} entries made by this project's server: {judged[maker][1]}"
                               for maker, n in sorted(census.made.items()) if maker not in SYNTHETIC_MAKERS
                               and judged[maker][0] == state) for state in (FAILED, DECLARED)}
    if census.synthetic or others[FAILED]:
        problems = ([f"{census.synthetic} of {census.entries} entries are this project's synthetic answers (the "
                     "schema simulator's, or simulated unmarked)"] if census.synthetic else []) + \
            ([others[FAILED]] if others[FAILED] else [])
        also = f"; {others[DECLARED]}" if others[DECLARED] else ""
        return Check("response cache", False, f"{where}: {'; '.join(problems)}, not StableToolBench's cache{also}"
                     f"{unreadable}", CACHE_GET)
    if others[DECLARED]:  # simulated by the leaderboard's model (or MirrorAPI), with this project's prompt
        return Check("response cache", True, f"{where}: {others[DECLARED]}{unreadable}", declared=True)
    return Check("response cache", True, f"{where}, none made by this project{unreadable}")


SYNTHETIC_MAKERS = ("schema", "none", UNMARKED)


class CacheCensus:
    """Every entry of a cache folder once (a key the main tree and the _simulated mirror both hold is one entry),
    by who made it."""

    def __init__(self, catalog: ApiCatalog):
        self.catalog = catalog
        self.files = 0
        self.entries = 0
        self.made: dict[str, int] = {}
        self.unreadable: list[str] = []

    @property
    def synthetic(self) -> int:
        return sum(n for name, n in self.made.items() if name in SYNTHETIC_MAKERS)

    def _read(self, file: Path | None) -> dict:
        if file is None:
            return {}
        data, problem = _cache_file(file)
        if problem is not None:
            self.unreadable.append(problem)
        return data

    def add(self, rel: str, main_file: Path | None, mirror_file: Path | None) -> None:
        """One API's entries: its main file and its mirror file (either may be absent)."""
        main, mirror = self._read(main_file), self._read(mirror_file)
        self.files += main_file is not None
        category, tool_folder, api = rel.removesuffix(".json").split("/")
        key = ApiKey(category, tool_folder, api)
        doc = self.catalog.get(key)
        for cache_key in {**main, **mirror}:
            self.entries += 1
            in_mirror = cache_key in mirror
            answer = main[cache_key] if cache_key in main else mirror[cache_key]
            maker = mark_of(mirror[cache_key]) if in_mirror else None
            if maker is None:
                parsed, tool_input = parse_key(cache_key)  # a key no server of ours wrote: only the mirror tells
                maker = (made_by(answer, key, tool_input, cache_key, doc, in_mirror) if parsed
                         else UNMARKED if in_mirror else None)
            if maker is not None:
                self.made[maker] = self.made.get(maker, 0) + 1


def _cache_file(file: Path) -> tuple[dict, str | None]:
    """(entries, None) or ({}, "PATH: why it cannot be read") without opening what is not a regular file."""
    try:
        data = read_json(file, "cache file")  # the one reader: no special file opened, no file read past its limit
    except UnreadableFile as exc:
        return {}, f"{file}: {exc.problem}"
    if not isinstance(data, dict):
        return {}, f"{file}: not a JSON object of entries"
    return data, None


# ---- the simulator for cache misses --------------------------------------------------------------------------

SIMULATOR_GET = (f"a GPT-based simulator: --simulator llm --llm-base-url https://api.openai.com/v1 --llm-model "
                 f"{SIMULATOR_MODEL} (the model of upstream's cache server), its key in $OPENAI_API_KEY (or "
                 f"--llm-api-key-env VAR); or MirrorAPI-Cache ({MIRRORAPI_MODEL_URL}) served by vLLM: --simulator "
                 "mirrorapi --llm-base-url URL --llm-model NAME --mirror-system-prompt FILE (as tba serve takes them)")


def check_simulator(settings: DoctorSettings) -> Check:
    """What answers cache misses, on the evidence a run records and the rule reads (comparability.miss_answerer):
    the endpoint checked as tba run checks it before a run (one GET /models: server/simulators/endpoint.py), the
    model id whole, the host, whose prompt. OK only for the leaderboard's model listed by its provider's host."""
    name = settings.simulator
    if name in SYNTHETIC_SIMULATORS:
        return Check("simulator", False, f"--simulator {name} {SYNTHETIC_SIMULATORS[name]}: numbers on it are not "
                     "comparable with the leaderboard", SIMULATOR_GET)
    if name not in MODEL_SIMULATORS:
        return Check("simulator", False, f"--simulator {name}: a third-party simulator, not one the leaderboard "
                     "used", SIMULATOR_GET)
    what = "GPT-based (llm)" if name == "llm" else "MirrorAPI"
    key_env = settings.llm_api_key_env or DEFAULT_API_KEY_ENV
    options = SimulatorOptions.from_settings(settings.llm_base_url, settings.llm_model, key_env, None,
                                             settings.mirror_system_prompt)
    try:
        endpoint = check_endpoint(name, options, key_env=key_env, timeout_s=settings.timeout_s)
    except InputError as exc:
        return Check("simulator", False, f"{what}: {exc.problem}", f"{exc.fix}. {SIMULATOR_GET}" if exc.fix
                     else SIMULATOR_GET)
    assert endpoint is not None  # a model simulator's (MODEL_SIMULATORS)
    state, words = miss_answerer(name, [endpoint.facts()])
    keyed = f"key from ${key_env}" if os.environ.get(key_env) else f"no ${key_env} set"
    detail = f"{what}: {endpoint.base_url} lists {endpoint.model} ({keyed})"
    if state == FAILED:
        return Check("simulator", False, f"{detail}, but {words}", SIMULATOR_GET if name == "llm" else
                     "save the SFT_SYSTEM text of StableToolBench's server/system_prompts.py to a file and pass "
                     "--mirror-system-prompt FILE")
    if state == DECLARED:
        return Check("simulator", True, f"{detail}: named, not verified ({words})", declared=True)
    return Check("simulator", True, f"{detail}: {words} (a miss it answers is made with this project's simulation "
                 "prompt, upstream's is not shipped: a run with misses reads \"as declared\")")


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
        listed = preflight_judge(client, lambda: client.chat([{"role": "user", "content": PREFLIGHT_PROMPT}],
                                                             temperature=0, max_tokens=16), warn=lambda _text: None)
    except InputError as exc:
        return Check("judge", False, f"{client.name}: {exc.problem}", f"{exc.fix}. {JUDGE_GET}" if exc.fix else JUDGE_GET)
    # the verdict's rule (comparability._judge): the judge of the table the simulator's answers belong to
    expected = comparability.JUDGE_BY_SIMULATOR.get(settings.simulator or "", GPT_CACHE_JUDGE)
    if model != expected:
        return Check("judge", False, f"{client.name} answers, but {model} is not the leaderboard's judge "
                     f"({expected} judged {LEADERBOARD_JUDGES[expected]})", JUDGE_GET)
    if listed is not True:  # the whole id in the endpoint's own list: the name the evaluation will record
        return Check("judge", False, f"{client.name} answers, but its GET /models does not list {model}", JUDGE_GET)
    detail = f"{client.name} answers and lists {model}, the judge of {LEADERBOARD_JUDGES[model]}"
    hosts = [url for url in settings.judge_urls if not provider_host(url)]
    if hosts:
        return Check("judge", True, detail + f": named, not verified ({', '.join(hosts)} is not the provider's API "
                     f"host {', '.join(sorted(comparability.PROVIDER_HOSTS))}: which weights answer to the name cannot be checked "
                     "here)", declared=True)
    return Check("judge", True, detail)
