"""The parser fan-out: one model, one query set, one method, one run folder per parser variant.

``tba run --parsers react-find,react-robust --name NAME`` writes NAME/react-find/ and NAME/react-robust/,
each an ordinary run folder (upstream answer files, manifest, steps) that ``tba evaluate`` judges as any run.
The variants run one after the other through one request memo (runners.models.memo) and one tool server:
while their trajectories agree the model is asked once, and only the turns after a divergence cost calls.
Each variant issues exactly the requests a separate ``--parser P`` run would, so its answer files are the
same bytes; the sum of what the variants asked is what N separate runs would have cost.

Needs deterministic decoding (temperature 0), else a memo would turn N samples into one: refused.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import write_json_atomic, write_text_atomic
from toolbench_adapter.parsers import PARSERS
from toolbench_adapter.runs.folder import FANOUT, MANIFEST

from ..config import RunConfig
from ..models.memo import MemoBackend
from .preflight import make_backend, simulator_endpoint
from .runlock import RunFolderLock
from .runner import Runner


class CountingBackend:
    """Counts the requests one variant sends (what a separate run of it would have asked the model)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def preflight(self) -> None:
        self.inner.preflight()

    def complete(self, request):
        with self._lock:
            self.calls += 1
        return self.inner.complete(request)


@dataclass
class FanoutResult:
    """Call counts over every session of the set (a rerun resumes it); ``session_*``: this command's."""

    set_dir: Path
    parsers: list[str]
    model_calls: int  # requests that reached the model
    separate_runs_calls: int  # sum over variants: what N separate runs would have asked
    memo_hits: int
    session_model_calls: int = 0
    session_separate_runs_calls: int = 0
    manifests: dict[str, dict] = field(default_factory=dict)

    def line(self) -> str:
        line = (f"fan-out: {self.model_calls} model calls for {len(self.parsers)} parsers "
                f"(separate runs: {self.separate_runs_calls})")
        if self.session_model_calls != self.model_calls:  # a resumed set: say what this command added
            line += f"; this session {self.session_model_calls} (separate runs: {self.session_separate_runs_calls})"
        return line

    def record(self) -> dict:
        return {"parsers": self.parsers, "model_calls": self.model_calls,
                "separate_runs_model_calls": self.separate_runs_calls, "memo_hits": self.memo_hits,
                "variants": {p: str(self.set_dir / p) for p in self.parsers}}


def previous_counts(set_dir: Path, parsers: list[str]) -> dict:
    """The counts of earlier sessions of the same set (same parsers), else zeros."""
    path = set_dir / FANOUT
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) and record.get("parsers") == parsers else {}


def parse_parser_list(spec: str) -> list[str]:
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if len(names) < 2:
        raise InputError(f"--parsers needs at least two parsers, got {spec!r}", field="--parsers",
                         fix="write e.g. --parsers react-find,react-robust (one parser: use --parser)")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"parser(s) named twice: {', '.join(duplicates)}", field="--parsers")
    for name in names:
        PARSERS.get(name)  # unknown names: UnknownNameError with "did you mean"
    return names


def check_fanout(cfg: RunConfig, parsers: list[str]) -> None:
    if cfg.temperature and cfg.temperature > 0:
        raise InputError(f"the parser fan-out needs deterministic decoding; temperature is {cfg.temperature}",
                         field="temperature",
                         fix="use --temperature 0, or run each parser separately with --parser P")
    if cfg.parser:
        raise InputError("--parser and --parsers together", field="--parser",
                         fix="give the variants with --parsers only")


def variant_config(cfg: RunConfig, parser: str) -> RunConfig:
    """NAME/PARSER under the same out root: the set folder holds one run folder per variant."""
    return replace(cfg, out_root=str(cfg.run_dir), name=parser, parser=parser)


def run_fanout(cfg: RunConfig, parsers: list[str], backend: Any = None, progress: bool = True,
               command: str | None = None) -> FanoutResult:
    """``command``: the command line that started the set, kept in each variant's manifest (its redo hint).
    The set folder is this command's while it runs (another command on it: exit 2 naming the holder), and each
    variant run locks its own folder as any run does."""
    check_fanout(cfg, parsers)
    with RunFolderLock(cfg.run_dir, command, hold_folder=True):
        return _run_fanout(cfg, parsers, backend, progress, command)


def _run_fanout(cfg: RunConfig, parsers: list[str], backend: Any, progress: bool, command: str | None) -> FanoutResult:
    memo = MemoBackend(backend if backend is not None else make_backend(cfg))
    counters = {parser: CountingBackend(memo) for parser in parsers}
    configs = {parser: variant_config(cfg, parser) for parser in parsers}
    # every variant built once (its settings checked) before the tool server starts or the model is asked
    try:
        probes = [Runner(configs[parser], backend=counters[parser], progress=False) for parser in parsers]
    except (ValueError, TypeError) as exc:  # as tba run: a bad dialect or backend option
        raise InputError(str(exc), fix="check --dialect-option / --backend-option names and values") from None
    for probe in probes:  # a variant folder of other settings or queries: exit 2 before any variant asks the model
        probe.check_run(note=False)
    # the embedded server's llm / mirrorapi endpoint, checked once before it starts; each variant reaches the server
    # by its URL and records the endpoint checked
    endpoint = simulator_endpoint(configs[parsers[0]])
    probes[0].simulator_endpoint = endpoint
    manifests: dict[str, dict] = {}
    try:
        with probes[0].tool_server() as url:  # one tool server for every variant, started once
            for parser in parsers:
                runner = Runner(configs[parser], backend=counters[parser], server_url=url, progress=progress,
                                command=command)
                runner.simulator_endpoint = endpoint
                manifests[parser] = runner.run()
    except BaseException:
        # interrupted (Ctrl-C) or failed midway: the calls this session made were spent all the same, so the
        # set's counts take them before the exception goes on (a resumed set then adds up right)
        if any(c.calls for c in counters.values()):
            record_counts(cfg, parsers, memo, counters, configs, manifests)
        raise
    return record_counts(cfg, parsers, memo, counters, configs, manifests)


def record_counts(cfg: RunConfig, parsers: list[str], memo: MemoBackend, counters: dict[str, CountingBackend],
                  configs: dict[str, RunConfig], manifests: dict[str, dict]) -> FanoutResult:
    """This session's counts added to the earlier sessions': fanout.json, and the fanout section of each
    variant manifest this session wrote (all of them, unless it was interrupted)."""
    counts = memo.counts()
    separate = sum(c.calls for c in counters.values())
    before = previous_counts(cfg.run_dir, parsers)
    result = FanoutResult(set_dir=cfg.run_dir, parsers=parsers,
                          model_calls=before.get("model_calls", 0) + counts["model_calls"],
                          separate_runs_calls=before.get("separate_runs_model_calls", 0) + separate,
                          memo_hits=before.get("memo_hits", 0) + counts["memo_hits"],
                          session_model_calls=counts["model_calls"], session_separate_runs_calls=separate,
                          manifests=manifests)
    record = result.record()
    for parser, manifest in list(manifests.items()):
        manifest = {**manifest, "fanout": {**record, "variant": parser}}
        write_json_atomic(configs[parser].run_dir / MANIFEST, manifest, fsync=True)
        manifests[parser] = manifest
    write_text_atomic(cfg.run_dir / FANOUT, json.dumps(record, indent=2) + "\n")
    return result


def exit_status(manifests) -> int:
    """As `tba run`: 3 when a variant ended with infrastructure failures, 1 when a query raised, else 0."""
    manifests = list(manifests)
    if any((m.get("totals") or {}).get("infra_failures") for m in manifests):
        return 3
    if any((m.get("sessions") or [{}])[-1].get("failed") for m in manifests):
        return 1
    return 0


def failed_variants(manifests: dict[str, dict]) -> list[str]:
    return [p for p, m in manifests.items() if (m.get("totals") or {}).get("infra_failures")
            or (m.get("sessions") or [{}])[-1].get("failed")]


def summary_record(result: FanoutResult, redo: str | None) -> dict:
    """`--json`: one object, each variant's run folder and totals, the set's model-call figures, the redo."""
    status = exit_status(result.manifests.values())
    return {"set": str(result.set_dir),
            "variants": {p: {"run": str(result.set_dir / p), **(result.manifests[p].get("totals") or {})}
                         for p in result.parsers},
            "model_calls": result.model_calls, "separate_runs_model_calls": result.separate_runs_calls,
            "memo_hits": result.memo_hits, "session_model_calls": result.session_model_calls,
            "session_separate_runs_model_calls": result.session_separate_runs_calls,
            "failed_variants": failed_variants(result.manifests), "redo": redo if status else None}


def command(cfg: RunConfig, spec: str, progress: bool = True, redo: str | None = None,
            as_json: bool = False) -> int:
    """`tba run --parsers a,b,...`: run the set, print one line per variant and the fan-out line (``as_json``:
    one JSON object instead). ``redo``: this command line, which redoes every variant's failed queries."""
    result = run_fanout(cfg, parse_parser_list(spec), progress=progress, command=redo)
    status = exit_status(result.manifests.values())
    if as_json:
        print(json.dumps(summary_record(result, redo), indent=2))
        return status
    for parser in result.parsers:
        totals = result.manifests[parser].get("totals", {})
        print(f"{parser:<14} {result.set_dir / parser}  queries {totals.get('queries')}  "
              f"valid {totals.get('valid')}  model calls {totals.get('model_calls')}")
    print(result.line())
    if status:
        print(f"FAILURES in {', '.join(failed_variants(result.manifests))}: see each variant's errors.jsonl; the "
              "same command again redoes exactly those queries (finished ones are skipped)"
              + (f":\n  {redo}" if redo else ""))
    else:
        print(f"next: tba evaluate on each variant folder (they share the judge cache), then "
              f"tba compare-parsers --runs {result.set_dir}")
    return status
