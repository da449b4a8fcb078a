"""Regressions from the eighth bug hunt: NumPy's element truth tests at an exact zero of a
differentiated value (a branch valid at that point only), and text made from a
differentiated value read back into numbers by C parsers.  Each case gave a silent wrong
derivative (the branch of the point, or 0 / ``None``) before its fix."""
import csv
import fractions
import io

import numpy as np
import pytest

import capstan


def _all_modes(f, x):
    """The derivative of scalar ``f`` at ``x`` in the four entry points."""
    _, back = capstan.pullback(f, x)
    return [capstan.D(f, x), capstan.jvp(f, (x,), (1.0,))[1], capstan.gradient(f, x)[0], back(1.0)[0]]


def _refused(f, x, match):
    for call in (lambda: capstan.D(f, x), lambda: capstan.jvp(f, (x,), (1.0,)),
                 lambda: capstan.gradient(f, x), lambda: capstan.pullback(f, x)[1](1.0)):
        with pytest.raises(capstan.NoRuleError, match=match):
            call()


def _branch(test, x):
    return x * 2 if test else x * 3


def _pair(x, other=1.0):
    return np.array([x, other])


# ------------------------------------------------------ element truth tests at an exact zero
# each is 2x where x != 0 and takes the branch 3x at x = 0: the slope is 2 from both sides
TRUTH_TESTS = {
    "np.any(list)": lambda x: _branch(np.any([x, 0.0]), x),
    "np.any(array)": lambda x: _branch(np.any(_pair(x, 0.0)), x),
    "a.any()": lambda x: _branch(_pair(x, 0.0).any(), x),
    "np.all": lambda x: _branch(np.all(_pair(x)), x),
    "a.all()": lambda x: _branch(_pair(x).all(), x),
    "np.count_nonzero": lambda x: _branch(np.count_nonzero(_pair(x)) == 2, x),
    "np.count_nonzero(axis)": lambda x: _branch(np.count_nonzero(_pair(x), axis=0) == 2, x),
    "np.nonzero": lambda x: _branch(len(np.nonzero(_pair(x))[0]) == 2, x),
    "np.flatnonzero": lambda x: _branch(np.flatnonzero(_pair(x)).size == 2, x),
    "np.argwhere": lambda x: _branch(np.argwhere(_pair(x)).shape[0] == 2, x),
    "a.astype(bool)": lambda x: _branch(_pair(x).astype(bool)[0], x),
    "np.asarray(dtype=bool)": lambda x: _branch(np.asarray(_pair(x), dtype=bool)[0], x),
    "np.where(a)": lambda x: _branch(np.where(_pair(x))[0].size == 2, x),
    "np.where(a, u, v)": lambda x: np.where(_pair(x), 2 * _pair(x), 3 * _pair(x))[0],
    "np.logical_not": lambda x: _branch(not np.logical_not(_pair(x)).any(), x),
    "np.logical_and": lambda x: _branch(np.logical_and(_pair(x), 1.0).all(), x),
    "np.logical_or": lambda x: _branch(np.logical_or(_pair(x, 0.0), 0.0).any(), x),
    "bool(1-element array)": lambda x: _branch(bool(np.array([x])), x),
    "np.bool_(x)": lambda x: _branch(np.bool_(x), x),
    "0.0 in a": lambda x: _branch(not (0.0 in _pair(x)), x),
    "mask from astype": lambda x: (2 * _pair(x))[_pair(x).astype(bool)].sum() - 2.0
    + (3 * _pair(x))[~_pair(x).astype(bool)].sum(),
    "np.extract": lambda x: np.extract(_pair(x), 2 * _pair(x)).sum() - 2.0,
    "np.poly1d drops a zero leading coefficient": lambda x: np.poly1d([x, 1.0])(2.0) * 1.0,
}


@pytest.mark.parametrize("name", list(TRUTH_TESTS))
def test_element_truth_test_at_a_zero_is_refused(name):
    _refused(TRUTH_TESTS[name], 0.0, "exact equality")


@pytest.mark.parametrize("name", list(TRUTH_TESTS))
def test_element_truth_tests_elsewhere_differentiate(name):
    assert _all_modes(TRUTH_TESTS[name], 0.5) == pytest.approx([2.0] * 4)


@pytest.mark.parametrize("f, x, want", [
    (lambda x: _branch(np.any([x, 0.0]), x), 1.0, 2.0),            # the zero is a constant
    (lambda x: _branch(np.count_nonzero(_pair(x, 0.0)) == 1, x), 1.0, 2.0),
    (lambda x: _branch(_pair(x, 0.0).astype(bool)[1], x), 1.0, 3.0),
    (lambda x: np.where(_pair(x, 0.0), 2 * _pair(x, 0.0), 3 * _pair(x, 0.0))[0], 1.0, 2.0),
    (lambda x: _branch(np.any([x, 1.0]), x), 0.0, 2.0),            # true whatever x is
    (lambda x: _branch(np.any(np.array([[x, 1.0], [2.0, 3.0]]), axis=0).all(), x), 0.0, 2.0),
    (lambda x: _branch(np.any([capstan.stop_gradient(x), 0.0]), x), 0.0, 3.0),
    (lambda x: _branch(0.0 in _pair(x), x), 1.0, 3.0),
    (lambda x: _pair(x).astype(np.float32)[0] * 2.0, 0.0, 2.0),    # not a truth test
    (lambda x: np.where(_pair(x) > 0, _pair(x), 0.0)[0] + x, 0.5, 2.0),
])
def test_truth_tests_that_do_not_depend_on_a_zero_differentiate(f, x, want):
    assert _all_modes(f, x) == pytest.approx([want] * 4)


def test_truth_test_of_an_array_argument():
    def f(a):
        return np.sum(a * 2) if np.all(a) else np.sum(a * 3)
    with pytest.raises(capstan.NoRuleError, match="exact equality"):
        capstan.gradient(f, np.array([0.0, 1.0]))
    with pytest.raises(capstan.NoRuleError, match="exact equality"):
        capstan.jvp(f, (np.array([0.0, 1.0]),), (np.array([1.0, 0.0]),))
    assert np.array_equal(capstan.gradient(f, np.array([0.5, 1.0]))[0], [2.0, 2.0])
    # (a direction that leaves the zero where it is: the test did not change along it)
    assert capstan.jvp(f, (np.array([0.0, 1.0]),), (np.array([0.0, 1.0]),))[1] == pytest.approx(3.0)


def test_hessian_of_a_truth_test_at_a_zero_is_refused():
    with pytest.raises(capstan.NoRuleError, match="exact equality"):
        capstan.hessian(lambda x: x ** 3 if np.any([x, 0.0]) else x ** 2, 0.0)
    assert capstan.hessian(lambda x: x ** 3 if np.any([x, 0.0]) else x ** 2, 1.0) == pytest.approx(6.0)


# ------------------------------------------------------------------ text read back by C
def _savetxt(x):
    buf = io.StringIO()
    np.savetxt(buf, [x])
    buf.seek(0)
    return float(np.loadtxt(buf)) * 2


def _savetxt_array(x):
    buf = io.StringIO()
    np.savetxt(buf, np.array([x, 1.0]))
    buf.seek(0)
    return np.loadtxt(buf)[0] * 2


def _csv(x):
    buf = io.StringIO()
    csv.writer(buf).writerow([x, 1.0])
    return float(next(csv.reader(io.StringIO(buf.getvalue())))[0]) * 2


TEXT_ROUND_TRIPS = {
    "np.savetxt then np.loadtxt": _savetxt,
    "np.savetxt of an array then np.loadtxt": _savetxt_array,
    "np.loadtxt(lines)": lambda x: float(np.loadtxt([str(x)])) * 2,
    "np.loadtxt(generator)": lambda x: float(np.loadtxt(s for s in [str(x)])) * 2,
    "fractions.Fraction(str(x))": lambda x: float(fractions.Fraction(str(x))) * 2,
    "'%r' % x then a regex": lambda x: float(__import__("re").findall(r"[\d.]+", "v=%r;" % x)[0]) * 2,
    "ndarray.tofile then np.fromfile": lambda x: _tofile(x),
}


#: refused before too (at io.StringIO(text), str.encode): text buffers and encoded text are
#: now remembered instead, and the number is refused where it is read back
TEXT_KEPT_THEN_READ = {
    "np.loadtxt(StringIO, comments=None)": lambda x: float(np.loadtxt(io.StringIO(str(x)), comments=None)) * 2,
    "np.genfromtxt": lambda x: float(np.genfromtxt(io.StringIO(str(x)))) * 2,
    "csv round trip": _csv,
    "StringIO(str(x)).read()": lambda x: float(io.StringIO(str(x)).read()) * 2,
    "bytearray": lambda x: float(bytearray(str(x).encode())) * 2,
    "bytes": lambda x: float(str(x).encode()) * 2,
    "BytesIO then np.loadtxt": lambda x: float(np.loadtxt(io.BytesIO(("%r" % x).encode()))) * 2,
}


def _tofile(x):
    import tempfile
    with tempfile.TemporaryFile() as fh:
        np.array([x]).tofile(fh)
        fh.seek(0)
        return float(np.fromfile(fh)[0]) * 2


@pytest.mark.parametrize("name", list(TEXT_ROUND_TRIPS))
def test_text_read_back_by_c_is_refused(name):
    _refused(TEXT_ROUND_TRIPS[name], 0.7, "capstan: ")


def test_text_kept_as_text_is_no_loss():
    # encoding the text, or holding it in a buffer, is not reading a number back
    def f(x):
        buf = io.StringIO(str(x))
        return x * 2 + len(str(x).encode()) * 0.0 + len(buf.getvalue()) * 0.0
    assert _all_modes(f, 0.7) == pytest.approx([2.0] * 4)

    def g(x):  # (text printed, then other text parsed)
        print(x, file=io.StringIO())
        return float(np.loadtxt(["1.5"])) * x
    assert _all_modes(g, 0.7) == pytest.approx([1.5] * 4)


@pytest.mark.parametrize("name", list(TEXT_KEPT_THEN_READ))
def test_text_kept_then_read_back_is_refused(name):
    _refused(TEXT_KEPT_THEN_READ[name], 0.7, "capstan: ")


# ------------------------------------------------- comparisons within a tolerance of zero
ZERO_TOLERANCE = {
    "math.isclose(x, 0.0)": lambda x: _branch(not __import__("math").isclose(x, 0.0), x),
    "np.isclose(x, 0.0, atol=0.0)": lambda x: _branch(not np.isclose(x, 0.0, atol=0.0), x),
    "np.allclose([x], 0.0, atol=0.0)": lambda x: _branch(not np.allclose([x], 0.0, atol=0.0), x),
    "np.allclose(a, b, 0.0, 0.0)": lambda x: _branch(not np.allclose(_pair(x), [0.0, 1.0], 0.0, 0.0), x),
}


@pytest.mark.parametrize("name", list(ZERO_TOLERANCE))
def test_comparison_with_zero_tolerance_that_held_is_refused(name):
    # math.isclose(a, b) has no absolute tolerance and a relative one of 0 at 0: it is a == b
    _refused(ZERO_TOLERANCE[name], 0.0, "tolerance of zero")
    assert _all_modes(ZERO_TOLERANCE[name], 0.5) == pytest.approx([2.0] * 4)


def test_comparison_within_a_real_tolerance_differentiates():
    # (true on an interval around 0: the branch is the function's there)
    f = lambda x: _branch(not __import__("math").isclose(x, 0.0, abs_tol=1e-9), x)  # noqa: E731
    assert _all_modes(f, 0.0) == pytest.approx([3.0] * 4)
    g = lambda x: _branch(not np.isclose(x, 0.0), x)  # noqa: E731
    assert _all_modes(g, 0.0) == pytest.approx([3.0] * 4)
