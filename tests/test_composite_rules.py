"""NumPy functions differentiated through Python equivalents (capstan/rules/composite_rules.py),
the rules of NumPy functions reached through their dispatchers' implementations
(``np.block`` calls ``np.concatenate.__wrapped__``), methods of plain arrays given
differentiated arguments (``np.choose``), and ``plain.flat[k] = x`` (``np.diagflat``).

Each program is checked in forward mode against central differences, reverse mode
against forward mode (dot-product identity) and at second order (``rule_checks``); the
values are NumPy's own."""
import numpy as np
import pytest

import capstan
from rule_checks import Case, P, R, check_forward, check_reverse, check_second_order, reseed

reseed("composite rules")

A = R(6)
M = R(3, 4)
W = R(4, 3)
POS = P(6)


def _flat_writes(x):
    a = np.zeros((3, 4)).T  # not contiguous: .flat still writes in C order
    a.flat[[0, 5, 7]] = x[:3] ** 2
    b = np.zeros(5)
    b.flat[1:4] = x[3:] * 2
    c = np.ones((2, 2))
    c.flat[np.array([True, False, False, True])] = x[0]
    return np.concatenate([a.ravel(), b, c.ravel()])


CASES = [
    Case(lambda x: np.vecdot(x.reshape(2, 3), x[:3] ** 2), A, name="vecdot"),
    Case(lambda x: np.vecdot(x.reshape(3, 2), x[:3, None] * 1.0, axis=0), A, name="vecdot axis=0"),
    Case(lambda x: np.divmod(5 * x, 0.7 + x[::-1] ** 2)[1], A, name="divmod remainder"),
    Case(lambda x: np.divmod(5 * x, 0.7)[0] * x, A, name="divmod quotient"),
    Case(lambda x: np.modf(3 * x)[0] + np.modf(3 * x)[1] * x, A, name="modf"),
    Case(lambda x: np.float64(x[0] * x[1]).squeeze() * x[2], A, name="numpy scalar squeeze"),
    Case(lambda x: np.compress([True, False, True, True, False, True], x) ** 2, A, name="compress"),
    Case(lambda x: np.compress([False, True, True], x, axis=0), M, name="compress axis"),
    Case(lambda x: x.compress([True, False, True], axis=1), M, name="ndarray.compress"),
    Case(lambda x: np.choose([0, 1, 0], [x[:3], x[3:] ** 2]), A, name="choose"),
    Case(lambda x: np.choose([[2, 0], [5, 1]], [x[0], x[1:3], x[3:5] * x[5]], mode="wrap"), A,
         name="choose wrap broadcast"),
    Case(lambda x: np.choose([-1, 1, 7], [x[:3], x[3:]], mode="clip"), A, name="choose clip"),
    Case(lambda x: np.block([[x[:2], x[2:4]], [x[4:], x[:2] * 3]]), A, name="block"),
    Case(lambda x: np.block([[x[:2, :2], x[:2, 2:]], [x[2:, :2], x[2:, 2:] ** 2]]), M, name="block 2-d"),
    Case(lambda x: np.diagflat(x[:3], k=1) @ np.arange(4.0), A, name="diagflat"),
    Case(lambda x: np.diagflat(x.reshape(2, 3) ** 2, k=-1), A, name="diagflat 2-d, k=-1"),
    Case(_flat_writes, A, name="plain.flat[k] = x"),
]
if hasattr(np, "matvec"):  # (NumPy 2.2+)
    CASES += [Case(lambda a, v: np.matvec(a, v), M, R(2, 4), name="matvec"),
              Case(lambda v, a: np.vecmat(v, a), R(2, 4), W, name="vecmat")]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse(case):
    check_reverse(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_second_order(case):
    check_second_order(case)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_values_are_numpys_own():
    x = np.array([-2.5, -0.0, 0.0, 1.75, np.inf, -np.inf, np.nan, 3e-310])
    for f in (np.modf, lambda v: np.divmod(v, 0.75)):
        got = capstan.jvp(lambda v: f(v)[0], (x,), (np.ones_like(x),))[0]
        np.testing.assert_array_equal(got, f(x)[0])
        assert np.array_equal(np.signbit(got), np.signbit(f(x)[0]))
    d = capstan.jvp(lambda v: np.modf(v)[0], (x,), (np.ones_like(x),))[1]
    np.testing.assert_array_equal(d[:4], 1.0)
    assert capstan.D(lambda v: np.modf(v)[0], 3.0) == 1.0  # (derivative 1 at the integers too)


def test_unsupported_keywords_are_refused_by_name():
    x = np.ones(3)
    with pytest.raises(capstan.NoRuleError, match=r"numpy.vecdot\(\.\.\., axes=\.\.\.\)"):
        capstan.gradient(lambda v: np.sum(np.vecdot(v[None], v[None], axes=[(1,), (1,), ()])), x)
    with pytest.raises(capstan.NoRuleError, match=r"numpy.modf\(\.\.\., where=\.\.\.\)"):
        capstan.gradient(lambda v: np.sum(np.modf(v, where=v > 0)[0]), x)


def test_frexp_stays_refused_in_numpy_too():
    # (its mantissa is taken apart into integers to rebuild the number exactly: see stdlib_rules)
    with pytest.raises(capstan.NoRuleError, match="frexp"):
        capstan.gradient(lambda v: np.sum(np.frexp(v)[0]), np.ones(3))


# -- lists of differentiated values handed to NumPy come back as NumPy gives them -------------
_LIST_RESULTS = {
    "atleast_1d": lambda lst: np.atleast_1d(lst),
    "atleast_2d": lambda lst: np.atleast_2d(lst),
    "argmax": lambda lst: np.argmax(lst),
    "argmin": lambda lst: np.argmin(lst),
    "nonzero": lambda lst: np.nonzero(lst),
    "argsort": lambda lst: np.argsort(lst),
    "round": lambda lst: np.round(lst, 1),
}


def _kind(r):
    if isinstance(r, tuple):
        return ("tuple", tuple(_kind(e) for e in r))
    return (type(r).__name__, np.shape(r))


@pytest.mark.parametrize("name", sorted(_LIST_RESULTS))
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_list_of_differentiated_values_gives_numpys_result_types(name, mode):
    f = _LIST_RESULTS[name]
    seen = []

    def g(x):
        seen.append(_kind(f([x[0], x[1] * 1.0, 2.5])))
        return x[0] * 2.0

    x = np.array([0.5, 1.5])
    if mode == "forward":
        capstan.jvp(g, (x,), (np.ones(2),))
    else:
        capstan.gradient(g, x)
    assert seen == [_kind(f([0.5, 1.5, 2.5]))]


def test_roots_of_a_list_of_differentiated_coefficients():
    # roots of z**2 - (a + 3) z + (b + 2): their sum is a + 3, their product b + 2
    def f(x):
        r = np.roots([1.0, -x[0] - 3.0, x[1] + 2.0])
        return np.sum(r.real) + np.prod(r).real
    g = capstan.gradient(f, np.array([0.7, 1.3]))[0]
    assert np.allclose(g, [1.0, 1.0], atol=1e-12)
    assert np.allclose(capstan.jacobian(f, np.array([0.7, 1.3]), mode="forward"), [1.0, 1.0], atol=1e-12)
