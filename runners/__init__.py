"""The part that moves: the ``tba`` command line, runs, the search methods, model backends, serving, replay.

One folder per job (DESIGN.md has the map and what each may import; `make lint` checks it): cli/ -> the
jobs above execution (judging/, replay/, serving/) -> execution/ -> config/ -> search/ -> models/ ->
failures.py -> toolbench_adapter. Importing this package registers nothing: the hf judge reaches the
library's CHAT_CLIENTS through its entry point (setup.cfg)."""
