"""What runs compared side by side differ in, named as such (model, method, dialect, parser, constrain,
on-invalid), and whose labels they carry: every comparison output (compare-runs, compare-parsers --runs,
compare-structured, the report's compare tab) names the axis and the judge with its marks from here."""

from __future__ import annotations

from ..structured.describe import policy_of

AXES = ("model", "method", "dialect", "parser", "constrain", "on_invalid")


def settings_of(manifest: dict | None) -> dict:
    """A run's value on each axis, from its manifest."""
    manifest = manifest or {}
    config = manifest.get("config") or {}
    dialect = manifest.get("dialect") or {}
    return {"model": manifest.get("model"), "method": config.get("method"),
            "dialect": dialect.get("name") if isinstance(dialect, dict) else dialect,
            "parser": manifest.get("parser"), **policy_of(config),
            "default_parser": dialect.get("default_parser") if isinstance(dialect, dict) else None}


def differing(settings: list[dict]) -> list[str]:
    """The axes on which the runs differ; the parser is left out when each run reads its dialect with the
    dialect's own parser (it follows the dialect)."""
    found = [key for key in AXES if len({str(s.get(key)) for s in settings}) > 1]
    if "dialect" in found and "parser" in found and all(s.get("parser") == s.get("default_parser") for s in settings):
        found.remove("parser")
    return found


def axis_name(key: str) -> str:
    return key.replace("_", "-")


def axes_text(axes: list[str]) -> str:
    """``the runs differ in: constrain`` (the header a comparison's first column gets: ``axis_header``)."""
    return "the runs differ in: " + (", ".join(map(axis_name, axes)) if axes else "none of " + ", ".join(
        map(axis_name, AXES)))


def axis_header(axes: list[str]) -> str:
    """The first column's name: the axis (``constrain``, ``dialect / constrain``), ``run`` when none differs."""
    return " / ".join(map(axis_name, axes)) or "run"


def judge_text(model: str | None, label: str | None, self_judged: bool) -> str:
    """A judge as a comparison names it: its label (model @ endpoint [mode]) and the self-judged mark."""
    text = str(label or model or "not recorded")
    if self_judged and "self-judged" not in text:
        text += "; self-judged (the run's own model judged its answers: not a StableToolBench number)"
    return text


def judges_line(judges: list[str]) -> str:
    """``judged by: X`` when every run shares one judge, else each run's."""
    distinct = list(dict.fromkeys(judges))
    if len(distinct) == 1:
        return f"judged by: {distinct[0]}"
    return "judged by: " + "; ".join(f"run {i} {judge}" for i, judge in enumerate(judges, 1))
