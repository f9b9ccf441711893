"""Structured output in runs: the refused trap (native tools + JSON mode), --constrain on each backend kind,
--on-invalid reask:N, and --compat stb runs unchanged when neither flag is given."""

import hashlib
import json
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend
from tests.openai_standin import OpenAIStandin
from toolbench_adapter.errors import InputError
from toolbench_adapter.structured.grammar import Constraint

FINISH = 'Thought: done.\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "x"}'
TRAP_WORDS = "skips the tool call"


def run_argv(tmp_path, name, *extra):
    return ["run", "--name", name, "--out-root", str(tmp_path), "--quiet", "--groups", "G1_instruction", *extra]


def answers(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("G*/*.json"))}


def steps(run_dir):
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- the trap

def test_native_tools_with_a_json_response_mode_is_exit_2(tmp_path, capsys):
    code = main(run_argv(tmp_path, "t", "--backend", "openai-chat", "--base-url", "http://127.0.0.1:9/v1",
                         "--model", "m", "--dialect", "openai-tools", "--backend-option", "response_format=json_object"))
    err = capsys.readouterr().err
    assert code == 2 and TRAP_WORDS in err and "response_format" in err
    assert not (tmp_path / "t").exists()


def test_constraining_native_tools_is_the_same_trap(tmp_path, capsys):
    code = main(run_argv(tmp_path, "t", "--backend", "scripted", "--dialect", "openai-tools", "--constrain", "schema"))
    assert code == 2 and TRAP_WORDS in capsys.readouterr().err


def test_json_mode_on_a_text_dialect_is_sent(tmp_path):
    reply = json.dumps({"think": "t", "answer": "done"})
    with OpenAIStandin(chat=[reply]) as standin:
        code = main(run_argv(tmp_path, "j", "--backend", "openai-chat", "--base-url", standin.url, "--model",
                             standin.model, "--dialect", "json-object", "--backend-option", "response_format=json_object"))
        bodies = standin.bodies("chat/completions")
    assert code == 0 and bodies and all(b["response_format"] == {"type": "json_object"} for b in bodies)


def test_unknown_policy_values_are_exit_2(tmp_path, capsys):
    assert main(run_argv(tmp_path, "p", "--backend", "scripted", "--on-invalid", "reask:0")) == 2
    assert "reask:2" in capsys.readouterr().err


# ---------------------------------------------------------------- --constrain: which backends can

def test_a_backend_that_cannot_constrain_is_refused_before_any_query(tmp_path):
    backend = ScriptedBackend(script=react_script)
    cfg = RunConfig(name="s", out_root=str(tmp_path), backend="scripted", dialect="toolllama", constrain="schema")
    with pytest.raises(InputError, match="no constrained decoding"):
        Runner(cfg, backend=backend, progress=False).run()
    assert backend.requests == [] and not list(tmp_path.glob("s/G*/*.json"))


def test_an_endpoint_that_does_not_take_structured_outputs_is_refused(tmp_path, capsys):
    with OpenAIStandin(completions=[FINISH]) as standin:  # GET /models says owned_by "standin"
        code = main(run_argv(tmp_path, "e", "--backend", "openai-completions", "--base-url", standin.url,
                             "--constrain", "schema"))
        sent = standin.count()
    err = capsys.readouterr().err
    assert code == 2 and sent == 0 and "owned_by: standin" in err and "structured=vllm" in err


def test_vllm_gets_the_reply_grammar_in_structured_outputs(tmp_path):
    xgr = pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    from xgrammar.testing import _is_grammar_accept_string

    with OpenAIStandin(completions=[FINISH[len("Thought: "):]], owned_by="vllm") as standin:
        code = main(run_argv(tmp_path, "v", "--backend", "openai-completions", "--base-url", standin.url,
                             "--dialect-option", "prefill=Thought: ", "--constrain", "schema"))
        bodies = standin.bodies("completions")
    assert code == 0 and bodies
    grammar = xgr.Grammar.from_ebnf(bodies[0]["structured_outputs"]["grammar"])
    assert _is_grammar_accept_string(grammar, FINISH[len("Thought: "):])  # what the model wrote after the prefill
    assert not _is_grammar_accept_string(grammar, "done.\nAction: NoSuchFunction\nAction Input: {}")


def test_openai_gets_a_strict_json_schema_for_json_object_replies(tmp_path):
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    reply = json.dumps({"think": "t", "action": "Finish",
                        "arguments": {"return_type": "give_answer", "final_answer": "x"}})
    with OpenAIStandin(chat=[reply], owned_by="system") as standin:
        code = main(run_argv(tmp_path, "o", "--backend", "openai-chat", "--base-url", standin.url, "--model",
                             standin.model, "--dialect", "json-object", "--constrain", "schema"))
        body = standin.bodies("chat/completions")[0]
    assert code == 0
    form = body["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["strict"] is True
    schema = form["json_schema"]["schema"]
    assert schema["type"] == "object" and "anyOf" not in schema and schema["additionalProperties"] is False
    assert "Finish" in schema["properties"]["action"]["enum"] and "structured_outputs" not in body


def test_openai_cannot_constrain_the_react_text_format(tmp_path, capsys):
    with OpenAIStandin(owned_by="openai") as standin:
        code = main(run_argv(tmp_path, "x", "--backend", "openai-completions", "--base-url", standin.url,
                             "--constrain", "schema"))
    assert code == 2 and "one JSON object" in capsys.readouterr().err


class ConstrainingScripted(ScriptedBackend):
    """A scripted model that says it can constrain: the run hands it the Constraint of every request."""

    def constraint_support(self, dialect):
        return None


def test_every_request_carries_the_query_grammar(tmp_path):
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    backend = ConstrainingScripted(script=react_script)
    cfg = RunConfig(name="g", out_root=str(tmp_path), backend="scripted", dialect="toolllama", constrain="schema")
    Runner(cfg, backend=backend, progress=False).run()
    constraints = [r.extra["constraint"] for r in backend.requests]
    assert constraints and all(isinstance(c, Constraint) and c.name == "toolllama" for c in constraints)
    # the grammar is the query's: its function names are in it, another query's are not
    first, last = backend.requests[0], backend.requests[-1]
    assert first.key["query_id"] != last.key["query_id"]
    assert constraints[0].ebnf != constraints[-1].ebnf


# ---------------------------------------------------------------- --on-invalid reask:N

def unknown_then_finish(request):
    """A model that calls an unknown function until it is told what was wrong, then finishes."""
    text = request.prompt or json.dumps(request.messages)
    if "Your last reply could not be used" in text:
        return FINISH
    return "Thought: t\nAction: get_everything\nAction Input: {}"


def test_reask_discards_the_invalid_reply_and_records_it(tmp_path):
    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    groups=["G1_instruction"], on_invalid="reask:2")
    backend = ScriptedBackend(script=unknown_then_finish)
    manifest = Runner(cfg, backend=backend, progress=False).run()
    records = steps(tmp_path / "r")
    assert [r.get("kind") for r in records] == ["reask", None]
    reask = records[0]
    assert reask["attempt"] == 1 and reask["call"] == "get_everything"
    assert [v["kind"] for v in reask["violations"]] == ["unknown_function"] and reask["output"]
    assert records[1]["call"] == "Finish" and records[1]["violations"] == [] and records[1]["turn"] == 2
    second = backend.requests[1].prompt
    assert "no function named 'get_everything'" in second and "Action Input: <its arguments" in second
    assert "get_everything" not in backend.requests[0].prompt
    totals = manifest["totals"]
    assert (totals["model_calls"], totals["reasks"], totals["model_turns"], totals["valid_turns"]) == (2, 1, 2, 1)
    answer = json.loads(next((tmp_path / "r").glob("G1_instruction/*.json")).read_text())
    assert answer["answer_generation"]["query_count"] == 2  # the re-ask was a model call
    assert "get_everything" not in json.dumps(answer["answer_generation"]["train_messages"])  # discarded


def test_reask_gives_up_after_n_and_observes(tmp_path):
    always_wrong = lambda request: "Thought: t\nAction: get_everything\nAction Input: {}"  # noqa: E731
    cfg = RunConfig(name="n", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    groups=["G1_instruction"], on_invalid="reask:1", max_step=4)
    Runner(cfg, backend=ScriptedBackend(script=always_wrong), progress=False).run()
    records = steps(tmp_path / "n")
    kinds = [(r.get("kind"), r.get("attempt"), r["status"]) for r in records]
    # each turn: one re-ask, then the invalid reply goes on and the environment answers it (status 1)
    assert kinds == [("reask", 1, None), (None, None, 1), ("reask", 1, None), (None, None, 1)]


@pytest.mark.parametrize("cap", [2, 4, 7])
def test_reasks_count_against_dfsdts_model_call_cap(tmp_path, cap):
    """A re-ask is a model call: DFSDT's max_query_count caps re-asks and turns together (upstream: the search
    stops once the calls reach the cap, the reply that reached it discarded), and the answer file counts them."""
    always_wrong = lambda request: "Thought: t\nAction: get_everything\nAction Input: {}"  # noqa: E731
    cfg = RunConfig(name="d", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    groups=["G1_instruction"], method="DFS_woFilter_w2", on_invalid="reask:2", max_query_count=cap)
    backend = ScriptedBackend(script=always_wrong)
    manifest = Runner(cfg, backend=backend, progress=False).run()
    records = steps(tmp_path / "d")
    reasks = [r for r in records if r.get("kind") == "reask"]
    assert len(backend.requests) == cap == manifest["totals"]["model_calls"]  # never past the cap
    assert reasks and manifest["totals"]["reasks"] == len(reasks)
    answer = json.loads(next((tmp_path / "d").glob("G1_instruction/*.json")).read_text())
    assert answer["answer_generation"]["query_count"] == cap  # re-asks included


@pytest.mark.parametrize("value", ["reask:11", "reask:1000000"])
def test_reask_n_past_its_range_is_exit_2_naming_the_range(tmp_path, capsys, value):
    assert main(run_argv(tmp_path, "p", "--backend", "scripted", "--on-invalid", value)) == 2
    assert "out of range (1 to 10)" in capsys.readouterr().err


def test_reasks_of_cot_stop_at_the_query_call_cap(tmp_path):
    """CoT had no call cap: re-asks of a model that never gets it right ran unbounded (reask:1000000 made 1,338
    calls a minute). Its re-asks now stop at max_query_count, as DFSDT's do; the turns then go on as observe."""
    always_wrong = lambda request: "Thought: t\nAction: get_everything\nAction Input: {}"  # noqa: E731
    cfg = RunConfig(name="c", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    groups=["G1_instruction"], on_invalid="reask:10", max_query_count=5, max_step=4)
    backend = ScriptedBackend(script=always_wrong)
    manifest = Runner(cfg, backend=backend, progress=False).run()
    reasks = [r for r in steps(tmp_path / "c") if r.get("kind") == "reask"]
    assert len(reasks) == 4 and manifest["totals"]["reasks"] == 4  # calls 2-5 of the first turn, then no more
    assert len(backend.requests) == manifest["totals"]["model_calls"] == 4 + 2  # plus the two turns' own calls


def test_observe_asks_once(tmp_path):
    cfg = RunConfig(name="o", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    groups=["G1_instruction"], max_step=1)
    backend = ScriptedBackend(script=unknown_then_finish)
    Runner(cfg, backend=backend, progress=False).run()
    assert len(backend.requests) == 1 and [r.get("kind") for r in steps(tmp_path / "o")] == [None]


def test_a_run_folder_keeps_its_policy(tmp_path, capsys):
    argv = run_argv(tmp_path, "k", "--backend", "scripted")
    assert main(argv) == 0
    # the summary says how many model turns made valid calls, under which policy
    assert "valid calls on 2 of 2 model turns (100.0%) (constrain off, on-invalid observe" in capsys.readouterr().out
    assert main([*argv, "--on-invalid", "reask:2"]) == 2
    assert "on_invalid: 'observe' -> 'reask:2'" in capsys.readouterr().err


# ---------------------------------------------------------------- upstream runs unchanged

def test_compat_stb_runs_are_byte_identical_when_neither_flag_is_given(tmp_path, monkeypatch):
    """The answer files of a --compat stb toolllama run (CoT@2, a ReAct-text script) with neither --constrain nor
    --on-invalid are the bytes pinned before issue 22 (tests/fixtures/golden_runs.json, "react-cot";
    tests/test_run_golden.py checks all six pinned runs, step records and manifests included), and so are those
    of the same run with both flags at their defaults; no request carries a constraint and no re-ask is recorded."""
    golden = json.loads((Path(__file__).parent / "fixtures" / "golden_runs.json").read_text())["react-cot"]
    settings = {k: v for k, v in golden["config"].items() if k not in ("constrain", "on_invalid")}
    assert settings["compat"] == "stb" and settings["dialect"] == "toolllama"

    def run(name, structured_off=False, **flags):
        cfg = RunConfig(**{**settings, "name": name, "out_root": str(tmp_path), **flags})
        backend = ScriptedBackend(script=react_script)
        runner = Runner(cfg, backend=backend, progress=False)
        if structured_off:
            runner.structured = None  # the agent without any structured-output code path
        runner.run()
        return backend.requests

    plain = run("plain")
    explicit = run("explicit", constrain="off", on_invalid="observe")
    without = run("without", structured_off=True)
    for name in ("plain", "explicit", "without"):
        digests = {path: hashlib.sha256(data).hexdigest() for path, data in answers(tmp_path / name).items()}
        assert digests == golden["answers"], name
    assert all(set(r.extra) == {"prefill"} for r in plain + explicit)  # no constraint went to the model
    assert [r.prompt for r in plain] == [r.prompt for r in without]
    for name in ("plain", "explicit"):
        records = steps(tmp_path / name)
        assert records and all("kind" not in r and "attempt" not in r for r in records)  # no re-ask record
        totals = json.loads((tmp_path / name / "manifest.json").read_text())["totals"]
        assert totals["reasks"] == 0 and totals["model_calls"] == len(plain)


@pytest.mark.slow
def test_the_local_model_writes_valid_calls_and_answers_on_the_sample_when_constrained(tmp_path):
    """Issue 22's bar on the offline default (SmolLM2-135M, hf, toolllama with runners/configs/smollm2.yaml,
    data/sample, CoT@1, the embedded server): with --constrain schema at least 95% of the model turns are valid
    calls and more than half of the queries end with a valid answer. The converted local model, no download;
    about 1.5 min on 2 cores."""
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    from runners.models import local_model

    if not local_model.is_converted(local_model.default_cache_folder()):
        pytest.skip("the local model is not converted yet (make model)")
    code = main(["run", "--name", "h", "--out-root", str(tmp_path), "--quiet", "--config",
                 "runners/configs/smollm2.yaml", "--server", "embedded", "--concurrency", "1",
                 "--tool-root", "data/sample/toolenv/tools", "--constrain", "schema", "--on-invalid", "observe"])
    assert code == 0
    totals = json.loads((tmp_path / "h" / "manifest.json").read_text())["totals"]
    assert totals["queries"] == 6 and totals["model_turns"] > 0
    assert totals["valid_turns"] / totals["model_turns"] >= 0.95
    assert totals["valid"] > totals["queries"] / 2
    for record in steps(tmp_path / "h"):
        assert record["error"] == "none" and record["status"] in (0, 3)
