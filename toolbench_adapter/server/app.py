"""The FastAPI app around VirtualServer: POST /virtual, GET /health, GET /stats."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from toolbench_adapter.files.fileio import OutputPathError, check_writable

from ..compat import STB, Compat
from ..errors import InputError
from ..protocol import server as S
from .cache import ResponseCache
from .catalog import ApiCatalog
from .client import SOURCE_HEADER
from .handler import Outcome, VirtualServer, _bad
from .limits import read_body_capped
from .simulators import SimulatorOptions, make_simulator

DEFAULT_MAX_BODY_BYTES = 1 << 20  # 1 MiB: a tool call's arguments are a few hundred bytes


@dataclass
class ServerConfig:
    cache_dir: str | Path | None = None
    tools_dir: str | Path | None = None
    stb_root: str | Path | None = None
    simulator: str = "schema"
    simulator_options: SimulatorOptions = field(default_factory=SimulatorOptions)
    save: bool = True
    compat: Compat = STB
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


def build_virtual_server(config: ServerConfig) -> VirtualServer:
    """Catalog, cache and simulator from a config; bad folders raise InputError."""
    catalog = ApiCatalog()
    if config.stb_root is not None:
        catalog.add_query_files(config.stb_root)
    if config.tools_dir is not None:
        tools = Path(config.tools_dir)
        if not tools.is_dir():
            raise InputError("tool environment folder not found", path=tools, fix="pass --tools DIR or leave it out")
        catalog.add_tool_env(tools)
    if config.cache_dir is not None:
        try:
            os.stat(config.cache_dir)
        except OSError as exc:  # a link loop: said here, never a traceback later (the rest: check_writable's)
            if exc.errno == errno.ELOOP:
                raise InputError(f"the cache folder cannot be read ({exc.strerror})", path=config.cache_dir,
                                 fix="pass a cache folder (tba run --cache-dir, tba serve --cache) that exists or "
                                 "can be made") from None
    if config.cache_dir is not None and Path(config.cache_dir).exists() and not Path(config.cache_dir).is_dir():
        raise InputError("the cache path is a file, not a folder", path=config.cache_dir)
    if config.cache_dir is not None and config.save:
        try:  # before the first miss, not as a failed write on every one
            check_writable(config.cache_dir)
        except OutputPathError as exc:
            reason = exc.problem.removeprefix("cannot write here ")
            raise InputError(f"the cache folder cannot be written {reason}", path=config.cache_dir,
                             fix=f"{exc.fix}; `tba serve --no-save` serves a read-only cache folder (answers to "
                             "misses are then kept in memory only)") from None
    cache = ResponseCache(config.cache_dir, save=config.save,
                          simulated_into_main=config.compat.cache_simulated_responses)
    try:
        simulator = make_simulator(config.simulator, config.simulator_options)
    except (ValueError, OSError) as exc:
        raise InputError(f"cannot start the {config.simulator} simulator: {exc}", field="simulator") from None
    return VirtualServer(cache, simulator, catalog)


class _Reply(Response):
    """A Response whose header lines come ready-made: they depend on the status, the source and the body's
    length only, so a few dozen sets serve every request (Starlette builds and encodes them each time)."""

    _headers: dict[tuple[int, str, int], list[tuple[bytes, bytes]]] = {}

    def __init__(self, outcome: Outcome) -> None:
        self.status_code = outcome.status
        self.body = outcome.body
        self.background = None
        shape = (outcome.status, outcome.source, len(outcome.body))
        headers = self._headers.get(shape)
        if headers is None:
            if len(self._headers) >= 10000:
                self._headers.clear()
            headers = self._headers[shape] = Response(outcome.body, status_code=outcome.status,
                                                      media_type="application/json",
                                                      headers={SOURCE_HEADER: outcome.source}).raw_headers
        self.raw_headers = list(headers)  # a copy: whatever adds a header to this reply adds it here only


def _respond(outcome: Outcome) -> Response:
    return _Reply(outcome)


def _connections(app: FastAPI) -> dict | None:
    """The connection guard's counts (server/limits.py), when the app runs behind it."""
    stats = getattr(app.state, "connections", None)
    return stats.snapshot() if stats is not None else None


def create_app(server: VirtualServer, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="toolbench-adapter virtual API server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.virtual = server

    @app.post(S.VIRTUAL_PATH)
    async def virtual(request: Request) -> Response:
        try:
            body = await read_body_capped(request, max_body_bytes)
        except ClientDisconnect:  # nobody to answer: no traceback either
            return Response(status_code=400)
        if body is None:
            outcome = _bad(413, f"body larger than {max_body_bytes} bytes")
            server.stats.record(outcome.source, 0.0)
            return _respond(outcome)
        # a hit on a file already parsed is answered here, from memory (a thread-pool hop costs as much as the
        # rest of the request); the rest may read the disk or call a model: off the event loop
        outcome = server.answer_hit(body)
        if outcome is None:
            outcome = await run_in_threadpool(server.handle, body)
        return _respond(outcome)

    @app.get("/health")
    def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "simulator": server.simulator.name,
                             "simulator_endpoint": server.simulator_endpoint, "cache_files": server.cache.file_count,
                             "cache_dir": str(server.cache.root) if server.cache.root else None,
                             "save": server.cache.save, "save_failures": server.cache.save_failures,
                             "last_save_error": server.cache.last_save_error, "catalog_apis": len(server.catalog),
                             "connections": _connections(app)})

    @app.get("/stats")
    async def stats() -> JSONResponse:  # on the loop, as the hit path's counters are
        return JSONResponse(server.stats.snapshot())

    return app
