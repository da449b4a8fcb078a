"""benchmarks/hotpath.py (issue 13's speed targets): its hand-written references are right
(against finite differences), every method it times computes the same derivative, a wrong
method is reported instead of timed, and the quick run prints every table with a verdict for
every target.  No timing is asserted."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "hotpath.py")


@pytest.fixture(scope="module")
def hotpath():
    """A private copy of the benchmark module, loaded as ``--quick`` (short loops)."""
    saved = sys.argv
    sys.argv = ["hotpath.py", "--quick"]
    try:
        spec = importlib.util.spec_from_file_location("bench_hotpath", PATH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved
    assert module.QUICK and module.N_OPS < 1000
    return module


def central(f, x, h=1e-5):
    """Fourth-order central difference of a scalar function."""
    return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h)


def test_hand_written_references_match_finite_differences(hotpath):
    hp = hotpath
    assert math.isclose(hp.horner_deriv(hp.X0), central(hp.horner, hp.X0), rel_tol=1e-7)
    assert math.isclose(hp.euler_deriv(hp.K0), central(hp.euler, hp.K0), rel_tol=1e-7)
    assert math.isclose(hp.horner_second(hp.X0), central(hp.horner_deriv, hp.X0), rel_tol=1e-7)
    xs, vs = np.array(hp.XS), np.linspace(-1.0, 1.0, len(hp.XS))
    along = central(lambda t: hp.scalar_rosen(list(xs + t * vs)), 0.0, h=1e-4)
    assert math.isclose(hp.scalar_rosen_jvp(hp.XS, list(vs)), along, rel_tol=1e-7)
    assert math.isclose(sum(hp.scalar_rosen_grad(hp.XS)), hp.scalar_rosen_jvp(hp.XS, hp.ONES), rel_tol=1e-12)
    # the MLP gradient, one direction per parameter
    params, grads = hp.MLP_PARAMS, hp.mlp_grad(*hp.MLP_PARAMS)
    rng = np.random.default_rng(1)
    for k, (p, g) in enumerate(zip(params, grads)):
        v = rng.standard_normal(p.shape)

        def along_v(t, k=k, v=v):
            moved = list(params)
            moved[k] = params[k] + t * v
            return hp.mlp_loss(*moved)
        assert math.isclose(float(np.sum(g * v)), central(along_v, 0.0, h=1e-4), rel_tol=1e-6), k


def test_every_operation_loop_has_the_stated_derivative(hotpath):
    for label, loop, slope in hotpath.OPERATIONS + hotpath.NUMPY_CALLS:
        assert math.isclose(central(loop, hotpath.XOP), slope, rel_tol=1e-7, abs_tol=1e-9), label


def test_every_timed_method_computes_the_hand_written_derivative(hotpath):
    benches = hotpath.scalar_benches() + hotpath.nested_benches() + hotpath.numpy_benches()
    checked = []
    for bench in benches:
        expected = {name: fn() for name, fn in bench.hands}
        for cell in bench.cells:
            if cell.peer:  # other AD libraries: checked by the benchmark where installed
                continue
            hotpath.assert_close(cell.factory()(), expected[cell.hand])
            checked.append((bench.name, cell.name))
    for name in ("`__slots__` dual", "capstan.D", "capstan.gradient"):
        assert ("Horner", name) in checked and ("Euler", name) in checked
    for name in ("`__slots__` dual (jvp)", "capstan.gradient", "capstan.jvp"):
        assert ("Rosenbrock (list of 100)", name) in checked
    assert ("Horner, 2nd derivative", "capstan.D(D(horner))") in checked
    assert sum(1 for b, c in checked if c == "capstan.gradient") == 6  # 3 scalar + 3 NumPy


def test_a_wrong_method_is_reported_not_timed(hotpath):
    hp = hotpath
    bench = hp.Bench("Horner", lambda: hp.horner(hp.X0), [("hand", lambda: hp.horner_deriv(hp.X0))], [
        hp.Cell("off by one", lambda: lambda: hp.horner_deriv(hp.X0) + 1.0, "hand", ("≤ 3×", 3.0)),
        hp.Cell("missing peer", lambda: __import__("no_such_peer_module"), "hand"),
    ])
    rows = {r["impl"]: r for r in hp.run_benches([bench], quick=True)}
    assert rows["off by one"]["error"].startswith("AssertionError")
    assert rows["off by one"]["median"] is None and rows["off by one"]["met"] is None
    assert rows["missing peer"]["error"] == "not installed"
    assert rows["plain"]["x_plain"] == 1.0 and rows["hand"]["median"] > 0
    table = hp.ratio_table(list(rows.values()))
    assert "≤ 3×: **not measured**" in table and "| missing peer | not installed |" in table


def test_quick_run_prints_every_table_and_verdict(hotpath, tmp_path):
    out = tmp_path / "hotpath.json"
    proc = subprocess.run([sys.executable, PATH, "--quick", "--no-peers", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for heading in ("(a) Scalar loops", "(b) Per differentiated operation", "(c) Fixed cost",
                    "(d) Nested", "(e) NumPy paths"):
        assert "### " + heading in text
    assert "not installed" not in text  # --no-peers: no peer rows at all
    data = json.loads(out.read_text())
    assert data["quick"] is True
    rows = data["scalar"] + data["nested"] + data["numpy_paths"]
    capstan_rows = [r for r in rows if r["impl"].startswith("capstan")]
    assert len(capstan_rows) == 10
    for r in capstan_rows:
        assert r["error"] == "" and r["median"] > 0 and r["x_plain"] > 0, r
        assert r["target"] and r["met"] in (True, False), r
    targets = [line for line in text.splitlines() if line.startswith("| ") and "≤" in line.split("|")[-3]]
    assert len(targets) == 10 and all(": met" in t or ": **missed**" in t for t in targets)
    assert [r["operation"] for r in data["per_op"]] == [label for label, _, _ in hotpath.OPERATIONS + hotpath.NUMPY_CALLS]
    for r in data["per_op"]:
        assert r["error"] == "" and r["plain_ns"] > 0 and r["D_ns"] is not None, r
        assert r["gradient_ns"] is not None
    entries = {r["entry"]: r for r in data["entry"]}
    assert len(entries) == 4 and all(r["error"] == "" and r["median_us"] > 0 for r in entries.values())
    assert entries["`capstan.D(lambda x: x, 1.0)`"]["met"] in (True, False)

