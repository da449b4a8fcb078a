"""Mixed mode: a scalar Python function applied elementwise as one differentiation node.

``k = capstan.elementwise(kernel)`` broadcasts ``kernel`` over its arguments like a
ufunc (``np.vectorize`` semantics, float results).  Inside ``gradient``, ``jvp``,
``hessian``... ``k(x, ...)`` is one node whose per-element partial derivatives are
computed once on the forward pass and used by the backward pass (ReverseDiff's fused
broadcast).

Speed does not come from per-element dual numbers (in Python they cost as much as
routed reverse mode) but from *recording the kernel once per control path and
replaying it over whole arrays with NumPy*:

1. the kernel is recorded with :func:`capstan.record_tape` at one element (Python
   floats): operators, ``math`` functions and the *guards* -- every decision the run
   made on a value (``x > 0``, ``if x:``, ``max``, ``int(x)``, the test of a ``while``);
2. the recorded steps are replayed on all remaining elements at once (``math.exp`` ->
   ``np.exp``...); a guard becomes a mask: the elements whose decisions agree with the
   recording follow this path, the others are recorded in turn at their first element;
3. after :data:`MAX_PATHS` paths, and for elements whose replay leaves the finite
   numbers (where ``math`` would raise or Python would differ) or whose path uses a
   function without an array form, each element runs the kernel itself (its
   derivative by :func:`capstan.pullback`) -- slower, never different.

Partials come from a reverse sweep over the same replay, with the rule table's partial
derivatives (``capstan.rules``).  The replay and the sweep are plain NumPy code in this
module (not machinery), so an enclosing differentiation -- ``hessian``, a ``jvp`` of a
``gradient`` -- differentiates them like any NumPy code: nesting needs nothing more.

``np.vectorize(kernel)(x)`` and ``np.frompyfunc(kernel, n, 1)(x)`` on differentiated
values go through the same path.

A kernel must get its differentiated inputs through its arguments: one that reads a
differentiated value from a closure, a default or a global is refused (its derivative
would be lost), with an error naming it.
"""
import functools
import math
import operator
import types
import weakref
from typing import Any

import numpy as np

from overdub import Tagged, opaque, overdub, primitive, recurse
from overdub.tagging import tag_of, value_of

from . import losses, nesting
from .adcontext import INPLACE, ADContext
from .losses import NoRuleError
from .reverse import GUARD, INPUT, RULE, adjoint, pullback
from .threadstate import thread_state
from .rules import kink_rules, operator_rules, registry
from .rules.registry import defimpl, defjvp, strong_mul, unbroadcast
from .tape import Raised, record_tape

#: most control paths recorded per kernel; elements beyond them run one by one
MAX_PATHS = 16
_KEYS_KEPT = 32  # sets of excluded/keyword argument values whose paths a kernel keeps


class Elementwise:
    """A scalar function applied elementwise, broadcasting like a ufunc (see the module
    docstring).  ``excluded``: positions or names of arguments passed through whole,
    not broadcast (``np.vectorize``'s option)."""

    def __init__(self, kernel, excluded=()):
        if not callable(kernel):
            raise TypeError("capstan.elementwise(kernel): kernel must be callable, got %r" % (kernel,))
        self.kernel = kernel
        self.excluded = frozenset(excluded)
        self.paths = {}  # (positions of excluded arguments, their values...) -> recorded paths
        functools.update_wrapper(self, kernel, updated=())

    def __call__(self, /, *args, **kwargs):
        if nesting.nestlevel():
            _check_call(self, args, kwargs)
        return _apply(self, kwargs, *args)

    def __repr__(self):
        return "capstan.elementwise(%s)" % _name(self.kernel)


def elementwise(kernel: Any = None, *, excluded: Any = ()) -> Any:
    """``kernel`` applied elementwise to arrays, broadcasting like a ufunc, as one node
    of a differentiation: ``capstan.elementwise(kernel)(x, 2.0)``, or as a decorator
    (``@capstan.elementwise``).

    Outside differentiation the result is ``np.vectorize(kernel)(...)`` as a float
    array (equal up to the rounding of NumPy's ``exp``, ``sin``... against ``math``'s).
    Inside ``gradient``, ``jvp``, ``hessian``... the kernel is recorded once per control
    path and replayed over all elements with NumPy; its per-element partial derivatives
    are computed once and reused by the backward pass.  Elements are given to the kernel
    as Python floats.

    Example::

        >>> import math, numpy as np, capstan
        >>> @capstan.elementwise
        ... def softplus(t, beta):
        ...     return math.log1p(math.exp(beta * t)) / beta if beta * t < 30.0 else t
        >>> capstan.gradient(lambda x: np.sum(softplus(x, 2.0)), np.array([0.0, 20.0]))
        (array([0.5, 1. ]),)

    Raises:
        TypeError: ``kernel`` not callable; a kernel that reads a differentiated value
            from a closure, a default or a global instead of an argument; arguments that
            are not real numbers or arrays; a kernel that does not return one real number.
        capstan.NoRuleError: the kernel calls a function without a derivative rule.
    """
    if kernel is None:
        return lambda k: Elementwise(k, excluded)
    return Elementwise(kernel, excluded)


# ----------------------------------------------------------------------------- the node
def _apply(op, kwargs, *args):
    """``op``'s kernel applied elementwise: the plain values (the primitive that the
    differentiation contexts see, with the rules registered below)."""
    plan = _plan(op, kwargs, args)
    return plan.values.reshape(plan.shape)


def _apply_adjoint(op, kwargs, *args):
    """Reverse rule: the value, and a pullback from the per-element partials."""
    lives = []
    value, partials = _value_and_partials(op, kwargs, args, lives)

    def back(g):
        return (None, None) + tuple(None if p is None else unbroadcast(strong_mul(g, p), a)
                                    for p, a in zip(partials, args))

    def weights(w):  # (reverse mode's pass that tells zeros apart: a partial's zero that
        # holds near the point, a constant's or a selection's, sends a zero weight)
        return (None, None) + tuple(
            None if p is None else unbroadcast(np.where(live, w, 0.0), _plain(a))
            for p, a, live in zip(partials, args, lives))

    if len(lives) == len(partials):
        back.weights = weights
    return value, back


def _apply_jvp(tangents, ans, op, kwargs, *args):
    """Forward rule: the per-element partials times the tangents."""
    _, partials = _value_and_partials(op, kwargs, args)
    out = None
    undefined = None
    for p, t in zip(partials, tangents[2:]):
        if p is None or t is None:
            continue
        term = strong_mul(p, t)
        out = term if out is None else out + term
        if type(p) is np.ndarray and (type(t) is np.ndarray or type(t) is float or type(t) is np.float64):
            with np.errstate(invalid="ignore"):
                m = np.equal(p, 0) & ~np.isfinite(t)
            if np.any(m):
                undefined = m if undefined is None else undefined | m
    if undefined is not None and type(out) is np.ndarray:
        out = _at_infinite_tangents(op, kwargs, args, tangents[2:], partials, out, undefined)
    return out


def _at_infinite_tangents(op, kwargs, args, tangents, partials, out, undefined):
    """``out`` where a kernel's partial 0 met an infinite tangent (``sqrt(x)`` at 0 into
    ``t * t``): the partial cannot tell a zero that holds near the point (``max(t, .5)``'s)
    from a value's (``2 t`` at 0), so those elements are differentiated again, the kernel
    itself by forward mode along their tangents -- NaN where that is undefined (refused)."""
    if np.shape(undefined) != np.shape(out):
        return out
    from .forward import jvp  # (forward mode imports this module's rules)
    kernel = _bound(op, kwargs)
    floats = [i for i, p in enumerate(partials) if p is not None and tangents[i] is not None]
    out = np.array(out, dtype=float)
    for k in zip(*np.nonzero(undefined)):
        elems = [a if i in op.excluded else _element(np.broadcast_to(_plain(a), out.shape)[k] if np.ndim(a) else a)
                 for i, a in enumerate(args)]

        def at_element(*xs, elems=elems):
            full = list(elems)
            for i, x in zip(floats, xs):
                full[i] = x
            return kernel(*full)

        ts = tuple(float(np.broadcast_to(tangents[i], out.shape)[k]) for i in floats)
        try:
            with np.errstate(all="ignore"):
                d = float(jvp(at_element, tuple(elems[i] for i in floats), ts)[1])
        except NoRuleError:
            d = math.nan
        out[k] = d
    return out


adjoint(_apply)(_apply_adjoint)
defjvp(_apply, _apply_jvp)


def _value_and_partials(op, kwargs, args, lives=None):
    """Values and per-element partials wrt each argument (``None`` for arguments that
    are not real floats) -- plain NumPy code that enclosing differentiations route.
    ``lives``, a list: filled with one boolean array per argument, false where the
    partial is a zero that holds near the point (a constant's, a selection's)."""
    plan = _plan(op, kwargs, args)
    shape = plan.shape
    inputs = []
    for i, (a, plain) in enumerate(zip(args, plan.flat)):
        if plain is None or i in plan.ints or np.ndim(plain) == 0:
            inputs.append(plain if i in plan.ints else a)  # (scalars broadcast in the replay)
        else:
            inputs.append(np.reshape(np.broadcast_to(a, shape), (-1,)))
    size = plan.values.size
    value_parts, partial_parts, live_parts, order = [], [], [], []
    for path, idx in plan.groups:
        sub = inputs if idx is None else [a if a is None or np.ndim(a) == 0 else a[idx] for a in inputs]
        count = size if idx is None else len(idx)
        live = []
        if path is None:
            value, partials = _one_by_one(op, kwargs, sub, plan, count)
        else:
            value, partials = path.sweep(sub, live)
        value_parts.append(_spread(value, count))
        partial_parts.append([_spread(p, count) for p in partials])
        live_parts.append([np.broadcast_to(live[j] if j < len(live) and live[j] is not None else True,
                                           (count,)) for j in range(len(partials))])
        order.append(idx)
    if not order:  # no elements at all (a kernel applied to empty arrays)
        value, partials = np.zeros(0), [np.zeros(0) for _ in args]
    elif len(order) == 1 and order[0] is None:
        value, partials = value_parts[0], partial_parts[0]
    else:
        where = np.concatenate([np.arange(size) if i is None else i for i in order])
        inverse = np.empty(size, dtype=np.intp)
        inverse[where] = np.arange(size)
        value = np.concatenate(value_parts)[inverse]
        partials = [np.concatenate([part[j] for part in partial_parts])[inverse]
                    for j in range(len(args))]
    if lives is not None and order and len(order) == len(live_parts):
        if len(order) == 1 and order[0] is None:
            lives.extend(live_parts[0])
        else:
            lives.extend(np.concatenate([part[j] for part in live_parts])[inverse]
                         for j in range(len(args)))
        lives[:] = [np.reshape(v, shape) for v in lives]
    wanted = [plain is not None and i not in plan.ints for i, plain in enumerate(plan.flat)]
    return (np.reshape(value, shape),
            [np.reshape(p, shape) if w else None for p, w in zip(partials, wanted)])


def _spread(v, count):
    """``v`` as a 1-D float array of ``count`` elements (a path may give a scalar)."""
    if np.ndim(v) == 0:
        return np.zeros(count) + v
    return v


def _one_by_one(op, kwargs, sub, plan, count):
    """Values and partials element by element: the kernel itself, differentiated by
    :func:`capstan.pullback` (the fallback for paths that cannot be replayed)."""
    kernel = _bound(op, kwargs)
    free = [i for i, p in enumerate(plan.flat) if p is not None]
    floats = [i for i in free if i not in plan.ints]
    values, partials = [], [[] for _ in sub]
    for e in range(count):
        elems = list(sub)
        for i in free:
            a = sub[i]
            elems[i] = _element(a if np.ndim(a) == 0 else a[e], i in plan.ints)

        def at_element(*xs, elems=elems):
            full = list(elems)
            for i, x in zip(floats, xs):
                full[i] = x
            return kernel(*full)

        if floats:
            y, back = pullback(at_element, *[elems[i] for i in floats])
            grads = back(1.0)
        else:  # (only integers: nothing to differentiate)
            y, grads = kernel(*elems), ()
        _check_result(op, y)
        values.append(y)
        for i, g in zip(floats, grads):
            partials[i].append(0.0 if g is None else g)
    return (np.array(values, dtype=float),
            [np.array(p, dtype=float) if p else 0.0 for p in partials])


def _element(x, integer=False):
    """One element as the kernel sees it: a Python float (an int for integer arrays)."""
    if integer:
        return int(_plain(x))
    if type(x) is Tagged or isinstance(x, (float, np.floating)):
        return float(x)
    return x.item() if isinstance(x, np.generic) else x


def _bound(op, kwargs):
    """The kernel with its keyword arguments bound."""
    kernel = op.kernel
    return functools.partial(kernel, **kwargs) if kwargs else kernel


def _check_result(op, y):
    """Refuse a kernel result that is not one real number (a 0-d real array is one, as
    ``np.vectorize`` with ``otypes`` takes it: SciPy's ``irwinhall``)."""
    if type(y) is np.ndarray and y.shape == () and y.dtype.kind in "iuf":
        return
    if isinstance(y, bool) or not isinstance(y, (int, float, np.integer, np.floating)):
        raise TypeError("capstan.elementwise: the kernel %s must return one real number per "
                        "element, got %r" % (_name(op.kernel), y))


def _name(f):
    """A function's name for error messages."""
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


# ----------------------------------------------------------------------------- planning
@opaque
def _plan(op, kwargs, args):
    """Which elements follow which recorded path, on the plain values (machinery: an
    enclosing differentiation's tags are removed here, the paths do not depend on them).

    Returns a :class:`Plan`."""
    plain_args = [_plain(a) for a in args]
    excluded = {i for i in range(len(args)) if i in op.excluded}
    shape = np.broadcast_shapes(*[np.shape(a) for i, a in enumerate(plain_args) if i not in excluded])
    flat, ints = [], set()
    for i, a in enumerate(plain_args):
        if i in excluded:
            flat.append(None)
            continue
        arr = np.asarray(a)
        if arr.dtype.kind not in "biuf":
            raise TypeError("capstan.elementwise(%s): arguments must be real numbers or arrays of "
                            "them, got %s" % (_name(op.kernel), "an array of dtype %s" % arr.dtype
                                              if isinstance(a, np.ndarray) else repr(a)))
        if arr.dtype.kind != "f":
            ints.add(i)
        arr = arr.astype(float, copy=False)
        flat.append(arr[()] if arr.ndim == 0 else np.broadcast_to(arr, shape).reshape(-1))
    size = int(np.prod(shape)) if shape else 1
    seen = _fingerprint(op.kernel, 0)
    consts = (tuple(_frozen(plain_args[i], 0) for i in sorted(excluded)),
              tuple((k, _frozen(v, 0)) for k, v in sorted(kwargs.items())), seen)
    key = None if _UNCACHABLE in consts[0] or _UNCACHABLE in (v for _, v in consts[1]) \
        or seen is _UNCACHABLE else consts
    if key is not None and key not in op.paths and len(op.paths) >= _KEYS_KEPT:
        op.paths.clear()  # (excluded arguments that change on every call)
    paths = op.paths.setdefault(key, []) if key is not None else []
    fixed = {i: plain_args[i] for i in excluded}
    groups, value_parts = [], []
    remaining = np.arange(size)
    alone = []  # elements run one by one
    tried = 0
    while len(remaining):
        fresh = tried == len(paths)
        if fresh and len(paths) < MAX_PATHS:
            first = [None if a is None else (a if np.ndim(a) == 0 else a[remaining[0]]) for a in flat]
            path = _record(op, kwargs, fixed, first)
            if path is None:
                break
            paths.append(path)
        elif fresh:
            break
        path = paths[tried]
        tried += 1
        every = len(remaining) == size
        sub = [a if a is None or np.ndim(a) == 0 or every else a[remaining] for a in flat]
        try:
            follows, finite, values = path.check(sub, len(remaining))
        except Exception:  # (an array form that does not take these arguments: math.hypot(a, b, c))
            paths.remove(path)
            break
        if fresh and not (follows[0] and finite[0]):
            # (a NaN, or NumPy's function disagreeing with math's right at a branch): the
            # element the path was recorded at runs alone, the others may still follow
            follows, finite = follows.copy(), finite.copy()
            follows[0], finite[0] = True, False
        odd = follows & ~finite
        if odd.any():
            alone.extend(remaining[odd].tolist())
        take = follows & finite
        if take.any():
            idx = None if len(remaining) == size and take.all() else remaining[take]
            groups.append((path, idx))
            value_parts.append(values[take] if np.ndim(values) else np.full(int(take.sum()), float(values)))
        remaining = remaining[~follows]
    alone.extend(remaining.tolist())
    if alone:
        idx = np.array(sorted(alone), dtype=np.intp)
        kernel = _bound(op, kwargs)
        vals = []
        for e in idx:
            elems = [fixed[i] if a is None else _element(a if np.ndim(a) == 0 else a[e], i in ints)
                     for i, a in enumerate(flat)]
            y = kernel(*elems)
            _check_result(op, y)
            vals.append(float(y))
        groups.append((None, idx))
        value_parts.append(np.array(vals, dtype=float))
    if len(groups) == 1 and groups[0][1] is None:
        values = value_parts[0].astype(float, copy=False)
    else:
        values = np.empty(size)
        for (path, idx), v in zip(groups, value_parts):
            values[slice(None) if idx is None else idx] = v
    return Plan(flat, ints, shape, groups, values)


class Plan:
    """What :func:`_plan` found: ``flat`` (the plain arguments as 1-D float arrays of the
    broadcast size, scalars kept scalar, ``None`` for excluded ones), ``ints`` (positions
    of integer arguments), ``shape`` (the broadcast shape), ``groups`` (``[(path or None,
    indices or None)]``; path ``None``: element by element, indices ``None``: all) and
    ``values`` (the plain results, flat)."""

    __slots__ = ("flat", "ints", "shape", "groups", "values")

    def __init__(self, flat, ints, shape, groups, values):
        self.flat, self.ints, self.shape = flat, ints, shape
        self.groups, self.values = groups, values


_UNCACHABLE = object()


def _frozen(v, depth):
    """A hashable stand-in for the value ``v`` that a recorded path may have taken as a
    constant, equal exactly when the value is (with its type); ``_UNCACHABLE`` for what
    cannot be compared cheaply (user objects, large containers): then paths are recorded
    anew on every call -- slower, never stale."""
    tv = type(v)
    if v is None or tv in (bool, int, float, complex, str, bytes):
        return (tv, v)
    if tv is Tagged:  # (a differentiated value: refused elsewhere, never kept)
        return _UNCACHABLE
    if isinstance(v, (types.ModuleType, type, types.BuiltinFunctionType)) or tv is np.ufunc:
        return ("id", id(v))
    if tv is types.FunctionType:
        return _fingerprint(v, depth + 1)
    if depth < 3 and (tv is tuple or tv is list) and len(v) <= 1000:
        parts = tuple(_frozen(e, depth + 1) for e in v)
        return _UNCACHABLE if _UNCACHABLE in parts else (tv, parts)
    if depth < 3 and tv is dict and len(v) <= 1000:
        parts = tuple((_frozen(k, depth + 1), _frozen(e, depth + 1)) for k, e in v.items())
        return _UNCACHABLE if any(_UNCACHABLE in p for p in parts) else (tv, parts)
    if tv is np.ndarray and v.dtype.kind in "biufc":
        return (tv, v.shape, v.dtype.str, hash(v.tobytes()))
    if isinstance(v, np.generic):
        return (tv, v.item())
    return _UNCACHABLE


def _fingerprint(f, depth):
    """What a function reads besides its arguments -- its closure cells, defaults and the
    globals its code names (and, a few levels deep, those of the functions among them) --
    as a hashable value: recorded paths are kept only while it stays the same."""
    if isinstance(f, functools.partial):
        return _frozen((f.func, f.args, f.keywords), depth)
    if type(f) is not types.FunctionType:
        return _frozen(f, depth) if depth == 0 and not callable(f) else ("id", id(f))
    if depth > 3:
        return ("id", id(f))
    code = f.__code__
    names = _GLOBAL_NAMES.get(code)
    if names is None:
        found = set()
        _global_names(code, found)
        names = _GLOBAL_NAMES[code] = sorted(found)
    g = f.__globals__
    cells = []
    for cell in f.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            cells.append(None)
    parts = (id(code),
             tuple(_frozen(e, depth + 1) for e in cells),
             tuple(_frozen(e, depth + 1) for e in f.__defaults__ or ()),
             tuple(_frozen(e, depth + 1) for e in (f.__kwdefaults__ or {}).values()),
             tuple((n, _frozen(g[n], depth + 1)) for n in names if n in g))
    flat = parts[1] + parts[2] + parts[3] + tuple(v for _, v in parts[4])
    return _UNCACHABLE if _UNCACHABLE in flat else parts


def _plain(x):
    """``x`` without the tags of any differentiation."""
    while type(x) is Tagged:
        x = value_of(x)
    if type(x) in (list, tuple):
        return type(x)(_plain(e) for e in x)
    return x


def _record(op, kwargs, fixed, elems):
    """The path the kernel takes at one element, or ``None`` when it cannot be recorded
    or replayed over arrays (then the elements run one by one)."""
    kernel = _bound(op, kwargs)
    free = [i for i, e in enumerate(elems) if e is not None]
    at_element = kernel if len(free) == len(elems) else _with_fixed(kernel, fixed, len(elems))
    try:
        tape = record_tape(at_element, *[float(elems[i]) for i in free])
    except Exception:  # the kernel's own error, or no rule: the plain run will say which
        return None
    return Path.compile(tape, free)


def _with_fixed(kernel, fixed, nargs):
    """``kernel`` with the excluded arguments ``fixed`` (position -> value) filled in:
    a function of the others only (generated: no call on the recorded values, which
    the tape would take for decisions)."""
    env = {"kernel": kernel}
    params, call = [], []
    for i in range(nargs):
        if i in fixed:
            env["c%d" % i] = fixed[i]
            call.append("c%d" % i)
        else:
            params.append("x%d" % i)
            call.append("x%d" % i)
    exec("def at_element(%s):\n    return kernel(%s)" % (", ".join(params), ", ".join(call)), env)
    return env["at_element"]


# ----------------------------------------------------------------------------- replay
class Path:
    """One recorded control path, replayed over arrays: ``steps[n]`` is
    ``(kind, array function, partials, parents, constants, expected)``."""

    def __init__(self, steps, out, out_const):
        self.steps, self.out, self.out_const = steps, out, out_const
        self.fresh = True

    @classmethod
    def compile(cls, tape, free):
        """The path of a recorded ``tape`` whose inputs are the arguments at positions
        ``free``; ``None`` when a step has no array form (then its elements run one by
        one)."""
        steps = []
        slot = iter(free)
        for rec in tape.records:
            if rec.kind == INPUT:
                steps.append((INPUT, next(slot), None, (), (), None))
                continue
            if any(type(p) is list for p in rec.parents) or rec.kwargs:
                return None
            if rec.kind == RULE:
                entry = ARRAY_FORMS.get(rec.f)
                if entry is None and type(rec.f) is np.ufunc and rec.f in registry.PARTIALS:
                    entry = (rec.f, registry.PARTIALS[rec.f])  # (NumPy's functions on scalars)
                if entry is None:
                    return None
                steps.append((RULE, entry[0], entry[1], tuple(rec.parents), tuple(rec.vals), None))
            elif rec.kind == GUARD:
                check = ARRAY_CHECKS.get(rec.f)
                if check is None or type(rec.ans) is Raised or len(rec.parents) != len(rec.vals) or (
                        rec.f is round and len(rec.vals) != 1):  # (round(x, n): decimal, not NumPy's)
                    return None
                steps.append((GUARD, check, None, tuple(rec.parents), tuple(rec.vals), rec.ans))
            else:
                return None
        if len(tape.out_nodes) != 1:
            return None
        out, const = tape.out_nodes[0], tape.out_consts[0]
        if out is None and (isinstance(const, bool) or not isinstance(const, (int, float))):
            return None
        return cls(steps, out, const)

    def _forward(self, inputs, guards):
        """Every step's value over the arrays ``inputs``; with ``guards``, also which
        elements follow the recorded decisions and which stay finite."""
        vals = [None] * len(self.steps)
        follows = True
        finite = True
        for n, (kind, f, _, parents, consts, expected) in enumerate(self.steps):
            if kind == INPUT:
                vals[n] = inputs[f]
                continue
            args = [c if p is None else vals[p] for p, c in zip(parents, consts)]
            if kind == RULE:
                vals[n] = r = f(*args)
                if guards and f not in _AS_PYTHON:
                    finite = finite & np.isfinite(r)
            elif guards:
                follows = follows & (f(*args) == expected)
        return vals, follows, finite

    def check(self, inputs, count):
        """``(follows, finite, values)`` on plain arrays: which elements take this path,
        which stay finite along it, and the values."""
        with np.errstate(all="ignore"):
            vals, follows, finite = self._forward(inputs, True)
        value = self.out_const if self.out is None else vals[self.out]
        follows = np.broadcast_to(follows, (count,))
        finite = np.broadcast_to(finite, (count,))
        return follows, finite, value

    def sweep(self, inputs, lives=None):
        """The value and the partials wrt each input: the replay, then a reverse sweep
        with the rule table's partial derivatives (``lives``: as ``_value_and_partials``')."""
        with np.errstate(divide="ignore", invalid="ignore"):  # (as the kernel's scalar rules:
            return self._sweep(inputs, lives)                # an infinite partial, no warning)

    def _sweep(self, inputs, lives=None):
        """(The body of :meth:`sweep`.)"""
        vals, _, _ = self._forward(inputs, False)
        if self.out is None:  # (a constant along this path: its zero partials hold)
            if lives is not None:
                lives.extend([False] * len(inputs))
            return float(self.out_const), [0.0] * len(inputs)
        cts = [None] * len(self.steps)
        cts[self.out] = 1.0
        # per element, whether the cotangent is not a zero that holds near the point (a
        # constant factor's): such a zero wins over an infinite partial, a value's zero
        # (cos's slope at 0) does not -- NaN, as a scalar run's reverse sweep gives
        live = [None] * len(self.steps)
        live[self.out] = True
        for n in range(self.out, -1, -1):
            g = cts[n]
            kind, form, partials, parents, consts, _ = self.steps[n]
            if g is None or kind != RULE:
                continue
            args = [c if p is None else vals[p] for p, c in zip(parents, consts)]
            kinks = _KINKS.get(form)
            for i, p in enumerate(parents):
                if p is None or i >= len(partials) or partials[i] is None:
                    continue
                d = partials[i](vals[n], *args)
                if type(g) is float and g == 1.0:
                    c = d
                else:
                    c = strong_mul(g, d)
                    undefined = (np.equal(g, 0) & live[n]) & ~np.isfinite(d)
                    if np.any(undefined):
                        c = np.where(undefined, np.nan, c)
                if kinks is not None and any(nesting.varies(a) for a in args):  # (an enclosing
                    c = kink_rules.at_kink(c, kinks(i, vals[n], *args), g, *args)  # differentiation: see kink_rules)
                held = live[n] & ~np.equal(d, 0) if registry.zeros_hold(form, i, parents) else live[n]
                cts[p] = c if cts[p] is None else cts[p] + c
                live[p] = held if live[p] is None else live[p] | held
        out = [0.0] * len(inputs)
        found = [None] * len(inputs)
        for n, (kind, i, *_) in enumerate(self.steps):
            if kind == INPUT:
                out[i] = 0.0 if cts[n] is None else cts[n]
                if cts[n] is not None and live[n] is not None:
                    found[i] = live[n] if found[i] is None else found[i] | live[n]
                elif cts[n] is None:
                    found[i] = False
        if lives is not None:
            lives.extend(found)
        value = vals[self.out]
        if self.steps[self.out][0] == INPUT:  # (the kernel returns its argument: a new array,
            value = value * 1.0               # not a view of the caller's)
        return value, out


def _log(x, base=math.e):
    """``math.log(x, base)`` over arrays."""
    return np.log(x) / np.log(base) if base != math.e else np.log(x)


def _abs_partial(ans, x):
    return operator_rules.sign(x)


#: array form -> where its partials are taken at a kink (``registry.KINKS``; ``abs`` too)
_KINKS = {**registry.KINKS, np.abs: kink_rules.at_zero}


def _array_forms():
    """Recorded function -> (its array form, the partials of the array form)."""
    forms = {}
    for f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod,
              operator.neg, operator.pos, pow):
        forms[f] = (f, registry.PARTIALS[f])
    for f, plain in INPLACE.items():  # (y += t on a float: on arrays it would overwrite a
        if plain in forms:             # value the sweep still needs, so the plain operator)
            forms[f] = forms[plain]
    forms[float] = (operator.pos, registry.PARTIALS[operator.pos])
    forms[abs] = forms[operator.abs] = forms[np.abs] = (np.abs, (_abs_partial,))
    forms[math.log] = (_log, registry.PARTIALS[math.log])
    names = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
             "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}
    for name in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
                 "acosh", "atanh", "exp", "expm1", "log1p", "log2", "log10", "sqrt", "fabs",
                 "atan2", "pow", "copysign", "degrees", "radians", "cbrt", "exp2"):
        f, g = getattr(math, name, None), getattr(np, names.get(name, name))
        if f is not None and g in registry.PARTIALS:
            forms[f] = (g, registry.PARTIALS[g])
    forms[math.hypot] = (np.hypot, registry.PARTIALS[np.hypot])  # (two arguments: else no array form)
    try:
        from scipy import special
    except ImportError:  # pragma: no cover - scipy is a test dependency
        special = None
    for name in ("erf", "erfc"):
        if special is not None and getattr(special, name) in registry.PARTIALS:
            forms[getattr(math, name)] = (getattr(special, name), registry.PARTIALS[getattr(special, name)])
    return forms


#: array forms that leave the finite numbers exactly where Python's float operation does
#: (overflow to inf, NaN in, NaN out); after the others (math functions, division,
#: powers) a non-finite element may be one where the kernel raises or differs: it runs alone
_AS_PYTHON = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, np.abs}

#: the guards' array forms: each gives, per element, what the recorded decision saw
ARRAY_CHECKS = {operator.lt: operator.lt, operator.le: operator.le, operator.gt: operator.gt,
                operator.ge: operator.ge, operator.eq: operator.eq, operator.ne: operator.ne,
                bool: lambda x: x != 0, operator.truth: lambda x: x != 0,
                operator.not_: lambda x: x == 0, int: np.trunc, operator.index: np.trunc,
                round: np.round, math.floor: np.floor, math.ceil: np.ceil, math.trunc: np.trunc,
                math.isnan: np.isnan, math.isinf: np.isinf, math.isfinite: np.isfinite,
                operator.floordiv: np.floor_divide}
ARRAY_FORMS = _array_forms()


# ----------------------------------------------------------------------------- purity
@opaque
def _check_call(op, args, kwargs):
    """Inside a differentiation, before the arguments lose their tags: the kernel reads
    no differentiated value on the side, and none is passed where it cannot carry its
    derivative (an excluded argument, a keyword argument)."""
    _check_pure(op)
    active = [c for c in thread_state().contexts if c is not None]
    for i, a in enumerate(args):
        if i in op.excluded and _differentiated(a, active, 0):
            raise TypeError("capstan.elementwise(%s): argument %d is excluded from broadcasting "
                            "and cannot carry a derivative" % (_name(op.kernel), i))
    for name, v in kwargs.items():
        if _differentiated(v, active, 0):
            raise TypeError("capstan.elementwise(%s): pass the differentiated value %s= "
                            "positionally (keyword arguments are passed through whole)"
                            % (_name(op.kernel), name))


def _check_pure(op):
    """Refuse a kernel that reads a value being differentiated from a closure cell, a
    default or a global: the replay would use it as a constant and drop its derivative."""
    kernel = op.kernel
    seen = []
    while True:
        if isinstance(kernel, functools.partial):
            seen += [("an argument bound by functools.partial", v)
                     for v in (*kernel.args, *kernel.keywords.values())]
            kernel = kernel.func
        elif type(kernel) is types.MethodType:
            seen.append(("its object", kernel.__self__))
            kernel = kernel.__func__
        else:
            break
    if type(kernel) is types.FunctionType:
        code = kernel.__code__
        for name, cell in zip(code.co_freevars, kernel.__closure__ or ()):
            try:
                seen.append(("the closure variable %r" % name, cell.cell_contents))
            except ValueError:  # (an empty cell)
                pass
        seen += [("a default argument", v) for v in kernel.__defaults__ or ()]
        seen += [("a default argument", v) for v in (kernel.__kwdefaults__ or {}).values()]
        names = _GLOBAL_NAMES.get(code)
        if names is None:
            found = set()
            _global_names(code, found)
            names = _GLOBAL_NAMES[code] = sorted(found)
        g = kernel.__globals__
        seen += [("the global %r" % n, g[n]) for n in names if n in g]
    active = [c for c in thread_state().contexts if c is not None]
    for what, value in seen:
        if _differentiated(value, active, 0):
            raise TypeError("capstan.elementwise: the kernel %s reads %s, which holds a value "
                            "being differentiated; pass it to the kernel as an argument instead "
                            "(its derivative would be lost)" % (_name(op.kernel), what))


_GLOBAL_NAMES: Any = weakref.WeakKeyDictionary()  # code object -> the global names it (and its inner code) reads


def _global_names(code, names):
    names.update(code.co_names)
    for c in code.co_consts:
        if type(c) is types.CodeType:
            _global_names(c, names)


def _differentiated(x, active, depth):
    tx = type(x)
    if tx is Tagged:
        return any(tag_of(x) is c._tagkey for c in active) or any(
            type(v) is Tagged and any(tag_of(v) is c._tagkey for c in active) for v in (value_of(x),))
    if tx is np.ndarray:
        return any(c.shadows and c.shadow(x) is not None for c in active)
    if depth < 4 and (tx is list or tx is tuple):
        return any(_differentiated(e, active, depth + 1) for e in x[:1000])
    if depth < 4 and tx is dict:
        return any(_differentiated(e, active, depth + 1) for e in list(x.values())[:1000])
    return False


# ----------------------------------------------------------------------------- np.vectorize, np.frompyfunc
_FOR_KERNEL: Any = weakref.WeakKeyDictionary()  # kernel -> {excluded: Elementwise} (recorded paths kept)
_FOR_BUILTIN: dict[Any, Any] = {}  # the same for kernels without weak references (builtins: they live on)
_BY_CODE: Any = weakref.WeakKeyDictionary()  # code -> {(excluded, fingerprint): Elementwise}


def _for_kernel(kernel, excluded=frozenset()):
    """The :class:`Elementwise` that ``np.vectorize(kernel)`` and ``np.frompyfunc(kernel,
    ...)`` use: one per kernel, so that its paths are recorded once, not once per call of
    ``np.vectorize``."""
    if type(kernel) is types.FunctionType:  # (a lambda made anew on each call shares its
        fingerprint = _fingerprint(kernel, 0)  # paths with the last one: same code, same values)
        if fingerprint is not _UNCACHABLE:
            table = _BY_CODE.setdefault(kernel.__code__, {})
            op = table.get((excluded, fingerprint))
            if op is None:
                if len(table) >= _KEYS_KEPT:
                    table.clear()
                op = table[excluded, fingerprint] = Elementwise(kernel, excluded)
            return op
    try:
        table = _FOR_KERNEL.setdefault(kernel, {})
    except TypeError:
        try:
            table = _FOR_BUILTIN.setdefault(kernel, {})
        except TypeError:  # (an unhashable callable: nothing kept)
            return Elementwise(kernel, excluded)
    op = table.get(excluded)
    if op is None:
        op = table[excluded] = Elementwise(kernel, excluded)
    return op
_FROMPYFUNC_LIMIT = 256  # ufuncs made by np.frompyfunc under differentiation that get a rule
_frompyfunc_made: list[Any] = []


def _vectorize_call(ctx, vec, /, *args, **kwargs):
    """``np.vectorize(kernel)(...)`` inside a differentiation: given differentiated
    values, :func:`elementwise` (the same recorded paths); else NumPy's own code."""
    if not ctx._differentiated(args, kwargs):
        return recurse(ctx, np.vectorize.__call__, vec, *args, **kwargs)
    name = "np.vectorize(%s)" % _name(vec.pyfunc)
    if vec.signature is not None:  # (a generalized ufunc: NumPy's own loop, routed)
        return recurse(ctx, np.vectorize.__call__, vec, *args, **kwargs)
    otype = None
    if _not_numbers(args, vec.excluded) or (vec.otypes and len(vec.otypes) > 1
                                            and {np.dtype(t).kind for t in vec.otypes} <= set("fc")):
        # (a bound method's object as an argument, SciPy's ``_drv2_ppfsingle``; several outputs)
        return _each_element_values(ctx, vec, args, kwargs)
    if vec.otypes:
        kinds = {np.dtype(t).kind for t in vec.otypes}
        if len(vec.otypes) == 1 and kinds <= set("biu"):
            # (no derivative follows such results; a Python kernel's own tests are checked,
            # a builtin's -- bool, int, math.isfinite -- are those of its rule or protocol)
            return _each_element(ctx, vec.pyfunc, args, kwargs, np.dtype(vec.otypes[0]), vec.excluded)
        if len(vec.otypes) != 1 or kinds != {"f"}:
            raise TypeError("capstan: %s with otypes=%r on differentiated arguments: only one "
                            "floating output type carries a derivative" % (name, vec.otypes))
        otype = np.dtype(vec.otypes[0])
    elif not vec.excluded and not kwargs and not _for_kernel(vec.pyfunc).paths:
        # (a kernel with recorded paths gives floats; Python's or a builtin -- bool, int)
        first = _first_result(ctx, vec.pyfunc, args)  # (NumPy, too, calls it on the first elements
        if type(first) is tuple:  # to choose the output type): several results (truncnorm's stats)
            return _each_element_values(ctx, vec, args, kwargs)
        if first is not None:  # a bool, int or text kernel
            return _each_element(ctx, vec.pyfunc, args, kwargs, np.asarray(first).dtype, ())
    for key, v in kwargs.items():
        if key in vec.excluded:
            continue
        if ctx._differentiated((v,), {}) or np.ndim(_plain(v)):
            raise TypeError("capstan: %s: pass the array %s= positionally (or exclude it) when "
                            "differentiating" % (name, key))
    op = _for_kernel(vec.pyfunc, frozenset(i for i in vec.excluded if type(i) is int))
    out = overdub(ctx, op, *args, **kwargs)
    if otype is not None and otype != np.float64:
        out = overdub(ctx, np.asarray, out, otype)
    return out


def _first_result(ctx, kernel, args):
    """The kernel's result at the first elements of ``args`` when it is a bool or an int (a
    value that carries no derivative); ``None`` otherwise (then :func:`elementwise` applies
    the kernel, which refuses text) or where there is no first element."""
    shape = np.broadcast_shapes(*[np.shape(_plain(a)) for a in args])
    if 0 in shape:
        return None
    first = [overdub(ctx, _element_at, a, 0) for a in args]
    y = _call_kernel(ctx, kernel, first, {})
    if type(y) is not Tagged and isinstance(y, (bool, np.bool_, int, np.integer)) or type(y) is tuple:
        return y
    return None


def _not_numbers(args, excluded):
    """Whether an argument ``np.vectorize`` spreads is not a number or an array of numbers
    (an object it hands to every call, as a bound method's ``self``)."""
    for i, a in enumerate(args):
        if i not in excluded and np.asarray(_plain(a)).dtype.kind not in "biufc":
            return True
    return False


def _each_element_values(ctx, vec, args, kwargs):
    """``np.vectorize(kernel)(*args)`` as NumPy computes it, the kernel run on each element
    inside the differentiation and its results (several, for a kernel returning a tuple)
    gathered into arrays by routed calls, so their derivatives follow: for kernels
    :func:`elementwise` does not take (arguments that are objects, several outputs)."""
    if kwargs:
        raise TypeError("capstan: np.vectorize(%s)(..., %s=...) on differentiated values has no rule; "
                        "pass the arguments positionally" % (_name(vec.pyfunc), next(iter(kwargs))))
    kernel, excluded = vec.pyfunc, vec.excluded
    spread = [i for i in range(len(args)) if i not in excluded and np.ndim(_plain(args[i]))]
    shape = np.broadcast_shapes(*[np.shape(_plain(args[i])) for i in spread]) if spread else ()
    size = int(np.prod(shape)) if shape else 1
    if size == 0:
        return recurse(ctx, np.vectorize.__call__, vec, *args)
    flat = list(args)
    for i in spread:
        flat[i] = overdub(ctx, np.ravel, overdub(ctx, np.broadcast_to, args[i], shape))
    results = []
    for k in range(size):
        elems = [overdub(ctx, operator.getitem, flat[i], k) if i in spread else flat[i] for i in range(len(args))]
        results.append(_call_kernel(ctx, kernel, elems, {}))
    several = type(results[0]) is tuple
    columns = list(zip(*results)) if several else [results]
    outs = []
    for j, column in enumerate(columns):
        arr = overdub(ctx, np.array, list(column))
        if vec.otypes:
            arr = overdub(ctx, np.asarray, arr, np.dtype(vec.otypes[j]))
        outs.append(overdub(ctx, np.reshape, arr, shape))
    return tuple(outs) if several else outs[0]


def _element_at(a, k):
    """Element ``k`` of ``a`` flattened, as ``np.vectorize`` hands it to its kernel."""
    return np.ravel(a)[k] if np.ndim(a) else a


def _each_element(ctx, kernel, args, kwargs, dtype, excluded):
    """``np.vectorize(kernel)(*args)`` for a kernel whose results carry no derivative (bools,
    ints): the kernel run on each element inside the differentiation -- so a test it
    makes of a differentiated value is checked as anywhere else -- and its results made into
    an array of ``dtype``."""
    spread = [i for i in range(len(args)) if i not in excluded]
    shape = np.broadcast_shapes(*[np.shape(_plain(args[i])) for i in spread])
    flat = list(args)
    for i in spread:
        flat[i] = overdub(ctx, np.ravel, overdub(ctx, np.broadcast_to, args[i], shape)) if shape else args[i]
    size = int(np.prod(shape)) if shape else 1
    out = []
    for k in range(size):
        elems = [overdub(ctx, operator.getitem, flat[i], k) if i in spread and shape else flat[i]
                 for i in range(len(args))]
        y = _call_kernel(ctx, kernel, elems, kwargs)
        if type(y) is Tagged:  # (a differentiated number made an int or bool by otypes: refused)
            raise TypeError("capstan: np.vectorize(%s) with otypes=%r on differentiated arguments: "
                            "only one floating output type carries a derivative"
                            % (_name(kernel), [dtype.char]))
        out.append(y)
    return np.array(out, dtype=dtype).reshape(shape)


def _call_kernel(ctx, kernel, elems, kwargs):
    """``kernel(*elems, **kwargs)`` routed: its body's tests of differentiated values are
    checked as anywhere in the program (a builtin kernel's too: ``bool`` of a differentiated
    zero is the user's test, made from here)."""
    return overdub(ctx, kernel, *elems, **kwargs)


losses.ON_USERS_BEHALF.add(_call_kernel.__code__)


def _vectorize_init(ctx, vec, /, *args, **kwargs):
    """``np.vectorize(kernel, ...)`` made inside a differentiation: NumPy's constructor
    run plainly (it only stores its options; routing it cost more than the kernel)."""
    if ctx._differentiated(args, kwargs):
        return recurse(ctx, np.vectorize.__init__, vec, *args, **kwargs)
    return np.vectorize.__init__(vec, *args, **kwargs)


def _frompyfunc(ctx, func, /, nin, nout, **kwargs):
    """``np.frompyfunc(kernel, nin, 1)`` made inside a differentiation: the ufunc NumPy
    makes, given a rule that applies the kernel by :func:`elementwise` to differentiated
    values (a float array in place of NumPy's array of objects)."""
    ufunc = np.frompyfunc(func, nin, nout, **kwargs)
    if nout == 1 and len(_frompyfunc_made) < _FROMPYFUNC_LIMIT:
        op = _for_kernel(func)

        def apply_kernel(*args, **kw):
            if kw:
                raise TypeError("capstan: np.frompyfunc(%s, ...)(..., %s=...) on differentiated "
                                "values has no rule; call it with the arguments only"
                                % (_name(func), next(iter(kw))))
            return op(*args)

        defimpl(ufunc, apply_kernel)
        _frompyfunc_made.append(ufunc)
    return ufunc


for _method, _target in ((_vectorize_call, np.vectorize.__call__), (_vectorize_init, np.vectorize.__init__),
                         (_frompyfunc, np.frompyfunc)):
    setattr(ADContext, "_mixed_" + _method.__name__, primitive(_target)(_method))
