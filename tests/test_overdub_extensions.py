"""The overdub pieces added for libraries built on it: opaque, retag, renew_tags,
is_structural, and primitives on some builtin types leaving the others native."""
import operator
import threading

import numpy as np
import pytest

import overdub
from overdub import Context, Tagged, overdub as run, primitive, tag


class Doubling(Context):
    """Doubles every tagged value it multiplies; counts its calls."""

    def __init__(self):
        super().__init__(metadata=[])

    @primitive(operator.mul, Tagged)
    def mul(self, a, b):
        self.metadata.append("mul")
        return tag(overdub.untag(a, self) * b * 2, self)


def helper_square(x):
    return x * x


def test_opaque_function_gets_tagged_values_untouched():
    seen = []

    def machinery(x):
        seen.append(type(x))
        return x * 3.0  # not routed: the tagged value's own operator runs (owner dispatch)

    ctx = Doubling()
    overdub.opaque(machinery)
    t = tag(2.0, ctx)
    out = run(ctx, lambda v: machinery(v), t)
    assert seen == [Tagged]
    assert overdub.untag(out, ctx) == 12.0  # still reached the context through Tagged.__mul__


def test_opaque_rejects_other_objects():
    with pytest.raises(TypeError, match="modules and Python functions"):
        overdub.opaque(3)


def test_retag_changes_every_reference():
    ctx = Doubling()
    t = tag(np.zeros(2), ctx, "old")
    alias = [t]
    assert overdub.retag(t, ctx, "new") is t
    assert overdub.metadata(alias[0], ctx) == "new"
    with pytest.raises(TypeError, match="not tagged by this context"):
        overdub.retag(np.zeros(2), ctx, "x")


def test_renew_tags_makes_old_values_plain():
    ctx = Doubling()
    old = tag(3.0, ctx, "meta")
    ctx.renew_tags()
    assert not overdub.istagged(old, ctx)
    assert overdub.metadata(old, ctx) is None
    # an old value meets the context again: it is a plain 3.0 (no primitive, no loop)
    assert run(ctx, lambda v: v * 2.0, old) == 6.0
    assert ctx.metadata == []
    fresh = tag(3.0, ctx)
    assert overdub.untag(run(ctx, lambda v: v * 2.0, fresh), ctx) == 12.0
    assert ctx.metadata == ["mul"]


def test_renew_tags_keeps_similar_contexts_identity():
    ctx = Doubling()
    twin = ctx.similar()
    t = tag(1.0, twin)
    ctx.renew_tags()
    assert overdub.istagged(t, twin)
    assert not overdub.istagged(t, ctx)


def test_is_structural():
    assert overdub.is_structural(list.append)
    assert overdub.is_structural([].append)
    assert overdub.is_structural(len)
    assert not overdub.is_structural(np.sin)
    assert not overdub.is_structural(abs)


def test_structural_builtins_keep_tags_in_default_fallback():
    ctx = Doubling()
    t = tag(2.0, ctx, "m")
    box = []
    overdub.fallback(ctx, box.append, t)
    assert overdub.metadata(box[0], ctx) == "m"


class ArrayOnly(Context):
    def __init__(self):
        super().__init__(metadata=[])

    @primitive(operator.mul, np.ndarray)
    def mul(self, a, b):
        self.metadata.append(type(b).__name__)
        return np.multiply(a, b)


def test_primitive_on_one_builtin_type_leaves_the_others_native():
    ctx = ArrayOnly()

    def f(a, x):
        return a * x, x * x, 2 * x

    arr, y, z = run(ctx, f, np.ones(2), 3.0)
    assert y == 9.0 and z == 6.0 and list(arr) == [3.0, 3.0]
    assert ctx.metadata == ["float"]  # only the array product reached the primitive


def test_custom_fallback_keeps_native_operators():
    calls = []

    class Watching(Context):
        def fallback(self, f, /, *args, **kwargs):
            calls.append(getattr(f, "__name__", f))
            return Context.fallback(self, f, *args, **kwargs)

    assert run(Watching(), lambda a, b: a * b + len("xy"), 3, 4) == 14
    assert calls == ["len"]  # operators on builtin operands never reach a fallback


def test_dead_tags_in_other_threads_and_runs():
    ctx = Doubling()
    leaked = []

    def first(v):
        leaked.append(v)
        return v

    run(ctx, first, tag(5.0, ctx))
    ctx.renew_tags()
    results = []
    th = threading.Thread(target=lambda: results.append(run(ctx, helper_square, leaked[0])))
    th.start()
    th.join()
    assert results == [25.0]


def test_primitive_on_second_operand_type_keeps_other_operators_native():
    class SecondIsArray(Context):
        def __init__(self):
            super().__init__(metadata=[])

        @primitive(operator.add, object, np.ndarray)
        def add(self, a, b):
            self.metadata.append(type(a).__name__)
            return np.add(a, b)

    ctx = SecondIsArray()
    out = run(ctx, lambda x, arr: (x + 1.0, (1,) + (2,), "a" + "b", 2.0 + arr), 3.0, np.ones(2))
    assert out[:3] == (4.0, (1, 2), "ab") and list(out[3]) == [3.0, 3.0]
    assert ctx.metadata == ["float"]
    guards = [v for k, v in ctx._runtime.ops.items() if type(k) is tuple and k[:2] == ("guard", "binop")]
    assert guards and all(float in g and tuple in g and np.ndarray not in g for g in guards)


def test_routed_twins_do_not_keep_defaults_alive():
    import gc
    import weakref

    class Big:
        pass

    def outer():
        big = Big()

        def f(x, data=big):
            return x * 2

        return f, weakref.ref(big)

    f, big_ref = outer()
    ctx = Doubling()
    assert overdub.untag(run(ctx, f, tag(3.0, ctx)), ctx) == 12.0
    del f
    gc.collect()
    assert big_ref() is None  # the context's cached routed copy went with the function
