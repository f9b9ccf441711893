"""fileio: atomic writes follow the umask; unwritable places are InputErrors naming the path."""

from __future__ import annotations

import json
import os
import stat

import pytest

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import (
    OutputPathError,
    check_writable,
    current_umask,
    write_json_atomic,
    write_text_atomic,
)
from toolbench_adapter.report.parser_corpus import ModelOutput
from toolbench_adapter.report.parsers import compare_parsers, write_comparison
from toolbench_adapter.runs.folder import MANIFEST


@pytest.fixture
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)

    saved = os.umask(0o022)
    os.umask(saved)
    yield set_mask
    os.umask(saved)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writes_follow_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    assert current_umask() == mask
    answer = tmp_path / "G1_instruction" / "1_CoT@1.json"
    write_json_atomic(answer, {"answer_generation": {}}, fsync=True)  # answer files (fsynced)
    write_json_atomic(tmp_path / MANIFEST, {"totals": {}})  # manifests
    write_text_atomic(tmp_path / "table.md", "x")
    for path in (answer, tmp_path / MANIFEST, tmp_path / "table.md"):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


def test_the_parser_comparison_report_follows_the_umask(tmp_path, umask):
    umask(0o077)  # a private umask: the report must not be widened to 0644 by hand
    result = compare_parsers([ModelOutput(source="1", text='Action: f\nAction Input: {"a": 1}')], ["react-find"],
                             progress=False)
    written = write_comparison(result, tmp_path / "report")
    assert {path.name for path in written} >= {"summary.md", "parsers.csv", "parsers.png"}
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_file_in_the_way_of_the_folder_is_an_input_error(tmp_path):
    (tmp_path / "out").write_text("I am a file")
    with pytest.raises(OutputPathError) as caught:
        write_json_atomic(tmp_path / "out" / "run" / "a.json", {})
    assert isinstance(caught.value, InputError)
    assert str(tmp_path / "out" / "run" / "a.json") in str(caught.value)
    assert "in the way" in caught.value.fix and str(tmp_path / "out") in caught.value.fix
    with pytest.raises(OutputPathError):
        check_writable(tmp_path / "out" / "run")
    assert (tmp_path / "out").read_text() == "I am a file"


def test_a_folder_where_the_file_should_go_is_an_input_error(tmp_path):
    (tmp_path / "a.json").mkdir()
    with pytest.raises(OutputPathError) as caught:
        write_json_atomic(tmp_path / "a.json", {})
    assert "folder" in caught.value.fix
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # the temp file was removed


def test_a_read_only_place_is_an_input_error():
    # tests run as root, where chmod does not stop writes; /proc/self refuses new files to anyone
    with pytest.raises(OutputPathError) as caught:
        check_writable("/proc/self/tba-out")
    assert "/proc/self/tba-out" in str(caught.value)
    with pytest.raises(OutputPathError):
        write_json_atomic("/proc/self/tba-out.json", {})


def test_lone_surrogates_are_written_as_json_escapes(tmp_path):
    path = write_text_atomic(tmp_path / "a.json", json.dumps({"a": "x\ud800"}, ensure_ascii=False))
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": "x\ud800"}


def test_read_json_refuses_deep_nesting_and_non_utf8_as_input_errors(tmp_path):
    # json.load raises RecursionError (not JSONDecodeError) past the stack: without the catch a traceback escapes
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.files.fileio import read_json

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError, match="nested too deeply") as caught:
        read_json(deep)
    assert str(deep) in str(caught.value)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"q": "caf\xe9"}')
    with pytest.raises(InputError, match="not UTF-8") as caught:
        read_json(latin)
    assert str(latin) in str(caught.value)
