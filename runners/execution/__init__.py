"""The run: Runner (runner.py: the session), one query (query.py), what is settled before it (preflight.py),
executors (threads, ray), the manifest, resume, progress, the parser fan-out, merging shards, the run-folder
lock and Ctrl-C."""
