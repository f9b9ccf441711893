"""`tba serve` as a user starts it: a subprocess on a free loopback port that prints its URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import requests

from runners.cli import build_parser
from runners.cli import main as tba


def test_serve_port_zero_prints_a_working_url(tmp_path):
    command = [sys.executable, "-m", "runners.cli", "serve", "--port", "0", "--cache", str(tmp_path / "cache"),
               "--simulator", "schema"]
    env = {k: v for k, v in os.environ.items() if k != "TBA_STB_ROOT"}  # no query files: nothing is validated
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line + process.stderr.read()
        url = line.split()[1]
        payload = {"category": "Data", "tool_name": "t", "api_name": "a", "tool_input": '{"x": 1}', "strip": "",
                   "toolbench_key": ""}
        first = requests.post(url, json=payload, timeout=10).json()
        assert first["error"] == "" and first == requests.post(url, json=payload, timeout=10).json()
        assert requests.get(url.replace("/virtual", "/stats"), timeout=10).json()["hits"] == 1
    finally:
        process.terminate()
        process.wait(timeout=10)
    saved = tmp_path / "cache" / "_simulated" / "Data" / "t_for_Data" / "a.json"
    assert list(json.loads(saved.read_text())) == ["{'x': 1}"]


def test_serve_help_and_bad_flags(tmp_path, capsys):
    command = build_parser().parse_args(["serve", "--port", "0"])  # cli.py discovers the module
    assert command.func.__module__ == "runners.cli.commands.serve" and command.save is True
    file_not_dir = tmp_path / "file"
    file_not_dir.write_text("x")
    assert tba(["serve", "--port", "0", "--cache", str(file_not_dir)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert tba(["serve", "--port", "0", "--simulator", "llm"]) == 2  # no --llm-model
    assert "the llm simulator asks a model: --llm-model is not given" in capsys.readouterr().err
    assert tba(["serve", "--port", "0", "--simulator", "schma"]) == 2
    assert "schema" in capsys.readouterr().err
