"""Rules for Python's builtins and NumPy's scalar types: casts keep the derivative."""
import cmath

import numpy as np

from .operator_rules import one
from .registry import defderiv, defimpl, defjvp, defvjp, nondifferentiable


def _sum(iterable, /, start=0):
    total = start
    for x in iter(iterable):  # (a call: a plain array holding differentiated values gives them)
        total = total + x
    return total


defderiv(float, one)
defderiv(complex, lambda ans, real=0, imag=0: 1.0, lambda ans, real=0, imag=0: 1j)
def _scalar_jvp(ts, ans, x=0, /):
    """NumPy scalar types cast: the tangent is cast with the value (float32 in, float32
    out; the real part for a real type)."""
    dtype = np.result_type(ans)
    t = np.real(ts[0]) if dtype.kind == "f" and np.iscomplexobj(ts[0]) else ts[0]
    return np.asarray(t, dtype=dtype) if type(ans) is np.ndarray else dtype.type(t)


def _scalar_vjp(g, ans, x=0, /):
    """The cotangent of the value cast: of the input's type and dtype."""
    if not np.iscomplexobj(x):
        g = np.real(g)
    if isinstance(x, (np.ndarray, np.generic)):
        dtype = np.result_type(x)
        return (np.asarray(g, dtype=dtype) if type(x) is np.ndarray else dtype.type(g),)
    return (g,)


def _complex_jvp(ts, ans, re=0, im=None, /):
    """``np.complex128(re, im)``: the tangent ``t_re + 1j * t_im`` (one argument: a cast)."""
    if im is None:
        return _scalar_jvp(ts, ans, re)
    dtype = np.result_type(ans)
    t = 0j if ts[0] is None else ts[0]
    if ts[1] is not None:
        t = t + 1j * ts[1]
    return np.asarray(t, dtype=dtype) if type(ans) is np.ndarray else dtype.type(t)


def _complex_vjp(g, ans, re=0, im=None, /):
    """The cotangents of ``re`` and ``im``: the real and imaginary parts of ``g``."""
    if im is None:
        return _scalar_vjp(g, ans, re)
    return _scalar_vjp(np.real(g), ans, re) + _scalar_vjp(np.imag(g), ans, im)


for scalar in (np.float64, np.float32, np.float16, np.longdouble):
    defjvp(scalar, _scalar_jvp, batched=True)
    defvjp(scalar, _scalar_vjp)
for scalar in (np.complex128, np.complex64):  # (also np.complex128(re, im))
    defjvp(scalar, _complex_jvp, batched=True)
    defvjp(scalar, _complex_vjp)
nondifferentiable(int, bool, round, np.int64, np.int32, np.bool_)
# (an exact test: losses.POINT_TESTS checks the equality it is when it holds)
nondifferentiable(float.is_integer, np.float16.is_integer, np.float32.is_integer, np.float64.is_integer)
defimpl(sum, _sum)
defimpl(divmod, lambda a, b: (a // b, a % b))


for _conj in (complex.conjugate, float.conjugate, int.conjugate):
    defjvp(_conj, lambda ts, ans, z: ts[0].conjugate() if type(ts[0]) is complex else np.conj(ts[0]),
           batched=True)
    defvjp(_conj, lambda g, ans, z: (np.conj(g) if type(z) is complex else np.real(g),))
defimpl(cmath.polar, lambda z: (abs(z), cmath.phase(z)))
