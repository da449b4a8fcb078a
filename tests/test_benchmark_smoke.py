"""benchmarks/overhead.py in its quick mode, in-process: every row is there and every
context computes what plain Python computes.  No timing is asserted."""
import importlib.util
import io
import os
import sys
from contextlib import redirect_stdout

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def overhead():
    """A private copy of the benchmark module, loaded with ``--quick`` (tiny sizes)."""
    saved = sys.argv
    sys.argv = ["overhead.py", "--quick"]
    try:
        spec = importlib.util.spec_from_file_location(
            "overhead_smoke", os.path.join(ROOT, "benchmarks", "overhead.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved
    assert module.QUICK
    return module


def expected_rows():
    a = ["plain", "empty context", "counting prehook", "sys.setprofile counter", "sys.settrace counter"]
    if sys.version_info >= (3, 12):
        a.append("sys.monitoring counter")
    return {
        "(a) call-heavy": a,
        "(b) operator-heavy": ["plain", "empty context", "counting prehook", "primitive on operator.mul"],
        "(c) NumPy-heavy": ["plain", "empty context", "counting prehook"],
        "(d) json.dumps": ["plain", "first call, hooked", "later calls, hooked"],
    }


def test_quick_run_has_every_row_and_plain_results(overhead):
    cells = overhead.rows()
    present = {(w, c) for w, c, *_ in cells}
    for workload, columns in expected_rows().items():
        for column in columns:
            assert (workload, column) in present, (workload, column)
    assert {w for w, *_ in cells} == set(expected_rows())
    different = [(w, c) for w, c, t, r, same in cells if not same]
    assert different == []
    for w, c, t, r, same in cells:
        assert t > 0 and r > 0

    text = overhead.table(cells)
    lines = text.splitlines()
    assert lines[0].startswith("| workload | column |") and len(lines) == len(cells) + 2
    for workload, columns in expected_rows().items():
        for column in columns:
            assert any(line.startswith("| %s | %s |" % (workload, column)) for line in lines), column
    # every target is reported with its verdict
    for workload, column in [("(a) call-heavy", "empty context"), ("(b) operator-heavy", "empty context"),
                             ("(c) NumPy-heavy", "empty context"), ("(a) call-heavy", "counting prehook"),
                             ("(b) operator-heavy", "primitive on operator.mul"),
                             ("(d) json.dumps", "first call, hooked")]:
        line = next(line for line in lines if line.startswith("| %s | %s |" % (workload, column)))
        assert ": met" in line or ": **missed**" in line, line


def test_workloads_agree_with_plain_under_the_contexts(overhead):
    import overdub

    for fn in (overhead.call_heavy, overhead.operator_heavy, overhead.numpy_heavy, overhead.json_dumps):
        expected = fn()
        for ctx in (overhead.Empty(), overhead.Count(metadata=0), overhead.MulPrimitive()):
            assert overdub.overdub(ctx, fn) == expected, (fn.__name__, type(ctx).__name__)
    count = overhead.Count(metadata=0)
    overdub.overdub(count, overhead.call_heavy)
    assert count.metadata > 0  # the counting prehook saw the calls


def test_main_prints_a_markdown_table(overhead):
    buf = io.StringIO()
    with redirect_stdout(buf):
        overhead.main()
    out = buf.getvalue()
    assert "(quick)" in out and "| (d) json.dumps | first call, hooked |" in out
