"""Parser variants compared on runs: how much does the parser change the score?

Input: judged run folders of the same queries that differ in their parser (a `tba run --parsers` set, or
separate runs). Per parser: the pass rate on the queries every run has labels for (label points averaged
over the judge repeats, as SoPR). Against the baseline (the dialect's default parser when it is among the
runs): the difference in points with a paired bootstrap 95% interval and an exact McNemar p-value on the
queries that flip (a query passes when its mean label points exceed 0.5), and for each flip the first step
where the two trajectories differ (steps.jsonl) with what each parser made of it there.

A variant whose parser read no call in any step (its format never matched the model's) is folded into
one line: it says nothing about the parser, only that it does not apply.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.evaluation.scoring.paired import mcnemar_exact, paired_bootstrap
from toolbench_adapter.files.fileio import read_json, write_text_atomic
from toolbench_adapter.runs.folder import FANOUT, MANIFEST, STEPS

from ..errors import RUN_FOLDER_FIX, InputError
from ..evaluation.comparability import NOT_RECORDED, run_line
from ..evaluation.evaluations import EVAL_DIR, choose_evaluation, list_evaluations
from ..evaluation.storage import read_label_file
from ..protocol.env import STATUS_NAMES
from .axes import axes_text, axis_header, judge_text, judges_line, settings_of
from .sweep_record import DONE, SWEEP_FILE, read_sweep

PASS_THRESHOLD = 0.5  # a query passes when its mean label points exceed this
# what makes two step records "the same step": the rung tells whether the parser decoded the arguments
# (react-find and react-robust both flag trailing text; only one of them reads the JSON before it)
STEP_FIELDS = ("turn", "call", "arguments", "status", "error", "rung")
PARSE_ERROR_SOURCE = "tool_input_parse_error"  # the server's reply to arguments that are not JSON
CALL_TEXT_CHARS = 48  # a call's arguments as shown in a divergence line

QueryKey = tuple[str, str]  # (group, query id)


@dataclass
class RunVariant:
    path: Path
    parser: str
    default_parser: str | None
    scores: dict[QueryKey, float]  # mean label points over the judge repeats
    steps: dict[QueryKey, list[dict]] = field(default_factory=dict)
    model: str | None = None  # the manifest's model: a row names the model and the parser
    evaluation: str | None = None  # whose labels: the evaluation's id (evaluations.py)
    judge: str = "not recorded"  # that evaluation's judge, self-judged marked (axes.judge_text)
    comparability: str = NOT_RECORDED  # its line against the StableToolBench leaderboard (comparability.py)
    settings: dict = field(default_factory=dict)  # its value on each axis (axes.settings_of)

    @property
    def read_a_call(self) -> bool:
        """False when no step of the run carried a call: the parser never matched the model's format."""
        return not self.steps or any(r.get("call") for records in self.steps.values() for r in records)


@dataclass
class Flip:
    key: QueryKey
    baseline_passed: bool
    variant_passed: bool
    divergence: dict | None  # the first differing step, or None when the steps are the same


@dataclass
class PairedResult:
    parser: str
    n: int
    difference: float  # points
    low: float
    high: float
    p_value: float
    up: int  # queries only the variant passes
    down: int  # queries only the baseline passes
    flips: list[Flip]
    diverged: int = 0  # queries whose steps differ, whether or not the pass flips
    # (baseline kind, variant kind, fields that differ) at the first differing step -> queries
    divergence_kinds: Counter = field(default_factory=Counter)
    # the same key -> its first query and that query's divergence (shown with the count)
    divergence_examples: dict = field(default_factory=dict)

    def headline(self, baseline: str) -> str:
        return (f"{self.parser}: {self.difference:+.1f} points over {baseline} on {self.n} queries, "
                f"95% CI [{self.low:+.1f}, {self.high:+.1f}], exact McNemar p = {self.p_value:.3g} "
                f"({self.up} flip up, {self.down} down)")


@dataclass
class RunComparison:
    baseline: str
    queries: list[QueryKey]
    variants: dict[str, RunVariant]
    pass_rates: dict[str, float]  # points
    passed: dict[str, int]
    paired: dict[str, PairedResult]
    not_applicable: list[str]
    axes: list[str] = field(default_factory=lambda: ["parser"])  # what the runs differ in (axes.py)
    # per run: its queries (judged, or with step records) that are not in every run: left out of every figure
    left_out: dict[str, int] = field(default_factory=dict)

    def headline(self) -> str:
        if not self.paired:
            names = ", ".join(self.not_applicable) or "none"
            return f"no parser to compare with {self.baseline} (read no call: {names})"
        best = max(self.paired.values(), key=lambda r: (abs(r.difference), r.parser))
        return best.headline(self.baseline)


# ---------------------------------------------------------------- reading

def expand_run_paths(paths: list[str | Path]) -> list[Path]:
    """Run folders; a fan-out set folder (fanout.json) stands for its variant folders, a sweep's folder
    (sweep.json) for its cells that are done, the baseline first."""
    runs: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if (path / SWEEP_FILE).is_file():
            runs.extend(sweep_cells(path))
        elif (path / FANOUT).is_file():
            record = read_json(path / FANOUT)
            runs.extend(path / parser for parser in record.get("parsers", []))
        elif (path / MANIFEST).is_file():
            runs.append(path)
        else:
            raise InputError("not a run folder (no manifest.json) nor a fan-out set (no fanout.json)", path=path,
                             fix=f"{RUN_FOLDER_FIX} (with --parsers: the NAME folder)")
    return runs


def sweep_cells(sweep_dir: Path) -> list[Path]:
    """A sweep's done cells in its spec's order, the baseline first; none done is exit 2 naming the sweep."""
    record = read_sweep(sweep_dir)
    done = [c for c in record["cells"] if c["state"] == DONE]
    if not done:
        raise InputError("the sweep has no cell done yet", path=sweep_dir, field="cells",
                         fix="run the sweep first: tba sweep SPEC (its failed cells are named with their redo)")
    left = [f"{c['name']} ({c['state']})" for c in record["cells"] if c["state"] != DONE]
    if left:  # compared without them: said, never silently
        print(f"{sweep_dir}: {len(left)} of {len(record['cells'])} cells not done, left out: {', '.join(left)}",
              file=sys.stderr)
    done.sort(key=lambda c: c["name"] != record.get("baseline"))
    return [sweep_dir / Path(c["run_dir"]).name for c in done]  # never outside it


def load_variants(paths: list[Path], judge_id: str | None = None) -> list[RunVariant]:
    """Every run, judged by one judge: ``judge_id``, else the latest evaluation complete in every run
    (evaluations.py keeps each judge's apart); runs without one in common are exit 2 naming what each has."""
    if judge_id is None:
        records = {path: list_evaluations(path) for path in paths}
        complete = [{r.id for r in found if r.complete} for found in records.values()]
        common = set.intersection(*complete) if complete else set()
        if common:  # the latest of them, by when it ended in the first run
            judge_id = max((r for r in records[paths[0]] if r.id in common), key=lambda r: r.finished).id
        elif len({frozenset(ids) for ids in complete}) > 1 and all(complete):
            held = "; ".join(f"{path}: {', '.join(sorted(ids))}" for path, ids in zip(paths, complete, strict=True))
            raise InputError(f"the runs were judged by different judges ({held}): their pass rates do not compare",
                             field="--runs", fix="evaluate every run with the same judge (tba evaluate RUN with the "
                             "same --judge-* flags; the judge cache is shared)")
    return [load_variant(path, judge_id) for path in paths]


def load_variant(path: Path, judge_id: str | None = None) -> RunVariant:
    """``judge_id``: the evaluation to read (default: the run's latest complete one)."""
    manifest = read_json(path / MANIFEST)
    parser = manifest.get("parser")
    if not parser:
        raise InputError("manifest names no parser", path=path / MANIFEST, field="parser")
    chosen, records = choose_evaluation(path, judge_id)
    files = [f for f in chosen.label_files() if f.suffix == ".json"] if chosen is not None else []
    if not files:
        failed = f"; its evaluations: {', '.join(r.summary() for r in records)}" if records else ""
        raise InputError(f"the run has no complete evaluation (judge labels without a failed judgement){failed}",
                         path=path / EVAL_DIR, fix=f"run `tba evaluate {path}` (again: failed judgements are redone, "
                         "cached verdicts kept; variants of one fan-out share the judge cache)")
    scores = query_scores(files)
    dialect = manifest.get("dialect") or {}
    judge = chosen.data.get("judge") or {}
    return RunVariant(path, parser, dialect.get("default_parser"), scores, read_steps(path / STEPS),
                      model=manifest.get("model"), evaluation=chosen.id,
                      judge=judge_text(judge.get("model"), chosen.judge, chosen.self_judged),
                      comparability=run_line(manifest, judge), settings=settings_of(manifest))


def query_scores(label_files: list[Path]) -> dict[QueryKey, float]:
    """(group, query id) -> its label points averaged over the judge repeats, from one evaluation's JSON label
    files (what every paired comparison pairs: here, compare-runs and the sweep matrix)."""
    scores: dict[QueryKey, float] = {}
    for label_file in label_files:
        labels = read_label_file(label_file)
        for qid, repeats in labels.labels.items():
            if repeats:
                scores[(labels.group, str(qid))] = statistics.fmean(label.points for label in repeats.values())
    return scores


def read_steps(path: Path) -> dict[QueryKey, list[dict]]:
    steps: dict[QueryKey, list[dict]] = {}
    if not path.is_file():
        return steps
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = (str(record["group"]), str(record["query_id"]))
        except (ValueError, KeyError, TypeError):
            raise InputError(f"line {number} is not a step record", path=path,
                             fix="steps.jsonl as tba run writes it") from None
        steps.setdefault(key, []).append(record)
    return steps


# ---------------------------------------------------------------- comparing

def step_kind(record: dict | None) -> str:
    """What a parser made of a step, e.g. "trailing_text, tool input parse error"; "ended" past the end."""
    if record is None:
        return "ended"
    parts = ["re-asked"] if record.get("kind") == "reask" else []  # a discarded reply (--on-invalid reask:N)
    error = record.get("error")
    if error and error != "none":
        parts.append(str(error))
    if record.get("source") == PARSE_ERROR_SOURCE:
        parts.append("tool input parse error")
    status = record.get("status")
    if status not in (None, 0):
        parts.append(STATUS_NAMES.get(status, f"status {status}"))
    if not record.get("call"):
        parts.append("no call")
    return ", ".join(parts) or "ok"


def first_divergence(a: list[dict], b: list[dict], name_a: str, name_b: str) -> dict | None:
    for index in range(max(len(a), len(b))):
        left = a[index] if index < len(a) else None
        right = b[index] if index < len(b) else None
        if left is None or right is None or any(left.get(k) != right.get(k) for k in STEP_FIELDS):
            where = left or right
            differing = [k for k in STEP_FIELDS if left is None or right is None or left.get(k) != right.get(k)]
            return {"turn": where.get("turn"), "step": where.get("step"), "differ_in": differing,
                    name_a: {"kind": step_kind(left), "call": (left or {}).get("call"),
                             "arguments": (left or {}).get("arguments")},
                    name_b: {"kind": step_kind(right), "call": (right or {}).get("call"),
                             "arguments": (right or {}).get("arguments")}}
    return None


def compare_runs(variants: list[RunVariant], baseline: str | None = None, *, seed: int = 0,
                 resamples: int = 10_000, fold_no_call: bool = True) -> RunComparison:
    """``fold_no_call``: a parser that read no call is folded (its format does not apply); runs that differ in
    their settings (structured_runs.py) keep such a run: there the model wrote no call."""
    by_parser: dict[str, RunVariant] = {}
    for variant in variants:
        if variant.parser in by_parser:
            raise InputError(f"two runs with parser {variant.parser}: {by_parser[variant.parser].path} and "
                             f"{variant.path}", path=variant.path, field="parser",
                             fix="compare runs that differ in their parser")
        by_parser[variant.parser] = variant
    if len(by_parser) < 2:
        raise InputError("compare-parsers on runs needs at least two runs with different parsers",
                         field="--runs", fix="pass a tba run --parsers set folder, or two or more run folders")
    default = variants[0].default_parser
    if baseline is None:
        baseline = default if default in by_parser else variants[0].parser
    elif baseline not in by_parser:
        raise InputError(f"baseline parser {baseline!r} is not among the runs ({', '.join(by_parser)})",
                         field="--baseline")
    judged_by = {v.evaluation for v in by_parser.values()}
    if len(judged_by) > 1:  # two judges' labels would compare the judges as much as the parsers
        held = "; ".join(f"{p}: {v.evaluation}" for p, v in by_parser.items())
        raise InputError(f"the runs' labels come from different judges ({held})", field="--runs",
                         fix="evaluate every run with the same judge (the judge cache is shared)")
    common = set.intersection(*(set(v.scores) for v in by_parser.values()))
    if not common:
        raise InputError("the runs have no judged query in common", field="--runs",
                         fix="compare runs of the same queries, each evaluated")
    queries = sorted(common)
    # runs of different query sets: every figure is over the shared queries; each run's others are counted
    left_out = {p: len((set(v.scores) | set(v.steps)) - common) for p, v in by_parser.items()}
    passed = {p: sum(v.scores[q] > PASS_THRESHOLD for q in queries) for p, v in by_parser.items()}
    rates = {p: statistics.fmean(v.scores[q] for q in queries) * 100 for p, v in by_parser.items()}
    not_applicable = [p for p, v in by_parser.items() if p != baseline and not v.read_a_call and fold_no_call]
    base = by_parser[baseline]
    paired = {}
    for parser, variant in by_parser.items():
        if parser == baseline or parser in not_applicable:
            continue
        paired[parser] = _paired(base, variant, queries, seed, resamples)
    return RunComparison(baseline, queries, by_parser, rates, passed, paired, not_applicable, left_out=left_out)


def _paired(base: RunVariant, variant: RunVariant, queries: list[QueryKey], seed: int,
            resamples: int) -> PairedResult:
    a = [base.scores[q] for q in queries]
    b = [variant.scores[q] for q in queries]
    difference = paired_bootstrap(a, b, seed=seed, resamples=resamples)
    flips = []
    kinds: Counter = Counter()
    examples: dict = {}
    for key, score_a, score_b in zip(queries, a, b, strict=True):
        divergence = first_divergence(base.steps.get(key, []), variant.steps.get(key, []), base.parser,
                                      variant.parser)
        if divergence is not None:
            kind = (divergence[base.parser]["kind"], divergence[variant.parser]["kind"],
                    ", ".join(divergence["differ_in"]))
            kinds[kind] += 1
            examples.setdefault(kind, (key, divergence))
        passed_a, passed_b = score_a > PASS_THRESHOLD, score_b > PASS_THRESHOLD
        if passed_a != passed_b:
            flips.append(Flip(key, passed_a, passed_b, divergence))
    up = sum(f.variant_passed for f in flips)
    down = len(flips) - up
    return PairedResult(variant.parser, len(queries), difference.mean * 100, difference.low * 100,
                        difference.high * 100, mcnemar_exact(down, up), up, down, flips,
                        diverged=sum(kinds.values()), divergence_kinds=kinds, divergence_examples=examples)


# ---------------------------------------------------------------- writing

def call_texts(a: dict, b: dict) -> tuple[str, str]:
    """The two sides' calls as ``name(arguments)``, shortened so that where they differ stays in view: a long
    common start of the arguments is cut to "…" and each is cut after CALL_TEXT_CHARS characters."""
    def raw(side: dict) -> str:
        return " ".join(str(side.get("arguments") or "").split())  # one line: newlines and runs of spaces

    args_a, args_b = raw(a), raw(b)
    common = 0
    while common < min(len(args_a), len(args_b)) and args_a[common] == args_b[common]:
        common += 1
    start = common - 12 if common > 24 and args_a != args_b else 0

    def text(side: dict, args: str) -> str:
        if not side.get("call"):
            return "no call"
        shown = ("…" if start else "") + args[start:start + CALL_TEXT_CHARS]
        return f"{side['call'][:60]}({shown}{'…' if len(args) > start + CALL_TEXT_CHARS else ''})"

    return text(a, args_a), text(b, args_b)


def divergence_text(d: dict, baseline: str, parser: str) -> str:
    """react-find get_weathe() / react-robust get_weather() (both no_action_input, no_such_function): the calls
    first (what differs), then what each parser made of its step."""
    call_a, call_b = call_texts(d[baseline], d[parser])
    calls = f"both {call_a}" if call_a == call_b else f"{baseline} {call_a} / {parser} {call_b}"
    kind_a, kind_b = d[baseline]["kind"], d[parser]["kind"]
    kinds = f"both {kind_a}" if kind_a == kind_b else f"{baseline} {kind_a} / {parser} {kind_b}"
    return f"{calls} ({kinds})"


def flip_line(flip: Flip, baseline: str, parser: str) -> str:
    group, qid = flip.key
    direction = "passes" if flip.variant_passed else "fails"
    text = f"{group}/{qid}: {parser} {direction} where {baseline} {'passes' if flip.baseline_passed else 'fails'}"
    d = flip.divergence
    if d is None:
        return text + "; the steps are the same (the judge differs)"
    return (text + f"; first divergence at turn {d['turn']} (step {d['step']}, differ in: "
            f"{', '.join(d['differ_in'])}): {divergence_text(d, baseline, parser)}")


def short_model(model: str | None) -> str:
    """A model as a row shows it: the last part of a hub id or local folder (the manifest keeps all of it)."""
    return str(model).rstrip("/").rsplit("/", 1)[-1] if model else "model?"


def marks_lines(result: RunComparison) -> list[str]:
    """The marks every comparison output carries: the judge (self-judged said), the evaluation, each run's line
    against the StableToolBench leaderboard, what the runs differ in, and the queries left out of the figures."""
    variants = list(result.variants.values())
    evaluation = variants[0].evaluation
    lines = [judges_line([v.judge for v in variants])
             + (f" (evaluation {evaluation} of each run; --judge-id picks another)" if evaluation else "")]
    comparability = list(dict.fromkeys(v.comparability for v in variants))
    if len(comparability) == 1:
        lines.append(comparability[0])
    else:
        lines += [f"{name}: {v.comparability}" for name, v in result.variants.items()]
    lines.append(axes_text(result.axes))
    lines.append(left_out_line(result))
    return lines


def left_out_line(result: RunComparison) -> str:
    """``compared on the 20 queries every run has; left out: a 40, b 0`` (runs of different query sets)."""
    n = len(result.queries)
    text = f"compared on the {n} quer{'y' if n == 1 else 'ies'} every run has (judged)"
    if any(result.left_out.values()):
        text += "; left out, not in every run: " + ", ".join(
            f"{name} {count}" for name, count in result.left_out.items())
    return text


def text_lines(result: RunComparison, max_flips: int = 10) -> list[str]:
    lines = [result.headline(), *marks_lines(result), ""]
    models = {parser: short_model(variant.model) for parser, variant in result.variants.items()}
    width = max(len("model"), *map(len, models.values()))
    header = axis_header(result.axes)
    names = max(14, len(header), *(len(parser) for parser in result.variants))  # settings names are longer
    lines.append(f"{'model':<{width}}  {header:<{names}} {'pass rate':>9}  passed  (on {len(result.queries)} queries)")
    for parser in result.variants:
        if parser in result.not_applicable:
            continue
        mark = "  (baseline)" if parser == result.baseline else ""
        lines.append(f"{models[parser]:<{width}}  {parser:<{names}} {result.pass_rates[parser]:>8.1f}%  "
                     f"{result.passed[parser]:>6}{mark}")
    if result.not_applicable:
        lines.append(f"read no call in any step (format does not apply): {', '.join(result.not_applicable)}")
    for parser, paired in result.paired.items():
        lines.append("")
        if len(result.paired) > 1:  # with one variant the headline above says it already
            lines.append(paired.headline(result.baseline))
        lines.append(f"{parser} vs {result.baseline}: trajectories differ on {paired.diverged} of {paired.n} queries, "
                     f"the pass flips on {len(paired.flips)}")
        for kind, count in paired.divergence_kinds.most_common(3):
            (group, qid), divergence = paired.divergence_examples[kind]
            lines.append(f"  first divergence {count}x (differ in: {kind[2]}): "
                         f"{divergence_text(divergence, result.baseline, parser)}; e.g. {group}/{qid} turn "
                         f"{divergence['turn']}")
        lines.extend("  " + flip_line(f, result.baseline, parser) for f in paired.flips[:max_flips])
        if len(paired.flips) > max_flips:
            lines.append(f"  … {len(paired.flips) - max_flips} more in flips.jsonl")
    return lines


def write_run_comparison(result: RunComparison, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    title = "Parser variants on runs" if result.axes == ["parser"] else f"Runs compared by {axis_header(result.axes)}"
    summary = [f"# {title}", "", *text_lines(result, max_flips=1000), "",
               f"Pass rate: label points (Solved 1, Unsure 0.5) averaged over the judge repeats, on the queries "
               f"every run has labels for. A query passes when its mean exceeds {PASS_THRESHOLD}. Interval: "
               "paired bootstrap over queries (seeded); p: exact McNemar on the flips.", ""]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([axis_header(result.axes), "model", "queries", "pass_rate", "passed", "difference", "ci_low",
                     "ci_high", "mcnemar_p", "flips_up", "flips_down", "applies", "left_out", "judge", "self_judged",
                     "comparability"])
    for parser in result.variants:
        paired = result.paired.get(parser)
        variant = result.variants[parser]
        writer.writerow([parser, variant.model or "", len(result.queries), f"{result.pass_rates[parser]:.2f}",
                         result.passed[parser],
                         *([f"{paired.difference:.2f}", f"{paired.low:.2f}", f"{paired.high:.2f}",
                            f"{paired.p_value:.6g}", paired.up, paired.down] if paired else [""] * 6),
                         parser not in result.not_applicable, result.left_out.get(parser, 0), variant.judge,
                         "self-judged" in variant.judge, variant.comparability])
    flips = [json.dumps({"parser": parser, "baseline": result.baseline, "group": f.key[0], "query_id": f.key[1],
                         "baseline_passed": f.baseline_passed, "variant_passed": f.variant_passed,
                         "divergence": f.divergence}, ensure_ascii=False)
             for parser, paired in result.paired.items() for f in paired.flips]
    files = {"summary.md": "\n".join(summary), "pass_rates.csv": buffer.getvalue(),
             "flips.jsonl": "".join(line + "\n" for line in flips)}
    written = []
    for name, content in files.items():
        write_text_atomic(out / name, content)
        written.append(out / name)
    return written
