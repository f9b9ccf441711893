"""StableToolBench as an inspect_ai task (``inspect eval toolbench_adapter/stabletoolbench``): the task's body
(task.py: samples, tools, solver, scorer), the judge on a sample's answer (judging.py), and the run folder an
evaluation writes with ``-T run=NAME`` (run_folder.py). Beside judging/ and replay/: it drives a run's pieces."""
