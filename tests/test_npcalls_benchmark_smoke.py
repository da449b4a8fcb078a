"""benchmarks/npcalls.py (the overhead of a routed NumPy call) in its quick mode: its loops and
hand-written gradients are right, and the run prints both tables with every row.  No timing is
asserted."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "npcalls.py")


def test_quick_run_prints_every_row(tmp_path):
    out_json = tmp_path / "out.json"
    out = subprocess.run([sys.executable, PATH, "--quick", "--json", str(out_json)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = json.loads(out_json.read_text())
    assert [r["case"] for r in rows["calls"]] == ["np.sin(a)", "a * b", "a @ b (4×4)", "np.sum(a)", "a[1:]",
                                                 "np.exp(a).sum()"]
    assert len(rows["gradients"]) == 3
    for r in rows["calls"]:
        assert r["plain_us"] > 0 and np.isfinite([r["D_us"], r["gradient_us"]]).all()
    for r in rows["gradients"]:
        assert r["ours_us"] > 0 and r["hand_us"] > 0 and r["ratio"] > 0
    for r in rows["calls"] + rows["gradients"]:
        assert ("`%s`" % r["case"] if "case" in r else r["workload"]) in out.stdout
