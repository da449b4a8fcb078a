"""benchmarks/solvers.py: every workload's capstan derivative equals central finite
differences of the plain call (the check the benchmark makes before timing; nothing is
timed here)."""
import importlib.util
import os

import pytest

pytest.importorskip("scipy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "solvers.py")
spec = importlib.util.spec_from_file_location("bench_solvers", PATH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.filterwarnings("ignore:The following arguments have no effect")
@pytest.mark.parametrize("workload", bench.workloads(), ids=lambda w: w[0])
def test_workload_derivative_is_right(workload):
    assert bench.check(workload)[0]
