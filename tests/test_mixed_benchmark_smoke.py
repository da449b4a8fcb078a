"""benchmarks/mixed.py in its quick mode, in-process: every row is there, every gradient
it times was checked against the per-element one (the benchmark raises otherwise).  No
timing is asserted."""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mixed_benchmark_quick_rows():
    saved = sys.argv
    sys.argv = ["mixed.py", "--quick"]
    try:
        path = os.path.join(ROOT, "benchmarks", "mixed.py")
        spec = importlib.util.spec_from_file_location("mixed_smoke", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved
    assert module.QUICK and module.N == 200
    rows = module.measure(60)
    names = [name for name, _, _ in rows]
    assert names[0] == "plain Python loop (value)"
    for expected in ("gradient of np.sum(elementwise(kernel)(x)), later calls",
                     "gradient of np.sum(np.vectorize(kernel)(x)), later calls",
                     "gradient of np.sum(elementwise(kernel)(x)), first call of a new kernel",
                     "capstan.gradient(kernel, t) per element (loop)"):
        assert expected in names
    assert all(s is None or s > 0 for _, s, _ in rows)
    text = module.table(rows, 60)
    assert text.count("\n| ") == len(rows) + 1 and "n = 60" in text
    assert all(s is not None for name, s, _ in rows if not name.startswith(("autograd", "jax")))
