"""fileio.AppendFiles: the run's .jsonl files, opened once per session and appended to without a lock. Every line
of concurrent appends lands whole; close() waits for writes in progress (a closed descriptor's number is reused
by the next file opened, so a late write must never reach it); an append after close() opens the file again,
the one now at the path (steps.jsonl is rewritten whole by a rename between sessions)."""

from __future__ import annotations

import os
import threading
import time

import toolbench_adapter.files.fileio as fileio
from toolbench_adapter.files.fileio import AppendFiles


def test_concurrent_appends_land_whole(tmp_path):
    path = tmp_path / "run" / "queries.jsonl"  # the folder is made on the first append
    files = AppendFiles()

    def writer(number: int) -> None:
        for line in range(200):
            files.append(path, f"{number}:{line}:{'x' * (line * 37 % 5000)}\n".encode())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    files.close()
    lines = path.read_text().splitlines()
    assert sorted(lines) == sorted(f"{n}:{i}:{'x' * (i * 37 % 5000)}" for n in range(8) for i in range(200))


def test_an_append_after_close_reaches_the_file_now_at_the_path(tmp_path):
    path = tmp_path / "steps.jsonl"
    files = AppendFiles()
    files.append(path, b"first session\n")
    files.close()
    replacement = tmp_path / "steps.jsonl.new"
    replacement.write_text("rewritten\n")
    os.replace(replacement, path)  # as collect_steps rewrites it
    files.append(path, b"second session\n")
    files.close()
    assert path.read_text() == "rewritten\nsecond session\n"


def test_close_waits_for_a_write_in_progress(tmp_path, monkeypatch):
    path = tmp_path / "errors.jsonl"
    started, release = threading.Event(), threading.Event()
    real_write_all = fileio._write_all

    def slow_write_all(fd, data):
        started.set()
        release.wait(5)
        real_write_all(fd, data)

    monkeypatch.setattr(fileio, "_write_all", slow_write_all)
    files = AppendFiles()
    writer = threading.Thread(target=files.append, args=(path, b"late line\n"))
    writer.start()
    assert started.wait(5)
    closed = threading.Event()
    closer = threading.Thread(target=lambda: (files.close(), closed.set()))
    closer.start()
    time.sleep(0.2)
    assert not closed.is_set()  # still writing: its descriptor stays open
    release.set()
    writer.join(5)
    closer.join(5)
    assert closed.is_set() and path.read_text() == "late line\n"
