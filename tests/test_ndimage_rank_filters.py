"""scipy.ndimage's rank filters (``rank_filter``, ``median_filter``, ``percentile_filter``;
``scipy.signal.medfilt``) through Python equivalents of their compiled kernels
(capstan/rules/ndimage_rules.py): the equivalents compute what SciPy computes in every
mode, footprint and origin; the derivative is the selected element's, in both modes and
at second order."""
import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sig
from scipy.ndimage._ni_support import _extend_mode_to_code

import capstan
from capstan.rules import ndimage_rules as R
from rule_checks import Case, check_forward, check_reverse, check_second_order, reseed

reseed("rank filters")
RNG = np.random.default_rng(5)
X = RNG.normal(size=(5, 6))


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_the_equivalents_compute_what_scipy_computes(mode):
    code = _extend_mode_to_code(mode, is_filter=True)
    footprint = np.array([[1, 0, 1], [1, 1, 0]], bool)
    for origins in [(0, 0), (0, -1), (-1, 1)]:
        for rank in range(4):
            out = np.empty_like(X)
            R.rank_filter(X, rank, footprint, out, code, 0.3, origins)
            np.testing.assert_array_equal(out, ndi.rank_filter(X, rank, footprint=footprint, mode=mode, cval=0.3,
                                                               origin=origins))
    x = X[0]
    for size in (1, 2, 3, 4):
        for origin in range(-(size // 2), (size - 1) // 2 + 1):
            for rank in range(size):
                out = np.empty_like(x)
                R.rank_filter_1d(x, rank, size, out, code, 0.3, origin)
                np.testing.assert_array_equal(out, ndi.rank_filter(x, rank, size=size, mode=mode, cval=0.3,
                                                                   origin=origin))


CASES = [
    Case(ndi.median_filter, X, 3, name="median_filter"),
    Case(ndi.median_filter, X, footprint=np.array([[1, 0, 1], [0, 1, 1]], bool), mode="nearest",
         name="median_filter footprint"),
    Case(ndi.percentile_filter, X, 30, size=(2, 3), mode="constant", cval=0.1, name="percentile_filter"),
    Case(ndi.rank_filter, X[0], 1, size=3, mode="wrap", name="rank_filter 1-D"),
    Case(ndi.rank_filter, X, -2, size=(3, 1), origin=(1, 0), name="rank_filter origin"),
    Case(ndi.median_filter, X[:1], 3, mode="mirror", name="median_filter n=1"),
    Case(sig.medfilt, X[0], 3, name="medfilt"),
    Case(sig.medfilt, X, (3, 1), name="medfilt 2-D"),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_rank_filters(case):
    check_forward(case)
    check_reverse(case)
    check_second_order(case)


def test_the_derivative_is_the_selected_elements():
    """Each output's gradient is one unit at the element whose value it took; copies of
    one element made by the boundary mode (``nearest``) are that element."""
    x = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    jac = capstan.jacobian(lambda v: ndi.median_filter(v, 3, mode="nearest"), x)
    out = ndi.median_filter(x, 3, mode="nearest")
    assert np.array_equal(jac.sum(axis=1), np.ones(5))
    assert np.array_equal(x[np.argmax(jac, axis=1)], out)
    np.testing.assert_array_equal(capstan.jacobian(lambda v: ndi.median_filter(v, 3, mode="nearest"), x,
                                                   mode="reverse"), jac)


@pytest.mark.parametrize("f, x", [
    (lambda v: ndi.median_filter(v, 3), np.array([1.0, 2.0, 2.0, 0.5, 3.0])),            # two elements
    (lambda v: sig.medfilt(v, 3), np.array([0.0, 1.0, 2.0, 3.0])),                         # an element and cval
    (lambda v: ndi.percentile_filter(v, 50, size=(2, 2)), np.array([[1.0, 2.0], [2.0, 1.0]])),
], ids=["elements", "cval", "2-D"])
def test_ties_between_different_elements_are_refused(f, x):
    """Where the selected value is shared by different elements, the one-sided derivatives
    differ (central differences give their mean): refused in both modes, never one of them."""
    with pytest.raises(capstan.NoRuleError, match="shared by different input elements"):
        capstan.jacobian(f, x)
    with pytest.raises(capstan.NoRuleError, match="shared by different input elements"):
        capstan.jacobian(f, x, mode="reverse")
