"""Nested differentiation through ``np.asarray(x)`` of an array later written in place:
the inner reverse pass must treat ``np.asarray(x)`` as ``x`` itself (the same array), also
when ``x`` holds an enclosing differentiation's value -- else the write is not seen
through it and the second derivatives are silently lost (they came out zero).  SciPy's
code does this all the time (``x = np.asarray(x)`` at the top of a function), so a filter
whose result is written back into its input hit it."""
import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sig

import capstan

V0 = np.array([2.0, 3.0, 4.0])
EXACT = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # of v0 * sum(v[1:])


def written_back(g):
    def f(v):
        x = v[1:] * 1.0
        x[...] = g(v[:1], x)
        return np.sum(x)
    return f


@pytest.mark.parametrize("g", [lambda b, x: b[0] * np.asarray(x), lambda b, x: ndi.correlate1d(x, b * 1.0),
                               lambda b, x: sig.lfilter(b, [1.0], x)], ids=["asarray", "correlate1d", "lfilter"])
def test_second_derivatives_through_a_write_back(g):
    f = written_back(g)
    np.testing.assert_allclose(capstan.hessian(f, V0), EXACT, atol=1e-12)
    for outer in ("forward", "reverse"):  # (inner reverse: where the write was lost)
        np.testing.assert_allclose(capstan.jacobian(lambda v: capstan.gradient(f, v)[0], V0, mode=outer), EXACT,
                                   atol=1e-12)
