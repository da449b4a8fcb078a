"""Every registered rule at second order, the way careful peers check them.

For each entry of the rule tables (``PARTIALS``, ``JVP``, ``VJP``, ``IMPLS``) and for
scalar, array and complex inputs, the first-order maps themselves are differentiated:

* ``G(x, u) = jvp(F, x, u)[1]`` -- the jvp as a function of the point *and* the tangent;
* ``H(x, w) = pullback(F, *x)[1](w)`` -- the vjp as a function of the point and the
  cotangent;

each in both modes: forward over forward (``jvp`` of ``G``), reverse over forward
(``pullback`` of ``G``), forward over reverse (``jvp`` of ``H``) and reverse over reverse
(``pullback`` of ``H``), all against central differences of ``G`` and ``H`` along random
directions (reverse results through the identity ``Re<w', dG v> == Re<back(w'), v>``).
The first-order maps are checked against central differences of ``F`` as well.

Cases come from three places, so that a rule added to the tables later is covered
without anyone remembering to: the hand-written cases of ``test_numpy_rules`` (their
inputs respect each function's domain), the explicit ``SPECS`` below for entries the
generic driver cannot call, and the generic driver, which tries every other entry on
positive scalars, arrays and complex arrays, with one argument or two (each argument
differentiated alone, and both together).  An entry none of these exercises fails
``test_every_rule_is_exercised`` unless it is listed in ``EXCLUDED`` with its reason.
"""
import cmath
import math
import operator
import statistics
import types

import numpy as np
import pytest

import capstan
import capstan.rules.linalg_rules as linalg_rules
import capstan.rules.math_rules as math_rules
import capstan.rules.numpy_rules as numpy_rules
from capstan.rules import statistics_rules, stride_rules, registry
from capstan import mixed
from capstan.rules import distribution_rules, interpolate_rules, ndimage_rules, stdlib_rules, ufunc_rules
from capstan.rules import composite_rules, random_rules, signal_rules, spatial_rules
from capstan.rules import solver_rules
from test_numpy_rules import TABLE, C, Case, P, R

rng = np.random.default_rng(8)


def _shipped(rules):
    """Whether rule functions are capstan's own (not ones a test registers)."""
    return any((getattr(r, "__module__", None) or "").startswith("capstan.") for r in rules if r is not None)


def _tables():
    """Every function with an entry of capstan's in a rule table (in insertion order)."""
    seen = {}
    for table, rules in ((registry.PARTIALS, tuple), (registry.JVP, lambda e: e[:1]),
                         (registry.VJP, lambda e: e if type(e) is tuple else (e,)),
                         (registry.IMPLS, lambda e: (e,))):
        for f, entry in list(table.items()):
            if isinstance(f, types.FunctionType) and not f.__module__.startswith("capstan."):
                continue  # (a function a test defined, registered with deflinear...)
            if type(f) is np.ufunc and f.__name__.endswith(" (vectorized)"):
                continue  # (made by np.frompyfunc in a test: its rule is capstan.mixed's)
            if _shipped(rules(entry)):
                seen.setdefault(f, None)
    return list(seen)


#: entries the test cannot check by central differences, and why
EXCLUDED = {
    int.conjugate: "takes ints only: an int input carries no derivative",
    np.float16: "half precision: central differences cannot resolve a derivative in it",
    np.float32: "single precision: checked by test_single_precision_stays_single instead",
    np.complex64: "single precision: checked by test_single_precision_stays_single instead",
    np.broadcast: "a shape object: no numbers to differentiate (its iteration: test_new_rules)",
    np.generic.astype: "a NumPy scalar's method: test_numpy_rules::test_numpy_scalar_astype_both_modes",
    np.fromiter: "consumes an iterator of values: checked at first and second order in test_new_rules",
    statistics_rules.exact_sum: "takes a list of numbers (an iterable read into a list): test_new_rules",
    statistics_rules.exact_sumprod: "takes lists of numbers (iterables read into lists): test_new_rules",
    stride_rules.flat_of: "returns NumPy's flat iterator, not an array: its reads are in test_new_rules",
    np.ndenumerate: "an iterator of (index, element) pairs: its elements are subscripts (getitem's rules)",
    mixed._apply: "an elementwise kernel's node: checked at first and second order, both modes, against "
                  "per-element derivatives and finite differences by tests/test_elementwise.py",
}
EXCLUDED.update({
    np.generic.conjugate: "takes NumPy scalars only: checked in test_hunt_regressions",
    np.generic.__copy__: "takes NumPy scalars only: checked in test_hunt_regressions",
    np.generic.__deepcopy__: "takes NumPy scalars only: checked in test_hunt_regressions",
    np.ndarray.__deepcopy__: "takes an array and a memo dict: checked in test_hunt_regressions",
    ufunc_rules._plain_reduceat: "plain-valued (NumPy's own values for reduceat): test_hunt_regressions",
    stride_rules._read_only: "plain-valued (marks as_strided's copy read-only): test_hunt4_regressions",
    np.generic.view: "takes NumPy scalars only (its own dtype: itself): checked in test_hunt7_regressions",
    solver_rules._step_times: "solve_ivp's own step times: a derivative undefined (NaN) by design, "
                              "refused where used: checked in test_sweep3_regressions",
})
if hasattr(math, "sumprod"):  # (3.12+)
    EXCLUDED[math.sumprod] = "takes iterables of numbers (read into lists): checked in test_new_rules"


#: entries whose higher derivatives need a rule capstan does not have: each combination
#: listed must raise NoRuleError (a clear error, never a wrong number)
NO_SECOND_ORDER = {}  # (empty since the SVD has rules: singular values are differentiable twice)


def _needs_svd(case):
    """Whether the case's higher derivatives need a rule capstan lacks (``NO_SECOND_ORDER``;
    the spectral norms are singular values)."""
    return case.f in NO_SECOND_ORDER


class Spec(Case):
    """A case whose call is ``program(f, *args)`` (in-place methods, functions returning
    ``None``); ``f`` is the entry it exercises."""

    def __init__(self, f, program, *args, diff=None, **kw):
        super().__init__(f, *args, diff=diff, **kw)
        self.program = program

    def __repr__(self):
        return "program:" + super().__repr__()


def _copyto(f, dst, src):
    out = dst * 1.0
    f(out, src)
    return out


def _in_place(f, a, *args):
    out = a * 1.0
    f(out, *args)
    return out


def _in_place_operator(f, a, b):
    return f(a * 1.0, b)


SPECS = [
    Spec(np.copyto, _copyto, R(2, 3), R(3)),
    Spec(np.ndarray.sort, _in_place, R(5)), Spec(np.ndarray.sort, _in_place, R(3, 4), 0),
    Spec(np.ndarray.partition, _in_place, R(5), 2),
    Spec(np.place, _in_place, R(5), np.array([True, False, True, True, False]), R(2), diff=[0, 2]),
    Spec(np.putmask, _in_place, R(2, 3), np.array([[True, False, True], [False, True, True]]), R(3),
         diff=[0, 2]),
    Spec(np.put, _in_place, R(5), np.array([0, 3, 3]), R(3), diff=[0, 2]),
    Spec(np.ndarray.put, _in_place, R(2, 3), np.array([1, 5]), R(2), diff=[0, 2]),
    Spec(np.ndarray.fill, _in_place, R(4), P(), diff=[0, 1]),
    Spec(np.fill_diagonal, _in_place, R(3, 3), R(3)),
    Case(np.partition, R(6), 3), Case(np.partition, R(3, 4), 1, axis=0), Case(np.partition, R(2, 3), 1, None),
    Case(numpy_rules._scatter, R(3), (5,), np.float64, np.array([0, 4, 4]), diff=[0]),
    Case(operator.getitem, R(5), slice(1, 4)), Case(operator.getitem, R(5, 3), (np.array([0, 2, 2]), 1)),
    Case(np.astype, R(3), np.float64) if hasattr(np, "astype") else Case(np.ndarray.astype, R(3), float),
    Case(np.asfortranarray, R(2, 3)), Case(np.interp, P(4) * 3, np.arange(4.0), R(4), diff=[0, 2]),
    Case(np.interp, np.array([-0.5, 1.3, 3.5]), np.arange(4.0), R(4), diff=[0, 2], left=-2.0, right=2.0),
    Case(np.interp, np.array([-0.5, 1.3, 3.5]), np.arange(4.0), R(4), diff=[0, 2]),
    Case(np.linalg.cholesky, np.array([[4.0, 1.0], [1.0, 3.0]]), upper=True),
    Case(np.linalg.cholesky, np.array([[4.0, 1.0 + 0.5j], [1.0 - 0.5j, 3.0]]), upper=True),
    Case(np.var, R(4, 3), axis=0, correction=1), Case(np.std, R(5), correction=2),
    Case(np.linspace, R(), P() + 1, 5), Case(np.linspace, R(2), R(2), 4, axis=1),
    Case(np.atleast_1d, R()), Case(np.atleast_2d, R(3)), Case(np.atleast_3d, R(2, 3)),
    Case(np.hstack, [R(2), R(3)]), Case(np.vstack, [R(3), R(2, 3)]), Case(np.dstack, [R(2, 3), R(2, 3)]),
    Case(np.column_stack, [R(3), R(3, 2)]), Case(np.tile, R(2, 3), (2, 1, 3)), Case(np.tile, R(3), 2),
    Case(np.vdot, C(2, 2), C(4)), Case(np.outer, R(3), R(2, 2)),
    Case(np.nansum, np.array([[1.0, np.nan], [2.0, 3.0]])),
    Case(np.nanmean, np.array([[1.0, np.nan], [2.0, 3.0]]), axis=0),
    Case(np.linalg.slogdet, R(3, 3) + 3 * np.eye(3)), Case(np.linalg.slogdet, C(3, 3) + 3 * np.eye(3)),
    Case(np.linalg.norm, R(5)), Case(np.linalg.norm, C(3, 2)), Case(np.linalg.norm, R(3, 2), axis=1),
    Case(np.linalg.norm, R(4), 1), Case(np.linalg.norm, R(4), np.inf, diff=[0]),
    Case(np.linalg.norm, R(4), 3),
    Case(np.linalg.norm, R(3, 2), "nuc"), Case(np.linalg.norm, R(3, 3), 2), Case(np.linalg.norm, R(3, 3), 1),
    Case(np.linalg.norm, R(2, 3, 2), axis=(0, 2), keepdims=True), Case(np.linalg.norm, [R(), R(), R()]),
    Case(np.ndarray.sum, R(3, 2), axis=0), Case(np.ndarray.mean, R(3, 2)), Case(np.ndarray.prod, P(3, 2), 1),
    Case(np.ndarray.max, R(3, 2), axis=1), Case(np.ndarray.min, R(3, 2)), Case(np.ndarray.cumsum, R(3, 2), 0),
    Case(np.ndarray.cumprod, P(3, 2)), Case(np.ndarray.var, R(4), ddof=1),
    Case(np.ndarray.std, R(4, 2), axis=0),
    Case(np.ndarray.dot, R(2, 3), R(3)), Case(np.ndarray.reshape, R(2, 3), 3, 2),
    Case(np.ndarray.reshape, R(2, 3), (6,)),
    Case(np.ndarray.ravel, R(2, 3)), Case(np.ndarray.flatten, R(2, 3)), Case(np.ndarray.transpose, R(2, 3)),
    Case(np.ndarray.transpose, R(2, 3, 2), 1, 0, 2), Case(np.ndarray.swapaxes, R(2, 3), 0, 1),
    Case(np.ndarray.squeeze, R(1, 3)), Case(np.ndarray.copy, R(3)), Case(np.ndarray.conj, C(3)),
    Case(np.ndarray.conjugate, C(3)), Case(np.ndarray.clip, R(6), -0.5, 0.5),
    Case(np.ndarray.repeat, R(3), 2),
    Case(np.ndarray.take, R(3), [0, 0, 2]), Case(np.ndarray.diagonal, R(3, 3)),
    Case(np.ndarray.trace, R(3, 3)),
    Case(np.ndarray.item, R(3), 1), Case(np.generic.item, np.float64(1.3)),
    Case(np.correlate, R(5), R(3)), Case(np.correlate, R(3), R(5), "full"), Case(np.correlate, C(4), C(4), "same"),
    Case(np.unique, R(5)), Case(np.unique, R(3, 2), False, False, False, 0), Case(np.unique, R(2, 3), True, True, True, 1),
    Case(np.cumprod, np.array([1.5, 0.0, 2.0, 0.0, 3.0])),
    Case(np.cumprod, np.array([[0.5, 0.0, 2.0], [1.5, 2.0, 0.0]]), axis=1),
    Case(np.cumprod, np.array([[0.5, 0.0], [0.0, 2.0]])), Case(np.ndarray.item, R(2, 2), 1, 0),
    Case(complex.conjugate, complex(C()[()])), Case(float.conjugate, R()),
    Case(math.fsum, [R(), R(), R()]), Case(math.prod, [P(), P(), P()]),
    Case(math.dist, [R(), R()], [R(), R()]),
    Case(math.modf, P() * 5), Case(math.ldexp, R(), 3, diff=[0]), Case(math.hypot, R(), R(), R()),
    Case(math.pow, P(), R()), Case(math.copysign, R(), -1.0, diff=[0]), Case(math.fmod, P() * 5, P()),
    Case(sum, [R(), R(), R()]), Case(statistics.mean, [R(), R(), R()]), Case(divmod, P() * 5, P()),
    Case(divmod, P() * 5, -P()), Case(cmath.polar, complex(C()[()])), Case(cmath.rect, P(), R()),
    Case(cmath.phase, complex(C()[()])), Case(complex, R(), R()), Case(complex, R()),
    Case(np.longdouble, R()), Case(np.complex128, complex(C()[()])), Case(np.float64, R()),
    Case(float, R()), Case(abs, R()), Case(abs, R(4)), Case(abs, complex(C()[()])), Case(abs, C(3)),
    Case(np.sum, complex(C()[()])), Case(np.max, complex(C()[()])), Case(np.mean, C()[()]),
    Case(np.prod, np.array(C()[()])), Case(np.sum, [C()[()], C()[()]]), Case(np.cumsum, complex(C()[()])),
    Case(operator.abs, R(3)), Case(math.fabs, R()), Case(math_rules._polygamma, 1, P() + 1, diff=[1]),
]
if hasattr(np, "matrix_transpose"):
    SPECS.append(Case(np.matrix_transpose, R(2, 3, 4)))
if hasattr(math, "fma"):  # (3.13+)
    SPECS.append(Case(math.fma, R(), R(), R()))
for _f in (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow, operator.imod):
    SPECS += [Spec(_f, _in_place_operator, P(3) + 1, P(3)), Spec(_f, _in_place_operator, P(2, 3) + 1, P()),
              Case(_f, P() + 1, P())]


# ----------------------------------------------------------------------------- the generic driver
def _finite(y):
    try:
        leaves = [np.asarray(v) for v in _leaves(y)]
    except TypeError:
        return False
    return bool(leaves) and all(v.dtype.kind in "fc" and np.all(np.isfinite(v)) for v in leaves)


def _leaves(y):
    if isinstance(y, (list, tuple)):
        return [v for e in y for v in _leaves(e)]
    return [y]


def _tries(f, args):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _finite(f(*args))
    except Exception:
        return False


def _generic_cases(f):
    """Cases for an entry no explicit case names: the first domain on which ``f`` takes
    one argument (or two) and gives finite values, as a Python scalar, an array, and a
    complex array when ``f`` takes one; two arguments also mixed scalar/array, each
    differentiated alone (the other a constant) and both together."""
    cases = []
    for make in (lambda *s: P(*s), lambda *s: 1.0 + P(*s), lambda *s: R(*s)):
        for shape in ((), (3,)):
            x = make(*shape)
            if _tries(f, (x,)):
                cases.append(Case(f, x))
            if shape and _tries(f, (C(3),)):
                cases.append(Case(f, C(3)))
            if not shape:  # complex scalars, in both half planes (branch cuts lie there)
                cases += [Case(f, z) for z in (complex(0.4, 0.7), complex(-1.6, -0.3)) if _tries(f, (z,))]
        if cases:
            return cases
        x, y, s, t = make(3), make(3), make(), make()
        if _tries(f, (x, y)):
            cases += [Case(f, x, y), Case(f, s, y, diff=[0]), Case(f, x, t, diff=[1]),
                      Case(f, s, y, diff=[1]), Case(f, x, t, diff=[0])]
            if _tries(f, (C(3), C(3))):
                cases.append(Case(f, C(3), C(3)))
            return cases
        if _tries(f, (s, t)):
            return [Case(f, s, t), Case(f, s, t, diff=[0]), Case(f, s, t, diff=[1])]
    return cases


def _checked_by_own_tests(f):
    """Entries of the SciPy-stack tables (``special_rules``, ``decomposition_rules``,
    ``fft_rules``): each is checked at first and second order (forward over reverse, along
    random directions) by tests/test_special_rules.py, test_decomposition_rules.py and
    test_fft_rules.py, with inputs chosen for it (degenerate spectra avoided...)."""
    import scipy.fft
    import scipy.linalg
    import scipy.special

    if getattr(f, "__module__", None) in ("capstan.rules.special_rules", "capstan.rules.decomposition_rules",
                                           "capstan.rules.fft_rules"):
        return True
    # (NumPy scalars' methods run their ndarray twins, whose cases here check the rules;
    # test_protocol_methods.py checks the scalar methods themselves)
    from capstan.rules.composite_rules import SCALAR_METHODS
    if f in SCALAR_METHODS:
        return True
    # (the primitives of the scipy.signal and scipy.ndimage tables: their own tests check
    # them at first and second order, with the inputs each needs -- test_signal_rules.py,
    # test_ndimage_transforms.py, test_ndimage_rank_filters.py)
    if getattr(f, "__module__", None) in ("capstan.rules.signal_rules", "capstan.rules.ndimage_rules"):
        return True
    # (the tail log-moments behind shape parameters: tests/test_shape_parameters.py checks
    # them at first and second order, directly and through every function built on them)
    if getattr(f, "__module__", None) == "capstan.rules.log_moments":
        return True
    # (gaussian_kde's compiled kernel sums, implemented in NumPy: test_distributions.py checks
    # them in points, data, weights and bandwidth, both modes and second order)
    if "gaussian_kernel_estimate" in getattr(f, "__name__", "") and "stats" in str(
            getattr(f, "__module__", "")):
        return True
    # (and the tables of distribution functions, C helpers and interpolation kernels:
    # tests/test_distributions.py, test_coverage_rules.py, test_interpolate.py,
    # test_ndimage_rules.py; their functions take inputs the generic driver cannot make)
    if any(f is g or f == g for m in (distribution_rules, stdlib_rules, ufunc_rules, interpolate_rules,
                                      ndimage_rules, signal_rules, composite_rules, random_rules, spatial_rules)
           for g in m.FUNCTIONS):
        return True
    return any(f is v for m in (scipy.special, scipy.linalg, np.linalg, np.fft, scipy.fft)
               for v in vars(m).values())


_NAMED = {c.f for c in TABLE} | {c.f for c in SPECS}
# (the implementation a NumPy dispatcher calls shares its entry: checked through the dispatcher)
_IMPLEMENTATIONS = {f.__wrapped__ for f in _tables() if type(f) is registry._DISPATCHER}
GENERIC = [c for f in _tables() if f not in _NAMED and f not in EXCLUDED and not _checked_by_own_tests(f)
           and f not in _IMPLEMENTATIONS for c in _generic_cases(f)]
TABLE = [c for c in TABLE if not _checked_by_own_tests(c.f)]
CASES = [c for c in TABLE + SPECS + GENERIC if not (c.f is np.ndarray.astype and np.iscomplexobj(c.args[0])
                                                    and c.args[1] is np.float64)]  # (discards Im: not smooth)


def test_every_rule_is_exercised():
    exercised = {c.f for c in CASES}
    # (a NumPy function's entry also serves the implementation its dispatcher calls: the
    # same rule, checked through the dispatcher)
    dispatcher_of = {f.__wrapped__: f for f in _tables() if type(f) is registry._DISPATCHER}
    missing = [registry._name(f) for f in (dispatcher_of.get(g, g) for g in _tables())
               if f not in exercised and f not in EXCLUDED and not _checked_by_own_tests(f)]
    assert not missing, "rules no case exercises (add a Spec or an EXCLUDED reason): %s" % missing


# ----------------------------------------------------------------------------- structures
def _map(fn, *xs):
    a = xs[0]
    if isinstance(a, (list, tuple)):
        parts = [_map(fn, *p) for p in zip(*xs)]
        return type(a)(*parts) if hasattr(type(a), "_fields") else type(a)(parts)
    return fn(*xs)


def _like(a):
    def one(v):
        shape = np.shape(v)
        t = rng.standard_normal(shape)
        if np.iscomplexobj(v):
            t = t + 1j * rng.standard_normal(shape)
        if isinstance(v, np.ndarray):
            return t
        return complex(t) if np.iscomplexobj(v) else float(t)
    return _map(one, a)


def _axpy(a, s, t):
    return _map(lambda x, d: x + s * d, a, t)


def _rdot(a, b):
    if a is None or b is None:
        return 0.0
    if isinstance(a, (list, tuple)):
        return sum(_rdot(x, y) for x, y in zip(a, b))
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def _zeros_for_none(c, x):
    if c is None:
        return _map(lambda v: np.zeros_like(v) if isinstance(v, np.ndarray) else 0.0 * v, x)
    if isinstance(x, list):
        return [_zeros_for_none(ce, xe) for ce, xe in zip(c, x)]
    return c


# ----------------------------------------------------------------------------- first-order maps
def _program(case):
    """``F(*differentiated arguments)``, the others fixed."""
    def F(*xs):
        args = list(case.args)
        for i, x in zip(case.diff, xs):
            args[i] = x
        if isinstance(case, Spec):
            return case.program(case.f, *args, **case.kw)
        if case.f in capstan.adcontext.INPLACE:  # (a @= b must not change the example)
            args[0] = args[0] * 1.0
        return case.f(*args, **case.kw)
    return F


def _maps(case):
    F = _program(case)
    n = len(case.diff)

    def G(*xu):  # the jvp, in the point and the tangent
        return capstan.jvp(F, tuple(xu[:n]), tuple(xu[n:]))[1]

    def H(*xw):  # the vjp, in the point and the cotangent
        xs, w = xw[:n], xw[n]
        cots = capstan.pullback(F, *xs)[1](w)
        return tuple(_zeros_for_none(c, x) for c, x in zip(cots, xs))

    return F, G, H


def _fd(fn, args, dirs, h=1e-6):
    plus, minus = fn(*_axpy(args, h, dirs)), fn(*_axpy(args, -h, dirs))
    return _map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * h), plus, minus)


def _close(a, b, rtol=2e-5, atol=2e-6):
    a, b = _leaves(a), _leaves(b)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        scale = max(1.0, float(np.max(np.abs(y), initial=0.0)))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol * scale)


def _inputs(case):
    return tuple(case.args[i] for i in case.diff)


COMBOS = ["first-order", "fwd-over-fwd", "rev-over-fwd", "fwd-over-rev", "rev-over-rev"]


def check(case, combo):
    F, G, H = _maps(case)
    xs = _inputs(case)
    u, v = _like(xs), _like(xs)
    y = F(*xs)
    w = _like(y)
    if combo == "first-order":
        _close(G(*xs, *u), _fd(F, xs, u))
        _close(_rdot(w, _fd(F, xs, u)), _rdot(H(*xs, w), u))
        return
    du, dw = _like(u), _like(w)
    if combo in ("fwd-over-fwd", "rev-over-fwd"):
        point, direction, fn = xs + u, v + du, G
    else:
        point, direction, fn = xs + (w,), v + (dw,), H
    expected = _fd(fn, point, direction)
    if combo.startswith("fwd"):
        _close(capstan.jvp(fn, point, direction)[1], expected)
    else:
        out, back = capstan.pullback(fn, *point)
        w2 = _like(out)
        cots = back(w2)
        rhs = sum(_rdot(c, d) for c, d in zip(cots, direction))
        _close(rhs, _rdot(w2, expected))


@pytest.mark.parametrize("combo", COMBOS)
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_rule_second_order(case, combo):
    if combo != "first-order" and _needs_svd(case):
        with pytest.raises(capstan.NoRuleError):
            check(case, combo)
        return
    check(case, combo)


# ----------------------------------------------------------------------------- dtypes
def _single(a):
    if isinstance(a, list):
        return [_single(e) for e in a]
    if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
        return a.astype(np.complex64 if a.dtype.kind == "c" else np.float32)
    return a


def _single_cases():
    """The cases on arrays, in single precision, whose result NumPy keeps single."""
    out = [Case(np.float32, R(3)), Case(np.complex64, C(3)), Case(np.float32, np.float64(0.5))]
    for case in CASES:
        args = [_single(a) for a in case.args]
        if not any(isinstance(a, np.ndarray) and a.dtype in (np.float32, np.complex64) for a in args):
            continue
        fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            y = _program(Case(case.f, *fresh, diff=[], **case.kw) if not isinstance(case, Spec)
                         else Spec(case.f, case.program, *fresh, diff=[], **case.kw))()
        except Exception:
            continue
        if isinstance(y, np.ndarray) and y.dtype in (np.float32, np.complex64):
            single = Spec(case.f, case.program, *args, diff=case.diff, **case.kw) if isinstance(case, Spec) \
                else Case(case.f, *args, diff=case.diff, **case.kw)
            out.append(single)
    return out


@pytest.mark.parametrize("case", _single_cases(), ids=repr)
def test_single_precision_stays_single(case):
    """float32 in, float32 tangent and float32 gradient out (complex64 likewise)."""
    F = _program(case)
    xs = _inputs(case)
    y = F(*xs)
    t = capstan.jvp(F, xs, _map(lambda x: np.ones_like(x) if isinstance(x, np.ndarray) else 1.0, xs))[1]
    assert np.result_type(t) == np.result_type(y)
    cots = capstan.pullback(F, *xs)[1](np.ones_like(y))
    for c, x in zip(cots, xs):
        if isinstance(x, np.ndarray) and c is not None:
            assert np.result_type(c) == x.dtype
