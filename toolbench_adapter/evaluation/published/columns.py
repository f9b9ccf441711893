"""Which group (or the Average) a published column header names, and which metric a heading, caption or header
names.

Headers are read word by word, so every spelling seen in the field places: ``G1_instruction``, ``G1-Inst``,
``I1-Inst.``, ``I1 Ins.``, ``I1-I``, ``I1-Tool.``, ``I1-Cate``, ``G3_instruction_WinRate``, ``Inst.`` under a
spanning ``I1`` header (the header rows of a column are read together), ``Avg`` / ``Average`` / ``Mean``. A
header with words the reader does not know (``Avg. Rank``, ``# Tokens``) is not placed; the caller names it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from toolbench_adapter.evaluation.published.cells import clean
from toolbench_adapter.evaluation.scoring.aggregates import AVERAGE
from toolbench_adapter.queryset.queries import GROUP_LABELS, GROUPS

SOPR, SOWR, FAC = "SoPR", "SoWR", "FAC"
METRICS = (SOPR, SOWR, FAC)
GROUP, STD, NAME = "group", "std", "name"  # roles of a column (AVERAGE is a GROUP-role key)

_KINDS = {"instruction": ("i", "in", "ins", "inst", "instr", "instruct", "instruction", "instructions"),
          "category": ("c", "cat", "cate", "categ", "category", "categories"),
          "tool": ("t", "tl", "tool", "tools")}
KIND_WORDS = {word: kind for kind, words in _KINDS.items() for word in words}
LEVEL_WORDS = {"i", "g", "l", "group", "level", "set"}
AVERAGE_WORDS = {"avg", "average", "mean", "ave"}
# "Overall" is pooled over every query of the six groups, not the mean of the six: its own key, never checked as
# the mean of its row's cells, and compared with nothing (no reproduced pooled figure)
POOLED = "Overall"
POOLED_WORDS = {"overall", "pooled"}
LEVEL_MEANS = {"1": "I1", "2": "I2", "3": "I3"}  # a G1 / G2 / G3 column: the mean of that level's groups
STD_WORDS = {"stderror", "stderr", "std", "sd", "se", "sem", "error", "stdev"}
FILLER_WORDS = {"rate", "rates", "so", "score", "scores", "the", "of", "result", "results", "test", "on", "set"}
# metric words in a column header or a section row, where a bare "Pass" / "Win" means the metric
HEADER_METRICS = {"pass": SOPR, "passrate": SOPR, "sopr": SOPR, "pr": SOPR, "win": SOWR, "winrate": SOWR,
                   "sowr": SOWR, "wr": SOWR, "preference": SOWR, "fac": FAC}
# metric phrases in running text (headings, captions): only the full names. A name ends where a Latin letter or
# digit (or _) does not follow ((?<![a-z0-9_]) rather than \b): Chinese or Japanese text runs its words together, so
# "在SoPR上的" names SoPR though no word boundary splits it (\b sees CJK characters as word characters); the
# metrics' Chinese names count too (通过率 pass rate, 胜率 win rate)
_ALONE, _ENDS = r"(?<![a-z0-9_])", r"(?![a-z0-9_])"
_TEXT_METRICS = (
    (SOPR, re.compile(rf"{_ALONE}so\s*pr{_ENDS}|{_ALONE}pass[\s_-]*rates?{_ENDS}|{_ALONE}solvable pass|通过率",
                      re.I)),
    (SOWR, re.compile(rf"{_ALONE}so\s*wr{_ENDS}|{_ALONE}win[\s_-]*rates?{_ENDS}|{_ALONE}preference{_ENDS}|胜率",
                      re.I)),
    (FAC, re.compile(rf"{_ALONE}fac{_ENDS}|final[\s-]answer[\s-]completeness", re.I)))


def words(text: str) -> list[str]:
    """Lower-case words and numbers, split at letter / digit boundaries: "I1-Inst." -> ["i", "1", "inst"]."""
    return re.findall(r"[a-z]+|\d+", clean(text).lower())


def metrics_in_text(text: str) -> list[str]:
    """Every metric a heading, caption or sentence names, in METRICS order (full-width letters read as ASCII:
    NFKC, so "ＳｏＰＲ" in CJK text is SoPR)."""
    text = unicodedata.normalize("NFKC", clean(text))
    return [metric for metric, pattern in _TEXT_METRICS if pattern.search(text)]


def metric_in_text(text: str) -> str | None:
    """The one metric a heading or caption names (None when it names none, or two)."""
    found = metrics_in_text(text)
    return found[0] if len(found) == 1 else None


def metric_word(text: str) -> str | None:
    """A short label that is only a metric: "Pass", "Win Rate", "SoWR" (a leading cell or a section row)."""
    tokens = [t for t in words(text) if t not in FILLER_WORDS]
    found = {HEADER_METRICS[t] for t in tokens if t in HEADER_METRICS}
    if len(found) == 1 and all(t in HEADER_METRICS for t in tokens) and tokens:
        return found.pop()
    return metric_in_text(text) if len(tokens) <= 4 else None


@dataclass(frozen=True)
class Placement:
    key: str | None  # a group, AVERAGE, or None
    role: str | None  # GROUP (key given), STD (an error column: not a cell), NAME-candidate (None)
    metric: str | None = None  # when the header names one ("Pass Rate" over the column, "G1_tool_WinRate")
    reason: str = ""  # why a header is not placed


def place(header: str) -> Placement:
    """A column from its header text (the header rows of the column joined, top to bottom)."""
    tokens = words(header)
    if not tokens:
        return Placement(None, None, reason="no header")
    metrics = {HEADER_METRICS[t] for t in tokens if t in HEADER_METRICS}
    metric = metrics.pop() if len(metrics) == 1 else None
    if STD_WORDS & set(tokens):
        return Placement(None, STD, metric, "an error / std column, not a cell")
    level, kind, average, pooled, unknown = None, None, False, False, []
    rest = list(tokens)
    for i, token in enumerate(tokens[:-1]):  # "i 1", "g 3", "group 2"
        if token in LEVEL_WORDS and tokens[i + 1] in ("1", "2", "3") and level is None:
            level = tokens[i + 1]
            rest[i] = rest[i + 1] = ""
    for token in rest:
        if not token:
            continue
        if token in KIND_WORDS and kind is None:
            kind = KIND_WORDS[token]
        elif token in AVERAGE_WORDS:
            average = True
        elif token in POOLED_WORDS:
            pooled = True
        elif token not in HEADER_METRICS and token not in FILLER_WORDS:
            unknown.append(token)
    if unknown:
        return Placement(None, None, metric, f"unknown words: {' '.join(unknown)}")
    if level and kind:
        group = f"G{level}_{kind}"
        if group not in GROUPS:
            return Placement(None, None, metric, f"no group {group} in the benchmark")
        return Placement(group, GROUP, metric)
    if pooled and not (level or kind or average):
        return Placement(POOLED, GROUP, metric)
    if pooled:
        return Placement(None, None, metric, "pooled over part of the groups: no reproduced figure to compare")
    if average or (metric and not level and not kind):  # "Avg", ToolBench's "WinRate"
        return Placement(AVERAGE, GROUP, metric)
    if kind:
        return Placement(None, None, metric, f"which of I1 / I2 / I3 is '{kind}'?")
    if level:  # "G2" alone: the mean of its groups, as the leaderboard's I2 column
        return Placement(LEVEL_MEANS[level], GROUP, metric)
    return Placement(None, None, metric, "not a group or an Average")


def column_key(header: str) -> str | None:
    """The group (or AVERAGE) a header names; None for name columns, std-error columns and unknown headers."""
    placement = place(header)
    return placement.key if placement.role == GROUP else None


def label(key: str) -> str:
    return GROUP_LABELS.get(key, key)
