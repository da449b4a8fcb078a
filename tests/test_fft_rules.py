"""numpy.fft and scipy.fft rules through the public API: forward mode against finite
differences, reverse against forward (dot-product identity: the adjoint transforms,
with n=/s= padding and cropping and rfft/irfft's Hermitian weights), second order."""
import numpy as np
import pytest
import scipy.fft

import capstan
from rule_checks import C, Case, R, check_forward, check_reverse, check_second_order, reseed

reseed("fft")

NORMS = [None, "ortho", "forward", "backward"]


def cases(m):
    out = []
    for norm in NORMS:
        out += [Case(m.fft, C(6), norm=norm), Case(m.ifft, C(5), norm=norm), Case(m.rfft, R(6), norm=norm),
                Case(m.rfft, R(7), norm=norm), Case(m.irfft, C(4), norm=norm),
                Case(m.irfft, C(4), 7, norm=norm),
                Case(m.hfft, C(4), norm=norm), Case(m.ihfft, R(6), norm=norm),
                Case(m.fftn, C(3, 4), norm=norm), Case(m.rfftn, R(3, 4), norm=norm),
                Case(m.irfftn, C(3, 4), norm=norm)]
    out += [
        Case(m.fft, R(6)), Case(m.fft, C(6), 4), Case(m.fft, C(4), 7), Case(m.fft, C(3, 5), axis=0),
        Case(m.fft, R(3, 5), 8, 0, "ortho"), Case(m.ifft, C(2, 5), 3, axis=-1),
        Case(m.rfft, R(7), 4), Case(m.rfft, R(5), 9), Case(m.rfft, R(4, 6), axis=0),
        Case(m.irfft, C(5), 6), Case(m.irfft, C(5), 13), Case(m.irfft, C(6), 5),
        Case(m.irfft, C(3, 4), axis=0),
        Case(m.irfft, R(4)), Case(m.hfft, C(5), 7), Case(m.ihfft, R(7), 5), Case(m.hfft, C(2, 4), axis=0),
        Case(m.fft2, C(3, 4)), Case(m.fft2, C(2, 3, 4), (4, 5)),
        Case(m.ifft2, C(3, 4), axes=(0, 1), norm="ortho"),
        Case(m.fftn, C(2, 3, 4), axes=(0, 2)), Case(m.fftn, R(2, 3, 4), (3, 2)),
        Case(m.ifftn, C(2, 3, 4), (2, 5), (2, 0)),
        Case(m.rfft2, R(4, 6)), Case(m.rfftn, R(2, 3, 4), (4, 5), (0, 2)),
        Case(m.rfftn, R(3, 5), axes=(1, 0)),
        Case(m.irfft2, C(4, 3)), Case(m.irfftn, C(2, 3, 4), (4, 5), (0, 2)), Case(m.irfftn, C(3, 4), (5, 7)),
    ]
    if hasattr(m, "hfftn"):
        out += [Case(m.hfftn, C(3, 4)), Case(m.ihfftn, R(3, 4)), Case(m.hfft2, C(3, 4), norm="ortho"),
                Case(m.ihfft2, R(4, 4))]
    for c in out:
        c.name = "%s.%r" % (m.__name__, c)
    return out


CASES = cases(np.fft) + cases(scipy.fft)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_matches_finite_differences(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_reverse_is_adjoint_of_forward(case):
    check_reverse(case)


SECOND = [c for c in CASES if not np.iscomplexobj(c.args[0])][::3]


@pytest.mark.parametrize("case", SECOND, ids=repr)
def test_second_order_runs_through_the_rules(case):
    check_second_order(case)


@pytest.mark.parametrize("m", [np.fft, scipy.fft], ids=["numpy", "scipy"])
def test_power_spectrum_hessian(m):
    """A nonlinear function of transforms: the Hessian of ``sum(w |rfft(x)|^2)`` is
    ``2 Re(F^H W F)`` restricted to the real input, known in closed form."""
    x = R(6)
    w = np.abs(R(4))

    def power(v):
        return np.sum(w * np.abs(m.rfft(v)) ** 2) + np.sum(m.irfft(m.fft(v)[:4] * w, 6) ** 2)

    H = capstan.hessian(power, x)
    F = np.fft.fft(np.eye(6), axis=0)
    A = F[:4]
    B = np.fft.irfft(w[:, None] * A, 6, axis=0)
    expected = 2 * np.real(A.conj().T @ (w[:, None] * A)) + 2 * B.T @ B
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-10)


def test_out_argument_is_not_written_with_tangents():
    x, t = R(8), R(8)
    out = np.empty(8, dtype=complex)
    y, dy = capstan.jvp(lambda v: np.fft.fft(v, out=out), (x,), (t,))
    np.testing.assert_allclose(out, np.fft.fft(x))
    np.testing.assert_allclose(dy, np.fft.fft(t))


def test_bad_norm_is_numpys_error():
    with pytest.raises(ValueError):
        capstan.gradient(lambda v: np.sum(np.abs(np.fft.fft(v, norm="bogus"))), R(4))
