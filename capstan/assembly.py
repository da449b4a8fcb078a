"""The entry points' own array arithmetic: seeding tangents, fitting results to their
inputs' types, putting Jacobians together.

It lives outside the opaque engine modules on purpose.  ``jvp``, ``jacobian``,
``pullback``... are called directly from code that an enclosing differentiation runs,
with values that differentiation tagged; a plain ``np.array(t)`` on such a value would
drop its derivative (the derivative of a ``jvp`` with respect to its tangent would be
0).  The entry points call these functions through ``nesting.route``, which runs them
inside the enclosing differentiation, where their every operation is differentiated
in turn.
"""
import numpy as np


def seed_tangent(primal, tangent):
    """A fresh array tangent for an array input (of the input's dtype, or complex)."""
    return np.array(tangent, dtype=np.result_type(primal, tangent))


def spread_tangent(t, shape, dtype):
    """Tangent ``t`` as a fresh array of the ``shape`` and ``dtype`` of its result."""
    return np.array(np.broadcast_to(t, shape), dtype=dtype)


def as_complex(t):
    """The tangent of a complex result: complex, even where the derivative is real."""
    return t + 0j


def as_array(x):
    return np.asarray(x)


def copied(x):
    return np.array(x, copy=True)


def forward_jacobian_from(blocks, out_shape, in_shape):
    """The Jacobian (``out_shape + in_shape``) from chunked output tangents, each of
    shape ``(width,) + out_shape``, in input order."""
    m = int(np.prod(out_shape))  # (not -1: an empty x gives blocks of width 0)
    rows = [np.reshape(t, (np.shape(t)[0], m)) for t in blocks]
    return np.reshape(np.transpose(np.concatenate(rows, axis=0)), tuple(out_shape) + tuple(in_shape))


def reverse_jacobian_from(rows, out_shape, in_shape, dtype, rows_i=None):
    """The Jacobian from one input cotangent per output element (``None``: zeros); the
    rows are conjugated (a pullback sends back ``conj(J) dy``).  ``rows_i``: for a real
    input of a complex output, the cotangents of the passes seeded with ``1j``, whose rows
    are the Jacobian's imaginary parts (``rows``: its real parts)."""
    n = int(np.prod(in_shape))
    if rows_i is not None:
        flat = [np.zeros(n, dtype=dtype) if g is None and h is None else
                (0.0 if g is None else np.ravel(g)) + 1j * (0.0 if h is None else np.ravel(h))
                for g, h in zip(rows, rows_i)]
        flat = [np.broadcast_to(np.asarray(r, dtype=dtype), (n,)) for r in flat]
    else:
        flat = [np.zeros(n, dtype=dtype) if g is None else np.conj(np.ravel(g)) for g in rows]
    if not flat:
        return np.zeros(tuple(out_shape) + tuple(in_shape), dtype=dtype)
    return np.reshape(np.stack(flat), tuple(out_shape) + tuple(in_shape))


def like_leaf(c, leaf):
    """Cotangent ``c`` as the type of its input ``leaf`` (float for float, complex for
    complex, an array of the input's shape for an array)."""
    if isinstance(leaf, float):
        return float(np.real(c))
    if isinstance(leaf, complex):
        return complex(c)
    if isinstance(leaf, np.ndarray):
        if np.iscomplexobj(leaf) and not np.iscomplexobj(c):
            c = c + 0j
        elif leaf.dtype.kind in "biuf" and np.iscomplexobj(c):
            c = np.real(c)  # (a real input moves along the real axis alone)
        if np.shape(c) != leaf.shape:
            return np.array(np.broadcast_to(c, leaf.shape))
    return c
