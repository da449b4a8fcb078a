"""The sparse examples run and reach what they claim (a converged Newton solve with the
sparse Jacobian, a trust-constr minimum with the sparse Hessian, both equal to dense)."""
import re

from example_runs import run_example  # (private folders it must leave empty)


def test_newton_brusselator(tmp_path):
    out = run_example("sparse_newton_brusselator.py", str(tmp_path))
    colours = int(re.search(r"12288 nonzeros, (\d+) colours", out).group(1))
    assert colours <= 12
    residuals = [float(r) for r in re.findall(r"Newton residual ([0-9.e+-]+)", out)]
    assert len(residuals) == 5 and max(residuals) < 1e-9
    assert "max difference 0.0e+00" in out
    assert (tmp_path / "brusselator_pattern.svg").read_text().startswith("<svg")


def test_trust_constr(tmp_path):
    out = run_example("sparse_trust_constr.py", str(tmp_path))
    assert "2494 nonzeros" in out and "termination condition is satisfied" in out
    gradient_norm = float(re.search(r"\|grad\| = ([0-9.e+-]+)", out).group(1))
    assert gradient_norm < 1e-4
    difference = float(re.search(r"dense capstan.hessian at x\*: max difference ([0-9.e+-]+)", out).group(1))
    assert difference < 1e-9
    assert (tmp_path / "arrowhead_pattern.svg").exists()
