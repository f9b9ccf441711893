"""A real ``tba run`` in a child process, for tests/test_run_identity.py: the CLI with the scripted backend, whose
model call for the chosen query (or every query) writes the query id to a marker file and then blocks until the
process ends. The test waits for the marker, so it knows where the run is without sleeping.

    python -m tests.run_identity_child MARKER QUERY_ID|any|none run --name x --out-root DIR --backend scripted ...
"""

from __future__ import annotations

import sys
import threading

from runners.cli import main
from runners.execution import runner as run
from runners.models.scripted import ScriptedBackend, default_script


def blocking_script(marker: str, hang: str):
    def script(request):
        query_id = request.key.get("query_id")
        if hang == "any" or str(query_id) == hang:
            with open(marker, "a", encoding="utf-8") as handle:
                handle.write(f"{query_id}\n")
            threading.Event().wait()  # until the process is killed or stops
        return default_script(request)

    return script


if __name__ == "__main__":
    marker, hang, *argv = sys.argv[1:]
    run.make_backend = lambda cfg: ScriptedBackend(blocking_script(marker, hang), natural_dialect="openai-tools")
    sys.exit(main(argv))
