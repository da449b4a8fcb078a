"""benchmarks/sparse.py in its quick mode, in-process: every row and every target line is
there (each sparse result is checked inside the benchmark before it is timed).  No timing
is asserted."""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_run_has_every_row_and_target():
    saved = sys.argv
    sys.argv = ["sparse.py", "--quick"]
    try:
        spec = importlib.util.spec_from_file_location("sparse_bench_smoke",
                                                      os.path.join(ROOT, "benchmarks", "sparse.py"))
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
    finally:
        sys.argv = saved
    assert bench.QUICK and bench.N <= 1000
    jac, hes, edge = bench.rows()
    assert [r["problem"] for r in jac] == ["bratu (NumPy)", "brusselator 2-D (NumPy)", "bratu (Python loop)"]
    assert [r["problem"] for r in hes][:2] == ["rosen (scipy.optimize.rosen)", "arwhead (NumPy)"]
    assert [r["colors"] for r in jac[:1] + hes[:2]] == [3, 3, 2]
    text = bench.tables(jac, hes)
    lines = text.splitlines()
    assert lines[0].startswith("| Jacobian |") and len([ln for ln in lines if ln.startswith("| ")]) == 8
    for r in jac + hes:
        assert any(line.startswith("| %s |" % r["problem"]) for line in lines)
    for r in jac[:2] + hes[:2]:
        assert 0 < r["fd_error"] < 1e-4  # finite differences: close, not exact
    found = bench.verdicts(jac, hes)
    assert len(found) == 9 and all(line.endswith(("met", "missed")) or ": met" in line or ": missed" in line
                                   for line in found)
    assert [r["problem"] for r in edge] == ["rosen (Python loop)", "arwhead (Python loop)"]
    assert all(r["difference"] < 1e-9 for r in edge)  # (edge pushing against colouring)
    assert bench.edge_table(edge).count("\n| ") == 2  # (two rows under the header)
