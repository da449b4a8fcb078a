"""Rules for Python's builtins and NumPy's scalar types: casts keep the derivative."""
import cmath
import statistics

import numpy as np

from .operator_rules import one
from .registry import defderiv, defimpl, defjvp, defvjp, nondifferentiable


def _sum(iterable, /, start=0):
    total = start
    for x in iterable:
        total = total + x
    return total


defderiv(float, one)
defderiv(complex, lambda ans, real=0, imag=0: 1.0, lambda ans, real=0, imag=0: 1j)
for scalar in (np.float64, np.float32, np.float16, np.longdouble, np.complex128, np.complex64):
    defderiv(scalar, one)
nondifferentiable(int, bool, round, np.int64, np.int32, np.bool_)
defimpl(sum, _sum)
defimpl(divmod, lambda a, b: (a // b, a % b))


def _mean(data):
    values = list(data)
    if not values:
        raise statistics.StatisticsError("mean requires at least one data point")
    return _sum(values, 0.0) / len(values)


for _conj in (complex.conjugate, float.conjugate, int.conjugate):
    defjvp(_conj, lambda ts, ans, z: ts[0].conjugate() if type(ts[0]) is complex else np.conj(ts[0]),
           batched=True)
    defvjp(_conj, lambda g, ans, z: (np.conj(g) if type(z) is complex else np.real(g),))
defimpl(statistics.mean, _mean)  # the library's exact-fraction arithmetic would drop the derivative
defimpl(cmath.polar, lambda z: (abs(z), cmath.phase(z)))
