"""``hf``: transformers on this machine, greedy, with stop strings.

A text prompt is used raw; chat messages go through the tokenizer's chat template. Either way
``request.extra["prefill"]`` is appended to the prompt and put back in front of the output, so a parser
sees e.g. "Thought: ..." when the dialect primes the model with "Thought: ". One model per process,
one generate at a time (a lock): a run may call complete() from many threads.
"""

from __future__ import annotations

import os
import threading
import time

from toolbench_adapter.errors import InputError
from toolbench_adapter.net.limits import number_problem
from toolbench_adapter.protocol.react import HF_PROMPT_TOKEN_LIMIT

from ..failures import CONTEXT_LENGTH, MODEL_ENDPOINT
from . import constrain, local_model
from .base import OPTION_RANGES, Completion, ModelRequest, backend_option, reject_unknown_options


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (excluded) and whether one was found."""
    positions = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    if not positions:
        return text, False
    return text[: min(positions)], True


def _stop_criteria(tokenizer, prompt_length: int, stops: list[str]):
    """A StoppingCriteria that ends generation once a stop string shows up in the decoded continuation."""
    import torch
    from transformers import StoppingCriteria

    class StopOnStrings(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            done = [cut_at_stop(tokenizer.decode(row[prompt_length:], skip_special_tokens=True), stops)[1]
                    for row in input_ids]
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StopOnStrings()


def default_threads() -> int:
    """$TBA_HF_THREADS, else half the cores: torch's own default (all cores) slows down by an order of
    magnitude when the virtual server, judge or other jobs share the machine (measured: 30 s vs 2.7 s for
    16 tokens on 2 busy cores). The variable is held to the ``threads`` option's range: an InputError (exit 2)
    naming it otherwise."""
    text = os.environ.get("TBA_HF_THREADS", "").strip()
    if not text:
        return max(1, (os.cpu_count() or 2) // 2)
    try:
        value = int(text)
    except ValueError:
        value = text  # number_problem names it as "not a whole number"
    problem = number_problem("TBA_HF_THREADS", value, whole=True, **OPTION_RANGES["threads"])
    if problem is not None:
        raise InputError(f"environment variable {problem}", field="TBA_HF_THREADS",
                         fix="set TBA_HF_THREADS to a whole number of torch threads (e.g. 2), or unset it "
                             "for half the cores")
    return value


def chat_safe(messages: list[dict]) -> list[dict]:
    """Copies a chat template can render: None content (assistant turns that only called) becomes ""."""
    return [{**m, "content": m.get("content") or ""} for m in messages]


def context_positions(model) -> int | None:
    """How many tokens the model can attend to (prompt and output together), from its config; None: unknown."""
    value = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return value if isinstance(value, int) and value > 0 else None


# one model per process, so one generate at a time across every HFBackend instance
_GENERATE_LOCK = threading.Lock()


class HFBackend:
    name = "hf"
    accepts_messages = True
    supports_tools = False  # text only: tools reach the model through the dialect's prompt

    def __init__(
        self,
        *,
        model: str | None = None,
        dtype: str = "float32",
        prompt_token_limit: int = HF_PROMPT_TOKEN_LIMIT,
        threads: int | None = None,
        base_url: str | None = None,  # accepted so every backend takes the same keywords; not used
        api_key: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        **unknown,
    ):
        reject_unknown_options(type(self), unknown)
        self.source = local_model.resolve(model)
        self.model = self.source.label
        self.dtype = dtype
        self.prompt_token_limit = backend_option("prompt_token_limit", prompt_token_limit, int)
        self._lock = _GENERATE_LOCK
        self.threads = backend_option("threads", threads, int) or default_threads()

    def _loaded(self):
        loaded = local_model.load(self.source, self.dtype)
        import torch

        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)  # process-wide, like the model itself
        return loaded

    def constraint_support(self, dialect: str) -> str | None:
        """None: --constrain schema works here (an xgrammar logits processor); else why not."""
        return constrain.hf_support()

    def preflight(self) -> None:
        self._loaded()  # converts/loads now, so a broken model fails before any query

    @property
    def tokenizer(self):
        return self._loaded()[1]

    def prompt_text(self, request: ModelRequest) -> str:
        prefill = request.extra.get("prefill", "")
        if request.messages is not None:
            rendered = self.tokenizer.apply_chat_template(chat_safe(request.messages), tokenize=False,
                                                          add_generation_prompt=True)
            return rendered + prefill
        if request.prompt is None:
            raise ValueError("the request has neither a prompt nor messages")
        return request.prompt + prefill

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def complete(self, request: ModelRequest) -> Completion:
        start = time.perf_counter()
        try:
            model, tokenizer = self._loaded()
            # the whole step under the lock: fast tokenizers are not safe to share between threads either
            with self._lock:
                prompt = self.prompt_text(request)
                # the chat template already holds the special tokens; a raw prompt gets the tokenizer's own
                encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=request.messages is None)
                input_ids = encoded["input_ids"][:, -self.prompt_token_limit:]  # left-truncate, as upstream
                prompt_length = input_ids.shape[1]
                positions = context_positions(model)
                if positions is not None and prompt_length >= positions:  # what vLLM refuses with a 400
                    return Completion(
                        error=f"{self.name}: the prompt ({prompt_length} tokens after truncation to "
                        f"prompt_token_limit {self.prompt_token_limit}) is longer than the model's context "
                        f"({positions} positions)", error_kind=CONTEXT_LENGTH, prompt_tokens=prompt_length,
                        latency_s=time.perf_counter() - start)
                # generation stops at the model's last position (beyond it a model fails or produces noise)
                max_new_tokens = min(request.max_tokens, positions - prompt_length) if positions else request.max_tokens
                stops = list(request.stop)
                output = model.generate(
                    input_ids=input_ids,
                    attention_mask=encoded["attention_mask"][:, -self.prompt_token_limit:],
                    max_new_tokens=max_new_tokens,
                    min_new_tokens=1,  # upstream force_generate: no empty answer at step 0
                    do_sample=False,
                    stopping_criteria=[_stop_criteria(tokenizer, prompt_length, stops)] if stops else None,
                    # --constrain schema: an xgrammar logits processor for the reply's grammar (constrain.py)
                    logits_processor=constrain.hf_logits_processors(request.extra.get("constraint"), model, tokenizer),
                    pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
                )
                generated = output[0, prompt_length:]
                decoded = tokenizer.decode(generated, skip_special_tokens=True)
        except Exception as exc:  # a model-side failure is recorded by the run, never raised into it
            return Completion(error=f"{self.name}: {type(exc).__name__}: {exc}", error_kind=MODEL_ENDPOINT,
                              latency_s=time.perf_counter() - start)
        text, stopped = cut_at_stop(decoded, stops)
        ended = len(generated) > 0 and int(generated[-1]) == tokenizer.eos_token_id
        finish = "stop" if stopped or ended or len(generated) < max_new_tokens else "length"
        return Completion(
            text=request.extra.get("prefill", "") + text,
            prompt_tokens=prompt_length,
            completion_tokens=len(generated),
            latency_s=time.perf_counter() - start,
            finish_reason=finish,
        )
