"""The contexts the harnesses run tests under.

Each one really routes: a context type that overrides nothing is specialised away by
overdub (it runs plainly) and would prove nothing.  ``make(name)`` returns a fresh
instance, one per test call, so that no state is carried from one test to the next.
"""
import overdub


class Count(overdub.Context):
    """A prehook that counts every routed event (calls, operators, attribute accesses)."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


class Wild(overdub.Context):
    """A wildcard primitive that recurses where it can and falls back elsewhere."""

    @overdub.primitive()
    def any(self, f, /, *args, **kwargs):
        if overdub.canrecurse(self, f, *args, **kwargs):
            return overdub.recurse(self, f, *args, **kwargs)
        return overdub.fallback(self, f, *args, **kwargs)


class Post(overdub.Context):
    """A posthook that counts the calls that returned."""

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata[0] += 1


def _forward():
    import capstan  # imported on demand: the CPython harness needs only overdub
    return capstan.ForwardCtx()


FACTORIES = {
    "count": lambda: Count(metadata=[0]),
    "wild": lambda: Wild(),
    "post": lambda: Post(metadata=[0]),
    "forward": _forward,  # capstan's forward-mode context with no tangents to carry
}


def make(name):
    """A fresh context of the kind ``name`` (one of FACTORIES)."""
    return FACTORIES[name]()


def call_under(name, f, /, *args, **kwargs):
    """``f(*args, **kwargs)``, plainly for "plain", else routed through a fresh context."""
    if name == "plain":
        return f(*args, **kwargs)
    return overdub.overdub(make(name), f, *args, **kwargs)
