"""Jacobians and Hessians, composed from forward and reverse mode."""
import numpy as np

from .forward import forward_jacobian
from .reverse import gradient, reverse_jacobian


def jacobian(f, x, *, mode="forward", chunk=None):
    """Jacobian of ``f`` at ``x``: an array of shape ``out.shape + x.shape``.

    ``mode="forward"`` (default) pushes ``chunk`` input directions through each run of
    ``f`` (all of them at once up to 128 inputs); ``mode="reverse"`` runs ``f`` once and
    the backward pass once per output element, better for few outputs and many inputs."""
    if not callable(f):
        raise TypeError("capstan.jacobian(f, x): f must be callable, got %r" % (f,))
    if mode == "forward":
        return forward_jacobian(f, x, chunk)
    if mode == "reverse":
        return reverse_jacobian(f, x)
    raise ValueError("capstan.jacobian: mode must be 'forward' or 'reverse', got %r" % (mode,))


def hessian(f, x, *, chunk=None):
    """Hessian of the real scalar function ``f`` at ``x`` (forward over reverse)."""
    if not callable(f):
        raise TypeError("capstan.hessian(f, x): f must be callable, got %r" % (f,))
    H = forward_jacobian(lambda v: _grad0(f, v), x, chunk)
    return np.asarray(H)


def _grad0(f, v):
    g = gradient(f, v)[0]
    if g is None:
        return np.zeros_like(np.asarray(v, dtype=float)) if np.ndim(v) else 0.0
    return g
