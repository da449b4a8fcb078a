"""``mypy --strict`` on the typed public modules (capstan.transforms, capstan.checks,
capstan.markers) and on uses of the public API (tests/typing/public_api.py)."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_mypy_strict_on_the_public_api(tmp_path):
    pytest.importorskip("mypy", reason="mypy comes with the test extras: pip install '.[test]'")
    files = ["capstan/transforms.py", "capstan/checks.py", "capstan/markers.py", "tests/typing/public_api.py"]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--cache-dir", str(tmp_path / "cache"), *files],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=600,
                          env={**os.environ, "MYPYPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found in 4 source files" in proc.stdout
