"""What a runtime keeps across runs for the Python functions it steps into.

A function's routed twin is kept from one run to the next (``Runtime.known_twin``; the call
dispatchers, ``recurse`` and the entry of a run take it without resolving the function
again), valid only while the function holds the code, defaults and names it was made for.
These tests change a callee between two runs -- as plain code may between two calls -- and
check the next run computes what plain Python computes now, in contexts of every kind
(a hook that sees every call, a primitive, a wildcard that recurses, reverse-mode
differentiation); and that nothing kept keeps alive what the program dropped.
"""
import gc
import importlib.util
import math
import weakref

import pytest

import capstan
import overdub
from overdub import Context, primitive, recurse
from overdub import lookaside, runtime


class Seen(Context):
    """Sees every call (its dispatchers resolve each callee)."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata.append(getattr(f, "__name__", None))


class Sine(Context):
    """A primitive on something else: functions run as their routed twins."""

    @primitive(math.cos)
    def cos(self, x):
        return math.cos(x)


class Wild(Context):
    """A wildcard that recurses into every call (``recurse``'s table of targets)."""

    @primitive()
    def every(self, f, /, *args, **kwargs):
        return recurse(self, f, *args, **kwargs)


KINDS = ["hook", "primitive", "wildcard", "gradient"]


def runner(kind):
    """``run(f, x)``: ``f(x)`` inside one context kept across runs (the gradient for
    ``gradient``, whose contexts capstan keeps in its pool)."""
    if kind == "gradient":
        return lambda f, x: capstan.gradient(f, x)[0]
    ctx = {"hook": lambda: Seen([]), "primitive": Sine, "wildcard": Wild}[kind]()
    return lambda f, x: overdub.overdub(ctx, f, x)


def plain(kind, f, x):
    """What plain Python computes now: ``f(x)``, or its central difference."""
    if kind == "gradient":
        h = 1e-5
        return (f(x + h) - f(x - h)) / (2 * h)
    return f(x)


SOURCE = '''
import math


def helper(x, k=2.0):
    return x * k


def other(x, k=3.0):
    return x * k * 5.0


def keyword(x, *, k=2.0):
    return x * k


class Scaler:
    def scale(self, x, k=2.0):
        return x * k + math.sin(x)

    def other_scale(self, x, k=2.0):
        return x * k * 7.0


def make(k):
    def inner(x):
        return x * k

    def set_k(new):
        nonlocal k
        k = new

    return inner, set_k


inner, set_k = make(2.0)


def outer(x):
    return helper(x) + keyword(x) + Scaler().scale(x) + inner(x)


def outer_bound(x):
    m = Scaler().scale  # (a bound method called as a value)
    return m(x) + helper(x)
'''


def namespace():
    """A fresh module-like namespace holding SOURCE's functions (its globals)."""
    ns = {"__name__": "cross_run_source"}
    exec(compile(SOURCE, "<cross-run source>", "exec"), ns)
    return ns


def _same_code(ns, name, defaults):
    """A new function of ``name``'s code (its old self kept alive: its twin stays in the table)."""
    old = ns[name]
    ns["old_" + name] = old
    ns[name] = type(old)(old.__code__, ns, name, defaults, old.__closure__)


#: change -> (what it does to the namespace, the entry functions whose result it changes)
MUTATIONS = {
    "code swapped": (lambda ns: setattr(ns["helper"], "__code__", ns["other"].__code__),
                     {"outer", "outer_bound"}),
    "defaults replaced": (lambda ns: setattr(ns["helper"], "__defaults__", (7.0,)), {"outer", "outer_bound"}),
    "keyword defaults replaced": (lambda ns: setattr(ns["keyword"], "__kwdefaults__", {"k": 9.0}), {"outer"}),
    "keyword defaults changed in place": (lambda ns: ns["keyword"].__kwdefaults__.update(k=9.0), {"outer"}),
    "global rebound": (lambda ns: ns.update(helper=ns["other"]), {"outer", "outer_bound"}),
    "global rebound to a function of the same code": (lambda ns: _same_code(ns, "helper", (7.0,)),
                                                      {"outer", "outer_bound"}),
    "global rebound to a closure of the same code": (lambda ns: ns.update(inner=ns["make"](11.0)[0],
                                                                          old_inner=ns["inner"]), {"outer"}),
    "closure cell changed": (lambda ns: ns["set_k"](13.0), {"outer"}),
    "class method replaced": (lambda ns: setattr(ns["Scaler"], "scale", ns["Scaler"].other_scale),
                              {"outer", "outer_bound"}),
    "method code swapped": (lambda ns: setattr(ns["Scaler"].scale, "__code__", ns["Scaler"].other_scale.__code__),
                            {"outer", "outer_bound"}),
    "method defaults replaced": (lambda ns: setattr(ns["Scaler"].scale, "__defaults__", (5.0,)),
                                 {"outer", "outer_bound"}),
}


@pytest.mark.parametrize("entry", ["outer", "outer_bound"])
@pytest.mark.parametrize("mutation", list(MUTATIONS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_callee_changed_between_runs_is_seen_afresh(kind, mutation, entry):
    ns = namespace()
    run = runner(kind)
    before = plain(kind, ns[entry], 0.5)
    for _ in range(3):  # (the twins are made in the first run, kept by the next ones)
        assert run(ns[entry], 0.5) == pytest.approx(before, rel=1e-6)
    change, affected = MUTATIONS[mutation]
    change(ns)
    now = plain(kind, ns[entry], 0.5)
    assert (now != pytest.approx(before, rel=1e-6)) == (entry in affected)  # (the change shows plainly)
    for _ in range(2):
        assert run(ns[entry], 0.5) == pytest.approx(now, rel=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_callee_changed_inside_a_run_is_seen_in_the_next(kind):
    """The lazy-compilation idiom: routed code assigns ``f.__code__``."""
    ns = namespace()
    run = runner(kind)

    def swap_then_call(x):
        y = ns["helper"](x)
        ns["helper"].__code__ = ns["other"].__code__
        return y + ns["helper"](x)

    expected_first = plain(kind, lambda x: x * 2.0 + x * 2.0 * 5.0, 0.5)
    assert run(swap_then_call, 0.5) == pytest.approx(expected_first, rel=1e-6)
    assert run(swap_then_call, 0.5) == pytest.approx(plain(kind, lambda x: 2 * (x * 2.0 * 5.0), 0.5), rel=1e-6)


def twice(x):
    return x * 2


class TakesFloats(Context):
    """A primitive for ``twice`` on floats only: other calls step into its body."""

    @primitive(twice, float)
    def twice_(self, x):
        return -1.0


def test_a_primitive_with_conditions_still_takes_its_calls_in_later_runs():
    ctx = TakesFloats()

    def entry(x):
        return twice(x)

    for _ in range(2):  # (stepping into twice(3) makes its twin)
        assert overdub.overdub(ctx, entry, 3) == 6
        assert overdub.overdub(ctx, entry, 3.0) == -1.0
        assert overdub.overdub(ctx, lambda x: [twice(x), twice(float(x))], 3) == [6, -1.0]


def test_a_module_declared_opaque_after_runs_is_machinery_from_then_on(tmp_path):
    path = tmp_path / "opaque_later.py"
    path.write_text("def inner(x):\n    return abs(x) * 2.0\n\n\ndef outer(x):\n    return inner(x) + 1.0\n")
    spec = importlib.util.spec_from_file_location("opaque_later", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ctx = Seen([])

    def entry(x):
        return module.outer(x)

    saved = lookaside._machinery[0]
    try:
        for _ in range(2):
            ctx.metadata.clear()
            assert overdub.overdub(ctx, entry, -1.5) == 4.0
            assert "outer" in ctx.metadata and "inner" in ctx.metadata and "abs" in ctx.metadata
        overdub.opaque(module)
        for _ in range(2):
            ctx.metadata.clear()
            assert overdub.overdub(ctx, entry, -1.5) == 4.0
            assert "outer" in ctx.metadata  # its body runs as machinery: nothing inside is seen
            assert "inner" not in ctx.metadata and "abs" not in ctx.metadata
    finally:
        lookaside._machinery[0] = saved
        lookaside._machinery_files.clear()
        runtime.machinery_changed()


def test_a_function_declared_opaque_after_runs_is_machinery_from_then_on():
    ns = namespace()
    ctx = Seen([])
    for _ in range(2):
        ctx.metadata.clear()
        assert overdub.overdub(ctx, ns["outer_bound"], 0.5) == ns["outer_bound"](0.5)
        assert "sin" in ctx.metadata  # (called inside Scaler.scale)
    overdub.opaque(ns["Scaler"].scale)
    for _ in range(2):
        ctx.metadata.clear()
        assert overdub.overdub(ctx, ns["outer_bound"], 0.5) == ns["outer_bound"](0.5)
        assert "scale" in ctx.metadata and "sin" not in ctx.metadata


# ----------------------------------------------------------------------------- lifetimes
class Payload:
    pass


class Holder:
    def __init__(self, payload):
        self.payload = payload

    def scale(self, x):
        return x * 2.0


@pytest.mark.parametrize("kind", KINDS)
def test_a_dropped_namespace_and_its_functions_are_collected(kind):
    """A namespace's functions sit in a cycle with it (``f.__globals__``): dropped by the
    program, they are collected with it -- the twins kept across runs hold the namespace."""
    ns = namespace()
    run = runner(kind)
    for entry in ("outer", "outer_bound", "outer"):
        run(ns[entry], 0.5)
    refs = [weakref.ref(ns[name]) for name in ("helper", "keyword", "outer", "outer_bound", "inner", "Scaler")]
    del ns
    gc.collect()
    assert [ref() for ref in refs] == [None] * len(refs)


@pytest.mark.parametrize("kind", KINDS)
def test_closures_and_bound_methods_die_at_once(kind):
    """What plain Python frees by reference counting alone is freed as soon, after runs
    that called it (no collection in between)."""
    run = runner(kind)

    def make():
        payload = Payload()

        def closure(x):
            return x * 3.0 if payload is not None else x

        return closure, weakref.ref(payload)

    closure, closure_payload = make()
    holder = Holder(Payload())
    holder_payload = weakref.ref(holder.payload)
    bound = holder.scale

    def entry(x):
        return closure(x) + bound(x) + holder.scale(x)

    for _ in range(3):
        assert run(entry, 0.5) == pytest.approx(plain(kind, entry, 0.5), rel=1e-6)
    gc.disable()
    try:
        del closure, entry
        assert closure_payload() is None
        del holder, bound
        assert holder_payload() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("kind", KINDS)
def test_replaced_defaults_and_local_classes_are_collected(kind):
    run = runner(kind)
    payload = Payload()
    payload_ref = weakref.ref(payload)

    def with_default(x, p=payload):
        return x * 2.0

    class Local:
        def scale(self, x):
            return x * 4.0

    local_ref = weakref.ref(Local)

    def entry(x):
        return with_default(x) + Local().scale(x)

    for _ in range(2):
        assert run(entry, 0.5) == pytest.approx(plain(kind, entry, 0.5), rel=1e-6)
    with_default.__defaults__ = (None,)
    del payload, Local, entry
    gc.collect()
    assert payload_ref() is None
    assert local_ref() is None


def test_a_collection_forgets_twins_without_calling_patched_builtins(monkeypatch):
    """Twins are forgotten at the start of every collection, wherever the program is: with
    its builtins patched too (a test's mock of ``len``)."""
    import builtins

    ctx = Seen([])
    ns = namespace()
    overdub.overdub(ctx, ns["outer"], 0.5)
    assert ctx._runtime.code_twins
    calls = []
    real_len = builtins.len
    gc.disable()  # (earlier garbage collected first: its finalisers would call len plainly)
    try:
        gc.collect()
        monkeypatch.setattr(builtins, "len", lambda x: calls.append(x) or real_len(x))
        gc.collect()
    finally:
        gc.enable()
    monkeypatch.undo()
    assert calls == [] and not ctx._runtime.code_twins


class Posted(Context):
    """A posthook: sees every call's result."""

    def posthook(self, out, f, /, *args, **kwargs):
        return out


def _callee(x):
    return math.sin(x) * 2.0 + x


def _caller(x):
    return _callee(x) + sum(_callee(v) for v in (x, x + 1.0))


@pytest.mark.parametrize("make", [lambda: Seen([]), Sine, Wild, Posted, capstan.ForwardCtx, capstan.ReverseCtx])
def test_a_context_the_program_drops_is_collected(make):
    """A context instance that ran routed calls is freed by one collection once the program
    drops it: its routed code, which holds its slots (and they the context), is held by
    nothing the collector cannot see through when a full collection starts."""
    ctx = make()
    for _ in range(3):
        assert overdub.overdub(ctx, _caller, 0.5) == pytest.approx(_caller(0.5))
    alive = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert alive() is None


def test_a_context_kept_by_the_program_still_runs_after_collections():
    """Its routed code is bound again after a full collection dropped it."""
    ctx = Seen([])
    assert overdub.overdub(ctx, _caller, 0.5) == pytest.approx(_caller(0.5))
    gc.collect()
    assert not ctx._runtime.code_table
    ctx.metadata.clear()
    assert overdub.overdub(ctx, _caller, 0.5) == pytest.approx(_caller(0.5))
    assert "_callee" in ctx.metadata and ctx._runtime.code_table
