"""Label files in upstream's layout, read and written.

Pass rate: ``{save_path}/{group}_{model}.json`` = ``{qid: {"query", "tool_names", "answer_steps", "final_step",
"is_solved": {"0": "AnswerStatus.Solved", …}}}`` and ``.csv`` (tab-separated, ``is_solved`` a dict-string with int
keys). Preference: ``{group}_{ref}_{out}.json`` = ``{qid: {ref: wins, out: wins, "round_i": …}}`` and ``.csv``
(``preference_label`` 1 ref / 2 output / 3 tie). Ours add ``{group}_{model}.meta.json`` naming the judge.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.files.fileio import write_text_atomic
from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.files.input_files import read_json, read_text
from toolbench_adapter.queryset.queries import GROUPS

from ..errors import InputError
from ..protocol.evaluation import (
    PASS_RATE_CSV_HEADER,
    PREFERENCE_OUTPUT,
    PREFERENCE_REF,
    PREFERENCE_TIE,
)
from .labels import Label

META_SUFFIX = ".meta.json"
GROUP_RE = re.compile(r"^(G\d_[a-z]+)_(.+)$")


@dataclass
class LabelSet:
    """Pass-rate labels of one model on one group: ``labels[qid][repeat] = Label``."""

    group: str
    model: str
    labels: dict[str, dict[int, Label]]
    source: Path | None = None
    entries: dict[str, dict] = field(default_factory=dict)  # the full upstream records, when read from JSON
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def judge(self) -> str | None:
        return self.meta.get("judge")

    @property
    def method(self) -> str | None:
        return self.meta.get("method")


@dataclass
class PreferenceSet:
    """Win counts over judge rounds: ``wins[qid] = (reference wins, output wins)``."""

    group: str
    reference: str
    output: str
    wins: dict[str, tuple[int, int]]
    source: Path | None = None
    failed: dict[str, int] = field(default_factory=dict)  # qid -> rounds the judge failed (our meta file says)


def split_group(stem: str, path: Path | None = None) -> tuple[str, str]:
    """``"G1_instruction_virtual_chatgpt_cot"`` -> ``("G1_instruction", "virtual_chatgpt_cot")``."""
    for group in sorted(GROUPS, key=len, reverse=True):
        if stem.startswith(group + "_"):
            return group, stem[len(group) + 1:]
    match = GROUP_RE.match(stem)
    if not match:
        raise InputError("label file name must be {group}_{model}.json or .csv", path=path,
                         fix="e.g. G1_instruction_mymodel.json")
    return match.group(1), match.group(2)


def _csv_rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 30)
    text = read_text(path, "label file")
    return list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))


def _repeat_labels(value: Any, path: Path, qid: str) -> dict[int, Label]:
    if isinstance(value, str):  # the CSV cell: str() of a dict with int keys
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise InputError("is_solved is not a dict-string", path=path, field=f"{qid}.is_solved") from None
    if not isinstance(value, dict):
        raise InputError("is_solved must map repeat index -> label", path=path, field=f"{qid}.is_solved")
    try:
        return {int(k): Label.parse(str(v)) for k, v in value.items()}
    except ValueError:
        raise InputError("is_solved keys must be repeat indices", path=path, field=f"{qid}.is_solved") from None


def read_label_file(path: str | Path, group: str | None = None, model: str | None = None) -> LabelSet:
    """Group and model come from the name ``{group}_{model}``, unless given (``{model}/{group}.json``)."""
    path = Path(path)
    if group is None or model is None:
        group, model = split_group(path.stem, path)
    labels: dict[str, dict[int, Label]] = {}
    entries: dict[str, dict] = {}
    if path.suffix == ".csv":
        for row in _csv_rows(path):
            if "is_solved" not in row or "query_id" not in row:
                raise InputError("pass-rate CSV needs query_id and is_solved columns", path=path)
            labels[row["query_id"]] = _repeat_labels(row["is_solved"], path, row["query_id"])
    else:
        data = read_json(path, "label file")
        if not isinstance(data, dict):
            raise InputError("pass-rate label file must be a JSON object keyed by query id", path=path)
        for qid, entry in data.items():
            if not isinstance(entry, dict) or "is_solved" not in entry:
                raise InputError("missing field 'is_solved'", path=path, field=str(qid))
            labels[str(qid)] = _repeat_labels(entry["is_solved"], path, str(qid))
            entries[str(qid)] = entry
    meta_path = path.with_name(path.stem + META_SUFFIX)
    meta = read_json(meta_path, "label file", what="label meta file") if os.path.lexists(meta_path) else {}
    return LabelSet(group=group, model=model, labels=labels, source=path, entries=entries, meta=meta)


def is_preference_file(path: Path) -> bool:
    """Preference files hold per-model win counts (JSON) or a preference_label column (CSV)."""
    if path.suffix == ".csv":
        return "preference_label" in read_text(path, "label file").split("\n", 1)[0]
    data = read_json(path, "label file")
    return isinstance(data, dict) and any(isinstance(v, dict) and "is_solved" not in v for v in data.values())


def read_preference_file(path: str | Path) -> PreferenceSet:
    path = Path(path)
    group, pair = split_group(path.stem, path)
    wins: dict[str, tuple[int, int]] = {}
    if path.suffix == ".csv":
        rows = _csv_rows(path)
        if not rows:
            raise InputError("preference CSV has no rows", path=path)
        reference, output = rows[0]["ref_model"], rows[0]["output_model"]
        outcome = {PREFERENCE_REF: (1, 0), PREFERENCE_OUTPUT: (0, 1), PREFERENCE_TIE: (0, 0)}
        for row in rows:
            try:
                wins[row["query_id"]] = outcome[int(row["preference_label"])]
            except (KeyError, ValueError):
                raise InputError("preference_label must be 1, 2 or 3", path=path, field=row.get("query_id")) from None
    else:
        data = read_json(path, "label file")
        if not isinstance(data, dict):
            raise InputError("preference file must be a JSON object keyed by query id", path=path)
        models = sorted({k for v in data.values() if isinstance(v, dict) for k in v if not k.startswith("round_")})
        reference, output = _split_pair(pair, models, path)
        for qid, counts in data.items():
            wins[str(qid)] = (int(counts.get(reference, 0)), int(counts.get(output, 0)))
    return PreferenceSet(group=group, reference=reference, output=output, wins=wins, source=path,
                         failed=_failed_rounds(path))


def _failed_rounds(path: Path) -> dict[str, int]:
    """Rounds our meta file records as judge failures (no verdict), per query: such a query's win counts are not
    an outcome. Upstream files have no meta file (their "incomplete" rounds are missing answers, not failures)."""
    meta_path = path.with_name(path.stem + META_SUFFIX)
    if not os.path.lexists(meta_path):
        return {}
    meta = read_json(meta_path, "label file", what="label meta file")
    rounds = meta.get("rounds") if isinstance(meta, dict) else None
    if not isinstance(rounds, dict):
        return {}
    failed = {str(qid): sum(1 for record in by_round.values() if isinstance(record, dict) and record.get("error"))
              for qid, by_round in rounds.items() if isinstance(by_round, dict)}
    return {qid: count for qid, count in failed.items() if count}


def _split_pair(pair: str, models: list[str], path: Path) -> tuple[str, str]:
    """``{ref}_{out}`` from the file name, told apart with the model keys of the file."""
    for reference in models:
        if pair.startswith(reference + "_") and pair[len(reference) + 1:] in models:
            return reference, pair[len(reference) + 1:]
    raise InputError(f"cannot tell reference and output model apart in {pair!r} (models in file: {models})",
                     path=path, fix="name the file {group}_{reference}_{output}.json")


def find_label_files(root: str | Path) -> list[Path]:
    """Label / preference files under a folder (or the file itself); meta files are skipped."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError("label file or folder not found", path=root)
    found = [p for p in files_under(root) if p.suffix in (".json", ".csv") and not p.name.endswith(META_SUFFIX)]
    return sorted(p for p in found if GROUP_RE.match(p.stem))


def write_label_files(save_dir: str | Path, group: str, model: str, entries: dict[str, dict],
                      meta: dict[str, Any]) -> Path:
    """JSON (upstream layout, indent 4, ensure_ascii False), the tab-separated CSV and our meta file."""
    save_dir = Path(save_dir)
    base = save_dir / f"{group}_{model}"
    write_text_atomic(base.with_suffix(".json"), json.dumps(entries, ensure_ascii=False, indent=4))
    write_text_atomic(base.with_suffix(".csv"), _pass_rate_csv(entries, model))
    write_text_atomic(save_dir / f"{group}_{model}{META_SUFFIX}", json.dumps(meta, indent=2))
    return base.with_suffix(".json")


def _pass_rate_csv(entries: dict[str, dict], model: str) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t")
    writer.writerow(PASS_RATE_CSV_HEADER)
    for qid, entry in entries.items():
        repeats = {int(k): v for k, v in entry["is_solved"].items()}
        writer.writerow([entry["query"], str(entry["tool_names"]), entry["answer_steps"], entry["final_step"],
                         model, qid, str(repeats)])
    return buffer.getvalue()
