"""A run's evaluations, each kept apart under its judge's identity, so a second judge never erases the first.

``RUN/eval/<id>/`` holds one evaluation's label, meta and score files and ``evaluation.json`` (the judge's full
identity, the judge mode and how it was chosen, status, counts, times); ``RUN/tables/<id>/`` its leaderboards.
``<id>`` is short, readable and safe as a file name: ``gpt-4o-mini@api.openai.com-tools-x3`` (model @ endpoint
host, judge mode, repeats; the evaluator when not the project's own). The error taxonomy (``RUN/tables/
taxonomy.*``) depends on no judge and stays at the top.

Status: ``complete`` (every judgement has a verdict; its row may still be marked † for a run scored anyway) or
``failed`` (judgements without a verdict). The default evaluation, which ``tba table``, ``tba report`` and
``tba compare-parsers`` show unless told otherwise, is the latest complete one. An evaluation is written into a
staging folder and moved into place when it ends, so a killed one leaves nothing; a failed one never replaces a
complete one of the same judge: it is kept beside it as ``<id>.failed`` (and removed by the next complete one).
``RUN/evaluations.json`` lists them (rewritten under a lock after each evaluation; readers scan the folders).

Run folders written before this layout (labels directly in ``RUN/eval/``, tables in ``RUN/tables/``) read as one
evaluation with the id ``legacy``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from toolbench_adapter.files.fileio import read_json, write_json_atomic, write_text_atomic

from ..errors import InputError
from .storage import GROUP_RE, META_SUFFIX

EVAL_DIR = "eval"
TABLES_DIR = "tables"
RECORD = "evaluation.json"
INDEX = "evaluations.json"
RECORD_FORMAT = "toolbench-adapter/evaluation"
LEGACY = "legacy"
FAILED_SUFFIX = ".failed"
COMPLETE, FAILED = "complete", "failed"
SELF_JUDGED = "self-judged"
PIPELINE_CHECK = "a 135M judge checks the pipeline, not the model"
DEFAULT_EVALUATOR = "default"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+@-]+")
_MAX_ID = 96


def iso_time(seconds: float | None = None) -> str:
    """UTC with microseconds: evaluations that end within one second still sort by when they ended."""
    seconds = time.time() if seconds is None else seconds
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1e6):06d}Z"


def model_key(name: str | None) -> str:
    """A model name compared across a run and its judge: case, the ``hf:`` prefix and an organisation folder
    (``ToolBench/ToolLLaMA-2-7b-v2``) do not make another model."""
    text = str(name or "").strip().lower()
    return text.removeprefix("hf:").rsplit("/", 1)[-1]


def same_model(run_model: str | None, judge_model: str | None) -> bool:
    return bool(model_key(run_model)) and model_key(run_model) == model_key(judge_model)


def same_weights(manifest: dict, client) -> bool:
    """The judge serves the weights the run ran (the run's manifest ``weights`` against the judge client's
    ``weights()``: a local model's path, or a server's GET /models "root"), whatever the names: `tba serve-model
    --served-name judge` over the run's own model is still the run's own model."""
    ran = manifest.get("weights")
    weights = getattr(client, "weights", None)
    return bool(ran) and weights is not None and weights() == ran


def is_own_model(manifest: dict, client, judge_model: str | None) -> bool:
    """The self-judge rule: the same model name, or the same weights under another name."""
    return same_model(run_model_of(manifest), judge_model) or same_weights(manifest, client)


def run_model_of(manifest: dict) -> str | None:
    """The model a run asked: the manifest's (adopted from the endpoint when no --model), else its config's."""
    return manifest.get("model") or (manifest.get("config") or {}).get("model")


def run_endpoints_of(manifest: dict) -> list[str]:
    urls = (manifest.get("config") or {}).get("base_url") or []
    return [str(u).rstrip("/") for u in ([urls] if isinstance(urls, str) else urls)]


def _host(urls: tuple[str, ...]) -> str:
    if not urls:
        return "local"
    parts = urlsplit(urls[0])
    host = (parts.hostname or parts.path or urls[0]) + (f"_{parts.port}" if parts.port else "")
    return host + (f"+{len(urls) - 1}" if len(urls) > 1 else "")


def safe_id(text: str) -> str:
    """A file-name-safe id: unsafe characters become ``_``; a long one is cut and keeps a digest of the whole."""
    cleaned = _UNSAFE.sub("_", text).strip("._") or "judge"
    if len(cleaned) > _MAX_ID:
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
        cleaned = cleaned[: _MAX_ID - 9].rstrip("._") + "-" + digest
    return cleaned


@dataclass(frozen=True)
class JudgeIdentity:
    """Who judged: what makes two evaluations the same judge (``key``), and the marks its tables carry."""

    name: str  # the judge as the cache and the tables know it: "gpt-4o-mini @ https://api.openai.com/v1 [tools]"
    model: str
    endpoints: tuple[str, ...]  # empty: a local model
    mode: str  # tools | json (with ", constrained" in ``name`` when the reply is constrained)
    evaluate_times: int
    evaluator: str
    evaluator_sha256: str
    self_judged: bool = False  # the run's own model judged its answers
    note: str | None = None  # e.g. the local 135M judge: PIPELINE_CHECK
    # whether every endpoint's GET /models listed the model id (preflight.listed; None: no list read): evidence
    # the comparability rule reads, not part of who the judge is (``key``, ``short_id``)
    listed: bool | None = None

    @classmethod
    def of(cls, client, judge, evaluate_times: int, run_manifest: dict) -> JudgeIdentity:
        model = str(getattr(client, "model", None) or client.name)
        return cls(name=judge.name, model=model,
                   endpoints=tuple(str(u).rstrip("/") for u in (getattr(client, "base_urls", None) or ())),
                   mode=judge.mode, evaluate_times=evaluate_times, evaluator=judge.spec.name,
                   evaluator_sha256=judge.spec.fingerprint,
                   self_judged=is_own_model(run_manifest, client, model),
                   note=getattr(client, "judge_note", None), listed=getattr(judge, "listed", None))

    def key(self) -> dict:
        return {"name": self.name, "evaluate_times": self.evaluate_times, "evaluator_sha256": self.evaluator_sha256}

    @property
    def short_id(self) -> str:
        mode = self.mode + ("-constrained" if "constrained" in self.name.rsplit("[", 1)[-1] else "")
        text = f"{self.model.removeprefix('hf:')}@{_host(self.endpoints)}-{mode}-x{self.evaluate_times}"
        return safe_id(text + ("" if self.evaluator == DEFAULT_EVALUATOR else f"-{self.evaluator}"))

    @property
    def label(self) -> str:
        """The judge as every table, CSV row and report names it, marks included."""
        marks = []
        if self.self_judged:
            marks.append(f"{SELF_JUDGED} (the run's own model judged its answers: not a StableToolBench number)")
        if self.note:
            marks.append(self.note)
        return "; ".join([self.name, *marks])

    def as_dict(self) -> dict:
        return {"name": self.name, "model": self.model, "endpoints": list(self.endpoints), "mode": self.mode,
                "evaluate_times": self.evaluate_times, "evaluator": self.evaluator,
                "evaluator_sha256": self.evaluator_sha256, "self_judged": self.self_judged, "note": self.note,
                "listed": self.listed, "label": self.label, "id": self.short_id}


def is_self_judged_label(judge: str | None) -> bool:
    """A judge label (tables, score rows, label metadata) that says the run's model judged itself."""
    return bool(judge) and f"; {SELF_JUDGED}" in str(judge)


# ---------------------------------------------------------------- reading


@dataclass
class EvaluationRecord:
    """One evaluation of a run, as found on disk."""

    id: str  # the folder name under eval/ (LEGACY for the flat layout)
    eval_dir: Path
    tables_dir: Path
    data: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return str(self.data.get("status") or FAILED)

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE

    @property
    def finished(self) -> str:
        return str(self.data.get("finished") or "")

    @property
    def judge(self) -> str:
        return str((self.data.get("judge") or {}).get("label") or (self.data.get("judge") or {}).get("name")
                   or "not recorded")

    @property
    def self_judged(self) -> bool:
        return bool((self.data.get("judge") or {}).get("self_judged"))

    @property
    def legacy(self) -> bool:
        return self.id == LEGACY

    def summary(self) -> str:
        """``ID (complete, 2026-01-02 03:04:05 UTC)`` or ``ID (failed: 2 of 6 judgements without a verdict, …)``."""
        if self.complete:
            state = COMPLETE
        else:
            state = (f"{FAILED}: {self.data.get('failed_judgements', '?')} of {self.data.get('judgements', '?')} "
                     "judgements without a verdict")
        when = self.finished[:19].replace("T", " ") + " UTC" if self.finished else ""
        return f"{self.id} ({state}{', ' + when if when else ''})"

    def label_files(self) -> list[Path]:
        """Its pass-rate label files (JSON and CSV): only this folder's, never another evaluation's."""
        if not self.eval_dir.is_dir():
            return []
        return sorted(p for p in self.eval_dir.iterdir() if p.suffix in (".json", ".csv") and p.is_file()
                      and not p.name.endswith(META_SUFFIX) and GROUP_RE.match(p.stem)
                      and not p.name.startswith("scores_"))

    def score_files(self) -> list[Path]:
        return sorted(self.eval_dir.glob("scores_*.json")) if self.eval_dir.is_dir() else []


def _legacy(run_dir: Path) -> EvaluationRecord | None:
    """Labels directly in eval/ (run folders written before evaluations were kept apart): one evaluation."""
    eval_dir = run_dir / EVAL_DIR
    record = EvaluationRecord(LEGACY, eval_dir, run_dir / TABLES_DIR)
    labels = [p for p in record.label_files() if p.suffix == ".json"]
    if not labels:
        return None
    metas = [read_json(p) for p in sorted(eval_dir.glob(f"*{META_SUFFIX}"))]
    metas = [m for m in metas if isinstance(m, dict)]
    failed = sum(int(m.get("judge_errors") or 0) for m in metas)
    judges = sorted({str(m["judge"]) for m in metas if m.get("judge")})
    newest = max(p.stat().st_mtime for p in labels)
    record.data = {"status": FAILED if failed else COMPLETE, "failed_judgements": failed,
                   "judgements": sum(int(m.get("queries") or 0) * int(m.get("evaluate_times") or 1) for m in metas),
                   "finished": iso_time(newest),
                   "judge": {"name": "; ".join(judges) or "not recorded", "label": "; ".join(judges) or None},
                   "legacy": True}
    return record


def list_evaluations(run_dir: str | Path) -> list[EvaluationRecord]:
    """Every evaluation of the run, oldest first (by when it ended)."""
    run_dir = Path(run_dir)
    eval_dir = run_dir / EVAL_DIR
    found: list[EvaluationRecord] = []
    if not eval_dir.is_dir():
        return found
    for folder in sorted(p for p in eval_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = folder / RECORD
        if not path.is_file():
            continue
        try:
            data = read_json(path)
        except InputError:
            continue  # a record cut short can only be a killed write: the folder is not an evaluation
        if isinstance(data, dict) and data.get("format") == RECORD_FORMAT:
            found.append(EvaluationRecord(folder.name, folder, run_dir / TABLES_DIR / folder.name, data))
    legacy = _legacy(run_dir)
    if legacy is not None:
        found.append(legacy)
    return sorted(found, key=lambda r: (r.finished, r.id))


def default_evaluation(records: list[EvaluationRecord]) -> EvaluationRecord | None:
    """The latest complete evaluation; None when none is complete."""
    complete = [r for r in records if r.complete]
    return complete[-1] if complete else None


def choose_evaluation(run_dir: str | Path, judge_id: str | None = None, *,
                      fallback: bool = False) -> tuple[EvaluationRecord | None, list[EvaluationRecord]]:
    """(the evaluation to show, all of them). ``judge_id``: that one (exit 2 naming the others when absent);
    else the default (latest complete); with ``fallback`` the latest of any status when none is complete."""
    records = list_evaluations(run_dir)
    if judge_id:
        chosen = next((r for r in records if r.id == judge_id), None)
        if chosen is None:
            matches = [r for r in records if r.id.startswith(judge_id)]
            chosen = matches[0] if len(matches) == 1 else None
        if chosen is None:
            known = ", ".join(r.summary() for r in records) or "none (run tba evaluate first)"
            raise InputError(f"no evaluation {judge_id!r} in this run; its evaluations: {known}", path=run_dir,
                             field="--judge-id", fix="pass one of the ids listed (a unique start of one is enough)")
        return chosen, records
    chosen = default_evaluation(records)
    if chosen is None and fallback and records:
        chosen = records[-1]
    return chosen, records


def describe_choice(chosen: EvaluationRecord | None, records: list[EvaluationRecord]) -> str:
    """One line naming the evaluation shown and the others, e.g. for `tba table` and `tba report`."""
    if chosen is None:
        if not records:
            return "not evaluated (no judge labels): run tba evaluate"
        return ("no complete evaluation: " + ", ".join(r.summary() for r in records)
                + "; --judge-id ID shows one of them")
    default = default_evaluation(records)
    why = "the latest complete one" if chosen is default else "chosen with --judge-id"
    others = [r.summary() for r in records if r is not chosen]
    return (f"evaluation {chosen.id} ({why}; judge {chosen.judge})"
            + (f"; also: {', '.join(others)} (--judge-id ID shows another)" if others else ""))


def refuse_mixed(path: str | Path) -> None:
    """A folder that holds several evaluations (a run's eval/, or a folder above it) read as label files would
    mix judges in one table: exit 2 naming them, with the run folder (its default) as the fix."""
    path = Path(path)
    if not path.is_dir():
        return
    records = sorted(path.glob(f"*/{RECORD}")) + sorted(path.glob(f"*/{EVAL_DIR}/*/{RECORD}"))
    if records and EvaluationRecord(LEGACY, path, path).label_files():  # the flat layout beside the new one
        records.append(path / LEGACY)
    if len(records) > 1:
        names = ", ".join(str(r.parent) for r in records[:6]) + (" ..." if len(records) > 6 else "")
        raise InputError(f"the folder holds {len(records)} evaluations ({names}): their labels come from different "
                         "judges or runs", path=path,
                         fix="pass one evaluation's folder (RUN/eval/ID), or to tba table the run folder itself: it "
                         "shows the run's latest complete evaluation (--judge-id ID another)")


# ---------------------------------------------------------------- writing


@contextlib.contextmanager
def _registry_lock(run_dir: Path):
    """Held while folders are moved into place and the index rewritten (milliseconds): two evaluations of one
    run with different judges may end at the same time."""
    path = run_dir / EVAL_DIR / ".evaluations.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        with contextlib.suppress(OSError):  # a filesystem without flock: the moves are still each atomic
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _swap_in(staging: Path, target: Path) -> None:
    """``staging`` becomes ``target``; an older ``target`` is removed after (a reader never sees a half folder)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _is_complete(folder: Path) -> bool:
    try:
        data = read_json(folder / RECORD)
    except InputError:
        return False
    return isinstance(data, dict) and data.get("status") == COMPLETE


def folder_id(run_dir: Path, identity: JudgeIdentity) -> str:
    """The identity's short id; when that folder holds another judge's evaluation (two judges that read alike),
    the id with a digest of this judge's key, so neither overwrites the other."""
    base = identity.short_id
    try:
        held = read_json(run_dir / EVAL_DIR / base / RECORD)
    except InputError:
        return base
    if isinstance(held, dict) and (held.get("judge") or {}).get("key") not in (None, identity.key()):
        digest = hashlib.sha1(json.dumps(identity.key(), sort_keys=True).encode()).hexdigest()[:6]
        return f"{base}-{digest}"
    return base


class EvaluationWriter:
    """Stages one evaluation (``eval_dir``, ``tables_dir``: where its files go while it runs) and moves it into
    place when it ends (``finish``); ``discard`` removes what a failed or killed evaluation staged. The caller
    holds the evaluation's lock (runners/judging/evaluate.py: one writer per evaluation folder)."""

    def __init__(self, run_dir: str | Path, identity: JudgeIdentity, *, requested_mode: str, mode_choice: str,
                 command: str | None = None):
        self.run_dir = Path(run_dir)
        self.identity = identity
        self.id = folder_id(self.run_dir, identity)
        self.requested_mode = requested_mode
        self.mode_choice = mode_choice
        self.command = command
        self.started = iso_time()
        tag = f".{self.id}.partial-{os.getpid()}"
        self.eval_dir = self.run_dir / EVAL_DIR / tag
        self.tables_dir = self.run_dir / TABLES_DIR / tag

    @property
    def final_eval_dir(self) -> Path:
        return self.run_dir / EVAL_DIR / self.id

    def begin(self) -> None:
        """Remove what an earlier killed evaluation with this judge left (the lock says none runs now): its staging
        folders and a folder it was swapping out."""
        patterns = (f".{self.id}.partial-*", f".{self.id}.old-*", f".{self.id}{FAILED_SUFFIX}.old-*")
        for parent in (self.run_dir / EVAL_DIR, self.run_dir / TABLES_DIR):
            for stale in [p for pattern in patterns for p in parent.glob(pattern)] if parent.is_dir() else []:
                shutil.rmtree(stale, ignore_errors=True)
        self.eval_dir.mkdir(parents=True, exist_ok=True)

    def discard(self) -> None:
        for staging in (self.eval_dir, self.tables_dir):
            shutil.rmtree(staging, ignore_errors=True)

    def finish(self, *, judgements: int, failed: int, marks: list[str], extra: dict | None = None) -> str:
        """Write the record, move the staged folders into place, rewrite the index; returns the folder id.
        A failed evaluation goes to ``<id>.failed`` when a complete one of this judge is in place."""
        status = COMPLETE if not failed else FAILED
        with _registry_lock(self.run_dir):
            target = self.id
            if status == FAILED and _is_complete(self.final_eval_dir):
                target = self.id + FAILED_SUFFIX
            record = {"format": RECORD_FORMAT, "version": 1, "id": target,
                      "judge": {**self.identity.as_dict(), "key": self.identity.key()},
                      "judge_mode": {"requested": self.requested_mode, "chosen": self.identity.mode,
                                     "how": self.mode_choice},
                      "status": status, "judgements": judgements, "failed_judgements": failed, "marks": marks,
                      "tables": self.tables_dir.is_dir(), "started": self.started, "finished": iso_time(),
                      "command": self.command, **(extra or {})}
            write_json_atomic(self.eval_dir / RECORD, record)
            _retarget_sources(self.eval_dir, self.run_dir / EVAL_DIR / target)
            _swap_in(self.eval_dir, self.run_dir / EVAL_DIR / target)
            tables = self.run_dir / TABLES_DIR / target
            if self.tables_dir.is_dir():
                _swap_in(self.tables_dir, tables)
            elif tables.exists():  # an earlier failed attempt's tables: not this evaluation's
                shutil.rmtree(tables, ignore_errors=True)
            if status == COMPLETE:  # a failed attempt of this judge is superseded
                for parent in (EVAL_DIR, TABLES_DIR):
                    shutil.rmtree(self.run_dir / parent / (self.id + FAILED_SUFFIX), ignore_errors=True)
            write_index(self.run_dir)
        return target


def _retarget_sources(staging: Path, target: Path) -> None:
    """Score rows name their label file: point them at where the folder is about to be."""
    for path in staging.glob("scores_*.json"):
        text = path.read_text(encoding="utf-8")
        moved = text.replace(json.dumps(str(staging))[1:-1], json.dumps(str(target))[1:-1])
        if moved != text:
            write_text_atomic(path, moved)


def write_index(run_dir: str | Path) -> Path:
    """RUN/evaluations.json: every evaluation (id, judge, status, counts, when), oldest first, and the default."""
    run_dir = Path(run_dir)
    records = list_evaluations(run_dir)
    default = default_evaluation(records)
    entries = [{"id": r.id, "judge": r.judge, "status": r.status, "self_judged": r.self_judged,
                "judgements": r.data.get("judgements"), "failed_judgements": r.data.get("failed_judgements"),
                "finished": r.finished or None, "eval": str(r.eval_dir.relative_to(run_dir)),
                "tables": str(r.tables_dir.relative_to(run_dir))} for r in records]
    return write_json_atomic(run_dir / INDEX, {"default": default.id if default else None, "evaluations": entries})
