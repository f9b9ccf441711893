"""An outside agent that speaks plain MCP over HTTP (JSON-RPC POSTs with urllib, no SDK), for the tests.

It lists the tools, calls the first function with its example values, then Finish with an answer naming the
query. TBA_TEST_LOG (a folder): each query's listed tool names and replies go to {group}_{qid}.json there.
TBA_TEST_MODE: "crash" exits 1 after listing, "no_finish" exits 0 without Finish, "flood" calls until refused,
"unknown" calls a function the query lacks first, "sleep" sleeps past any timeout, "garbage" posts malformed
requests first."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request

URL = os.environ["TBA_MCP_URL"]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
_ids = iter(range(1, 10_000))


def post(payload, raw: bytes | None = None) -> tuple[int, dict | None]:
    data = raw if raw is not None else json.dumps(payload).encode()
    request = urllib.request.Request(URL, data=data, headers=HEADERS, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
            return reply.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body)
        except ValueError:
            return exc.code, None


def rpc(method: str, params: dict | None = None) -> dict:
    status, body = post({"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}})
    if status != 200 or body is None or "error" in body:
        raise SystemExit(f"{method}: HTTP {status}: {body}")
    return body["result"]


def main() -> int:
    mode = os.environ.get("TBA_TEST_MODE", "")
    if mode == "sleep":
        time.sleep(600)
    if mode == "garbage":
        post(None, raw=b"{not json")
        post({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"arguments": {}}})
    rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "plain-http-agent", "version": "1"}})
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = rpc("tools/list")["tools"]
    names = [t["name"] for t in tools]
    log = {"tools": names, "schemas": {t["name"]: t["inputSchema"] for t in tools}, "replies": []}
    if mode == "crash":
        print("plain-http-agent: listed the tools, now crashing")  # stdout: kept in the record too
        print("plain-http-agent: crashing on purpose", file=sys.stderr)
        return 1
    first = next(t for t in tools if t["name"] != "Finish")
    if mode == "unknown":
        log["replies"].append(rpc("tools/call", {"name": "no_such_function_here", "arguments": {}}))
    arguments = {k: v.get("example_value", "") for k, v in first["inputSchema"].get("properties", {}).items()
                 if k in first["inputSchema"].get("required", [])}
    count = 1000 if mode == "flood" else 1
    for _ in range(count):
        result = rpc("tools/call", {"name": first["name"], "arguments": arguments})
        log["replies"].append(result)
        if result.get("_meta", {}).get("toolbench_adapter/refused"):
            break
    if mode not in ("no_finish", "flood"):
        answer = f"answer to query {os.environ['TBA_QUERY_ID']}: {os.environ['TBA_QUERY'][:40]}"
        log["replies"].append(rpc("tools/call", {"name": "Finish", "arguments": {"return_type": "give_answer",
                                                                                "final_answer": answer}}))
    folder = os.environ.get("TBA_TEST_LOG")
    if folder:
        path = os.path.join(folder, f"{os.environ['TBA_GROUP']}_{os.environ['TBA_QUERY_ID']}.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(log, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
