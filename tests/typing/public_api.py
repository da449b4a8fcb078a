"""Uses of the public API that a type checker must accept (checked by tests/test_typing.py
with ``mypy --strict``; never imported by the test suite itself)."""
import math
from typing import Any, Callable

import numpy as np

import capstan


def f(x: float) -> float:
    return math.sin(x) * x


df: Callable[..., Any] = capstan.grad(f)
slope: float = df(1.0)
value_and_slope: tuple[Any, Any] = capstan.value_and_grad(f, argnums=0, has_aux=False)(1.0)
J = capstan.jacfwd(lambda v: v * v, argnums=(0,))(np.ones(2))
Jr = capstan.jacrev(lambda v: v * v)(np.ones(2))
grads: tuple[Any, ...] = capstan.gradient(f, 1.0)
y, back = capstan.pullback(f, 1.0)
cotangents: tuple[Any, ...] = back(1.0)
d = capstan.D(f, 1.0)
primal, tangent = capstan.jvp(f, (1.0,), (1.0,))
H = capstan.hessian(lambda v: float(np.sum(v ** 3)), np.ones(2), chunk=None)
Jx = capstan.jacobian(lambda v: v * v, np.ones(2), mode="forward")
same: float = capstan.stop_gradient(2.0)
hooked: float = capstan.hook(lambda g: g, 2.0)


@capstan.checkpoint
def segment(x: float) -> float:
    return x * x


total: Any = segment(3.0)
