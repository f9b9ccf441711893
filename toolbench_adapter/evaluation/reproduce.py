"""Recompute SoPR and SoWR from the label files StableToolBench released (``data_example/``).

Every figure is computed from the labels (both the JSON and the tab-separated CSV of each file); nothing is
typed in. The strict SoPR divides by the test-id set the labels were judged on (``solvable_queries_example``
when the checkout has it, else ``solvable_queries``), which the caller can override.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .results import ScoreRow, rows_from_label_file
from .scores import MODE_NOTES
from .storage import find_label_files

PASS_RATE_DIR = Path("data_example") / "pass_rate_results"
PREFERENCE_DIR = Path("data_example") / "preference_results"
RELEASED_JUDGE = "as released by StableToolBench (judge not recorded in the label files)"
TEST_ID_DIRS = (Path("solvable_queries_example") / "test_query_ids", Path("solvable_queries") / "test_query_ids")


@dataclass
class Reproduction:
    stb_root: Path
    test_ids_dir: Path | None
    json_rows: list[ScoreRow]
    csv_rows: list[ScoreRow]


def default_test_ids(stb_root: Path) -> Path | None:
    for candidate in TEST_ID_DIRS:
        if (stb_root / candidate).is_dir():
            return stb_root / candidate
    return None


def reproduce(stb_root: str | Path, test_ids_dir: str | Path | None = None) -> Reproduction:
    root = Path(stb_root)
    folders = [root / PASS_RATE_DIR, root / PREFERENCE_DIR]
    if not folders[0].is_dir():
        raise InputError(f"no {PASS_RATE_DIR} folder (the released example labels)", path=root,
                         fix="pass --stb-root DIR (or set TBA_STB_ROOT) to a StableToolBench checkout")
    ids_dir = Path(test_ids_dir) if test_ids_dir else default_test_ids(root)
    json_rows: list[ScoreRow] = []
    csv_rows: list[ScoreRow] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in find_label_files(folder):
            target = csv_rows if path.suffix == ".csv" else json_rows
            for row in rows_from_label_file(path, ids_dir):
                row.judge = row.judge or RELEASED_JUDGE
                target.append(row)
    return Reproduction(root, ids_dir, json_rows, csv_rows)


def _key(row: ScoreRow) -> tuple:
    return (row.score.metric, row.score.mode, row.model, row.reference, row.group)


def report_text(result: Reproduction) -> str:
    """Per (metric, mode): one line per model and group, the JSON figure beside the CSV figure."""
    csv_by_key = {_key(r): r for r in result.csv_rows}
    lines = [f"Reproduced from the released labels under {result.stb_root / 'data_example'}",
             "(figures computed from the label files; JSON | CSV)"]
    seen: list[tuple[str, str]] = []
    for row in result.json_rows:
        if (row.score.metric, row.score.mode) not in seen:
            seen.append((row.score.metric, row.score.mode))
    for metric, mode in seen:
        lines.append("")
        header = f"{metric}, {mode}: {MODE_NOTES.get((metric, mode), mode)}"
        if mode == "strict" and result.test_ids_dir is not None:
            header += f"; test ids from {result.test_ids_dir}"
        lines.append(header)
        for row in (r for r in result.json_rows if (r.score.metric, r.score.mode) == (metric, mode)):
            twin = csv_by_key.get(_key(row))
            with_std = metric == "SoPR"
            csv_text = twin.score.text(with_std) if twin else "n/a"
            name = f"{row.model} vs {row.reference}" if row.reference else row.model
            detail = (f"{row.score.n} queries x {len(row.score.runs)} runs" if metric == "SoPR"
                      else f"{row.score.n} queries, {row.score.ties} ties")
            lines.append(f"  {name:<44} {row.group:<16} {row.score.text(with_std):>10} | {csv_text:<10} ({detail})")
    return "\n".join(lines) + "\n"
