"""Issue 9, CI subset: a few of CPython's own regression-test modules give, test by test,
the same outcome when each test method runs under a counting prehook, a wildcard
primitive that recurses or falls back, and a posthook as when it runs plainly.

Each module runs in a subprocess of ``python -m harness.cpython_tests`` (the full run is
that script without arguments; see harness/cpython_tests.py).  A divergence fails the
module's test with the harness's report of it.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# harness.cpython_tests.FAST plus test_augassign (a divergence known today: an in-place
# operator whose dunder is set to None must raise TypeError, not fall back to __add__).
MODULES = ["test_bisect", "test_heapq", "test_fnmatch", "test_colorsys", "test_shlex",
           "test_keywordonlyarg", "test_unpack", "test_contains", "test_augassign"]
CONTEXTS = ["count", "wild", "post"]


def run_harness(module, tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cpython_tests", module, "--budget", "5",
         "--contexts", ",".join(CONTEXTS), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.exists(), proc.stderr[-2000:]
    return json.loads(out.read_text())["results"][module], proc.stdout


@pytest.mark.parametrize("module", MODULES)
def test_module_outcomes_match_plain_run(module, tmp_path):
    result, table = run_harness(module, tmp_path)
    assert result["ending"] == "ok", result["ending"]
    assert result["tests"] > 0
    for ctx in CONTEXTS:
        assert result["compared"][ctx] > 0, ctx  # each context ran tests of its own
    # the test calls really went through the contexts (a context that overrides nothing
    # would run plainly, at the plain speed)
    assert result["slowdown"]["count"] > 2, result["slowdown"]
    assert result["divergences"] == [], table
