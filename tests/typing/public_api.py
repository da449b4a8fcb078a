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


# overdub: contexts, primitives, hooks, tags and passes
import io  # noqa: E402
import operator  # noqa: E402

import bytecode  # noqa: E402

import overdub  # noqa: E402
from overdub import Context, Tagged, primitive  # noqa: E402


class Calls(Context):
    @primitive(math.sin)
    def sin(self, x: float) -> float:
        return math.cos(x)

    @primitive(operator.mul, Tagged)
    def mul(self, a: Any, b: Any) -> Any:
        return overdub.recurse(self, operator.mul, a, b)

    def prehook(self, f: Any, /, *args: Any, **kwargs: Any) -> None:
        pass


def halve_floats(ctx_type: type, code: bytecode.Bytecode) -> bytecode.Bytecode:
    return overdub.replace_match(lambda c: c / 2, lambda c: type(c) is float, code)


calls = Calls(metadata=[], pass_=halve_floats)
twin: Calls = calls.similar(metadata=None)
ran: Any = overdub.overdub(calls, f, 1.0)
inside: bool = overdub.canrecurse(calls, f, 1.0)
plain: Any = overdub.fallback(calls, math.sin, 1.0)
t = overdub.tag(1.0, calls, "meta")
untagged: Any = overdub.untag(t, calls)
meta: Any = overdub.metadata(t, calls)
flags: tuple[bool, bool] = (overdub.istagged(t, calls), overdub.hasmetadata(t, calls))


class Plain:
    pass


made: type[Context] = overdub.context(Plain)  # (mypy reads a class decorator's result as the class)

# capstan's tools and rule registration
log = capstan.PrintCtx(stream=io.StringIO(), modules=("math",), results=True)
counter = capstan.CountCtx((int, str))
n_calls: int = counter.count
tracer = capstan.TraceCtx(hide=(getattr,))
picture: str = tracer.to_dot(max_depth=3, max_children=4)
on_device = capstan.GPUCtx(xp=np)
literals = Calls(pass_=capstan.bit32pass)
depth: int = capstan.nestlevel()


def cube(x: float) -> float:
    return x ** 3


@capstan.adjoint(cube)
def cube_adjoint(x: float) -> tuple[float, Callable[[float], tuple[float]]]:
    return x ** 3, lambda g: (3 * x * x * g,)


capstan.defvjp(cube, lambda g, ans, x: (3 * x * x * g,))
capstan.defderiv(cube, lambda ans, x: 3 * x * x)
tape = capstan.record_tape(f, 1.0)
replayed: tuple[Any, ...] = tape.gradient(2.0)
