"""NumPy's floating-point error settings: the program's arithmetic keeps them, the
derivative's does not see them (capstan/fpstate.py).

A partial such as ``0.5 / sqrt(x)`` divides by zero at 0, where the derivative of
``0.0 * np.sqrt(x)`` is still 0 (an exact zero factor wins).  Under
``np.seterr(all="raise")`` or ``-W error`` (a test suite's ``filterwarnings = error``) the
plain program runs silently there, so the derivative must too: no FloatingPointError or
RuntimeWarning from inside capstan.  A division by zero in the program itself still
raises or warns as it does plainly.  Also: cotangent buffers the backward pass adds
into in place are never shared between two inputs (a step passes its cotangent on
unchanged to several parents).
"""
import warnings

import numpy as np
import pytest

import capstan

X0 = np.array([0.0, 1.0, 4.0])


def _zero_factor(x):  # d/dx = 2 x: the sqrt and arcsin terms are multiplied by an exact 0
    return np.sum(0.0 * np.sqrt(x) + 0.0 * np.arcsin(x / 4.0) + x ** 2 + 0.0 * x ** 0.5)


CASES = [
    ("gradient", lambda: capstan.gradient(_zero_factor, X0)[0], 2 * X0),
    ("value_and_grad", lambda: capstan.value_and_grad(_zero_factor)(X0)[1], 2 * X0),
    ("jvp", lambda: capstan.jvp(_zero_factor, (X0,), (np.ones(3),))[1], np.sum(2 * X0)),
    ("jacobian", lambda: capstan.jacobian(lambda x: 0.0 * np.sqrt(x) + x, X0), np.eye(3)),
    ("jacfwd", lambda: capstan.jacfwd(lambda x: 0.0 * np.sqrt(x) + x)(X0), np.eye(3)),
    ("hessian", lambda: capstan.hessian(_zero_factor, X0), 2 * np.eye(3)),
    ("sparse_hessian", lambda: capstan.sparse_hessian(_zero_factor, X0).toarray(), 2 * np.eye(3)),
    ("D of np.float64", lambda: capstan.D(lambda x: 0.0 * np.sqrt(x) + x * x, np.float64(0.0)), 0.0),
    ("D(D)", lambda: capstan.D(lambda y: capstan.D(lambda z: 0.0 * np.sqrt(z) + z * z, y), np.float64(0.0)), 2.0),
    ("pullback", lambda: capstan.pullback(lambda x: 0.0 * np.sqrt(x), X0)[1](np.ones(3))[0], np.zeros(3)),
    ("checkpoint", lambda: capstan.gradient(
        lambda x: capstan.checkpoint(lambda y: np.sum(0.0 * np.sqrt(y) + y))(x), X0)[0], np.ones(3)),
    ("kept tape", lambda: capstan.record_tape(_zero_factor, X0).gradient(X0)[0], 2 * X0),
]


@pytest.mark.parametrize("name,run,expected", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("strict", ["seterr raise", "warnings as errors"])
def test_derivative_arithmetic_ignores_the_users_fp_settings(name, run, expected, strict):
    before = np.geterr()
    with warnings.catch_warnings():
        if strict == "seterr raise":
            with np.errstate(all="raise"):
                got = run()
                assert np.geterr()["divide"] == "raise"  # (restored inside the user's block)
        else:
            warnings.simplefilter("error")
            got = run()
    np.testing.assert_allclose(np.asarray(got, dtype=float), expected, rtol=1e-12, atol=0)
    assert np.geterr() == before


def test_no_warning_printed_where_the_program_prints_none():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capstan.gradient(_zero_factor, X0)
        capstan.jvp(_zero_factor, (X0,), (np.ones(3),))
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("entry", ["gradient", "jvp"])
def test_the_programs_own_division_by_zero_still_raises(entry):
    def f(x):
        return np.sum(1.0 / x)
    x = np.array([0.0, 1.0])
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            f(x)
        with pytest.raises(FloatingPointError):
            if entry == "gradient":
                capstan.gradient(f, x)
            else:
                capstan.jvp(f, (x,), (np.ones(2),))
    assert np.geterr()["divide"] == "warn"


def test_the_programs_own_warning_is_still_shown_once():
    def f(x):
        return np.sum(np.log(x[1:]) + x) + np.log(x[0]) * 0.0  # log(0): the program's own warning
    x = np.array([0.0, 1.0])
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        f(x)
    with warnings.catch_warnings(record=True) as routed:
        warnings.simplefilter("always")
        capstan.jvp(f, (x,), (np.array([0.0, 1.0]),))
    assert [str(w.message) for w in routed] == [str(w.message) for w in plain] != []


def test_errstate_restored_when_the_backward_pass_raises():
    before = np.geterr()

    def f(x):
        return np.sum(capstan.hook(lambda g: 1 / 0, x) * 2.0)
    with pytest.raises(ZeroDivisionError):
        capstan.gradient(f, np.array([1.0, 2.0]))
    assert np.geterr() == before


def test_cotangent_passed_on_to_two_inputs_is_not_added_into():
    # p = a + b hands the same cotangent array to a and b; a's element read before p
    # must not be added into b's cotangent
    def f(a, b):
        s0 = a[0]
        p = a + b
        return p[1] + s0 * 2.0 + b[2]
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    ga, gb = capstan.gradient(f, a, b)
    np.testing.assert_array_equal(ga, [2.0, 1.0, 0.0])
    np.testing.assert_array_equal(gb, [0.0, 1.0, 1.0])


def test_cotangent_passed_on_through_a_zero_meets_infinite_pass():
    # the same, on the backward pass that follows structural zeros (sqrt's slope at 0)
    def f(a, b):
        s0 = a[0]
        p = a + b
        return p[1] + s0 + 0.0 * np.sqrt(b[2] - 6.0)
    ga, gb = capstan.gradient(f, np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(ga, [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(gb, [0.0, 1.0, 0.0])
