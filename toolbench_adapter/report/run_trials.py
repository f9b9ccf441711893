"""A set of trials on its report page (issue 42): the page shows trial 0's trajectories (each trial is a run
folder: tba report SET/trial-i shows another), and over every trial the figures a set has: on the first screen SoPR
over trials with its 95% CI, pass@K and pass^K, the flip rate and the agent vs judge split; per query "Solved in c
of K trials"; the set's leaderboards (tables.py with trial_tables.py's rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..evaluation.evaluations import choose_evaluation
from ..evaluation.scoring.scores import UPSTREAM
from ..evaluation.scoring.trial_figures import ModeFigures, figure_rows, read_figures
from ..evaluation.scoring.trials import OVER_TRIALS
from ..runs.trial_set import read_trials, trial_dirs
from . import tables
from .trial_tables import RowTrials


@dataclass
class SetView:
    """What a set's page adds to its trial 0's: the set's evaluation and figures."""

    path: Path
    name: str
    trials: int
    evaluation: object | None  # the set's EvaluationRecord (evaluations.py), None: not evaluated
    figures: dict[str, ModeFigures] = field(default_factory=dict)
    method: str | None = None

    def solved_text(self, group: str, query_id: str) -> str | None:
        """``Solved in 2 of 3 trials`` (upstream: the trials with an answer for it), None: not judged."""
        figures = self.figures.get(UPSTREAM)
        counts = (figures.solved.get(group) or {}).get(str(query_id)) if figures else None
        return None if counts is None else f"Solved in {counts[0]} of {counts[1]} trial{'s' if counts[1] != 1 else ''}"

    def headline(self) -> dict:
        figures = self.figures.get(UPSTREAM)
        base = {"count": self.trials, "definition": OVER_TRIALS}
        if figures is None or figures.average is None:
            return {**base, "text": None}
        average = figures.average
        k = max(average.pass_at) if average.pass_at else self.trials
        return {**base, "text": average.text(), "k": k, "passAt": average.pass_at.get(k),
                "passHat": average.pass_hat.get(k), "flip": average.flip_rate, "variance": average.variance.text(),
                "queries": average.queries}

    def boards(self, comparability: str, card: str) -> list[tables.Leaderboard]:
        if not self.figures or self.evaluation is None:
            return []
        rows = figure_rows(self.figures, model=self.name, method=self.method, judge=self.evaluation.judge)
        trials = {self.name: {mode: RowTrials(f.groups, f.average) for mode, f in self.figures.items()}}
        return tables.build_leaderboards(rows, comparability={self.name: comparability},
                                         judge_cards={self.name: card} if card else None, trials=trials)


def load_set(set_dir: Path, judge_id: str | None) -> tuple[SetView, Path, str | None]:
    """(the set's view, its trial 0's folder, the evaluation id to show of that trial)."""
    record = read_trials(set_dir)
    chosen, _ = choose_evaluation(set_dir, judge_id, fallback=True)
    view = SetView(path=set_dir, name=str((chosen.data.get("row") if chosen else None) or record.get("name")
                                          or set_dir.name), trials=record["trials"], evaluation=chosen,
                   method=(record.get("config") or {}).get("method"))
    trial_id = None
    if chosen is not None:
        view.figures = read_figures(chosen.eval_dir)
        evaluations = (chosen.data.get("trials") or {}).get("evaluations") or []
        trial_id = evaluations[0] if evaluations else None
    return view, trial_dirs(set_dir, record)[0], trial_id
