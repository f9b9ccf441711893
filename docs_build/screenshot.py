"""The README's picture: the first screen of a report page (`make report` of the offline default), as headless
Chromium draws it, written as a PNG (`make screenshot` -> docs/report-first-screen.png). Never drawn by hand.

Chromium runs as the report tests run it (tests/test_report_chromium.py): headless, no network at all (every host
resolves to nothing), a throwaway profile; --virtual-time-budget lets the page's script render before the shot."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-default-browser-check", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
         "--virtual-time-budget=5000", "--run-all-compositor-stages-before-draw"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def find_chromium(given: str | None) -> str | None:
    if given:
        return given if Path(given).is_file() or shutil.which(given) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def shoot(chromium: str, page: Path, out: Path, width: int, height: int, timeout: float = 120) -> None:
    with tempfile.TemporaryDirectory(prefix="tba-shot-") as profile:
        shot = Path(profile) / "shot.png"
        done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}/p", f"--window-size={width},{height}",
                               f"--screenshot={shot}", page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0 or not shot.is_file() or not shot.read_bytes().startswith(PNG_MAGIC):
            raise RuntimeError(f"chromium wrote no PNG (exit {done.returncode}): {done.stderr.strip()[-400:]}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(shot), out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("page", type=Path, help="the report page (make report's REPORT_OUT)")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write (README's: docs/report-first-screen.png)")
    parser.add_argument("--width", type=int, default=1400, help="the window's width in pixels (default 1400)")
    parser.add_argument("--height", type=int, default=900, help="the window's height: the first screen (default 900)")
    parser.add_argument("--chromium", help="the Chromium binary (default: chromium or chromium-browser on PATH)")
    args = parser.parse_args(argv)
    if not args.page.is_file():
        print(f"screenshot: error: {args.page}: no report page there\n  fix: make report (after make eval) writes it",
              file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print(f"screenshot: error: no Chromium ({args.chromium or 'chromium or chromium-browser on PATH'})\n"
              "  fix: apt-get install chromium (the report tests install it the same way), or --chromium PATH",
              file=sys.stderr)
        return 2
    try:
        shoot(chromium, args.page, args.out, args.width, args.height)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        print(f"screenshot: error: {exc}", file=sys.stderr)
        return 3
    print(f"written: {args.out} ({args.width}x{args.height}, {args.out.stat().st_size / 1024:.0f} KiB) from {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
