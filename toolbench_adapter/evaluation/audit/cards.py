"""Judge cards: each audit of a judge, kept under the judge's identity, and the one line that cites it.

``<folder>/<judge-id>.json``, where ``<judge-id>`` is the id evaluations use (evaluations.JudgeIdentity.short_id:
model @ endpoint host, judge mode, repeats, the evaluator when not the project's own), so a table made by a judge
finds the audit of that same judge. The folder: ``--judge-cards DIR``, else ``$TBA_JUDGE_CARDS``, else
``results/judge_cards``. A card keeps every audit (latest last); ``citation`` cites the latest.

A card is checked each time it is read (issue 40), and one that fails a check is never cited: the line says
"judge card unreadable: REASON; run `tba judge-audit …` again". The checks: the file is a regular file of at most
4 MiB (files/input_files.py, kind "judge card") of UTF-8 JSON in the card format; the judge id inside it is the id it is filed under and the
evaluation's; the latest audit's fields have their types and ranges (kappa in [-1, 1], a SoPR shift in points,
counts as whole numbers); its labels are a set the project knows (sets.py) or a labels folder still there, and
their digest and answer count are what the audit recorded (sets.labels_digest), the answers judged no more than
they hold. No reader of a card raises: a table, the report and the matrix get the line either way.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.audit.sets import AUDIT_SETS, labels_digest, set_digest
from toolbench_adapter.evaluation.evaluations import DEFAULT_EVALUATOR, JudgeIdentity, iso_time
from toolbench_adapter.evaluation.labelsets import discover_all
from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.files.input_files import UnreadableFile, read_json

CARDS_ENV = "TBA_JUDGE_CARDS"
DEFAULT_FOLDER = Path("results") / "judge_cards"
CARD_FORMAT = "toolbench-adapter/judge-card"
DEFAULT_SET = "stb-example"


def cards_folder(folder: str | Path | None = None) -> Path:
    return Path(folder or os.environ.get(CARDS_ENV) or DEFAULT_FOLDER)


def card_path(judge_id: str, folder: str | Path | None = None) -> Path:
    return cards_folder(folder) / f"{judge_id}.json"


def read_card(judge_id: str, folder: str | Path | None = None) -> dict | None:
    """The card of ``judge_id``, or None when that judge was never audited; one that is not a readable card is
    InputError naming the file (exit 2 for the audit that would add to it; citation says it instead). Read by the
    one reader of input files (kind "judge card"): special files, sizes past its limit, bytes that are not UTF-8
    JSON and link loops are refused without being opened or read whole."""
    path = card_path(judge_id, folder)
    if path.is_dir():
        return None
    try:
        card = read_json(path, "judge card")
    except UnreadableFile as exc:
        if exc.reason == "not_found":
            return None
        raise
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT or not isinstance(card.get("audits"), list):
        raise InputError("not a judge card", path=path, fix=CARD_FIX)
    return card


CARD_FIX = "delete it and audit the judge again (tba judge-audit)"


def write_card(identity: JudgeIdentity, audit: dict[str, Any], folder: str | Path | None = None) -> Path:
    """Add ``audit`` (audit.card_entry's fields) to the judge's card; ``date`` is set here."""
    path = card_path(identity.short_id, folder)
    card = read_card(identity.short_id, folder) or {"format": CARD_FORMAT, "judge": identity.as_dict(), "audits": []}
    card["judge"] = identity.as_dict()
    card["audits"].append({**audit, "date": iso_time()})
    write_json_atomic(path, card, indent=2)
    return path


def _identity_fields(judge: JudgeIdentity | dict | str) -> tuple[str, dict]:
    if isinstance(judge, JudgeIdentity):
        return judge.short_id, judge.as_dict()
    if isinstance(judge, dict):
        return str(judge.get("id") or ""), judge
    return str(judge), {}


def audit_command(identity: dict, set_name: str = DEFAULT_SET) -> str:
    """The command that audits this judge (placeholders where the identity does not say)."""
    endpoints = identity.get("endpoints") or []
    model = str(identity.get("model") or "MODEL")
    parts = ["tba", "judge-audit", "--set", set_name]
    if identity and not endpoints:
        parts += ["--judge-backend", "hf", "--judge-model", model.removeprefix("hf:")]
    else:
        parts += ["--judge-url", endpoints[0] if endpoints else "URL", "--judge-model", model]
    if identity.get("mode"):
        parts += ["--judge-mode", str(identity["mode"])]
        if "constrained" in str(identity.get("name", "")).rsplit("[", 1)[-1]:
            parts.append("--judge-constrain")
    if identity.get("evaluate_times"):
        parts += ["--evaluate-times", str(identity["evaluate_times"])]
    if identity.get("evaluator") not in (None, DEFAULT_EVALUATOR):
        parts += ["--evaluator", str(identity["evaluator"])]
    return shlex.join(parts)


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}"


def audit_line(judge_id: str, audit: dict) -> str:
    """"judge X: kappa 0.62 [0.51, 0.71], SoPR shift +4.1 points against the released labels on 240 answers
    (set NAME)" from one card entry (checked first: audit_problem)."""
    kappa = audit.get("kappa")
    interval = audit.get("kappa_interval") or [None, None]
    if kappa is None:
        kappa_text = f"kappa n/a ({audit.get('kappa_why') or 'undefined'})"
    else:
        bounds = "" if None in interval else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
        kappa_text = f"kappa {kappa:.2f}{bounds}"
    shift = audit.get("sopr_shift")
    shift_interval = audit.get("sopr_shift_interval") or [None, None]
    bounds = "" if None in shift_interval else f" [{shift_interval[0]:+.1f}, {shift_interval[1]:+.1f}]"
    where = f"set {audit['set']}" if audit.get("set") else f"labels {' '.join(audit.get('labels') or ['?'])}"
    if audit.get("sample"):
        where += f", a sample of {audit['sample']} (seed {audit.get('seed')})"
    return (f"judge {judge_id}: {kappa_text}, SoPR shift {_signed(shift)}{bounds} points against the released "
            f"labels on {audit.get('answers')} answers ({where})")


def _number(value: Any, low: float, high: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and low <= value <= high


def _interval(value: Any, low: float, high: float) -> bool:
    """None, [None, None] or two numbers in range, in order."""
    if value is None:
        return True
    if not isinstance(value, list) or len(value) != 2:
        return False
    if value == [None, None]:
        return True
    return all(_number(v, low, high) for v in value) and value[0] <= value[1]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def audit_problem(audit: Any) -> str | None:
    """Why one card entry cannot be cited (its fields and their types and ranges, its labels against what the
    project holds now), or None."""
    if not isinstance(audit, dict):
        return "its latest audit is not an object"
    if not _count(audit.get("answers")):
        return f"answers {audit.get('answers')!r} is not a positive whole number"
    kappa = audit.get("kappa")
    if kappa is None:
        if not isinstance(audit.get("kappa_why"), str):
            return "kappa is missing without a reason"
    elif not _number(kappa, -1.0, 1.0):
        return f"kappa {kappa!r} is not a number between -1 and 1"
    if not _interval(audit.get("kappa_interval"), -1.0, 1.0):
        return f"kappa_interval {audit.get('kappa_interval')!r} is not two numbers between -1 and 1"
    if audit.get("sopr_shift") is not None and not _number(audit.get("sopr_shift"), -100.0, 100.0):
        return f"sopr_shift {audit.get('sopr_shift')!r} is not a number of points between -100 and 100"
    if not _interval(audit.get("sopr_shift_interval"), -100.0, 100.0):
        return f"sopr_shift_interval {audit.get('sopr_shift_interval')!r} is not two numbers of points"
    for field in ("sample", "limit"):
        if audit.get(field) is not None and not _count(audit.get(field)):
            return f"{field} {audit.get(field)!r} is not a positive whole number"
    return _labels_problem(audit)


def _labels_problem(audit: dict) -> str | None:
    """The labels the audit names, checked against what is here now: the same digest and answer count."""
    digest, recorded = audit.get("labels_sha256"), audit.get("set_answers")
    if not isinstance(digest, str) or not _count(recorded):
        return "it does not record its labels' digest and answer count (an audit written before cards did)"
    name = audit.get("set")
    if name is not None:
        if not isinstance(name, str) or name not in AUDIT_SETS:
            return f"set {name!r} is not a set the project knows ({', '.join(AUDIT_SETS)})"
        known = AUDIT_SETS[name]
        if (digest, recorded) != (known.labels_sha256, known.answers):
            return (f"set {name}: its labels' digest or answer count ({recorded}) is not the set's "
                    f"({known.answers} answers)")
        if set_digest(known) != (known.labels_sha256, known.answers):
            return f"set {name}: its files in {known.labels} were changed since the project shipped them"
        total = known.answers
    else:
        labels = audit.get("labels")
        if not isinstance(labels, list) or not labels or not all(isinstance(p, str) for p in labels):
            return "it names neither a set nor label folders"
        try:
            now = labels_digest(discover_all(labels))
        except (InputError, OSError, ValueError) as exc:
            return f"its labels {' '.join(labels)} cannot be read to check it ({exc})".replace("\n", " ")
        if now != (digest, recorded):
            return f"its labels {' '.join(labels)} changed since the audit (digest or answer count differ)"
        total = recorded
    if audit["answers"] > total:
        return f"{audit['answers']} answers judged, but its labels hold {total}"
    return None


def card_problem(card: dict, judge_id: str, identity: dict | None = None) -> str | None:
    """Why a card cannot be cited for ``judge_id`` (the evaluation's judge), or None."""
    held = card.get("judge")
    held_id = held.get("id") if isinstance(held, dict) else None
    if held_id != judge_id:
        return f"the card filed as {judge_id} holds judge {held_id!r}"
    if identity and identity.get("id") not in (None, judge_id):
        return f"the evaluation's judge is {identity.get('id')!r}, not {judge_id}"
    if not card["audits"]:
        return "it holds no audit"
    return audit_problem(card["audits"][-1])


def citation(judge: JudgeIdentity | dict | str, folder: str | Path | None = None) -> str:
    """One line for a table: the judge's latest audit, "judge not audited" with the command that audits it, or
    "judge card unreadable: REASON; run `...` again" for a card that fails a check (card_problem). Never raises:
    a card is a file anyone can edit. ``judge``: a JudgeIdentity, its ``as_dict()`` (an evaluation record's
    ``judge``) or its id."""
    judge_id, identity = _identity_fields(judge)
    card, problem = None, None
    try:
        card = read_card(judge_id, folder) if judge_id else None
        problem = card_problem(card, judge_id, identity) if card is not None else None
        if card is not None and problem is None:
            return audit_line(judge_id, card["audits"][-1])
    except InputError as exc:
        problem = f"{exc.path}: {exc.problem}" if getattr(exc, "path", None) else str(exc)
    except Exception as exc:  # noqa: BLE001 (the last guard: a card that breaks a check is unreadable, not a crash)
        problem = f"{type(exc).__name__}: {exc}"
    try:
        command = audit_command(identity)
    except Exception:  # noqa: BLE001 (an evaluation record edited by hand: the command with placeholders)
        command = audit_command({})
    if card is None and problem is None:
        return f"judge {judge_id or '?'} not audited: run `{command}`"
    return f"judge card unreadable: {' '.join(str(problem).split())}; run `{command}` again"
