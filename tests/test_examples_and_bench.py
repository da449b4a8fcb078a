"""The README's commands, the examples and the benchmark's smoke mode work."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_opens_with_the_two_commands():
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = re.findall(r"```\n(.*?)\n```", fh.read(), re.S)
    assert blocks[0] == "python3 -m pip install . && python3 examples/demo.py"
    assert blocks[1] == 'python3 -m pip install ".[test]" && python3 -m pytest -q'
    with open(os.path.join(ROOT, ".ci", "run")) as fh:
        assert "README.md" in fh.read()  # CI runs README's command verbatim


def run_example(name):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_demo_runs_and_shows_each_feature():
    out = run_example("demo.py")
    assert "call hypot(3.0, 4.0)" in out and "result: 5.0" in out
    assert "counts: {'range': 1, 'str': 10}" in out
    assert "plain: 0.0  overdubbed: 3.0" in out
    assert "plain: 32.0  with the pass: 16.0" in out
    assert "metadata 'measured mass'" in out and "'scaled scaled measured mass'" in out


def test_nested_trace_example_prints_the_call_tree():
    out = run_example("nested_trace.py").splitlines()
    assert out == ["hypot2(3, 4) = 25", "  square(3,) = 9", "    mul(3, 3) = 9",
                   "  square(4,) = 16", "    mul(4, 4) = 16", "  add(9, 16) = 25"]


def test_memo_fib_example():
    out = run_example("memo_fib.py")
    assert "memoised through a context: 46368" in out
    assert "fib(90) memoised: 2880067194370816120" in out


def test_overhead_benchmark_quick_mode(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["overhead.py", "--quick"])
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import overhead
    finally:
        sys.path.pop(0)
    cells = overhead.rows()
    workloads = {w for w, *_ in cells}
    assert workloads == {"(a) call-heavy", "(b) operator-heavy", "(c) NumPy-heavy", "(d) json.dumps"}
    assert all(same for *_, same in cells), [c for c in cells if not c[-1]]
    table = overhead.table(cells)
    assert table.count("\n") == len(cells) + 1 and "counting prehook" in table
