"""The scipy.special rule table, entry by entry, through the public API: forward mode
against finite differences, reverse against forward (dot-product identity), second
order (Hessian against differences of gradients); refused parameters raise
``NoRuleError`` naming the function and the argument."""
import numpy as np
import pytest

sc = pytest.importorskip("scipy.special")

import capstan  # noqa: E402
from rule_checks import C, Case, P, R, check_forward, check_reverse, check_second_order, reseed  # noqa: E402

reseed("special")

V = np.array([0.5, 1.5, 2.3])  # Bessel orders (plain)
X = 0.5 + 2 * P(3)  # away from 0 and from the Bessel zeros' neighbourhoods

CASES = [
    # logistic, error functions, normal distribution
    Case(sc.expit, R(3)), Case(sc.logit, P(3)), Case(sc.log_expit, R(3)), Case(sc.erf, R(3)),
    Case(sc.erfc, R(3)), Case(sc.erfcx, R(3)), Case(sc.erfi, R(3)), Case(sc.erfinv, P(3) - 0.5),
    Case(sc.erfcinv, P(3) + 0.1), Case(sc.wofz, C(3)), Case(sc.dawsn, R(3)), Case(sc.ndtr, R(3)),
    Case(sc.log_ndtr, R(3) - 3), Case(sc.ndtri, P(3)), Case(sc.ndtri_exp, -P(3)), Case(sc.erf, C(2)),
    # gamma, beta
    Case(sc.gamma, X), Case(sc.gamma, -0.5), Case(sc.gammaln, X), Case(sc.loggamma, X),
    Case(sc.loggamma, C(2) + 2),
    Case(sc.rgamma, X), Case(sc.digamma, X), Case(sc.psi, X), Case(sc.polygamma, 2, X),
    Case(sc.polygamma, np.array([0, 1, 3]), X), Case(sc.beta, X, P(3) + 1), Case(sc.betaln, X, P(3) + 1),
    Case(sc.binom, X + 3, P(3)), Case(sc.poch, X, P(3)),
    Case(sc.gammainc, X, P(3), diff=[1]), Case(sc.gammaincc, X, P(3), diff=[1]),
    Case(sc.gammaincinv, X, P(3), diff=[1]), Case(sc.gammainccinv, X, P(3), diff=[1]),
    Case(sc.betainc, X, X + 1, P(3), diff=[2]), Case(sc.betaincinv, X, X + 1, P(3), diff=[2]),
    Case(sc.zeta, 2.5, X, diff=[1]),
    # Bessel functions of real and complex argument
    Case(sc.j0, X), Case(sc.j1, X), Case(sc.y0, X), Case(sc.y1, X), Case(sc.i0, R(3)), Case(sc.i1, R(3)),
    Case(sc.k0, X), Case(sc.k1, X), Case(sc.i0e, R(3)), Case(sc.i1e, R(3)), Case(sc.k0e, X), Case(sc.k1e, X),
    Case(sc.jv, V, X, diff=[1]), Case(sc.yv, V, X, diff=[1]), Case(sc.iv, V, X, diff=[1]),
    Case(sc.iv, 2, R(3)), Case(sc.kv, V, X, diff=[1]), Case(sc.ive, V, X, diff=[1]), Case(sc.ive, 1, R(3)),
    Case(sc.kve, V, X, diff=[1]), Case(sc.jve, V, X, diff=[1]), Case(sc.yve, V, X, diff=[1]),
    Case(sc.jv, 1.5, C(3) + 1, diff=[1], hessian=False),
    Case(sc.kv, 0.5, C(2) + 2, diff=[1], hessian=False), Case(sc.hankel1, V, X, diff=[1], hessian=False),
    Case(sc.hankel2, 2, X, hessian=False),
    Case(sc.yn, 2, X), Case(sc.kn, np.array([0, 1, 3]), X),
    Case(sc.pdtr, np.array([0.0, 1.0, 4.0]), X, diff=[1]), Case(sc.pdtrc, np.array([0, 2, 5]), X + 1),
    Case(sc.pdtr, np.array([-1.0, 2.5, 3.0]), X, diff=[1]),
    Case(sc.spherical_jn, 2, X), Case(sc.spherical_yn, 1, X), Case(sc.spherical_in, 3, X),
    Case(sc.spherical_kn, 0, X), Case(sc.spherical_jn, 2, X, derivative=True),
    Case(sc.spherical_kn, 2, X, derivative=True), Case(sc.spherical_in, 2, X, True),
    # several results
    Case(sc.airy, R(3)), Case(sc.airy, C(2), hessian=False), Case(sc.fresnel, R(3)), Case(sc.sici, X),
    Case(sc.shichi, X),
    # integrals, elliptic, Lambert W
    Case(sc.exp1, X), Case(sc.expi, X), Case(sc.expn, 2, X), Case(sc.ellipk, P(3)), Case(sc.ellipe, P(3)),
    Case(sc.spence, X), Case(sc.wrightomega, R(3)), Case(sc.lambertw, X, hessian=False),
    Case(sc.lambertw, C(2)),
    Case(sc.hyp2f1, 0.5, 1.5, 2.5, P(3) - 0.5, diff=[3]), Case(sc.hyp1f1, 0.5, 1.5, R(3), diff=[2]),
    Case(sc.hyp0f1, np.array([0.5, 1.5, 2.5]), R(3), diff=[1]), Case(sc.hyp0f1, 1.5, C(2), diff=[1], hessian=False),
    Case(sc.hyperu, 0.5, np.array([1.5, 0.3, 2.5]), X, diff=[2]), Case(sc.zetac, X + 1.2),
    Case(sc.ellipkinc, 3 * R(3), P(3) - 0.5), Case(sc.ellipeinc, 3 * R(3), P(3) - 0.5),
    Case(sc.ellipkinc, np.array([0.7, 2.5, -1.2]), np.array([0.0, 4e-4, -9e-4])),
    Case(sc.ellipeinc, np.array([0.7, 2.5, -1.2]), np.array([0.0, 4e-4, -9e-4])),
    Case(sc.agm, X, X + P(3)), Case(sc.agm, -X, -3 * X),
    # orthogonal polynomials
    Case(sc.eval_jacobi, np.array([0, 2, 3]), 0.5, 1.5, P(3) - 0.5, diff=[3]),
    Case(sc.eval_jacobi, 2.5, 0.5, 1.5, P(3) - 0.5, diff=[3]),
    Case(sc.eval_gegenbauer, np.array([1, 4, 0]), 0.7, R(3), diff=[2]),
    Case(sc.eval_legendre, np.array([0, 1, 5]), P(3)),
    Case(sc.eval_legendre, 3, np.array([-1.0, 1.0, 0.2])), Case(sc.eval_chebyt, np.array([0, 2, 5]), P(3)),
    Case(sc.eval_chebyu, np.array([0, 1, 4]), R(3)), Case(sc.eval_hermite, np.array([0, 1, 4]), R(3)),
    Case(sc.eval_hermitenorm, np.array([0, 3, 5]), R(3)), Case(sc.eval_laguerre, np.array([0, 2, 3]), X),
    Case(sc.eval_genlaguerre, np.array([0, 2, 3]), 0.5, X, diff=[2]),
    # elementary
    Case(sc.expm1, R(3)), Case(sc.log1p, P(3)), Case(sc.cosm1, R(3)), Case(sc.exprel, R(3)),
    Case(sc.exprel, np.array([1e-5, -2e-4, 0.0])), Case(sc.exp2, R(3)), Case(sc.exp10, R(3) / 3),
    Case(sc.cbrt, X), Case(sc.sindg, 50 * R(3)), Case(sc.cosdg, 50 * R(3)), Case(sc.tandg, 30 * R(3)),
    Case(sc.cotdg, 30 + 20 * P(3)), Case(sc.powm1, X, R(3)),
    # x log y, entropies, losses, Box-Cox
    Case(sc.xlogy, R(3), X), Case(sc.xlog1py, R(3), P(3)), Case(sc.xlogy, np.array([0.0, 1.0]), P(2)),
    Case(sc.entr, P(3)), Case(sc.rel_entr, P(3), P(3)), Case(sc.kl_div, P(3), P(3)),
    Case(sc.huber, P(4), 2 * R(4)), Case(sc.pseudo_huber, P(3), R(3)),
    Case(sc.boxcox, X, R(3)), Case(sc.boxcox, X, 0.0), Case(sc.boxcox1p, P(3), R(3)),
    Case(sc.inv_boxcox, P(3), P(3)), Case(sc.inv_boxcox, P(3), 0.0), Case(sc.inv_boxcox1p, P(3), P(3)),
    # SciPy's Python functions
    Case(sc.logsumexp, R(4)), Case(sc.logsumexp, R(3, 4), axis=1),
    Case(sc.logsumexp, R(3, 4), axis=0, keepdims=True),
    Case(sc.logsumexp, R(3, 4), (0, 1)), Case(sc.logsumexp, R(4), b=P(4)),
    Case(sc.logsumexp, R(4), None, P(4)),
    Case(sc.logsumexp, R(2, 3), axis=1, b=np.array([1.0, -0.5, 2.0]), return_sign=True),
    Case(sc.logsumexp, R(3), b=np.array([1.0, -3.0, 0.5]), return_sign=True),
    Case(sc.logsumexp, np.array([0.3, -np.inf, 1.2])), Case(sc.logsumexp, C(3), hessian=False),
    Case(sc.softmax, R(4)), Case(sc.softmax, R(3, 4), axis=1), Case(sc.log_softmax, R(4)),
    Case(sc.log_softmax, R(2, 3), axis=0),
    Case(sc.factorial, X + 1), Case(sc.factorial, 2.5),
    Case(sc.factorial, np.array([-0.5, 1.5]), extend="complex"),
    Case(sc.comb, X + 4, P(3)), Case(sc.comb, 5.5, 2.3, repetition=True), Case(sc.perm, X + 4, P(3) + 1),
    # Struve, Owen's T, Voigt, associated Legendre
    Case(sc.struve, V, X, diff=[1]), Case(sc.modstruve, V - 1, X, diff=[1]), Case(sc.owens_t, R(3), R(3)),
    Case(sc.voigt_profile, R(3), P(3) + 0.3, P(3)), Case(sc.lpmv, np.array([0, 1, 2]), 3.5, P(3) - 0.5, diff=[2]),
]
SECOND_ORDER = [c for c in CASES if c.hessian and not any(np.iscomplexobj(c.args[i]) for i in c.diff)]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


@pytest.mark.parametrize("case", SECOND_ORDER, ids=repr)
def test_second_order(case):
    check_second_order(case)


REFUSED = [  # (function of the differentiated value, function name, argument named)
    (lambda v: sc.jv(v, 1.3), "jv", "v"), (lambda v: sc.kv(v, 1.3), "kv", "v"),
    (lambda v: sc.ive(v, 1.3), "ive", "v"),
    (lambda s: sc.zeta(s - 0.5), "zeta", "x"),  # (at x <= 1: the rule's integral holds for x > 1)
    (lambda n: sc.polygamma(n, 1.5), "polygamma", "n"),
    (lambda n: sc.spherical_jn(n, 1.5), "spherical_jn", "n"),
    (lambda a: sc.hyp2f1(a, 1.0, 2.0, 0.3), "hyp2f1", "a"), (lambda n: sc.expn(n, 1.5), "expn", "n"),
    (lambda z: np.real(sc.ive(1.0, z + 1j)), "ive", "z"),
    (lambda a: sc.eval_jacobi(2, a, 1.0, 0.3), "eval_jacobi", "alpha"),
    (lambda n: sc.eval_legendre(n, 0.3), "eval_legendre", "n"),
    (lambda k: sc.pdtr(k, 2.0), "pdtr", "k"), (lambda n: sc.yn(n, 1.5), "yn", "n"),
    (lambda v: sc.struve(v, 1.5), "struve", "v"), (lambda v: sc.lpmv(1, v, 0.3), "lpmv", "v"),
    (lambda s: sc.voigt_profile(0.3, s - 1.25, 0.5), "voigt_profile", "x, sigma, gamma"),
    (lambda v: sc.hyp0f1(v, 0.7), "hyp0f1", "v"), (lambda a: sc.hyperu(a, 1.5, 0.7), "hyperu", "a"),
    (lambda b: sc.hyperu(0.5, b, 0.7), "hyperu", "b"), (lambda x: sc.zetac(x - 0.5), "zetac", "x"),
]


@pytest.mark.parametrize("f,name,arg", REFUSED, ids=[r[1] + "-" + r[2] for r in REFUSED])
def test_refused_parameters_raise(f, name, arg):
    for mode in (lambda: capstan.D(f, 1.25), lambda: capstan.gradient(f, 1.25)):
        with pytest.raises(capstan.NoRuleError, match=r"scipy\.special\.%s .*argument %s\b" % (name, arg)):
            mode()


def test_refusal_only_when_that_argument_is_differentiated():
    assert capstan.D(lambda x: sc.jv(1.5, x), 0.7) == pytest.approx(0.5 * (sc.jv(0.5, 0.7) - sc.jv(2.5, 0.7)))


def test_exact_integer_forms_are_refused():
    for f in (lambda n: sc.factorial(n, exact=True), lambda n: sc.comb(n, 2, exact=True)):
        with pytest.raises(TypeError, match="exact=True"):
            capstan.gradient(f, 4.0)


def test_logsumexp_matches_scipy_values():
    a = R(3, 4)
    b = np.array([1.0, -2.0, 0.5, 0.0])
    for kw in ({}, {"axis": 1}, {"axis": 0, "b": b[:3, None]}, {"b": b, "axis": -1, "return_sign": True}):
        _, back = capstan.pullback(lambda x: sc.logsumexp(x, **kw), a)  # the defimpl runs
        y, _ = capstan.jvp(lambda x: sc.logsumexp(x, **kw), (a,), (np.zeros_like(a),))
        want = sc.logsumexp(a, **kw)
        for got, w in zip(y if isinstance(y, tuple) else (y,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(got, w, rtol=1e-13)
