"""tba compare-parsers --input RUN_FOLDER tells one story (issue 33, item 9): the per-parser table, the chart's
parsers, the agreement matrix and the disagreement count are over the same parsers, a pair that differs in the
matrix has its outputs among the disagreements (and only such outputs are), and a parser said not to apply
read nothing. Two real runs of the sample set (scripted model, embedded server): one whose outputs no parser
decodes a call from (the issue's SmolLM2 run: an Action line and no Action Input), one where they disagree."""

from __future__ import annotations

import csv
import json
import re

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend

FUNCTION_NAME = re.compile(r"""["']name["']: ["']([^"']+)["']""")
FINISH = 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "42"}'
VARIED = {  # by the query id's last digit: outputs the parsers read differently
    1: "Thought: I will look.\nAction: {fn}",
    3: 'Thought: call\nAction: {fn}\nAction Input: {{"query": "x"}}\nand then I will read it',
    4: "Thought: call\nAction: {fn}\nAction Input: {{'query': 'x',}}",
    5: "",
    6: "I am not sure what to do here.",
    7: 'Thought: call\nAction: {fn}\nAction Input: {{"query": "x"}}',
}


def no_arguments(request):
    """What SmolLM2 wrote in the issue's run: an Action line, no Action Input, on every turn."""
    return "Thought: I will look.\nAction: " + FUNCTION_NAME.search(request.prompt).group(1)


def varied(request):
    if request.key["path"]:
        return FINISH
    return VARIED[request.key["query_id"] % 10].format(fn=FUNCTION_NAME.search(request.prompt).group(1))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name, script in (("none-decoded", no_arguments), ("varied", varied)):
        cfg = RunConfig(name=name, out_root=str(root), backend="scripted", dialect="toolllama",
                        parser="react-find", method="CoT@1", max_step=4)
        Runner(cfg, backend=ScriptedBackend(script), progress=False).run()
    return root


def compare(run_dir, out, capsys):
    assert main(["compare-parsers", "--input", str(run_dir), "--out", str(out), "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    summary = (out / "summary.md").read_text(encoding="utf-8")
    rows = {r["parser"]: r for r in csv.DictReader((out / "parsers.csv").open(encoding="utf-8"))}
    agreement = list(csv.reader((out / "agreement.csv").open(encoding="utf-8")))
    records = [json.loads(line) for line in (out / "disagreements.jsonl").read_text().splitlines()]
    return stdout, summary, rows, agreement, records


def check_one_story(stdout, summary, rows, agreement, records):
    """The invariants the issue found broken, whatever the outputs."""
    total = int(stdout.split()[0])
    table = summary.split("## Per parser")[1].split("## Error kinds")[0]
    in_table = re.findall(r"^\| ([a-z-]+) \| \d", table, flags=re.M)
    in_matrix = agreement[0][1:]
    assert in_table == in_matrix  # the table and the matrix show the same parsers
    on_stdout = [line.split()[0] for line in stdout.splitlines() if " read a call " in line]
    assert on_stdout == in_table
    # a parser in the table read a call; one folded away read none (and the line says which)
    assert all(int(rows[name]["read_call"]) > 0 for name in in_table)
    folded = [name for name in rows if name not in in_table]
    assert all(int(rows[name]["read_call"]) == 0 for name in folded)
    if folded:
        assert f"(format does not apply): {', '.join(folded)}" in table
    # the count heads the records, and stdout says the same number
    count = int(re.search(r"## Disagreements: (\d+) of (\d+) outputs", summary).group(1))
    assert count == len(records)
    if len(in_table) > 1:
        assert f"disagreements: {count} of {total} outputs" in stdout
    for record in records:
        assert sorted(record["parsers"]) == sorted(in_matrix)  # over the matrix's parsers
    # a pair below 1 in the matrix differs on some recorded disagreement; a pair at 1 (or n/a) on none
    for row in agreement[1:]:
        a = row[0]
        for b, share in zip(in_matrix, row[1:], strict=True):
            differ = [r for r in records if r["parsers"][a] is not None and r["parsers"][b] is not None
                      and r["parsers"][a]["calls"] != r["parsers"][b]["calls"]]
            assert bool(differ) == (share not in ("1.0000", "n/a")), (a, b, share)
    # the message parser on a text model's run: plain text, so it applies to none, and is said to
    assert rows["openai-tools"]["applicable"] == "0"
    assert f"none of the {total} outputs came as one" in summary
    return in_table, count, total


def test_a_run_whose_outputs_no_parser_decodes_still_shows_the_react_parsers_and_their_disagreement(
        runs, tmp_path, capsys):
    stdout, summary, rows, agreement, records = compare(runs / "none-decoded", tmp_path / "cmp", capsys)
    in_table, count, total = check_one_story(stdout, summary, rows, agreement, records)
    # the ReAct parsers read the Action line (no arguments): they apply, in the table with 0 parsed
    assert in_table == ["react-find", "react-regex", "react-robust"]
    assert all(rows[name]["with_dict_call"] == "0" and rows[name]["read_call"] == str(total) for name in in_table)
    assert not re.search(r"format does not apply\): .*react", summary)
    # react-find's slicing drops a name's last character: it differs from react-regex on every output,
    # and so does the count
    matrix = {row[0]: dict(zip(agreement[0][1:], row[1:], strict=True)) for row in agreement[1:]}
    assert matrix["react-find"]["react-regex"] == "0.0000"
    assert matrix["react-regex"]["react-robust"] == "1.0000"
    assert count == total > 0


def test_a_run_where_the_parsers_disagree_on_some_outputs(runs, tmp_path, capsys):
    stdout, summary, rows, agreement, records = compare(runs / "varied", tmp_path / "cmp", capsys)
    in_table, count, total = check_one_story(stdout, summary, rows, agreement, records)
    assert 0 < count < total
    assert {"react-find", "react-regex", "react-robust"} <= set(in_table)


def test_the_shipped_corpus_headline_says_what_its_count_is_made_of(tmp_path, capsys):
    """Issue 41: `make compare-parsers` on the shipped corpus said "disagreements: 123 of 123" because fenced-json
    read one call from one of the 123 ReAct outputs: every other output then "disagreed". The headline keeps the
    count and says what it is made of: the stray parser, the count without it, and the pair most alike."""
    stdout, summary, rows, agreement, records = compare("data/parser_corpus/react_outputs.jsonl", tmp_path / "c",
                                                        capsys)
    check_one_story(stdout, summary, rows, agreement, records)
    line = next(line for line in stdout.splitlines() if line.startswith("disagreements: "))
    total = len(records)
    assert line.startswith(f"disagreements: {total} of 123 outputs (fenced-json, react-find")
    assert "fenced-json found a call in 1 of the 123 outputs only (a format these outputs are not in)" in line
    without = int(re.search(r"without fenced-json, react-find, react-regex, react-robust disagree on (\d+) of 123",
                            line).group(1))
    assert without < total and f"({total - without} of the {total} are fenced-json's alone)" in line
    pair = re.search(r"most alike: (\S+) and (\S+), the same calls on (\d+) of the (\d+) outputs", line)
    a, b, same, both = pair.group(1), pair.group(2), int(pair.group(3)), int(pair.group(4))
    row = next(r for r in agreement if r[0] == a)
    assert float(row[agreement[0].index(b)]) == pytest.approx(same / both, abs=1e-4)  # the matrix's own share
    assert "fenced-json found a call in 1 of the 123 outputs only" in summary
