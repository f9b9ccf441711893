"""Issue 21 item 7 and the cache minors: tool servers sharing one cache folder lose no entry, a server serves
what another saved, and a cache folder that cannot be written is exit 2 at start, or (a disk that fills up
later) one log line per failure, the answer served and the files on disk intact."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from runners.cli import main as tba
from toolbench_adapter.files.fileio import output_path_error
from toolbench_adapter.server import cache as cache_module
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.client import SOURCE_HEADER
from toolbench_adapter.server.runner import EmbeddedServer

ROOT = Path(__file__).resolve().parent.parent
MISSES = 200
MAIN = Path("Data", "weather_for_Data", "forecast.json")  # one API: every write goes to the same file


def payload(n: int) -> dict:
    return {"category": "Data", "tool_name": "weather", "api_name": "forecast", "tool_input": json.dumps({"n": n}),
            "strip": "", "toolbench_key": ""}


class ServeProcess:
    """``tba serve`` in its own process on a free loopback port."""

    def __init__(self, cache: Path):
        env = {k: v for k, v in os.environ.items() if k != "TBA_STB_ROOT"}  # no query files: nothing validated
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runners.cli", "serve", "--port", "0", "--cache", str(cache), "--simulator",
             "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        line = self.process.stdout.readline()
        if not line.startswith("serving "):
            raise AssertionError(line + self.stop())
        self.url = line.split()[1]

    def stop(self) -> str:
        self.process.terminate()
        _, err = self.process.communicate(timeout=20)
        return err


def test_two_servers_sharing_a_cache_folder_keep_every_miss(tmp_path):
    cache = tmp_path / "cache"
    first, second = ServeProcess(cache), ServeProcess(cache)
    try:
        def ask(n: int) -> dict:
            url = (first, second)[n % 2].url  # alternate: each server writes half the entries, concurrently
            response = requests.post(url, json=payload(n), timeout=30)
            assert response.status_code == 200 and response.headers[SOURCE_HEADER] == "simulator:schema"
            return response.json()

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, range(MISSES)))
        # a server serves what the other one saved: a hit, the same answer
        again = requests.post(second.url, json=payload(0), timeout=30)
        assert again.headers[SOURCE_HEADER] == "cache_simulated" and again.json() == answers[0]
    finally:
        errors = first.stop() + second.stop()
    assert "Traceback" not in errors, errors
    expected = {str({"n": n}) for n in range(MISSES)}
    for tree in (cache, cache / "_simulated"):  # compat stb: the main file and the simulated mark, both whole
        saved = json.loads((tree / MAIN).read_text())
        assert set(saved) == expected, f"{tree}: {len(saved)} of {MISSES} entries kept"
        mark = {"_tba_made_by": "schema"} if tree.name == "_simulated" else {}  # the mirror names the simulator
        assert [saved[str({"n": n})] for n in range(MISSES)] == [{**a, **mark} for a in answers]
    files = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())
    assert files == [MAIN.as_posix(), f"_simulated/{MAIN.as_posix()}"]  # nothing but the upstream layout


def post(server: EmbeddedServer, n: int) -> requests.Response:
    return requests.post(server.url + "/virtual", json=payload(n), timeout=10)


def test_a_full_disk_is_one_log_line_the_answer_served_and_the_files_intact(tmp_path, monkeypatch, caplog):
    cache = tmp_path / "cache"
    server = build_virtual_server(ServerConfig(cache_dir=cache, simulator="schema"))
    real_write = cache_module.write_json_atomic

    def full(path, data, **_):
        raise output_path_error(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))

    with EmbeddedServer(create_app(server)) as running:
        assert post(running, 1).status_code == 200
        before = (cache / MAIN).read_bytes()
        monkeypatch.setattr(cache_module, "write_json_atomic", full)
        with caplog.at_level(logging.WARNING, logger="toolbench_adapter.server.cache"):
            answer = post(running, 2)
            assert answer.status_code == 200 and answer.json()["error"] == ""
        assert post(running, 2).headers[SOURCE_HEADER] == "cache_simulated"  # kept in memory
        health = requests.get(running.url + "/health", timeout=10).json()
        assert health["save_failures"] == 1 and "No space left on device" in health["last_save_error"]
        assert (cache / MAIN).read_bytes() == before
        [record] = [r for r in caplog.records if r.name == "toolbench_adapter.server.cache"]
        assert record.exc_info is None and "No space left on device" in record.getMessage()
        assert str(cache / "_simulated" / MAIN) in record.getMessage()
        # space again: the next write saves the answer that could not be saved too
        monkeypatch.setattr(cache_module, "write_json_atomic", real_write)
        assert post(running, 3).status_code == 200
    assert set(json.loads((cache / MAIN).read_text())) == {str({"n": n}) for n in (1, 2, 3)}


def test_an_unwritable_cache_folder_is_exit_2_at_start(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert tba(["serve", "--port", "0", "--cache", str(blocker / "cache")]) == 2
    err = capsys.readouterr().err
    assert f"{blocker / 'cache'}: the cache folder cannot be written" in err and "--no-save" in err
    assert tba(["run", "--name", "r", "--out-root", str(tmp_path / "runs"), "--backend", "scripted", "--quiet",
                "--cache", str(blocker / "cache")]) == 2
    assert "the cache folder cannot be written" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder: nothing to refuse")
def test_a_read_only_cache_folder_is_exit_2_and_no_save_serves_it(tmp_path, capsys):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        assert tba(["serve", "--port", "0", "--cache", str(cache)]) == 2
        assert "Permission denied" in capsys.readouterr().err
        build_virtual_server(ServerConfig(cache_dir=cache, save=False))  # read-only serving is fine
    finally:
        cache.chmod(0o755)
