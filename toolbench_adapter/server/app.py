"""The FastAPI app around VirtualServer: POST /virtual, GET /health, GET /stats."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..compat import STB, Compat
from ..errors import InputError
from ..protocol import server as S
from .cache import ResponseCache
from .catalog import ApiCatalog
from .client import SOURCE_HEADER
from .handler import Outcome, VirtualServer, _bad
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
    if config.cache_dir is not None and Path(config.cache_dir).exists() and not Path(config.cache_dir).is_dir():
        raise InputError("the cache path is a file, not a folder", path=config.cache_dir)
    cache = ResponseCache(config.cache_dir, save=config.save,
                          simulated_into_main=config.compat.cache_simulated_responses)
    try:
        simulator = make_simulator(config.simulator, config.simulator_options)
    except (ValueError, OSError) as exc:
        raise InputError(f"cannot start the {config.simulator} simulator: {exc}", field="simulator") from None
    return VirtualServer(cache, simulator, catalog)


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is larger than ``limit`` (checked while reading, not after)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _respond(outcome: Outcome) -> Response:
    return Response(json.dumps(outcome.answer, ensure_ascii=False), status_code=outcome.status,
                    media_type="application/json", headers={SOURCE_HEADER: outcome.source})


def create_app(server: VirtualServer, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="toolbench-adapter virtual API server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.virtual = server

    @app.post(S.VIRTUAL_PATH)
    async def virtual(request: Request) -> Response:
        body = await _read_body(request, max_body_bytes)
        if body is None:
            outcome = _bad(413, f"body larger than {max_body_bytes} bytes")
            server.stats.record(outcome.source, 0.0)
            return _respond(outcome)
        # cache reads may hit the disk and simulators call models: keep them off the event loop
        return _respond(await run_in_threadpool(server.handle, body))

    @app.get("/health")
    def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "simulator": server.simulator.name, "cache_files": server.cache.file_count,
                             "cache_dir": str(server.cache.root) if server.cache.root else None,
                             "save": server.cache.save, "catalog_apis": len(server.catalog)})

    @app.get("/stats")
    def stats() -> JSONResponse:
        return JSONResponse(server.stats.snapshot())

    return app
