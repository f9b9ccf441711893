"""json_indent.dumps_indented writes json.dumps's exact bytes: on every released answer file, and on
generated data including what it hands back to json.dumps (NaN, non-str keys, subclasses, cycles)."""

from __future__ import annotations

import json
import math
from enum import IntEnum, StrEnum
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.files.json_indent import dumps_indented

from .conftest import FIXTURES_ROOT, STB_ROOT, TB_ROOT

# every released answer file (and trajectory) in ../shared: upstream's, ToolBench's and third-party runs
RELEASED = [STB_ROOT / "data_example", TB_ROOT / "data_example" / "answer", FIXTURES_ROOT / "third_party_runs",
            FIXTURES_ROOT / "trajectories"]


def released_files() -> list[Path]:
    return sorted(path for root in RELEASED if root.is_dir() for path in root.rglob("*.json"))


def test_equal_bytes_on_every_released_answer_file(tmp_path):
    files = released_files()
    if not files:
        pytest.skip(f"no released answer files under {', '.join(map(str, RELEASED))} (set TBA_SHARED_ROOT)")
    assert len(files) >= 100, files  # the answer folders are there: a moved folder must not pass on a few files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for ensure_ascii in (True, False):
            assert dumps_indented(data, 2, ensure_ascii) == json.dumps(data, indent=2, ensure_ascii=ensure_ascii), path
        written = write_json_atomic(tmp_path / "answer.json", data)  # the writer answer files go through
        assert written.read_bytes() == json.dumps(data, indent=2).encode("utf-8"), path


class Color(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


@pytest.mark.parametrize("value", [
    {"a": [], "b": {}, "c": [[], {}], "d": ""},
    {"nan": math.nan, "inf": [math.inf, -math.inf]},  # json writes NaN / Infinity
    {1: "int key", 2.5: "float key", None: "null key", False: "bool key"},  # json converts the keys
    {"enum": Color.RED, Color.RED: Level.HIGH, "tuple": (1, (2, 3))},
    {"text": "ünïcödé \u2028 \x00 \x7f \ud800 emoji \U0001F600", "big": 10**40, "float": 1e16, "neg": -0.0},
    [0.1, 1e-7, 123456789.123456789, True, False, None],
])
@pytest.mark.parametrize("indent", [0, 1, 2, 4])
def test_equal_bytes_on_edge_values(value, indent):
    for ensure_ascii in (True, False):
        expected = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
        assert dumps_indented(value, indent, ensure_ascii) == expected


def test_a_cycle_raises_as_json_does():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        dumps_indented(loop)


def test_a_type_json_cannot_write_raises_as_json_does():
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": {1, 2}})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    | st.tuples(children, children),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_equal_bytes_on_generated_data(value, ensure_ascii):
    assert dumps_indented(value, 2, ensure_ascii) == json.dumps(value, indent=2, ensure_ascii=ensure_ascii)
