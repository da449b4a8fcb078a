"""The scipy.special entries for the Kelvin, scaled Airy, integrated Bessel and Struve,
modified Fresnel, parabolic cylinder, Jacobi elliptic, scaled Hankel and Wright
functions, ellipkm1, Carlson's integrals, the Legendre functions and spherical harmonics
with diff_n, Mathieu and spheroidal functions in x, the rescaled orthogonal polynomials
and the Poisson inverses: forward against finite differences, reverse against forward,
second order (Hessian against differences of gradients), some partials against mpmath,
and the refused arguments."""
import numpy as np
import pytest

sc = pytest.importorskip("scipy.special")

import capstan  # noqa: E402
from rule_checks import Case, P, R, check_forward, check_reverse, check_second_order, reseed  # noqa: E402

reseed("special more")

X = 0.5 + 2 * P(3)
SMALL = np.array([0.0, 0.004, 1.2])  # (through 0, where the Kelvin rules take their series)


def imag_parts(f):
    """``f`` with the imaginary parts of its (complex) results (second order checks the real ones)."""
    def g(*args):
        out = f(*args)
        return tuple(np.imag(o) for o in out) if isinstance(out, tuple) else np.imag(out)
    g.__name__ = "imag_" + f.__name__
    return g


CASES = [
    # Kelvin
    Case(sc.ber, SMALL), Case(sc.bei, SMALL), Case(sc.berp, SMALL), Case(sc.beip, SMALL),
    Case(sc.ber, -X), Case(sc.berp, -X), Case(sc.ker, X), Case(sc.kei, X), Case(sc.kerp, X), Case(sc.keip, X),
    Case(sc.kelvin, X), Case(imag_parts(sc.kelvin), X),
    Case(lambda x: sc.kelvin(x)[::2], np.array([0.0, 0.003]), name="kelvin_be_small"),
    # scaled Airy, integrals of Airy, Bessel and Struve functions
    Case(sc.airye, X), Case(sc.airye, -X, hessian=False),  # (eAi is NaN for x < 0 in SciPy)
    Case(lambda x: sc.airye(x)[2:], -X, name="airye_bi(-x)"),
    Case(sc.itairy, 0.6 * P(3)), Case(sc.itairy, -0.6 * P(3)),
    Case(sc.iti0k0, X), Case(sc.itj0y0, X), Case(sc.it2i0k0, X), Case(sc.it2j0y0, X),
    Case(lambda x: sc.it2i0k0(x)[0], np.array([0.0, 0.05, -0.3]), name="it2i0_small"),
    Case(lambda x: sc.it2j0y0(x)[0], np.array([0.0, 0.05, -0.3]), name="it2j0_small"),
    Case(sc.itstruve0, X), Case(sc.itmodstruve0, X), Case(sc.it2struve0, X),
    Case(sc.it2struve0, np.array([0.004, 0.02, 0.3])),
    # modified Fresnel integrals, parabolic cylinder functions
    Case(sc.modfresnelp, X), Case(imag_parts(sc.modfresnelp), X), Case(sc.modfresnelm, X),
    Case(imag_parts(sc.modfresnelm), X),
    Case(sc.pbdv, np.array([0.3, 1.0, 2.5]), X - 1, diff=[1]),
    Case(sc.pbvv, np.array([0.3, 1.0, -0.7]), X, diff=[1]),
    Case(sc.pbwa, np.array([0.3, 1.0, -2.5]), X - 1, diff=[1]),
    # elliptic
    Case(sc.ellipkm1, P(3)), Case(sc.ellipkm1, np.array([0.1, 0.9995, 1.0])),
    Case(sc.elliprc, X, X + P(3)), Case(sc.elliprc, X + P(3), X), Case(sc.elliprc, X, X + 0.01),
    Case(sc.elliprc, X, -P(3)),
    Case(sc.elliprf, X, X + 1, P(3)), Case(sc.elliprf, 1.3, 1.3, 1.3, hessian=False),
    Case(sc.elliprd, X, X + 1, P(3)), Case(sc.elliprd, X, X, P(3), hessian=False),
    Case(sc.elliprg, X, X + 1, P(3)),
    Case(sc.elliprg, 1.3, 1.3, 1.3, hessian=False), Case(sc.elliprg, X, 0.0, P(3), diff=[0, 2]),
    Case(sc.elliprj, X, X + 1, P(3), P(3) + 2), Case(sc.elliprj, X, X + 1, P(3), -P(3)),
    Case(sc.ellipj, 3 * P(3), P(3)),
    Case(sc.ellipj, np.array([-0.9, 5.2, 2.0]), np.array([0.0005, 0.3, 0.95]), hessian=False),
    Case(sc.ellipj, np.array([-0.9, 5.2, 2.0]), np.array([0.01, 0.3, 0.95])),
    Case(sc.ellipj, np.array([0.4, -2.0, 7.0]), 0.0, diff=[0]),
    # scaled Hankel functions, Wright's function, besselpoly, radian
    Case(sc.hankel1e, np.array([0.5, 2.0, -1.3]), X, diff=[1], hessian=False),
    Case(sc.hankel2e, np.array([0.5, 2.0, -1.3]), X, diff=[1], hessian=False),
    Case(lambda v, z: np.real(sc.hankel1e(v, z)), np.array([0.5, 2.0, -1.3]), X, diff=[1],
         name="re_hankel1e"),
    Case(lambda v, z: np.imag(sc.hankel2e(v, z)), np.array([0.5, 2.0, -1.3]), X, diff=[1],
         name="im_hankel2e"),
    Case(sc.wright_bessel, np.array([0.5, 1.5, 0.0]), np.array([1.2, 0.3, 1.0]), X, diff=[2]),
    Case(sc.log_wright_bessel, np.array([0.5, 1.5, 0.0]), np.array([1.2, 0.3, 1.0]), X, diff=[2]),
    Case(sc.besselpoly, X, np.array([1.0, 0.5, 2.0]), np.array([1.0, 2.5, 0.0]), diff=[0]),
    Case(sc.radian, 30 * P(3), 60 * P(3), 60 * P(3)),
    # Legendre functions with their derivatives (diff_n)
    Case(sc.legendre_p, 3, P(3) - 0.5, diff=[1]),
    Case(sc.legendre_p, 4, P(3), diff=[1], diff_n=1, hessian=False),
    Case(sc.legendre_p_all, 3, P(3) - 0.5, diff=[1]),
    Case(sc.assoc_legendre_p, 3, 1, P(3) - 0.5, diff=[2], norm=True),
    Case(sc.assoc_legendre_p_all, 3, 2, P(3) - 0.5, diff=[2]),
    Case(sc.sph_legendre_p, 3, 1, X, diff=[2]),
    Case(sc.sph_legendre_p_all, 2, 2, X, diff=[2], diff_n=1, hessian=False),
    Case(sc.sph_harm_y, 3, np.array([1, -2, 0]), X, 2 * P(3), diff=[2, 3]),
    Case(imag_parts(sc.sph_harm_y), 3, np.array([1, -2, 0]), X, 2 * P(3), diff=[2, 3]),
    Case(sc.sph_harm_y_all, 2, 1, X, 2 * P(3), diff=[2, 3]),
    Case(sc.sph_harm_y, 3, 1, X, 2 * P(3), diff=[2, 3], diff_n=1, hessian=False),
    Case(sc.lqn, 3, P(3) - 0.5, diff=[1]), Case(sc.lqmn, 2, 3, P(3) - 0.5, diff=[2]),
    Case(sc.lqmn, 2, 3, P(3) + 1.2, diff=[2]),
    # Mathieu functions in x (the angular ones in degrees)
    Case(sc.mathieu_cem, 2, 1.3, 90 * R(3), diff=[2]),
    Case(sc.mathieu_sem, np.array([1, 2, 3]), 0.4, 90 * R(3), diff=[2]),
    # rescaled orthogonal polynomials (degree plain)
    Case(sc.eval_chebyc, np.array([0, 3, 2.5]), 2 * P(3) - 1, diff=[1]),
    Case(sc.eval_chebys, np.array([1, 4, -1.5]), 2 * P(3) - 1, diff=[1]),
    Case(sc.eval_sh_chebyt, np.array([0, 2, 2.5]), P(3), diff=[1]),
    Case(sc.eval_sh_chebyu, np.array([1, 3, 2.5]), P(3), diff=[1]),
    Case(sc.eval_sh_legendre, np.array([0, 5, -1.5]), P(3), diff=[1]),
    Case(sc.eval_chebyc, -3, P(3), diff=[1]), Case(sc.eval_sh_legendre, -2, P(3), diff=[1]),
    Case(sc.eval_sh_jacobi, np.array([0, 2, 3]), 2.5, 1.5, P(3), diff=[3]),
    # Poisson inverses
    Case(sc.pdtri, np.array([0.0, 2.0, 5.0]), P(3), diff=[1]),
    Case(sc.pdtrik, P(3), 1.5 + 3 * P(3), rtol=1e-5),
]
SECOND_ORDER = [c for c in CASES if c.hessian]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


@pytest.mark.parametrize("case", SECOND_ORDER, ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_partials_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    x = 1.37
    # (Kelvin: DLMF 10.61.1 as mpmath evaluates it; second derivatives by mpmath's diff)
    for f, g in ((sc.ber, lambda t: mp.ber(0, t)), (sc.bei, lambda t: mp.bei(0, t)),
                 (sc.ker, lambda t: mp.ker(0, t)), (sc.kei, lambda t: mp.kei(0, t))):
        assert capstan.D(f, x) == pytest.approx(float(mp.diff(g, x)), rel=1e-12)
        assert capstan.D(lambda t: capstan.D(f, t), x) == pytest.approx(float(mp.diff(g, x, 2)), rel=1e-10)
    # (elliprc in y near the diagonal, where the rule takes its series)
    y = 1.37 * (1 + 1e-3)
    want = mp.diff(lambda t: mp.elliprc(x, t), y)
    assert capstan.D(lambda t: sc.elliprc(x, t), y) == pytest.approx(float(want), rel=1e-12)
    # (ellipj in m: sn's derivative)
    u, m = 1.3, 0.4
    want = mp.diff(lambda t: mp.ellipfun("sn", u, m=t), m)
    assert capstan.D(lambda t: sc.ellipj(u, t)[0], m) == pytest.approx(float(want), rel=1e-10)
    # (itairy's integrands where SciPy's own values are rough: x = 4.5, 1e-5 relative)
    assert capstan.D(lambda t: sc.itairy(t)[0], 4.5) == pytest.approx(float(mp.airyai(4.5)), rel=1e-12)


REFUSED = [  # (function of the differentiated value, function name, argument named)
    (lambda v: np.real(sc.hankel1e(v, 1.3)), "hankel1e", "v"), (lambda v: sc.pbdv(v, 0.7)[0], "pbdv", "v"),
    (lambda a: sc.pbwa(a, 0.7)[1], "pbwa", "a"), (lambda n: sc.eval_chebyc(n, 0.3), "eval_chebyc", "n"),
    (lambda n: sc.eval_sh_jacobi(n, 2.5, 1.5, 0.3), "eval_sh_jacobi", "n"),
    (lambda x: sc.eval_sh_jacobi(-2, 2.5, 1.5, x - 1.0), "eval_sh_jacobi", "x"),
    (lambda a: sc.wright_bessel(a, 1.0, 0.5), "wright_bessel", "a"),
    (lambda n: sc.besselpoly(0.5, 1.0, n), "besselpoly", "nu"),
    (lambda k: sc.pdtri(k, 0.3), "pdtri", "k"),
    (lambda p: sc.pdtrik(p - 1.2, 1.0), "pdtrik", "p"),  # (p = 0.05 below P(N = 0): SciPy returns 0)
    # (x < 0: SciPy's values are not the integral)
    (lambda x: np.real(sc.modfresnelp(x - 2.0)[0]), "modfresnelp", "x"),
    (lambda x: np.real(sc.airye(x + 1j)[0]), "airye", "z"),
    (lambda x: sc.elliprd(x, 0.7, 1.25), "elliprd", "x"),  # (z == x: the quotient cancels)
    (lambda p: sc.elliprj(0.3, 0.7, 1.25, p), "elliprj", "p"),
    (lambda y: sc.elliprg(0.3, y - 1.25, 0.8), "elliprg", "y"),  # (at 0: two terms cancel)
    (lambda x: capstan.D(lambda t: sc.elliprf(t, 0.7, 1.25), x), "elliprd", "z"),  # (second order)
    # (a third derivative: SciPy's diff_n goes to 2)
    (lambda x: capstan.D(lambda t: sc.legendre_p(3, t, diff_n=2)[2], x - 1.0), "legendre_p", "z"),
    (lambda q: sc.mathieu_cem(2, q, 30.0)[0], "mathieu_cem", "q"),
    (lambda q: sc.mathieu_a(2, q), "mathieu_a", "q"),
    (lambda c: sc.pro_ang1(1, 3, c, 0.3)[0], "pro_ang1", "c"), (lambda c: sc.obl_cv(1, 3, c), "obl_cv", "c"),
]


@pytest.mark.parametrize("f,name,arg", REFUSED, ids=[r[1] + "-" + r[2] for r in REFUSED])
def test_refused_arguments_raise(f, name, arg):
    for mode in (lambda: capstan.D(f, 1.25), lambda: capstan.gradient(f, 1.25)):
        with pytest.raises(capstan.NoRuleError, match=r"scipy\.special\.%s .*argument %s\b" % (name, arg)):
            mode()


# (m, q, x) or (m, n, c[, cv], x): SciPy's radial Mathieu and spheroidal functions keep about
# 8 digits, so differences with a wide step, Richardson-extrapolated, against first and second
# derivatives
_CV = {"pro": sc.pro_cv(1, 3, 1.5), "obl": sc.obl_cv(1, 3, 1.5)}
WIDE = [(f, args) for f in (sc.mathieu_modcem1, sc.mathieu_modcem2, sc.mathieu_modsem1, sc.mathieu_modsem2)
        for args in ((2, 1.3, 0.3), (1, 0.4, 1.1), (3, 5.0, 0.7))] + [
    (sc.pro_ang1, (1, 3, 1.5, 0.3)), (sc.pro_ang1, (2, 3, 0.7, -0.6)), (sc.obl_ang1, (1, 3, 1.5, 0.3)),
    (sc.pro_rad1, (1, 3, 1.5, 1.3)), (sc.obl_rad1, (1, 3, 1.5, 0.8)),
    (sc.pro_ang1_cv, (1, 3, 1.5, _CV["pro"], -0.4)), (sc.obl_rad1_cv, (1, 3, 1.5, _CV["obl"], 1.3))]


@pytest.mark.parametrize("f,args", WIDE, ids=[f.__name__ + repr(a) for f, a in WIDE])
def test_functions_with_their_derivative_wide_steps(f, args):
    def rich(g, x, h=1e-2):
        d = [(g(x + s) - g(x - s)) / (2 * s) for s in (h, h / 2, h / 4)]
        r1, r2 = (4 * d[1] - d[0]) / 3, (4 * d[2] - d[1]) / 3
        return (16 * r2 - r1) / 15
    x = args[-1]

    def y(t):
        return f(*args[:-1], t)[0]

    def yp(t):
        return f(*args[:-1], t)[1]
    assert capstan.D(y, x) == pytest.approx(yp(x), rel=1e-12)
    assert capstan.D(yp, x) == pytest.approx(rich(yp, x), rel=1e-5)
    assert capstan.gradient(yp, x)[0] == pytest.approx(rich(yp, x), rel=1e-5)
    second = capstan.D(lambda t: capstan.D(yp, t), x)
    assert second == pytest.approx(rich(lambda t: capstan.D(yp, t), x), rel=1e-5)
