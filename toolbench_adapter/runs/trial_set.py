"""The layout of a set of trials (``tba run --trials K``, issue 42), in one place.

``{set}/``: ``trials.json`` (the set's record: its settings, how many trials, each trial's seed and folder, the
sessions and the totals over every trial) and one ordinary run folder per trial, ``trial-0/`` ... ``trial-{K-1}/``
(toolbench_adapter/runs/folder.py's layout: ``{group}/{qid}_{method}.json``, manifest, steps, queries.jsonl). So
each trial keeps upstream's answer-file layout: one answer file per query per trial, in a folder that upstream's
converter (``--answer_dir SET/trial-1/G1_instruction``) and every command that reads a run folder read as a run.
Trial i ran with seed + i. The set's evaluations are ``{set}/eval/<id>/`` (evaluation.json and trials.json, the
figures over trials) and ``{set}/tables/<id>/`` (leaderboards with the trials' columns); each trial's own
evaluation lies in its folder, as any run's.

Why a folder per trial rather than ``{qid}_{method}_trial2.json`` beside the others: upstream's converter and
evaluator take every ``*{method}*.json`` of a group folder and key it by ``filename.split('_')[0]``, so a second
answer file of one query would silently replace the first; and every reader of a run folder would need to learn
a new name.
"""

from __future__ import annotations

from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import read_json

TRIALS = "trials.json"
TRIALS_FORMAT = "toolbench-adapter/trials"
TRIAL_PREFIX = "trial-"


def trial_name(index: int) -> str:
    return f"{TRIAL_PREFIX}{index}"


def trial_dir(set_dir: str | Path, index: int) -> Path:
    return Path(set_dir) / trial_name(index)


def is_trial_set(path: str | Path) -> bool:
    """A folder written by ``tba run --trials K`` (its record, trials.json, is there)."""
    return (Path(path) / TRIALS).is_file()


def read_trials(set_dir: str | Path) -> dict:
    """The set's record, checked: InputError naming the file and the field when it is not one."""
    path = Path(set_dir) / TRIALS
    data = read_json(path, "trial set record")
    if not isinstance(data, dict) or data.get("format") != TRIALS_FORMAT:
        raise InputError("not a trial set's record", path=path, field="format",
                         fix="rerun the tba run --trials command that wrote this folder: it rewrites the record")
    count = data.get("trials")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1 or not isinstance(data.get("config"), dict):
        raise InputError("the record names no trial count and settings", path=path, field="trials",
                         fix="rerun the tba run --trials command that wrote this folder: it rewrites the record")
    return data


def trial_dirs(set_dir: str | Path, data: dict | None = None) -> list[Path]:
    """The set's trial folders, trial 0 first, as many as its record names."""
    data = data if data is not None else read_trials(set_dir)
    return [trial_dir(set_dir, index) for index in range(data["trials"])]
