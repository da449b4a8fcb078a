"""Regressions from a bug hunt for silent wrong derivatives and internal errors: each
case compares capstan's forward and reverse derivatives with central differences."""
import math

import numpy as np
import pytest

import capstan


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def _check(f, x=0.7, second=False):
    ref = _fd(f, x)
    assert capstan.D(f, x) == pytest.approx(ref, rel=1e-5, abs=1e-7)
    assert capstan.gradient(f, x)[0] == pytest.approx(ref, rel=1e-5, abs=1e-7)
    if second:
        ref2 = _fd(lambda t: _fd(f, t, 1e-4), x, 1e-4)
        assert capstan.hessian(f, x) == pytest.approx(ref2, rel=1e-3, abs=1e-5)


# ufuncs given list or tuple operands: the partials' formulas need arrays
@pytest.mark.parametrize("f", [
    lambda x: np.multiply([2.0, 3.0], x).sum(),
    lambda x: np.divide(np.array([x, 1.0]), [2.0, 3.0]).sum(),
    lambda x: np.divide(np.array([x, 1.0]), [2.0, x]).sum(),
    lambda x: np.divide(x, (2.0, 3.0)).sum(),
    lambda x: np.arctan2(np.array([x, 1.0]), [2.0, 3.0]).sum(),
    lambda x: np.multiply([[2.0], [x]], [x, 1.0]).sum(),
    lambda x: np.divide.outer([x, 1.0], [2.0, x])[1, 1],
], ids=["mul", "div", "div-tagged-list", "div-tuple", "arctan2", "nested", "divide.outer"])
def test_ufunc_list_operands(f):
    _check(f, second=True)


# np.interp's constant left=/right= values carry derivatives (they were dropped: a zero)
@pytest.mark.parametrize("f", [
    lambda x: np.interp(x - 2, [0.0, 0.5, 1.0], [1.0, 2.0, 0.5], left=x),
    lambda x: np.interp(np.array([x - 2, 0.2]), [0.0, 0.5, 1.0], [1.0, 2.0, 0.5], x * x).sum(),
    lambda x: np.interp(np.array([x + 2, 0.2, 5.0]), [0.0, 0.5, 1.0], [1.0, x, 0.5], None, np.sin(x)).sum(),
    lambda x: np.interp(0.3, [0.0, 0.5, 1.0], [1.0, x * x, 0.5]),
], ids=["left-kw", "left-positional", "right", "fp-list"])
def test_interp_left_right(f):
    _check(f, second=True)


def test_rule_without_partial_for_a_differentiated_argument_refuses():
    """A rule with partials for the first arguments only, given a differentiated value in a
    later one: a NoRuleError naming the function, not a silent zero."""
    def scaled(a, b):
        return a * b
    capstan.defderiv(scaled, lambda ans, a, b: b)  # (no partial for b)
    assert capstan.D(lambda x: scaled(x, 2.0), 0.7) == pytest.approx(2.0)
    assert capstan.gradient(lambda x: scaled(x, 2.0), 0.7)[0] == pytest.approx(2.0)
    for entry in (capstan.D, lambda f, x: capstan.gradient(f, x)[0]):
        with pytest.raises(capstan.NoRuleError, match="scaled"):
            entry(lambda x: scaled(2.0, x), 0.7)
        with pytest.raises(capstan.NoRuleError, match="scaled"):
            entry(lambda x: scaled(np.array([2.0, 1.0]), np.array([x, 1.0])).sum(), 0.7)


# np.heaviside(x1, x2) is x2 where x1 == 0: its second argument carries a derivative
@pytest.mark.parametrize("f", [
    lambda x: np.heaviside(0.0, x),
    lambda x: np.heaviside(np.array([0.0, 1.0, -1.0]), x * x).sum(),
    lambda x: np.heaviside(x - 0.5, x) + x,
], ids=["zero", "array", "step"])
def test_heaviside_second_argument(f):
    _check(f)


def _pairwise_scalar(x):
    p = [x, 2 * x, 0.3]
    return sum(math.exp(-math.sqrt((p[i] - p[j]) ** 2)) for i in range(3) for j in range(3))


def _pairwise_power(x):
    p = [x, 2 * x, 0.3]
    return sum(math.exp(-((p[i] - p[j]) ** 2) ** 0.5) for i in range(3) for j in range(3))


def _pairwise_pow(x):
    p = [x, 2 * x, 0.3]
    return sum(math.exp(-math.pow((p[i] - p[j]) ** 2, 0.5)) for i in range(3) for j in range(3))


def _pairwise_float64(x):
    p = np.array([[x, 1.0], [2 * x, 0.5], [0.3, 0.1]])
    return sum(np.sqrt(np.sum((p[i] - p[j]) ** 2)) for i in range(3) for j in range(3))


def _domain_ends(x):
    return math.acos(math.cos(x - x)) + x + math.asin(1.0 + 0 * x) + math.cbrt(0.0 * x)


# sqrt (and cbrt, asin, acos, x ** 0.5) at the end of its domain, of a value whose derivative
# is exactly zero (the i == j terms of a pairwise distance): the term contributes nothing.
# It raised ZeroDivisionError (Python floats) or gave NaN (forward mode, NumPy scalars).
@pytest.mark.parametrize("f", [_pairwise_scalar, _pairwise_power, _pairwise_pow, _pairwise_float64,
                               _domain_ends])
def test_zero_tangent_at_an_infinite_slope(f):
    with np.errstate(all="ignore"):
        _check(f)


def test_infinite_slope_itself():
    assert capstan.D(math.sqrt, 0.0) == math.inf
    assert capstan.gradient(math.sqrt, 0.0)[0] == math.inf
    assert capstan.D(lambda x: x ** 0.5, 0.0) == math.inf
    with pytest.raises(capstan.NoRuleError, match="slope is infinite"):  # (a second derivative through it)
        capstan.hessian(_pairwise_scalar, 0.7)


# SciPy solvers given a differentiated bound or quad weight parameter: a bound that is
# active (or a weight) has no rule -- a NoRuleError, not the bound's derivative dropped
_A = np.array([[1.0, 0.5], [0.3, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("f, x", [
    (lambda x: __import__("scipy.integrate").integrate.quad(lambda t: t, 0, 1, weight="cos", wvar=x)[0], 0.7),
    (lambda x: __import__("scipy.optimize").optimize.minimize(
        lambda t: ((t - 2.0) ** 2).sum(), np.zeros(1), bounds=[(-1.0, x)]).x[0], 0.7),
    (lambda x: __import__("scipy.optimize").optimize.minimize_scalar(
        lambda t: (t - 2.0) ** 2, bounds=(0, x), method="bounded").x, 0.7),
    (lambda x: __import__("scipy.optimize").optimize.least_squares(
        lambda t: t - 2.0, np.zeros(1), bounds=(-1.0, x)).x[0], 0.7),
    (lambda x: __import__("scipy.optimize").optimize.curve_fit(
        lambda t, a: a * t, np.array([0.0, 1.0, 2.0]), np.array([0.0, 3.0, 6.0]), bounds=(0, x))[0][0], 0.7),
    (lambda x: __import__("scipy.optimize").optimize.lsq_linear(
        _A, np.array([1.0, 2.0, 0.5]), bounds=([x, -np.inf], [np.inf, np.inf])).x[1], 2.0),
], ids=["quad-wvar", "minimize", "minimize_scalar", "least_squares", "curve_fit", "lsq_linear"])
def test_solver_differentiated_bound_refused(f, x):
    for entry in (capstan.D, lambda f, x: capstan.gradient(f, x)[0]):
        with pytest.raises(capstan.NoRuleError):
            entry(f, x)


def test_solver_bound_clear_of_minimiser_still_differentiated():
    import scipy.optimize as so
    f = lambda x: so.minimize(lambda t: ((t - x) ** 2).sum(), np.zeros(1), bounds=[(-1.0, x + 5)]).x[0]
    assert capstan.D(f, 0.7) == pytest.approx(1.0, rel=1e-6)
    assert capstan.gradient(f, 0.7)[0] == pytest.approx(1.0, rel=1e-6)


# scipy.ndimage's interpolations are linear in the image and cval together: a
# differentiated cval carries a derivative (forward mode dropped it: a silent zero)
@pytest.mark.parametrize("f", [
    lambda x: __import__("scipy.ndimage").ndimage.shift(np.array([0.3, 1.7, 0.9, 2.5, 1.1]), 1.5, order=1,
                                                        cval=x).sum(),
    lambda x: __import__("scipy.ndimage").ndimage.map_coordinates(
        np.array([0.3, 1.7, 0.9, 2.5, 1.1]), [[5.5, 1.2, -0.4]], order=3, cval=x).dot([1.0, 2.0, 3.0]),
    lambda x: __import__("scipy.ndimage").ndimage.rotate(np.arange(16.0).reshape(4, 4) ** 1.3, 25, order=1,
                                                         cval=x * x).sum(),
], ids=["shift", "map_coordinates", "rotate"])
def test_ndimage_cval(f):
    _check(f, second=True)


_MEMO = {}


def _memoised_exp(v):
    try:
        return _MEMO[v]
    except KeyError:
        r = _MEMO[v] = math.exp(2 * v)
        return r


def test_dict_subscript_by_a_differentiated_key():
    """``d[x]`` looks up by ``x`` itself (as ``x in d`` does): a plain key equal to it, cached
    before the differentiation, is an equality that held -- refused, not its plain value
    returned with no derivative; the key stored in the same run is found by identity."""
    _memoised_exp(0.7)
    for entry in (capstan.D, lambda f, x: capstan.gradient(f, x)[0]):
        with pytest.raises(capstan.NoRuleError, match="equality"):
            entry(_memoised_exp, 0.7)

    def same_run(x):
        d = {x: x * 2, 1.0: 3.0}
        return d[x] + d[1.0]
    _check(same_run)


class _ArrayLike:
    """A user class that NumPy reads through ``__array__``."""

    def __init__(self, v):
        self.v = np.asarray(v)

    def __array__(self, dtype=None, copy=None):
        return self.v


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.asarray(_ArrayLike([x, x * x]))),
    lambda x: np.sin(_ArrayLike([x, 2.0])).sum(),
    lambda x: np.dot(_ArrayLike([x, x * x]), [1.0, 2.0]),
    lambda x: x * np.sum(_ArrayLike([1.0, 2.0])),
], ids=["asarray", "ufunc", "dot", "constant"])
def test_python_array_protocol(f):
    """NumPy calls ``__array__`` from C, where the differentiated array it returns is refused
    (ValueError: object __array__ method not producing an array); capstan calls it."""
    _check(f, second=True)


@pytest.mark.parametrize("f", [
    lambda x: abs(np.complex128(1.0, x)) + np.complex128(x, 2 * x).imag,
    lambda x: abs(np.complex128(x, x * x) ** 2),
], ids=["imag", "both"])
def test_numpy_complex_from_two_parts(f):
    """``np.complex128(re, im)``: its rule took one argument (TypeError inside capstan)."""
    _check(f, second=True)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.array([x, x * x]).__array__() * 2),
    lambda x: np.sum(np.array([x, x * x]).__array__(np.float64) ** 2),
    lambda x: np.float64(x * x).conjugate() * 3,
], ids=["__array__", "__array__-dtype", "generic.conjugate"])
def test_ndarray_array_and_scalar_conjugate(f):
    _check(f, second=True)


@pytest.mark.parametrize("f", [
    lambda x: __import__("copy").copy(np.array([x, 1.0]))[0] * 3,
    lambda x: __import__("copy").deepcopy([np.array([x, x * x]), x])[0][1] * 3,
    lambda x: __import__("copy").deepcopy(np.float64(x)) * 3,
    lambda x: (lambda a: (lambda b: (b.__setitem__(0, 5.0), a[0] * b[1])[1])(__import__("copy").deepcopy(a)))(
        np.array([x, x * x])),
], ids=["copy", "deepcopy-list", "deepcopy-scalar", "independent"])
def test_copy_and_deepcopy_of_arrays(f):
    _check(f, second=True)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.logaddexp], ids=lambda u: u.__name__)
@pytest.mark.parametrize("idx", [[0, 2], [0, 3, 1, 5], [4, 1], [1, 1, 2]], ids=str)
def test_ufunc_reduceat(ufunc, idx):
    """``ufunc.reduceat``: NumPy's values (its own summation order), the folds' derivative
    (it was refused)."""
    extra = np.random.default_rng(1).standard_normal(20)

    def g(x):
        return ufunc.reduceat(np.concatenate([[x, x * x, 3.0, x, 0.5, 2.0], extra]), idx)

    value, _ = capstan.jvp(g, (0.7,), (1.0,))
    np.testing.assert_array_equal(value, g(0.7))
    _check(lambda x: g(x) @ np.arange(1.0, len(idx) + 1), second=ufunc is np.multiply)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.array([x, 1.0]), None, None, None, False, x),
    lambda x: np.prod(np.array([x, 2.0]), None, None, None, False, x),
    lambda x: np.max(np.array([x, 2.0]), None, None, False, x + 5),
    lambda x: np.add.reduce(np.array([x, 1.0]), initial=x),
], ids=["sum", "prod", "max", "add.reduce"])
def test_reduction_initial_given_a_differentiated_value_refused(f):
    """A reduction's rules differentiate its array only: a differentiated ``initial`` given
    by position was dropped (a silent wrong derivative)."""
    for entry in (capstan.D, lambda f, x: capstan.gradient(f, x)[0]):
        with pytest.raises((capstan.NoRuleError, TypeError), match="capstan"):
            entry(f, 0.7)


def test_reductions_still_differentiated():
    _check(lambda x: np.sum(np.array([x, 1.0]) ** 2) + np.mean(np.array([[x, 1.0]]), 1)[0], second=True)
    _check(lambda x: np.sum([x, x * x]) + np.array([x, x * x]).prod(), second=True)
    _check(lambda x: np.sum(np.array([x, 1.0]), where=np.array([True, False])) * x)


@pytest.mark.parametrize("x", [-1.0, 4.0, 0.0])
def test_np_where_of_a_scalar_condition_leaves_out_the_untaken_branchs_nan_slope(x):
    """``np.where(x > 0, np.sqrt(x), 0.0)`` at x < 0: the untaken branch's tangent is NaN
    (sqrt of a negative number), and its partial an exact 0 held in a 0-d array (np.where
    of a scalar condition): D gave NaN; the exact zero now wins, as it does for arrays."""
    import warnings

    f = lambda t: np.where(t > 0, np.sqrt(t), 0.0)  # noqa: E731
    want = 0.0 if x <= 0 else 0.5 / math.sqrt(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert capstan.D(f, x) == want
        assert capstan.gradient(f, x)[0] == want
        assert capstan.jvp(f, (x,), (1.0,))[1] == want
        if x < 0:
            assert capstan.D(lambda t: np.where(t > 0, np.log(t), t), x) == 1.0


@pytest.mark.parametrize("f, x", [
    (lambda x: math.sqrt(x - x) + x, 0.7),
    (lambda x: np.sqrt(np.array([x - x])).sum() + x, 0.7),
    (lambda v: np.sqrt(v[0] - v[0]) + v[1], np.array([0.7, 0.2])),
    (lambda x: math.cbrt(x - x) * 2.0 + x, 0.3),
], ids=["math.sqrt", "np.sqrt", "array input", "cbrt"])
def test_a_nan_gradient_of_a_finite_value_is_refused(f, x):
    """An infinite slope (sqrt at 0) whose terms cancel exactly: reverse mode summed inf and
    -inf into NaN (forward mode resolves it: D gives 1).  A NaN gradient where f's value and
    arguments are finite is refused, naming forward mode; an infinite derivative stays."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(capstan.NoRuleError, match="forward mode"):
            capstan.gradient(f, x)
        if type(x) is float:
            assert capstan.D(f, x) == 1.0
        assert capstan.gradient(math.sqrt, 0.0) == (math.inf,)
        assert math.isnan(capstan.gradient(lambda t: t * math.nan, 1.0)[0])  # (f's value is NaN)
