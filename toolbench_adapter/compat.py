"""Compatibility modes: every upstream quirk that changes numbers, named in one place.

``stb`` (the default) reproduces StableToolBench bug for bug, so numbers compare with the leaderboard.
``strict`` corrects each quirk. A run records the mode and every flag, so a number is never unlabelled.
Flags can also be set one by one (``Compat.from_mode("stb", suffix_match_names=False)``).
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
    # evaluation: pass rate divides by answered queries only (a missing answer file vanishes)
    answered_only_denominator: bool = True
    # server: simulated entries are written into the cache (ours are always marked as simulated)
    cache_simulated_responses: bool = True

    @classmethod
    def from_mode(cls, mode: str = "stb", **overrides: bool) -> Compat:
        if mode not in MODES:
            raise ValueError(f"unknown compat mode {mode!r}; choose one of {', '.join(MODES)}")
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
