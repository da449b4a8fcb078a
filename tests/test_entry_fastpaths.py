"""The entry points' shortcuts for a float point (``D``, ``gradient``, ``jvp``, ``pullback``)
give what the general path gives.

A float subclass takes the general path everywhere (every shortcut tests ``type(x) is
float``), so ``f(Sub(x))`` is the general path's answer for the same number: each
shortcut is compared with it, for ordinary numbers, signed zeros, infinities and NaN.
The other inputs (ints, bools, NumPy scalars, complex numbers) never take a shortcut;
their answers and messages are pinned here beside the float's."""
import gc
import math

import numpy as np
import pytest

import capstan
from capstan import checks, forward, pool, structure
from capstan.reverse import ReverseCtx
from capstan.threadstate import thread_state
from overdub.context import _slot_names


class Sub(float):
    """A float the shortcuts do not recognise: it takes the general path."""


POINTS = [0.7, -2.5, 0.0, -0.0, 1e300, math.inf, -math.inf, math.nan]

FUNCTIONS = {
    "identity": lambda x: x,
    "square": lambda x: x * x,
    "sin": lambda x: math.sin(x) * x,
    "constant": lambda x: 3.0,
    "int result": lambda x: 3,
    "bool result": lambda x: x > 0.5,
    "poly": lambda x: ((0.5 * x + 1.0) * x - 2.0) * x + 0.25,
}
#: float outputs whose tapes hold array records too: the C gradient's backward pass hands
#: them to the general one
MIXED = {
    "array then float": lambda x: float(np.sum(np.array([x, 2.0]) * x)) * x,
    "math then array": lambda x: math.exp(0.1 * x) * float(np.prod(np.array([x, x]))),
}


def same(a, b):
    """Equal as numbers (NaN equals NaN, signs of zero count) and of the same type (a
    ``Sub`` the general path hands back as it was given counts as a float)."""
    a, b = (float(v) if type(v) is Sub else v for v in (a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def outcome(call):
    """``("ok", result)`` or ``(exception type, message)``."""
    try:
        return "ok", call()
    except (TypeError, ValueError, ArithmeticError) as exc:
        return type(exc), str(exc)


def agree(a, b):
    return a[0] == b[0] and (same(a[1], b[1]) if a[0] == "ok" else a[1] == b[1])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("x", POINTS, ids=repr)
def test_D_of_a_float_is_the_general_paths_answer(name, x):
    f = FUNCTIONS[name]
    assert agree(outcome(lambda: capstan.D(f, x)), outcome(lambda: capstan.D(f, Sub(x))))


@pytest.mark.parametrize("name", sorted(FUNCTIONS) + sorted(MIXED))
@pytest.mark.parametrize("x", POINTS, ids=repr)
def test_gradient_of_a_float_is_the_general_paths_answer(name, x):
    f = {**FUNCTIONS, **MIXED}[name]
    assert agree(outcome(lambda: capstan.gradient(f, x)), outcome(lambda: capstan.gradient(f, Sub(x))))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("x", POINTS, ids=repr)
def test_jvp_of_floats_is_the_general_paths_answer(name, x):
    f = FUNCTIONS[name]
    fast = outcome(lambda: capstan.jvp(f, (x,), (2.0,)))
    general = outcome(lambda: capstan.jvp(f, (Sub(x),), (Sub(2.0),)))
    assert agree(fast, general)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("x", POINTS, ids=repr)
def test_grad_of_a_float_is_the_general_paths_answer(name, x):
    f = FUNCTIONS[name]
    two = lambda a, b: f(a) * b  # noqa: E731
    for transform in (capstan.grad, capstan.value_and_grad):
        assert agree(outcome(lambda: transform(f)(x)), outcome(lambda: transform(f)(Sub(x))))
        assert agree(outcome(lambda: transform(two, argnums=1)(x, x)),
                     outcome(lambda: transform(two, argnums=1)(Sub(x), Sub(x))))
        assert agree(outcome(lambda: transform(two, argnums=-1)(x, x)),  # (not a shortcut's)
                     outcome(lambda: transform(two, argnums=-1)(Sub(x), Sub(x))))
    with pytest.raises(ValueError, match=r"^capstan\.grad: argnums=2, but f was called with 2 positional"):
        capstan.grad(two, argnums=2)(x, x)


@pytest.mark.parametrize("x", POINTS, ids=repr)
def test_pullback_of_a_float_is_the_general_paths_answer(x):
    for f in FUNCTIONS.values():
        fast, general = outcome(lambda: capstan.pullback(f, x)), outcome(lambda: capstan.pullback(f, Sub(x)))
        assert fast[0] == general[0]
        if fast[0] != "ok":
            assert fast[1] == general[1]
            continue
        (y, back), (ys, backs) = fast[1], general[1]
        assert same(y, ys)
        assert agree(outcome(lambda: back(1.5)), outcome(lambda: backs(1.5)))


def test_the_checks_skipped_for_a_float_pass_it():
    for x in POINTS:
        assert checks.require_differentiable("D", (x,), "x cannot carry a derivative") is None
        assert checks.require_differentiable("gradient", (3, x)) is None
        assert forward._seed(x, "D") is x
        checks.point_given("gradient", (x,), {})


def test_float_leaves_flatten_as_the_general_walk_does():
    for x in [0.5, (0.5, -1.0), (), (0.5,)]:
        leaves, rebuild = structure.flatten(x)
        walked = []
        build = structure._flatten(x, walked)
        assert leaves == walked
        new = [float(i) + 0.25 for i in range(len(leaves))]
        assert rebuild(new) == build(iter(new))
        assert type(rebuild(new)) is type(x)
    ctx = forward.ForwardCtx()
    t = forward._seeded(2.0, ctx, 1.0)
    assert structure.flatten(t)[0] == [t]


def test_other_inputs_never_take_a_shortcut_and_keep_their_messages():
    square = FUNCTIONS["square"]
    assert capstan.D(square, np.float64(1.5)) == 3.0
    assert capstan.D(square, 1.5 + 0j) == 3.0 + 0j
    assert capstan.gradient(square, np.float64(1.5)) == (3.0,)
    assert type(capstan.gradient(square, np.float32(1.5))[0]) is np.float32
    assert capstan.jvp(square, (1.5,), (np.array(1.0),))[1] == 3.0
    with pytest.raises(TypeError, match=r"^capstan\.D: x cannot carry a derivative: got int 3; pass 3\.0 "):
        capstan.D(square, 3)
    with pytest.raises(TypeError, match=r"^capstan\.D: x cannot carry a derivative: got bool True; booleans"):
        capstan.D(square, True)
    with pytest.raises(TypeError, match=r"^capstan\.gradient: no argument can carry a derivative: got int 3"):
        capstan.gradient(square, 3)
    with pytest.raises(ValueError, match=r"^capstan\.jvp: tangent 0 has shape \(2,\), its primal \(\)"):
        capstan.jvp(square, (1.5,), (np.ones(2),))
    with pytest.raises(ValueError, match=r"^capstan\.gradient: f returned a complex number"):
        capstan.gradient(lambda x: x * 1j, 1.5)
    with pytest.raises(ValueError, match=r"^capstan\.gradient: f must return a real scalar, got tuple"):
        capstan.gradient(lambda x: (x, x), 1.5)


def test_nested_D_of_floats():
    assert capstan.D(lambda x: capstan.D(lambda y: x * y * y, 1.0), 2.0) == 2.0
    assert capstan.D(lambda x: capstan.gradient(lambda y: x * y * y, 3.0)[0], 2.0) == 6.0


def test_pullbacks_keep_their_own_tapes_and_give_their_contexts_back():
    backs = [capstan.pullback(lambda x, k=k: k * x * x, 2.0) for k in range(1, 4)]
    for _ in range(6):  # other runs in between borrow and return contexts
        assert capstan.gradient(lambda x: x * x * x, 2.0) == (12.0,)
    assert [back(1.0) for _, back in backs] == [(4.0,), (8.0,), (12.0,)]
    idle = thread_state().pools[ReverseCtx]
    del idle[:]
    y, back = capstan.pullback(lambda x: x * x, 3.0)
    assert back(1.0) == (6.0,) and not idle
    del back
    gc.collect()
    assert len(idle) == 1  # the context went back when nothing could use its tape
    with pytest.raises(ZeroDivisionError):
        capstan.pullback(lambda x: x / 0.0, 3.0)
    assert len(idle) == 1  # a failed run gives its context back at once


def _state(ctx):
    """A context's attributes as reset leaves them: types, and lengths or values."""
    slots = {k: getattr(ctx, k) for k in _slot_names(type(ctx)) if hasattr(ctx, k)}
    return {k: (type(v), len(v) if isinstance(v, (list, dict, set, tuple)) else v)
            for k, v in {**vars(ctx), **slots}.items() if k not in ("_tagkey", "_runtime", "stored")}


@pytest.mark.parametrize("cls, entry", [(forward.ForwardCtx, lambda f: capstan.D(f, 0.3)),
                                        (ReverseCtx, lambda f: capstan.gradient(f, 0.3))],
                         ids=["D", "gradient"])
def test_a_context_is_handed_back_as_its_reset_leaves_it(cls, entry):
    """The C pool reads a quiet run's reset off the context (pool.QUIET_RESETS): what it
    hands back is what ``reset`` itself would leave, with a fresh tag identity; a run that
    stored differentiated values has ``reset`` called (its cleanup)."""
    kept = []
    entry(lambda x: math.sin(x) * x)
    ctx = pool._idle_of(cls)[-1]
    before, key = _state(ctx), ctx._tagkey
    tape = getattr(ctx, "tape", None)
    ctx.reset()
    assert _state(ctx) == before
    assert getattr(ctx, "tape", None) is not tape or tape is None  # (Python's reset: a new tape too)
    entry(lambda x: kept.append(x) or x * x)
    assert type(kept[0]) is float  # (the stored value was made plain by reset's cleanup)
    ctx = pool._idle_of(cls)[-1]
    assert ctx._tagkey is not key and _state(ctx) == before
    assert cls.reset in pool.QUIET_RESETS


ARRAY_FUNCTIONS = {
    "sum of squares": lambda x: np.sum(x * x),
    "element": lambda x: x[1] * x[2],
    "builtin sum": lambda x: sum(x),
    "float of an element": lambda x: float(x[0]),
    "constant": lambda x: 3.0,
    "numpy constant": lambda x: np.float64(2.0),
    "int result": lambda x: 3,
    "0-d array": lambda x: np.sum(x * x, keepdims=True).reshape(()),
    "array result": lambda x: x * 2.0,
    "complex result": lambda x: np.sum(x) * 1j,
    "exact equality": lambda x: np.sum(x) if x[0] == 0.25 else 0.0,
    "second order": lambda x: capstan.gradient(lambda y: np.sum(y ** 3 * x), x)[0][1],
    "losses": lambda x: np.sum(x) + int(np.sum(x)),
}


def _general_gradient(f, x):
    """``gradient(f, x)`` by the general steps (the array shortcut's reference)."""
    from capstan import reverse

    checks.point_given("gradient", (x,), {})
    checks.check_callable("gradient", f)
    checks.require_differentiable("gradient", (x,))
    with pool.borrowed(ReverseCtx) as ctx:
        return reverse._gradient(reverse._Run(f, (x,), "gradient", ctx), (x,))


@pytest.mark.parametrize("name", ARRAY_FUNCTIONS)
@pytest.mark.parametrize("x", [np.array([0.25, -1.5, 2.0]), np.array([]), np.array([[0.5, 1.0]])],
                         ids=["vector", "empty", "matrix"])
def test_gradient_of_a_float64_array_is_the_general_paths_answer(name, x):
    f = ARRAY_FUNCTIONS[name]

    def outcome(call):
        try:
            return "ok", call()
        except Exception as exc:  # (an IndexError of f's own included)
            return type(exc), str(exc)

    got = outcome(lambda: capstan.gradient(f, x.copy()))
    want = outcome(lambda: _general_gradient(f, x.copy()))
    assert got[0] == want[0], (got, want)
    if got[0] != "ok":
        assert got[1] == want[1]
        return
    assert type(got[1]) is tuple and len(got[1]) == len(want[1]) == 1
    a, b = got[1][0], want[1][0]
    assert type(a) is type(b) and (a is None or (a.dtype == b.dtype and a.shape == b.shape
                                                 and np.array_equal(a, b, equal_nan=True)))


# -- capstan's per-thread state (capstan.threadstate) -------------------------------------------

def test_each_thread_has_its_own_state_and_it_goes_with_the_thread():
    """The nesting level, the active contexts and the idle pools are per thread: a thread
    started inside a differentiation sees none active, its own runs pool their own contexts,
    and those contexts are freed when the thread ends."""
    import threading
    import weakref

    from capstan.forward import ForwardCtx

    seen = {}

    def worker():
        state = thread_state()
        seen["level"], seen["contexts"] = capstan.nestlevel(), list(state.contexts)
        seen["D"] = capstan.D(lambda x: x * x, 3.0)
        seen["idle"] = [weakref.ref(c) for c in state.pools.get(ForwardCtx, [])]
        seen["same"] = state is thread_state()

    def outer(x):
        assert capstan.nestlevel() == 1 and len(thread_state().contexts) == 1
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        return x * 2.0

    mine = thread_state()
    assert capstan.D(outer, 1.0) == 2.0
    assert seen["level"] == 0 and seen["contexts"] == [] and seen["D"] == 6.0 and seen["same"]
    assert seen["idle"] and thread_state() is mine and mine.level == 0 and mine.contexts == []
    assert all(c not in seen["idle"] for c in mine.pools.get(ForwardCtx, []))
    gc.collect()
    assert all(r() is None for r in seen["idle"])  # (the thread's pool went with it)


def test_thread_state_fields_match_the_reference():
    """The C state object and the pure-Python reference have the same fields and types."""
    from capstan import threadstate

    for state in (thread_state(), threadstate._thread_state()):
        assert isinstance(state.pools, dict) and isinstance(state.contexts, list)
        assert state.level == 0
        with pytest.raises(AttributeError):
            state.nonexistent


class SubList(list):
    """A list the shortcuts for a list of floats do not recognise: the general walk."""


LIST_FUNCTIONS = {
    "first": lambda xs: xs[0],
    "sum of squares": lambda xs: sum(x * x for x in xs),
    "rosenbrock": lambda xs: sum(100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2
                                 for i in range(len(xs) - 1)),
    "nan slope": lambda xs: math.sqrt(xs[0]) - math.sqrt(xs[0]) + xs[1],
    "list out": lambda xs: [x * 2.0 for x in xs],
    "kind": lambda xs: float(type(xs) is tuple) * xs[-1],
}


@pytest.mark.parametrize("name", sorted(LIST_FUNCTIONS))
@pytest.mark.parametrize("kind", [list, tuple])
def test_jvp_and_gradient_of_a_list_of_floats_are_the_general_paths_answers(name, kind):
    f = LIST_FUNCTIONS[name]
    xs, ts = kind([0.0, 1.5, -2.0, 0.25]), kind([1.0, -0.5, 2.0, 0.0])

    def general(entry, *args):  # (a one-element list around the point: the general walk)
        try:
            return entry(*args)
        except capstan.NoRuleError as exc:
            return type(exc)

    def unwrapped(g):
        return lambda outer: g(outer[0])

    got = general(capstan.jvp, f, (xs,), (ts,))
    want = general(capstan.jvp, unwrapped(f), ([xs],), ([ts],))
    assert got == want
    if name != "list out":
        got = general(capstan.gradient, f, xs)
        want = general(capstan.gradient, unwrapped(f), [xs])
        assert got == (want if isinstance(want, type) else (want[0][0],))
        assert isinstance(got, type) or type(got[0]) is kind


def test_tag_each_makes_what_tagged_makes_and_checks_its_lists():
    from overdub import Tagged, tagging
    from overdub.tagging import context_of, metadata_of, tag_each, tag_of, value_of
    ctx = ReverseCtx()
    tagging.tag(0.5, ctx, 0)
    made = tag_each([1.0, 2.0, 3.0], [7, None, "m"], ctx)
    assert [type(t) for t in made] == [Tagged] * 3
    assert [value_of(t) for t in made] == [1.0, 2.0, 3.0]
    assert [metadata_of(t) for t in made] == [7, None, "m"]
    assert all(tag_of(t) is ctx._tagkey and context_of(t) is ctx for t in made)
    assert tag_each([], [], ctx) == []
    with pytest.raises(TypeError, match="two lists of one length"):
        tag_each([1.0], [], ctx)
