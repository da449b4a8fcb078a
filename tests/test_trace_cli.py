"""``python -m capstan.trace``: no runpy warning, arguments parsed as Python or JSON literals."""
import os
import pathlib
import subprocess
import sys

from capstan.trace import _parse_arg

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_cli_runs_without_warnings_and_parses_json_null(tmp_path):
    proc = subprocess.run([sys.executable, "-W", "error", "-m", "capstan.trace", "--depth", "0",
                           "json:dumps", "null"], capture_output=True, text=True, cwd=str(tmp_path),
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr
    assert proc.stdout.splitlines()[0] == "dumps(None) -> 'null'"


def test_arguments_are_python_then_json_literals_then_strings():
    assert _parse_arg("3") == 3 and _parse_arg("2.5") == 2.5
    assert _parse_arg("None") is None and _parse_arg("null") is None
    assert _parse_arg("true") is True and _parse_arg("False") is False
    assert _parse_arg('{"a": [1, 2.0]}') == {"a": [1, 2.0]}
    assert _parse_arg("(1, 'x')") == (1, "x")
    assert _parse_arg("hello") == "hello" and _parse_arg("1 +") == "1 +"
