"""hf backend with the real SmolLM2-135M-Instruct on a tiny token budget (8-16 tokens per generation)."""

from __future__ import annotations

import pytest

from runners.models import BACKENDS, local_model
from runners.models.base import ModelRequest
from runners.models.chat_adapter import BackendChatClient
from runners.models.hf import HFBackend, cut_at_stop
from toolbench_adapter.errors import InputError

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "List three colours of the rainbow, one per line."}]


@pytest.fixture(scope="module")
def backend() -> HFBackend:
    backend = BACKENDS.get("hf")()
    backend.preflight()  # converts into the cache on the very first run, then loads from it
    return backend


def test_cut_at_stop_takes_the_earliest_stop():
    assert cut_at_stop("a\nObservation: b</s>", ["</s>", "\nObservation:"]) == ("a", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)


def test_real_generation_counts_tokens(backend):
    completion = backend.complete(ModelRequest(messages=QUESTION, max_tokens=8))
    assert completion.error is None
    assert completion.text.strip()
    tokenizer = backend.tokenizer
    prompt = tokenizer.apply_chat_template(QUESTION, tokenize=False, add_generation_prompt=True)
    assert completion.prompt_tokens == len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert 1 <= completion.completion_tokens <= 8
    assert completion.finish_reason in {"stop", "length"}
    assert completion.latency_s > 0
    # greedy: the same request gives the same text
    assert backend.complete(ModelRequest(messages=QUESTION, max_tokens=8)).text == completion.text


def test_stop_strings_end_generation_and_are_cut_off(backend):
    full = backend.complete(ModelRequest(messages=QUESTION, max_tokens=16))
    assert full.finish_reason == "length" and full.completion_tokens == 16
    # a stop string taken from the middle of the greedy output: generation must end there and drop it
    words = full.text.split()
    stop = words[len(words) // 2]
    cut = backend.complete(ModelRequest(messages=QUESTION, max_tokens=16, stop=[stop]))
    assert cut.text == full.text[: full.text.find(stop)]
    assert stop not in cut.text
    assert cut.finish_reason == "stop"
    assert cut.completion_tokens < full.completion_tokens


def test_prefill_is_in_the_prompt_and_in_front_of_the_output(backend):
    request = ModelRequest(messages=QUESTION, max_tokens=8, extra={"prefill": "Thought: "})
    assert backend.prompt_text(request).endswith("<|im_start|>assistant\nThought: ")
    completion = backend.complete(request)
    assert completion.text.startswith("Thought: ") and len(completion.text) > len("Thought: ")


def test_a_raw_prompt_is_used_as_given(backend):
    prompt = "System: You are AutoGPT.\nUser: \nWhat is 2+2?\nBegin!\n\nAssistant:\n"
    completion = backend.complete(ModelRequest(prompt=prompt, max_tokens=8, stop=["</s>"]))
    assert completion.error is None
    assert completion.prompt_tokens == len(backend.tokenizer(prompt)["input_ids"])
    assert "<|im_start|>" not in backend.prompt_text(ModelRequest(prompt=prompt))


def test_second_load_comes_from_the_converted_cache(backend):
    folder = local_model.default_cache_folder()
    assert backend.source.folder == folder and backend.source.gguf_file is None
    assert local_model.is_converted(folder)
    assert not list(folder.glob("*.gguf"))
    # a fresh load straight from the cache (not the process-wide copy) gives the same greedy output
    model, tokenizer = local_model._load(local_model.ModelSource(folder), "float32")
    assert model is not backend._loaded()[0]
    assert "quantization_config" not in model.config.to_dict()
    prompt = tokenizer.apply_chat_template(QUESTION, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**ids, max_new_tokens=8, min_new_tokens=1, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    text = tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert text == backend.complete(ModelRequest(messages=QUESTION, max_tokens=8)).text


def test_chat_client_adapter_over_hf_is_text_only(backend):
    client = BackendChatClient(backend)
    assert client.supports_tools is False
    assert client.name == "hf:SmolLM2-135M-Instruct (local)"
    message = client.chat(QUESTION, tools=[{"type": "function", "function": {"name": "f"}}], max_tokens=8)
    assert message["role"] == "assistant" and message["content"] and "tool_calls" not in message


def test_model_argument_must_be_a_local_folder(tmp_path):
    with pytest.raises(InputError, match="not a local model folder"):
        HFBackend(model=str(tmp_path / "missing"))
    with pytest.raises(InputError, match="never downloaded"):
        HFBackend(model="HuggingFaceTB/SmolLM2-360M-Instruct")


def test_conversion_writes_a_complete_folder_atomically(tmp_path, monkeypatch, backend):
    """The save path of the conversion, on a tiny random model (the real GGUF read takes ~30 s)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=backend.tokenizer.vocab_size + 20, hidden_size=16,
                                        intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        num_key_value_heads=2))
    tiny.hf_quantizer = object()  # what a GGUF load leaves behind; it blocks save_pretrained
    tiny.config.quantization_config = {"quant_method": "gguf"}
    monkeypatch.setattr(local_model, "_load", lambda source, dtype: (tiny, backend.tokenizer))
    target = tmp_path / "models" / "converted"
    seconds = local_model.convert_default_model(target)
    assert seconds >= 0
    assert local_model.is_converted(target)
    assert (target / "tokenizer.json").is_file()
    assert "quantization_config" not in (target / "config.json").read_text()
    assert [p.name for p in target.parent.iterdir()] == ["converted"]  # no scratch folder left

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tiny, "save_pretrained", broken_save)
    with pytest.raises(OSError, match="disk full"):
        local_model.convert_default_model(tmp_path / "models" / "second")
    assert [p.name for p in target.parent.iterdir()] == ["converted"]  # nothing half-written


@pytest.mark.parametrize("value, said", [("abc", "is not a whole number"), ("0", "must be at least 1"),
                                         ("99999", "must be at most 1024"), ("2.5", "is not a whole number")])
def test_a_bad_thread_count_in_the_environment_is_an_input_error_naming_it(monkeypatch, value, said):
    from runners.models.hf import default_threads

    monkeypatch.setenv("TBA_HF_THREADS", value)
    with pytest.raises(InputError) as caught:
        default_threads()
    assert caught.value.field == "TBA_HF_THREADS" and said in str(caught.value) and "unset it" in str(caught.value)


def test_the_thread_count_comes_from_the_environment_or_half_the_cores(monkeypatch):
    import os

    from runners.models.hf import default_threads

    monkeypatch.setenv("TBA_HF_THREADS", " 3 ")
    assert default_threads() == 3
    monkeypatch.delenv("TBA_HF_THREADS")
    assert default_threads() == max(1, (os.cpu_count() or 2) // 2)
