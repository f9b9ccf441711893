"""`tba reproduce --published` on large published tables: seconds and peak memory (issue 35 item 3).

Writes a Markdown table of --rows rows (default 10,000) and one of about --megabytes MB (default 50), and runs
`tba reproduce --stb-root data/stabletoolbench_example --published FILE` on each in a child process: the
released example's labels beside every row (a few rows pair with its models, the rest are printed unpaired).
Prints the wall seconds and the child's peak resident memory (its maxrss, MiB) for each; the targets of the issue are
under 10 s for the 10,000 rows and under a minute and 1 GB for the 50 MB one. No timed test reads these figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = ("| Method | I1 Instruction | I1 Category | I1 Tool | I2 Instruction | I2 Category | I3 Instruction "
          "| Average |\n|---|---|---|---|---|---|---|---|\n")
# rows named as papers name them: a model, a method, sometimes a variant; two pair with the example's models
PAIRED = ("| GPT-3.5-Turbo-0613 (CoT) | 52.2±1.1 | 47.3±0.6 | 53.6±1.3 | 42.5±2.1 | 35.8±2.0 | 48.1±0.8 | 46.6±1.3 |\n"
          "| GPT-3.5-Turbo-0613 (DFS) | 60.3±1.3 | 66.2±1.2 | 67.1±0.0 | 59.1±0.4 | 51.3±1.2 | 73.8±2.3 | 63.0±1.1 |\n")


def row(i: int) -> str:
    name = f"Model-{i % 997}-v{i // 997} ({('CoT', 'DFS', 'ReAct')[i % 3]} variant {i})"
    cells = " | ".join(f"{(i * 7 + k * 13) % 1000 / 10:.1f}±{k / 10:.1f}" for k in range(6))
    return f"| {name} | {cells} | 50.0±1.0 |\n"


def write_table(path: Path, *, rows: int | None = None, megabytes: float | None = None) -> int:
    """The table; returns its row count (rows, or as many as make about `megabytes` MB)."""
    limit = int(megabytes * 1e6) if megabytes else None
    written, count = 0, 0
    with path.open("w", encoding="utf-8") as out:
        out.write("**Pass Rate:**\n\n" + HEADER + PAIRED)  # the metric named above the table, as papers do
        while (rows is not None and count < rows) or (limit is not None and written < limit):
            line = row(count)
            out.write(line)
            written += len(line)
            count += 1
    return count + 2


def run(path: Path, timeout: float) -> tuple[float, float, int | None, str]:
    """(seconds, peak MiB, exit status or None on timeout, the last line of stderr)."""
    command = [sys.executable, "-m", "runners.cli", "reproduce", "--stb-root",
               str(ROOT / "data" / "stabletoolbench_example"), "--published", str(path)]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                return time.perf_counter() - start, usage.ru_maxrss / 1024, None, "timed out"
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        last = (err.read().decode(errors="replace").strip().splitlines() or [""])[-1]
    return seconds, usage.ru_maxrss / 1024, process.returncode, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000, help="rows of the first table (default 10000)")
    parser.add_argument("--megabytes", type=float, default=50, help="size of the second table (default 50)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run is stopped (default 600)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        rows_path = Path(folder) / "rows.md"
        cases.append((f"{write_table(rows_path, rows=args.rows):,} rows", rows_path, 10, None))
        big_path = Path(folder) / "big.md"
        count = write_table(big_path, megabytes=args.megabytes)
        cases.append((f"{big_path.stat().st_size / 1e6:.0f} MB, {count:,} rows", big_path, 60, 1000))
        print(f"tba reproduce --published on a large Markdown table ({sys.executable}, {os.cpu_count()} CPUs)")
        for label, path, target_s, target_mb in cases:
            seconds, peak, code, last = run(path, args.timeout)
            goal = f"target < {target_s} s" + (f", < {target_mb} MB = {target_mb * 1e6 / 2**20:.0f} MiB" if target_mb
                                               else "")
            status = "timed out" if code is None else f"exit {code}"
            print(f"  {label:<26} {seconds:8.1f} s  peak {peak:7.0f} MiB  {status}  ({goal})")
            if code not in (0, None):
                print(f"    {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
