"""Reusing differentiation contexts between runs.

Building a context's machinery (its generated dispatchers and routed copies of the
user's functions) costs tens of microseconds, more than a small function takes to
run.  Each run therefore borrows an idle context of its class -- a new one when
none is idle, as for a nested differentiation -- and renews its tag identity on
the way in and out, so no value of one run is ever taken for a value of another:
values that escape a run become plain constants.
"""
import weakref
from typing import Any

from overdub import Context, overdub
from overdub._native import NOT_RUN, capstan_native

from . import losses, nesting
from .threadstate import thread_state

_KEEP = 4  # idle contexts kept per class and thread


class borrowed:
    """``with borrowed(ForwardCtx) as ctx:`` -- an idle context with a fresh identity."""

    __slots__ = ("cls", "ctx")

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __enter__(self) -> Any:
        idle = _idle_of(self.cls)
        # (an idle context got its fresh identity when it was handed back; a new one has one)
        ctx = self.ctx = idle.pop() if idle else self.cls()
        return ctx

    def __exit__(self, *exc: object) -> None:
        ctx = self.ctx
        ctx.reset()  # (cleans up the run's tagged values while they are still its own)
        ctx.renew_tags()
        idle = _idle_of(self.cls)  # (this thread's: a context may be handed back in another)
        if len(idle) < _KEEP:
            idle.append(ctx)


def lent(cls: type) -> tuple[Any, Any]:
    """``(ctx, give_back)``: an idle context of ``cls`` for a run whose results keep using
    it after the call (a pullback's tape); ``give_back()`` returns it to the idle ones
    (call it once, when nothing uses it any more: ``weakref.finalize(owner, give_back)``)."""
    loan = borrowed(cls)
    return loan.__enter__(), loan.__exit__


def _entered(ctx: Any) -> Any:
    """``nesting.push(ctx)``, inline; ``ctx``."""
    state = thread_state()
    contexts = state.contexts
    if contexts:
        ctx.outside = tuple(c for c in reversed(contexts) if c is not None and c is not ctx)
    elif ctx.outside:
        ctx.outside = ()
    contexts.append(ctx)
    state.level += 1
    return ctx


class running:
    """``with running(ctx):`` -- ``ctx`` runs a differentiation: counted as an active one
    (``nesting.level``) and guarded (``losses.guard``), in one block, which costs less."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def __enter__(self) -> Any:
        ctx = self.ctx
        return _entered(ctx)

    def __exit__(self, tp: Any, exc: Any, tb: Any) -> None:
        try:
            if exc is not None:
                losses.failed(self.ctx, exc)
        finally:
            nesting.pop()


class differentiating(borrowed):
    """``with differentiating(ForwardCtx) as ctx:`` -- a borrowed context, ``running``
    (``borrowed``'s and ``running``'s ways in and out, in one block: this is the fixed
    cost of every ``D``/``jvp``)."""

    __slots__ = ()

    def __enter__(self) -> Any:
        idle = _idle_of(self.cls)
        # (an idle context got its fresh identity when it was handed back; a new one has one)
        ctx = self.ctx = idle.pop() if idle else self.cls()
        return _entered(ctx)

    def __exit__(self, *exc: Any) -> None:
        ctx = self.ctx
        try:
            if exc[1] is not None:
                losses.failed(ctx, exc[1])
        finally:
            nesting.pop()
            ctx.reset()  # (cleans up the run's tagged values while they are still its own)
            ctx.renew_tags()
            idle = _idle_of(self.cls)  # (this thread's: a context may be handed back in another)
            if len(idle) < _KEEP:
                idle.append(ctx)


def run_at(ctx: Any, f: Any, x: Any) -> Any:
    """``overdub(ctx, f, x)`` -- by the runtime's C shortcut where it applies -- then the
    run's recorded losses raised: the fixed steps of a run at one value."""
    rt = ctx._runtime  # (RuntimeBase.run: overdub's commonest run, in C)
    y = NOT_RUN if rt is None else rt.run(f, x)
    if y is NOT_RUN:
        y = overdub(ctx, f, x)
    if ctx.losses:
        losses.check_finished(ctx)
    return y


#: ``reset`` methods whose whole effect, after a run that stored, shadowed, refused and
#: decided nothing, the C pool reads off the context instead of calling them:
#: reset -> (attributes then absent or None, attributes then absent or empty, lists it
#: replaces by fresh empty ones); ``reset`` itself runs when one of them does not hold
QUIET_RESETS: dict[Any, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def quiet_reset(none: tuple[str, ...] = (), empty: tuple[str, ...] = (),
                fresh: tuple[str, ...] = ()) -> Any:
    """Declare what the decorated ``reset`` does after a quiet run (see QUIET_RESETS); the
    declaration covers the whole method, the base class's part included."""
    def register(reset: Any) -> Any:
        QUIET_RESETS[reset] = (tuple(none), tuple(empty), tuple(fresh))
        return reset
    return register


def _idle_of(cls: type) -> list[Any]:
    """The idle contexts of ``cls`` in this thread (made on its first run)."""
    pools = thread_state().pools
    try:
        idle: list[Any] = pools[cls]
    except KeyError:
        idle = pools[cls] = []
    return idle


if capstan_native is not None:  # (the same steps in C: the class above is the reference)
    capstan_native.setup_pool(losses.failed, _KEEP, QUIET_RESETS, Context.renew_tags)
    differentiating = capstan_native.Loan  # type: ignore[misc]  # noqa: F811
