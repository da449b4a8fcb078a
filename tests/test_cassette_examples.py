"""Cassette.jl's examples and behaviour tests, ported: exact hook order, counting,
sin -> cos, type-dispatched and wildcard primitives, nested traces with ``similar``,
passes, tagging through fields and containers, nested contexts, memoisation, hooks
that raise, redefinition after a first run ("world age"), keyword arguments -- and the
scripts in examples/ run as programs.

Where a behaviour must hold whatever the context looks like, it is checked under
contexts that force the routing machinery (an empty context may run plainly):
``Hooked`` (a prehook that does nothing) and ``Wild`` (a wildcard primitive that
recurses)."""
import collections
import dataclasses
import math
import operator
import os
import traceback
from math import sin as aliased_sin

import pytest

import overdub
from overdub import Context, Tagged, primitive

from example_runs import run_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Hooked(Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


class Wild(Context):
    @primitive()
    def every(self, f, /, *args, **kwargs):
        return overdub.recurse(self, f, *args, **kwargs)


FORCING = [Hooked, Wild]


class Record(Context):
    """metadata: a list of ("pre", f, args, kwargs) and ("post", output, f, args, kwargs)."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(("pre", f, args, kwargs))

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata.append(("post", output, f, args, kwargs))


# ----------------------------------------------------------------------------- hook order
def x1_plus_x2_times_x3(x1, x2, x3):
    return x1 + x2 * x3


def test_hook_order_on_x1_plus_x2_times_x3():
    ctx = Record(metadata=[])
    assert overdub.overdub(ctx, x1_plus_x2_times_x3, 1, 2, 3) == 7
    assert ctx.metadata == [
        ("pre", x1_plus_x2_times_x3, (1, 2, 3), {}),
        ("pre", operator.mul, (2, 3), {}),
        ("post", 6, operator.mul, (2, 3), {}),
        ("pre", operator.add, (1, 6), {}),
        ("post", 7, operator.add, (1, 6), {}),
        ("post", 7, x1_plus_x2_times_x3, (1, 2, 3), {}),
    ]


def test_hook_order_with_a_lambda_and_prehook_only():
    seen = []

    class Pre(Context):
        def prehook(self, f, /, *args, **kwargs):
            seen.append((f, args))

    fn = lambda a, b, c: a + b * c  # noqa: E731
    assert overdub.overdub(Pre(), fn, 1.5, 2.0, 4.0) == 9.5
    assert seen == [(fn, (1.5, 2.0, 4.0)), (operator.mul, (2.0, 4.0)), (operator.add, (1.5, 8.0))]


class V:
    """A user number type: ``+`` steps into its Python ``__add__``."""

    def __init__(self, x):
        self.x = x

    def __add__(self, other):
        return V(self.x + other.x)


def add_vs(a, b):
    return a + b


def _normalised(records):
    def norm(v):
        if isinstance(v, V):
            return ("V", v.x)
        if isinstance(v, tuple):
            return tuple(norm(e) for e in v)
        return v
    return [tuple(norm(e) for e in r) for r in records]


def test_hook_order_through_a_python_dunder_and_hidden_by_a_primitive():
    ctx = Record(metadata=[])
    out = overdub.overdub(ctx, add_vs, V(1), V(2))
    assert out.x == 3
    v1, v2, v3 = ("V", 1), ("V", 2), ("V", 3)
    assert _normalised(ctx.metadata) == [
        ("pre", add_vs, (v1, v2), {}),
        ("pre", operator.add, (v1, v2), {}),
        ("pre", V.__add__, (v1, v2), {}),
        ("pre", getattr, (v1, "x"), {}),
        ("post", 1, getattr, (v1, "x"), {}),
        ("pre", getattr, (v2, "x"), {}),
        ("post", 2, getattr, (v2, "x"), {}),
        ("pre", operator.add, (1, 2), {}),
        ("post", 3, operator.add, (1, 2), {}),
        ("pre", V, (3,), {}),
        ("pre", V.__init__, (v3, 3), {}),
        ("pre", setattr, (v3, "x", 3), {}),
        ("post", None, setattr, (v3, "x", 3), {}),
        ("post", None, V.__init__, (v3, 3), {}),
        ("post", v3, V, (3,), {}),
        ("post", v3, V.__add__, (v1, v2), {}),
        ("post", v3, operator.add, (v1, v2), {}),
        ("post", v3, add_vs, (v1, v2), {}),
    ]

    class HideAdd(Record):  # Cassette: the same, after a primitive hides `+`'s inner calls
        @primitive(operator.add)
        def add(self, a, b):
            return a + b

    ctx = HideAdd(metadata=[])
    assert overdub.overdub(ctx, add_vs, V(1), V(2)).x == 3
    assert _normalised(ctx.metadata) == [
        ("pre", add_vs, (v1, v2), {}),
        ("pre", operator.add, (v1, v2), {}),
        ("post", v3, operator.add, (v1, v2), {}),
        ("post", v3, add_vs, (v1, v2), {}),
    ]


# ----------------------------------------------------------------------------- counting
class CountByType(Context):
    """metadata = (types, Counter of function names)."""

    def prehook(self, f, /, *args, **kwargs):
        types, counts = self.metadata
        if any(isinstance(a, types) for a in args):
            counts[getattr(f, "__name__", repr(f))] += 1


def test_counting_calls_by_argument_type():
    ctx = CountByType(metadata=((int, str), collections.Counter()))
    out = overdub.overdub(ctx, lambda: list(map(str, range(1, 11))))
    assert out == [str(i) for i in range(1, 11)]
    # range(1, 11) once; str(i) ten times, called back by map inside the context
    assert dict(ctx.metadata[1]) == {"range": 1, "str": 10}

    only_str = CountByType(metadata=(str, collections.Counter()))
    overdub.overdub(only_str, lambda: list(map(str, range(1, 11))))
    assert dict(only_str.metadata[1]) == {}

    def shout(words):
        return [w.upper() + "!" for w in words]

    ctx = CountByType(metadata=(str, collections.Counter()))
    assert overdub.overdub(ctx, shout, ["a", "b"]) == ["A!", "B!"]
    counts = dict(ctx.metadata[1])
    assert counts["upper"] == 2 and counts["add"] == 2


# ----------------------------------------------------------------------------- sin -> cos
class SinToCos(Context):
    @primitive(math.sin)
    def sin(self, x):
        return math.cos(x)


def _sin_helper(t):
    return 2 * aliased_sin(t)


def wave(t):
    return math.sin(t) + _sin_helper(t) + sum(map(math.sin, [t, t]))


def test_sin_to_cos_primitive():
    assert wave(0.0) == 0.0
    assert overdub.overdub(SinToCos(), wave, 0.0) == 5.0  # 1 + 2*1 + (1 + 1)
    assert overdub.overdub(SinToCos(), math.sin, 0.0) == 1.0  # the top-level call too
    assert wave(0.0) == 0.0  # nothing leaked out of the context
    assert math.sin(0.0) == 0.0


def test_primitive_with_argtypes_only_replaces_matching_calls():
    class SinOfFloats(Context):
        @primitive(math.sin, float)
        def sin(self, x):
            return math.cos(x)

    assert overdub.overdub(SinOfFloats(), lambda: (math.sin(0.0), math.sin(0))) == (1.0, 0.0)


# ----------------------------------------------------------------------------- type dispatch
def describe(*args):
    return "body"


class Dispatch(Context):
    # registered least specific first on purpose: dispatch is by specificity, not order
    @primitive(describe, object)
    def d_object(self, *args):
        return "object"

    @primitive(describe, int)
    def d_int(self, *args):
        return "int"

    @primitive(describe, int, str)
    def d_int_str(self, *args):
        return "int,str"

    @primitive(describe, bool)
    def d_bool(self, *args):
        return "bool"

    @primitive(describe, Tagged)
    def d_tagged(self, *args):
        return "tagged"


def test_type_dispatched_primitives_most_specific_first():
    ctx = Dispatch()
    t = overdub.tag(1.5, ctx, "meta")
    out = overdub.overdub(ctx, lambda: [describe(True), describe(3), describe(3.0), describe(3, "a"),
                                        describe(3, 4), describe(), describe(t), describe("s", 3)])
    assert out == ["bool", "int", "object", "int,str", "int", "body", "tagged", "object"]
    # the top-level call dispatches the same way
    assert overdub.overdub(ctx, describe, False) == "bool"
    assert overdub.overdub(ctx, describe, 7, "x") == "int,str"


def test_plain_argtypes_match_values_tagged_by_other_contexts():
    """``@primitive(f, *argtypes)`` uses isinstance checks, and a tagged value is an
    instance of its value's type; only ``Tagged`` is restricted to this context's own
    tags.  So a value tagged by *another* context is matched by ``object``."""
    ctx, other = Dispatch(), Dispatch()
    foreign = overdub.tag(1.5, other, "theirs")
    assert isinstance(foreign, object) and isinstance(foreign, float)
    assert overdub.overdub(ctx, lambda: describe(foreign)) == "object"


# ----------------------------------------------------------------------------- nested trace
class TraceByWildcard(Context):
    """Cassette's nested trace: metadata is the list of (f, args, kwargs, children, result)."""

    @primitive()
    def every(self, f, /, *args, **kwargs):
        sub = self.similar(metadata=[])
        if overdub.canrecurse(sub, f, *args, **kwargs):
            result = overdub.recurse(sub, f, *args, **kwargs)
        else:
            result = overdub.fallback(sub, f, *args, **kwargs)
        self.metadata.append((f, args, kwargs, sub.metadata, result))
        return result


class TraceByHooks(Context):
    """The same tree built with pre/posthooks and a stack: metadata = [[root calls], ...]."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append([])

    def posthook(self, output, f, /, *args, **kwargs):
        children = self.metadata.pop()
        self.metadata[-1].append((f, args, kwargs, children, output))


def square(x):
    return x * x


def scaled(x, *, k=1):
    return k * x


def traced_workload(a, b):
    s = square(a) + scaled(b, k=2)
    return max(s, 0)


def test_nested_trace_with_wildcard_similar_and_canrecurse():
    expected = [(traced_workload, (3, 4), {}, [
        (square, (3,), {}, [(operator.mul, (3, 3), {}, [], 9)], 9),
        (scaled, (4,), {"k": 2}, [(operator.mul, (2, 4), {}, [], 8)], 8),
        (operator.add, (9, 8), {}, [], 17),
        (max, (17, 0), {}, [], 17),
    ], 17)]
    wild = TraceByWildcard(metadata=[])
    assert overdub.overdub(wild, traced_workload, 3, 4) == 17
    assert wild.metadata == expected
    hooks = TraceByHooks(metadata=[[]])
    assert overdub.overdub(hooks, traced_workload, 3, 4) == 17
    assert hooks.metadata == [expected]


def test_similar_contexts_share_the_tag_identity():
    ctx = TraceByWildcard(metadata=[])
    sub = ctx.similar(metadata=["other"])
    assert type(sub) is TraceByWildcard and sub.metadata == ["other"] and ctx.metadata == []
    t = overdub.tag(2.0, ctx, "m")
    assert overdub.istagged(t, sub) and overdub.metadata(t, sub) == "m"
    assert not overdub.istagged(t, TraceByWildcard(metadata=[]))


def test_canrecurse():
    ctx = Hooked()
    assert overdub.canrecurse(ctx, square, 3)
    assert overdub.canrecurse(ctx, scaled, 3, k=2)
    assert not overdub.canrecurse(ctx, math.sin, 1.0)
    assert not overdub.canrecurse(ctx, len, [])


# ----------------------------------------------------------------------------- passes
def _price(n):
    return n * 10.0 + _tax(n)


def _tax(n):
    return 4.0


def test_float_literal_pass():
    seen = []

    def halve(ctx_type, code):
        seen.append((ctx_type, code.name))
        return overdub.replace_match(lambda c: c / 2, lambda c: type(c) is float, code)

    class Halved(Context):
        pass

    assert _price(3) == 34.0
    assert overdub.overdub(Halved(pass_=halve), _price, 3) == 17.0  # 3*5.0 + 2.0: callees too
    assert sorted(seen) == [(Halved, "_price"), (Halved, "_tax")]
    assert overdub.overdub(Halved(pass_=halve), _price, 3) == 17.0
    assert len(seen) == 2  # the pass's result is cached
    assert _price(3) == 34.0  # plain code is unchanged


def test_pass_replacing_names():
    def use_max(ctx_type, code):
        return overdub.replace_match(lambda name: "max", lambda arg: arg == "min", code)

    def smallest(a, b):
        return min(a, b)

    assert smallest(1, 2) == 1
    assert overdub.overdub(Hooked(pass_=use_max), smallest, 1, 2) == 2


# ----------------------------------------------------------------------------- tagging
@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Box:
    pass


def tag_flow(t):
    p = Point(t)
    b = Box()
    b.v = t
    setattr(b, "w", t)
    lst = [t]
    lst.append(t)
    d = {"k": t}
    tup = (1, t)
    _, second = tup
    nested = {"a": [{"b": (t,)}]}
    return [p.x, b.v, getattr(b, "w"), lst[0], lst[-1], lst[0:1][0], [0, *lst][1], d["k"], d.get("k"),
            dict(k=t)["k"], tup[1], second, nested["a"][0]["b"][0], next(iter(lst)), [x for x in lst][0],
            list(d.values())[0]]


@pytest.mark.parametrize("ctx_type", FORCING + [Context])
def test_tagged_value_flows_through_fields_and_containers(ctx_type):
    ctx = ctx_type()
    t = overdub.tag(2.5, ctx, {"unit": "m"})
    out = overdub.overdub(ctx, tag_flow, t)
    assert len(out) == 16
    for i, v in enumerate(out):
        assert overdub.istagged(v, ctx), i
        assert overdub.hasmetadata(v, ctx), i
        assert overdub.metadata(v, ctx) == {"unit": "m"}, i
        assert overdub.untag(v, ctx) == 2.5, i


@pytest.mark.parametrize("ctx_type", FORCING)
def test_tagged_value_behaves_like_its_value_inside_the_context(ctx_type):
    ctx = ctx_type()
    t = overdub.tag(2.5, ctx, "m")
    out = overdub.overdub(ctx, lambda x: (type(x) is float, isinstance(x, float), float(x), math.floor(x),
                                          x > 2, x * 2, str(x), "%.2f" % x, [1.0, 2.5].index(x)), t)
    assert out == (True, True, 2.5, 2, True, 5.0, "2.5", "2.50", 1)
    assert overdub.untag(2.5, ctx) == 2.5 and overdub.metadata(2.5, ctx) is None
    assert not overdub.istagged(2.5, ctx) and not overdub.hasmetadata(2.5, ctx)


# ----------------------------------------------------------------------------- nested contexts
class Mark(Context):
    @primitive(operator.add, Tagged)
    def add(self, a, b):
        return overdub.tag(overdub.untag(a, self) + b, self, overdub.metadata(a, self) + "+")


def test_tags_of_distinct_contexts_never_mix():
    c1, c2 = Mark(), Mark()
    t1 = overdub.tag(1, c1, "one")
    assert overdub.istagged(t1, c1) and not overdub.istagged(t1, c2)
    assert overdub.metadata(t1, c2) is None and overdub.untag(t1, c2) is t1
    r = overdub.overdub(c2, lambda a: a + 1, t1)  # c2's primitive must not take c1's tag
    assert not overdub.istagged(r, c2)
    assert overdub.untag(r, c1) == 2

    both = overdub.tag(overdub.tag(1.0, c1, "inner"), c2, "outer")
    assert overdub.metadata(both, c2) == "outer"
    assert overdub.metadata(overdub.untag(both, c2), c1) == "inner"

    def inner_run(x):  # a context started inside another, tagging the same value
        y = overdub.tag(x, c2, "two")
        z = overdub.overdub(c2, lambda v: v + 1, y)
        return z

    z = overdub.overdub(c1, inner_run, t1)
    assert overdub.metadata(z, c2) == "two+"


class Dual(Context):
    """Cassette's toy forward-mode AD (DiffCtx): the tag carries the tangent."""

    @primitive(operator.mul, Tagged, Tagged)
    def mul_tt(self, a, b):
        va, vb = overdub.untag(a, self), overdub.untag(b, self)
        da, db = overdub.metadata(a, self), overdub.metadata(b, self)
        return overdub.tag(va * vb, self, da * vb + va * db)

    @primitive(operator.mul, Tagged)
    def mul_t(self, a, b):
        return overdub.tag(overdub.untag(a, self) * b, self, overdub.metadata(a, self) * b)

    @primitive(operator.mul, object, Tagged)
    def mul_ot(self, a, b):
        return overdub.tag(a * overdub.untag(b, self), self, a * overdub.metadata(b, self))


def D(f, x):
    ctx = Dual()
    result = overdub.overdub(ctx, f, overdub.tag(x, ctx, 1.0))
    return overdub.metadata(result, ctx) if overdub.istagged(result, ctx) else 0.0


def test_toy_forward_mode():
    assert D(lambda x: x * x, 3.0) == 6.0
    assert D(lambda x: 2.0 * x * x, 3.0) == 12.0


def test_nested_toy_forward_mode_has_no_perturbation_confusion():
    # Cassette: D(x -> x * D(y -> x * y, 1), 2) === 4 and D(x -> D(y -> x * y, 1), 2) === 1
    assert D(lambda x: D(lambda y: x * y, 1.0), 2.0) == 1.0
    assert D(lambda x: x * D(lambda y: x * y, 1.0), 2.0) == 4.0
    assert D(lambda x: x * D(lambda y: x * y, 3.0), 5.0) == 10.0


# ----------------------------------------------------------------------------- memoisation
FIB_RUNS = []


def fib(n):
    FIB_RUNS.append(n)
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Memo(Context):
    @primitive(fib)
    def memo(self, n):
        if n not in self.metadata:
            self.metadata[n] = overdub.recurse(self, fib, n)
        return self.metadata[n]


def test_memoised_fib():
    FIB_RUNS.clear()
    assert fib(20) == 6765 and len(FIB_RUNS) == 21891
    FIB_RUNS.clear()
    ctx = Memo(metadata={})
    assert overdub.overdub(ctx, fib, 20) == 6765
    assert sorted(FIB_RUNS) == list(range(21))  # each body ran once
    assert ctx.metadata == {n: fib(n) for n in range(21)}
    assert overdub.overdub(Memo(metadata={}), fib, 90) == 2880067194370816120
    FIB_RUNS.clear()
    # recurse steps into the body even though a primitive matches fib
    assert overdub.recurse(Memo(metadata={}), fib, 5) == 5
    assert sorted(FIB_RUNS) == [0, 1, 2, 3, 4, 5]


# ----------------------------------------------------------------------------- hooks that raise
class NaNCheck(Context):
    def posthook(self, output, f, /, *args, **kwargs):
        if isinstance(output, float) and math.isnan(output):
            exc = FloatingPointError("NaN from %s%r" % (getattr(f, "__name__", f), args))
            self.metadata.append(exc)
            raise exc


def nan_user(x):
    return nan_inner(x) * 2


def nan_inner(x):
    return x - x


def test_posthook_raising_on_nan_propagates_unchanged():
    ctx = NaNCheck(metadata=[])
    assert overdub.overdub(ctx, nan_user, 1.0) == 0.0
    with pytest.raises(FloatingPointError) as info:
        overdub.overdub(ctx, nan_user, float("inf"))
    assert str(info.value) == "NaN from sub(inf, inf)"
    assert info.value is ctx.metadata[0] and len(ctx.metadata) == 1
    names = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert names.index("nan_user") < names.index("nan_inner") < names.index("posthook")


def test_prehook_exception_propagates_and_stops_the_call():
    ran = []

    class Veto(Context):
        def prehook(self, f, /, *args, **kwargs):
            if f is print:
                raise PermissionError("no printing")

    def user():
        ran.append(1)
        print("should not appear")
        ran.append(2)

    with pytest.raises(PermissionError, match="^no printing$"):
        overdub.overdub(Veto(), user)
    assert ran == [1]


# ----------------------------------------------------------------------------- redefinition
def _add_one(x):
    return x + 1


def test_prehook_added_to_the_class_after_a_first_run_takes_effect():
    class Late(Context):
        pass

    ctx = Late(metadata=[])
    assert overdub.overdub(ctx, _add_one, 1) == 2 and ctx.metadata == []

    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append((f, args))

    Late.prehook = prehook
    assert overdub.overdub(ctx, _add_one, 1) == 2  # the same, older instance
    assert ctx.metadata == [(_add_one, (1,)), (operator.add, (1, 1))]

    def prehook2(self, f, /, *args, **kwargs):
        self.metadata.append("v2")

    Late.prehook = prehook2  # redefined
    ctx.metadata.clear()
    overdub.overdub(ctx, _add_one, 1)
    assert ctx.metadata == ["v2", "v2"]

    Late.posthook = lambda self, out, f, /, *a, **k: self.metadata.append(("post", out))
    ctx.metadata.clear()
    overdub.overdub(ctx, _add_one, 1)
    assert ctx.metadata == ["v2", "v2", ("post", 2), ("post", 2)]

    del Late.prehook, Late.posthook  # back to nothing
    ctx.metadata.clear()
    assert overdub.overdub(ctx, _add_one, 1) == 2 and ctx.metadata == []


def _helper(x):
    return x + 1


def _uses_helper(x):
    return _helper(x) * 2


@pytest.mark.parametrize("ctx_type", FORCING + [Context])
def test_rebound_global_and_replaced_code_take_effect(ctx_type):
    global _helper
    original = _helper
    ctx = ctx_type()
    try:
        assert overdub.overdub(ctx, _uses_helper, 1) == 4

        def _helper(x):  # rebinding the module global is the point
            return x + 10

        assert overdub.overdub(ctx, _uses_helper, 1) == 22

        def minus(x):
            return x - 100

        _helper.__code__ = minus.__code__
        assert overdub.overdub(ctx, _uses_helper, 1) == -198
        _uses_helper.__code__ = (lambda x: _helper(x) * 3).__code__
        assert overdub.overdub(ctx, _uses_helper, 1) == -297
    finally:
        _helper = original
        _uses_helper.__code__ = _uses_helper_code
    assert overdub.overdub(ctx, _uses_helper, 1) == 4


_uses_helper_code = _uses_helper.__code__


# ----------------------------------------------------------------------------- keyword arguments
def _scale(x, *, factor=1):
    return x * factor


def _kw(f=0, output=0):
    return f + output


def _kw_user(x):
    return _scale(x, factor=3) + _kw(f=1, output=2)


def test_kwargs_reach_hooks_as_a_dict():
    ctx = Record(metadata=[])
    assert overdub.overdub(ctx, _kw_user, 2) == 9
    pre = [(f, args, kwargs) for phase, f, args, kwargs in
           [r for r in ctx.metadata if r[0] == "pre"]]
    assert pre == [(_kw_user, (2,), {}), (_scale, (2,), {"factor": 3}), (operator.mul, (2, 3), {}),
                   (_kw, (), {"f": 1, "output": 2}), (operator.add, (1, 2), {}), (operator.add, (6, 3), {})]
    post = [r for r in ctx.metadata if r[0] == "post"]
    assert ("post", 3, _kw, (), {"f": 1, "output": 2}) in post
    ctx = Record(metadata=[])
    assert overdub.overdub(ctx, _kw, f=7, output=1) == 8  # keywords named like the hooks' own
    assert ctx.metadata[0] == ("pre", _kw, (), {"f": 7, "output": 1})
    assert ctx.metadata[-1] == ("post", 8, _kw, (), {"f": 7, "output": 1})


def test_kwargs_reach_primitives_and_recurse_as_a_dict():
    class ScalePrim(Context):
        @primitive(_scale)
        def scale(self, x, **kwargs):
            self.metadata.append(kwargs)
            return overdub.recurse(self, _scale, x, **kwargs)

    ctx = ScalePrim(metadata=[])
    assert overdub.overdub(ctx, _kw_user, 2) == 9
    assert overdub.overdub(ctx, _scale, 2, factor=5) == 10
    assert ctx.metadata == [{"factor": 3}, {"factor": 5}]

    class WildKw(Context):
        @primitive()
        def every(self, f, /, *args, **kwargs):
            self.metadata.append((f, args, kwargs))
            return overdub.recurse(self, f, *args, **kwargs)

    ctx = WildKw(metadata=[])
    assert overdub.overdub(ctx, _kw, f=7, output=1) == 8
    assert ctx.metadata == [(_kw, (), {"f": 7, "output": 1}), (operator.add, (7, 1), {})]


# ----------------------------------------------------------------------------- example scripts
def test_example_demo():
    out = run_example("demo.py")
    assert "counts: {'range': 1, 'str': 10}" in out
    assert "plain: 0.0  overdubbed: 3.0" in out


def test_example_logging_ctx():
    out = run_example("logging_ctx.py").splitlines()
    assert out[:5] == ["hypot(3.0, 4.0, scale=2.0)", "  getattr(<module math>, 'sqrt')",
                       "  -> <built-in function sqrt>", "  square(3.0)", "    mul(3.0, 3.0)"]
    assert out[-3:] == ["  -> 10.0", "-> 10.0", "result: 10.0"]


def test_example_counting_ctx():
    out = run_example("counting_ctx.py")
    assert "calls with an int or str argument: {'range': 1, 'str': 10}" in out
    assert "total: 11" in out and "json.dumps made" in out


def test_example_sin_to_cos():
    out = run_example("sin_to_cos.py").splitlines()
    assert out == ["plain:      wave(0.0) = 0.0", "overdubbed: wave(0.0) = 5.0", "after:      wave(0.0) = 0.0"]


def test_example_nested_trace():
    out = run_example("nested_trace.py").splitlines()
    assert out == ["hypot2(3, 4) = 25", "  square(3,) = 9", "    mul(3, 3) = 9",
                   "  square(4,) = 16", "    mul(4, 4) = 16", "  add(9, 16) = 25"]


def test_example_memo_fib():
    out = run_example("memo_fib.py")
    assert "fib(24) memoised through a context: 46368" in out
    assert "fib(90) memoised: 2880067194370816120" in out


def test_example_float_pass():
    out = run_example("float_pass.py").splitlines()
    assert out[0] == "plain:     total(10) = 0.9999999999999999, 0.1 + 0.2 == 0.3: False"
    assert out[1] == "with pass: total(10) = Fraction(1, 1), 0.1 + 0.2 == 0.3: True"
    assert out[2] == "bodies the pass rewrote (once each, then cached): ['check', 'tenth', 'total']"
    assert out[3] == "after another run: ['check', 'tenth', 'total']"


def test_example_tagging():
    out = run_example("tagging.py").splitlines()
    assert out == ["width   = 3.0, tagged: True, metadata: 'm'",
                   "area    = 7.5, tagged: True, metadata: 'm*m'",
                   "doubled = 15.0, tagged: True, metadata: 'm*m'",
                   "inside the context the width looked like: [True, 'float', '3.0']",
                   "another context sees no tag: False None"]
