"""Jacobians and Hessians, composed from forward and reverse mode."""
import numpy as np

from .forward import forward_jacobian
from .reverse import gradient, pullback, reverse_jacobian


def jacobian(f, x, *, mode="auto", chunk=None):
    """Jacobian of ``f`` at ``x``: an array of shape ``out.shape + x.shape``.

    ``mode="forward"`` pushes ``chunk`` input directions through each run of ``f`` (all
    of them at once up to 128 inputs); ``mode="reverse"`` runs ``f`` once and the
    backward pass once per output element, better for many inputs and few outputs (a
    wide Jacobian).  ``mode="auto"`` (default) takes forward mode up to 128 inputs and
    otherwise records ``f`` once, then finishes in reverse mode when the output has
    fewer elements than forward mode would need runs of ``f``."""
    if not callable(f):
        raise TypeError("capstan.jacobian(f, x): f must be callable, got %r" % (f,))
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError("capstan.jacobian: mode must be 'auto', 'forward' or 'reverse', got %r"
                         % (mode,))
    n = np.size(x)
    if mode == "forward" or (mode == "auto" and (n <= 128 or chunk is not None)):
        return forward_jacobian(f, x, chunk)
    if mode == "reverse":
        return reverse_jacobian(f, x)
    recorded = pullback(f, x)
    if np.size(recorded[0]) < -(-n // 64):
        return reverse_jacobian(f, x, recorded)
    return forward_jacobian(f, x, chunk)


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
