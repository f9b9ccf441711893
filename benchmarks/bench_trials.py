"""How often the 95% interval of SoPR over trials holds the true pass rate (issue 42): `make bench-trials`.

Each simulated sweep draws its queries anew from one population: a query's pass probability from a Beta
distribution with mean --pass-rate (--spread 0: every query the same), each of --trials trials Solved with that
probability, each of --repeats judge repeats flipping the verdict with probability --judge-flip. The interval is
toolbench_adapter/evaluation/scoring/trials.py's: a percentile bootstrap clustered by query. Its coverage over
--sweeps sweeps is printed per setting (a 95% interval wants 93-97%), with the mean width beside the detectable
difference the formula gives for that many queries and trials. Also printed: the mean pass^k and pass@k over the
sweeps against p^k and 1-(1-p)^k (a population of equal queries: --spread 0). No timed test reads these figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolbench_adapter.evaluation.scoring import trials as T  # noqa: E402


def simulate(rng, *, queries: int, trials: int, repeats: int, pass_rate: float, spread: float,
             judge_flip: float) -> dict[str, list[list[float]]]:
    if spread > 0:  # Beta with mean p and variance spread * p (1 - p)
        concentration = 1 / spread - 1
        p = rng.beta(pass_rate * concentration, (1 - pass_rate) * concentration, size=queries)
    else:
        p = np.full(queries, pass_rate)
    solved = rng.random((queries, trials)) < p[:, None]
    flip = rng.random((queries, trials, repeats)) < judge_flip
    verdicts = np.where(flip, ~solved[:, :, None], solved[:, :, None]).astype(float)
    return {str(q): verdicts[q].tolist() for q in range(queries)}


def coverage(args, queries: int, trials: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    truth = 100 * (args.pass_rate * (1 - args.judge_flip) + (1 - args.pass_rate) * args.judge_flip)
    held, widths, hats, ats = 0, [], [], []
    for sweep in range(args.sweeps):
        data = simulate(rng, queries=queries, trials=trials, repeats=args.repeats, pass_rate=args.pass_rate,
                        spread=args.spread, judge_flip=args.judge_flip)
        stats = T.group_stats(data, resamples=args.resamples, seed=sweep)
        held += stats.low <= truth <= stats.high
        widths.append(stats.high - stats.low)
        hats.append(stats.pass_hat[trials])
        ats.append(stats.pass_at[trials])
    return {"coverage": 100 * held / args.sweeps, "width": float(np.mean(widths)), "truth": truth,
            "pass_hat": float(np.mean(hats)), "pass_at": float(np.mean(ats))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", type=int, default=1000, help="simulated sweeps per setting (default 1000)")
    parser.add_argument("--queries", type=int, nargs="+", default=[50, 200], help="queries per sweep (default 50 200)")
    parser.add_argument("--trials", type=int, nargs="+", default=[1, 3, 5], help="trials per query (default 1 3 5)")
    parser.add_argument("--repeats", type=int, default=1, help="judge repeats per trial (default 1)")
    parser.add_argument("--pass-rate", type=float, default=0.5, help="the population's mean pass rate (default 0.5)")
    parser.add_argument("--spread", type=float, default=0.3,
                        help="between-query spread of the pass probability, 0..1 of p(1-p) (default 0.3; 0: all equal)")
    parser.add_argument("--judge-flip", type=float, default=0.0, help="chance a repeat flips the verdict (default 0)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per interval (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"coverage of the 95% interval of SoPR over trials: {args.sweeps} simulated sweeps per row, pass rate "
          f"{args.pass_rate}, spread {args.spread}, judge flip {args.judge_flip}, {args.repeats} repeat(s), "
          f"{args.resamples} resamples (want 93-97%)")
    print(f"{'queries':>7} {'trials':>6} {'coverage':>9} {'CI width':>9} {'detectable':>10} "
          f"{'pass^k':>7} {'p^k':>6} {'pass@k':>7} {'1-(1-p)^k':>9} {'seconds':>7}")
    worst = 100.0
    for queries in args.queries:
        for trials in args.trials:
            started = time.perf_counter()
            result = coverage(args, queries, trials, args.seed + 1000 * queries + trials)
            p = args.pass_rate
            detectable = T.detectable_difference(T.assumed_variance(p, 0.0), queries, trials)
            print(f"{queries:>7} {trials:>6} {result['coverage']:>8.1f}% {result['width']:>9.1f} {detectable:>10.1f} "
                  f"{result['pass_hat']:>7.1f} {100 * p**trials:>6.1f} {result['pass_at']:>7.1f} "
                  f"{100 * (1 - (1 - p) ** trials):>9.1f} {time.perf_counter() - started:>7.1f}", flush=True)
            worst = min(worst, result["coverage"])
    print("pass^k and pass@k match p^k and 1-(1-p)^k only for a population of equal queries (--spread 0); the "
          "detectable difference assumes equal queries and no correlation between cells")
    print(f"lowest coverage: {worst:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
