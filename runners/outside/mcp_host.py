"""Query sessions over MCP, on the official MCP Python SDK (``mcp`` 2.x, its lowlevel ``Server``: the tools are
the query's functions with their own JSON schemas, which MCPServer's function-derived tools cannot carry).

One HTTP server per process serves every open session at its own path, ``/q/{token}/mcp`` (streamable HTTP,
stateless, JSON replies): the token is random, so an agent reaches its own query's world and no other; a path
that names no open session is answered 404. ``serve_stdio`` serves one session over stdin/stdout.

What the SDK refuses (a body that is not JSON, not JSON-RPC, a tools/call without a name ...) it answers with
an HTTP or JSON-RPC error; each such answer on a session's path is noted in the session (its query's record
counts them) before it goes out."""

from __future__ import annotations

import atexit
import contextlib
import json
import secrets
import threading
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from .session import QuerySession, Reply

SERVER_NAME = "toolbench-adapter"
STATUS_META = "toolbench_adapter/status"  # a call result's _meta key: the step's status code (protocol/env.py)
SCOPE_KEY = "toolbench_adapter.session"  # where the ASGI app leaves the session for the handlers
ERROR_BODY_LIMIT = 64 * 1024  # an error reply is read for its JSON-RPC error this far, no further


def _session_of(ctx: ServerRequestContext) -> QuerySession:
    request = ctx.request
    session = request.scope.get(SCOPE_KEY) if request is not None else None
    if session is None:  # stdio: the one session of the process
        session = ctx.lifespan_context.get("session") if isinstance(ctx.lifespan_context, dict) else None
    if session is None:
        raise RuntimeError("no query session for this request")
    return session


def input_schema(parameters: dict | None) -> dict:
    """A function's parameters as its MCP input schema: as the run sends them, less the empty names upstream puts
    first in "required" and "optional" (the current flavour's ["", ...]): they name no property, and a client
    that checks required arguments (the OpenAI Agents SDK does) would refuse every call for lack of ""."""
    schema = dict(parameters or {"type": "object", "properties": {}})
    for key in ("required", "optional"):
        if isinstance(schema.get(key), list):
            schema[key] = [name for name in schema[key] if name != ""]
    return schema


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    session = _session_of(ctx)
    return types.ListToolsResult(tools=[
        types.Tool(name=f["name"], description=f.get("description"), input_schema=input_schema(f.get("parameters")))
        for f in session.tools()])


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    session = _session_of(ctx)
    # the step asks the tool server over HTTP (blocking): off the event loop, so other sessions go on
    reply: Reply = await anyio.to_thread.run_sync(session.call, params.name, params.arguments)
    meta = {STATUS_META: reply.status} if reply.status is not None else {"toolbench_adapter/refused": reply.refused}
    return types.CallToolResult(content=[types.TextContent(type="text", text=reply.text)], is_error=reply.is_error,
                                _meta=meta)


def make_server(lifespan=None) -> Server:
    options: dict[str, Any] = {"lifespan": lifespan} if lifespan is not None else {}
    return Server(SERVER_NAME, version="1", on_list_tools=list_tools, on_call_tool=call_tool, **options)


class SessionApp:
    """The ASGI app: ``/q/{token}/mcp`` -> that session's MCP endpoint; the lifespan starts the SDK's manager."""

    def __init__(self) -> None:
        self.sessions: dict[str, QuerySession] = {}
        self.manager = StreamableHTTPSessionManager(
            make_server(), json_response=True, stateless=True,
            # loopback only: DNS rebinding protection with the loopback hosts allowed
            security_settings=TransportSecuritySettings(allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                                        allowed_origins=["http://127.0.0.1:*", "http://localhost:*"]))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        session = self._session_for(scope.get("path", ""))
        if session is None:
            await _json(send, 404, {"error": f"no open query session at {scope.get('path', '')!r}",
                                    "fix": "use the TBA_MCP_URL this query was given (each query has its own)"})
            return
        scope = {**scope, SCOPE_KEY: session}
        await self.manager.handle_request(scope, receive, _noting_errors(send, session, scope))

    def _session_for(self, path: str) -> QuerySession | None:
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "q" and parts[2] == "mcp":
            return self.sessions.get(parts[1])
        return None

    async def _lifespan(self, receive, send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.manager.run():
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                pass
        await send({"type": "lifespan.shutdown.complete"})


def _noting_errors(send, session: QuerySession, scope: dict):
    """``send`` that notes in the session each reply that refuses the request: an HTTP status of 400 or more, or
    a JSON-RPC error in a JSON body (the body read up to ERROR_BODY_LIMIT)."""
    state: dict[str, Any] = {"status": 200, "body": b""}

    async def wrapped(message) -> None:
        if message["type"] == "http.response.start":
            state["status"] = message.get("status", 200)
        elif message["type"] == "http.response.body":
            if len(state["body"]) < ERROR_BODY_LIMIT:
                state["body"] += message.get("body", b"")[:ERROR_BODY_LIMIT]
            if not message.get("more_body"):
                _note(session, scope, state["status"], state["body"])
        await send(message)

    return wrapped


def _note(session: QuerySession, scope: dict, status: int, body: bytes) -> None:
    error = None
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        data = json.loads(body)
        items = data if isinstance(data, list) else [data]
        errors = [item.get("error") for item in items if isinstance(item, dict) and item.get("error")]
        error = errors[0] if errors else None
    if status < 400 and error is None:
        return
    detail: dict[str, Any] = {"http_status": status, "method": scope.get("method")}
    if isinstance(error, dict):
        detail.update(code=error.get("code"), message=str(error.get("message", ""))[:500])
    elif error is not None:
        detail["message"] = str(error)[:500]
    session.note_protocol_error(detail)


async def _json(send, status: int, body: dict) -> None:
    data = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class McpHost:
    """The process's MCP server (started on first use, on a free loopback port): ``open(session)`` gives the
    session's URL, ``close(url)`` takes it down (its path answers 404 from then on)."""

    _shared: McpHost | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        from toolbench_adapter.server.runner import EmbeddedServer

        self.app = SessionApp()
        self.server = EmbeddedServer(self.app, lifespan="on").start()
        self.url = self.server.url

    @classmethod
    def shared(cls) -> McpHost:
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
                atexit.register(cls._shared.server.stop)
            return cls._shared

    def open(self, session: QuerySession, label: str = "") -> str:
        token = f"{label}-{secrets.token_hex(8)}" if label else secrets.token_hex(8)
        self.app.sessions[token] = session
        return f"{self.url}/q/{token}/mcp"

    def close(self, url: str) -> None:
        token = url.rstrip("/").split("/")[-2]
        self.app.sessions.pop(token, None)


def serve_stdio(session: QuerySession) -> None:
    """One session over the process's stdin and stdout until the client closes stdin (the MCP stdio transport)."""
    from mcp.server.stdio import stdio_server

    @contextlib.asynccontextmanager
    async def lifespan(_server):
        yield {"session": session}

    server = make_server(lifespan)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
