"""Which function a call name selects: exact lookup, or upstream's first ``endswith()`` match."""

from __future__ import annotations

from dataclasses import dataclass

from ..naming import suffix_match


@dataclass(frozen=True)
class NameMatch:
    chosen: str | None  # the function the step uses (None: status 1)
    exact: str | None  # exact lookup's pick
    suffix: str | None  # upstream's pick (first function whose name ends with the call name)

    @property
    def differs(self) -> bool:
        return self.exact != self.suffix


def match_name(name: str, function_names: list[str], use_suffix: bool) -> NameMatch:
    """``function_names`` are the API functions in toolset order (Finish excluded: it is dispatched first,
    and a suffix hit on Finish would crash upstream with a KeyError, so it counts as no match)."""
    exact = name if name in function_names else None
    suffix = suffix_match(name, function_names)
    return NameMatch(chosen=suffix if use_suffix else exact, exact=exact, suffix=suffix)
