"""Compatibility modes: every upstream quirk that changes numbers, named in one place.

``stb`` (the default) reproduces StableToolBench bug for bug, so numbers compare with the leaderboard.
``strict`` corrects each quirk. A run records the mode and every flag, so a number is never unlabelled.
Flags can also be set one by one (``Compat.from_mode("stb", suffix_match_names=False)``; a run's
``compat_flags`` setting does this).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass(frozen=True)
class Compat:
    mode: str = "stb"
    # toolset: optional parameters are ignored for APIs without required ones (402 of 4070 test APIs)
    drop_optional_without_required: bool = True
    # env: a call name is matched with endswith() against the function list (first hit wins)
    suffix_match_names: bool = True
    # env: a Finish whose arguments are not JSON is read by the substring heuristic
    finish_fallback_heuristic: bool = True
    # evaluation: pass rate divides by the queries with an answer file only (a missing answer file vanishes)
    answered_only_denominator: bool = True
    # server: simulated entries are written into the cache (ours are always marked as simulated)
    cache_simulated_responses: bool = True
    # DFSDT: a pruned or depth-limited leaf that is not a give-up backtracks two levels (like a give-up) instead
    # of one. Not StableToolBench (False in every mode): an older ToolBench search that some of ToolBench's own
    # example answers were made with; `tba replay` sets it for the recordings that need it (runners/replay/search_rule.py)
    dfs_dead_end_backtracks_two: bool = False
    # DFSDT answer: a search that found no final answer records none (valid_data false, final_answer "") instead
    # of a random give-up node (finish_type give_up). Not StableToolBench (False in every mode): the same older
    # ToolBench; `tba replay` sets it for the recordings that need it
    dfs_no_give_up_answer: bool = False

    @classmethod
    def from_mode(cls, mode: str = "stb", **overrides: bool) -> Compat:
        if mode not in MODES:
            raise ValueError(f"unknown compat mode {mode!r}; choose one of {', '.join(MODES)}")
        unknown = sorted(set(overrides) - set(cls.flag_names()))
        if unknown:
            raise ValueError(f"unknown compat flag(s) {', '.join(unknown)}; known: {', '.join(cls.flag_names())}")
        return replace(MODES[mode], **overrides)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def flag_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name != "mode"]


STB = Compat()
STRICT = Compat(
    mode="strict",
    drop_optional_without_required=False,
    suffix_match_names=False,
    finish_fallback_heuristic=False,
    answered_only_denominator=False,
    cache_simulated_responses=False,
)
MODES = {"stb": STB, "strict": STRICT}
