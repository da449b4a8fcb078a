"""How many differentiations are active around the current call (per thread), and
which one a value handed to an entry point belongs to."""
from typing import Any, Callable

import numpy as np

from overdub import Tagged, overdub
from overdub.tagging import context_of, tag_of

from .threadstate import thread_state


def nestlevel() -> int:
    """How many differentiations (``D``, ``jvp``, ``gradient``...) are active around
    this call: 0 outside any, 2 inside a Hessian's inner gradient, and so on."""
    level: int = thread_state().level
    return level


def moving(x: Any) -> bool:
    """Whether ``x`` is a value being differentiated.  For rules: a rule whose arithmetic is
    run routed into an enclosing differentiation (a Hessian, ``D`` of ``D``, a gradient's
    backward pass inside ``D``) gets that differentiation's values, which ``type()`` there
    does not tell from plain ones; this module is machinery, so ``x`` arrives untouched."""
    return type(x) is Tagged


class level:
    """``with level(ctx): ...`` counts one more active differentiation, run by ``ctx``."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx

    def __enter__(self) -> None:
        push(self.ctx)

    def __exit__(self, *exc: object) -> None:
        pop()


def push(ctx: Any) -> None:
    """One more active differentiation, run by ``ctx`` (``level``'s way in); ``ctx.outside``
    becomes the ones enclosing it, innermost first."""
    state = thread_state()
    contexts = state.contexts
    if ctx is not None:
        ctx.outside = tuple(c for c in reversed(contexts) if c is not None and c is not ctx) if contexts else ()
    contexts.append(ctx)
    state.level += 1


def pop() -> None:
    """The innermost active differentiation has ended (``level``'s way out)."""
    state = thread_state()
    state.level -= 1
    state.contexts.pop()


def inner(a: Any, b: Any) -> Any:
    """Of two enclosing differentiations (either may be ``None``), the one nested deeper:
    a value carrying derivatives of both goes to it first, and it hands the other's on."""
    if a is None or b is None or a is b:
        return b if a is None else a
    depth_a = depth_b = -1
    for i, ctx in enumerate(thread_state().contexts):
        if ctx is a:
            depth_a = i
        elif ctx is b:
            depth_b = i
    return b if depth_b > depth_a else a


def enclosing(*values: Any) -> Any:
    """The differentiation that ``values`` (numbers, arrays, and lists, tuples, dicts of
    them) belong to: the innermost active one that tagged one of them or shadows one of
    them (a plain array it wrote differentiated values into); ``None`` for plain values.

    The entry points (``jvp``, ``jacobian``...) are machinery, called directly from code
    an enclosing differentiation runs; their own arithmetic on their arguments must be
    handed to that differentiation (:func:`route`), or its derivative is lost."""
    tagged: list[Tagged] = []
    arrays: list[np.ndarray] = []
    _leaves(values, tagged, arrays, 0)
    if not tagged and not arrays:
        return None
    for ctx in reversed(thread_state().contexts):
        if ctx is None:
            continue
        key = ctx._tagkey
        if any(tag_of(t) is key for t in tagged):
            return ctx
        if arrays and ctx.shadows and any(ctx.shadow(a) is not None for a in arrays):
            return ctx
    return context_of(tagged[-1]) if tagged else None  # (a context capstan did not start)


def _leaves(x: Any, tagged: list[Tagged], arrays: list[np.ndarray], depth: int) -> None:
    tx = type(x)
    if tx is Tagged:
        tagged.append(x)
    elif tx is np.ndarray:
        arrays.append(x)
    elif depth < 8 and (tx is list or tx is tuple or isinstance(x, tuple)):
        for e in x:
            _leaves(e, tagged, arrays, depth + 1)
    elif depth < 8 and isinstance(x, dict):
        for e in x.values():
            _leaves(e, tagged, arrays, depth + 1)
    elif depth < 8 and hasattr(x, "__dataclass_fields__") and not isinstance(x, type):
        for name in x.__dataclass_fields__:
            _leaves(getattr(x, name, None), tagged, arrays, depth + 1)


def route(ctx: Any, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``, run inside the enclosing differentiation ``ctx`` if any
    (``f`` must live outside the opaque modules for its body to be routed)."""
    if ctx is None:
        return f(*args, **kwargs)
    return overdub(ctx, f, *args, **kwargs)
