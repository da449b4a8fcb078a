"""scipy.signal's recursive filters (capstan/rules/signal_rules.py): ``lfilter`` in the
signal, the initial state and both coefficient vectors, along any axis, with and without
``zi`` (then also the final state), real and complex; ``sosfilt`` through its compiled
core; and the SciPy code built on them (``filtfilt``, ``sosfiltfilt``, ``decimate``,
``lfilter_zi``, ``lfiltic``).  Forward mode against finite differences, reverse against
forward by the dot-product identity, second order against differences of gradients."""
import numpy as np
import pytest
import scipy.signal as sig

import capstan
from capstan.rules import signal_rules
from rule_checks import C, Case, R, check_forward, check_reverse, check_second_order, reseed

reseed("signal")

B = np.array([0.5, 0.3, -0.2])
A = np.array([1.3, -0.4, 0.1])   # (a[0] != 1: the normalization is differentiated too)
SOS = sig.butter(4, 0.3, output="sos")


def lfilter(b, a, x, **kw):
    return sig.lfilter(b, a, x, **kw)


def lfilter_state(b, a, x, zi, **kw):
    return sig.lfilter(b, a, x, zi=zi, **kw)


def sosfilt_numerators(num, x):
    return sig.sosfilt(np.hstack([num.reshape(-1, 3), SOS[:, 3:]]), x)


def sosfilt_state(x, zi):
    return sig.sosfilt(SOS[:2], x, axis=0, zi=zi)


CASES = [
    Case(lfilter, B, A, R(9), name="lfilter"),
    Case(lfilter, B, A, R(1), name="lfilter n=1"),
    Case(lfilter, B[:2], A, R(6, 4), axis=0, name="lfilter axis=0"),
    Case(lfilter, B, A[:2], R(3, 5), axis=-1, name="lfilter b longer than a"),
    Case(lfilter, np.array([2.0]), np.array([1.5]), R(2, 5), name="lfilter K=0"),
    Case(lfilter, B, A, R(7), diff=[2], name="lfilter in x only"),
    Case(lfilter, B, A, R(7), diff=[1], name="lfilter in a only"),
    Case(lfilter_state, B, A, R(8), R(2), name="lfilter zi"),
    Case(lfilter_state, B, A, R(1), R(2), name="lfilter zi n=1 (the state passes through)"),
    Case(lfilter_state, B, A, R(5, 3), R(2, 3), axis=0, name="lfilter zi axis=0"),
    Case(lfilter_state, B, A, R(5, 3), R(2, 1), axis=0, name="lfilter zi broadcast"),
    Case(lfilter_state, B, A, R(5, 3), R(2, 3), diff=[3], axis=0, name="lfilter in zi only"),
    Case(lfilter, B[:2] + 0.3j, A, C(7), name="lfilter complex"),
    Case(lfilter_state, B, A + 0.2j, C(6), C(2), name="lfilter complex zi"),
    Case(sig.filtfilt, B, A, R(20), name="filtfilt"),
    Case(sig.filtfilt, B, A, R(3, 12), padlen=3, name="filtfilt padlen"),
    Case(sig.filtfilt, B, A, R(12, 2), axis=0, padtype="even", diff=[2], name="filtfilt axis=0"),
    Case(sig.lfilter_zi, B, A, name="lfilter_zi"),
    Case(lambda b, a, x: sig.lfilter(b, a, x, zi=sig.lfiltic(b, a, x[:2][::-1]))[0], B, A, R(6),
         name="lfiltic"),
    Case(sig.sosfilt, SOS, R(10), diff=[1], name="sosfilt"),
    Case(sig.sosfilt, SOS, R(4, 7), axis=0, diff=[1], name="sosfilt axis=0"),
    Case(sosfilt_numerators, SOS[:, :3].ravel(), R(10), name="sosfilt numerators"),
    Case(sosfilt_state, R(5, 2), R(2, 2, 2), name="sosfilt zi"),
    Case(sig.sosfiltfilt, SOS, R(30), diff=[1], name="sosfiltfilt"),
    Case(sig.decimate, R(40), 2, name="decimate"),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


SECOND = [c for c in CASES if not any(np.iscomplexobj(p) for p in c.primals())
          and c.name not in ("decimate", "sosfiltfilt", "filtfilt padlen")]


@pytest.mark.parametrize("case", SECOND, ids=repr)
def test_second_order(case):
    check_second_order(case)


def test_closed_forms_in_the_coefficients():
    """dy/db_k is lfilter([1], a, x delayed by k); dy/da_k is -lfilter([1], a, y delayed
    by k) (a[0] = 1 here, so nothing else moves)."""
    a = np.array([1.0, -0.5, 0.2])
    x = R(8)
    y = sig.lfilter(B, a, x)

    def delayed(s, k):
        return np.concatenate([np.zeros(k), s[:len(s) - k]])

    jb = capstan.jacobian(lambda b: sig.lfilter(b, a, x), B)
    ja = capstan.jacobian(lambda c: sig.lfilter(B, c, x), a, mode="reverse")
    for k in range(3):
        np.testing.assert_allclose(jb[:, k], sig.lfilter([1.0], a, delayed(x, k)), atol=1e-12)
    for k in range(1, 3):
        np.testing.assert_allclose(ja[:, k], -sig.lfilter([1.0], a, delayed(y, k)), atol=1e-12)


def test_reverse_in_x_and_zi_is_the_exact_transpose():
    """The Jacobian of (y, zf) in (x, zi) is the filter applied to unit vectors; reverse mode
    gives its transpose exactly, for a state longer than the signal too."""
    for n in (1, 2, 6):
        x, zi = R(n), R(2)

        def packed(v):
            y, zf = sig.lfilter(B, A, v[:n], zi=v[n:])
            return np.concatenate([y, zf])

        v = np.concatenate([x, zi])
        exact = np.stack([packed(e) for e in np.eye(n + 2)], axis=1)  # (linear: columns)
        np.testing.assert_allclose(capstan.jacobian(packed, v, mode="reverse"), exact, atol=1e-12)
        np.testing.assert_allclose(capstan.jacobian(packed, v), exact, atol=1e-12)


def test_keyword_and_positional_calls_agree():
    x, zi = R(6), R(2)
    g1 = capstan.gradient(lambda v, z: np.sum(sig.lfilter(B, A, v, -1, z)[0] ** 2), x, zi)
    g2 = capstan.gradient(lambda v, z: np.sum(sig.lfilter(B, A, v, zi=z)[0] ** 2), x, zi)
    np.testing.assert_allclose(g1[0], g2[0])
    np.testing.assert_allclose(g1[1], g2[1])


def test_scipy_errors_stay_scipy_errors():
    with pytest.raises(ValueError, match="zi"):
        capstan.gradient(lambda v: np.sum(sig.lfilter(B, A, v, zi=np.zeros(5))[0]), R(6))
    with pytest.raises(ValueError):
        capstan.gradient(lambda b: np.sum(sig.lfilter(np.outer(b, b), A, R(6))), B)


def test_every_entry_is_in_the_tables():
    from capstan.rules.registry import IMPLS, JVP, VJP

    assert all(f in IMPLS or (f in JVP and f in VJP) for f in signal_rules.FUNCTIONS)


def test_the_equivalents_compute_what_scipy_computes():
    """``convolve2d``'s and ``upfirdn``'s Python equivalents against SciPy: every mode,
    boundary and flip; every up/down factor and axis; awkward shapes."""
    from scipy.signal import _sigtools

    rng = np.random.default_rng(0)
    for s1 in [(4, 5), (1, 3), (3, 1), (2, 2)]:
        for s2 in [(2, 3), (3, 3), (1, 1), (4, 1)]:
            a, k = rng.normal(size=s1), rng.normal(size=s2) + 0.5j * rng.normal(size=s2)
            for flip in (0, 1):
                for mode in (0, 1, 2):
                    if mode == 0 and (s2[0] > s1[0] or s2[1] > s1[1]):
                        continue
                    for boundary in (0, 4, 8):
                        want = _sigtools._convolve2d(a, k, flip, mode, boundary, 0.7)
                        np.testing.assert_allclose(signal_rules.convolve2d(a, k, flip, mode, boundary, 0.7), want,
                                                   atol=1e-12)
    for s1, s2 in [((5, 4), (3, 2)), ((6, 7), (4, 5)), ((7,), (4,)), ((4, 5, 6), (2, 3, 4)), ((3, 3), (1, 1))]:
        a = rng.normal(size=s1) + 0.5j * rng.normal(size=s1)
        k = rng.normal(size=s2) - 0.5j * rng.normal(size=s2)
        full = tuple(m + n - 1 for m, n in zip(s1, s2))
        padded = np.zeros(full, complex)
        padded[tuple(slice(0, m) for m in s1)] = a  # (SciPy pads in1 itself for same and full)
        for mode, x, shape in [(0, a, tuple(m - n + 1 for m, n in zip(s1, s2))), (1, padded, s1), (2, padded, full)]:
            want = _sigtools._correlateND(x, k, np.empty(shape, complex), mode)
            np.testing.assert_allclose(signal_rules.correlate_nd(x, k, np.empty(shape, complex), mode), want,
                                       atol=1e-12)
    for shape, axis in [((7,), -1), ((4, 5), 0), ((3, 6), 1), ((1,), 0)]:
        x = rng.normal(size=shape)
        for h in [np.array([1.0]), rng.normal(size=3), rng.normal(size=8)]:
            for up in (1, 2, 3):
                for down in (1, 2, 5):
                    np.testing.assert_allclose(signal_rules.upfirdn(h, x, up, down, axis=axis),
                                               sig.upfirdn(h, x, up, down, axis=axis), atol=1e-12)


KERNEL = np.array([[0.2, 0.1], [0.3, 0.4], [-0.5, 0.2]])
MORE = [
    Case(sig.convolve2d, R(4, 5), KERNEL, name="convolve2d"),
    Case(sig.convolve2d, R(4, 5), KERNEL, mode="same", boundary="symm", name="convolve2d same symm"),
    Case(sig.convolve2d, R(4, 5), KERNEL, mode="valid", boundary="wrap", name="convolve2d valid wrap"),
    Case(sig.correlate2d, R(4, 5), KERNEL, mode="same", boundary="fill", fillvalue=0.3, name="correlate2d"),
    Case(sig.correlate2d, KERNEL, R(4, 5), mode="valid", name="correlate2d swapped"),
    Case(sig.correlate2d, C(3, 4), KERNEL + 0.5j, name="correlate2d complex"),
    # convolve/correlate by the direct method, in any dimension (_sigtools._correlateND)
    Case(sig.convolve, R(4, 3), R(2, 2), method="direct", name="convolve direct"),
    Case(sig.convolve, R(5, 4), R(3, 2), mode="same", name="convolve same"),
    Case(sig.convolve, R(6, 7), R(4, 1), mode="valid", name="convolve valid"),
    Case(sig.correlate, R(3, 4, 2), R(2, 2, 2), method="direct", name="correlate 3-d"),
    Case(sig.correlate, C(4, 3), C(2, 3), mode="same", method="direct", name="correlate complex"),
    Case(sig.upfirdn, R(4), R(9), up=3, down=2, name="upfirdn"),
    Case(sig.upfirdn, np.array([1.0, 0.5]), R(5, 3), up=2, axis=0, name="upfirdn axis=0"),
    Case(sig.resample_poly, R(12), 3, 2, name="resample_poly"),
    Case(sig.resample_poly, R(12), 2, 1, padtype="mean", name="resample_poly mean"),
    Case(sig.decimate, R(24), 3, ftype="fir", name="decimate fir"),
    Case(sig.decimate, R(24), 3, ftype="fir", zero_phase=False, name="decimate fir causal"),
]


@pytest.mark.parametrize("case", MORE, ids=repr)
def test_convolutions_and_resampling(case):
    check_forward(case)
    check_reverse(case)
    if case.name in ("convolve2d same symm", "upfirdn", "correlate2d", "convolve same"):
        check_second_order(case)


def test_upfirdn_extensions_are_refused_clearly():
    """Only the zero extension is covered: the other modes raise NoRuleError, never a zero."""
    for f in (lambda v: sig.upfirdn([1.0, 0.5], v, up=2, mode="symmetric"),
              lambda v: sig.upfirdn([1.0, 0.5], v, up=2, cval=1.0)):
        with pytest.raises(capstan.NoRuleError, match="upfirdn"):
            capstan.jvp(f, (R(12),), (R(12),))
