"""The pass-rate judge: StableToolBench's decision procedure over a ChatClient, in two modes.

Decision (``eval_pass_rate.py`` + ``rtl.check_is_solved``), per converted answer and repeat:
1. no ``'name': 'Finish'`` in the final step -> Unsolved, no request;
2. an empty final answer, or one containing ``give_up_and_restart`` -> Unsolved, no request;
3. ``check_answer_status(query, final_answer)``; on Unsure, ``parse_answer_status(query, json.dumps(answer))``.

Modes (registry ``judges``): ``tools`` forces a tool call of the function (the verdict is its arguments);
``json`` asks for a JSON object in the prompt and reads it with the JSON ladder (never tools and a JSON
response mode together). A malformed verdict is asked again; after the last attempt the judgement is an
error label, never an exception.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import EvaluatorSpec
from toolbench_adapter.evaluation.judging.chat import ChatClient, ChatError, MalformedReply, check_message
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.steps import ends_with_finish, get_steps
from toolbench_adapter.protocol.evaluation import (
    ANSWER_STATUS_FIELD,
    ANSWER_STATUSES,
    CHECK_ANSWER_STATUS,
    EMPTY_FINAL_ANSWER_REASON,
    GIVE_UP_MARKER,
    NO_ANSWER_REASON,
    PARSE_ANSWER_STATUS,
    REASON_FIELD,
)
from toolbench_adapter.registry import Registry
from toolbench_adapter.structured.grammar import judge_constraint

# the failure a forced tool call together with a JSON response mode causes (runners/search/structured.py says it too)
TRAP = ("native tools together with a JSON response mode: the model then answers in JSON instead of calling the "
        "tool (it skips the tool call)")

JSON_INSTRUCTION = (
    "\nAnswer with one JSON object and nothing else, exactly of the form "
    '{{"{reason}": "<your short explanation>", "{field}": "<one of: {choices}>"}}.'
)


# clients that can put words in the model's mouth (local models) start the reply with the verdict field,
# so even a small model answers in the asked shape
JSON_PREFILL = '{{"{field}": "'
# ...and stop right after the label: the verdict is complete, the reason is not worth a small model's tokens
PREFILL_STOPS = ['"', ",", "\n"]


class MalformedVerdict(ValueError):
    """The judge answered, but not with a usable verdict."""


class JudgeFailure(RuntimeError):
    """No usable verdict after every attempt (or the endpoint failed for good)."""


@dataclass
class Judgement:
    label: Label
    reason: str = ""
    calls: list[str] = field(default_factory=list)  # judge functions asked, in order
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label.value, "reason": self.reason, "calls": self.calls, "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgement:
        return cls(Label(data["label"]), data.get("reason", ""), list(data.get("calls", [])), data.get("error"))


class FunctionJudge(ABC):
    """Asks one judge function and returns its validated arguments; subclasses choose how to ask."""

    mode = "base"
    mode_choice = ""  # how the mode was chosen (preflight.prepare_judge: asked for, or what the endpoint answered)

    def __init__(self, client: ChatClient, spec: EvaluatorSpec, *, attempts: int = 3, with_reason: bool = True,
                 temperature: float | None = None, max_tokens: int | None = None, constrain: bool = False):
        self.client = client
        # --judge-constrain (json mode): the reply can only be the verdict JSON, its label one of the enum
        self.constrain = constrain
        self.spec = spec
        self.attempts = max(1, attempts)
        self.with_reason = with_reason
        self.temperature = temperature if temperature is not None else spec.temperature
        self.max_tokens = max_tokens if max_tokens is not None else spec.max_tokens
        self._lock = threading.Lock()
        self.requests = 0
        self.malformed = 0

    @property
    def name(self) -> str:
        return f"{self.client.name} [{self.mode}{', constrained' if self.constrain else ''}]"

    def add_counts(self, requests: int, malformed: int) -> None:
        """Count requests this judge's copies made elsewhere (Ray workers), so its totals cover them."""
        with self._lock:
            self.requests += requests
            self.malformed += malformed

    def ask(self, function: str, args: dict[str, str]) -> dict[str, Any]:
        prompt = self.spec.prompt(function, **args)
        problem = ""
        for _ in range(self.attempts):
            try:
                return self._validate(function, self._verdict(self.reply(function, lambda: self._request(
                    function, prompt))))
            except MalformedVerdict as exc:
                problem = str(exc)
                with self._lock:
                    self.malformed += 1
        raise JudgeFailure(f"{function}: no usable verdict after {self.attempts} attempts ({problem})")

    def reply(self, function: str, send: Callable[[], Any]) -> dict:
        """One request counted, its reply checked as an assistant message (chat.check_message, for any client):
        a malformed reply is MalformedVerdict (asked again, counted), a failed endpoint JudgeFailure."""
        with self._lock:
            self.requests += 1
        try:
            return check_message(send(), getattr(self.client, "name", "the judge"))
        except MalformedReply as exc:
            raise MalformedVerdict(str(exc)) from None
        except ChatError as exc:  # transport retries were the client's job
            raise JudgeFailure(f"{function}: {exc}") from exc

    def probe(self, prompt: str) -> dict:
        """One request in this judge's shape (forced tool call or JSON prompt) with the preflight's test
        ``prompt`` (passed in: preflight.py imports this module, never the reverse); not counted in ``requests``
        and not read as a verdict. Raises ChatError when the endpoint fails."""
        return check_message(self._request(CHECK_ANSWER_STATUS, prompt), getattr(self.client, "name", "the judge"))

    def reply_problem(self, message: dict) -> str | None:
        """Why the probe's reply is not in the shape this mode reads (None: it is). A JSON prompt's test reply
        need not be JSON (a verdict on a test prompt means nothing); a forced tool call must come back as one."""
        return None

    @abstractmethod
    def _request(self, function: str, prompt: str) -> dict:
        """Send the judge function's prompt; return the assistant message."""

    @abstractmethod
    def _verdict(self, message: dict) -> Any:
        """The verdict arguments read from the assistant message (raise MalformedVerdict if unusable)."""

    def _choices(self, function: str) -> list[str]:
        properties = self.spec.functions[function].get("parameters", {}).get("properties", {})
        return list(properties.get(ANSWER_STATUS_FIELD, {}).get("enum") or ANSWER_STATUSES)

    def _validate(self, function: str, verdict: Any) -> dict[str, Any]:
        if not isinstance(verdict, dict):
            raise MalformedVerdict(f"expected a JSON object, got {type(verdict).__name__}")
        status = verdict.get(ANSWER_STATUS_FIELD)
        if isinstance(status, str) and status not in self._choices(function):
            # case and surrounding space are not a verdict's content: "solved " reads as "Solved"
            canonical = {c.lower(): c for c in self._choices(function)}.get(status.strip().lower())
            if canonical is not None:
                verdict = {**verdict, ANSWER_STATUS_FIELD: canonical}
                status = canonical
        if status not in self._choices(function):
            raise MalformedVerdict(f"{ANSWER_STATUS_FIELD}={status!r} is not one of {self._choices(function)}")
        return verdict


class ToolsJudge(FunctionJudge):
    """Forced tool call: ``tool_choice`` names the function; its arguments are the verdict."""

    mode = "tools"

    def reply_problem(self, message: dict) -> str | None:
        try:
            self._verdict(message)
        except MalformedVerdict as exc:
            return str(exc)
        return None

    def _request(self, function: str, prompt: str) -> dict:
        schema = self.spec.schema(function, self.with_reason)
        return self.client.chat([{"role": "user", "content": prompt}],
                                tools=[{"type": "function", "function": schema}],
                                tool_choice={"type": "function", "function": {"name": function}},
                                temperature=self.temperature, max_tokens=self.max_tokens)

    def _verdict(self, message: dict) -> Any:
        calls = message.get("tool_calls") or []
        if not calls:
            raise MalformedVerdict("no tool call in the reply")
        arguments = (calls[0].get("function") or {}).get("arguments")
        if isinstance(arguments, dict):
            return arguments
        try:
            return json.loads(arguments)
        except (TypeError, ValueError) as exc:
            raise MalformedVerdict(f"tool arguments are not JSON ({exc})") from None


class JsonJudge(FunctionJudge):
    """Prompt-driven: the prompt asks for a JSON object; the reply is read with the JSON ladder."""

    mode = "json"

    def _request(self, function: str, prompt: str) -> dict:
        instruction = JSON_INSTRUCTION.format(reason=REASON_FIELD, field=ANSWER_STATUS_FIELD,
                                              choices=", ".join(self._choices(function)))
        extra = {"prefill": JSON_PREFILL.format(field=ANSWER_STATUS_FIELD), "stop": PREFILL_STOPS} if getattr(
            self.client, "accepts_prefill", False) else {}
        if self.constrain:  # the grammar writes the whole verdict: no prefill, no stop inside it
            extra = {"constraint": judge_constraint(ANSWER_STATUS_FIELD, self._choices(function), REASON_FIELD)}
        return self.client.chat([{"role": "user", "content": prompt + instruction}],
                                temperature=self.temperature, max_tokens=self.max_tokens, **extra)

    def _verdict(self, message: dict) -> Any:
        from toolbench_adapter.parsers.ladder import decode_json

        content = message.get("content") or ""
        value, _rung, error = decode_json(content)
        if value is None:
            raise MalformedVerdict(f"reply is not JSON ({getattr(error, 'value', error)})")
        return value


JUDGES: Registry = Registry("judges")
JUDGES.register("tools", ToolsJudge)
JUDGES.register("json", JsonJudge)


def make_judge(client: ChatClient, spec: EvaluatorSpec, mode: str = "auto", **options: Any) -> FunctionJudge:
    """``auto`` picks ``tools`` when the client supports tools, else ``json``, without asking it; the commands use
    preflight.prepare_judge, which asks the endpoint (a text-only server claims tools it cannot do)."""
    spec.require(CHECK_ANSWER_STATUS, PARSE_ANSWER_STATUS)
    if options.get("constrain"):
        mode = constrained_mode(client, mode)
    if mode == "auto":
        mode = "tools" if client.supports_tools else "json"
    return JUDGES.get(mode)(client, spec, **options)


def constrained_mode(client: ChatClient, mode: str) -> str:
    """--judge-constrain: the json mode on a client that can constrain (InputError otherwise: exit 2)."""
    if mode == "tools":
        raise InputError(f"--judge-constrain with --judge-mode tools: {TRAP}", field="--judge-mode",
                         fix="leave --judge-mode out (or json) with --judge-constrain")
    support = getattr(client, "constraint_support", None)
    reason = support("judge") if support is not None else f"the judge client {client.name} cannot constrain"
    if reason:
        raise InputError(f"--judge-constrain: {reason}", field="--judge-constrain",
                         fix="use a local judge (--judge-backend hf) or a vLLM one, or leave --judge-constrain out")
    return "json"


def early_judgement(answer: dict[str, Any]) -> Judgement | None:
    """The judgement rules 1 and 2 give without asking the judge; None when the judge must be asked."""
    _steps, final_step = get_steps({"answer": answer})
    if not ends_with_finish(final_step):
        return Judgement(Label.UNSOLVED, NO_ANSWER_REASON)
    final_answer = answer.get("final_answer") or ""
    if final_answer == "" or GIVE_UP_MARKER in final_answer:
        return Judgement(Label.UNSOLVED, EMPTY_FINAL_ANSWER_REASON)
    return None


def judge_answer(judge: FunctionJudge, query: str, answer: dict[str, Any]) -> Judgement:
    """One judgement of one converted answer (``example["answer"]``)."""
    early = early_judgement(answer)
    if early is not None:
        return early
    final_answer = answer.get("final_answer") or ""
    calls = [CHECK_ANSWER_STATUS]
    try:
        verdict = judge.ask(CHECK_ANSWER_STATUS, {"query": query, "answer": final_answer})
        if verdict[ANSWER_STATUS_FIELD] == Label.UNSURE.value:
            calls.append(PARSE_ANSWER_STATUS)
            verdict = judge.ask(PARSE_ANSWER_STATUS, {"query": query, "answer": json.dumps(answer)})
    except JudgeFailure as exc:
        return Judgement(Label.ERROR, "", calls, str(exc))
    return Judgement(Label(verdict[ANSWER_STATUS_FIELD]), str(verdict.get(REASON_FIELD, "")), calls)
