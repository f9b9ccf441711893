"""The benchmark as tasks of other evaluation frameworks, found by their names: ``inspect eval
toolbench_adapter/stabletoolbench`` (inspect_task.py; inspect_ai finds it through its ``inspect_ai`` entry point).
The task's body lives in runners/inspect_eval/ (it runs queries and writes run folders), reached by name through
the ``toolbench_adapter.inspect_tasks`` entry point group: the library imports nothing from runners/."""

from toolbench_adapter.registry import Registry

# task name -> "module:attr" of a function taking the task's options and returning an inspect_ai Task
INSPECT_TASKS: Registry = Registry("inspect_tasks")
