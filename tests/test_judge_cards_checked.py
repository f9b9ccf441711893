"""Issue 40 item 4 and issue 41 item 5: a judge card is checked each time it is read, and one that fails a check is
never cited ("judge card unreadable: REASON; run `tba judge-audit …` again"); no reader of a card raises, whatever
the file holds or is (a kappa that is a string was a ValueError in `tba table`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from toolbench_adapter.evaluation.audit.cards import CARD_FORMAT, card_path, citation, write_card
from toolbench_adapter.evaluation.audit.sets import AUDIT_SETS, labels_digest, set_digest
from toolbench_adapter.evaluation.evaluations import JudgeIdentity
from toolbench_adapter.evaluation.labelsets import discover_all

EXAMPLE = AUDIT_SETS["stb-example"]
IDENTITY = JudgeIdentity("judge-model @ http://127.0.0.1:9/v1 [tools]", "judge-model", ("http://127.0.0.1:9/v1",),
                         "tools", 3, "default", "sha")


def entry(**changes) -> dict:
    """What `tba judge-audit --set stb-example` keeps of an audit (report.card_entry)."""
    return {"set": "stb-example", "labels": None, "sample": None, "seed": None, "limit": None,
            "labels_sha256": EXAMPLE.labels_sha256, "set_answers": EXAMPLE.answers, "answers": 6, "pairs": 15,
            "pairs_by_rule": 3, "accuracy": 0.8, "kappa": 0.62, "kappa_why": None, "kappa_interval": [0.51, 0.71],
            "sopr_shift": 4.1, "sopr_shift_interval": [1.2, 7.0], **changes}


def carded(tmp_path: Path, **changes) -> Path:
    return write_card(IDENTITY, entry(**changes), tmp_path)


def test_the_shipped_sets_digest_and_answers_are_their_files():
    assert set_digest(EXAMPLE) == (EXAMPLE.labels_sha256, EXAMPLE.answers) == (EXAMPLE.labels_sha256, 6)


def test_a_sound_card_is_cited(tmp_path):
    carded(tmp_path)
    assert citation(IDENTITY, tmp_path) == (f"judge {IDENTITY.short_id}: kappa 0.62 [0.51, 0.71], SoPR shift +4.1 "
                                            "[+1.2, +7.0] points against the released labels on 6 answers (set "
                                            "stb-example)")


@pytest.mark.parametrize(("changes", "reason"), [
    ({"kappa": "0.9"}, "kappa '0.9' is not a number between -1 and 1"),  # issue 41 item 5
    ({"kappa": 1.7}, "kappa 1.7 is not a number between -1 and 1"),
    ({"kappa": None, "kappa_why": None}, "kappa is missing without a reason"),
    ({"kappa_interval": ["a", 0.3]}, "kappa_interval"),
    ({"sopr_shift": "big"}, "sopr_shift 'big' is not a number"),
    ({"sopr_shift_interval": [5.0, 1.0]}, "sopr_shift_interval"),
    ({"answers": "6"}, "answers '6' is not a positive whole number"),
    ({"answers": 765}, "765 answers judged, but its labels hold 6"),
    ({"set": "stb-full"}, "set 'stb-full' is not a set the project knows"),
    ({"labels_sha256": "0" * 64}, "set stb-example: its labels' digest or answer count"),
    ({"set_answers": 765}, "set stb-example: its labels' digest or answer count (765)"),
    ({"labels_sha256": None}, "does not record its labels' digest"),
    ({"sample": -1}, "sample -1 is not a positive whole number"),
])
def test_a_card_that_fails_a_check_is_never_cited(tmp_path, changes, reason):
    carded(tmp_path, **changes)
    line = citation(IDENTITY, tmp_path)
    assert line.startswith("judge card unreadable: ") and reason in line, line
    assert line.endswith("--judge-model judge-model --judge-mode tools --evaluate-times 3` again")
    assert not line.startswith(f"judge {IDENTITY.short_id}:")  # never the card's figures as a citation


def test_a_card_filed_under_one_judge_holding_another_is_not_cited(tmp_path):
    path = carded(tmp_path)
    card = json.loads(path.read_text())
    card["judge"]["id"] = "another@host-tools-x3"
    path.write_text(json.dumps(card))
    line = citation(IDENTITY, tmp_path)
    assert line.startswith("judge card unreadable: ") and "holds judge 'another@host-tools-x3'" in line
    # the evaluation's own record names the judge: a card for another id is not this evaluation's
    carded(tmp_path)
    line = citation({**IDENTITY.as_dict(), "id": "x@y-tools-x3"}, tmp_path)
    assert "not audited" in line  # its file is x@y-tools-x3.json: there is none


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind", ["fifo", "binary", "huge", "loop", "deep", "list"])
def test_a_card_file_that_is_no_card_is_named_never_read_past_what_it_is(tmp_path, kind):
    path = card_path(IDENTITY.short_id, tmp_path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "binary":
        path.write_bytes(b"\xff\x00" * 100)
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(64 << 20)
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "deep":
        path.write_text("[" * 200_000 + "]" * 200_000)
    else:
        path.write_text(json.dumps([{"format": CARD_FORMAT}]))
    line = citation(IDENTITY, tmp_path)  # a FIFO would block here forever if it were opened
    assert line.startswith(f"judge card unreadable: {path}: ") and line.endswith("again"), line


def test_an_audit_on_a_labels_folder_is_cited_while_its_labels_are_unchanged(tmp_path):
    import shutil

    labels = tmp_path / "labels"
    shutil.copytree(EXAMPLE.labels, labels)
    digest, answers = labels_digest(discover_all([labels]))
    carded(tmp_path, set=None, labels=[str(labels)], labels_sha256=digest, set_answers=answers)
    assert citation(IDENTITY, tmp_path).endswith(f"on 6 answers (labels {labels})")
    label_file = next(labels.rglob("*.json"))
    label_file.write_text(label_file.read_text().replace("Solved", "Unsolved", 1))
    line = citation(IDENTITY, tmp_path)
    assert line.startswith("judge card unreadable: ") and "changed since the audit" in line
    shutil.rmtree(labels)
    assert "cannot be read to check it" in citation(IDENTITY, tmp_path)


def test_tba_table_prints_the_unreadable_line_for_a_card_whose_kappa_is_a_string(tmp_path, capsys, monkeypatch):
    """Issue 41 item 5: before, `tba table` ended in ValueError (kappa formatted as a number)."""
    from tests.openai_standin import OpenAIStandin
    from tests.test_evidence import SOLVED

    monkeypatch.setenv("TBA_JUDGE_CARDS", str(tmp_path / "cards"))
    Runner(RunConfig(name="r", out_root=str(tmp_path), backend="scripted"), progress=False).run()
    with OpenAIStandin(respond=SOLVED) as judge:
        assert main(["evaluate", str(tmp_path / "r"), "--judge-url", judge.url, "--judge-model", judge.model,
                     "--evaluate-times", "3", "--cache", str(tmp_path / "j.jsonl"), "--quiet"]) == 0
    record = json.loads(next((tmp_path / "r" / "eval").glob("*/evaluation.json")).read_text())
    identity = record["judge"]
    write_card(JudgeIdentity(identity["name"], identity["model"], tuple(identity["endpoints"]), identity["mode"], 3,
                             "default", identity["evaluator_sha256"]), entry(kappa="0.99"), tmp_path / "cards")
    capsys.readouterr()
    assert main(["table", str(tmp_path / "r"), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert "judge card unreadable: kappa '0.99' is not a number between -1 and 1; run `tba judge-audit" in out
