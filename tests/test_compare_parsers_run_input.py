"""tba compare-parsers --input RUN_FOLDER: every model call's raw output as the run recorded it (step records),
re-read by the parser the run used with the error kinds it recorded live; run logs refused by name; an older
run without recorded outputs refused with the fix. Real runs of the sample set (scripted model, embedded
server)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.parsers import get_parser
from toolbench_adapter.report.parser_corpus import read_outputs

FUNCTION_NAME = re.compile(r"""["']name["']: ["']([^"']+)["']""")
FINISH = 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "42"}'
FIRST = {  # by the query id's last digit: outputs small models write, each read differently by the parsers
    1: "Thought: I will look.\nAction: {fn}",  # no Action Input line
    3: 'Thought: call\nAction: {fn}\nAction Input: {{"query": "x"}}\nand then I will read it',  # trailing text
    4: "Thought: call\nAction: {fn}\nAction Input: {{'query': 'x',}}",  # not JSON: the ladder repairs it
    5: "",  # nothing at all
    6: "I am not sure what to do here.",  # prose, no call
    7: 'Thought: call\nAction: {fn}\nAction Input: {{"query": "x"}}',  # clean
}


def varied_script(request):
    """The same malformed first output until a call gets through, then Finish (so a query makes several calls)."""
    if request.key["path"]:
        return FINISH
    name = FUNCTION_NAME.search(request.prompt).group(1)
    return FIRST[request.key["query_id"] % 10].format(fn=name)


def scripted_run(root, name, method, parser, backend=None, dialect="toolllama"):
    cfg = RunConfig(name=name, out_root=str(root), backend="scripted", dialect=dialect, parser=parser,
                    method=method, max_step=4)
    Runner(cfg, backend=backend or ScriptedBackend(varied_script), progress=False).run()
    return root / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {
        "cot": scripted_run(root, "cot-find", "CoT@1", "react-find"),
        "dfs": scripted_run(root, "dfs-robust", "DFS_woFilter_w2", "react-robust"),
        # native tool calls: the run's parser reads the assistant message, not text
        "native": scripted_run(root, "native", "CoT@1", "openai-tools", ScriptedBackend(), "openai-tools"),
        "root": root,
    }


def model_calls(run_dir) -> int:
    return json.loads((run_dir / "manifest.json").read_text())["totals"]["model_calls"]


@pytest.mark.parametrize("kind", ["cot", "dfs", "native"])
def test_a_run_folder_gives_every_call_and_its_live_error_kinds_are_reproduced(runs, kind, tmp_path, capsys):
    run_dir = runs[kind]
    parser_name = json.loads((run_dir / "manifest.json").read_text())["parser"]
    outputs = read_outputs([run_dir])
    # every model call of the run, not only the calls the answer files keep (the valid answers' paths)
    assert len(outputs) == model_calls(run_dir) > 6
    assert all(o.recorded["parser"] == parser_name for o in outputs)
    # the parser the run used, re-reading the recorded texts, gives the error kinds (and rungs) recorded live
    parser = get_parser(parser_name)
    for output in outputs:
        turn = parser.parse_message(output.message) if kind == "native" else parser.parse(output.text)
        assert (turn.error.value, turn.rung.value if turn.rung else None) == (
            output.recorded["error"], output.recorded["rung"]), output.source
    if kind != "native":  # the test means something: the run met several kinds of malformed output
        assert len(Counter(o.recorded["error"] for o in outputs)) >= 4

    assert main(["compare-parsers", "--input", str(run_dir), "--out", str(tmp_path / "cmp"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    n = len(outputs)
    assert out.startswith(f"{n} model outputs ({n} from run step records)")
    assert (f"live check: {parser_name} re-read the {n} outputs it read live in the runs: error kind and JSON "
            f"rung as recorded on {n} of {n}\n") in out
    assert "DIFFERS" not in out
    assert f"as recorded on {n} of {n}" in (tmp_path / "cmp" / "summary.md").read_text()


def test_group_folders_answer_files_and_step_files_read_the_runs_records(runs, capsys):
    run_dir = runs["cot"]
    everything = read_outputs([run_dir])
    for group in ("G1_instruction", "G1_category"):
        of_group = [o for o in everything if f"/{group}/" in o.source]
        assert len(read_outputs([run_dir / group])) == len(of_group) > 1  # the query's failed calls too
        answer = next((run_dir / group).glob("*.json"))
        assert [o.source for o in read_outputs([answer])] == [o.source for o in of_group]
        step_file = run_dir / "steps" / group / answer.name.replace(".json", ".jsonl")
        assert [o.text for o in read_outputs([step_file])] == [o.text for o in of_group]
    assert len(read_outputs([run_dir / "steps.jsonl"])) == len(everything)


def test_a_folder_of_runs_reads_each_run_and_never_its_logs(runs):
    outputs = read_outputs([runs["root"]])
    assert len(outputs) == sum(model_calls(runs[k]) for k in ("cot", "dfs", "native"))
    assert all(o.recorded for o in outputs)  # no line of queries.jsonl / errors.jsonl read as a model text


@pytest.mark.parametrize("log", ["queries.jsonl", "manifest.json"])
def test_a_runs_own_log_is_refused_by_name(runs, log, tmp_path, capsys):
    path = runs["cot"] / log
    assert main(["compare-parsers", "--input", str(path), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert f"{log} is the run's own log, not model outputs" in err
    assert f"--input {runs['cot']}" in err  # the fix names the run folder, not a rewrite of the tool's file


def test_an_older_run_without_recorded_outputs_is_refused_with_the_fix(runs, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(runs["cot"], old)
    for path in [old / "steps.jsonl", *(old / "steps").glob("*/*.jsonl")]:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("output", "sent")}) + "\n"
                                for r in lines))
    assert main(["compare-parsers", "--input", str(old), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert "keep no raw output" in err and "steps.jsonl" in err and f"--input {old}/G1_instruction" in err
    # its group folders still read as answer files (only the calls each answer keeps), as before
    assert main(["compare-parsers", "--input", str(old / "G1_tool"), "--out", str(tmp_path / "cmp"),
                 "--no-progress"]) == 0
    assert "from run step records" not in capsys.readouterr().out
