"""tba merge: join run shards."""

from __future__ import annotations

import json


def register(subparsers) -> None:
    p = subparsers.add_parser("merge", help="join the shards of a run into one run folder",
                              description="Copies answer files and step records of each shard into OUT "
                              "(a query present in two shards must be identical), checks that every shard was "
                              "run with the same settings, and writes one manifest. OUT is built in a hidden "
                              "folder beside it (.OUT.merging-PID@HOST-*) and renamed into place; one left by a "
                              "killed merge is removed by the next merge into OUT. A folder given twice, two folders of one "
                              "shard, shards of different splits, or a split with a shard missing is refused (exit "
                              "2; --allow-partial merges an incomplete set, marked partial).")
    p.add_argument("shards", nargs="+", help="run folders written by tba run --shard i/n (or sets of trials written "
                   "by tba run --trials K --shard i/n: merged trial by trial into one set)")
    p.add_argument("--out", required=True, help="merged run folder")
    p.add_argument("--allow-partial", action="store_true",
                   help="merge although shards of the split are missing (refused otherwise, exit 2): the summary "
                   "and the manifest (merged_partial) say which")
    p.set_defaults(func=run)


def run(args) -> int:
    from toolbench_adapter.runs.trial_set import is_trial_set

    from ...execution.merge import merge_runs, merge_sets

    merge = merge_sets if any(is_trial_set(s) for s in args.shards) else merge_runs
    print(json.dumps(merge(args.shards, args.out, allow_partial=args.allow_partial), indent=2))
    return 0
