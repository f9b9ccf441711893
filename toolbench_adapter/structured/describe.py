"""How a run's structured-output settings and figures are named in tables, the report and the comparison."""

from __future__ import annotations

import re

UPSTREAM = {"constrain": "off", "on_invalid": "observe"}


def policy_of(config: dict | None) -> dict:
    """The run's --constrain and --on-invalid (a run written before they existed ran as upstream does)."""
    config = config or {}
    return {key: config.get(key) or default for key, default in UPSTREAM.items()}


def policy_text(config: dict | None) -> str:
    """``constrain off, on-invalid observe`` (upstream) or e.g. ``constrain schema, on-invalid reask:2``."""
    policy = policy_of(config)
    return f"constrain {policy['constrain']}, on-invalid {policy['on_invalid']}"


def is_upstream(config: dict | None) -> bool:
    return policy_of(config) == UPSTREAM


def turns_text(totals: dict | None) -> str | None:
    """``valid calls on 180 of 190 model turns (94.7%), 12 re-asks``; None for runs that did not check calls."""
    totals = totals or {}
    turns = totals.get("model_turns")
    if not turns:
        unchecked = totals.get("unchecked_turns")
        return f"{unchecked} turns not checkable (a recorded schema's problem)" if unchecked else None
    valid = totals.get("valid_turns", 0)
    text = f"valid calls on {valid} of {turns} model turns ({valid / turns:.1%})"
    if totals.get("reasks"):
        text += f", {totals['reasks']} re-asks"
    if totals.get("unchecked_turns"):
        text += f"; {totals['unchecked_turns']} turns not checkable (a recorded schema's problem, counted apart)"
    return text


def structured_fact(manifest: dict | None) -> str:
    """The report's first-screen line: the policy, then what the turns were."""
    manifest = manifest or {}
    turns = turns_text(manifest.get("totals"))
    return policy_text(manifest.get("config")) + (f"; {turns}" if turns else "")


def row_suffix(config: dict | None) -> str:
    """What a leaderboard row's name gets for a run that is not upstream's: ``@constrain-schema@reask-2``."""
    policy = policy_of(config)
    suffix = "" if policy["constrain"] == "off" else f"@constrain-{policy['constrain']}"
    if policy["on_invalid"] != "observe":
        suffix += "@" + policy["on_invalid"].replace(":", "-")
    return suffix


def row_name(run_name: str, config: dict | None) -> str:
    """A run's leaderboard row name: its name and row_suffix, the suffix said once when the name already ends with
    it (make eval's RUN, e.g. eval-hf-CoT1@constrain-schema: the row has the folder's name), or with it in dashes
    (its older folders: eval-hf-CoT1-constrain-schema -> eval-hf-CoT1@constrain-schema)."""
    suffix = row_suffix(config)
    if suffix and run_name.endswith(suffix) and len(run_name) > len(suffix):
        return run_name
    dashed = suffix.replace("@", "-")
    if suffix and run_name.endswith(dashed) and len(run_name) > len(dashed):
        run_name = run_name[: -len(dashed)]
    return run_name + suffix


ROW_CONSTRAIN = re.compile(r"@constrain-([A-Za-z0-9_]+)")
ROW_REASK = re.compile(r"@reask-(\d+)")


def caption_notes(row_names) -> list[str]:
    """What a leaderboard's caption says of rows whose runs were not upstream's (the row_suffix their names
    carry): e.g. ``constrained decoding: schema (not upstream)``, ``re-ask on invalid calls: reask:2 (not
    upstream)``; rows named in the note when the board mixes settings."""
    notes: dict[str, list[str]] = {}
    names = list(row_names)
    for name in names:
        for match in ROW_CONSTRAIN.finditer(name):
            notes.setdefault(f"constrained decoding: {match.group(1)} (not upstream)", []).append(name)
        for match in ROW_REASK.finditer(name):
            notes.setdefault(f"re-ask on invalid calls: reask:{match.group(1)} (not upstream)", []).append(name)
    return [note if len(rows) == len(names) else f"{note}: {', '.join(rows)}" for note, rows in notes.items()]
