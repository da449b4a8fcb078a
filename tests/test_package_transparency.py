"""Issue 16, CI subset: an installed package's own pytest suite gives, test by test, the
same outcome when only the test calls run under a counting prehook, a wildcard primitive
and capstan's forward context with no tangents to carry, as when they run plainly.

``python -m harness.packages`` runs pytest with the plugin ``harness.pytest_plugin`` in
subprocesses (restarted after a crash or a hang); the full run is that script without
arguments.  ``tests/probes/routed_code_probe.py`` holds a divergence that every routing
context must show (a routed frame's ``f_code`` is the rewritten copy), so a harness that stopped
routing, or stopped comparing, fails here.
"""
import json
import os
import subprocess
import sys

import pytest

from harness.report import ROUTED_CODE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTEXTS = ["count", "wild", "forward"]


def run_harness(target, tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "harness.packages", target, "--budget", "30",
         "--contexts", ",".join(CONTEXTS), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.exists(), proc.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    return results[target], proc.stdout


# mpmath comes with sympy, which the test extra installs
@pytest.mark.parametrize("module", ["mpmath.tests.test_division", "mpmath.tests.test_str"])
def test_package_module_outcomes_match_plain_run(module, tmp_path):
    result, table = run_harness(module, tmp_path)
    assert result["ending"] == "ok", result["ending"]
    for ctx in CONTEXTS:
        assert result["compared"][ctx] == result["tests"] > 0, ctx
    assert result["divergences"] == [], table


def test_harness_finds_the_known_divergence(tmp_path):
    probe = os.path.join("tests", "probes", "routed_code_probe.py")
    result, table = run_harness(probe, tmp_path)
    assert result["tests"] == 2
    found = {(d["id"].split("::")[-1], d["context"], d["cause"]) for d in result["divergences"]}
    assert found == {("test_frame_runs_the_functions_own_code", ctx, ROUTED_CODE) for ctx in CONTEXTS}, table
