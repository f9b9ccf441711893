"""Runs of the sample set write the same bytes as before runners/ was split by job (issue 28): the answer files
(byte for byte) and the step records (less their wall-clock latencies) of five runs, CoT@1, CoT@2 (strict),
DFS_woFilter_w2 with the scripted agent and CoT@2, DFS_woFilter_w3 with a ReAct-text script, against SHA-256
digests recorded from the code before the split (tests/fixtures/golden_runs.json)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "golden_runs.json").read_text(encoding="utf-8"))
VOLATILE = ("latency_s", "model_latency_s")  # wall-clock figures: the only fields that vary run to run


def steps_digest(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for key in VOLATILE:
            record.pop(key, None)
        lines.append(json.dumps(record, sort_keys=True))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_run_writes_the_bytes_it_wrote_before_the_split(tmp_path, name):
    golden = GOLDEN[name]
    backend = ScriptedBackend() if golden["script"] == "scripted" else ScriptedBackend(script=react_script)
    cfg = RunConfig(name=name, out_root=str(tmp_path), **golden["config"])
    Runner(cfg, backend=backend, progress=False).run()
    run = tmp_path / name
    answers = {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(run.glob("G*/*.json"))}
    assert answers.keys() == golden["answers"].keys()
    assert [f for f in answers if answers[f] != golden["answers"][f]] == []
    assert steps_digest(run / "steps.jsonl") == golden["steps"]
