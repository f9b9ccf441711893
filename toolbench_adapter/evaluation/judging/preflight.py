"""Before any judging: the judge is there, serves the model asked for, and answers one request.

Without this a judge that cannot be reached, or that serves another model, turns every judgement into a
failure after its retries, minutes later; here it is bad input (exit 2) naming the flag and the fix before any
file is converted or written. Three checks:
1. each judge URL answers ``GET /models`` (a client that has URLs: the openai one); one that cannot be reached
   is named on stderr when others answer, and refused when none does; a refused API key is refused;
2. the model is among the ids listed (an endpoint without a readable model list leaves this to check 3);
3. one request in the shape the judging will send (``probe``: the judge's tools / JSON request with the test
   prompt below), through the client's retrying HTTP layer. Its reply is not read as a verdict, but a forced
   tool call must come back as a tool call: an endpoint that answers it with text cannot judge in tools mode.

``prepare_judge`` also settles ``--judge-mode auto`` by asking: one forced tool call; answered with a tool call,
the mode is ``tools``; answered with text, or refused as a request the server does not take (HTTP 400 / 422),
``json`` (a client that takes no tools, a local model, is ``json`` without asking). The mode and how it was
chosen are recorded (``judge.mode_choice``), so an endpoint that cannot do a mode is found before any answer is
judged (``tba serve-model`` serves text only: auto used to choose tools there and every judgement failed).
Where auto settles on json and the endpoint lists ``structured_outputs`` beside the model (tba serve-model over
a model it can constrain), the verdict is constrained to its JSON schema (as --judge-constrain): unconstrained,
SmolLM2 served so wrote invalid JSON for 5 of 6 judgements.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging.chat import ChatError
from toolbench_adapter.evaluation.judging.judge import make_judge
from toolbench_adapter.net.transport import FaultKind

PREFLIGHT_MARKER = "tba-judge-preflight"  # stand-ins in tests recognise the test request by it
PREFLIGHT_PROMPT = (f"[{PREFLIGHT_MARKER}] This is a connectivity check before judging. "
                    "Query: say hello. Answer: hello.")
PROBE_TRIES = 3  # a judge that drops a request now and then is not refused for one unlucky test request
URL_FIX = "start the judge server, or pass --judge-url with the OpenAI API root of a running one (e.g. " \
          "http://127.0.0.1:8000/v1)"


def preflight_judge(client: Any, probe: Callable[[], Any], *, warn: Callable[[str], None] | None = None) -> bool | None:
    """Raise InputError unless the judge ``client`` is usable; ``probe()`` sends the one test request. Returns
    whether every judge URL's model list names the model (``listed``)."""
    warn = warn or (lambda text: print(text, file=sys.stderr))
    served = check_served(client, warn)
    _ask(client, probe, warn)
    return listed(client, served)


def listed(client: Any, served: dict[str, list[str] | None] | None) -> bool | None:
    """The evidence comparability reads of the judge's name (evaluation/comparability.py): True when every judge
    URL answered GET /models with a list naming the model (the whole id), False when one lists other ids only,
    None when a URL gave no list (or did not answer, or the client has no URLs: a local model)."""
    urls = list(getattr(client, "base_urls", None) or [])
    if not urls or served is None:
        return None
    model = getattr(client, "model", None)
    lists = [served.get(url) for url in urls]
    if any(ids is not None and model not in ids for ids in lists):
        return False
    return None if any(ids is None for ids in lists) else True


def prepare_judge(client: Any, spec: Any, mode: str = "auto", *, warn: Callable[[str], None] | None = None,
                  **options: Any) -> Any:
    """The judge (judge.py's FunctionJudge) for ``client``, checked as ``preflight_judge`` does, its mode settled
    by asking when ``auto``; ``judge.mode_choice`` says how. InputError (exit 2) with the fix otherwise."""
    warn = warn or (lambda text: print(text, file=sys.stderr))
    served = check_served(client, warn)
    judge = _prepared(client, spec, mode, warn, options)
    judge.listed = listed(client, served)  # the judge's identity records it (evaluations.JudgeIdentity)
    return judge


def _prepared(client: Any, spec: Any, mode: str, warn: Callable[[str], None], options: dict) -> Any:
    if mode != "auto" or options.get("constrain"):
        judge = make_judge(client, spec, mode, **options)
        judge.mode_choice = f"--judge-mode {mode}" if mode != "auto" else "--judge-constrain: json"
        _probe_in_shape(client, judge, mode)
        return judge
    if not getattr(client, "supports_tools", False):
        judge = make_judge(client, spec, "json", **options)
        judge.mode_choice = "auto: the judge client takes no tools (a local model): json"
        _probe_in_shape(client, judge, "json")
        return judge
    tools = make_judge(client, spec, "tools", **options)
    try:
        reply = _ask(client, lambda: tools.probe(PREFLIGHT_PROMPT), warn, refuse=False)
    except ChatError as exc:
        if exc.status not in (400, 422):
            raise _probe_error(client, exc, getattr(exc, "tries", 1)) from None
        why = f"auto: the endpoint refused a forced tool call (HTTP {exc.status}): json"
    else:
        problem = tools.reply_problem(reply)
        if problem is None:
            tools.mode_choice = "auto: the endpoint answered a forced tool call with one: tools"
            return tools
        why = f"auto: the endpoint answered a forced tool call without one ({problem}): json"
    offers = getattr(client, "offers_structured_outputs", None)
    if offers is not None and offers():  # tba serve-model: a small model writes a valid verdict only constrained
        options = {**options, "constrain": True}
        why += ", constrained (the endpoint lists structured_outputs: the verdict's JSON schema is decoded there)"
    judge = make_judge(client, spec, "json", **options)
    judge.mode_choice = why
    _probe_in_shape(client, judge, "json")
    return judge


def _probe_in_shape(client: Any, judge: Any, asked: str) -> None:
    """The one test request in the judge's shape; a tools judge whose test call comes back as text is refused."""
    reply = _ask(client, lambda: judge.probe(PREFLIGHT_PROMPT), None)
    problem = judge.reply_problem(reply)
    if problem is not None:
        name = getattr(client, "name", "the judge")
        raise InputError(f"the judge ({name}) cannot judge in --judge-mode {judge.mode}: a forced tool call came "
                         f"back unusable ({problem})", field="--judge-mode",
                         fix="pass --judge-mode json (or leave --judge-mode out: auto asks the endpoint and picks "
                         "json here)" if asked == "tools" else "check the judge server's log")


def _ask(client: Any, send: Callable[[], Any], warn: Callable[[str], None] | None, *, refuse: bool = True) -> Any:
    """The test request, sent again (up to PROBE_TRIES) when it failed in a way another try can mend: a dropped
    connection, a cut or garbled reply, a 5xx. Not again on a timeout (the client's own retries waited for it
    already) nor on a 4xx (the same request gets the same answer). ``refuse``: InputError with the fix worded by
    what happened; else the last ChatError."""
    for attempt in range(1, PROBE_TRIES + 1):
        try:
            reply = send()
        except ChatError as exc:
            again = exc.fault is not FaultKind.TIMEOUT and not (exc.status is not None and 400 <= exc.status < 500)
            if again and attempt < PROBE_TRIES:
                continue
            if not refuse:
                exc.tries = attempt
                raise
            raise _probe_error(client, exc, attempt) from None
        if attempt > 1 and warn is not None:
            warn(f"warning: the judge ({getattr(client, 'name', 'the judge')}) failed {attempt - 1} of {attempt} "
                 "test requests: it drops requests now and then (failed judgements are counted, never scored)")
        return reply
    raise AssertionError("unreachable")


def check_served(client: Any, warn: Callable[[str], None]) -> dict[str, list[str] | None] | None:
    """Each judge URL answers GET /models and serves the model (tba eval asks this before its run, too); returns
    each URL that answered -> the ids it listed (None: no readable list), None for a client without URLs."""
    urls = list(getattr(client, "base_urls", None) or [])
    if not urls or not hasattr(client, "served_models"):
        return None  # e.g. a local model: loading it was its check
    served: dict[str, list[str] | None] = {}
    unreachable: list[tuple[str, ChatError]] = []
    for url in urls:
        try:
            served[url] = client.served_models(url)
        except ChatError as exc:
            if exc.status in (401, 403):
                raise InputError(f"the judge at {url} refused the API key (HTTP {exc.status})",
                                 field="--judge-api-key", fix="pass --judge-api-key or set OPENAI_API_KEY") from None
            unreachable.append((url, exc))
    if not served:
        url, exc = unreachable[0]
        what = "the judge" if len(urls) == 1 else f"none of the {len(urls)} judge URLs answers; first:"
        raise InputError(f"{what} {url} cannot be reached ({exc})", field="--judge-url", fix=URL_FIX)
    for url, exc in unreachable:
        warn(f"warning: the judge URL {url} cannot be reached ({exc}); its requests go to the others")
    model = getattr(client, "model", None)
    for url, ids in served.items():
        if ids is not None and model not in ids:
            raise InputError(f"judge model {model!r} is not served at {url}; served ids: {', '.join(ids) or '(none)'}",
                             field="--judge-model",
                             fix=f"pass --judge-model {ids[0]}" if ids else "load a model into the judge server")
    return served


def _probe_error(client: Any, exc: ChatError, tries: int = 1) -> InputError:
    name = getattr(client, "name", "the judge")
    times = f" ({tries} tries)" if tries > 1 else ""
    head = f"the judge ({name}) did not answer a test request{times}: {exc}"
    if exc.fault is FaultKind.TIMEOUT:
        timeout = getattr(client, "timeout", None)
        within = f" within {timeout:g} s" if isinstance(timeout, (int, float)) else " in time"
        return InputError(head, field="--judge-timeout",
                          fix=f"the judge did not answer{within}: check it is up and not overloaded, or raise "
                          "--judge-timeout")
    if exc.fault is FaultKind.CONNECTION_ERROR:
        return InputError(head, field="--judge-url",
                          fix="it answered GET /models but dropped the test request's connection: check the judge "
                          "server's log (is it restarting, or behind a proxy that closes connections?), then rerun")
    if exc.fault is FaultKind.TRUNCATED_BODY:
        return InputError(head, field="--judge-url",
                          fix="the judge's replies were cut short: check the judge server (or a proxy before it)")
    if exc.status in (401, 403):
        return InputError(head, field="--judge-api-key", fix="pass --judge-api-key or set OPENAI_API_KEY")
    if exc.status == 404:
        return InputError(head, field="--judge-model",
                          fix="pass --judge-model with a model the server serves (GET <judge-url>/models lists "
                          "them), and --judge-url with the API root ending in /v1")
    if exc.status is not None and 400 <= exc.status < 500 and exc.fault is FaultKind.HTTP_4XX:
        return InputError(head, field="--judge-mode",
                          fix="the server refused the judge's request: a server without tool calling needs "
                          "--judge-mode json; check --judge-model and the server's log")
    if exc.fault in (FaultKind.HTTP_5XX, FaultKind.HTTP_429):
        return InputError(head, field="--judge-url",
                          fix="the judge server failed after the client's retries: check its log, then rerun")
    # NOT_JSON, or JSON that is no chat completion, every try: the URL is likely not an OpenAI chat API
    return InputError(head, field="--judge-url",
                      fix="the judge answered, but not with an OpenAI chat completion: point --judge-url at the "
                      "API root of an OpenAI-compatible chat server (e.g. http://127.0.0.1:8000/v1)")
