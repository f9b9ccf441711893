"""A deterministic ReAct-text model for tests and benchmarks of the parser fan-out.

``react_script`` plays a model on the toolllama dialect: with no call made yet it calls the first function
of the prompt, then it calls Finish with an answer. On every query whose id is divisible by 3 its call
carries a connective line after the Action Input JSON (what small models copy from examples): react-find
(upstream's slicing) cannot read those arguments, react-robust and react-regex can, so the parsers' trajectories
diverge on those queries only (and the final answer says so when the call failed). Use it as ``ScriptedBackend(script=react_script)``.
"""

from __future__ import annotations

import json
import re

from .base import ModelRequest

FIRST_FUNCTION = re.compile(r"'name': '([^']+)'")
CONNECTIVE = "\nand then I will read what it returns"


def diverges(query_id: int) -> bool:
    return query_id % 3 == 0


def react_script(request: ModelRequest) -> str:
    text = request.prompt if request.prompt is not None else request.messages[-1]["content"]
    query_id = int(request.key.get("query_id", 0))
    if request.key.get("path"):  # a call was made: answer, or say so when its arguments were not read
        final = "I could not get the result." if "Tool input parse error" in text else f"answer for query {query_id}"
        answer = json.dumps({"return_type": "give_answer", "final_answer": final})
        return f"Thought: I have the result.\nAction: Finish\nAction Input: {answer}"
    match = FIRST_FUNCTION.search(text.split("Specifically, you have access to the following APIs:")[-1])
    name = match.group(1) if match else "Finish"
    call = f"Thought: I should call {name}.\nAction: {name}\nAction Input: {{\"query\": \"{query_id}\"}}"
    return call + (CONNECTIVE if diverges(query_id) else "")
