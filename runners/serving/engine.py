"""A serving engine (vLLM, or the project's own OpenAI-compatible server) as a managed subprocess.

``ManagedEngine`` starts the command in its own process group on a free loopback port, waits until
GET /v1/models answers, and always stops the whole group (SIGTERM, then SIGKILL) and checks that the port
is free again. The engine also gets SIGTERM from the kernel if this process dies without cleaning up
(PR_SET_PDEATHSIG), so a killed run does not leave an engine holding the port and the cores.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VLLM_PYTHON = PROJECT_ROOT / ".venv-vllm" / "bin" / "python"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class EngineError(RuntimeError):
    """The engine could not be started, or would not stop."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port (a connection attempt is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) != 0


def _die_with_parent() -> None:
    """preexec_fn: ask the kernel to SIGTERM the engine when the process that started it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class EngineSpec:
    """What to start: the command (with {port} and {host} placeholders), the id it serves, a label."""

    label: str
    command: list[str]
    served_name: str
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = 300.0
    host: str = "127.0.0.1"

    def argv(self, port: int) -> list[str]:
        return [part.format(port=port, host=self.host) for part in self.command]


def vllm_spec(model_folder: str | Path, served_name: str = "SmolLM2-135M-Instruct", *,
              python: str | Path = DEFAULT_VLLM_PYTHON, max_model_len: int = 8192, dtype: str = "bfloat16",
              kv_cache_gib: int = 2, eager: bool = True, startup_timeout: float = 420.0,
              extra: list[str] | None = None) -> EngineSpec:
    """vLLM's OpenAI server (CPU build) on a local model folder. ``eager`` skips torch.compile: on 2 cores
    the start drops from ~200 s to ~65 s for ~25% slower generation, a good trade for one short run."""
    python = Path(python)
    if not python.exists():
        raise EngineError(f"no vLLM environment at {python.parent.parent}: run `make vllm` first")
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_folder),
               "--served-model-name", served_name, "--host", "{host}", "--port", "{port}",
               "--max-model-len", str(max_model_len), "--dtype", dtype,
               *(["--enforce-eager"] if eager else []), *(extra or [])]
    # loopback only: no usage stats, no hub, internal queues on 127.0.0.1
    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib), "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "VLLM_HOST_IP": "127.0.0.1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return EngineSpec(label=f"vLLM (CPU) serving {served_name}", command=command, served_name=served_name, env=env,
                      startup_timeout=startup_timeout)


def hf_server_spec(served_name: str = "SmolLM2-135M-Instruct", model: str | None = None,
                   startup_timeout: float = 180.0) -> EngineSpec:
    """The light path: the project's hf backend behind its own OpenAI-compatible server."""
    command = [sys.executable, "-m", "runners.cli", "serve-model", "--backend", "hf", "--host", "{host}",
               "--port", "{port}", "--served-name", served_name]
    if model:
        command += ["--model", model]
    return EngineSpec(label=f"tba serve-model (hf backend) serving {served_name}", command=command,
                      served_name=served_name, startup_timeout=startup_timeout)


def command_spec(command: str, served_name: str, startup_timeout: float = 600.0) -> EngineSpec:
    """Any engine started by a shell-like command line with {host} and {port} placeholders
    (SGLang, llama.cpp's server, ...); it must serve the OpenAI API under /v1."""
    if "{port}" not in command:
        raise EngineError(f"the engine command must contain {{port}} (and may contain {{host}}): {command!r}")
    return EngineSpec(label=f"{shlex.split(command)[0]} serving {served_name}", command=shlex.split(command),
                      served_name=served_name, startup_timeout=startup_timeout)


class ManagedEngine:
    """``with ManagedEngine(spec, log_path) as engine: engine.base_url`` -- stopped whatever happens."""

    def __init__(self, spec: EngineSpec, log_path: str | Path, port: int | None = None):
        self.spec = spec
        self.log_path = Path(log_path)
        self.port = port or free_port(spec.host)
        self.process: subprocess.Popen | None = None
        self.startup_seconds: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.spec.host}:{self.port}/v1"

    def start(self) -> ManagedEngine:
        if not port_is_free(self.port, self.spec.host):
            raise EngineError(f"port {self.port} is already in use")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.spec.argv(self.port), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **self.spec.env}, cwd=PROJECT_ROOT, start_new_session=True,
                preexec_fn=_die_with_parent)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, started: float) -> None:
        deadline = started + self.spec.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EngineError(f"{self.spec.label} exited with status {self.process.returncode} while starting; "
                                  f"last lines of {self.log_path}:\n{self.log_tail()}")
            with contextlib.suppress(requests.RequestException, ValueError):
                response = requests.get(f"{self.base_url}/models", timeout=2)
                if response.status_code == 200 and response.json().get("data"):
                    return
            time.sleep(0.5)
        raise EngineError(f"{self.spec.label} did not answer on {self.base_url} within {self.spec.startup_timeout:.0f} s;"
                          f" last lines of {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 20.0) -> None:
        """Stop the whole process group (vLLM forks an engine core) and wait until the port is free."""
        process, self.process = self.process, None
        if process is not None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
            # children may outlive the leader: the group gets SIGKILL either way
            _signal_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        deadline = time.monotonic() + 15
        while not port_is_free(self.port, self.spec.host):
            if time.monotonic() > deadline:
                raise EngineError(f"port {self.port} is still in use after stopping {self.spec.label}")
            time.sleep(0.2)

    def __enter__(self) -> ManagedEngine:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@contextlib.contextmanager
def signals_raise():
    """SIGTERM and SIGHUP raise SystemExit, so `finally` blocks (engine stop) run when make or CI kills us."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
