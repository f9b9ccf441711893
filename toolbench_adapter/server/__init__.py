"""The /virtual protocol: a client, and an embedded server (FastAPI) with its cache and simulators.

The client is importable without the web framework; ``server.app`` pulls in FastAPI.
"""

from .client import ClientConfig, ReplyKind, ServerClient, ServerReply

__all__ = ["ClientConfig", "ReplyKind", "ServerClient", "ServerReply"]
