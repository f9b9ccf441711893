"""``none``: no simulation; a cache miss gets a clear error answer (HTTP 200, so a run goes on)."""

from __future__ import annotations

from .base import SimulationRequest, SimulationResult, SimulatorOptions

NO_SIMULATOR_ERROR = "No cached response for this call and the server runs without a simulator (--simulator none)"


class NoSimulator:
    name = "none"

    def __init__(self, options: SimulatorOptions | None = None):
        pass

    def simulate(self, request: SimulationRequest) -> SimulationResult:
        return SimulationResult({"error": NO_SIMULATOR_ERROR, "response": ""}, cacheable=False)
