"""The README's commands, the examples and the benchmark's smoke mode work."""
import os
import re
import sys

from example_runs import run_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_opens_with_the_two_commands():
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = re.findall(r"```\n(.*?)\n```", fh.read(), re.S)
    assert blocks[0] == "python3 -m pip install . && python3 examples/demo.py"
    assert blocks[1] == 'python3 -m pip install ".[test]" && python3 -m pytest -q -n auto'
    with open(os.path.join(ROOT, ".ci", "run")) as fh:
        assert "README.md" in fh.read()  # CI runs README's command verbatim


def test_demo_runs_and_shows_each_feature():
    out = run_example("demo.py")
    assert "call hypot(3.0, 4.0)" in out and "result: 5.0" in out
    assert "counts: {'range': 1, 'str': 10}" in out
    assert "plain: 0.0  overdubbed: 3.0" in out
    assert "plain: 32.0  with the pass: 16.0" in out
    assert "metadata 'measured mass'" in out and "'scaled scaled measured mass'" in out
    # capstan, imported as demo.py does (through "examples/.." on sys.path)
    assert "D(legacy, 2.0) = 11.583853163453" in out
    assert "nested, no perturbation confusion: 10.0" in out
    assert "gradient(legacy, 2.0) = (11.583853163453,)" in out
    assert "hessian of sum(x**3) at [1, 2]: [[6.0, 0.0], [0.0, 12.0]]" in out
    assert "CountCtx over map(str, range(1, 11)): 11 calls" in out


def test_ad_examples():
    tour = run_example("ad_tour.py")
    assert "gradient(legacy_pow(x, 3), 5) = (75.0,)" in tour
    assert "x * D(y -> x*y, 3) at 5       = 10.0" in tour
    assert "[24. 12.  8.  6.]]" in tour and "((2+4j),)" in tour
    memory = run_example("checkpoint_memory.py")
    assert "same gradient: True" in memory
    drop = float(re.search(r"drop: ([0-9.]+)x", memory).group(1))
    assert drop > 1.3, memory
    replay = run_example("tape_replay.py")
    assert "replayed gradient at 3.0: (6.0,)" in replay
    assert "re-recorded gradient at -1.0: (-1.0,)" in replay
    assert "would take another branch" in replay
    pycall = run_example("pycall_adjoint.py")
    assert "matches the closed form: True" in pycall or "(skipped)" in pycall


def test_elementwise_kernel_example():
    out = run_example("elementwise_kernel.py")
    assert "paths recorded: 2" in out
    assert "force matches the per-element gradients: True" in out
    assert "np.vectorize gives the same force: True" in out
    assert "tangent stiffness is diagonal and matches: True" in out


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


def test_readme_python_blocks_run():
    with open(os.path.join(ROOT, "README.md")) as fh:
        blocks = re.findall(r"```python\n(.*?)\n```", fh.read(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        namespace = {"__name__": "readme"}
        exec(compile(block, "README.md", "exec"), namespace)
    import math

    import capstan
    assert namespace["tape"].gradient(3.0) == capstan.gradient(namespace["legacy"], 3.0)
    assert capstan.D(namespace["legacy"], 2.0) == 12.0 + math.cos(2.0)


def test_every_example_runs_in_a_private_folder():
    """Each script of examples/ is run by some test through ``example_runs.run_example``,
    which fails when a script leaves files in its working or temporary directory."""
    tests = os.path.join(ROOT, "tests")
    sources = ""
    for name in sorted(os.listdir(tests)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(tests, name), encoding="utf-8") as fh:
                sources += fh.read()
    assert not re.search(r"^def run_example\(", sources, re.M)  # one runner, the checking one
    examples = sorted(n for n in os.listdir(os.path.join(ROOT, "examples")) if n.endswith(".py"))
    assert len(examples) >= 16
    unrun = [n for n in examples if 'run_example("%s"' % n not in sources]
    assert not unrun, unrun


def test_trace_example_without_an_output_file_cleans_up():
    out = run_example("tools_trace.py")
    assert "hypot2(3, 4) = 25\n" in out and '  n0 [label="hypot2(3, 4) -> 25"];\n' in out
    assert "and an SVG picture of" in out
