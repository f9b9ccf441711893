"""FAC (Final Answer Correctness) with a served judge model; the prompt is ours, the scoring upstream's.

Upstream (``fac_eval.py``): for every id of the id file, judge the final answer (in practice the whole raw
Finish JSON string, because the unwrap only fires for text starting with ``{\\``); an empty answer is Unsolved
without a request; score = 1 when the lowercased output contains "solved" but not "unsolved", else 0; FAC =
mean over the ids. Deviations: an id missing from the converted file counts 0 and is reported (upstream
crashed), a judge that failed after its retries is no verdict (left out of the mean, counted), and
``unwrap_finish`` (strict) judges the text inside the Finish arguments.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from toolbench_adapter.evaluation.judging.chat import ChatClient, ChatError, check_message
from toolbench_adapter.evaluation.scoring.scores import Score
from toolbench_adapter.protocol.evaluation import (
    FAC_EMPTY_ANSWER_TEXT,
    FAC_JSON_PREFIX,
    FAC_SOLVED_MARKER,
    FAC_UNSOLVED_MARKER,
)

FAC_PROMPT = """\
Decide whether an assistant's final answer correctly resolves the user's query.

Call it "Solved" when all of these hold:
- the answer makes a genuine attempt at the query rather than declining it;
- every part of the query is addressed;
- it contains no severe factual mistake.
Be lenient: an answer that meets these is Solved even if it could be better. Judge only the final answer,
not how it was obtained.

Call it "Unsolved" when any of these holds:
- the answer refuses, apologises, or says it cannot help;
- some part of the query is left unaddressed;
- it contains a severe factual mistake.

Example: the query asks for the weather in Paris and a nearby hotel; an answer giving the weather and naming
a hotel is Solved. An answer giving only the weather is Unsolved.

Query:
{query}

Final answer:
{answer}

Reply in this format:
Answer Status
<Solved or Unsolved>
Reason
<one or two sentences>"""


def fac_score(output: str) -> int:
    """Upstream's rule, in its order: "unsolved" anywhere -> 0; else "solved" -> 1; else 0."""
    text = output.lower()
    if FAC_UNSOLVED_MARKER in text:
        return 0
    return 1 if FAC_SOLVED_MARKER in text else 0


def answer_text(final_answer: str, unwrap_finish: bool = False) -> str:
    """What the FAC judge sees: upstream unwraps only text starting with ``{\\``; strict always unwraps."""
    if final_answer.startswith(FAC_JSON_PREFIX) or unwrap_finish:
        try:
            value = json.loads(final_answer)
            if isinstance(value, dict) and "final_answer" in value:
                return str(value["final_answer"])
        except ValueError:
            pass
    return final_answer


@dataclass
class FacRun:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    errors: int = 0
    requests: int = 0

    def score(self) -> Score:
        # a failed judgement is no verdict: left out of the mean, counted in errors
        values = [r["score"] for r in self.records.values() if not r.get("judge_error")]
        mean = sum(values) / len(values) * 100 if values else 0.0
        return Score("FAC", "upstream", mean, 0.0, len(values), errors=self.errors, missing=len(self.missing))


def judge_fac(converted: dict[str, Any], client: ChatClient, ids: list[str] | None = None, *,
              unwrap_finish: bool = False, concurrency: int = 4, max_tokens: int = 512) -> FacRun:
    run = FacRun()
    ids = [str(i) for i in (ids if ids is not None else converted)]

    def one(qid: str) -> tuple[str, dict[str, Any], bool, bool]:
        example = converted.get(qid)
        if example is None:
            return qid, {"final_answer": None, "evaluation": "", "score": 0}, False, False
        final_answer = example["answer"].get("final_answer") or ""
        if not final_answer:
            return qid, {"final_answer": "", "evaluation": FAC_EMPTY_ANSWER_TEXT, "score": 0}, False, False
        prompt = FAC_PROMPT.format(query=example["query"], answer=answer_text(final_answer, unwrap_finish))
        try:
            reply = check_message(client.chat([{"role": "user", "content": prompt}], temperature=0,
                                              max_tokens=max_tokens), getattr(client, "name", "the judge"))
        except ChatError as exc:  # a malformed reply (MalformedReply) too: no score, counted as a failure
            return qid, {"final_answer": final_answer, "evaluation": f"JudgeError: {exc}", "score": 0,
                         "judge_error": True}, True, True
        output = reply.get("content") or ""
        return qid, {"final_answer": final_answer, "evaluation": output, "score": fac_score(output)}, True, False

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for qid, record, asked, failed in pool.map(one, ids):
            run.records[qid] = record
            run.requests += int(asked)
            run.errors += int(failed)
            if record["final_answer"] is None:
                run.missing.append(qid)
    return run
