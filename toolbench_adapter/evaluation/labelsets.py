"""Find label files in any released layout, and say so loudly when a folder holds none.

Layouts recognised (JSON or tab-separated CSV):
- StableToolBench's ``pass_rate_results``: ``{model}/{group}_{model}.json`` (the name carries group and model);
- per-model folders: ``{model}/{group}.json`` holding pass-rate labels (the model is the folder name), as
  other released label sets are laid out;
- preference results: ``{group}_{reference}_{output}.json``.
A ``{model}/{group}.json`` without ``is_solved`` (a converted answer file, say) is not a label file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.files.folder_files import files_under, regular_files
from toolbench_adapter.files.input_files import UnreadableFile, read_json, read_text
from toolbench_adapter.queryset.queries import GROUPS

from ..errors import InputError
from .storage import GROUP_RE, META_SUFFIX, LabelSet, is_preference_file, read_label_file

LAYOUTS = ("{model}/{group}_{model}.json or .csv (StableToolBench pass_rate_results)",
           "{model}/{group}.json or .csv holding is_solved labels (per-model folders; model = folder name)",
           "{group}_{reference}_{output}.json or .csv (preference results)")
PASS_RATE, PREFERENCE = "pass_rate", "preference"
# what a file named like labels may be without being one (skipped); every other refusal of the reader is exit 2
NOT_LABELS = ("not_json", "not_utf8", "binary")


@dataclass(frozen=True)
class FoundLabels:
    path: Path
    kind: str  # PASS_RATE or PREFERENCE
    group: str | None = None  # given for the per-model layout, else read from the file name
    model: str | None = None

    def read(self) -> LabelSet:
        return read_label_file(self.path, self.group, self.model)


def _holds_pass_rate_labels(path: Path) -> bool:
    """Cheap content test for ``{model}/{group}.json``: the records carry ``is_solved``."""
    try:
        data = read_json(path, "label file")
    except UnreadableFile as exc:  # not JSON: not labels; a FIFO, a link loop or a file too large is refused
        if exc.reason in NOT_LABELS:
            return False
        raise
    return isinstance(data, dict) and bool(data) and all(isinstance(v, dict) and "is_solved" in v
                                                         for v in data.values())


def _csv_header_has_is_solved(path: Path) -> bool:
    try:
        head = read_text(path, "label file").split("\n", 1)[0]
    except UnreadableFile as exc:
        if exc.reason in NOT_LABELS:
            return False
        raise
    return "is_solved" in head.rstrip("\r").split("\t")


def classify(path: Path) -> FoundLabels | None:
    """What a file is in the layouts above, or None when it is none of them."""
    if path.suffix not in (".json", ".csv") or path.name.endswith(META_SUFFIX):
        return None
    if path.stem in GROUPS:
        holds = _csv_header_has_is_solved(path) if path.suffix == ".csv" else _holds_pass_rate_labels(path)
        return FoundLabels(path, PASS_RATE, path.stem, path.parent.name) if holds else None
    if GROUP_RE.match(path.stem):
        try:
            kind = PREFERENCE if is_preference_file(path) else PASS_RATE
        except UnreadableFile as exc:
            if exc.reason in NOT_LABELS:
                return None
            raise
        except InputError:
            return None
        return FoundLabels(path, kind)
    return None


def discover(root: str | Path, prefer: str | None = ".json") -> list[FoundLabels]:
    """Label files under a folder (or the file itself); a JSON and a CSV of the same stem: ``prefer`` wins
    (``None`` keeps both).

    A folder (or file) where nothing is recognised is an input error naming the layouts expected."""
    root = Path(root)
    if not root.exists():
        raise InputError("label file or folder not found", path=root)
    candidates = regular_files([root]) if not root.is_dir() else files_under(root)
    found = [f for f in (classify(p) for p in candidates) if f is not None]
    if not found:
        seen = len(candidates)
        raise InputError(f"no label files recognised ({seen} file{'s' if seen != 1 else ''} looked at)", path=root,
                         fix="label files are laid out as " + "; or ".join(LAYOUTS))
    if prefer is None:
        return found
    stems = {(f.path.parent, f.path.stem) for f in found if f.path.suffix == prefer}
    return [f for f in found if f.path.suffix == prefer or (f.path.parent, f.path.stem) not in stems]


def discover_all(roots: list[str | Path], prefer: str | None = ".json") -> list[FoundLabels]:
    found: list[FoundLabels] = []
    for root in roots:
        found.extend(discover(root, prefer))
    return found
