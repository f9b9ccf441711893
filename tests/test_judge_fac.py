"""FAC against the loopback stand-in: upstream's scoring rule, empty answers, missing ids, the unwrap quirk."""

from __future__ import annotations

import json

from runners.cli import main
from tests.test_judge_loopback import example, give_answer, stand_in  # noqa: F401 - fixture
from toolbench_adapter.evaluation.judging.fac import answer_text, fac_score


def test_fac_scoring_rule_checks_unsolved_first():
    assert fac_score("Answer Status\nSolved\nReason\nfine") == 1
    assert fac_score("Answer Status\nUnsolved\nReason\nmissing part") == 0
    assert fac_score("SOLVED") == 1 and fac_score("no idea") == 0


def test_fac_sees_the_raw_finish_string_unless_unwrapped():
    raw = give_answer("Paris is sunny")
    assert raw.startswith("{\n") and answer_text(raw) == raw  # upstream's "{\\" test never fires
    assert answer_text(raw, unwrap_finish=True) == "Paris is sunny"
    assert answer_text('{\\"final_answer\\"}') == '{\\"final_answer\\"}'  # not JSON: kept


def test_cli_fac_over_the_test_ids(stand_in, tmp_path, capsys):  # noqa: F811 - fixture
    def script(payload):
        prompt = payload["messages"][0]["content"]
        assert payload["temperature"] == 0 and "tools" not in payload
        verdict = "Solved" if "GOOD" in prompt else "Unsolved"
        return {"role": "assistant", "content": f"Answer Status\n{verdict}\nReason\nscripted"}

    server = stand_in(script)
    converted = tmp_path / "conv" / "mm" / "G1_tool.json"
    converted.parent.mkdir(parents=True)
    converted.write_text(json.dumps({"1": example("GOOD q", give_answer("a")), "2": example("bad q", give_answer("b")),
                                     "3": example("GOOD but empty", "")}))
    ids = tmp_path / "ids"
    ids.mkdir()
    (ids / "G1_tool.json").write_text(json.dumps({"1": 0, "2": 0, "3": 0, "4": 0}))
    code = main(["judge", "--metric", "fac", "--converted", str(converted), "--out", str(tmp_path / "o"),
                 "--judge-url", server.url, "--judge-model", "fac-judge", "--test-ids", str(ids)])
    assert code == 0
    assert "FAC upstream G1_tool mm: 25.0" in capsys.readouterr().out  # 1 of 4 ids
    assert server.count == 2  # no request for the empty answer nor for the missing id 4
    records = json.loads((tmp_path / "o" / "fac_G1_tool_mm.json").read_text())
    assert records["missing"] == ["4"] and records["records"]["3"]["score"] == 0
