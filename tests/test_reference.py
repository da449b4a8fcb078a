"""The API reference (docs/reference, Sphinx autodoc) builds from the docstrings with
warnings as errors, and documents every public name."""
import os
import pathlib
import subprocess
import sys

import pytest

import capstan
import overdub

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx comes with the test extras: pip install '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs" / "reference"),
                           str(tmp_path / "html")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (tmp_path / "html" / "capstan.html").read_text(encoding="utf-8")
    assert 'id="capstan.value_and_grad"' in page and "Raises" in page


def test_reference_lists_every_public_name():
    for package in (capstan, overdub):
        text = (ROOT / "docs" / "reference" / ("%s.rst" % package.__name__)).read_text(encoding="utf-8")
        documented = {line.split("::")[1].strip().split(".", 1)[1] for line in text.splitlines()
                      if line.startswith(".. auto") and "::" in line and "." in line.split("::")[1]}
        assert set(package.__all__) <= documented, set(package.__all__) - documented
