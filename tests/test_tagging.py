"""Tagged values behave like their values and keep their metadata through storage."""
import dataclasses
import math
import operator
from collections import namedtuple

import pytest

import overdub
from overdub import Context, metadata, tag, untag


class Hooked(Context):
    def prehook(self, f, /, *args, **kwargs):
        pass


@dataclasses.dataclass
class Box:
    value: object
    other: float = 0.0


Pair = namedtuple("Pair", "a b")


class Obj:
    pass


def store_everywhere(x):
    lst = [0.0]
    lst.append(x)
    lst[0] = x
    d = {"k": x}
    d.setdefault("s", x)
    b = Box(x)
    o = Obj()
    o.attr = x
    tup = (1, x)
    pair = Pair(x, 2)
    nested = {"l": [x]}
    return [lst[-1], lst[0], d["k"], d["s"], b.value, o.attr, tup[1], pair.a, pair[0],
            nested["l"][0], [y for y in [x]][0], next(iter([x])), max([x, -1.0]),
            next(iter({x})), list({x: 1})[0], [v for v in (x,)][0]]


@pytest.mark.parametrize("ctx_type", [Hooked, Context])
def test_metadata_survives_containers_fields_and_attributes(ctx_type):
    ctx = ctx_type()
    t = tag(2.5, ctx, {"id": 7})
    out = overdub.overdub(ctx, store_everywhere, t)
    assert [metadata(v, ctx) for v in out] == [{"id": 7}] * len(out)
    assert [untag(v, ctx) for v in out] == [2.5] * len(out)


def looks_like_a_float(x):
    return (isinstance(x, float), type(x) is float, type(x).__name__, float(x), int(x),
            math.sin(x), x + 1, 1 + x, x * x, -x, abs(-x), x < 3, x == 2.5, hash(x) == hash(2.5),
            bool(x), f"{x:.1f}", str(x), round(x), x in {2.5}, {x: 1}[2.5], sorted([3.0, x])[0],
            math.isclose(x, 2.5), divmod(x, 1), x ** 2, complex(x))


@pytest.mark.parametrize("ctx_type", [Hooked, Context])
def test_tagged_value_behaves_like_its_value(ctx_type):
    ctx = ctx_type()
    got = overdub.overdub(ctx, looks_like_a_float, tag(2.5, ctx, "m"))
    assert [untag(v, ctx) for v in got] == list(looks_like_a_float(2.5))


def test_operations_without_primitive_drop_the_tag():
    ctx = Hooked()
    t = tag(3.0, ctx, "m")
    for result in overdub.overdub(ctx, lambda x: (x + 1, math.sqrt(x), float(x)), t):
        assert not overdub.istagged(result, ctx)


def test_primitive_keeps_and_propagates_metadata():
    class Dual(Context):
        """A toy forward-mode AD: metadata is the derivative."""

        @overdub.primitive(operator.mul, overdub.Tagged, overdub.Tagged)
        def mul(self, a, b):
            va, vb = untag(a, self), untag(b, self)
            return tag(va * vb, self, metadata(a, self) * vb + va * metadata(b, self))

        @overdub.primitive(operator.mul, overdub.Tagged)
        def mul_left(self, a, b):
            return tag(untag(a, self) * b, self, metadata(a, self) * b)

        @overdub.primitive(operator.mul, object, overdub.Tagged)
        def mul_right(self, a, b):
            return tag(a * untag(b, self), self, a * metadata(b, self))

    def cube(x):
        return 2 * x * x * x

    ctx = Dual()
    y = overdub.overdub(ctx, cube, tag(3.0, ctx, 1.0))
    assert untag(y, ctx) == 54.0 and metadata(y, ctx) == 54.0


def test_tags_of_different_contexts_never_mix():
    a, b = Hooked(), Hooked()
    ta = tag(1.0, a, "A")
    tb = tag(ta, b, "B")  # tagged twice: by a (inside), then by b
    assert overdub.istagged(ta, a) and not overdub.istagged(ta, b)
    assert metadata(tb, b) == "B" and metadata(tb, a) is None
    assert metadata(untag(tb, b), a) == "A"
    assert untag(ta, b) is ta


def test_retagging_replaces_metadata():
    ctx = Hooked()
    t = tag(tag(1.0, ctx, "old"), ctx, "new")
    assert metadata(t, ctx) == "new" and untag(t, ctx) == 1.0


def test_nested_contexts_see_their_own_tags():
    seen = {}

    class Spy(Context):
        @overdub.primitive(math.exp, overdub.Tagged)
        def exp(self, x):
            seen.setdefault(self.metadata, []).append(metadata(x, self))
            return math.exp(untag(x, self))

    outer, inner = Spy(metadata="outer"), Spy(metadata="inner")

    def f(x):
        return overdub.overdub(inner, lambda y: math.exp(y) + math.exp(x), tag(0.0, inner, "i"))

    assert overdub.overdub(outer, f, tag(0.0, outer, "o")) == 2.0
    assert seen == {"inner": ["i"], "outer": ["o"]}


def test_tagged_values_outside_a_context_dispatch_to_their_owner():
    class Neg(Context):
        @overdub.primitive(operator.add, overdub.Tagged)
        def add(self, a, b):
            return "added by owner"

    ctx = Neg()
    t = tag(1.0, ctx, None)
    assert t + 2 == "added by owner"  # plain code, no overdub around it
    assert isinstance(t, float) and t * 2 == 2.0 and float(t) == 1.0


def test_accessor_errors():
    with pytest.raises(TypeError, match="ctx must be an overdub.Context"):
        tag(1.0, object(), None)
    with pytest.raises(TypeError, match="ctx must be an overdub.Context"):
        metadata(1.0, None)
    assert metadata(1.0, Hooked()) is None
    assert not overdub.hasmetadata(tag(1.0, Hooked(), None), Hooked())
