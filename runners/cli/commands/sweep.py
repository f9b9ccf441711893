"""tba sweep SPEC.yaml: many runs from one spec (base settings x axes), run together, each judged, one matrix."""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

HELP = """\
One experiment file, many runs: the spec's base settings (any tba run setting) crossed with its axes (each a
run setting and its values; a value may be a mapping of several settings, e.g. a model with its backend,
endpoint and key) give the cells. Each cell is an ordinary run folder, OUT/NAME/CELL (CELL: its axis values
joined by "__"), run and then judged by every judge of the spec, so tba table, report, compare-runs and
reproduce read it as any run. OUT/NAME/matrix.csv (.md, .tex): one row per cell and judge with SoPR, the
valid-call rate, model calls, tokens, seconds, latency and cost, and against the baseline cell the paired difference
over the shared queries with its 95% CI and its verdict. tba report --index OUT/NAME is the sweep's front page.

  name: demo
  base: {backend: scripted, groups: [G1_instruction], limit: 3}
  axes:
    method: ["CoT@1", "DFS_woFilter_w2"]
    parser: [react-find, react-robust]
  judges:
    - {backend: openai, url: "http://127.0.0.1:8000/v1", model: judge-x, api_key: x, evaluate_times: 1}
  baseline: {method: "CoT@1", parser: react-find}
  endpoints: {"http://127.0.0.1:8001/v1": {max_in_flight: 4, rate_per_s: 20}}   # optional

A judge's keys: backend, model, url (one or a list), api_key, self, mode, prefill, constrain, max_tokens,
timeout, options, evaluator, evaluators_dir, evaluate_times, concurrency, label (the matrix's name for it).

Every setting of every cell and judge is checked before anything runs (exit 2 naming the spec file, the key and
the fix), and so is every openai judge (one GET /models). The cells run at the same time: each model and judge
endpoint has one cap on requests in flight for the whole sweep (endpoints: max_in_flight, default 8; and its
rate_per_s), so a cell that ends frees its share for the others. Cells that differ only in the parser ask the
model once for a request they share (the parser fan-out's memo; temperature 0). --executor ray runs each
cell's queries on a Ray cluster (then each endpoint's cap holds per cell: Ray workers are other processes).

Run flags given here (--backend, --model, --base-url, --groups, --limit, --config, ...) replace the spec's
base settings; judge flags (--judge-url, --judge-model, --judge-backend, ...) replace its judges with one.
Either makes another sweep (its spec differs): name it with --name.

A cell whose endpoint is dead, whose run holds infrastructure failures or whose judge gave no verdict is marked
failed in OUT/NAME/sweep.json with its reason and redo command; the other cells go on, and the sweep exits 3.
The same command again redoes only what is missing: a done cell is skipped (none of its files rewritten), a
failed one goes on where it stopped. A spec whose base, axes or judges changed is refused (exit 2) unless its
axes only gained values (their new cells run). --dry-run prints the cells, what is done, and an upper bound on
model calls per endpoint, and runs nothing.

A spec's top-level trials: K (or --trials K) makes every cell a set of K trials (tba run --trials): the matrix's SoPR
is then over trials with its 95% CI, with pass@K / pass^K. --dry-run prints, per cell against the baseline, the
smallest difference in SoPR points the sweep can detect (80% power, 5% two-sided, paired over the queries both run;
from --assume-pass-rate / --assume-correlation, or --pilot OUT/NAME's observed variances). After the sweep every
difference in the matrix is followed by "settled" (its 95% CI excludes 0) or "not settled: about M more trials (or N
more queries) would detect the observed difference"; --until-settled --max-trials K adds those trials. Every row says
its model latency p50 / p95, tokens per query (matrix.csv) and cost: money only from --prices FILE.

Exit status: 0 every cell done; 2 bad input (nothing run); 3 a cell failed; 130 interrupted."""

EXIT_CELL_FAILED = 3
EXIT_INTERRUPTED = 130


def register(subparsers) -> None:
    from ..ranges import CELLS, CONCURRENCY, CORRELATION, FRACTION, setting
    from .evaluate import add_judge_arguments
    from .run import add_run_arguments

    p = subparsers.add_parser("sweep", help="many runs from one spec (models x methods x parsers x ...), run "
                              "together, judged, one matrix", description=HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="the sweep's YAML spec")
    p.add_argument("--out", default="results/sweeps", help="where sweeps go: OUT/NAME (default results/sweeps)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the cells, what is done, and an upper bound on model calls per endpoint; run nothing")
    p.add_argument("--cells", nargs="+", metavar="CELL", help="run only these cells (their folder names)")
    p.add_argument("--axis", action="append", default=[], metavar="NAME=V1,V2",
                   help="replace an axis's values (scalars, comma-separated), e.g. --axis parser=react-find,react-regex "
                   "(another sweep: name it with --name)")
    p.add_argument("--max-cells", type=CELLS, help="cells running at once (default: all, at most 64; the endpoints' caps "
                   "set the pace either way)")
    p.add_argument("--judge-cache", default=None,
                   help="judgement cache file (default: the spec's judge_cache, else results/cache/judge.jsonl)")
    p.add_argument("--judge-concurrency", type=CONCURRENCY, default=None,
                   help="judge requests in flight per cell (default: the judge endpoint's cap)")
    p.add_argument("--pilot", default=None, metavar="DIR",
                   help="--dry-run: an earlier sweep's folder (OUT/NAME) whose observed variances replace the assumed "
                   "ones in the smallest detectable difference (its cells paired by name with this spec's)")
    p.add_argument("--until-settled", action="store_true",
                   help="after the sweep, add trials only to the cells whose comparison with the baseline is not settled "
                   "(as many as would detect its observed difference), round after round, until every one is settled "
                   "or --max-trials is reached; says what it spent. Needs trials: 2 or more and a baseline")
    p.add_argument("--max-trials", type=setting("trials"), metavar="K",
                   help="--until-settled's budget: trials per cell at most (K x the cell's queries, paid requests "
                   "included)")
    p.add_argument("--assume-pass-rate", type=FRACTION, default=0.5, metavar="P",
                   help="--dry-run without --pilot: the pass rate assumed in both cells of a comparison (default 0.5: "
                   "the most variance)")
    p.add_argument("--assume-correlation", type=CORRELATION, default=0.0, metavar="RHO",
                   help="--dry-run without --pilot: the correlation assumed between two cells' verdicts on the same "
                   "query (default 0: none, the most cautious for cells that share their queries)")
    add_run_arguments(p, fanout=False)
    add_judge_arguments(p)
    for action in p._actions:  # the run's --name names the sweep here
        if action.dest == "name":
            action.help = "the sweep's name: its folder OUT/NAME (default: the spec's name:)"
    # judge flags replace the spec's judges only when given: no defaults here
    p.set_defaults(func=run, judge_backend=None, evaluate_times=None, judge_mode=None)


def run(args) -> int:
    from toolbench_adapter.errors import InputError

    from ...sweep.spec import load_spec

    for flag, value, fix in (
            ("--out-root", args.out_root, "pass --out DIR: a sweep's cells go under OUT/NAME"),
            ("--shard", args.shard, "a sweep runs whole cells: shard one run with tba run --shard, then tba merge"),
            ("--model-label", args.model_label, "each cell's row is named by the cell; leave it out"),
            ("--score-anyway", args.score_anyway, "a cell with infrastructure failures is redone, not scored: "
             "rerun the sweep; tba evaluate CELL --score-anyway scores one cell as it is")):
        if value:
            raise InputError(f"{flag} is not a sweep's", field=flag, fix=fix)
    spec = load_spec(args.spec, name=args.name, base_overrides=base_overrides(args),
                     judges_override=judge_override(args), axes_override=axis_override(args.axis),
                     trials=args.trials)
    return SweepCommand(args, spec).run()


def base_overrides(args) -> dict:
    """The run flags given on the command line, as base settings (--name names the sweep)."""
    from .run import flag_settings

    # --trials is the sweep's trials: (load_spec), not a base setting
    settings = {k: v for k, v in flag_settings(args).items() if k not in ("name", "out_root", "trials")}
    if args.config is not None:  # --config= (empty): no config file, the spec's base one left out too
        settings["config"] = args.config
    return settings


def axis_override(pairs: list[str]) -> dict[str, list[str]]:
    from toolbench_adapter.errors import InputError

    axes = {}
    for pair in pairs:
        name, _, values = pair.partition("=")
        listed = [v.strip() for v in values.split(",") if v.strip()]
        if not name.strip() or not listed:
            raise InputError(f"--axis {pair!r} is not NAME=V1,V2", field="--axis", fix="write e.g. --axis parser=react-find,react-robust")
        axes[name.strip()] = listed
    return axes


def judge_override(args) -> list[dict] | None:
    """The judge flags given on the command line, as one judge; None: none given."""
    from ._common import parse_options

    judge = {"backend": args.judge_backend, "model": args.judge_model, "url": args.judge_url,
             "api_key": args.judge_api_key, "self": args.judge_self or args.judge == "self" or None,
             "mode": args.judge_mode, "prefill": args.judge_prefill or None,
             "constrain": args.judge_constrain or None, "max_tokens": args.judge_max_tokens,
             "timeout": args.judge_timeout, "options": parse_options(args.judge_option) or None,
             "evaluator": args.evaluator, "evaluators_dir": args.evaluators_dir,
             "evaluate_times": args.evaluate_times, "concurrency": args.judge_concurrency}
    judge = {k: v for k, v in judge.items() if v is not None}
    return [judge] if judge else None


class _Refusing(argparse.ArgumentParser):
    """tba evaluate's judge flags, parsed from a spec's judge: an error names the spec's key, not a flag."""

    where: tuple[str, str] = ("", "")

    def error(self, message):
        from toolbench_adapter.errors import InputError

        raise InputError(message.replace("argument ", ""), path=self.where[0], field=self.where[1],
                         fix="see tba sweep --help for a judge's keys and tba evaluate --help for their values")


def judge_args(spec, index: int, settings: dict) -> argparse.Namespace:
    from ...sweep.spec import JUDGE_KEYS
    from ..ranges import CONCURRENCY
    from .evaluate import add_judge_arguments

    parser = _Refusing(prog="judge", add_help=False)
    parser.where = (str(spec.path), f"judges[{index}]")
    add_judge_arguments(parser)
    parser.add_argument("--concurrency", type=CONCURRENCY, default=None)
    argv: list[str] = []
    for key, value in settings.items():
        flag = JUDGE_KEYS[key]
        if isinstance(value, bool):
            argv += [flag] if value else []
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        elif isinstance(value, dict):
            for option, item in value.items():
                argv += [flag, f"{option}={item}"]
        else:
            argv += [flag, str(value)]
    parsed = parser.parse_args(argv)
    parsed.judge_self = parsed.judge_self or parsed.judge == "self"
    return parsed


def tool_host(plans):
    """One listener for the embedded tool servers of every cell that has one (each cell keeps its own server
    behind it: toolbench_adapter/server/runner.py EmbeddedHost); None when no cell has."""
    if not any(plan.cfg.server == "embedded" for plan in plans):
        return None
    from toolbench_adapter.server.runner import EmbeddedHost

    return EmbeddedHost().start()


class SweepCommand:
    """Plan every cell (checked), then run them (or print the plan: --dry-run), then write the matrix."""

    def __init__(self, args, spec):
        self.args = args
        self.spec = spec
        self.sweep_dir = Path(args.out) / spec.name
        self.judge_cache = args.judge_cache or spec.judge_cache

    def redo(self, cell: str | None = None) -> str:
        argv = list(getattr(self.args, "argv", None) or ["sweep", str(self.spec.path)])
        if "--cells" in argv:  # the cells named before are dropped: this one alone
            start = argv.index("--cells")
            end = start + 1
            while end < len(argv) and not argv[end].startswith("-"):
                end += 1
            del argv[start:end]
        return "tba " + shlex.join(argv + (["--cells", cell] if cell else []))

    def run(self) -> int:
        from toolbench_adapter.evaluation.cache import check_cache_path
        from toolbench_adapter.files.fileio import check_writable
        from toolbench_adapter.runs.cost import read_prices

        from ...execution.runlock import RunFolderLock
        from ...sweep.paths import check_sweep_paths
        from ...sweep.state import SweepState

        self.prices = read_prices(self.args.prices) if self.args.prices else None  # a bad file: exit 2 first
        if self.args.pilot and not self.args.dry_run:
            from toolbench_adapter.errors import InputError

            raise InputError("--pilot sizes a sweep before it runs", field="--pilot", fix="add --dry-run")
        cells = self.spec.cells()
        chosen = self.chosen(cells)
        judges = [judge_args(self.spec, i, j.settings) for i, j in enumerate(self.spec.judges)]
        partners = Counter(cell.shares_calls_with() for cell in chosen)  # cells that differ at most in the parser
        plans = [self.plan(cell, judges, partners) for cell in chosen]
        check_sweep_paths(self.spec, self.sweep_dir, plans)  # a name past the filesystem's limit: before --dry-run
        if self.args.dry_run:
            from ...sweep.dry_run import print_detectable, print_plan

            print_plan(self.spec, self.sweep_dir, plans, SweepState.open(self.sweep_dir, self.spec, cells, self.redo()))
            print_detectable(self.spec, plans, pilot=self.args.pilot, pass_rate=self.args.assume_pass_rate,
                             correlation=self.args.assume_correlation)
            print("nothing run (--dry-run)")
            return 0
        check_writable(self.sweep_dir)
        check_cache_path(self.judge_cache, "--judge-cache")
        if self.args.until_settled:
            from ...sweep import until_settled

            until_settled.check(self.spec.trials, self.args.max_trials, self.spec.baseline is not None)
        # one sweep command per folder: a second one at once would interleave its cells' states with this one's and
        # the last sweep.json written would win (a session lost, wrong reasons shown)
        with RunFolderLock(self.sweep_dir, self.redo(), hold_folder=True, what="sweep's folder",
                           fix="wait for that sweep to end (or stop it: the same command goes on where it stopped), "
                           "or run this one under another name (--name NEW)"):
            state = SweepState.open(self.sweep_dir, self.spec, cells, self.redo())
            self.check_judges_served(plans)
            from ...sweep.dry_run import judge_cost_lines

            for line in judge_cost_lines(plans):  # what the judges will be asked, before any cell runs
                print(line, file=sys.stderr, flush=True)
            status = self.execute(plans, state)
            if self.args.until_settled and status == 0:
                status = self.until_settled(plans, state)
            return status

    def until_settled(self, plans, state) -> int:
        """Rounds of more trials for the cells not settled (runners/sweep/until_settled.py), within --max-trials."""
        from toolbench_adapter.report.sweep_matrix import build_matrix

        from ...sweep import until_settled

        before = until_settled.spent(plans)
        status, rounds = 0, 0
        while rounds < self.args.max_trials:
            grow = until_settled.targets(build_matrix(self.sweep_dir, prices=self.prices), self.args.max_trials)
            if not grow:
                break
            rounds += 1
            print(f"until settled: round {rounds}: " + ", ".join(
                f"{cell} to {trials} trials" for cell, trials in grow.items()), flush=True)
            grown = until_settled.grown(plans, grow)
            for plan in grown:
                state.update(plan.cell.name, trials=plan.cfg.trials)
            status = self.execute(grown, state)
            plans = [next((g for g in grown if g.cell.name == p.cell.name), p) for p in plans]
            if status:
                break
        after = until_settled.spent(plans)
        matrix = build_matrix(self.sweep_dir, prices=self.prices)
        left = until_settled.targets(matrix, self.args.max_trials)
        unsettled = list(dict.fromkeys(row.cell for row in matrix.rows
                                       if row.paired is not None and row.verdict != "settled"))
        verdict = ("every comparison settled" if not unsettled else
                   f"stopped with {', '.join(left)} still able to grow" if left else
                   f"not settled within --max-trials {self.args.max_trials}: {', '.join(unsettled)}")
        print(f"until settled: {verdict} after {rounds} round(s); spent {after[0] - before[0]} more query runs and "
              f"{after[1] - before[1]} more model calls")
        return status

    def chosen(self, cells):
        from toolbench_adapter.errors import InputError

        if not self.args.cells:
            return cells
        names = [c.name for c in cells]
        unknown = [n for n in self.args.cells if n not in names]
        if unknown:
            raise InputError(f"no such cell: {', '.join(unknown)}", path=self.spec.path, field="--cells",
                             fix=f"name cells of this spec: {', '.join(names)}")
        return [c for c in cells if c.name in self.args.cells]

    # -- planning: every setting checked, nothing run -----------------------------------------------------
    def plan(self, cell, judges, partners):
        from dataclasses import replace

        from toolbench_adapter.errors import InputError

        from ...config import RunConfig
        from ...execution.preflight import make_backend, prepare
        from ...sweep.endpoints import max_in_flight, model_urls
        from ...sweep.scheduler import CellPlan
        from .eval import check_run_settings

        where = f"cell {cell.name}"
        try:
            cfg = RunConfig(**{**cell.settings, "name": cell.name, "out_root": str(self.sweep_dir),
                               "trials": self.cell_trials(cell)})
            urls = model_urls(cfg)
            if "concurrency" not in cell.settings and urls:  # enough queries in flight to fill its endpoints alone
                cfg = replace(cfg, concurrency=sum(max_in_flight(self.spec, u) for u in urls))
            cfg.validate()
            selected = check_run_settings(cfg)
            queries = len(selected)
            backend = make_backend(cfg)
            prepare(cfg, backend)  # the dialect and parser fit the backend
            if cfg.trials > 1:  # every cell a set of trials: its agent can differ from trial to trial
                from ...execution.trials import check_trials

                check_trials(cfg, backend)
        except InputError as exc:
            raise InputError(exc.problem, path=self.spec.path,
                             field=f"{where}: {exc.field}" if exc.field else where, fix=exc.fix) from None
        plans = [self.judge_plan(label.label, jargs, cfg) for label, jargs in zip(self.spec.judges, judges,
                                                                                   strict=True)]
        key = cell.shares_calls_with()
        # one model memo for the cells that differ only in the parser: threads, temperature 0, another such cell, and
        # no trials (a memo would answer every trial as the first)
        shared = cfg.executor == "threads" and not cfg.temperature and partners[key] > 1 and cfg.trials == 1
        return CellPlan(cell=cell, cfg=cfg, judges=plans, redo=self.redo(cell.name), share_key=key if shared else None,
                        queries=queries * cfg.trials, query_keys=frozenset((q.group, str(q.query_id)) for q in selected),
                        groups=sorted({query.group for query in selected}))

    def cell_trials(self, cell) -> int:
        """The spec's trials, or more where the cell's set already holds more (grown by --until-settled)."""
        from toolbench_adapter.runs.trial_set import is_trial_set, read_trials

        folder = self.sweep_dir / cell.name
        recorded = read_trials(folder)["trials"] if self.spec.trials > 1 and is_trial_set(folder) else 0
        return max(self.spec.trials, recorded)

    def judge_plan(self, label, jargs, cfg):
        from toolbench_adapter.errors import InputError
        from toolbench_adapter.evaluation.judging.chat import CHAT_CLIENTS

        from ...judging.evaluate import check_self_judging
        from ...sweep.endpoints import max_in_flight
        from ...sweep.scheduler import JudgePlan
        from .evaluate import chat_recipe

        if jargs.judge_backend not in CHAT_CLIENTS:
            CHAT_CLIENTS.get(jargs.judge_backend)  # unknown: did you mean
        planned = {"config": cfg.as_dict(), "backend": cfg.backend, "model": cfg.model}
        try:
            recipe = chat_recipe(jargs, planned)
            check_self_judging(planned, recipe.model, judge_self=jargs.judge_self,
                               pipeline_check=jargs.judge_backend == "hf" and not recipe.model)
        except InputError as exc:
            raise InputError(exc.problem, path=self.spec.path, field=f"judge {label}, cell {cfg.name}",
                             fix=exc.fix) from None
        urls = [u.rstrip("/") for u in (recipe.base_url or [])] if jargs.judge_backend == "openai" else []
        concurrency = self.args.judge_concurrency or jargs.concurrency or (
            sum(max_in_flight(self.spec, u) for u in urls) if urls else 4)
        options = {"evaluator": jargs.evaluator, "evaluators_dir": jargs.evaluators_dir, "mode": jargs.judge_mode or "auto",
                   "evaluate_times": jargs.evaluate_times or 3, "max_tokens": jargs.judge_max_tokens,
                   "judge_constrain": jargs.judge_constrain, "judge_self": jargs.judge_self, "concurrency": concurrency}
        return JudgePlan(label=label, build_client=recipe.build, options=options, urls=urls, recipe=recipe)

    def check_judges_served(self, plans) -> None:
        """A dead judge is found now, before any cell runs: one GET /models per judge."""
        from toolbench_adapter.evaluation.judging.preflight import check_served

        seen = set()
        for plan in plans:
            for judge in plan.judges:
                key = (judge.recipe.backend, judge.recipe.model, tuple(judge.urls))
                if judge.recipe.backend != "openai" or key in seen:
                    continue
                seen.add(key)
                check_served(judge.build_client(), warn=lambda line: print(line, file=sys.stderr))

    # -- running -----------------------------------------------------------------------------------------
    def execute(self, plans, state) -> int:
        from ...sweep.endpoints import capped, model_urls, utilisation_lines
        from ...sweep.scheduler import SweepScheduler

        urls = [u for p in plans for u in model_urls(p.cfg)] + [u for p in plans for j in p.judges for u in j.urls]
        ray, ray_started = self.connect_ray(plans)
        started = time.perf_counter()
        host = tool_host(plans)
        scheduler = SweepScheduler(plans, state, judge_cache=self.judge_cache, max_cells=self.args.max_cells,
                                   progress=not self.args.quiet, prices=self.prices, tool_host=host)
        print(f"sweep {self.spec.name}: {len(plans)} cells -> {self.sweep_dir}", flush=True)
        state.save()
        # what the imports and the plan made lives to the end: the collector's full passes need not walk it while
        # the cells run (a pass over pydantic's schemas and the rest takes 0.1 s on a loaded machine)
        gc.freeze()
        try:
            with capped(self.spec, urls) as caps:
                results = scheduler.run()
        except KeyboardInterrupt:
            state.end(EXIT_INTERRUPTED)
            print(f"tba sweep: interrupted; the same command goes on (done cells are skipped): {self.redo()}",
                  file=sys.stderr)
            if scheduler.stopped_now:  # a second Ctrl-C: the cells' threads are not waited for
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED)
            return EXIT_INTERRUPTED
        finally:
            gc.unfreeze()
            if host is not None:  # every cell has ended: nobody waits for the listener to stop
                host.stop(wait=False)
            if ray_started:  # the Ray cluster this sweep started for its cells goes with it
                ray.shutdown()
        seconds = time.perf_counter() - started
        state.record["sessions"][-1]["shared_calls"] = scheduler.shared_calls()
        matrix_files = self.write_matrix()
        failed = [r for r in results if r.state == "failed"]
        status = EXIT_CELL_FAILED if failed else 0
        state.end(status)
        ran = sum(r.ran for r in results)
        done = sum(r.state == "done" for r in results)
        print(f"sweep {self.spec.name}: {len(results)} cells: {done} done ({ran} ran now, {len(results) - ran} done "
              f"before), {len(failed)} failed, in {seconds:.1f} s -> {self.sweep_dir}")
        for line in utilisation_lines(caps, [u for p in plans for j in p.judges for u in j.urls]):
            print(line)
        for group in state.record["sessions"][-1]["shared_calls"]:
            print(f"  cells {', '.join(group['cells'])} differ only in the parser: {group['model_calls']} model "
                  f"calls, {group['memo_hits']} more requests answered by the shared memo")
        if matrix_files:
            print(f"  matrix: {', '.join(str(p) for p in matrix_files)}")
        if failed:
            print(f"FAILED CELLS {len(failed)}: {', '.join(r.name for r in failed)} (each one's reason above and in "
                  f"{self.sweep_dir}/sweep.json); the same command redoes only what is missing: {self.redo()}")
        return status

    @staticmethod
    def connect_ray(plans):
        """Cells on --executor ray share one cluster: joined (or started) here once, so that no cell's run shuts
        down a local cluster that the others still use. (Ray, True when this call started it.)"""
        ray_cells = [p.cfg for p in plans if p.cfg.executor == "ray"]
        if not ray_cells:
            return None, False
        from ...execution.executors import connect_ray

        return connect_ray(ray_cells[0].ray_address)

    def write_matrix(self) -> list[Path]:
        from toolbench_adapter.report.sweep_matrix import build_matrix, write_matrix

        matrix = build_matrix(self.sweep_dir, prices=self.prices)
        written = write_matrix(matrix, self.sweep_dir)
        md = self.sweep_dir / "matrix.md"
        if md.is_file():
            print(md.read_text(encoding="utf-8"))
        return written
