"""Recompute SoPR and SoWR from released label files, and set them beside the published tables.

Every figure is computed from the labels (JSON and, where it sits beside it, the tab-separated CSV of the same
file, as a cross-check); nothing is typed in. Two sources: StableToolBench's released example
(``data_example/pass_rate_results`` and ``preference_results`` of a checkout) or any label set (``--labels``,
every layout of labelsets.py). The strict SoPR divides by a test-id set, and every strict figure says
"n of N test ids".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labelsets import FoundLabels, discover_all
from toolbench_adapter.evaluation.published import leaderboards as published
from toolbench_adapter.evaluation.published.names import closest
from toolbench_adapter.evaluation.scoring import aggregates
from toolbench_adapter.evaluation.scoring.results import ScoreRow, rows_from_label_file
from toolbench_adapter.evaluation.scoring.scores import MODE_NOTES, STRICT, UPSTREAM, Score

PASS_RATE_DIR = Path("data_example") / "pass_rate_results"
PREFERENCE_DIR = Path("data_example") / "preference_results"
RELEASED_JUDGE = "as released by StableToolBench (judge not recorded in the label files)"
EXAMPLE_TAG = "StableToolBench's released example"
EXAMPLE_IDS_DIR = Path("solvable_queries_example") / "test_query_ids"
FULL_IDS_DIR = Path("solvable_queries") / "test_query_ids"
# The released example's answers are gpt-3.5-turbo-16k CoT / DFSDT runs of February 2024 (0613 era): the system
# of the README's "GPT-3.5-Turbo-0613" rows. Our pairing, used to set the example beside the published table.
EXAMPLE_MATCHES = {"GPT-3.5-Turbo-0613 (CoT)": "virtual_chatgpt_cot", "GPT-3.5-Turbo-0613 (DFS)": "virtual_chatgpt_dfs"}


@dataclass
class Reproduction:
    sources: list[Path]
    test_ids_dir: Path | None
    rows: list[ScoreRow]  # one per label file (JSON preferred) and mode
    twins: dict[tuple, ScoreRow] = field(default_factory=dict)  # the CSV beside a JSON file: same figures?
    example: bool = False

    def boards(self) -> list[aggregates.Board]:
        return aggregates.build_boards(self.rows)

    def board(self, metric: str, mode: str) -> aggregates.Board | None:
        return next((b for b in self.boards() if (b.metric, b.mode) == (metric, mode)), None)


def _key(row: ScoreRow) -> tuple:
    return (row.score.metric, row.score.mode, row.model, row.reference, row.group)


def _rows(found: list[FoundLabels], ids_dir: Path | None, evaluate_times: int | None) -> list[ScoreRow]:
    rows = []
    for item in found:
        rows.extend(rows_from_label_file(item.path, ids_dir, evaluate_times, group=item.group, model=item.model))
    return rows


def is_released_example(path: Path) -> bool:
    """A folder of StableToolBench's ``data_example`` (its label files are the 3-query example)."""
    parts = path.resolve().parts
    return "data_example" in parts and bool({"pass_rate_results", "preference_results"} & set(parts)
                                            or (path / "pass_rate_results").is_dir())


def reproduce_labels(sources: list[str | Path], test_ids_dir: str | Path | None = None, *,
                     evaluate_times: int | None = None, example: bool | None = None) -> Reproduction:
    """``example``: label the data as the released example (default: when every source lies in a checkout's
    data_example/)."""
    sources = [Path(s) for s in sources]
    if example is None:
        example = all(is_released_example(s) for s in sources)
    ids_dir = Path(test_ids_dir) if test_ids_dir else None
    if ids_dir is not None and not ids_dir.is_dir():
        raise InputError("test-id folder not found", path=ids_dir, field="--test-ids",
                         fix="pass <stb>/solvable_queries/test_query_ids (one {group}.json per group)")
    everything = discover_all(sources, prefer=None)
    preferred = discover_all(sources, prefer=".json")
    rows = _rows(preferred, ids_dir, evaluate_times)
    twins = {}
    for row in _rows([f for f in everything if f not in preferred], ids_dir, evaluate_times):
        twins[_key(row)] = row
    for row in rows:
        row.judge = row.judge or RELEASED_JUDGE
    return Reproduction(sources, ids_dir, rows, twins, example)


def reproduce_example(stb_root: str | Path, test_ids_dir: str | Path | None = None) -> Reproduction:
    """The released example of a checkout; strict SoPR over the example's own test ids by default."""
    root = Path(stb_root)
    if not (root / PASS_RATE_DIR).is_dir():
        raise InputError(f"no {PASS_RATE_DIR} folder (the released example labels)", path=root,
                         fix="pass --stb-root DIR (or set TBA_STB_ROOT) to a StableToolBench checkout, "
                         "or --labels DIR for another label set")
    sources = [root / PASS_RATE_DIR] + ([root / PREFERENCE_DIR] if (root / PREFERENCE_DIR).is_dir() else [])
    ids = test_ids_dir or default_test_ids(root, example=True)
    return reproduce_labels(sources, ids, example=True)


def default_test_ids(stb_root: str | Path | None, *, example: bool = False) -> Path | None:
    if not stb_root:
        return None
    for candidate in ((EXAMPLE_IDS_DIR, FULL_IDS_DIR) if example else (FULL_IDS_DIR,)):
        if (Path(stb_root) / candidate).is_dir():
            return Path(stb_root) / candidate
    return None


# ---- what the data is -----------------------------------------------------------------------------------


def describe_score(score: Score) -> str:
    if score.mode == STRICT:
        return aggregates.coverage(score)
    if score.metric == "SoPR":
        return f"{score.n} queries"
    return f"{score.n} ids"


def data_lines(result: Reproduction) -> list[str]:
    """One line per model: "3 queries of G1_instruction (StableToolBench's released example)", "765 queries",
    with "n of N test ids" when the test ids are known."""
    lines = []
    upstream = [r for r in result.rows if r.score.metric == "SoPR" and r.score.mode == UPSTREAM]
    strict = {(r.model, r.group): r.score for r in result.rows if r.score.metric == "SoPR" and r.score.mode == STRICT}
    models = list(dict.fromkeys(r.model for r in upstream))
    for model in models:
        groups = [r for r in upstream if r.model == model]
        answered = sum(r.score.n for r in groups)
        text = (f"{answered} queries of {groups[0].group}" if len(groups) == 1
                else f"{answered} queries in {len(groups)} groups")
        judged = [s for r in groups if (s := strict.get((model, r.group))) is not None]
        if judged:
            have = sum(s.n - s.missing for s in judged)
            text += f"; {have} of {sum(s.n for s in judged)} test ids"
        repeats = sorted({len(r.score.runs) for r in groups})
        text += f"; {'/'.join(map(str, repeats))} judge repeat{'s' if repeats != [1] else ''}"
        if result.example:
            text += f" ({EXAMPLE_TAG})"
        lines.append(f"  {model}: {text}")
    pairs = [r for r in result.rows if r.score.metric == "SoWR" and r.score.mode == UPSTREAM]
    for row in pairs:
        text = f"{row.score.n} ids of {row.group}" + (f" ({EXAMPLE_TAG})" if result.example else "")
        lines.append(f"  {row.model} vs {row.reference}: {text}")
    return lines


def report_text(result: Reproduction) -> str:
    """Per file: the JSON figure beside the CSV figure of the same labels; then the leaderboards."""
    where = ", ".join(str(s) for s in result.sources)
    lines = [f"Reproduced from the released labels under {where}", "Data:"] + data_lines(result)
    lines.append(f"Judge: {RELEASED_JUDGE}" if result.rows and result.rows[0].judge == RELEASED_JUDGE
                 else "Judge: " + ", ".join(sorted({r.judge for r in result.rows if r.judge})))
    lines += ["", "Per label file (figures computed from the label files; JSON | CSV where both exist)"]
    seen: list[tuple[str, str]] = []
    for row in result.rows:
        if (row.score.metric, row.score.mode) not in seen:
            seen.append((row.score.metric, row.score.mode))
    for metric, mode in seen:
        header = f"{metric}, {mode}: {MODE_NOTES.get((metric, mode), mode)}"
        if mode == STRICT and result.test_ids_dir is not None:
            header += f"; test ids from {result.test_ids_dir}"
        lines += ["", header]
        for row in (r for r in result.rows if (r.score.metric, r.score.mode) == (metric, mode)):
            twin = result.twins.get(_key(row))
            with_std = metric == "SoPR"
            csv_text = twin.score.text(with_std) if twin else "n/a"
            name = f"{row.model} vs {row.reference}" if row.reference else row.model
            detail = (f"{describe_score(row.score)} x {len(row.score.runs)} runs" if metric == "SoPR"
                      else f"{row.score.n} queries, {row.score.ties} ties")
            lines.append(f"  {name:<44} {row.group:<16} {row.score.text(with_std):>10} | {csv_text:<10} ({detail})")
    if result.test_ids_dir is None and any(r.score.metric == "SoPR" for r in result.rows):
        lines += ["", "SoPR, strict: needs the test ids (pass --test-ids DIR or --stb-root DIR)"]
    lines += ["", "Leaderboards (Average = mean of the six groups; I1 = mean of the G1 groups, I2 of the G2 groups, "
              "I3 = G3_instruction)"]
    for board in result.boards():
        lines += ["", aggregates.to_markdown(board).rstrip("\n")]
    return "\n".join(lines) + "\n"


# ---- beside the published tables ------------------------------------------------------------------------


def compare_published(result: Reproduction, tables: list[published.PublishedTable],
                      matches: dict[str, str] | None = None) -> list[published.Comparison]:
    """Each published table against the reproduced upstream board of its metric (published figures use
    upstream's denominators)."""
    preset = dict(EXAMPLE_MATCHES) if result.example else {}
    out = []
    for table in tables:
        board = result.board(table.metric, UPSTREAM)
        out.append(published.compare(table, board.lines if board else [], matches, describe=describe_score,
                                     preset=preset))
    return out


def published_text(comparisons: list[published.Comparison]) -> str:
    parts = ["Published beside reproduced (upstream denominators, as published; exact = the same printed "
             "figure, within rounding = at most one unit of the last printed digit apart)"]
    for comparison in comparisons:
        parts.append(published.comparison_text(comparison).rstrip("\n"))
    if len(comparisons) > 1:
        total = sum(c.total for c in comparisons)
        counts = [sum(c.count(mark) for c in comparisons) for mark in
                  (published.EXACT, published.ROUNDING, published.DIFFERS, published.NO_LABELS)]
        unplaced = sum(c.unplaced for c in comparisons)
        parts.append(f"Overall: {counts[0]} of {total} published cells reproduced exactly, {counts[1]} within "
                     f"rounding, {counts[2]} differ, {counts[3]} without labels, "
                     f"{sum(c.not_reported for c in comparisons)} not reported"
                     + (f", {unplaced} in columns not placed" if unplaced else ""))
    return "\n\n".join(parts) + "\n"


def example_note(result: Reproduction, comparisons: list[published.Comparison]) -> str:
    """Why the released example reproduces (almost) no published cell, and where full label sets come from:
    `make reproduce` would otherwise end on "0 of 133 ... reproduced exactly" with no word on why. It explains
    only what the comparison shows: nothing when every cell with labels reproduced (it used to explain why cells
    differ after "3 of 3 ... reproduced exactly, 0 differ")."""
    from toolbench_adapter.protocol.leaderboard import BASELINES_URL, EVALUATE_TIMES, GPT_CACHE_JUDGE

    total = sum(c.total for c in comparisons)
    without = sum(c.count(published.NO_LABELS) for c in comparisons)
    differ = sum(c.count(published.DIFFERS) for c in comparisons)
    if not without and not differ:
        return ""
    sopr = [r for r in result.rows if r.score.metric == "SoPR" and r.score.mode == UPSTREAM]
    groups = sorted({r.group for r in sopr})
    queries = max((r.score.n for r in sopr), default=0)
    models = len({r.model for r in sopr})
    said = []
    if without:
        said.append(f"{without} of the {total} cells have no labels here")
    if differ:
        said.append(f"the {differ} that differ set {queries} queries beside a whole group's rate (they differ as any "
                    "few queries would; the arithmetic is the same)")
    return (f"Why: StableToolBench releases labels only for this example, {queries} queries of {', '.join(groups)} "
            f"for {models} models; each published cell scores one model over a whole group (61 to 163 queries), so "
            f"{', and '.join(said)}. The full label sets behind the README tables are not released "
            f"(THUNLP-MT/StableToolBench issue #30); the answers behind them are ({BASELINES_URL}, inference of "
            f"February 2024): convert and judge them with the leaderboard's judge (tba convert; tba judge "
            f"--judge-model {GPT_CACHE_JUDGE} --evaluate-times {EVALUATE_TIMES}) and pass the label folders to tba "
            "reproduce --labels DIR.\n")


def unpaired_fix(comparisons: list[published.Comparison], result: Reproduction) -> str:
    """When no published row pairs with a reproduced model: each table's rows beside the models of its metric,
    with the closest candidates and ready --match lines."""
    lines = ["pair them with --match 'PUBLISHED ROW=MODEL' (compared up to case, spaces and punctuation)"]
    for comparison in comparisons:
        table = comparison.table
        lines.append(f"{table.title} ({table.metric}):")
        lines += published.unmatched_text([row.name for row in table.rows], comparison.models, indent="  ",
                                          example=True)
    models = sorted({line.model for board in result.boards() for line in board.lines})
    metrics = sorted({board.metric for board in result.boards()})
    lines.append(f"reproduced models: {', '.join(models)} (metrics {', '.join(metrics)})")
    return "\n".join(lines)


def parse_matches(pairs: list[str]) -> dict[str, str]:
    matches = {}
    for pair in pairs:
        name, sep, model = pair.rpartition("=")
        if not sep or not name.strip() or not model.strip():
            raise InputError(f"--match {pair!r} is not PUBLISHED ROW=MODEL", field="--match",
                             fix="e.g. --match 'GPT-3.5-Turbo-0613 (CoT)=chatgpt_cot'")
        matches[name.strip()] = model.strip()
    return matches


def check_matches(matches: dict[str, str], tables: list[published.PublishedTable], result: Reproduction) -> None:
    """A --match naming a row no table has, or a model the labels do not hold, is a typo: say so, with the
    closest names, rather than leave the row unpaired."""
    rows = list(dict.fromkeys(row.name for table in tables for row in table.rows))
    models = sorted({line.model for board in result.boards() for line in board.lines})
    known_rows = {published.normalise(r) for r in rows}
    known_models = {published.normalise(m) for m in models}
    for row, model in matches.items():
        if published.normalise(row) not in known_rows:
            near = ", ".join(f"'{name}'" for name, _ in closest(row, rows)) or "none"
            raise InputError(f"--match '{row}={model}': no published row is named '{row}'", field="--match",
                             fix=f"closest published rows: {near} (compared up to case, spaces and punctuation)")
        if published.normalise(model) not in known_models:
            near = ", ".join(name for name, _ in closest(model, models)) or "none"
            raise InputError(f"--match '{row}={model}': the labels hold no model '{model}'", field="--match",
                             fix=f"closest reproduced models: {near}")
