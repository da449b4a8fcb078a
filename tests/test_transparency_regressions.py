"""Regressions found by running real programs under contexts that route everything.

Plain CPython is the oracle: each program gives the same result (or the same exception
type and message) under a counting prehook, a recursing wildcard primitive and a
posthook -- contexts that really route every call -- as when called plainly.
"""
import sys
import threading

import pytest

import overdub


class Count(overdub.Context):
    """Counts every routed event (operators included: the prehook is inlined)."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata = (self.metadata or 0) + 1


class Wild(overdub.Context):
    """A wildcard primitive that recurses where it can, else falls back."""

    @overdub.primitive()
    def every(self, f, /, *args, **kwargs):
        if overdub.canrecurse(self, f, *args, **kwargs):
            return overdub.recurse(self, f, *args, **kwargs)
        return overdub.fallback(self, f, *args, **kwargs)


class Post(overdub.Context):
    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata = (self.metadata or 0) + 1


CONTEXTS = [Count, Wild, Post]


def outcome(thunk):
    try:
        return ("ok", thunk())
    except Exception as exc:  # the oracle compares exception type and message
        return ("raised", type(exc), str(exc))


def check(make, *args):
    """``make()`` builds a fresh program (programs here mutate themselves); its result
    under every routing context equals its plain result."""
    expected = outcome(lambda: make()(*args))
    for ctx_type in CONTEXTS:
        ctx = ctx_type()
        assert outcome(lambda: overdub.overdub(ctx, make(), *args)) == expected, ctx_type
        assert ctx_type is Wild or ctx.metadata, "the context saw nothing"
    return expected


# ----------------------------------------------------------------------------- 1. function mutation
MUTATING = '''
def lazy(x, scale=1):
    """The lazy-compilation idiom: the first call installs the real body, calls again."""
    def real(x, scale=1):
        return x * 2 * scale
    lazy.__code__ = real.__code__
    return lazy(x, scale)

def fact(n):
    def real(n):
        return 1 if n < 2 else n * fact(n - 1)
    fact.__code__ = real.__code__
    return fact(n)

def defaults(a=1, *, b=2):
    if a == 1:
        defaults.__defaults__ = (10,)
        defaults.__kwdefaults__ = {"b": 20}
        return defaults()
    return a + b
'''


def fresh(name):
    """A fresh module-level function from MUTATING (each run mutates its own)."""
    def make():
        namespace = {}
        exec(MUTATING, namespace)
        return namespace[name]
    return make


make_lazy, make_lazy_recursive, make_defaults_change = map(fresh, ("lazy", "fact", "defaults"))


def test_replaced_code_runs_at_once():
    assert check(make_lazy, 3) == ("ok", 6)
    assert check(make_lazy_recursive, 5) == ("ok", 120)
    assert check(make_defaults_change) == ("ok", 30)


def test_replaced_code_inside_a_running_context_and_from_a_thread():
    def outer():
        return make_lazy()(4) + make_lazy_recursive()(4)

    assert check(lambda: outer) == ("ok", 32)
    results = []
    thread = threading.Thread(target=lambda: results.append(overdub.overdub(Count(), outer)))
    thread.start()
    thread.join()
    assert results == [32]


def test_code_replaced_between_calls_of_one_run():
    def f():
        return 1

    def g():
        return 2

    def program():
        first = f()
        f.__code__ = g.__code__
        return first, f()

    for ctx_type in CONTEXTS:
        f.__code__ = (lambda: 1).__code__
        assert overdub.overdub(ctx_type(), program) == (1, 2)
