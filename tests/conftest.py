"""Shared fixtures. Upstream data come from ../shared through TBA_STB_ROOT / TBA_SHARED_ROOT; tests that
need them skip with the reason when they are absent (a user's machine has no ../shared)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import runners.models.local_model as local_model

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_ROOT = Path(os.environ.get("TBA_SHARED_ROOT", PROJECT_ROOT.parent / "shared"))
STB_ROOT = Path(os.environ.get("TBA_STB_ROOT") or SHARED_ROOT / "stabletoolbench")
TB_ROOT = SHARED_ROOT / "toolbench"
FIXTURES_ROOT = SHARED_ROOT / "fixtures"


def _need(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set TBA_SHARED_ROOT / TBA_STB_ROOT to a copy of ../shared)")
    return path


@pytest.fixture(autouse=True)
def _judge_cards_apart(tmp_path_factory, monkeypatch):
    """No test reads or writes the checkout's results/judge_cards: each test's judge cards are its own."""
    monkeypatch.setenv("TBA_JUDGE_CARDS", str(tmp_path_factory.mktemp("judge_cards")))


@pytest.fixture
def no_model_load(monkeypatch):
    """Fails the test if anything loads the local model (the run's backend or the hf judge)."""
    loads = []

    def refuse(*args, **kwargs):
        loads.append(args)
        raise AssertionError("the local model was loaded")

    monkeypatch.setattr(local_model, "load", refuse)
    return loads


@pytest.fixture(scope="session")
def stb_root() -> Path:
    return _need(STB_ROOT / "solvable_queries", "StableToolBench data").parent


@pytest.fixture(scope="session")
def tb_root() -> Path:
    return _need(TB_ROOT / "data_example", "ToolBench data").parent


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    return _need(FIXTURES_ROOT / "react_outputs_dev.jsonl", "model-output fixtures").parent


@pytest.fixture(scope="session")
def project_root() -> Path:
    return PROJECT_ROOT


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster per test module, two worker CPUs as `--executor ray` starts on a 2-core machine;
    workers import the project (and the test module, for test backends) from the working directory, which Ray
    puts on their path. Use with tests.ray_support.needs_ray."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
