"""Contexts written by users, nested: ``overdub(inner, f, ...)`` called from code an
outer context routes runs the inner context's hooks, primitives and plain calls inside
the outer one (as Cassette overdubs a nested ``overdub``).

The toy forward-mode context below uses only public overdub pieces, so nothing in
capstan's own nesting machinery helps it: before nested runs existed, ``D(x -> D(sin, x))``
gave 0 with it.
"""
import math
import operator

import pytest

import capstan
import overdub
from overdub import Context, Tagged, istagged, metadata, primitive, tag, untag


class Fwd(Context):
    """Forward mode with public pieces only: the metadata is the tangent."""

    @primitive(math.sin, Tagged)
    def sin(self, x):
        v, d = untag(x, self), metadata(x, self)
        return tag(math.sin(v), self, math.cos(v) * d)

    @primitive(math.cos, Tagged)
    def cos(self, x):
        v, d = untag(x, self), metadata(x, self)
        return tag(math.cos(v), self, -math.sin(v) * d)

    @primitive(math.exp, Tagged)
    def exp(self, x):
        v = math.exp(untag(x, self))
        return tag(v, self, v * metadata(x, self))

    @primitive(operator.mul, Tagged, Tagged)
    def mul_both(self, a, b):
        va, vb = untag(a, self), untag(b, self)
        return tag(va * vb, self, metadata(a, self) * vb + va * metadata(b, self))

    @primitive(operator.mul, Tagged)
    def mul_left(self, a, b):
        return tag(untag(a, self) * b, self, metadata(a, self) * b)

    @primitive(operator.mul, object, Tagged)
    def mul_right(self, a, b):
        return tag(a * untag(b, self), self, a * metadata(b, self))

    @primitive(operator.add, Tagged, Tagged)
    def add_both(self, a, b):
        return tag(untag(a, self) + untag(b, self), self, metadata(a, self) + metadata(b, self))

    @primitive(operator.add, Tagged)
    def add_left(self, a, b):
        return tag(untag(a, self) + b, self, metadata(a, self))

    @primitive(operator.add, object, Tagged)
    def add_right(self, a, b):
        return tag(a + untag(b, self), self, metadata(b, self))

    @primitive(operator.neg, Tagged)
    def neg(self, a):
        return tag(-untag(a, self), self, -metadata(a, self))

    @primitive(operator.sub, Tagged, Tagged)
    def sub_both(self, a, b):
        return tag(untag(a, self) - untag(b, self), self, metadata(a, self) - metadata(b, self))

    @primitive(operator.sub, Tagged)
    def sub_left(self, a, b):
        return tag(untag(a, self) - b, self, metadata(a, self))

    @primitive(operator.sub, object, Tagged)
    def sub_right(self, a, b):
        return tag(a - untag(b, self), self, -metadata(b, self))


def toy_D(f, x):
    ctx = Fwd()
    r = overdub.overdub(ctx, f, tag(x, ctx, 1.0))
    return metadata(r, ctx) if istagged(r, ctx) else 0.0


def _close(a, b):
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


# ----------------------------------------------------------------------------- derivatives
def test_derivative_of_a_derivative():
    assert _close(toy_D(math.sin, 1.0), math.cos(1.0))
    assert _close(toy_D(lambda x: toy_D(math.sin, x), 1.0), -math.sin(1.0))


def test_perturbations_are_not_confused():
    assert toy_D(lambda x: x * toy_D(lambda y: x * y, 3.0), 5.0) == 10.0


def test_mixed_partial_through_a_closure():
    # d/dx d/dy sin(x y) = cos(xy) - xy sin(xy)
    got = toy_D(lambda x: toy_D(lambda y: math.sin(x * y), 2.0), 3.0)
    assert _close(got, math.cos(6.0) - 6.0 * math.sin(6.0))


def test_three_levels():
    assert toy_D(lambda x: toy_D(lambda y: toy_D(lambda z: x * y * z, 2.0), 3.0), 5.0) == 1.0
    # third derivative of exp(2x) = 8 exp(2x)
    got = toy_D(lambda a: toy_D(lambda b: toy_D(lambda c: math.exp(c + c), b), a), 0.3)
    assert _close(got, 8.0 * math.exp(0.6))


PROGRAMS = [
    (lambda x, y: x * y * y, "x*y^2"),
    (lambda x, y: math.sin(x) * math.cos(y), "sin x cos y"),
    (lambda x, y: math.exp(x * y) + x, "exp(xy) + x"),
    (lambda x, y: math.sin(x * math.cos(y * x)), "sin(x cos(yx))"),
    (lambda x, y: (x - y) * (y - 2.0 * x) - x, "(x-y)(y-2x)-x"),
]


@pytest.mark.parametrize("g,label", PROGRAMS, ids=[p[1] for p in PROGRAMS])
def test_toy_nesting_agrees_with_capstan(g, label):
    """The mixed second derivative, by the toy context nested in itself and by capstan."""
    x0, y0 = 0.7, -1.3
    toy = toy_D(lambda x: toy_D(lambda y: g(x, y), y0), x0)
    ref = capstan.D(lambda x: capstan.D(lambda y: g(x, y), y0), x0)
    assert _close(toy, ref), (toy, ref)


def test_capstan_outside_a_user_context():
    """capstan's D, jvp and gradient around a user-written context's run."""
    assert _close(capstan.D(lambda x: toy_D(math.sin, x), 1.0), -math.sin(1.0))
    # d/dx [d/dy x y^2 at y=2] = d/dx 4x = 4, in reverse mode
    assert capstan.gradient(lambda x: toy_D(lambda y: x * y * y, 2.0), 3.0) == (4.0,)


def test_user_context_outside_capstan():
    assert _close(toy_D(lambda x: capstan.D(math.sin, x), 1.0), -math.sin(1.0))


# ----------------------------------------------------------------------------- what the outer sees
class Log(Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(getattr(f, "__name__", repr(f)))


class CosSquared(Context):
    @primitive(math.sin)
    def sin(self, x):
        return math.cos(x) ** 2


class Empty(Context):
    pass


def test_outer_context_sees_the_inner_primitive_compute():
    log = Log([])
    got = overdub.overdub(log, lambda: overdub.overdub(CosSquared(), lambda y: math.sin(y) + 1.0, 0.5))
    assert got == math.cos(0.5) ** 2 + 1.0
    names = log.metadata
    assert names.index("overdub") < names.index("sin") < names.index("cos") < names.index("pow")
    assert "add" in names[names.index("pow"):]  # the inner function's own arithmetic


def test_outer_context_sees_inside_an_inner_context_that_changes_nothing():
    log = Log([])
    got = overdub.overdub(log, lambda: overdub.overdub(Empty(), lambda y: math.sin(y) + 1.0, 0.5))
    assert got == math.sin(0.5) + 1.0
    assert log.metadata[-2:] == ["sin", "add"]


def test_inner_hooks_run_inside_the_outer_context():
    class Inner(Context):
        def prehook(self, f, /, *args, **kwargs):
            self.metadata.append(math.floor(1.5))

    log, inner = Log([]), Inner([])
    overdub.overdub(log, lambda: overdub.overdub(inner, abs, -2.0))
    assert inner.metadata == [1]
    assert "prehook" in log.metadata and "floor" in log.metadata


def test_a_nested_context_runs_plainly_again_at_top_level():
    log, inner = Log([]), CosSquared()
    overdub.overdub(log, lambda: overdub.overdub(inner, math.sin, 0.5))
    seen = len(log.metadata)
    assert overdub.overdub(inner, math.sin, 0.5) == math.cos(0.5) ** 2
    assert len(log.metadata) == seen
    assert inner._runtime is None or inner._runtime.outer is None


def test_nested_recurse_fallback_and_canrecurse():
    class Wild(Context):
        @primitive()
        def any_call(self, f, /, *args, **kwargs):
            if overdub.canrecurse(self, f, *args, **kwargs):
                return overdub.recurse(self, f, *args, **kwargs)
            return overdub.fallback(self, f, *args, **kwargs)

    def g(y):
        return math.sin(y) * y

    got = toy_D(lambda x: overdub.overdub(Wild(), g, x), 1.0)
    assert _close(got, math.cos(1.0) + math.sin(1.0))


def test_inner_fallback_override_is_routed():
    class Plain(Context):
        def fallback(self, f, /, *args, **kwargs):
            return f(*args, **kwargs)  # a plain call, inside the outer context

    got = toy_D(lambda x: overdub.overdub(Plain(), lambda y: math.sin(y), x), 1.0)
    assert _close(got, math.cos(1.0))


class NestedTrace(Context):
    """Cassette's nested trace: a wildcard that recurses with a ``similar`` context."""

    @primitive()
    def any_call(self, f, /, *args, **kwargs):
        sub = []
        self.metadata.append((getattr(f, "__name__", "?"), sub))
        if overdub.canrecurse(self, f, *args, **kwargs):
            return overdub.recurse(self.similar(metadata=sub), f, *args, **kwargs)
        return overdub.fallback(self, f, *args, **kwargs)


def _double(x):
    return x * 2


def _traced(x):
    return math.sin(x) + _double(x)


def test_a_nested_trace_is_the_same_inside_another_context():
    alone = NestedTrace([])
    overdub.overdub(alone, _traced, 1.0)
    inside, log = NestedTrace([]), Log([])
    assert overdub.overdub(log, lambda: overdub.overdub(inside, _traced, 1.0)) == _traced(1.0)
    assert inside.metadata == alone.metadata
    assert alone.metadata[0][0] == "_traced" and ("_double", [("mul", [])]) in alone.metadata[0][1]
    assert "similar" in log.metadata and "recurse" in log.metadata


def test_overdub_of_overdub():
    """Cassette's "overdubbing overdub itself": the outer context runs the inner run."""
    log, inner = Log([]), CosSquared()
    assert overdub.overdub(log, overdub.overdub, inner, lambda y: math.sin(y) * 2.0, 0.5) == \
        2.0 * math.cos(0.5) ** 2
    assert log.metadata[0] == "overdub" and "cos" in log.metadata


# ----------------------------------------------------------------------------- canrecurse
class WithAdd:
    def __add__(self, other):
        return 3


def test_canrecurse_says_whether_a_body_would_be_stepped_into():
    ctx = Log([])
    assert overdub.canrecurse(ctx, operator.add, 1, 2) is False
    assert overdub.canrecurse(ctx, operator.add, WithAdd(), 2) is True
    assert overdub.canrecurse(ctx, math.sin, 1.0) is False
    assert overdub.canrecurse(ctx, test_three_levels) is True


# ----------------------------------------------------------------------------- random programs
from hypothesis import given, settings, strategies as st  # noqa: E402

_LEAVES = st.sampled_from(["x", "y", 0.5, 2.0])
_TREES = st.recursive(
    _LEAVES,
    lambda sub: st.one_of(st.tuples(st.sampled_from(["sin", "cos", "neg"]), sub),
                          st.tuples(st.sampled_from(["add", "sub", "mul"]), sub, sub)),
    max_leaves=8)
_UNARY = {"sin": math.sin, "cos": math.cos, "neg": operator.neg}
_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}


def _evaluate(tree, x, y):
    if tree == "x":
        return x
    if tree == "y":
        return y
    if type(tree) is float:
        return tree
    if len(tree) == 2:
        return _UNARY[tree[0]](_evaluate(tree[1], x, y))
    return _BINARY[tree[0]](_evaluate(tree[1], x, y), _evaluate(tree[2], x, y))


@settings(max_examples=40, deadline=None)
@given(_TREES)
def test_random_programs_nested_toy_equals_capstan(tree):
    x0, y0 = 0.4, 1.1
    toy = toy_D(lambda x: toy_D(lambda y: _evaluate(tree, x, y), y0), x0)
    ref = capstan.D(lambda x: capstan.D(lambda y: _evaluate(tree, x, y), y0), x0)
    assert abs(toy - ref) <= 1e-9 * max(1.0, abs(ref)), (tree, toy, ref)
