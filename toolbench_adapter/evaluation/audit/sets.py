"""Released label sets an audit knows by name (``tba judge-audit --set NAME``), each with source and licence.

A set holds pass-rate label files (``pass_rate_results/{model}/``) and the converted answers they label
(``model_predictions_converted/{model}/{group}.json``), so the judge sees each answer exactly. Only sets whose
licence lets the project ship them are here; the larger released sets are listed in docs/judging.md "Choosing a judge"
with where to get them (then ``--labels DIR --converted DIR``).
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labelsets import PASS_RATE, FoundLabels, discover_all
from toolbench_adapter.queryset.queries import PROJECT_DATA


@dataclass(frozen=True)
class AuditSet:
    name: str
    labels: Path
    converted: Path
    source: str
    licence: str
    about: str
    answers: int  # answers its pass-rate label files hold (labels_digest): a judge card's audit is checked against it
    labels_sha256: str  # labels_digest of its label files, as shipped

    def check(self) -> None:
        for path in (self.labels, self.converted):
            if not path.is_dir():
                raise InputError(f"audit set {self.name!r} is missing its files", path=path,
                                 fix="restore data/ from the project's repository (git checkout -- data)")


_EXAMPLE = PROJECT_DATA / "stabletoolbench_example" / "data_example"
AUDIT_SETS = {
    "stb-example": AuditSet(
        "stb-example", _EXAMPLE / "pass_rate_results", _EXAMPLE / "model_predictions_converted",
        "THUNLP-MT/StableToolBench@aa4ed9f4737ad98bd706663f01d63623c3427812: data_example/", "Apache-2.0",
        "StableToolBench's example: 2 models (virtual_chatgpt_cot, _dfs) x 3 G1_instruction answers x 3 "
        "released judgements (gpt-4-turbo-preview per its README); 18 pairs, 3 of them Unsolved by rule",
        answers=6, labels_sha256="eb04c786e7f9a30310713524df0cb0f5ec9e7c34cd0f326367757cf35ccc4677"),
}


def labels_digest(found: list[FoundLabels]) -> tuple[str, int]:
    """(sha256, answers) of the pass-rate label files an audit reads: each file's name (its folder and itself)
    and bytes, in name order; the answers they label. What a judge card records of the labels it was measured
    against, and what reading the card checks (cards.py)."""
    files = sorted({f for f in found if f.kind == PASS_RATE}, key=lambda f: (f.path.parent.name, f.path.name))
    return _digest(tuple((f, *_signature(f.path)) for f in files))


def _signature(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_mtime_ns, info.st_size


@lru_cache(maxsize=64)
def _digest(files: tuple[tuple[FoundLabels, int, int], ...]) -> tuple[str, int]:
    """Keyed by (file, mtime, size): a table that cites many cards reads each label set once."""
    digest = hashlib.sha256()
    answers = 0
    for found, _mtime, _size in files:
        digest.update(f"{found.path.parent.name}/{found.path.name}\0".encode())
        digest.update(hashlib.sha256(found.path.read_bytes()).hexdigest().encode())
        answers += len(found.read().labels)
    return digest.hexdigest(), answers


def set_digest(chosen: AuditSet) -> tuple[str, int]:
    """labels_digest of a set's label files as they are now."""
    return labels_digest(discover_all([chosen.labels]))


def audit_set(name: str) -> AuditSet:
    if name not in AUDIT_SETS:
        close = difflib.get_close_matches(name, AUDIT_SETS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"no audit set {name!r}", field="--set",
                         fix=f"{hint}known sets: {', '.join(AUDIT_SETS)}; for a larger released set (docs/judging.md, "
                         "\"Choosing a judge\", says where to get it) pass --labels DIR --converted DIR")
    chosen = AUDIT_SETS[name]
    chosen.check()
    return chosen
