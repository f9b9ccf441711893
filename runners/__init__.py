"""The part that moves: the ``tba`` command line, runs, CoT / DFSDT drivers and model backends."""

from toolbench_adapter.evaluation.chat import CHAT_CLIENTS

# local judges live here (they need a model backend); the evaluation layer only knows the name
CHAT_CLIENTS.register("hf", "runners.evaluate:hf_chat_client")
