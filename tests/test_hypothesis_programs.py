"""Hypothesis writes random small programs; plain CPython and overdub must agree on
every one of them (same value, or same exception type and message)."""
import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overdub

NAMES = ["a", "b", "c"]

leaf = st.one_of(
    st.sampled_from(NAMES),
    st.integers(-5, 9).map(str),
    st.sampled_from(["0.5", "1.5", "-2.25", "3.0"]),
)
BINOPS = ["+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", ">", "&", "|", "^", "<<"]


def _binary(children):
    return st.tuples(children, st.sampled_from(BINOPS), children).map(
        lambda t: "(%s %s %s)" % t if t[1] not in "&|^<<" else "(int(%s) %s (int(%s) %% 8))" % t)


def _extended(children):
    return st.one_of(
        _binary(children),
        children.map(lambda e: "(-%s)" % e),
        children.map(lambda e: "(not %s)" % e),
        st.tuples(children, children, children).map(lambda t: "(%s if %s else %s)" % t),
        st.tuples(children, children).map(lambda t: "helper(%s, %s)" % t),
        st.tuples(children, children).map(lambda t: "Num(%s).plus(%s).v" % t),
        children.map(lambda e: "abs(%s)" % e),
        st.tuples(children, children).map(lambda t: "min(%s, %s)" % t),
        st.tuples(children, st.integers(0, 3)).map(lambda t: "pow(%s, %d)" % t),
        st.tuples(children, children).map(lambda t: "[%s, %s][1]" % t),
        st.tuples(children, children).map(lambda t: "{'k': %s}.get('k', %s)" % t),
        children.map(lambda e: "sum(x * %s for x in range(3))" % e),
        children.map(lambda e: "math.floor(%s)" % e),
        st.tuples(children, children, children).map(lambda t: "Num(%s).plus(%s if %s else 1).v" % t),
        st.tuples(children, children).map(lambda t: "kwf(%s, k=%s)" % t),
        st.tuples(children, children).map(lambda t: "kwf(*[%s], **{'k': %s})" % t),
        st.tuples(children, children, children).map(lambda t: "(%s < %s <= %s)" % t),
        st.tuples(children, children).map(lambda t: "(%s and %s)" % t),
        st.tuples(children, children).map(lambda t: "(%s or %s)" % t),
        st.tuples(children, children).map(lambda t: "[x + %s for x in range(3) if x != %s]" % t),
        st.tuples(children, children).map(lambda t: "(lambda q: q * %s)(%s)" % t),
        children.map(lambda e: "len(str(%s))" % e),
        st.tuples(children, children).map(lambda t: "(%s, %s)[1]" % t),
        children.map(lambda e: "Num(%s).twice()" % e),
    )


expressions = st.recursive(leaf, _extended, max_leaves=12)


@st.composite
def programs(draw):
    """A function body: assignments, an if, a bounded loop, an augmented assignment."""
    lines = ["def program(a, b, c):"]
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3)):
        lines.append("    %s = %s" % (name, draw(expressions)))
    lines.append("    acc = []")
    lines.append("    for i in range(%d):" % draw(st.integers(0, 3)))
    lines.append("        acc.append(%s)" % draw(expressions))
    lines.append("        a %s= i + 1" % draw(st.sampled_from(["+", "*", "-"])))
    lines.append("    if %s:" % draw(expressions))
    lines.append("        b = %s" % draw(expressions))
    lines.append("    try:")
    lines.append("        c = %s" % draw(expressions))
    lines.append("    except (ArithmeticError, TypeError) as err:")
    lines.append("        c = type(err).__name__")
    lines.append("    n = 0")
    lines.append("    while n < %d:" % draw(st.integers(0, 2)))
    lines.append("        n += 1")
    lines.append("        acc.append(%s)" % draw(expressions))
    lines.append("    return (a, b, c, acc, %s)" % draw(expressions))
    return "\n".join(lines)


class Num:
    def __init__(self, v):
        self.v = v

    def plus(self, other):
        return Num(self.v + other)

    def twice(self):
        return self.v * 2


def kwf(x, k=0):
    return x - k


def helper(x, y):
    return x * 2 - y if x < y else y - x


class Hooked(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


class PreOnly(overdub.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata = (self.metadata or 0) + 1


class Wild(overdub.Context):
    @overdub.primitive()
    def every(self, f, /, *args, **kwargs):
        return overdub.recurse(self, f, *args, **kwargs)


def outcome(run):
    try:
        value = run()
        return ("ok", repr(value))
    except (ArithmeticError, TypeError, ValueError) as exc:
        return ("raised", type(exc), str(exc))


#: (each run draws new programs; OVERDUB_HYPOTHESIS_EXAMPLES=2000 searches deeper)
@settings(max_examples=int(os.environ.get("OVERDUB_HYPOTHESIS_EXAMPLES", 100)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(source=programs(), args=st.tuples(st.integers(-3, 3), st.sampled_from([0.5, -1.0, 2]),
                                         st.integers(0, 4)))
def test_random_programs_agree_with_cpython(source, args):
    namespace = {"helper": helper, "Num": Num, "math": math, "kwf": kwf}
    exec(compile(source, "<hypothesis>", "exec"), namespace)
    program = namespace["program"]
    expected = outcome(lambda: program(*args))
    for ctx_type in (Hooked, PreOnly, Wild):
        assert outcome(lambda: overdub.overdub(ctx_type(), program, *args)) == expected, source
