"""``mirrorapi``: a vLLM-served MirrorAPI model (HF stabletoolbench/MirrorAPI or MirrorAPI-Cache), asked in
upstream's request format (server/main_mirrorapi.py).

Upstream's system prompt (SFT_SYSTEM in server/system_prompts.py) is not shipped with this project: pass its
text as a file (--mirror-system-prompt FILE). Without it a short stand-in prompt of ours is used, and the
answers will not match the model's training distribution.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from toolbench_adapter.files.input_files import read_text

from ...protocol import server as S
from ...protocol.env import FAKE_RESPONSE_FAILED
from ...protocol.server import TOOLBENCH_KEY_HEADER
from .base import SimulationRequest, SimulationResult, SimulatorOptions
from .chat import EndpointFailed, SimulatorChat, maker_of, strip_fences

log = logging.getLogger(__name__)

STAND_IN_SYSTEM_PROMPT = (
    "You are an API server. Given an API's documentation and a request, answer as that API would, as a JSON "
    'object {"error": "", "response": ""}.'
)
_FALLBACK = re.compile(r'"error"\s*:\s*"(.*?)"\s*,\s*"response"\s*:\s*"(.*)', re.DOTALL)


def load_system_prompt(path: str | None) -> str:
    if not path:
        log.warning("mirrorapi simulator without --mirror-system-prompt: using a stand-in system prompt")
        return STAND_IN_SYSTEM_PROMPT
    return read_text(path, "prompt file", what="MirrorAPI system prompt (--mirror-system-prompt)")


def user_message(request: SimulationRequest) -> str:
    doc = request.doc
    api_doc = {
        "api_name": doc.api_name if doc else request.key.api,
        "api_description": doc.api_description if doc else "",
        "required_parameters": doc.required_parameters if doc else [],
        "optional_parameters": doc.optional_parameters if doc else [],
        "tool_description": doc.tool_description if doc else "",
        "tool_name": doc.tool_name if doc else request.key.tool,
        "tool_category": doc.category_name if doc else request.key.category,
    }
    tool_input: Any = request.tool_input
    if isinstance(tool_input, dict):
        tool_input = {k: v for k, v in tool_input.items() if k != TOOLBENCH_KEY_HEADER}
    return S.MIRRORAPI_USER_TEMPLATE.format(api_doc=repr(api_doc), request=repr(tool_input))


def parse_answer(text: str) -> dict | None:
    """JSON first; else the loose ``"error": "...", "response": "...`` reading MirrorAPI output needs."""
    try:
        answer = json.loads(strip_fences(text))
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        error, response = answer.get("error", ""), answer.get("response", "")
    else:
        match = _FALLBACK.search(text)
        if not match:
            return None
        error, response = match.group(1), match.group(2)
    if not error and not response:
        return None
    return {"error": error if isinstance(error, str) else str(error), "response": response}


class MirrorApiSimulator:
    name = "mirrorapi"

    def __init__(self, options: SimulatorOptions | None = None):
        self.options = options or SimulatorOptions()
        if not self.options.model:
            raise ValueError("the mirrorapi simulator needs the served model name (--llm-model)")
        self.system_prompt = load_system_prompt(self.options.system_prompt_file)
        self.chat = SimulatorChat(self.options)
        self.maker = maker_of(self.name, self.options)  # what its answers' marks and /stats name

    def simulate(self, request: SimulationRequest) -> SimulationResult:
        messages = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": user_message(request)}]
        temperature = S.MIRRORAPI_TEMPERATURE if self.options.temperature is None else self.options.temperature
        for attempt in range(1, self.options.attempts + 1):
            try:
                text = self.chat.complete(messages, temperature=temperature,
                                          max_tokens=self.options.max_tokens or S.MIRRORAPI_MAX_TOKENS,
                                          seed=S.MIRRORAPI_SEED)
            except EndpointFailed as exc:  # already retried by the transport: asking again fails the same way
                log.warning("mirrorapi attempt %d: the model endpoint failed: %s", attempt, exc)
                break
            except ValueError as exc:  # a reply that is not a chat completion: sample again
                log.warning("mirrorapi attempt %d failed: %s", attempt, exc)
                continue
            answer = parse_answer(text)
            if answer is not None:
                return SimulationResult(answer)
        return SimulationResult({"error": FAKE_RESPONSE_FAILED, "response": ""}, cacheable=False)
