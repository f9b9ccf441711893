"""Simulators by name: schema (offline, deterministic), llm, mirrorapi, none. Third parties register more
through the entry point group ``toolbench_adapter.simulators`` (a factory taking SimulatorOptions)."""

from .base import (
    MODEL_SIMULATORS,
    SIMULATORS,
    SimulationRequest,
    SimulationResult,
    Simulator,
    SimulatorOptions,
    make_simulator,
)

SIMULATORS.register("schema", "toolbench_adapter.server.simulators.schema:SchemaSimulator")
SIMULATORS.register("llm", "toolbench_adapter.server.simulators.llm:LlmSimulator")
SIMULATORS.register("mirrorapi", "toolbench_adapter.server.simulators.mirrorapi:MirrorApiSimulator")
SIMULATORS.register("none", "toolbench_adapter.server.simulators.none:NoSimulator")

__all__ = ["MODEL_SIMULATORS", "SIMULATORS", "SimulationRequest", "SimulationResult", "Simulator", "SimulatorOptions", "make_simulator"]
