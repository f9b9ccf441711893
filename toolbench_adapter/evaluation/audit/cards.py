"""Judge cards: each audit of a judge, kept under the judge's identity, and the one line that cites it.

``<folder>/<judge-id>.json``, where ``<judge-id>`` is the id evaluations use (evaluations.JudgeIdentity.short_id:
model @ endpoint host, judge mode, repeats, the evaluator when not the project's own), so a table made by a judge
finds the audit of that same judge. The folder: ``--judge-cards DIR``, else ``$TBA_JUDGE_CARDS``, else
``results/judge_cards``. A card keeps every audit (latest last); ``citation`` cites the latest.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluations import DEFAULT_EVALUATOR, JudgeIdentity, iso_time
from toolbench_adapter.files.fileio import read_json, write_json_atomic

CARDS_ENV = "TBA_JUDGE_CARDS"
DEFAULT_FOLDER = Path("results") / "judge_cards"
CARD_FORMAT = "toolbench-adapter/judge-card"
DEFAULT_SET = "stb-example"


def cards_folder(folder: str | Path | None = None) -> Path:
    return Path(folder or os.environ.get(CARDS_ENV) or DEFAULT_FOLDER)


def card_path(judge_id: str, folder: str | Path | None = None) -> Path:
    return cards_folder(folder) / f"{judge_id}.json"


def read_card(judge_id: str, folder: str | Path | None = None) -> dict | None:
    """The card of ``judge_id``, or None when that judge was never audited; a damaged card is exit 2."""
    path = card_path(judge_id, folder)
    if not path.is_file():
        return None
    card = read_json(path)
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT or not isinstance(card.get("audits"), list):
        raise InputError("not a judge card", path=path, fix="delete it and audit the judge again (tba judge-audit)")
    return card


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
    (set NAME)" from one card entry."""
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


def citation(judge: JudgeIdentity | dict | str, folder: str | Path | None = None) -> str:
    """One line for a table: the judge's latest audit, or "judge not audited" with the command that audits it.
    ``judge``: a JudgeIdentity, its ``as_dict()`` (an evaluation record's ``judge``) or its id."""
    judge_id, identity = _identity_fields(judge)
    card = read_card(judge_id, folder) if judge_id else None
    if card and card["audits"]:
        return audit_line(judge_id, card["audits"][-1])
    return f"judge {judge_id or '?'} not audited: run `{audit_command(identity)}`"
