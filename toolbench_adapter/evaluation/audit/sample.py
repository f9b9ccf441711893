"""A sample of an audit set, stratified by group and released label (``tba judge-audit --sample N --seed S``).

A stratum is (group, the answer's released label); an answer's label is the one most of its repeats hold (ties:
Solved, then Unsolved, then Unsure, then no verdict). Each stratum gets N times its share, rounded by largest
remainder (ties to the larger stratum, then by name), so the sample keeps the set's mix of groups and labels
(a set that is mostly Solved stays mostly Solved) and its size is exactly N.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labels import Label

_ORDER = (Label.SOLVED, Label.UNSOLVED, Label.UNSURE, Label.ERROR)

Answer = tuple[int, str]  # (index of its label file, query id)


def released_label(repeats: Mapping[int, Label]) -> Label:
    counts = Counter(repeats.values())
    return max(_ORDER, key=lambda label: (counts.get(label, 0), -_ORDER.index(label)))


def allocate(sizes: Mapping[tuple[str, str], int], total: int) -> dict[tuple[str, str], int]:
    """``total`` spread over the strata in proportion to their sizes (largest remainder)."""
    whole = sum(sizes.values())
    shares = {key: total * size / whole for key, size in sizes.items()}
    taken = {key: int(share) for key, share in shares.items()}
    order = sorted(sizes, key=lambda key: (-(shares[key] - taken[key]), -sizes[key], key))
    for key in order[: total - sum(taken.values())]:
        taken[key] += 1
    return taken


def stratified_sample(groups: Sequence[str], released: Sequence[Mapping[str, Mapping[int, Label]]],
                      size: int, seed: int) -> set[Answer]:
    """``groups[i]`` and ``released[i]``: label file i's group and its labels ``{qid: {repeat: Label}}``."""
    strata: dict[tuple[str, str], list[Answer]] = {}
    for index, (group, labels) in enumerate(zip(groups, released, strict=True)):
        for qid, repeats in labels.items():
            strata.setdefault((group, released_label(repeats).value), []).append((index, qid))
    whole = sum(len(answers) for answers in strata.values())
    if size > whole:
        raise InputError(f"--sample {size} is more than the set's {whole} answers", field="--sample",
                         fix=f"give --sample {whole} or less, or leave it out to audit every answer")
    rng = random.Random(seed)
    chosen: set[Answer] = set()
    for key, count in sorted(allocate({k: len(v) for k, v in strata.items()}, size).items()):
        chosen.update(rng.sample(strata[key], count))
    return chosen
