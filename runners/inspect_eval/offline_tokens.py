"""inspect_ai counts tokens with tiktoken's o200k_base (its ``count_text_tokens``; mockllm does so for every reply
that carries no usage), and tiktoken downloads that file on first use. With no network that is a crash inside
inspect, before any sample runs. `make install` therefore puts the file where tiktoken looks for it (a cache folder
named by TIKTOKEN_CACHE_DIR, the file named by the SHA-1 of its URL), taken from a registry package that carries it
(the litellm wheel, read as a zip and never installed), checked against the SHA-256 tiktoken itself expects.

``python -m runners.inspect_eval.offline_tokens WHEEL OUT_DIR`` extracts it; ``use_installed_encodings()`` points
tiktoken at the installed folder unless the user chose one."""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from pathlib import Path

# tiktoken_ext/openai_public.py (tiktoken 0.14): o200k_base's URL and the SHA-256 its loader checks
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
CACHE_NAME = hashlib.sha1(O200K_URL.encode()).hexdigest()  # tiktoken's cache file name for that URL
# where litellm's wheel keeps its copy (litellm/litellm_core_utils/tokenizers/<sha1 of the URL>)
WHEEL_MEMBER = f"litellm/litellm_core_utils/tokenizers/{CACHE_NAME}"
INSTALLED_DIR = Path(sys.prefix) / "share" / "tiktoken"  # the environment's own copy (make install)


def extract(wheel: Path, out_dir: Path) -> Path:
    """o200k_base from ``wheel`` into ``out_dir``, refused unless its SHA-256 is tiktoken's."""
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(WHEEL_MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise ValueError(f"{wheel}: {WHEEL_MEMBER} has SHA-256 {digest}, not tiktoken's {O200K_SHA256}")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / CACHE_NAME
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def use_installed_encodings(folder: Path = INSTALLED_DIR) -> bool:
    """Point tiktoken at ``folder`` when it holds o200k_base and the user set no TIKTOKEN_CACHE_DIR of their own."""
    if os.environ.get("TIKTOKEN_CACHE_DIR") or not (folder / CACHE_NAME).is_file():
        return False
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return True


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m runners.inspect_eval.offline_tokens LITELLM_WHEEL OUT_DIR", file=sys.stderr)
        return 2
    try:
        print(f"tiktoken's o200k_base -> {extract(Path(argv[0]), Path(argv[1]))}")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        print(f"offline_tokens: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
