"""The StableToolBench leaderboard's setup: its judges, repeats and the upstream downloads a run needs.

Source: THUNLP-MT/StableToolBench README.md @ aa4ed9f (the "GPT based caching system", "The MirrorAPI server"
and evaluation sections; the tables' headings name the judges). Facts, not code: the links are where upstream
says its data lives.
"""

from __future__ import annotations

# the judge behind each published table family, by the simulator that answered cache misses there
GPT_CACHE_JUDGE = "gpt-4-turbo-2024-04-09"  # GPT-based caching system tables (README update of 2024-06-19)
MIRRORAPI_JUDGE = "gpt-4o"  # MirrorAPI-Cache tables
LEADERBOARD_JUDGES = {GPT_CACHE_JUDGE: "the GPT-based caching system tables",
                      MIRRORAPI_JUDGE: "the MirrorAPI-Cache tables"}
SIMULATOR_MODEL = "gpt-4-turbo"  # server/config.yml `model`: what answered cache misses of the GPT-based cache server
EVALUATE_TIMES = 3  # `--evaluate_times 3` in the README's SoPR / SoWR commands

# where upstream's pieces are downloaded
CACHE_URL = "https://huggingface.co/datasets/stabletoolbench/Cache"  # tool_response_cache/ and tools/ in one archive
CACHE_URL_MIRROR = "https://cloud.tsinghua.edu.cn/f/07ee752ad20b43ed9b0d/?dl=1"
TOOLENV_URL = "https://huggingface.co/datasets/stabletoolbench/ToolEnv2404"  # the tool set crawled in April 2024
MIRRORAPI_MODEL_URL = "https://huggingface.co/stabletoolbench/MirrorAPI-Cache"  # served with vLLM
BASELINES_URL = "https://huggingface.co/datasets/stabletoolbench/baselines"  # the README rows' answers (Feb 2024)
