"""Forward mode: values tagged with their tangents (dual numbers as overdub tags).

``D(f, x)`` runs ``f`` inside a fresh :class:`ForwardCtx`, with ``x`` tagged by
tangent 1.  Each call with a rule computes the plain result and its tangent from
the rule table; everything else runs as it would.  Every differentiation gets its
own tag identity, so nested ``D`` calls never confuse their perturbations: an
enclosing differentiation's values are foreign to the inner one and reach it only
through the enclosing context (rules applied to them run inside that context).

Jacobians use *chunks*: a tagged value carries a block of N tangents (a leading
axis of size N, like ForwardDiff's ``Dual{N}``), so an n-input Jacobian costs
``ceil(n / N)`` runs of ``f``.
"""
import cmath
import math
import numbers
from functools import partial
import operator
from types import FunctionType
from typing import Any, Callable

import numpy as np

from overdub import Tagged, overdub, primitive, tag
from overdub._native import NOT_RUN, capstan_native
from overdub.tagging import context_of, metadata_of, tag_each, tag_of, value_of

from . import checks, fastpaths, losses, structure
from .adcontext import _plain_tree, without_finished_tags
from .adcontext import (_QUIET_EMPTY, DIRECT, INPLACE, SINGULAR, ADContext, call_partial, call_partial_at,
                        general_call, kinked, out_argument, plain_call, product, raw, singular_partial)
from .fpstate import quiet
from .losses import no_rule
from .aliasing import region, returned_argument, root_of
from .assembly import as_array, as_complex, copied, forward_jacobian_from, seed_tangent, spread_tangent
from .nesting import enclosing, route
from .pool import differentiating, quiet_reset, run_at
from .rules import registry

_PARTIALS, _JVP, _ONLY_FIRST, _KINKS = registry.PARTIALS, registry.JVP, registry.ONLY_FIRST, registry.KINKS
_F64 = np.float64
_DOUBLE = np.dtype(np.float64)


class ForwardCtx(ADContext):
    """Forward-mode differentiation context; ``chunk=N`` for blocks of N tangents."""

    __slots__ = ("chunk",)  # (read by every D's end, in C: see ADContext.__slots__)
    mode = "forward"

    def __init__(self, chunk: int | None = None) -> None:
        super().__init__()
        self.chunk = chunk

    @quiet_reset(none=("decisions", "chunk"), empty=_QUIET_EMPTY)
    def reset(self):
        ADContext.reset(self)  # (not super(): this runs at the end of every D)
        self.chunk = None

    # -- reading tangents -------------------------------------------------------------------
    tangent = ADContext.meta

    def equality_held(self, f, vals, tans, where):
        """Refused where the compared values' tangents differ: the equality holds at this
        point only, and a branch on it may not be the function's derivative."""
        if losses.tangents_differ(where, vals, tans, self.chunk):
            raise losses.refuse(self, losses.point_branch(f, self.mode))

    def apply(self, f, args, kwargs):
        """``ADContext.apply``; a call of a function with a rule on this run's values (floats
        and float64 arrays, their tangents not an enclosing differentiation's) and plain
        numbers and arrays, without keywords, goes straight to ``compute``: ``apply``'s
        questions are answered alike for all such calls (as ``ReverseCtx.apply``)."""
        if general_call(f, args, kwargs, _JVP):
            return ADContext.apply(self, f, args, kwargs)
        key = self._tagkey
        vals = []
        tans = []
        found = False
        for a in args:
            ta = type(a)
            if ta is Tagged:
                v = value_of(a)
                tv = type(v)
                t = metadata_of(a)
                tt = type(t)
                if (tag_of(a) is not key
                        or not (tv is float or tv is _F64 or (tv is np.ndarray and v.dtype is _DOUBLE))
                        or not (tt is float or tt is _F64 or tt is np.ndarray)):
                    return ADContext.apply(self, f, args, kwargs)
                vals.append(v)
                tans.append(t)
                found = True
            elif ta is float or ta is int or ta is _F64 or (ta is np.ndarray and not self.shadows and not self.outside):
                vals.append(a)
                tans.append(None)
            else:
                return ADContext.apply(self, f, args, kwargs)
        if not found:
            return ADContext.apply(self, f, args, kwargs)
        return self.compute(f, vals, tans, kwargs, args, plain_call, None)

    def compute(self, f, vals, tans, kwargs, args, run, foreign):
        """The result of ``f`` and its tangent from the rule table."""
        if f in INPLACE and type(raw(vals[0])) is np.ndarray:  # a += b: computed aside, then written
            ans = run(INPLACE[f], *vals)
            if not np.can_cast(np.result_type(raw(ans)), raw(vals[0]).dtype, "same_kind"):
                run(f, vals[0].copy(), *vals[1:])  # NumPy's own casting error
        else:
            ans = f(*vals, **kwargs) if run is plain_call else run(f, *vals, **kwargs)
            ta = type(ans)
            if ta is not float and ta is not np.ndarray and isinstance(raw(ans), np.ma.MaskedArray):
                raise losses.refuse(self, losses.masked_array(f, self.mode))  # (x * masked)
            if (ta is np.ndarray or ta is Tagged) and out_argument(kwargs) is None:
                same = returned_argument(ans, vals, tans)  # (Tagged: an enclosing one returned it)
                if same is not None:  # np.asarray(a), np.real(a) of a real a: a itself
                    return args[same]
        with quiet():  # (the tangent's arithmetic: see fpstate)
            return self._tangent_result(f, ans, vals, tans, kwargs, args, run)

    def _tangent_result(self, f, ans, vals, tans, kwargs, args, run):
        """``compute``'s second half: the tangent of ``ans`` from the rule table, fitted to it,
        and the result (run with NumPy's floating-point errors ignored)."""
        if any(type(ti) is list for ti in tans) and _takes_arrays(f):
            vals, tans = list(vals), list(tans)
            for i, ti in enumerate(tans):
                if type(ti) is list:
                    vals[i], tans[i] = _as_array_argument(vals[i], ti, self.chunk, run)
        partials = _PARTIALS.get(f)
        if partials is not None and run is plain_call and self.chunk is None:
            t = self._plain_tangent(f, partials, ans, vals, tans, kwargs)
            if f in COMBINED and len(tans) > 1 and tans[0] is not None and tans[1] is not None and _has_nan(t):
                t = COMBINED[f](t, tans, ans, *vals)
        elif partials is not None:
            t = None
            for i, ti in enumerate(tans):
                if ti is None or i >= len(partials) or partials[i] is None:
                    if ti is not None and i >= len(partials):  # (an argument the rule does not cover)
                        raise losses.refuse(self, losses.no_argument_rule(f, i, self.mode))
                    continue
                if self.chunk is not None:
                    ti = _align(ti, vals[i], ans, run)
                if run is plain_call:  # (call_partial_at's and product's steps for a plain run)
                    try:
                        p = partials[i](ans, *vals, **kwargs)
                    except SINGULAR as exc:
                        p = singular_partial(partials[i], f, (ans, *vals), kwargs, exc)
                else:
                    p = call_partial_at(run, partials[i], f, ans, *vals, **kwargs)
                exact = registry.strong_mul if registry.zeros_hold(f, i, tans) else registry.tangent_product
                if type(ti) is Tagged and run is not plain_call:  # (a tangent of an enclosing run's
                    # values: its zero holds at the point alone, and does not win over an infinite partial)
                    exact = registry.zero_of_first_wins if exact is registry.strong_mul else registry.no_zero_wins
                if type(p) is float and p == 1.0:
                    d = ti
                else:
                    d = exact(p, ti) if run is plain_call else product(run, p, ti, exact)
                if f in _KINKS:
                    d = kinked(run, f, i, d, ti, ans, vals, kwargs)
                t = d if t is None else run(operator.add, t, d)
            if f in COMBINED and len(tans) > 1 and tans[0] is not None and tans[1] is not None and _has_nan(t):
                t = run(COMBINED[f], t, tans, ans, *vals)
        else:
            entry = _JVP.get(f)
            if entry is None:
                raise losses.refuse(self, no_rule(f, "forward"))
            if f in _ONLY_FIRST:
                for i in range(1, len(tans)):
                    if tans[i] is not None:  # (an argument the rule does not cover)
                        raise losses.refuse(self, losses.no_argument_rule(f, i, self.mode))
            rule, batched = entry
            if self.chunk is None or batched:
                t = call_partial(run, rule, tuple(tans), ans, *vals, **kwargs)
            else:
                t = _stack([run(rule, tuple(_slice(x, k) for x in tans), ans, *vals, **kwargs)
                            for k in range(self.chunk)], ans)
        ta = type(ans)
        if t is None or ta is float:
            pass
        elif ta is np.ndarray and ans.dtype is _DOUBLE:  # (the commonest result: its tangent fits
            if not (type(t) is np.ndarray and t.dtype is _DOUBLE and t.shape == ans.shape  # already)
                    and self.chunk is None):
                t = self._fitted(t, ans, run)
            if type(t) is np.ndarray and any(t is ti for ti in tans) and not any(ans is raw(v) for v in vals):
                t = t.copy()  # (as below)
        elif _integral(ans):  # np.sum(a, dtype=int), np.cumprod(a, dtype=int)...:
            t = None  # an integer result is a step function of the input (reverse mode agrees)
        else:
            t = self._fitted(t, ans, run)
            if type(t) is np.ndarray and type(ans) is np.ndarray and any(t is ti for ti in tans) and not any(
                    ans is raw(v) for v in vals):  # a new array (astype(copy=True)...): its own tangent,
                t = t.copy()  # which a later write into it must not write into its argument's
        return self._result(f, ans, t, args, out_argument(kwargs))

    def _plain_tangent(self, f, partials, ans, vals, tans, kwargs):
        """``compute``'s tangent from the partials for plain values: the sum of each partial
        times its tangent.  Where that sum is finite, so is every product in it, and the
        exact products (``registry.strong_mul`` / ``tangent_product``, whose zeros win only
        over a non-finite factor) are those same products: they are made one by one, and
        summed again, only where the sum is not finite."""
        terms = []
        for i, ti in enumerate(tans):
            if ti is None or i >= len(partials) or partials[i] is None:
                if ti is not None and i >= len(partials):  # (an argument the rule does not cover)
                    raise losses.refuse(self, losses.no_argument_rule(f, i, self.mode))
                continue
            try:
                p = partials[i](ans, *vals, **kwargs)
            except SINGULAR as exc:
                p = singular_partial(partials[i], f, (ans, *vals), kwargs, exc)
            terms.append((i, p, ti))
        t = None
        for i, p, ti in terms:
            d = ti if type(p) is float and p == 1.0 else p * ti
            t = d if t is None else t + d
        tt = type(t)
        if t is None:
            return t
        if tt is float or tt is _F64:
            if math.isfinite(t):
                return t
        elif tt is complex or tt is np.complex128:
            if cmath.isfinite(t):
                return t
        elif tt is np.ndarray and t.dtype.kind in "fc" and registry._all_finite(t):
            return t
        t = None
        for i, p, ti in terms:
            exact = registry.strong_mul if registry.zeros_hold(f, i, tans) else registry.tangent_product
            d = ti if type(p) is float and p == 1.0 else exact(p, ti)
            t = d if t is None else t + d
        return t

    def _fitted(self, t, ans, run):
        """Tangent ``t`` made to match the array ``ans`` it belongs to: broadcast to its
        shape (a constant partial times a scalar tangent, ``x + c``), of its dtype (float32
        in, float32 out; a complex result gets a complex tangent)."""
        a = raw(ans)
        if type(a) is not np.ndarray or a.dtype.kind not in "fc":
            return t
        rt = raw(t)
        shape = a.shape if self.chunk is None else (self.chunk,) + a.shape
        if type(rt) is np.ndarray and rt.shape == shape and rt.dtype == a.dtype:
            return t
        if np.iscomplexobj(rt) and a.dtype.kind != "c":
            return t  # (a real result's tangent is never made real silently)
        return run(spread_tangent, t, shape, a.dtype)

    def _result(self, f, ans, t, args, out=None):
        if f in INPLACE and type(raw(args[0])) is np.ndarray:  # a += b on an array: a write
            self.setitem(args[0], Ellipsis, ans if t is None else Tagged(ans, t, self))
            return args[0]
        if t is None:
            if isinstance(ans, (str, np.ndarray)) and losses.is_text(ans):  # (a.astype(str))
                losses.note_text(self, ans)
            return ans
        if out is not None and ans is out:  # np.exp(x, out=y): a write of the result into y
            self.setitem(out, Ellipsis, Tagged(ans, t, self))  # (y may be a view)
            return out
        return Tagged(ans, t, self)

    def view_meta(self, view, root, buf, foreign):
        """The tangent of a plain view of a shadowed array: its region of the root's buffer
        (refused where the view cannot be located in the root, not read as no tangent)."""
        t = region(buf, root, view)
        if t is None:
            raise TypeError("capstan: cannot follow a write through this view of a differentiated "
                            "array (dtype change or non-contiguous base); copy the array first")
        return t

    # -- subscripts and attributes ------------------------------------------------------------
    @primitive(operator.getitem, Tagged)
    @primitive(operator.getitem, np.ndarray)
    def getitem(self, c, k):
        if type(k) is int and type(c) is Tagged and tag_of(c) is self._tagkey:  # x[i]: hot in loops
            value, t = value_of(c), metadata_of(c)
            if (type(value) is np.ndarray and value.ndim == 1 and type(t) is np.ndarray
                    and t.shape == value.shape):
                return Tagged(value[k], t[k], self)
        ans, t, value, k, foreign = self.subscript(c, k)
        if t is None:
            return ans
        if type(t) is tuple or type(t) is list:  # a tuple-valued result (cmath.polar...)
            tk = t[k]
            return ans if tk is None else Tagged(ans, tk, self)
        tk = self.read(t, _lead(t, value) + _index(k), foreign)
        plain = raw(ans)  # (an enclosing differentiation's value wraps the view itself)
        if not (type(plain) is np.ndarray and plain.base is not None) and type(tk) is np.ndarray:
            tk = tk.copy()  # a view's tangent is a view; a copy's tangent a copy
        return Tagged(ans, tk, self)

    @primitive(operator.setitem, Tagged)
    @primitive(operator.setitem, np.ndarray)
    def setitem(self, c, k, v):
        value, foreign = self.unwrap(c)
        if type(k) is Tagged:
            k = self.unwrap(k)[0]
        tv = self.tangent(v)
        v, vforeign = self.unwrap(v)
        foreign = foreign or vforeign
        self.write(value, k, v, foreign)
        tc = self.tangent(c)
        if tc is None:
            if tv is None or self.plain_write(value, k):
                return None
            root = root_of(value)  # a plain array: its memory root gets the tangent buffer
            lead = () if self.chunk is None else (self.chunk,)
            dtype = np.result_type(root.dtype, np.asarray(raw(tv)).dtype)
            if dtype.kind == "c" and root.dtype.kind != "c":  # (real memory keeps the real part)
                dtype = np.finfo(dtype).dtype
            buf = np.zeros(lead + root.shape, dtype=dtype)
            self.shadows[id(root)] = (root, buf, foreign)
            tc = buf if root is value else region(buf, root, value)
            if tc is None:
                raise TypeError("capstan: cannot follow a write into this view (dtype change or "
                                "non-contiguous base); copy the array first")
        elif foreign is not None and not self.owns(c):
            entry = self.shadows.get(id(root_of(value)))
            if entry is not None:
                self.shadows[id(entry[0])] = (entry[0], entry[1], foreign)
        if tv is not None and raw(value).dtype.kind != "c" and np.iscomplexobj(raw(tv)):
            # complex values written into real memory: NumPy keeps their real part, and so
            # the tangent (it was kept complex in a new tangent buffer)
            tv = np.real(tv) if type(tv) is not Tagged else route(enclosing(tv), np.real, tv)
        if self.chunk is not None and tv is not None:  # align the block with the region written
            outer = enclosing(tv)
            tv = _align(tv, v, value[k], plain_call if outer is None else partial(overdub, outer))
        self.write(tc, _lead(tc, value) + _index(k), 0.0 if tv is None else tv,
                   foreign or (context_of(tv) if type(tv) is Tagged else None))
        return None

    # -- results ----------------------------------------------------------------------------
    def output_tangent(self, y, fname="jvp", inputs=()):
        """The tangent of an output (zeros where it does not depend on the input).  A NaN
        tangent of a finite value is refused (``losses.undefined_in_forward``) where the
        ``inputs`` (the point and the direction) are finite, which is asked only then."""
        if type(y) is Tagged and tag_of(y) is self._tagkey and type(value_of(y)) is float:
            t = metadata_of(y)  # (the commonest output: a float carrying its tangent)
            if type(t) is float and t == t:
                return t
        y = without_finished_tags(y)
        leaves, rebuild = structure.flatten(y)
        checks.no_object_arrays(leaves, fname)
        if len(leaves) == 1 and leaves[0] is y:  # (inside a structure, a string's tangent is None)
            checks.numeric_output(fname, leaves)
        out = []
        for leaf in leaves:
            t = self.tangent(leaf)
            if t is None:
                t = self._zero(leaf)
            elif np.iscomplexobj(raw(leaf)) and not np.iscomplexobj(raw(t)):
                t = route(enclosing(t), as_complex, t)  # a complex output's tangent is complex
            if t is not None and _nan_of_finite(t, leaf) and structure.all_finite(inputs):
                raise losses.undefined_in_forward(fname)
            out.append(t)
        return rebuild(out)

    def primal(self, y):
        leaves, rebuild = structure.flatten(without_finished_tags(y))
        return rebuild([value_of(leaf) if self.owns(leaf) else leaf for leaf in leaves])

    def _zero(self, leaf):
        if type(leaf) is Tagged:  # an enclosing differentiation's value: constant here
            leaf = value_of(leaf)
            while type(leaf) is Tagged:
                leaf = value_of(leaf)
        if structure.is_differentiable(leaf) or isinstance(leaf, (numbers.Number, np.ndarray)):
            z = structure.zeros_like(leaf)  # (an int output has derivative 0.0 too)
        else:
            return None  # strings, None...: no derivative at all
        if self.chunk is not None:
            z = np.zeros((self.chunk,) + np.shape(leaf), dtype=np.result_type(z))
        return z


fastpaths.install(ForwardCtx, "forward")
DIRECT.add(ForwardCtx)  # (its primitives for functions with rules hand them to apply)


def _integral(ans):
    """Whether ``ans`` is an integer or boolean (array): no derivative follows it."""
    a = raw(ans)
    ta = type(a)
    if ta is float or ta is complex:
        return False
    return (ta is np.ndarray and a.dtype.kind in "biu") or ta is int or ta is bool or isinstance(a, (np.integer, np.bool_))


def _takes_arrays(f):
    """Whether ``f`` reads a list or tuple argument as an array (NumPy's functions and
    ufuncs do: ``np.sin([1.0, x])``, ``np.reshape([1.0, x], ...)``)."""
    if type(f) is np.ufunc:
        return True
    module = getattr(f, "__module__", None)
    return type(module) is str and (module == "numpy" or module.startswith("numpy."))


def _as_array_argument(value, tangents, chunk, run):
    """``(value, tangent)`` of a list or tuple argument that NumPy reads as an array, as
    arrays: the elements' tangents (``None`` for constants, which get zeros) stacked after
    the chunk axis.  Left as they are when the elements do not form a regular numeric
    array (``np.concatenate`` of parts of different lengths)."""
    try:
        plain = np.asarray(_plain_tree(value))  # (elements may be lists: np.einsum's [[y, 1.0], row])
    except (ValueError, TypeError):
        return value, tangents
    if plain.dtype.kind not in "biufc" or plain.shape[:1] != (len(tangents),):
        return value, tangents
    dtype = np.result_type(plain.dtype, np.float64)
    lead = () if chunk is None else (chunk,)
    parts = [np.zeros(lead + plain.shape[1:], dtype) if t is None else t for t in tangents]
    if _holds_tagged(value):  # (values an enclosing differentiation carries)
        array = run(np.array, list(value))
    else:
        array = plain
    return array, run(np.stack, parts, axis=len(lead))


def _holds_tagged(seq):
    """Whether a list or tuple holds tagged values, in nested lists and tuples too (each
    looked into once, without recursion: a list may hold itself)."""
    pending, seen = [seq], {id(seq)}
    while pending:
        for v in pending.pop():
            tv = type(v)
            if tv is Tagged:
                return True
            if (tv is list or tv is tuple) and id(v) not in seen:
                seen.add(id(v))
                pending.append(v)
    return False


def _lead(t, value):
    """Index prefix selecting every chunk entry of tangent ``t`` of ``value``."""
    extra = np.ndim(raw(t)) - np.ndim(raw(value))  # (read on the plain values: an enclosing
    return (slice(None),) * extra if extra > 0 else ()  # differentiation's need not see it)


def _index(k):
    return k if type(k) is tuple else (k,)


def _align(t, value, ans, run):
    """Chunked tangent of ``value`` reshaped (by ``run``: routed into an enclosing
    differentiation that holds ``t``) to broadcast against ``ans``."""
    missing = np.ndim(raw(ans)) - np.ndim(raw(value))
    if missing <= 0:
        return t
    shape = np.shape(raw(t))
    return run(np.reshape, t, shape[:1] + (1,) * missing + shape[1:])


def _slice(t, k):
    if t is None:
        return None
    if type(t) is list:
        return [_slice(e, k) for e in t]
    return t[k]


def _stack(parts, ans):
    if all(p is None for p in parts):
        return None
    return np.stack([np.zeros(np.shape(ans)) if p is None else p for p in parts])


# ----------------------------------------------------------------------------- public API
_SUM = np.add.reduce


def _nan_of_finite(t, value):
    """Whether tangent ``t`` is NaN where its output ``value`` is finite (the chunk axis
    of a tangent in front)."""
    t, v = raw(t), raw(value)
    if type(t) is float or type(t) is complex:
        return t != t and structure.all_finite(v)
    if not isinstance(t, (np.ndarray, np.generic)) or t.dtype.kind not in "fc":
        return False
    total = _SUM(t, axis=None)  # (NaN when one is, or for inf - inf: then look closer)
    if total == total:
        return False
    nan = np.isnan(t)
    try:
        return bool(np.any(nan & np.isfinite(v)))
    except TypeError:  # (a value that is no number: nothing to say)
        return False


def _has_nan(t):
    v = raw(t)
    if type(v) is float:
        return v != v
    return isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "fc" and bool(np.isnan(v).any())


def _quotient_tangent(t, ts, ans, a, b):
    """The tangent of ``a / b`` where the sum over its partials came out NaN: ``1/b`` and
    ``a/b^2`` past the float range (a subnormal ``b``: ``x / x`` at 5e-324) give inf - inf;
    ``(ta - ans tb) / b`` combines the terms first."""
    with np.errstate(all="ignore"):
        combined = (ts[0] - registry.tangent_product(ans, ts[1])) / b
    return np.where(np.isnan(t), combined, t) if np.ndim(t) or np.ndim(combined) else (
        combined if t != t else t)


#: f -> tangent(t, tangents, ans, *args): the tangent where the partials' sum is NaN
COMBINED = {operator.truediv: _quotient_tangent, operator.itruediv: _quotient_tangent,
            np.divide: _quotient_tangent}


def _seed(x, fname):
    structure.check_leaf(x, fname)
    if isinstance(x, (bool, np.bool_)) or not structure.is_differentiable(x):
        if isinstance(x, (int, np.integer)):
            return float(x)
        raise TypeError("capstan.%s: cannot differentiate with respect to %r of type %s"
                        % (fname, x, type(x).__name__))
    return x


def _seeded(x, ctx, t):
    """``x`` tagged by ``ctx`` with tangent ``t`` (``overdub.tag``, whose checks a float
    handed to a context that tagged before does not need)."""
    if type(x) is float and ctx.__dict__.get("_has_tags"):
        return Tagged(x, t, ctx)
    return tag(x, ctx, t)


def D(f: Callable[..., Any], x: Any) -> Any:
    """Derivative of ``f`` at scalar ``x`` (real, or complex for holomorphic ``f``).

    Example::

        >>> import math, capstan
        >>> capstan.D(lambda x: x * math.sin(x), 0.0)
        0.0

    Raises:
        TypeError: ``f`` not callable; ``x`` cannot carry a derivative (``D(f, 3)``:
            pass ``3.0``) or is an array (use ``jvp`` or ``jacobian``).
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    if type(x) is float and x - x == 0 and type(f) is FunctionType and _forward_entry is not None:
        return _forward_entry(ForwardCtx, f, x)  # (the steps below, in C: the fixed cost of a run)
    if not callable(f):
        raise TypeError("capstan.D(f, x): f must be callable, got %r" % (f,))
    if type(x) is not float:  # (a float passes every check)
        checks.require_differentiable("D", (x,), "x cannot carry a derivative")
        x = _seed(x, "D")
        if isinstance(x, np.ndarray) and x.shape:
            raise TypeError("capstan.D(f, x): x must be a scalar; use jvp or jacobian for arrays")
    with differentiating(ForwardCtx) as ctx:
        x = Tagged(x, 1.0, ctx) if type(x) is float and ctx.__dict__.get("_has_tags") else _seeded(x, ctx, 1.0)
        y = run_at(ctx, f, x)
        if type(y) is Tagged and tag_of(y) is ctx._tagkey and type(value_of(y)) is float:
            t = metadata_of(y)  # (output_tangent's commonest case, inline: a float carrying its tangent)
            if type(t) is float and t == t:
                return t
        return ctx.output_tangent(y, "D", (x,))


if capstan_native is not None:
    capstan_native.setup_entry(_seeded, overdub, losses.check_finished, NOT_RUN)
    _forward_entry = capstan_native.forward_entry
else:
    _forward_entry = None


def jvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(f(*primals), directional derivative of f at primals along tangents)``.

    ``primals`` and ``tangents`` are tuples of matching structure: numbers, arrays and
    lists/tuples/dicts/dataclasses/namedtuples of them.  Integer inputs carry no
    tangent.

    Example::

        >>> import capstan
        >>> capstan.jvp(lambda a, b: a * b, (2.0, 3.0), (1.0, 0.0))
        (6.0, 3.0)

    Raises:
        TypeError: ``f`` not callable; ``primals``/``tangents`` not tuples; no primal
            can carry a derivative.
        ValueError: ``tangents`` does not match ``primals`` in structure or shapes.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return jvp_as("jvp", f, primals, tangents)


def jvp_as(fname: str, f: Callable[..., Any], primals: tuple[Any, ...],
           tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """:func:`jvp`, called by the entry point ``fname`` (``jacfwd``, ``hvp``...), whose name
    an error about ``f``'s output gives."""
    if type(primals) is tuple and type(tangents) is tuple and len(primals) == len(tangents) == 1 and callable(f):
        p, t = primals[0], tangents[0]  # (one float, or one list or tuple of floats: every check passes)
        if type(p) is float and type(t) is float:
            pair: tuple[Any, Any] = _jvp_at_float(f, p, t, fname)
            return pair
        if ((type(p) is list or type(p) is tuple) and type(t) is type(p) and 1 < len(p) == len(t)
                and structure.all_floats(p) and structure.all_floats(t)):
            pair = _jvp_at_floats(f, p, t, fname)
            return pair
    if not callable(f):
        raise TypeError("capstan.jvp(f, primals, tangents): f must be callable, got %r" % (f,))
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("capstan.jvp(f, primals, tangents): primals and tangents must be tuples, "
                        "got %s and %s" % (type(primals).__name__, type(tangents).__name__))
    checks.require_differentiable("jvp", primals, "no primal can carry a derivative")
    if len(primals) == len(tangents):
        tangents = structure.aligned(primals, tangents, "jvp", "tangents", "the primals")
    leaves, rebuild = structure.flatten(primals)
    tleaves, _ = structure.flatten(tangents)
    if len(leaves) != len(tleaves):
        raise ValueError("capstan.jvp: tangents must have the structure of primals (%d leaves "
                         "against %d)" % (len(tleaves), len(leaves)))
    with differentiating(ForwardCtx) as ctx:
        out: tuple[Any, Any] = _jvp(ctx, f, leaves, tleaves, rebuild, fname)
        return out


def _jvp_at_float(f, p, t, fname):
    """``jvp(f, (p,), (t,))`` for a float point and direction: ``_jvp`` with its common
    case inline (a float output carrying its tangent), which is the fixed cost of a run."""
    with differentiating(ForwardCtx) as ctx:
        x = Tagged(p, t, ctx) if ctx.__dict__.get("_has_tags") else _seeded(p, ctx, t)
        y = run_at(ctx, f, x)
        if type(y) is Tagged and tag_of(y) is ctx._tagkey and type(value_of(y)) is float:
            ty = metadata_of(y)
            if type(ty) is float and ty == ty:
                return value_of(y), ty
        return ctx.primal(y), ctx.output_tangent(y, fname, (p, t))


def _jvp_at_floats(f, p, t, fname):
    """``jvp(f, (p,), (t,))`` for a list or tuple of floats and a direction of floats: the
    point seeded in one step (a list of 100 floats is a common point)."""
    with differentiating(ForwardCtx) as ctx:
        seeded = [_seeded(p[0], ctx, t[0])]  # (tag's checks, once: the context then has tags)
        seeded += tag_each(list(p[1:]), list(t[1:]), ctx)
        y = overdub(ctx, f, seeded if type(p) is list else tuple(seeded))
        losses.check_finished(ctx)
        return ctx.primal(y), ctx.output_tangent(y, fname, (p, t))


def _seed_leaf(ctx, i, p, t):
    """Leaf ``i`` of a ``jvp`` point, ``p``, tagged by ``ctx`` with its direction ``t`` (a
    constant where ``t`` is None or ``p`` cannot carry a derivative)."""
    if type(p) is float and type(t) is float:  # (a float point, a float direction)
        return _seeded(p, ctx, t)
    if structure.is_differentiable(p) and t is not None:
        if np.shape(raw(t)) != np.shape(raw(p)):
            raise ValueError("capstan.jvp: tangent %d has shape %s, its primal %s"
                             % (i, np.shape(raw(t)), np.shape(raw(p))))
        if isinstance(p, np.ndarray):  # (a copy, made inside an enclosing differentiation)
            outer = enclosing(p, t)
            # (a plain direction's copy reads only the point's dtype: made outside)
            t = seed_tangent(raw(p), t) if enclosing(t) is None else route(outer, seed_tangent, p, t)
            if type(p) is np.ndarray and isinstance(outer, ADContext) and outer.shadow(p) is not None:
                p = route(outer, copied, p)  # a plain array holding the enclosing derivative
        p = tag(p, ctx, t)
    return p


def _jvp(ctx, f, leaves, tleaves, rebuild, fname="jvp"):
    seeded = [_seed_leaf(ctx, i, p, t) for i, (p, t) in enumerate(zip(leaves, tleaves))]
    y = overdub(ctx, f, *rebuild(seeded))
    losses.check_finished(ctx)
    return ctx.primal(y), ctx.output_tangent(y, fname, (leaves, tleaves))


def forward_jacobian(f: Callable[..., Any], x: Any, chunk: int | None = None, fname: str = "jacobian") -> Any:
    """Jacobian by forward mode, ``chunk`` input directions per run of ``f`` (``fname``: the
    user's entry point, which errors name)."""
    x = _seed(x, fname)
    outer = enclosing(x)
    xa = route(outer, as_array, x)
    shape = np.shape(xa)
    n = int(np.prod(shape))
    if chunk is None:
        chunk = max(n, 1) if n <= 128 else 64
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError("capstan.%s: chunk must be a positive int, got %r" % (fname, chunk))
    if not shape:
        with differentiating(ForwardCtx) as ctx:
            y = overdub(ctx, f, tag(x, ctx, 1.0))
            losses.check_finished(ctx)
            checks.check_single_output(y)
            t = ctx.output_tangent(y, fname, (x,))
        return route(enclosing(t), as_array, t)  # (t may carry an enclosing derivative: closures)
    blocks = []
    out_shape = None
    for start in range(0, max(n, 1), chunk):  # (an empty x: one run with no direction, for the shape)
        width = min(chunk, n - start)
        seed = np.zeros((width, n), dtype=raw(xa).dtype)
        seed[np.arange(width), start + np.arange(width)] = 1.0
        with differentiating(ForwardCtx) as ctx:
            ctx.chunk = width
            y = overdub(ctx, f, tag(route(outer, copied, xa), ctx, seed.reshape((width,) + shape)))
            losses.check_finished(ctx)
            t = ctx.output_tangent(y, fname, (xa,))
        checks.check_single_output(y)
        out_shape = np.shape(t)[1:]
        blocks.append(t)
    return route(enclosing(blocks), forward_jacobian_from, blocks, out_shape, shape)
