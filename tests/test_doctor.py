"""`tba doctor`: each piece of a leaderboard-comparable run, OK, DECLARED or MISSING with how to get it; exit 0 only
when every piece is verified, 1 when one is missing, 4 when some are only declared (issue 40). Fakes on loopback:
an OpenAI-compatible stand-in as the judge and the `llm` simulator's endpoint, a server that never answers for the
bounded judge check."""

from __future__ import annotations

import json

import pytest

from runners.cli import main
from tests.faulty_http import FaultyServer
from tests.openai_standin import OpenAIStandin
from toolbench_adapter.protocol.leaderboard import CACHE_URL, GPT_CACHE_JUDGE, SIMULATOR_MODEL, TOOLENV_URL

ENV = ("TBA_STB_ROOT", "TBA_TOOL_ROOT", "TBA_JUDGE_URL", "TBA_JUDGE_MODEL", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def bare_environment(monkeypatch):
    """Nothing beside the checkout: no variable points at data, a judge or a key."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def doctor(capsys, *argv) -> tuple[int, dict[str, str], str]:
    code = main(["doctor", *argv])
    out, err = capsys.readouterr()
    lines = {}
    for line in out.splitlines():
        status, _, rest = line.strip().partition(" ")
        if status in ("OK", "MISSING", "DECLARED"):
            lines[rest.strip().split("  ")[0]] = f"{status} {rest.strip()}"
    return code, lines, out + err


@pytest.fixture
def tool_root(tmp_path):
    """Tool documents for the tool of the first G1_instruction query (TheClique, category Data)."""
    root = tmp_path / "toolenv" / "tools"
    (root / "Data").mkdir(parents=True)
    (root / "Data" / "theclique.json").write_text(json.dumps({"tool_name": "TheClique", "tool_description": "x",
                                                              "api_list": []}))
    return root


@pytest.fixture
def all_tools(tmp_path):
    """A document for each of the 814 tools StableToolBench's 765 queries use."""
    from toolbench_adapter.queryset.queries import QuerySet
    from toolbench_adapter.queryset.tool_coverage import tools_of

    root = tmp_path / "all_tools"
    for query in QuerySet("data/stabletoolbench").iter():
        for category, tool in tools_of(query):
            (root / category).mkdir(parents=True, exist_ok=True)
            (root / category / f"{tool}.json").write_text(json.dumps({"tool_name": tool, "api_list": []}))
    return root


@pytest.fixture
def cache(tmp_path):
    """A response cache in upstream's layout: two entries of one api, none made by this project's simulators."""
    root = tmp_path / "tool_response_cache"
    (root / "Data" / "theclique_for_Data").mkdir(parents=True)
    (root / "Data" / "theclique_for_Data" / "songkick_concert.json").write_text(json.dumps(
        {"{'id_conc': '1'}": {"error": "", "response": "a"}, "{'id_conc': '2'}": {"error": "", "response": "b"}}))
    return root


def mark_second_entry(cache, maker: str):
    """The cache's second entry made by a simulator of this project: its mark in the _simulated mirror
    (provenance.py), naming the maker as the server writes it (comparability.maker_id)."""
    (cache / "_simulated" / "Data" / "theclique_for_Data").mkdir(parents=True)
    (cache / "_simulated" / "Data" / "theclique_for_Data" / "songkick_concert.json").write_text(json.dumps(
        {"{'id_conc': '2'}": {"error": "", "response": "b", "_tba_made_by": maker}}))
    return cache


@pytest.fixture
def openai_is_loopback(monkeypatch):
    """The provider's own API host stood in for by loopback, in this process only (comparability.PROVIDER_HOSTS:
    no flag or setting can do this)."""
    monkeypatch.setattr("toolbench_adapter.evaluation.comparability.PROVIDER_HOSTS", {"127.0.0.1": ("http", None)})


def test_a_fresh_clone_misses_the_cache_the_simulator_and_the_judge(capsys, tmp_path):
    code, lines, out = doctor(capsys, "--cache", str(tmp_path / "no_cache"))
    assert code == 1, out
    # the shipped query files are StableToolBench's, by digest
    assert lines["query files"].startswith("OK") and "765 solvable queries" in lines["query files"]
    assert lines["tool documents"].startswith("MISSING") and TOOLENV_URL in lines["tool documents"]
    assert lines["response cache"].startswith("MISSING") and "no such folder" in lines["response cache"]
    assert CACHE_URL in lines["response cache"]
    assert lines["simulator"].startswith("MISSING") and "synthetic" in lines["simulator"]
    assert "--simulator llm" in lines["simulator"]
    assert lines["judge"].startswith("MISSING") and "--judge-url" in lines["judge"] and GPT_CACHE_JUDGE in lines["judge"]
    assert "4 of 5 pieces missing" in out


def test_every_piece_verified_is_ok_and_exit_0(capsys, all_tools, cache, openai_is_loopback):
    """The judge and simulator at their provider's own API host (loopback stands in for it here) are verified."""
    with OpenAIStandin(models=(GPT_CACHE_JUDGE, SIMULATOR_MODEL)) as endpoint:
        code, lines, out = doctor(capsys, "--tool-root", str(all_tools), "--cache", str(cache),
                                  "--simulator", "llm", "--llm-base-url", endpoint.url, "--llm-model", SIMULATOR_MODEL,
                                  "--judge-url", endpoint.url, "--judge-model", GPT_CACHE_JUDGE)
        probes = len(endpoint.probes)
    assert code == 0, out
    assert all(line.startswith("OK") for line in lines.values()) and len(lines) == 5, out
    assert "documents for 814 of 814 tools the query set uses" in lines["tool documents"]
    assert "2 entries in 1 api files, none made by this project" in lines["response cache"]
    assert f"cache misses answered by {SIMULATOR_MODEL} at 127.0.0.1" in lines["simulator"]
    assert "a run with misses reads \"as declared\"" in lines["simulator"]  # this project's prompt, said
    assert "the judge of the GPT-based caching system tables" in lines["judge"]
    assert probes == 1  # the judge preflight's one test request
    assert "all 5 pieces are there, each verified" in out


@pytest.mark.parametrize(("maker", "status", "words"), [
    ("llm[gpt-4-turbo@api.openai.com]", "DECLARED",
     "1 of 2 entries made by this project's server: gpt-4-turbo with this project's simulation prompt"),
    ("llm[SmolLM2-135M@127.0.0.1]", "MISSING",
     "1 of 2 entries made by this project's server: SmolLM2-135M (the llm simulator), not the leaderboard's "
     "gpt-4-turbo"),
    ("llm", "MISSING", "1 of 2 entries made by this project's server: the llm simulator, its model not recorded"),
])
def test_a_caches_simulated_entries_are_judged_by_the_model_that_made_them(capsys, cache, maker, status, words):
    """Each entry of this project's simulators is judged as the comparability line judges the answer when served:
    the model whole and where, never the name llm."""
    _, lines, _ = doctor(capsys, "--cache", str(mark_second_entry(cache, maker)))
    assert lines["response cache"].startswith(status) and words in lines["response cache"], lines["response cache"]


@pytest.mark.parametrize(("model", "status", "words"), [
    (SIMULATOR_MODEL, "DECLARED", "named, not verified (cache misses answered by gpt-4-turbo at 127.0.0.1, not the "
     "provider's API host (api.openai.com)"),
    ("SmolLM2-135M-Instruct", "MISSING", "but cache misses answered by SmolLM2-135M-Instruct (the llm simulator), not "
     "the leaderboard's gpt-4-turbo"),
    ("my-org/gpt-4-turbo", "MISSING", "not the leaderboard's gpt-4-turbo"),
])
def test_the_simulator_is_judged_by_the_model_it_asks_and_where(capsys, model, status, words):
    """A local model served under any name: at a local host even the leaderboard's name is only declared."""
    with OpenAIStandin(models=(model,)) as endpoint:
        _, lines, _ = doctor(capsys, "--simulator", "llm", "--llm-base-url", endpoint.url, "--llm-model", model)
        assert endpoint.model_lists == 1 and endpoint.count() == 0  # one GET /models, no simulation request
    assert lines["simulator"].startswith(status) and words in lines["simulator"], lines["simulator"]


def test_a_judge_and_simulator_at_another_host_are_declared_and_exit_4(capsys, all_tools, cache):
    with OpenAIStandin(models=(GPT_CACHE_JUDGE, SIMULATOR_MODEL)) as endpoint:
        code, lines, out = doctor(capsys, "--tool-root", str(all_tools), "--cache", str(cache),
                                  "--simulator", "llm", "--llm-base-url", endpoint.url, "--llm-model", SIMULATOR_MODEL,
                                  "--judge-url", endpoint.url, "--judge-model", GPT_CACHE_JUDGE)
    assert code == 4, out
    assert lines["judge"].startswith("DECLARED") and "not the provider's API host api.openai.com" in lines["judge"]
    assert lines["simulator"].startswith("DECLARED")
    assert all(lines[piece].startswith("OK") for piece in ("query files", "tool documents", "response cache"))
    assert "all 5 pieces are there, 2 only as declared (simulator, judge)" in out


def test_another_query_set_is_not_the_leaderboards(capsys, tool_root, cache):
    code, lines, _ = doctor(capsys, "--stb-root", "data/sample", "--tool-root", str(tool_root), "--cache", str(cache))
    assert code == 1
    assert lines["query files"].startswith("MISSING") and "6 queries, not StableToolBench's" in lines["query files"]
    assert "0 of 12 files" in lines["query files"] and "--stb-root data/stabletoolbench" in lines["query files"]


def test_an_empty_cache_or_tool_folder_is_missing(capsys, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "tools" / "Other").mkdir(parents=True)
    (tmp_path / "tools" / "Other" / "unrelated.json").write_text("{}")
    code, lines, _ = doctor(capsys, "--cache", str(tmp_path / "cache"), "--tool-root", str(tmp_path / "tools"))
    assert code == 1
    assert lines["response cache"].startswith("MISSING") and "no entries" in lines["response cache"]
    assert lines["tool documents"].startswith("MISSING") and "documents for 0 of 814 tools" in lines["tool documents"]


def test_a_judge_that_is_not_the_leaderboards_or_serves_another_model(capsys, tmp_path):
    with OpenAIStandin(models=("gpt-4o-mini",)) as endpoint:
        _, lines, _ = doctor(capsys, "--judge-url", endpoint.url)  # tba evaluate's default model: gpt-4o-mini
        assert lines["judge"].startswith("MISSING") and "answers, but gpt-4o-mini is not the leaderboard's judge" \
            in lines["judge"]
        _, lines, _ = doctor(capsys, "--judge-url", endpoint.url, "--judge-model", GPT_CACHE_JUDGE)
        assert lines["judge"].startswith("MISSING") and "is not served" in lines["judge"]
        assert "pass --judge-model gpt-4o-mini" in lines["judge"]


def test_a_judge_that_never_answers_is_missing_after_the_timeout(capsys):
    with FaultyServer(["hang"]) as server:
        code, lines, _ = doctor(capsys, "--judge-url", server.url + "/v1", "--judge-model", GPT_CACHE_JUDGE,
                                "--timeout", "0.5")
    assert code == 1 and lines["judge"].startswith("MISSING") and "cannot be reached" in lines["judge"]


def test_simulator_endpoints_are_checked(capsys, tmp_path):
    with OpenAIStandin(models=("other",)) as endpoint:
        _, lines, _ = doctor(capsys, "--simulator", "llm", "--llm-base-url", endpoint.url, "--llm-model",
                             SIMULATOR_MODEL)
    assert lines["simulator"].startswith("MISSING") and "does not serve 'gpt-4-turbo'" in lines["simulator"]
    with FaultyServer([401]) as server:
        _, lines, _ = doctor(capsys, "--simulator", "llm", "--llm-base-url", server.url + "/v1", "--llm-model", "m")
    assert lines["simulator"].startswith("MISSING") and "refused the key in $OPENAI_API_KEY" in lines["simulator"]
    with OpenAIStandin(models=("mirror",)) as endpoint:  # MirrorAPI without upstream's system prompt
        _, lines, _ = doctor(capsys, "--simulator", "mirrorapi", "--llm-model", "mirror", "--llm-base-url",
                             endpoint.url)
    assert lines["simulator"].startswith("MISSING") and "with a stand-in system prompt" in lines["simulator"]
    assert "--mirror-system-prompt" in lines["simulator"]


def test_an_unknown_simulator_is_bad_input(capsys):
    code, lines, out = doctor(capsys, "--simulator", "shema")
    assert code == 2 and "schema" in out and not lines


@pytest.mark.parametrize(("simulator", "judge", "ok"), [("schema", "gpt-4o", False), ("schema", GPT_CACHE_JUDGE, True),
                                                        ("mirrorapi", "gpt-4o", True)])
def test_doctor_wants_the_judge_the_verdict_wants(capsys, simulator, judge, ok):
    """Doctor and the comparability line read one rule: gpt-4o judged the MirrorAPI tables only; before, doctor
    took it as the judge for any simulator but llm and mirrorapi."""
    with OpenAIStandin(models=(judge,)) as endpoint:
        _, lines, _ = doctor(capsys, "--simulator", simulator, "--judge-url", endpoint.url, "--judge-model", judge)
    assert lines["judge"].startswith("MISSING") is not ok, lines["judge"]
    if not ok:
        assert f"{judge} is not the leaderboard's judge ({GPT_CACHE_JUDGE}" in lines["judge"]
