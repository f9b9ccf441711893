"""Score rows (model, method, group, judge, Score) computed from label files, and score files that hold them.

A score file is what ``tba score`` / ``tba judge`` / ``tba reproduce --out`` write and ``tba table`` reads:
``{"format": "toolbench-adapter/scores", "version": 1, "rows": [{model, method, group, judge, reference,
source, score: {metric, mode, mean, std, n, runs, errors, missing, ties}}]}``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.labelsets import discover_all
from toolbench_adapter.evaluation.scoring.scores import CORRECTED, STRICT, UPSTREAM, Score, sopr, sowr
from toolbench_adapter.evaluation.storage import (
    is_preference_file,
    read_label_file,
    read_preference_file,
    write_text_atomic,
)
from toolbench_adapter.files.input_files import read_json

SCORE_FORMAT = "toolbench-adapter/scores"


@dataclass
class ScoreRow:
    model: str
    group: str
    score: Score
    method: str | None = None
    judge: str | None = None
    reference: str | None = None  # SoWR: the model compared against
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "method": self.method, "group": self.group, "judge": self.judge,
                "reference": self.reference, "source": self.source, "score": self.score.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any], path: Path | None = None) -> ScoreRow:
        try:
            score = Score(**data["score"])
            return cls(model=data["model"], group=data["group"], score=score, method=data.get("method"),
                       judge=data.get("judge"), reference=data.get("reference"), source=data.get("source"))
        except (KeyError, TypeError) as exc:
            raise InputError(f"malformed score row ({exc})", path=path, field="rows[]") from None


def load_test_ids(test_ids_dir: str | Path | None, group: str) -> list[str] | None:
    """Ids of ``{dir}/{group}.json`` (``{"<id>": …}``) in file order; None without a folder or file."""
    if test_ids_dir is None:
        return None
    path = Path(test_ids_dir) / f"{group}.json"
    if not os.path.lexists(path):  # a link loop or a dangling link is there, and refused by the reader
        return None
    data = read_json(path, "test id file")
    if not isinstance(data, dict):
        raise InputError("test id file must be a JSON object {\"<query_id>\": …}", path=path)
    return [str(k) for k in data]


def rows_from_label_file(path: Path, test_ids_dir: str | Path | None = None,
                         evaluate_times: int | None = None, *, group: str | None = None,
                         model: str | None = None) -> list[ScoreRow]:
    """SoPR (upstream, and strict when test ids are known) or SoWR (upstream and corrected) of one file.

    ``group`` / ``model`` name a per-model-folder file (``{model}/{group}.json``); otherwise the file name does."""
    if group is None and is_preference_file(path):
        prefs = read_preference_file(path)
        # a query with a failed round has no outcome: left out of SoWR, its failed rounds counted as errors
        decided = {qid: wins for qid, wins in prefs.wins.items() if qid not in prefs.failed}
        return [ScoreRow(prefs.output, prefs.group, sowr(decided, mode=mode, errors=sum(prefs.failed.values())),
                         reference=prefs.reference, source=str(path)) for mode in (UPSTREAM, CORRECTED)]
    labels = read_label_file(path, group, model)
    common = {"method": labels.method, "judge": labels.judge, "source": str(path)}
    rows = [ScoreRow(labels.model, labels.group, sopr(labels.labels, evaluate_times=evaluate_times), **common)]
    ids = load_test_ids(test_ids_dir, labels.group)
    if ids is not None:
        strict = sopr(labels.labels, mode=STRICT, evaluate_times=evaluate_times, test_ids=ids)
        rows.append(ScoreRow(labels.model, labels.group, strict, **common))
    return rows


def rows_from_labels(paths: list[str | Path], test_ids_dir: str | Path | None = None,
                     evaluate_times: int | None = None, prefer: str = ".json") -> list[ScoreRow]:
    """Rows of every label file under the paths, in any layout of labelsets.py; when a JSON and a CSV say
    the same, ``prefer`` wins. A path where no label file is recognised is an input error."""
    rows: list[ScoreRow] = []
    for found in discover_all(list(paths), prefer):
        rows.extend(rows_from_label_file(found.path, test_ids_dir, evaluate_times, group=found.group,
                                         model=found.model))
    return rows


def write_score_file(path: str | Path, rows: list[ScoreRow]) -> Path:
    path = Path(path)
    payload = {"format": SCORE_FORMAT, "version": 1, "rows": [row.as_dict() for row in rows]}
    write_text_atomic(path, json.dumps(payload, indent=2))
    return path


def read_score_file(path: str | Path) -> list[ScoreRow]:
    path = Path(path)
    data = read_json(path, "score file")
    if not isinstance(data, dict) or data.get("format") != SCORE_FORMAT:
        raise InputError("not a score file", path=path, field="format",
                         fix="pass files written by `tba score` / `tba judge`, or label files / folders")
    return [ScoreRow.from_dict(row, path) for row in data.get("rows", [])]


def is_score_file(path: Path) -> bool:
    if path.suffix != ".json" or not path.is_file():
        return False
    try:  # the file's first bytes (a FIFO is no file: is_file() is False for it)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        head = os.read(fd, 200)
    except OSError:
        return False
    finally:
        os.close(fd)
    return SCORE_FORMAT.encode() in head


def label_counts(labels: dict[str, dict[int, Label]]) -> dict[str, int]:
    counts = {label.value: 0 for label in Label}
    for repeats in labels.values():
        for label in repeats.values():
            counts[label.value] += 1
    return counts
