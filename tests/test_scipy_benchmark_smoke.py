"""benchmarks/scipy_rules.py: every workload's capstan gradient equals its hand-written
gradient (the check the benchmark makes before timing; nothing is timed here)."""
import importlib.util
import os

import pytest

pytest.importorskip("scipy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "scipy_rules.py")
spec = importlib.util.spec_from_file_location("bench_scipy_rules", PATH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.parametrize("make", bench.WORKLOADS, ids=lambda w: w.__name__)
def test_workload_gradient_is_right(make):
    name, f, hand, x = bench.check(make)
    assert name
