"""The part that moves: the ``tba`` command line, runs, CoT / DFSDT drivers and model backends."""
