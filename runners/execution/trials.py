"""A set of trials (``tba run --trials K``, issue 42): every query run K times as independent trials.

Trial i (0 .. K-1) is an ordinary run (runner.py) into ``NAME/trial-i/`` with seed + i, its model requests carrying
that seed (the OpenAI backends send it; the scripted agent with an answer rate draws from it); the layout is
toolbench_adapter/runs/trial_set.py's. So each trial resumes, shards, runs on Ray and is refused on other settings
or queries exactly as a run is, and the set's record (``trials.json``) holds what the trials share: the settings, the
count, the seeds, each session and the totals over every trial.

Before anything runs: a set-up whose trials could not differ (a backend that takes no seed: the scripted agent
without an answer rate, the hf backend's greedy decoding, a replay) is refused, since K trials of a deterministic
agent measure the judge only (the judge's own spread is what ``--evaluate-times`` repeats measure); a run folder of
another kind at NAME, other settings, or fewer trials than the set holds are refused; and what the set costs is
said (K x the queries, model calls at most). The trials run one after another, all of one backend (a model loaded
once, an endpoint's pool and rate limit shared), each at the run's concurrency; the set stops after a trial that
stopped early on infrastructure failures (a dead endpoint is not asked K times).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.runs.cost import runs_cost
from toolbench_adapter.runs.folder import MANIFEST, latency_percentiles
from toolbench_adapter.runs.trial_set import (
    TRIALS,
    TRIALS_FORMAT,
    is_trial_set,
    read_trials,
    trial_dir,
    trial_name,
)

from ..config import RunConfig
from ..config.call_bound import calls_per_query
from ..models.base import takes_seed
from .executors import executor_class, make_executor
from .manifest import iso_time
from .preflight import make_backend
from .runner import Runner

SEED_LIMIT = 2**32 - 1  # RunConfig's Seed: what every RNG takes
DETERMINISTIC = "{k} trials of a deterministic agent measure the judge only"
# totals that add up over trials (the rest, medians and the like, are each trial's own)
SUMMED = ("queries", "finished", "infra_failures", "valid", "answered", "win", "context_length", "model_turns",
          "valid_turns", "reasks", "model_calls", "total_tokens", "prompt_tokens", "completion_tokens")


def trial_config(cfg: RunConfig, index: int) -> RunConfig:
    """Trial ``index``'s run: NAME/trial-INDEX with seed + INDEX, one trial (its requests send its seed)."""
    return replace(cfg, out_root=str(cfg.run_dir), name=trial_name(index), seed=cfg.seed + index, trials=1,
                   trial=index)


def why_deterministic(backend: Any, cfg: RunConfig) -> str | None:
    """Why every trial of this set-up would answer alike, or None when they can differ."""
    name = getattr(backend, "name", cfg.backend)
    # an outside agent (tba run --agent) is sent no seed, but its own model may answer each trial anew
    if takes_seed(backend) or name == RunConfig.AGENT_BACKEND:
        return None
    if name == "scripted":
        return ("the scripted agent answers every query the same each time (--backend-option answer_rate=P makes it "
                "answer each (query, trial) with probability P)")
    if name == "hf":
        return "the hf backend decodes greedily and takes no seed: every trial writes the same answers"
    if name == "replay":
        return "the replay backend answers what was recorded: every trial writes the same answers"
    return f"the {name} backend takes no seed" + (" and the temperature is 0" if not cfg.temperature else "")


def check_trials(cfg: RunConfig, backend: Any) -> None:
    """The set can be run: its trials can differ, and the last trial's seed is one an RNG takes (InputError)."""
    if cfg.trials > 1:
        why = why_deterministic(backend, cfg)
        if why is not None:
            raise InputError(f"{DETERMINISTIC.format(k=cfg.trials)}: {why}", field="--trials",
                             fix="run one trial (--trials 1; tba evaluate --evaluate-times N measures the judge's "
                             "spread), or an agent whose trials can differ: an openai-chat / openai-completions "
                             "endpoint (its seed is sent) at a temperature above 0")
    if cfg.seed + cfg.trials - 1 > SEED_LIMIT:
        raise InputError(f"trial {cfg.trials - 1} would run with seed {cfg.seed + cfg.trials - 1}, above {SEED_LIMIT}",
                         field="--seed", fix=f"pass a --seed of at most {SEED_LIMIT - cfg.trials + 1}")


def check_set_folder(cfg: RunConfig) -> dict | None:
    """The set already at NAME (its record; None: a new set), refused (exit 2) when NAME holds a run without
    trials, a set of other settings, or more trials than asked. Reads files only."""
    folder = cfg.run_dir
    if (folder / MANIFEST).is_file() and not is_trial_set(folder):
        raise InputError(f"{folder} holds a run without trials: a set of trials keeps each trial in a folder of its "
                         "own (NAME/trial-i)", path=folder / MANIFEST, field="--trials",
                         fix="choose another --name for the set of trials (or delete that folder to start over)")
    if not is_trial_set(folder):
        return None
    record = read_trials(folder)
    old = RunConfig.defining_of(record["config"])
    new = cfg.defining()
    changed = {k: (old.get(k), v) for k, v in new.items() if k != "model" and old.get(k) != v}
    model = record.get("model")
    if cfg.model and model and cfg.model != model:
        changed["model"] = (model, cfg.model)
    if changed:
        details = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
        raise InputError(f"{folder} holds a set of trials of other settings ({details})", path=folder / TRIALS,
                         fix="choose another --name, or delete that folder to start over")
    if record["trials"] > cfg.trials:
        raise InputError(f"{folder} holds {record['trials']} trials; --trials {cfg.trials} would leave "
                         f"{record['trials'] - cfg.trials} of them out of its figures", path=folder / TRIALS,
                         field="--trials", fix=f"pass --trials {record['trials']} (or more: the new trials run)")
    return record


class TrialSet:
    """Runs a set's trials one after another; ``run()`` returns the set's record (trials.json) with each trial's
    manifest under ``"manifests"``. Quacks like a Runner where a sweep drives it: ``stopping``, ``on_query_end``,
    ``executor``, ``on_started``; a sweep's shared tool-server listener (``tool_host``) serves each trial."""

    def __init__(self, cfg: RunConfig, backend=None, progress: bool = True, command: str | None = None,
                 executor=None, client_options: dict | None = None, tool_host=None):
        cfg.validate()  # the method and the trials' range among the rest
        if executor is None:
            executor_class(cfg.executor)
        self.cfg = cfg
        self.set_dir = cfg.run_dir
        self.command = command
        self.backend = backend if backend is not None else make_backend(cfg)
        check_trials(cfg, self.backend)
        # one executor for every trial (ray: the workers started once); threads: each trial's own is as good
        self.executor = executor if executor is not None else make_executor(cfg)
        self.runners = [Runner(trial_config(cfg, i), backend=self.backend, progress=progress, command=command,
                               executor=self.executor, client_options=client_options, tool_host=tool_host)
                        for i in range(cfg.trials)]
        self.setup = self.runners[0].setup
        self._stopping = False
        self.on_query_end: Callable[[Any], None] | None = None
        self.on_started: Callable[[], None] | None = None  # told when the first trial's queries start

    @property
    def stopping(self) -> bool:
        return self._stopping

    @stopping.setter
    def stopping(self, value: bool) -> None:
        self._stopping = value
        for runner in self.runners:
            runner.stopping = value

    def cost_line(self) -> str:
        queries = len(self.runners[0].identity.selected) if self.runners[0].identity else None
        per_query = calls_per_query(self.cfg)
        if queries is None:
            return f"{self.cfg.trials} trials: every query {self.cfg.trials} times"
        runs = queries * self.cfg.trials
        return (f"{self.cfg.trials} trials x {queries} queries = {runs} query runs, at most {runs * per_query} model "
                f"calls ({per_query} per query): {self.cfg.trials}x what one run asks of a paid endpoint")

    def check(self) -> dict | None:
        """Every check that reads files only, before any model is asked: the set folder, each trial's folder
        (settings and queries)."""
        record = check_set_folder(self.cfg)
        for runner in self.runners:
            runner.check_run(note=False)
        return record

    def run(self) -> dict:
        from .executors import connect_ray
        from .runlock import RunFolderLock

        with RunFolderLock(self.set_dir, self.command, hold_folder=True):
            # ray: one cluster for every trial (joined or started once), not one started and shut down per trial
            ray, started = connect_ray(self.cfg.ray_address) if self.cfg.executor == "ray" else (None, False)
            try:
                return self._run()
            finally:
                if started:
                    self.executor.close()
                    ray.shutdown()

    def _run(self) -> dict:
        record = self.check()
        print(f"tba run: {self.cost_line()}", file=sys.stderr, flush=True)
        # an outside agent sends its own temperature (none of ours); the scripted agent draws by the seed alone
        if self.cfg.temperature == 0 and self.cfg.backend not in ("scripted", RunConfig.AGENT_BACKEND):
            print("tba run: temperature 0: an endpoint that decodes greedily answers the trials alike whatever the "
                  "seed (they then measure the judge and the endpoint's own nondeterminism); --temperature sets it",
                  file=sys.stderr, flush=True)
        record = self._record(record, started=time.time())
        manifests: list[dict] = []
        try:
            for index, runner in enumerate(self.runners):
                if self.stopping:
                    raise KeyboardInterrupt
                runner.on_query_end = self.on_query_end
                runner.on_started = self.on_started if index == 0 else None
                manifest = runner.run()
                manifests.append(manifest)
                halted = (manifest.get("sessions") or [{}])[-1].get("halted")
                if halted and index + 1 < len(self.runners):
                    record["sessions"][-1]["halted"] = (f"{trial_name(index)}: {halted}; trials "
                                                        f"{index + 1}..{len(self.runners) - 1} not started")
                    break
        except BaseException:
            record["sessions"][-1]["interrupted"] = iso_time(time.time())
            self._save(record, manifests)
            raise
        if "halted" not in record["sessions"][-1]:
            record["sessions"][-1]["finished"] = iso_time(time.time())
        self._save(record, manifests)
        record["manifests"] = manifests
        return record

    def _record(self, previous: dict | None, started: float) -> dict:
        record = dict(previous or {})
        record.update({"format": TRIALS_FORMAT, "version": 1, "name": self.cfg.name, "config": self.cfg.as_dict(),
                       "trials": self.cfg.trials, "seeds": [self.cfg.seed + i for i in range(self.cfg.trials)],
                       "folders": [trial_name(i) for i in range(self.cfg.trials)],
                       "model": self.runners[0].effective_model()})
        record.setdefault("sessions", []).append({"started": iso_time(started), "command": self.command})
        write_json_atomic(self.set_dir / TRIALS, record, fsync=True)
        return record

    def _save(self, record: dict, manifests: list[dict]) -> None:
        record["model"] = self.runners[0].effective_model()
        record["totals"] = set_totals(self.set_dir, record["trials"])
        record["sessions"][-1]["seconds"] = sum((m.get("sessions") or [{}])[-1].get("seconds", 0) for m in manifests)
        write_json_atomic(self.set_dir / TRIALS, {k: v for k, v in record.items() if k != "manifests"}, fsync=True)


def set_totals(set_dir: Path, trials: int) -> dict:
    """The totals over every trial (sums; each trial's own beside them, under "trials")."""
    from toolbench_adapter.files.fileio import read_json

    per_trial = []
    for index in range(trials):
        path = trial_dir(set_dir, index) / MANIFEST
        try:
            per_trial.append((read_json(path, "trial manifest") or {}).get("totals") or {})
        except InputError:
            per_trial.append({})
    totals: dict[str, Any] = {key: sum(t.get(key) or 0 for t in per_trial) for key in SUMMED
                              if any(key in t for t in per_trial)}
    kinds: dict[str, int] = {}
    for t in per_trial:
        for kind, n in (t.get("infra_failures_by_kind") or {}).items():
            kinds[kind] = kinds.get(kind, 0) + n
    totals["infra_failures_by_kind"] = dict(sorted(kinds.items()))
    cost = runs_cost(trial_dir(set_dir, i) for i in range(trials))  # latencies pooled over every trial
    totals.update(latency_percentiles(cost.latencies))
    totals["trials"] = per_trial
    return totals
