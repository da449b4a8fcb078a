"""benchmarks/forward.py and reverse.py run (quick mode): every capstan cell computes the
right derivative (checked against the hand-written one before timing) and the table prints."""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("script,workloads", [
    ("forward.py", {"scalar_poly", "euler_ode", "jacobian 100→100"}),
    ("reverse.py", {"scalar_poly", "euler_ode", "scalar_rosen", "rosen_np", "mlp_loss", "logsumexp",
                    "element reads, n=10^4", "scalar_poly, kept tape", "euler_ode, kept tape"}),
])
def test_ad_benchmark_quick(script, workloads):
    path = os.path.join(ROOT, "benchmarks", script)
    spec = importlib.util.spec_from_file_location("bench_" + script[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = {w.name for w in module.workloads()}
    assert names == workloads
    proc = subprocess.run([sys.executable, path, "--quick"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    capstan_rows = [line for line in proc.stdout.splitlines() if "| capstan" in line]
    assert len(capstan_rows) >= len(workloads)
    for line in capstan_rows:
        cells = [c.strip() for c in line.split("|")]
        assert "Error" not in line and "**" not in cells[8], line  # computed, checked, no error
        assert cells[5].endswith("×") and cells[4].endswith("×"), line
