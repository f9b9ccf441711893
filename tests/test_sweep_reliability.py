"""Issue 41, sweeps: names past the filesystem's limit refused at planning, a sweep's identity covering its
resolved settings (config files' contents), one sweep command per folder, labels that cannot hide characters in
the matrix, and the summary's and the matrix's wording (a judge endpoint's utilisation, judges: [], judging
progress, a mistyped spec file).

Real sweeps: the scripted agent on the sample, judged by a loopback OpenAI stand-in."""

from __future__ import annotations

import json
import re
import time

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import solved
from tests.test_sweep import sweep, write


@pytest.fixture(scope="module")
def judge():
    with OpenAIStandin(models=("judge-x",), respond=solved) as standin:
        yield standin


def spec_text(judge=None, *, name: str = "rel", parsers: str = "[react-find, react-robust]", base_extra: str = "",
              seeds: str = "") -> str:
    judges = (f'[{{backend: openai, url: "{judge.url}", model: judge-x, api_key: x, evaluate_times: 1}}]'
              if judge else "[]")
    axes = f"  parser: {parsers}\n" + (f"  seed: {seeds}\n" if seeds else "")
    return (f"name: {name}\nbase: {{backend: scripted, groups: [G1_instruction], limit: 1{base_extra}}}\n"
            f"axes:\n{axes}judges: {judges}\n")


# ---- names past the file-name limit ------------------------------------------------------------------------------

def test_a_label_past_the_file_name_limit_is_refused_at_planning_and_the_limit_it_states_runs(tmp_path, judge,
                                                                                             capsys):
    """Was: --dry-run passed, the cell ran, and its judge's label file failed with `OSError: File name too long`
    (the cell's "traceback" path could not exist either). Now exit 2 naming the key, before --dry-run prints; a
    label shortened by what the message says runs and is judged."""
    long = "x" * 240
    out = tmp_path / "sweeps"
    spec = write(tmp_path, spec_text(judge, parsers=f"[react-find, {{label: {long}, parser: react-robust}}]"))
    for flags in (["--dry-run"], []):
        assert sweep(spec, out, *flags) == 2
        err = capsys.readouterr().err
        assert str(spec) in err and "axes.parser[1]" in err and "bytes" in err, err
        assert "Traceback" not in err and not out.exists()
    shorter = int(re.search(r"at least (\d+) characters shorter", err).group(1))
    fits = "x" * (len(long) - shorter)
    spec = write(tmp_path, spec_text(judge, parsers=f"[react-find, {{label: {fits}, parser: react-robust}}]"))
    assert sweep(spec, out, "--judge-cache", str(tmp_path / "judge.jsonl")) == 0, capsys.readouterr()
    labels = list((out / "rel" / fits / "eval").glob("*/*.meta.json"))
    assert labels and max(len(p.name) for p in labels) > 200  # the longest name, written whole


def test_a_sweep_name_past_the_limit_is_refused_naming_name(tmp_path, capsys):
    spec = write(tmp_path, spec_text(name="n" * 250))
    assert sweep(spec, tmp_path / "sweeps", "--dry-run") == 2
    err = capsys.readouterr().err
    assert "field: name (or --name)" in err or "name (or --name)" in err, err
    assert not (tmp_path / "sweeps").exists()


# ---- a sweep's identity: its resolved settings -------------------------------------------------------------------

def test_a_config_file_changed_between_runs_is_refused_naming_what_differs(tmp_path, capsys):
    """Was: the spec's text was the same, so a new cell ran at max_step 20 / temperature 0.9 beside an old one at
    12 / 0, and the matrix compared them as if they differed in their axis alone."""
    config = tmp_path / "run.yaml"
    config.write_text("max_step: 12\ntemperature: 0\n", encoding="utf-8")
    out = tmp_path / "sweeps"
    text = spec_text(base_extra=f", config: {config}", parsers="[react-find]")
    assert sweep(write(tmp_path, text), out) == 0
    state = json.loads((out / "rel" / "sweep.json").read_text())
    assert state["cells"][0]["settings"]["max_step"] == 12  # what it ran with, config file read
    config.write_text("max_step: 20\ntemperature: 0.9\n", encoding="utf-8")
    grown = write(tmp_path, text.replace("[react-find]", "[react-find, react-robust]"), "grown.yaml")
    capsys.readouterr()
    assert sweep(grown, out) == 2
    err = capsys.readouterr().err
    assert "cell react-find: max_step 12 -> 20, temperature 0 -> 0.9" in err, err
    assert str(config) in err and "--name NEW" in err
    assert not (out / "rel" / "react-robust").exists()  # nothing ran beside the old cell
    assert sweep(grown, out, "--dry-run") == 2  # the plan says so too
    config.write_text("max_step: 12\ntemperature: 0\n", encoding="utf-8")  # put back: the new cell runs
    assert sweep(grown, out) == 0


# ---- one sweep command per folder --------------------------------------------------------------------------------

def test_a_second_sweep_on_the_same_folder_is_refused_naming_who_holds_it(tmp_path, capsys):
    from runners.execution.runlock import RunFolderLock

    spec = write(tmp_path, spec_text())
    out = tmp_path / "sweeps"
    assert sweep(spec, out) == 0
    before = (out / "rel" / "sweep.json").read_bytes()
    with RunFolderLock(out / "rel", "tba sweep other.yaml --name rel", hold_folder=True):
        started = time.monotonic()
        assert sweep(spec, out) == 2
        assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    assert "another command is writing this sweep's folder" in err and "tba sweep other.yaml --name rel" in err, err
    assert (out / "rel" / "sweep.json").read_bytes() == before  # its record untouched
    assert sweep(spec, out) == 0  # free again


# ---- hidden characters -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("char, shown", [("\u202e", "\\u202e"), ("\x00", "\\x00"), ("\u2066", "\\u2066")])
def test_a_label_holding_a_control_or_direction_character_is_refused(tmp_path, capsys, char, shown):
    spec = write(tmp_path, spec_text(parsers=f'[react-find, {{label: "ok{json.dumps(char)[1:-1]}x", '
                                             'parser: react-robust}]'))
    assert sweep(spec, tmp_path / "sweeps", "--dry-run") == 2
    err = capsys.readouterr().err
    assert "axes.parser[1]" in err and shown in err and char not in err, err


def test_the_matrix_shows_hidden_characters_of_sweep_json_as_escapes(tmp_path):
    """sweep.json is a file anyone can edit: what it names reaches matrix.md / .csv / .tex / the index escaped."""
    from toolbench_adapter.report.sweep_matrix import build_matrix, write_matrix
    from toolbench_adapter.report.sweep_matrix_render import to_html

    spec = write(tmp_path, spec_text())
    out = tmp_path / "sweeps"
    assert sweep(spec, out) == 0
    record = json.loads((out / "rel" / "sweep.json").read_text())
    record["cells"][1]["axes"]["parser"] = "evil\u202eelif\x00cut"
    record["cells"][1]["reason"] = "a\x1b[2Jreason"
    (out / "rel" / "sweep.json").write_text(json.dumps(record))
    matrix = build_matrix(out / "rel")
    texts = {p.name: p.read_text(encoding="utf-8") for p in write_matrix(matrix, out / "rel")}
    texts["index"] = to_html(matrix, {})
    for name, text in texts.items():
        assert "\u202e" not in text and "\x00" not in text and "\x1b" not in text, name
        assert "evil\\u202eelif\\x00cut" in text.replace("\\textbackslash{}", "\\"), name


# ---- wording -----------------------------------------------------------------------------------------------------

def test_a_sweep_without_judges_says_so_in_its_rows_once(tmp_path):
    from toolbench_adapter.report.sweep_matrix import build_matrix

    assert sweep(write(tmp_path, spec_text()), tmp_path / "sweeps") == 0
    matrix = build_matrix(tmp_path / "sweeps" / "rel")
    assert all("judges: []" in row.reason and "no evaluation by" not in row.reason for row in matrix.rows)
    text = (tmp_path / "sweeps" / "rel" / "matrix.md").read_text(encoding="utf-8")
    assert "no evaluation by no judge" not in text
    assert sum("judges: []" in note for note in matrix.notes) == 1


def test_the_summary_names_a_judge_endpoint_and_its_busy_stretch(tmp_path, capsys):
    """Was: "endpoint URL: utilisation 0% of its 8 slots" for a judge endpoint that served every judgement: over
    the whole sweep it idles while the cells run."""
    with OpenAIStandin(models=("judge-y",), respond=solved) as fresh:  # a judge no other test's cache holds
        spec = write(tmp_path, spec_text(fresh).replace("judge-x", "judge-y"))
        assert sweep(spec, tmp_path / "sweeps", "--judge-cache", str(tmp_path / "j.jsonl")) == 0
        out = capsys.readouterr().out
        line = next((line for line in out.splitlines() if "endpoint " + fresh.url in line), out[-2000:])
    requests = int(re.search(r": (\d+) requests", line).group(1))
    assert line.startswith(f"  judge endpoint {fresh.url}") and requests >= 2, line
    assert "utilisation" not in line and re.search(r"at most [1-8] of its 8 slots at once", line), line


def test_judging_has_its_own_progress_bar(tmp_path, judge, capsys):
    """Was: the sweep's one bar (queries) stood at 100% while the cells were judged."""
    spec = write(tmp_path, spec_text(judge))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "sweeps"), "--judge-cache",
                 str(tmp_path / "j.jsonl")]) == 0
    err = capsys.readouterr().err
    assert re.search(r"judging: 100%[^\n\r]*2/2 \[[^\n\r]* by judge-x", err), err[-1500:]


def test_a_mistyped_spec_file_names_the_closest_specs(tmp_path, capsys):
    write(tmp_path, spec_text(), "compare-structured.yaml")
    assert main(["sweep", str(tmp_path / "compare-structure.yaml"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "sweep spec not found" in err and f"did you mean {tmp_path / 'compare-structured.yaml'}?" in err, err
    assert main(["sweep", "dmeo.yaml", "--dry-run"]) == 2  # a bare name: the shipped specs too
    assert "did you mean runners/sweeps/demo.yaml?" in capsys.readouterr().err
