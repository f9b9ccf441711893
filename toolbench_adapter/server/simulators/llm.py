"""``llm``: any OpenAI-compatible chat model plays the API, with this project's own prompt.

The answer must be a JSON object with "error" (a string) and "response" keys; anything else is sampled again
(endpoint faults are retried by the transport; one that outlives them ends the call at once), and after the
last attempt the call gets upstream's "Failed to generate fake response" answer (not cached).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ...protocol.env import FAKE_RESPONSE_FAILED
from .base import SimulationRequest, SimulationResult, SimulatorOptions
from .chat import EndpointFailed, SimulatorChat, maker_of, strip_fences

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """\
You stand in for a web API. You are given the API's documentation, sometimes a few real calls with the \
answers the API gave, and one new request. Reply with the answer this API would give to the new request.

Reply with a single JSON object and nothing around it:
{"error": "", "response": <the API's answer>}

- "response" is what the API returns: an object, a list or a string, shaped like the real answers or the \
documented response fields, filled with concrete values that fit the request. Keep it under about 300 words.
- "error" stays an empty string. When the request lacks a required parameter or has a value the API would \
reject, answer the way the API would (for example {"message": "..."}) inside "response".
- Follow the real answers where they exist. Do not mention that the answer is simulated.
"""

EXAMPLES_MAX_CHARS = 2048
DEFAULT_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 1024


def user_message(request: SimulationRequest) -> str:
    doc = request.doc
    documentation = {
        "tool": doc.tool_name if doc else request.key.tool,
        "tool_description": doc.tool_description if doc else "",
        "api": doc.api_name if doc else request.key.api,
        "api_description": doc.api_description if doc else "",
        "method": doc.method if doc else "",
        "required_parameters": doc.required_parameters if doc else [],
        "optional_parameters": doc.optional_parameters if doc else [],
        "response_fields": doc.template_response if doc else None,
    }
    examples = [{"request": key, "answer": answer} for key, answer in request.examples]
    examples_text = json.dumps(examples, ensure_ascii=False)
    while len(examples) > 1 and len(examples_text) > EXAMPLES_MAX_CHARS:
        examples.pop()
        examples_text = json.dumps(examples, ensure_ascii=False)
    return (f"Documentation:\n{json.dumps(documentation, ensure_ascii=False)}\n\n"
            f"Real calls:\n{examples_text[:EXAMPLES_MAX_CHARS] if examples else 'none'}\n\n"
            f"Request:\n{json.dumps(request.tool_input, ensure_ascii=False)}\n")


def validate_answer(text: str) -> dict | None:
    try:
        answer = json.loads(strip_fences(text))
    except ValueError:
        return None
    if not isinstance(answer, dict) or "response" not in answer or not isinstance(answer.get("error"), str):
        return None
    return {"error": answer["error"], "response": answer["response"]}


class LlmSimulator:
    name = "llm"

    def __init__(self, options: SimulatorOptions | None = None):
        self.options = options or SimulatorOptions()
        if not self.options.model:
            raise ValueError("the llm simulator needs a model name (--llm-model)")
        self.chat = SimulatorChat(self.options)
        self.maker = maker_of(self.name, self.options)  # what its answers' marks and /stats name

    def simulate(self, request: SimulationRequest) -> SimulationResult:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user_message(request)}]
        params: dict[str, Any] = {
            "temperature": DEFAULT_TEMPERATURE if self.options.temperature is None else self.options.temperature,
            "max_tokens": self.options.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if self.options.json_mode:
            params["response_format"] = {"type": "json_object"}
        for attempt in range(1, self.options.attempts + 1):
            try:
                answer = validate_answer(self.chat.complete(messages, **params))
            except EndpointFailed as exc:  # already retried by the transport: asking again fails the same way
                log.warning("llm simulator attempt %d: the model endpoint failed: %s", attempt, exc)
                break
            except ValueError as exc:  # a reply that is not a chat completion: sample again
                log.warning("llm simulator attempt %d failed: %s", attempt, exc)
                continue
            if answer is not None:
                return SimulationResult(answer)
            log.warning("llm simulator attempt %d: answer is not {error, response} JSON", attempt)
        return SimulationResult({"error": FAKE_RESPONSE_FAILED, "response": ""}, cacheable=False)
