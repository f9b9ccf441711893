"""``tba serve``: the embedded virtual API server (same /virtual protocol as StableToolBench's)."""

from __future__ import annotations

import argparse
import os
import sys

from toolbench_adapter.compat import Compat
from toolbench_adapter.errors import InputError
from toolbench_adapter.protocol.server import DEFAULT_PORT, VIRTUAL_PATH
from toolbench_adapter.server.limits import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_TIMEOUT_S,
    KEEP_ALIVE_S,
    ConnectionLimits,
)

from ..ranges import BYTES, CONNECTIONS, PORT, SECONDS
from ._common import add_simulator_flags

HELP = """\
Serve POST /virtual (StableToolBench's request format) from a response cache in the upstream layout
({category}/{tool}_for_{category}/{api}.json); a cache miss goes to a simulator. Also GET /health and
GET /stats (hits, misses, latency percentiles by source). Binds to 127.0.0.1 unless --host says otherwise.
Simulated entries are marked in <cache>/_simulated/ (same layout); see toolbench_adapter/server/cache.py.
Several servers may share one --cache folder (e.g. one per node): each write merges with what the others saved.

Connection limits keep /health answering when clients misbehave (half-open sockets, a request sent a byte at
a time): a request's head, then its body, must arrive within --read-timeout; past --max-connections the
connection idle longest is closed (503 when all are busy); the cap is kept below the open-file limit, which
is raised to its hard limit at start. /health shows the counts (connections)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run the virtual API server (cache + simulator)", description=HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=PORT, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT}, as upstream); 0 picks a free port and prints the URL")
    parser.add_argument("--cache", default=None, metavar="DIR",
                        help="response cache folder (e.g. StableToolBench's tool_response_cache, or one built by "
                        "`tba cache build`). Default: none, answers are kept in memory only")
    parser.add_argument("--tools", default=None, metavar="DIR",
                        help="tool environment (toolenv/tools/{Category}/{tool}.json): tool and api docs for simulators")
    parser.add_argument("--stb-root", default=None, metavar="DIR",
                        help="StableToolBench checkout (solvable_queries/): api docs and template_response for the "
                        "schema simulator, and validation of category/tool/api on a cache miss. Default: "
                        "$TBA_STB_ROOT; without either, requests are not validated")
    add_simulator_flags(parser)  # tba run's (its embedded server's) and tba doctor's too: one definition
    parser.add_argument("--save", action=argparse.BooleanOptionalAction, default=True,
                        help="write simulated answers to the cache folder (default: on)")
    parser.add_argument("--compat", choices=["stb", "strict"], default="stb",
                        help="stb: simulated answers also go into the main cache files, as upstream does (still "
                        "marked in _simulated/); strict: only into _simulated/")
    parser.add_argument("--max-body-bytes", type=BYTES, default=None, help="largest request body accepted (default 1 MiB)")
    parser.add_argument("--max-connections", type=CONNECTIONS, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"open connections at most (default {DEFAULT_MAX_CONNECTIONS}, lowered to fit the "
                        "open-file limit); one more closes the one idle longest, or is answered 503 when all are busy")
    parser.add_argument("--read-timeout", type=SECONDS, default=DEFAULT_READ_TIMEOUT_S, metavar="S",
                        help=f"seconds a client has to send a request's head, then its body (default "
                        f"{DEFAULT_READ_TIMEOUT_S:g}); slower connections are closed. Idle keep-alive connections "
                        f"close after {KEEP_ALIVE_S} s")
    parser.add_argument("--log-level", default="warning", help="uvicorn log level (default warning)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench_adapter.server.app import DEFAULT_MAX_BODY_BYTES, ServerConfig, build_virtual_server, create_app
    from toolbench_adapter.server.runner import bind, serve_forever, url_of
    from toolbench_adapter.server.simulators import SimulatorOptions
    from toolbench_adapter.server.simulators.endpoint import check_endpoint

    try:
        limits = ConnectionLimits(max_connections=args.max_connections, read_timeout_s=args.read_timeout)
    except ValueError as exc:
        raise InputError(str(exc), field="--max-connections / --read-timeout",
                         fix="pass a positive number") from None
    options = SimulatorOptions.from_settings(args.llm_base_url, args.llm_model, args.llm_api_key_env,
                                             args.llm_temperature, args.mirror_system_prompt)
    config = ServerConfig(cache_dir=args.cache, tools_dir=args.tools,
                          stb_root=args.stb_root or os.environ.get("TBA_STB_ROOT") or None,
                          simulator=args.simulator or "schema", simulator_options=options, save=args.save,
                          compat=Compat.from_mode(args.compat),
                          max_body_bytes=args.max_body_bytes or DEFAULT_MAX_BODY_BYTES)
    # llm / mirrorapi: the endpoint answers and lists the model (one GET /models), or exit 2 before binding;
    # /health then says what was checked, and a run against this server records it
    endpoint = check_endpoint(config.simulator, options, key_env=args.llm_api_key_env)
    server = build_virtual_server(config)
    server.simulator_endpoint = endpoint.facts() if endpoint is not None else None
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise InputError(f"cannot bind {args.host}:{args.port} ({exc.strerror})", field="--port",
                         fix="choose another port, or --port 0 for a free one") from None
    print(f"serving {url_of(sock)}{VIRTUAL_PATH} (simulator {server.simulator.name}, "
          f"{server.cache.file_count} cache files, {len(server.catalog)} known apis)", flush=True)
    serve_forever(create_app(server, config.max_body_bytes), sock, args.log_level, limits)
    print("stopped", file=sys.stderr)
    return 0
