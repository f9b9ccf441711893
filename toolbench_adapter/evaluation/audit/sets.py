"""Released label sets an audit knows by name (``tba judge-audit --set NAME``), each with source and licence.

A set holds pass-rate label files (``pass_rate_results/{model}/``) and the converted answers they label
(``model_predictions_converted/{model}/{group}.json``), so the judge sees each answer exactly. Only sets whose
licence lets the project ship them are here; the larger released sets are listed in docs/judging.md "Choosing a judge"
with where to get them (then ``--labels DIR --converted DIR``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.queryset.queries import PROJECT_DATA


@dataclass(frozen=True)
class AuditSet:
    name: str
    labels: Path
    converted: Path
    source: str
    licence: str
    about: str

    def check(self) -> None:
        for path in (self.labels, self.converted):
            if not path.is_dir():
                raise InputError(f"audit set {self.name!r} is missing its files", path=path,
                                 fix="restore data/ from the project's repository (git checkout -- data)")


_EXAMPLE = PROJECT_DATA / "stabletoolbench_example" / "data_example"
AUDIT_SETS = {
    "stb-example": AuditSet(
        "stb-example", _EXAMPLE / "pass_rate_results", _EXAMPLE / "model_predictions_converted",
        "THUNLP-MT/StableToolBench@aa4ed9f4737ad98bd706663f01d63623c3427812: data_example/", "Apache-2.0",
        "StableToolBench's example: 2 models (virtual_chatgpt_cot, _dfs) x 3 G1_instruction answers x 3 "
        "released judgements (gpt-4-turbo-preview per its README); 18 pairs, 3 of them Unsolved by rule"),
}


def audit_set(name: str) -> AuditSet:
    if name not in AUDIT_SETS:
        close = difflib.get_close_matches(name, AUDIT_SETS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"no audit set {name!r}", field="--set",
                         fix=f"{hint}known sets: {', '.join(AUDIT_SETS)}; for a larger released set (docs/judging.md, "
                         "\"Choosing a judge\", says where to get it) pass --labels DIR --converted DIR")
    chosen = AUDIT_SETS[name]
    chosen.check()
    return chosen
