"""Every continuous distribution of ``scipy.stats``, through its public methods, in
both modes: the derivative of ``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``,
``logsf``, ``ppf`` and ``isf`` with respect to ``x`` (or ``q``), ``loc``, ``scale``
and each shape parameter is either right (against Richardson-extrapolated central
differences) or a clear refusal (``NoRuleError``, or a ``TypeError``/``ValueError``
from capstan) -- never a wrong number, ``None`` for a dependence, or an internal error.

SciPy's own code runs unmodified (``logpdf`` and ``pdf`` through a step-for-step equivalent of
``rv_continuous``'s that computes the validity masks in one plain call, for speed; every
distribution's own ``_logpdf``/``_pdf``/``_cdf``... unchanged); what makes it
differentiable is the rule tables (``special_rules``, ``distribution_rules``,
``placement_rules``...).  The parameter
values are SciPy's own examples (``scipy.stats._distr_params.distcont``), avoiding
those that sit exactly on a special case of the formula (``kappa4`` at ``h == 0``:
there SciPy evaluates a formula without that parameter, and capstan refuses the
derivative in it: tests/test_exact_equalities.py; see docs/capstan-scipy.md).  Also checked: the Hessian of a log-likelihood, and
``multivariate_normal.logpdf`` in ``x``, ``mean`` and ``cov``.
"""
import warnings

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")
from scipy.stats._distr_params import distcont  # noqa: E402

import capstan  # noqa: E402

METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
#: methods whose derivative in loc, scale and the shapes is checked too (all of them in x)
PARAMETER_METHODS = ("logpdf", "cdf", "sf", "ppf")
#: distributions left out, and why
SLOW = {
    "studentized_range": "each value is a numerical double integral (25 s here); refused (np.vectorize)",
    "levy_stable": "each value is a numerical integral; its methods are refused (ndarray.view, quad)",
}


def _examples():
    """One example per distribution: SciPy's first parameter set with no shape exactly 0."""
    chosen = {}
    for name, shapes in distcont:
        if name in SLOW or name in chosen:
            continue
        if any(s == 0 for s in shapes) and any(n == name and not any(s == 0 for s in sh)
                                               for n, sh in distcont):
            continue
        chosen[name] = tuple(float(s) for s in shapes)
    return sorted(chosen.items())


EXAMPLES = _examples()


def _difference(f, v):
    """Central difference with one Richardson step, and an estimate of its error."""
    h = 1e-3 * max(abs(v), 0.1)
    wide = (f(v + h) - f(v - h)) / (2 * h)
    narrow = (f(v + h / 2) - f(v - h / 2)) / h
    return (4 * narrow - wide) / 3, abs(narrow - wide)


def _outcomes(f, v):
    """``{mode: outcome}`` in forward and reverse mode (one set of finite differences for both)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            reference = _difference(f, v)
    except Exception as e:  # noqa: BLE001 (raised where the derivative is judged)
        reference = e
    return {mode: _outcome(f, v, mode, reference) for mode in ("forward", "reverse")}


def _outcome(f, v, mode, reference):
    """``'ok'``, ``'clear'`` (a refusal), or a string describing what went wrong;
    ``reference`` is ``_difference(f, v)`` or the exception it raised."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            d = capstan.jvp(f, (v,), (1.0,))[1] if mode == "forward" else capstan.gradient(f, v)[0]
        if isinstance(reference, BaseException):
            raise reference
        ref, err = reference
    except capstan.NoRuleError:
        return "clear"
    except (TypeError, ValueError) as e:
        if "capstan" in str(e):
            return "clear"
        return "internal error %s: %s" % (type(e).__name__, e)
    except Exception as e:  # noqa: BLE001 (any other exception reaching the user is a bug)
        return "internal error %s: %s" % (type(e).__name__, e)
    d = 0.0 if d is None else float(np.asarray(d))  # (None: no dependence at all)
    if not np.isfinite(ref) or err > 1e-3 * (1 + abs(ref)):
        return "ok" if np.isclose(d, ref, rtol=1e-3, atol=1e-6) else "unresolved"
    if abs(d - ref) <= 1e-5 * (1 + abs(ref)) + 10 * err:
        return "ok"
    return "wrong: %r, differences say %r" % (d, ref)


def _runs(name, shapes):
    """``(label, f, point)`` for each method and argument of distribution ``name``."""
    dist = getattr(stats, name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x = float(dist.ppf(0.4, *shapes))
    for method in METHODS:
        point = 0.4 if method in ("ppf", "isf") else x
        arguments = ["x"] + (["loc", "scale"] + list(range(len(shapes))) if method in PARAMETER_METHODS else [])
        for arg in arguments:
            def f(v, arg=arg, call=getattr(dist, method)):
                values = {"x": point, "loc": 0.0, "scale": 1.0, arg: v}
                s = list(shapes)
                if type(arg) is int:
                    s[arg] = v
                return call(values["x"], *s, loc=values["loc"], scale=values["scale"])
            start = shapes[arg] if type(arg) is int else {"x": point, "loc": 0.0, "scale": 1.0}[arg]
            yield "%s.%s d/d%s" % (name, method, arg if type(arg) is str else "shape%d" % arg), f, start


#: distributions in everyday use: every method in x, loc, scale and the shapes, both modes, right
COMMON = ["norm", "t", "gamma", "beta", "lognorm", "expon", "weibull_min", "cauchy", "logistic",
          "laplace", "pareto", "gumbel_r", "skewnorm", "invgauss", "chi", "rayleigh", "uniform",
          "genextreme", "genpareto", "loggamma", "truncnorm", "halfnorm", "burr", "fisk"]


#: the others: right or refused (the common ones are checked by the stronger test below, on
#: the same runs, so they are not run twice)
OTHERS = [(n, s) for n, s in EXAMPLES if n not in COMMON]


@pytest.mark.parametrize("name,shapes", OTHERS, ids=[n for n, _ in OTHERS])
def test_distribution_methods_are_right_or_refused(name, shapes):
    bad = []
    for label, f, v in _runs(name, shapes):
        for mode, outcome in _outcomes(f, v).items():
            if outcome not in ("ok", "clear"):
                bad.append("%s (%s): %s" % (label, mode, outcome))
    assert not bad, "\n".join(bad)


def test_the_common_distributions_are_examples():
    assert set(COMMON) <= set(dict(EXAMPLES)) and len(OTHERS) + len(COMMON) == len(EXAMPLES)


@pytest.mark.parametrize("name", COMMON)
def test_common_distributions_are_differentiable_in_everything(name):
    shapes = dict(EXAMPLES)[name]
    refused = []
    for label, f, v in _runs(name, shapes):
        for mode, outcome in _outcomes(f, v).items():
            if outcome != "ok":
                refused.append("%s (%s): %s" % (label, mode, outcome))
    assert not refused, "\n".join(refused)


def test_incomplete_function_shapes_are_differentiable():
    # (the shapes inside incomplete gamma/beta functions: tail log-moments, tests/test_shape_parameters.py)
    for f, v in ((lambda a: stats.gamma.cdf(0.8, a), 2.5), (lambda df: stats.t.cdf(0.3, df), 4.0)):
        ref, err = _difference(f, v)
        assert capstan.gradient(f, v)[0] == pytest.approx(ref, rel=1e-7, abs=10 * err)
        assert capstan.jvp(f, (v,), (1.0,))[1] == pytest.approx(ref, rel=1e-7, abs=10 * err)


def test_log_likelihood_gradient_and_hessian_in_loc_and_scale():
    data = np.array([0.3, -1.2, 0.8, 2.1, 0.4])

    def nll(p):
        return -np.sum(stats.norm.logpdf(data, loc=p[0], scale=p[1]))

    p = np.array([0.2, 1.4])
    m, s = p
    g = capstan.gradient(nll, p)[0]
    expected = np.array([-np.sum(data - m) / s ** 2, len(data) / s - np.sum((data - m) ** 2) / s ** 3])
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    h = capstan.hessian(nll, p)
    expected_h = np.array([[len(data) / s ** 2, 2 * np.sum(data - m) / s ** 3],
                           [2 * np.sum(data - m) / s ** 3,
                            -len(data) / s ** 2 + 3 * np.sum((data - m) ** 2) / s ** 4]])
    np.testing.assert_allclose(h, expected_h, rtol=1e-10)


def test_gamma_log_likelihood_in_its_shape_has_a_hessian():
    data = np.array([0.5, 1.3, 2.2, 0.9])

    def ll(a):
        return np.sum(stats.gamma.logpdf(data, a, scale=1.5))

    from scipy.special import polygamma
    np.testing.assert_allclose(capstan.hessian(ll, 2.5), -len(data) * polygamma(1, 2.5), rtol=1e-10)


def test_vectorized_arguments_in_both_modes():
    x = np.array([0.2, 0.9, 1.7])
    scale = np.array([1.1, 0.7, 2.0])

    def f(s):
        return np.sum(stats.weibull_min.cdf(x, 1.7, scale=s))

    g = capstan.gradient(f, scale)[0]
    t = capstan.jvp(f, (scale,), (np.ones(3),))[1]
    expected = np.array([_difference(lambda v, i=i: f(np.where(np.arange(3) == i, v, scale)), scale[i])[0]
                         for i in range(3)])
    np.testing.assert_allclose(g, expected, rtol=1e-7)
    np.testing.assert_allclose(t, expected.sum(), rtol=1e-7)


def test_multivariate_normal_logpdf_in_x_mean_and_cov():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mean = rng.standard_normal(3)
    x = rng.standard_normal(3)
    inv = np.linalg.inv(cov)
    r = x - mean
    f = stats.multivariate_normal.logpdf
    gx, gm, gc = capstan.gradient(f, x, mean, cov)
    np.testing.assert_allclose(gx, -inv @ r, rtol=1e-10)
    np.testing.assert_allclose(gm, inv @ r, rtol=1e-10)
    # (a symmetric matrix argument: the gradient's symmetric part is what a symmetric change sees)
    expected_cov = 0.5 * (inv @ np.outer(r, r) @ inv - inv)
    np.testing.assert_allclose(0.5 * (gc + gc.T), expected_cov, rtol=1e-8, atol=1e-12)
    direction = rng.standard_normal((3, 3))
    direction = direction + direction.T
    t = capstan.jvp(lambda c: f(x, mean, c), (cov,), (direction,))[1]
    np.testing.assert_allclose(t, np.sum(expected_cov * direction), rtol=1e-8)
    tx = capstan.jvp(lambda v: f(v, mean, cov), (x,), (np.ones(3),))[1]
    np.testing.assert_allclose(tx, np.sum(-inv @ r), rtol=1e-10)


# ----------------------------------------------------------------------------- the rule table itself
from rule_checks import Case, check_forward, check_reverse, check_second_order  # noqa: E402
from scipy import special as sc  # noqa: E402
from scipy.special import _ufuncs as scu  # noqa: E402

from capstan.rules import distribution_rules  # noqa: E402

Q = np.array([0.2, 0.45, 0.8])
X01 = np.array([0.15, 0.5, 0.7])
XP = np.array([0.6, 1.3, 2.4])
XR = np.array([-0.7, 0.3, 1.2])
#: functions whose derivative is written with a SciPy density that has no rule itself:
#: first order exact, second order refused
FIRST_ORDER_ONLY = {sc.ncfdtr, sc.ncfdtri, scu._ncf_sf, scu._ncf_isf, sc.nctdtr, sc.nctdtrit, scu._nct_sf,
                    scu._nct_isf, scu._landau_ppf, scu._landau_isf, scu._landau_cdf, scu._landau_sf,
                    sc.smirnov, scu._smirnovc, sc.smirnovi, scu._smirnovci, sc.kolmogorov, scu._kolmogc,
                    sc.kolmogi, scu._kolmogci}
RULE_CASES = [
    Case(scu._beta_pdf, X01, 2.5, 1.7), Case(scu._beta_ppf, Q, 2.5, 1.7, diff=[0]),
    Case(sc.stdtr, 4.5, XR, diff=[1]), Case(sc.stdtrit, 4.5, Q, diff=[1]),
    Case(sc.chdtr, 3.5, XP, diff=[1]), Case(sc.chdtrc, 3.5, XP, diff=[1]), Case(sc.chdtri, 3.5, Q, diff=[1]),
    Case(sc.fdtr, 3.0, 7.0, XP, diff=[2]), Case(sc.fdtrc, 3.0, 7.0, XP, diff=[2]),
    Case(sc.fdtri, 3.0, 7.0, Q, diff=[2]),
    Case(sc.gdtr, 0.7, 2.5, XP), Case(sc.gdtrc, 0.7, 2.5, XP),
    Case(sc.bdtr, np.array([1, 3, 5]), 8, X01, diff=[2]), Case(sc.bdtrc, np.array([1, 3, 5]), 8, X01, diff=[2]),
    Case(sc.nbdtr, np.array([1, 3, 5]), 4, X01, diff=[2]), Case(sc.nbdtrc, np.array([1, 3, 5]), 4, X01, diff=[2]),
    Case(scu._binom_cdf, np.array([1.0, 3.0, 5.0]), 8.5, X01, diff=[1, 2]),
    Case(scu._binom_sf, np.array([1.0, 3.0, 5.0]), 8.5, X01, diff=[1, 2]),
    Case(scu._nbinom_cdf, np.array([1.0, 3.0, 5.0]), 4.5, X01, diff=[1, 2]),
    Case(scu._nbinom_sf, np.array([1.0, 3.0, 5.0]), 4.5, X01, diff=[1, 2]),
    Case(scu._binom_pmf, np.array([0.0, 3.0, 8.0]), 8.5, X01, diff=[1, 2]),
    Case(scu._nbinom_pmf, np.array([0.0, 3.0, 5.0]), 4.5, X01, diff=[1, 2]),
    Case(sc.chndtr, XP, 3.5, 1.2, diff=[0, 2]), Case(sc.chndtrix, Q, 3.5, 1.2, diff=[0, 2]),
    Case(scu._ncx2_pdf, XP, 3.5, 1.2, diff=[0, 2]), Case(scu._ncx2_sf, XP, 3.5, 1.2, diff=[0, 2]),
    Case(scu._ncx2_isf, Q, 3.5, 1.2, diff=[0, 2]),
    Case(sc.ncfdtr, 3.0, 7.0, 1.5, XP, diff=[2, 3]), Case(sc.ncfdtri, 3.0, 7.0, 1.5, Q, diff=[2, 3]),
    Case(scu._ncf_sf, XP, 3.0, 7.0, 1.5, diff=[0, 3]), Case(scu._ncf_isf, Q, 3.0, 7.0, 1.5, diff=[0, 3]),
    Case(sc.nctdtr, 5.0, 0.7, XR, diff=[2]), Case(sc.nctdtrit, 5.0, 0.7, Q, diff=[2]),
    Case(scu._nct_sf, XR, 5.0, 0.7, diff=[0]), Case(scu._nct_isf, Q, 5.0, 0.7, diff=[0]),
    Case(scu._skewnorm_cdf, XR, 0.0, 1.0, 1.8, diff=[0, 3]), Case(scu._skewnorm_ppf, Q, 0.0, 1.0, 1.8, diff=[0, 3]),
    Case(scu._skewnorm_isf, Q, 0.0, 1.0, -0.6, diff=[0, 3]),
    Case(sc.tklmbda, XR, np.array([0.15, 0.3, -0.2])), Case(sc.tklmbda, XR, 0.45),
    Case(scu._cauchy_ppf, Q, 0.0, 1.0, diff=[0]), Case(scu._cauchy_isf, Q, 0.0, 1.0, diff=[0]),
    Case(scu._invgauss_ppf, Q, 0.8, 1.0, diff=[0, 1]), Case(scu._invgauss_isf, Q, 0.8, 1.0, diff=[0, 1]),
    Case(scu._landau_ppf, Q, 0.0, 1.0, diff=[0]), Case(scu._landau_isf, Q, 0.0, 1.0, diff=[0]),
    Case(scu._landau_cdf, XR, 0.0, 1.0, diff=[0]), Case(scu._landau_sf, XR, 0.0, 1.0, diff=[0]),
    Case(scu._cosine_cdf, XR), Case(scu._cosine_invcdf, Q), Case(scu._log1mexp, -XP),
    Case(sc.smirnov, 5, X01 * 0.6, diff=[1]), Case(scu._smirnovc, 5, X01 * 0.6, diff=[1]),
    Case(sc.smirnovi, 5, Q, diff=[1]), Case(scu._smirnovci, 5, Q, diff=[1]),
    Case(sc.kolmogorov, XP), Case(scu._kolmogc, XP), Case(sc.kolmogi, Q), Case(scu._kolmogci, Q),
    Case(distribution_rules.von_mises_cdf if hasattr(distribution_rules, "von_mises_cdf") else
         __import__("scipy.stats._stats", fromlist=["von_mises_cdf"]).von_mises_cdf, 1.5, XR, diff=[1]),
]
RULE_CASES += [  # (inverses in a parameter: the implicit function theorem)
    Case(sc.chdtriv, Q, XP + 1), Case(sc.stdtridf, np.array([0.7, 0.85, 0.95]), np.array([0.8, 1.5, 2.5])),
    Case(sc.gdtrix, 0.7, 2.5, Q), Case(sc.gdtria, Q, 2.5, XP), Case(sc.gdtrib, 0.7, Q, XP + 1),
    Case(sc.btdtria, Q, 2.5, X01), Case(sc.btdtrib, 1.7, Q, X01),
    Case(sc.fdtridfd, np.array([3.0, 5.0, 4.0]), np.array([0.6, 0.3, 0.45]), np.array([1.2, 0.7, 1.0])),
    Case(sc.bdtrik, np.array([0.45, 0.6, 0.8]), 8.0, X01), Case(sc.bdtrin, np.array([3.0, 2.5, 1.0]), Q, X01),
    Case(sc.bdtri, np.array([1, 3, 5]), 8, Q, diff=[2]),
    Case(sc.nbdtrik, np.array([0.6, 0.7, 0.8]), 4.0, X01),
    Case(sc.nbdtrin, np.array([3.0, 2.5, 1.0]), Q, X01),
    Case(sc.nbdtri, np.array([1, 3, 5]), 4, Q, diff=[2]),
    Case(sc.nrdtrimn, Q, 1.5, XR), Case(sc.nrdtrisd, 0.3, np.array([0.6, 0.75, 0.9]), XP + 0.5),
    Case(sc.chndtrinc, XP + 2, 3.5, np.array([0.2, 0.3, 0.4]), diff=[0, 2]),
    # (SciPy's answer solves ncfdtr = p to about 1e-6 only: its differences follow that error)
    Case(sc.ncfdtrinc, 3.0, 7.0, 0.5 * Q, XP + 1, diff=[2, 3], rtol=1e-3),
]
FIRST_ORDER_ONLY.add(sc.ncfdtrinc)
# (the inverses in a parameter whose forward derivative has no closed form: refused, each argument)
REFUSED_INVERSES = [sc.chndtridf, sc.ncfdtridfd, sc.ncfdtridfn, sc.nctdtridf, sc.nctdtrinc]
if hasattr(sc, "betaincc"):
    RULE_CASES += [Case(sc.betaincc, 2.5, 1.7, X01, diff=[2]), Case(sc.betainccinv, 2.5, 1.7, Q, diff=[2])]


def test_every_entry_of_the_table_is_checked():
    checked = {c.f for c in RULE_CASES} | set(REFUSED_INVERSES)
    methods = distribution_rules.METHODS  # (every distribution's logpdf and pdf: the loops above)
    assert all(f in checked for f in distribution_rules.FUNCTIONS
               if f is not getattr(scu, "_beta_isf", 0) and f not in methods)


@pytest.mark.parametrize("case", RULE_CASES, ids=repr)
def test_rule_forward_and_reverse(case):
    check_forward(case)
    check_reverse(case)


@pytest.mark.parametrize("case", [c for c in RULE_CASES if c.f not in FIRST_ORDER_ONLY], ids=repr)
def test_rule_second_order(case):
    check_second_order(case)


@pytest.mark.parametrize("case", [c for c in RULE_CASES if c.f in FIRST_ORDER_ONLY], ids=repr)
def test_rule_second_order_is_refused_clearly(case):
    with pytest.raises(capstan.NoRuleError):
        check_second_order(case)


def test_tukeylambda_at_lambda_zero():
    # (SciPy switches to the logistic formula for |lambda| < 1e-4, so differences across 0 are
    # unreliable: the derivative is checked against its closed form, the limit of the general one)
    x = -0.7
    p = sc.tklmbda(x, 0.0)
    lp, lq = np.log(p), np.log1p(-p)
    expected = -0.5 * (lp * lp - lq * lq) / (1 / p + 1 / (1 - p))
    assert np.isclose(capstan.gradient(lambda lm: sc.tklmbda(x, lm), 0.0)[0], expected, rtol=1e-12)
    assert np.isclose(capstan.jvp(lambda lm: sc.tklmbda(x, lm), (0.0,), (1.0,))[1], expected, rtol=1e-12)
    general = capstan.gradient(lambda lm: sc.tklmbda(x, lm), 1e-3)[0]  # (continuous through 0)
    assert abs(general - expected) < 1e-3 * abs(expected)


#: array arguments for the density methods: 1-d points all valid (the common case, computed
#: without SciPy's broadcasting and placing), 2-d points, and 1-d points partly outside the support
ARRAY_LAYOUTS = ("1-d", "2-d", "partly outside")


def _array_points(dist, shapes, layout):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x = 0.3 + 1.2 * dist.ppf(np.array([0.2, 0.45, 0.7, 0.9]), *shapes)
        if layout == "2-d":
            return x.reshape(2, 2)
        if layout == "partly outside":
            lower, upper = dist.support(*shapes, loc=0.3, scale=1.2)
            outside = lower - 1.0 if np.isfinite(lower) else (upper + 1.0 if np.isfinite(upper) else np.nan)
            return np.append(x, [outside, np.nan])
        return x


@pytest.mark.parametrize("layout", ARRAY_LAYOUTS)
@pytest.mark.parametrize("method", ("logpdf", "pdf"))
def test_densities_of_point_arrays_are_scipys_values_and_derivatives(method, layout):
    """``logpdf``/``pdf`` of every distribution at an array of points, ``loc`` and ``scale``
    differentiated: the value is SciPy's exactly (shape and dtype too), and the gradient
    (reverse) and the directional derivative (forward) match central differences."""
    bad = []
    for name, shapes in EXAMPLES:
        dist = getattr(stats, name)
        x = _array_points(dist, shapes, layout)
        weights = np.linspace(0.5, 1.5, x.size).reshape(x.shape)

        def values(p, call=getattr(dist, method)):
            return call(x, *shapes, loc=p[0], scale=p[1])

        def f(p):
            v = values(p)
            return np.sum(weights * np.where(np.isfinite(v), v, 0.0))

        p = np.array([0.3, 1.2])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = values(p)
            try:
                got, _ = capstan.pullback(values, p)
                g = capstan.gradient(f, p)[0]
                t = capstan.jvp(f, (p,), (np.array([0.7, -0.4]),))[1]
            except capstan.NoRuleError:
                continue  # (a clear refusal; which ones is the business of the tests above)
            except (TypeError, ValueError) as e:
                if "capstan" not in str(e):
                    raise
                continue
            ref = np.array([_difference(lambda v, i=i: f(np.where(np.arange(2) == i, v, p)), p[i]) for i in range(2)])
        if not (np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want)
                and np.array_equal(got, want, equal_nan=True)):
            bad.append("%s: value %r, SciPy's %r" % (name, got, want))
            continue
        d, err = ref[:, 0], ref[:, 1]
        tol = 1e-6 * (1 + np.abs(d)) + 10 * err
        if not (np.all(np.abs(g - d) <= tol) and abs(t - (0.7 * d[0] - 0.4 * d[1])) <= tol.sum()):
            bad.append("%s: gradient %r, forward %r, differences say %r" % (name, g, t, d))
    assert not bad, "\n".join(bad)


def test_gaussian_kde_in_points_data_weights_and_bandwidth():
    """gaussian_kde's compiled kernel sums (evaluate, logpdf) through NumPy equivalents:
    SciPy's values to rounding, derivatives in the evaluation points, the data, the weights
    and the bandwidth against differences, in both modes and at second order."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((2, 9))
    w = rng.uniform(0.5, 1.5, 9)
    p = np.array([[0.3, -0.4], [-0.2, 0.9]])

    def value(d, weights, bw):
        return stats.gaussian_kde(d, bw_method=bw, weights=weights)

    np.testing.assert_allclose(capstan.jvp(lambda q: value(data, w, 0.6).evaluate(q), (p,), (p,))[0],
                               value(data, w, 0.6).evaluate(p), rtol=1e-13)
    for method in ("evaluate", "logpdf"):
        def f(q, d, weights, bw, method=method):
            return np.sum(np.array([1.0, -0.7]) * getattr(value(d, weights, bw), method)(q))
        args = (p, data, w, 0.6)
        grads = capstan.gradient(f, *args)
        for i, g in enumerate(grads):
            x = np.asarray(args[i], dtype=float)
            v = rng.standard_normal(x.shape)

            def along(t, i=i, x=x, v=v):
                a = list(args)
                a[i] = x + t * v if x.ndim else float(x + t * v)
                return f(*a)
            ref, err = _difference(along, 0.0)
            assert np.sum(g * v) == pytest.approx(ref, rel=1e-7, abs=10 * err)
            t = capstan.jvp(lambda y, i=i: f(*[y if j == i else a for j, a in enumerate(args)]), (args[i],),
                            (v if x.ndim else float(v),))[1]
            assert t == pytest.approx(ref, rel=1e-7, abs=10 * err)
    one = lambda x: stats.gaussian_kde(data[0])(x)[0]  # noqa: E731
    ref, err = _difference(lambda x: capstan.D(one, x), 0.4)
    assert capstan.hessian(one, 0.4) == pytest.approx(ref, rel=1e-7, abs=10 * err)


@pytest.mark.parametrize("f", REFUSED_INVERSES, ids=lambda f: f.__name__)
def test_inverses_in_parameters_without_derivatives_are_refused(f):
    args = {sc.chndtridf: (3.0, 0.4, 1.2), sc.ncfdtridfd: (3.0, 0.4, 1.5, 2.0),
            sc.ncfdtridfn: (0.4, 7.0, 1.5, 2.0),
            sc.nctdtridf: (0.4, 0.7, 0.5), sc.nctdtrinc: (5.0, 0.4, 0.5)}[f]
    for i in range(len(args)):
        def g(x, i=i):
            a = list(args)
            a[i] = x
            return f(*a)
        with pytest.raises(capstan.NoRuleError, match=r"scipy\.special\.%s .*argument" % f.__name__):
            capstan.D(g, args[i])
