"""Plain CPython is the oracle: every corpus case gives the same result, or raises the
same exception type with the same message, under contexts that override nothing and
under contexts that force every call through the dispatcher."""

import pytest

import overdub
from corpus_cases import CASES


class Empty(overdub.Context):
    pass


class Hooked(overdub.Context):
    """Overrides nothing observable, but forces the full routing machinery."""

    def prehook(self, f, /, *args, **kwargs):
        pass

    def posthook(self, output, f, /, *args, **kwargs):
        pass


class PreOnly(overdub.Context):
    """Only a prehook: operators call it inline (a template variant of its own)."""

    def prehook(self, f, /, *args, **kwargs):
        pass


class Wild(overdub.Context):
    """A wildcard primitive that recurses: every call passes through user code."""

    @overdub.primitive()
    def every(self, f, /, *args, **kwargs):
        return overdub.recurse(self, f, *args, **kwargs)


class Checked(overdub.Context):
    """Overrides canrecurse and fallback with their defaults."""

    def canrecurse(self, f, /, *args, **kwargs):
        return super().canrecurse(f, *args, **kwargs)

    def fallback(self, f, /, *args, **kwargs):
        return super().fallback(f, *args, **kwargs)


def normalise(value):
    """Compare floats (NaN included) by repr and everything else by equality."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [normalise(v) for v in value])
    return value


def outcome(run):
    try:
        return ("ok", normalise(run()))
    except BaseException as exc:  # noqa: B902 - the exception is what we compare
        return ("raised", type(exc), str(exc))


def test_corpus_is_large():
    assert len(CASES) >= 150


@pytest.mark.parametrize("ctx_type", [Empty, Hooked, PreOnly, Wild, Checked])
@pytest.mark.parametrize("name,f,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_same_as_plain_python(name, f, args, kwargs, ctx_type):
    expected = outcome(lambda: f(*args, **kwargs))
    got = outcome(lambda: overdub.overdub(ctx_type(), f, *args, **kwargs))
    assert got == expected
