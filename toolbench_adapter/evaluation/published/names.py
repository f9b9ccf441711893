"""Pair published row names with reproduced model names, and suggest pairs for the rest.

A row pairs with a model when ``--match`` names it, when the names are equal up to case, spaces and punctuation
(``GPT-4 (DFS)`` = ``gpt4_dfs``), or when they hold the same words in another order (``DFS / GPT-4`` =
``gpt4_dfs``) and no other model does. The rest are printed side by side with their closest candidates, and
each likely pair as a ready ``--match`` line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

BY_MATCH, BY_NAME, BY_WORDS, BY_PRESET = "--match", "same name", "same name words", "preset"
LIKELY = 0.5  # a suggested pair scores at least this (0..1)


def normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def name_words(name: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z]+|\d+", name.lower()))


def _same_word(a: str, b: str) -> bool:
    """Equal, or one abbreviates the other (dfs / dfsdt, inst / instruction)."""
    return a == b or (min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a)))


def similarity(a: str, b: str) -> float:
    """0..1: the characters in common, the words in common, and how much of the shorter name the other holds."""
    wa, wb = name_words(a), name_words(b)
    if not wa or not wb:
        return 0.0
    small, large = sorted((wa, wb), key=len)
    common = sum(1 for word in small if any(_same_word(word, other) for other in large))
    ratio = SequenceMatcher(None, normalise(a), normalise(b)).ratio()
    return (ratio + common / (len(wa) + len(wb) - common) + common / len(small)) / 3


@dataclass(frozen=True)
class Pair:
    model: str
    how: str  # BY_MATCH, BY_NAME or BY_WORDS


def pair_rows(rows: list[str], models: list[str], matches: dict[str, str],
              preset: dict[str, str] | None = None) -> dict[str, Pair]:
    """Published row name -> the reproduced model it pairs with (rows that pair with none are left out).
    ``matches`` (``--match``) and ``preset`` (a pairing the project knows) are compared up to case, spaces and
    punctuation; ``matches`` wins."""
    by_norm: dict[str, str] = {}
    for model in models:
        by_norm.setdefault(normalise(model), model)
    wanted = {normalise(k): (v, BY_PRESET) for k, v in (preset or {}).items()}
    wanted.update({normalise(k): (v, BY_MATCH) for k, v in matches.items()})
    # each name's words once, indexed by them: a row looks up its equals instead of walking every other row
    words = {name: name_words(name) for name in (*rows, *models)}
    models_by_words: dict[frozenset[str], list[str]] = {}
    for model in models:
        models_by_words.setdefault(words[model], []).append(model)
    rows_by_words: dict[frozenset[str], set[str]] = {}
    for row in rows:
        rows_by_words.setdefault(words[row], set()).add(row)
    out: dict[str, Pair] = {}
    for row in rows:
        chosen = wanted.get(normalise(row))
        if chosen is not None:
            model = by_norm.get(normalise(chosen[0]))
            if model is not None:
                out[row] = Pair(model, chosen[1])
            continue
        if normalise(row) in by_norm:
            out[row] = Pair(by_norm[normalise(row)], BY_NAME)
            continue
        same_words = models_by_words.get(words[row], [])
        if len(same_words) == 1 and rows_by_words[words[row]] == {row}:  # no other row holds the same words
            out[row] = Pair(same_words[0], BY_WORDS)
    return out


def closest(name: str, candidates: list[str], count: int = 3) -> list[tuple[str, float]]:
    scored = sorted(((c, similarity(name, c)) for c in candidates), key=lambda x: -x[1])
    return [(c, s) for c, s in scored[:count] if s > 0]


def likely_pairs(rows: list[str], models: list[str]) -> list[tuple[str, str, float]]:
    """One-to-one pairs, best first, each scoring at least LIKELY."""
    scored = sorted(((similarity(r, m), r, m) for r in rows for m in models), key=lambda x: -x[0])
    used_rows: set[str] = set()
    used_models: set[str] = set()
    out = []
    for score, row, model in scored:
        if score < LIKELY or row in used_rows or model in used_models:
            continue
        used_rows.add(row)
        used_models.add(model)
        out.append((row, model, score))
    return out


def match_line(row: str, model: str) -> str:
    text = f"{row}={model}".replace("'", "'\\''")
    return f"--match '{text}'"


def unmatched_text(rows: list[str], models: list[str], indent: str = "  ", example: bool = False) -> list[str]:
    """The rows without labels and the models without a row, side by side with their closest candidates, and a
    ready --match line for each likely pair (``example``: when none is likely, the closest one as an example)."""
    if not rows:
        return []
    lines = [f"{indent}not paired: {len(rows)} published row{'s' if len(rows) != 1 else ''}"
             + (f", {len(models)} reproduced model{'s' if len(models) != 1 else ''} of this metric" if models else
                " (no reproduced model of this metric is left to pair them with)")]
    width = min(max(len(r) for r in rows + models + ["published row"]) + 2, 48)

    def candidates(name: str, pool: list[str]) -> str:
        found = closest(name, pool)
        return ", ".join(f"{c} ({s:.2f})" for c, s in found) or "none close"

    if models:
        lines.append(f"{indent}  {'published row':<{width}} closest reproduced models")
        lines += [f"{indent}  {row:<{width}} {candidates(row, models)}" for row in rows]
        lines.append(f"{indent}  {'reproduced model':<{width}} closest published rows")
        lines += [f"{indent}  {model:<{width}} {candidates(model, rows)}" for model in models]
        pairs = likely_pairs(rows, models)
        if pairs:
            lines.append(f"{indent}  likely pairs (check, then add to the command):")
            lines += [f"{indent}    {match_line(row, model)}" for row, model, _ in pairs]
        elif example:
            row, model, _ = max(((r, m, similarity(r, m)) for r in rows for m in models), key=lambda x: x[2])
            lines.append(f"{indent}  no likely pair by name; the form, e.g.: {match_line(row, model)}")
    else:
        lines[-1] += ": " + ", ".join(rows)
    return lines
