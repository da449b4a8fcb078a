"""Reverse mode: values tagged with their node on a tape, then a backward pass.

``pullback(f, *args)`` runs ``f`` inside a fresh :class:`ReverseCtx`.  Each call
with a rule computes its plain result and appends a :class:`Record` (function,
result, argument values, parent nodes) to the context's tape; the tagged result
carries the record's index.  ``back(dy)`` walks the tape backwards once, turning
each record's output cotangent into its inputs' with the reverse rule table.

Mutation is supported: ``a[i] = x`` into an array makes a new node for the array
(plain arrays are *shadowed*, see ``adcontext``), and before an array recorded on
the tape is overwritten, the records that read it get a snapshot of its old
contents -- so the backward pass always sees the values the forward pass used.
"""
import enum
import math
import operator
import weakref
from types import FunctionType
from typing import Any, Callable

import numpy as np

from overdub import Tagged, overdub, primitive, retag, tag
from overdub._native import capstan_native
from overdub.tracebacks import drop_own_frames
from overdub.tagging import context_of, metadata_of, tag_each, tag_of, value_of

from . import checks, fastpaths, losses, structure
from .adcontext import general_call, without_finished_tags
from .fastpaths import HELD_NEG_ZERO, HELD_ZERO
from .fpstate import quiet
from .adcontext import (_QUIET_EMPTY, _TRIVIAL, DIRECT, INPLACE, ADContext, SINGULAR, call_partial, call_partial_at, kinked,
                        conjugated, out_argument, plain_call, product, routed, singular_partial, summed_to, trivial)
from .losses import no_rule
from .adcontext import raw as untagged
from .aliasing import part, positions, returned_argument, root_of
from .assembly import as_array, copied, like_leaf, reverse_jacobian_from
from .markers import checkpoint, hook, hook_error, positional
from .nesting import enclosing, nestlevel, route
from .pool import borrowed, lent, quiet_reset, run_at, running
from .rules import registry
from .rules.indexing_rules import getitem_back, setitem_back

_PARTIALS, _VJP, _ONLY_FIRST, _KINKS = registry.PARTIALS, registry.VJP, registry.ONLY_FIRST, registry.KINKS
_SCATTERS = registry.SCATTERS
ADJOINTS: dict[Any, Any] = {}  # f -> user rule returning (y, pullback)


class Kind(enum.IntEnum):
    """What a tape :class:`Record` stands for, which decides what its fields hold.

    Every record's ``kind`` is one of these members, so the backward pass compares them by
    identity (``rec.kind is RULE``: an enum's ``==`` costs more than a plain int's).
    """

    INPUT = 0  # an input of the differentiation
    RULE = 1  # a call of a function with a derivative rule
    GETITEM = 2  # a read of part of an array
    SETITEM = 3  # a write into part of an array
    CUSTOM = 4  # a pullback given with the step: a user adjoint, a hook, a checkpoint
    GUARD = 5  # (record_tape's tapes only) a decision on a differentiated value


INPUT, RULE, GETITEM, SETITEM, CUSTOM, GUARD = Kind


class _RecordFields:
    """The fields of a :class:`Record`, in Python (the reference for the C ``RecordBase``)."""

    __slots__ = ("kind", "f", "ans", "vals", "kwargs", "parents", "foreign")

    def __init__(self, kind, f, ans, vals, kwargs, parents, foreign=None):
        self.kind, self.f, self.ans, self.vals = kind, f, ans, vals
        self.kwargs, self.parents, self.foreign = kwargs, parents, foreign


class Record(capstan_native.RecordBase if capstan_native is not None else _RecordFields):  # type: ignore[misc]
    """One step of the tape: how to send a cotangent of ``ans`` back to ``parents``.

    ``parents`` holds the nodes (tape positions) the step reads, ``None`` for a constant and a
    list of nodes for a list argument; ``foreign`` is the enclosing context whose tagged values
    the step's values are (nested differentiation), else ``None``. ``kind`` decides what the
    other fields hold (unused ones are ``None`` or ``()``):

    * INPUT: nothing (``ans`` is the new value in a kept tape's replay).
    * RULE: ``f`` the function called, ``ans`` its result, ``vals`` its arguments and
      ``kwargs`` its keyword arguments (a dict).
    * GETITEM, a read ``array[index]``: ``kwargs`` is ``(shape, dtype, index)``, the array's
      shape and dtype; ``parents`` is (the array read,).
    * SETITEM, a write ``array[index] = value``: ``kwargs`` is ``(shape, index, dtype)``, the
      value's shape and dtype; ``parents`` is (the array before the write, the value written);
      ``vals`` is (the value if it is a constant, the array's old contents if it was not
      tracked and the context keeps them), each else ``None``.
    * CUSTOM: ``f`` the pullback (a cotangent of ``ans`` -> one cotangent per parent), ``ans``
      the result; ``vals`` and ``kwargs`` a user adjoint's arguments, else ``()`` and ``None``.
    * GUARD (``record_tape``'s tapes): ``f`` the deciding call (``x > 0``, ``int(x)``), ``ans``
      its outcome (or a ``tape.Raised``), ``vals`` and ``kwargs`` its arguments.

    Besides records, the tape holds plain tuples ``(parent, partial)`` and ``(parent, partial,
    parent, partial)``, appended by the scalar operators' fast paths (``fastpaths``): one float
    operation, with its partial derivative with respect to each parent.  The C kernels append
    the same as a ``_capstan_native.ScalarRecord`` (C numbers, read like the tuple).
    """

    __slots__ = ()
    _FIELDS = ("kind", "f", "ans", "vals", "kwargs", "parents", "foreign")

    def __repr__(self):
        fields = ", ".join("%s=%s" % (name, _short(value)) for name, value in
                           ((name, getattr(self, name)) for name in self._FIELDS[1:])
                           if value is not None and not (type(value) is tuple and not value))
        return "Record(%s%s)" % (self.kind.name, ", " + fields if fields else "")


def _short(value, limit=60):
    """``repr(value)`` cut to ``limit`` characters (a record may hold large arrays)."""
    text = getattr(value, "__name__", None) if callable(value) else None
    text = text or repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def located(where, root):
    """The index into ``root`` of the elements at flat positions ``where`` (shaped like
    them).  A 0-d root (a view ``np.reshape(a, (1,))`` of a 0-d ``a``, as SciPy's
    elementwise solvers make) has no axis to index: its one element is spread by new axes
    (none selected: an empty boolean index)."""
    if root.ndim:
        return np.unravel_index(where, root.shape)
    return (None,) * np.ndim(where) if np.size(where) else np.bool_(False)


class ReverseCtx(ADContext):
    """Reverse-mode differentiation context; ``ctx.tape`` is its list of records."""

    # slots: the C kernels append to the tape once per operation; the end of every run
    # reads the others (capstan.pool.quiet_reset)
    __slots__ = ("tape", "readers", "holders", "views", "equalities")
    mode = "reverse"
    keep_bases = False  # tapes that are replayed keep what arrays held before a write

    def __init__(self) -> None:
        super().__init__()
        self.tape: list[Any] = []
        self.readers: dict[int, Any] = {}  # id(array) -> records holding that array (snapshotted before writes)
        self.holders: dict[int, Any] = {}  # id(memory root) -> (weakref to its tagged owner, the root, its node)
        self.views: dict[int, Any] = {}  # id(memory root) -> weakrefs to tagged arrays viewing it
        self.equalities: list[Any] = []  # (f, values, nodes, where) of exact equalities that held

    @quiet_reset(none=("decisions",), empty=_QUIET_EMPTY + ("equalities", "readers", "holders", "views"),
                 fresh=("tape",))
    def reset(self):
        ADContext.reset(self)  # (not super(): this runs at the end of every gradient)
        self.tape = []
        if self.equalities:
            self.equalities = []
        if self.readers:  # (left as they are when the run used none)
            self.readers = {}
        if self.holders:
            self.holders = {}
        if self.views:
            self.views = {}

    # -- nodes ---------------------------------------------------------------------------------
    node = ADContext.meta

    def equality_held(self, f, vals, nodes, where):
        """Kept for the run's end (:func:`check_equalities`): whether the compared values'
        difference depends on the inputs is known only from a backward pass."""
        self.equalities.append((f, vals, nodes, where))

    def record(self, kind, f, ans, vals, kwargs, parents, foreign=None):
        """Append a record to the tape and note the arrays it holds (``readers``: their
        contents are copied for it before a write); its node.  ``_record`` (C) takes the
        same steps."""
        if _record is not None:
            return _record(self, kind, f, ans, vals, kwargs, parents, foreign)
        tape = self.tape
        tape.append(Record(kind, f, ans, vals, kwargs, parents, foreign))
        n = len(tape) - 1
        readers = self.readers
        for v in vals:
            tv = type(v)
            if tv is Tagged:
                v = untagged(v)
                tv = type(v)
            if tv is np.ndarray:
                while type(v.base) is np.ndarray:  # (root_of: the memory's owner)
                    v = v.base
                readers.setdefault(id(v), []).append(n)
        if type(ans) is Tagged:
            ans = untagged(ans)
        if type(ans) is np.ndarray:
            while type(ans.base) is np.ndarray:
                ans = ans.base
            readers.setdefault(id(ans), []).append(n)
        return n

    def before_write(self, arr):
        """``arr`` is about to change in place: records reading it get its old contents."""
        arr = untagged(arr)
        if type(arr) is not np.ndarray:
            return
        root = root_of(arr)
        users = self.readers.pop(id(root), None)
        if users:
            copies = {}

            def snap(v, foreign):
                raw = untagged(v)
                if type(raw) is not np.ndarray or root_of(raw) is not root:
                    return v
                if id(v) not in copies:  # (an enclosing differentiation copies its own values,
                    # plain arrays it shadows included)
                    copies[id(v)] = (v.copy() if v is raw and foreign is None
                                     else overdub(context_of(v) if v is not raw else foreign, np.copy, v))
                return copies[id(v)]

            for n in users:
                rec = self.tape[n]
                rec.vals = tuple(snap(v, rec.foreign) for v in rec.vals)
                rec.ans = snap(rec.ans, rec.foreign)

    def float_inputs(self, values):
        """``([self.input(v) for v in values], their nodes)`` for a list or tuple of plain
        floats, in one step (a list of 100 floats is a common point)."""
        start = len(self.tape)
        if len(values) < 2:
            tagged = [self.input(v) for v in values]
        else:
            tagged = [self.input(values[0])]  # (tag's checks, once: the context then has tags)
            self.tape.extend([_INPUT] * (len(values) - 1))
            tagged += tag_each(list(values[1:]), list(range(start + 1, len(self.tape))), self)
        return tagged, list(range(start, len(self.tape)))

    def input(self, value):
        tape = self.tape
        tape.append(_INPUT)
        if type(value) is float and self.__dict__.get("_has_tags"):
            return Tagged(value, len(tape) - 1, self)
        return self._track(tag(value, self, len(tape) - 1))

    # -- applying rules ------------------------------------------------------------------------
    def compute(self, f, vals, parents, kwargs, args, run, foreign):
        adjoint = ADJOINTS.get(f)
        if adjoint is not None:
            pair = run(adjoint, *vals, **kwargs)
            if type(pair) not in (tuple, list) or len(pair) != 2 or not callable(pair[1]):
                raise _bad_adjoint(f, adjoint, pair)
            ans, back = pair
            return self._result(ans, self.record(CUSTOM, back, ans, tuple(vals), kwargs,
                                                 parents, foreign))
        if f in INPLACE and type(untagged(vals[0])) is np.ndarray:
            return self._inplace(f, args[0], vals, parents, run, foreign)
        if f not in _VJP and f not in _PARTIALS:
            raise losses.refuse(self, no_rule(f, "reverse"))
        rules = _VJP.get(f, _PARTIALS.get(f))
        covered = len(rules) if type(rules) is tuple else 1 if f in _ONLY_FIRST else len(parents)
        if len(parents) > covered:  # (an argument the rule does not cover)
            for i in range(covered, len(parents)):
                if parents[i] is not None:
                    raise losses.refuse(self, losses.no_argument_rule(f, i, "reverse"))
        out = out_argument(kwargs) if kwargs else None
        if out is not None:
            self.before_write(out)
        ans = f(*vals, **kwargs) if run is plain_call else run(f, *vals, **kwargs)
        if any(type(p) is list for p in parents) and _takes_arrays(f):
            vals = _array_arguments(vals, parents, run)
        return self._computed(f, ans, vals, parents, kwargs, args, out, foreign)

    def _computed(self, f, ans, vals, parents, kwargs, args, out, foreign):
        """The rest of ``compute`` once ``ans = f(*vals, **kwargs)`` is known: its record and
        its result (the C layer's ``reverse_call`` hands results other than floats and float
        arrays here)."""
        ta = type(ans)
        if ta is not float and ta is not np.ndarray and isinstance(untagged(ans), np.ma.MaskedArray):
            raise losses.refuse(self, losses.masked_array(f, self.mode))  # (x * masked)
        if out is None and (ta is np.ndarray or (ta is Tagged and type(untagged(ans)) is np.ndarray)):
            # (also an enclosing context's value)
            same = returned_argument(ans, vals, parents)
            if same is not None:  # np.asarray(a), np.real(a) of a real a: a itself
                return args[same]
            if ta is np.ndarray and ans.dtype.kind == "f" and out is None:  # (the commonest result)
                if _record_array is not None:
                    return _record_array(self, f, ans, tuple(vals), kwargs, parents, foreign)
                return self._record_array(f, ans, tuple(vals), kwargs, parents, foreign)
        registry.no_object_arrays(ans)
        n = self.record(RULE, f, ans, tuple(vals), kwargs, parents, foreign)
        if out is not None and ans is out:  # np.exp(x, out=y): a write of the result into y
            self.setitem(out, Ellipsis, Tagged(ans, n, self))  # (y may be a view)
            return out
        return self._result(ans, n)

    def apply(self, f, args, kwargs):
        """``ADContext.apply``; a call of a function with a rule on this run's values (float64
        arrays and floats) and plain numbers and arrays, without keywords, goes straight to
        ``compute``: ``apply``'s questions are answered alike for all such calls."""
        if general_call(f, args, kwargs, _VJP):
            return ADContext.apply(self, f, args, kwargs)
        key = self._tagkey
        vals = []
        parents = []
        found = False
        for a in args:
            ta = type(a)
            if ta is Tagged:
                v = value_of(a)
                tv = type(v)
                if (tag_of(a) is not key or type(metadata_of(a)) is not int
                        or not (tv is float or tv is _F64 or (tv is np.ndarray and v.dtype is _DOUBLE))):
                    return ADContext.apply(self, f, args, kwargs)
                vals.append(v)
                parents.append(metadata_of(a))
                found = True
            elif ta is float or ta is int or ta is _F64 or (ta is np.ndarray and not self.shadows and not self.outside):
                vals.append(a)
                parents.append(None)
            else:
                return ADContext.apply(self, f, args, kwargs)
        if not found:
            return ADContext.apply(self, f, args, kwargs)
        return self.compute(f, vals, parents, kwargs, args, plain_call, None)

    def arrays(self, f, args):
        """An operator (``+ - * / **``, unary ``-``) that its float fast path did not take:
        when its operands are float64 arrays and numbers, this run's values or constants,
        computed and recorded as ``apply`` would (the same record, the same result) without
        the general path's questions, which such operands all answer alike; anything else
        goes to ``apply``."""
        key = self._tagkey
        vals = []
        parents = []
        arrays = found = False
        for a in args:
            ta = type(a)
            if ta is Tagged:
                v = value_of(a)
                tv = type(v)
                if tag_of(a) is not key or type(metadata_of(a)) is not int:
                    return self.apply(f, args, {})
                if tv is np.ndarray:
                    if v.dtype is not _DOUBLE:
                        return self.apply(f, args, {})
                    arrays = True
                elif tv is not float and tv is not _F64:
                    return self.apply(f, args, {})
                vals.append(v)
                parents.append(metadata_of(a))
                found = True
            elif ta is float or ta is int or ta is _F64:
                vals.append(a)
                parents.append(None)
            else:  # (a plain array may hold differentiated values: shadowed)
                return self.apply(f, args, {})
        if not (arrays and found) or f in ADJOINTS:
            return self.apply(f, args, {})
        ans = f(*vals)
        if type(ans) is np.ndarray:
            if _record_array is not None:
                return _record_array(self, f, ans, tuple(vals), {}, parents, None)
            return self._record_array(f, ans, tuple(vals), {}, parents, None)
        return self._result(ans, self.record(RULE, f, ans, tuple(vals), {}, parents))  # (0-d: NumPy scalars)

    def _record_array(self, f, ans, vals, kwargs, parents, foreign):
        """The RULE record of an array result ``ans`` and its tagged value, tracked; in C
        when the C layer is there (``_record_array``: the same steps)."""
        if _record_array is not None:
            return _record_array(self, f, ans, vals, kwargs, parents, foreign)
        return self._track(Tagged(ans, self.record(RULE, f, ans, vals, kwargs, parents, foreign), self))

    def _result(self, ans, n):
        if type(ans) is float:
            return Tagged(ans, n, self)
        if not structure.is_differentiable(ans):
            if isinstance(ans, (str, np.ndarray)) and losses.is_text(ans):  # (a.astype(str))
                losses.note_text(self, ans)
            return ans
        return self._track(Tagged(ans, n, self))

    def _track(self, t):
        """Note which memory the tagged array ``t`` owns or views (for later writes)."""
        raw = untagged(value_of(t))
        if type(raw) is np.ndarray:
            if raw.base is None:
                self.holders[id(raw)] = (weakref.ref(t), raw, metadata_of(t))
            else:
                self.views.setdefault(id(root_of(raw)), []).append(weakref.ref(t))
        return t

    def _inplace(self, f, target, vals, parents, run, foreign):
        """``a += b`` on an array: computed aside, then written into the same array."""
        plain = INPLACE[f]
        ans = run(plain, *vals)
        if not np.can_cast(np.result_type(untagged(ans)), untagged(vals[0]).dtype, "same_kind"):
            run(f, np.array(vals[0], copy=True), *vals[1:])  # NumPy's own casting error
        new = self._result(ans, self.record(RULE, plain, ans, tuple(vals), {}, parents, foreign))
        self.setitem(target, Ellipsis, new)
        return target

    def view_meta(self, view, root, n, foreign):
        """The node of a plain view of a shadowed array: a read of its region of the root."""
        where = located(positions(view, root), root)
        n = self.record(GETITEM, None, None, (), (root.shape, root.dtype, where), (n,), foreign)
        side = part(view, root)
        if side is None:
            return n
        value = root[where]  # (``c.real`` or ``c.imag``: that part of the elements read)
        f = np.real if side == "real" else np.imag
        return self.record(RULE, f, f(value), (value,), {}, (n,), foreign)

    def holder(self, root):
        """``(node, tagged owner or None)`` of the memory ``root`` (node ``None``: untracked)."""
        held = self.holders.get(id(root))
        if held is not None and held[1] is root:
            t = held[0]()
            if t is not None and self.owns(t) and untagged(value_of(t)) is root:
                return metadata_of(t), t
        entry = self.shadows.get(id(root))
        if entry is not None and entry[0] is root:
            return entry[1], None
        if held is not None and held[1] is root:  # the owner died (a temporary whose views live
            return held[2], None                   # on: np.moveaxis(v * 1.0, 0, -1)): its last node
        return None, None

    def _moved(self, root, owner, n, foreign):
        """The memory ``root`` now holds node ``n``: its owner and live views follow."""
        if owner is not None:
            retag(owner, self, n)
            held = self.holders.get(id(root))
            if held is not None and held[1] is root:
                self.holders[id(root)] = (held[0], root, n)
        else:
            self.shadows[id(root)] = (root, n, foreign)
        live = []
        for ref in self.views.get(id(root), ()):
            t = ref()
            if t is not None and self.owns(t):
                retag(t, self, self.view_meta(untagged(value_of(t)), root, n, foreign))
                live.append(ref)
        if live:
            self.views[id(root)] = live

    # -- subscripts, attributes and markers -------------------------------------------------------
    @primitive(operator.getitem, Tagged)
    @primitive(operator.getitem, np.ndarray)
    def getitem(self, c, k):
        if type(k) is int and type(c) is Tagged and tag_of(c) is self._tagkey:  # x[i]: hot in loops
            value = value_of(c)
            if type(value) is np.ndarray and value.ndim == 1 and value.dtype.kind in "fc":
                ans = value[k]
                tape = self.tape
                tape.append(Record(GETITEM, None, None, (), (value.shape, value.dtype, k), (metadata_of(c),)))
                return Tagged(ans, len(tape) - 1, self)
        if (type(c) is Tagged and type(k) is not Tagged and tag_of(c) is self._tagkey and not self.shadows
                and not self.outside):  # a[1:], a[:, 0]: subscript's steps for this run's array
            value, n = value_of(c), metadata_of(c)
            if type(value) is np.ndarray and n is not None:
                ans = value[k]
                return self._result(ans, self.record(GETITEM, None, None, (), (value.shape, value.dtype, k), (n,)))
        ans, n, value, k, foreign = self.subscript(c, k)
        if n is None:
            return ans
        return self._result(ans, self.record(GETITEM, None, None, (), (np.shape(value), value.dtype, k),
                                             (n,), foreign))

    @primitive(operator.setitem, Tagged)
    @primitive(operator.setitem, np.ndarray)
    def setitem(self, c, k, v):
        """``c[k] = v``: a new node for the memory ``c`` lives in (its owner and views follow)."""
        nv = self.node(v)
        value, foreign = self.unwrap(c)
        if type(k) is Tagged:
            k = self.unwrap(k)[0]
        v, vforeign = self.unwrap(v)
        foreign = foreign or vforeign
        raw = untagged(value)
        if type(raw) is not np.ndarray:
            return self.write(value, k, v, foreign)
        root = root_of(raw)
        nroot, owner = self.holder(root)
        self.before_write(root)
        base = root.copy() if nroot is None and self.keep_bases else None
        self.write(value, k, v, foreign)
        if nroot is None and (nv is None or self.plain_write(raw, k)):
            return None
        if raw.dtype.kind not in "fc":
            return None
        if raw is not root and part(raw, root) is not None:
            raise TypeError("capstan: cannot follow a write through the real or imaginary part of a "
                            "differentiated complex array (c.real[...] = v); write complex values "
                            "into the array itself")
        where = None if raw is root else positions(raw, root)[k]
        index = k if where is None else located(where, root)
        n = self.record(SETITEM, None, None, (v if nv is None else None, base),
                        (np.shape(v), index, np.result_type(untagged(v))),
                        (nroot, nv), foreign)
        self._moved(root, owner, n, foreign)
        return None

    @primitive(hook)
    def hook_(self, fn, x):
        if not callable(fn):
            raise hook_error(fn)
        n = self.node(x)
        if n is None:
            return x
        value = value_of(x) if type(x) is Tagged else x
        return Tagged(value, self.record(CUSTOM, lambda g: (_call(fn, _writable(g)),), value, (), _HOOK,
                                         (n,)), self)

    @primitive(checkpoint)
    def checkpoint_(self, f, /, *args, **kwargs):
        if kwargs or not callable(f):  # (keywords by position, or a TypeError naming checkpoint)
            args = positional(f, args, kwargs)
        if not args:  # ``checkpoint(f)``: the decorator form, whose calls come back here
            return checkpoint(f)
        vals, parents, found, foreign = self._split(args)
        if not found:
            return overdub(self, f, *args)
        ans = overdub(foreign, f, *vals) if foreign is not None else f(*vals)

        def rerun(ctx, g, w=None):
            run = _Run(f, vals, "checkpoint", ctx)
            seeds, weights = {}, {}
            ws = structure.flatten(w)[0] if w is not None else None
            gs = structure.flatten(g)[0]
            if ws is not None and len(ws) != len(gs):
                ws = None
            for k, (leaf, d) in enumerate(zip(run.out_leaves, gs)):
                n = ctx.node(leaf)
                if n is not None and d is not None:
                    seeds[n] = d
                    weights[n] = ws[k] if ws is not None else _fresh_all(d)
            return run, seeds, weights

        def back(g):  # the segment is run again, its tape kept only for this backward pass
            with borrowed(ReverseCtx) as ctx:
                run, seeds, _ = rerun(ctx, g)
                return run.back(seeds)

        def meets(g, met):  # (backward's first pass: a zero that met an infinite partial
            with borrowed(ReverseCtx) as ctx:  # inside the segment is noted in ``met`` too)
                run, seeds, _ = rerun(ctx, g)
                inner = []
                cts = _swept(ctx.tape, seeds, inner)
                if inner:
                    met.append(True)
                    cts = _tracked(ctx.tape, seeds)[0]
                return run.back_from(cts)

        def tracked(g, w):  # (the pass that tells zeros apart, through the segment: the
            with borrowed(ReverseCtx) as ctx:  # gradients, and the weights of the arguments)
                run, seeds, weights = rerun(ctx, g, w)
                cts, ws = _tracked(ctx.tape, seeds, weights)
                return run.back_from(cts), run.back_from(ws)

        back.meets, back.tracked = meets, tracked
        return self._result(ans, self.record(CUSTOM, back, ans, (), None, tuple(parents), foreign))

    # -- the backward pass -----------------------------------------------------------------------
    def backward(self, seeds):
        """Cotangents of every node, from ``{node: cotangent}`` of the outputs."""
        return backward(self.tape, seeds)


fastpaths.install(ReverseCtx, "reverse")
DIRECT.add(ReverseCtx)  # (its primitives for functions with rules hand them to apply)


_INPUT = Record(INPUT, None, None, (), None, ())  # (shared: inputs carry nothing to change)


def backward(tape, seeds):
    """Cotangents of every node of ``tape``, from ``{node: cotangent}`` of the outputs.

    An exact zero cotangent against an infinite partial: a zero that holds near the point
    (*structural*: a seed of 0, as a Jacobian's other rows; an index not read; an untaken
    ``np.where`` branch; a constant factor) wins, a zero that is a value's (``cos``'s slope
    at 0) does not -- the product is NaN, refused, as forward mode refuses a zero partial
    against an infinite tangent.  The first pass cannot tell the zeros apart: it lets an
    array cotangent's win, and a float's lose; where a zero met a non-finite partial
    (``met``), the pass runs again following which zeros are structural (:func:`_tracked`).
    That does not happen away from such points, which cost nothing more."""
    met = []
    cts = _swept(tape, seeds, met)
    if met:
        cts = _tracked(tape, seeds)[0]
    return cts


def _fresh_all(g):
    """Weights that count every element of ``g`` as live (a value's zero where it is 0)."""
    return 1.0 if np.ndim(untagged(g)) == 0 else np.ones(np.shape(untagged(g)))


def _swept(tape, seeds, met):
    """:func:`backward`'s first pass; appends to the list ``met`` where an exact zero
    cotangent met a non-finite partial."""
    cts = [None] * len(tape)
    for n, g in seeds.items():
        cts[n] = g if cts[n] is None else cts[n] + g
    owned = {}  # id -> cotangent buffer made here and not handed on (safe to add into in place)
    reads = {}  # node -> (read, [positions], [cotangents]) of its float elements read, not added yet
    nested = nestlevel()  # (differentiations around this pass: the same at each step)
    i = len(tape)
    if _sweep is not None and i:  # the float records at the tape's end, in C (no NumPy arithmetic)
        i = _sweep(tape, cts, i - 1, reads, met) + 1
    if i <= 0:
        return cts
    with quiet():  # (the arithmetic of derivatives: see fpstate)
        return _swept_records(tape, cts, i, owned, reads, nested, met)


def _swept_records(tape, cts, i, owned, reads, nested, met):
    """:func:`_swept`'s loop over the records below node ``i`` (``owned``, ``reads``,
    ``nested``: its state; ``met``: as its)."""
    while i > 0:
        i -= 1
        if _sweep is not None:  # runs of inline float records, in C (the loop below, exactly)
            i = _sweep(tape, cts, i, reads, met)
            if i < 0:
                break
        if reads and i in reads:  # every read of node i comes after it on the tape: all seen
            _add_reads(cts, owned, i, *reads.pop(i))
        g = cts[i]
        if g is None:
            continue
        # (its node hands it on now: a step may pass it to several parents as it is)
        handed = owned and owned.pop(id(g), None) is g
        rec = tape[i]
        if type(rec) is tuple or type(rec) is _SCALAR_RECORD:  # an inline float operation:
            # (parent, partial[, parent, partial])
            p = rec[0]
            element = type(g) is _F64  # (an array cotangent's element: its zero follows nothing)
            if element:
                g = float(g)  # (as a float: no NumPy warning for 0 * inf)
            c = g * rec[1]
            if c != c and (type(c) is float or type(c) is _F64):  # (a NumPy float's partial too)
                if rec[1] == 0:
                    c = 0.0  # (a zero partial wins over an infinite cotangent: see _sweep)
                elif g == 0:  # (a zero cotangent against an infinite partial: see _sweep)
                    met.append(True)
                    if element:
                        c = 0.0
            old = cts[p]
            cts[p] = c if old is None else old + c
            if len(rec) == 4:
                p = rec[2]
                c = g * rec[3]
                if c != c and (type(c) is float or type(c) is _F64):
                    if rec[3] == 0:
                        c = 0.0
                    elif g == 0:
                        met.append(True)
                        if element:
                            c = 0.0
                old = cts[p]
                cts[p] = c if old is None else old + c
            continue
        if rec.kind is INPUT:
            continue
        foreign = rec.foreign or (context_of(g) if type(g) is Tagged else None)
        if foreign is None and type(g) is np.ndarray and nested:
            # a plain array an enclosing differentiation wrote derivatives into (it shadows
            # it): the cotangent carries that derivative, so the rule runs inside it
            foreign = enclosing(g)
        if rec.kind is GETITEM and foreign is None:  # a read: add into the parent's buffer
            read = rec.kwargs
            if type(read[2]) is int and (type(g) is float or type(g) is _F64) and read[1].kind == "f":
                p = rec.parents[0]
                pending = reads.get(p)
                if pending is None:
                    pending = reads[p] = (read, [], [])
                pending[1].append(read[2])
                pending[2].append(g)
            else:
                _scatter_into(cts, owned, rec.parents[0], read, g)
            continue
        if foreign is None:  # (plain values: _step's partials branch and the sums, inline)
            if rec.kind is RULE and not nested and rec.f in _SCATTERS and type(rec.vals[0]) is np.ndarray \
                    and rec.vals[0].ndim and type(rec.parents[0]) is int:
                rule, scatter = _SCATTERS[rec.f]
                few = scatter(g, rec.ans, *rec.vals, **rec.kwargs) if _VJP.get(rec.f) is rule else None
                if few is not None:  # (a selection's cotangent: a few elements, added in place)
                    a = rec.vals[0]
                    _scatter_into(cts, owned, rec.parents[0], (a.shape, a.dtype, few[0]), few[1])
                    continue
            if rec.kind is RULE and rec.f not in _VJP:
                out = _plain_partials(rec, g, _PARTIALS[rec.f], met)
                made = True  # (every array it returns but g itself is a new product or sum)
            else:
                out = _step(rec, g, plain_call, met)
                made = False
            passed = handed and sum(c is g for c in out) == 1  # (g to one parent alone: still ours)
            for p, c in zip(rec.parents, out):
                if p is None or c is None:
                    continue
                if type(p) is list:
                    for pe, ce in zip(p, c):
                        if pe is not None and ce is not None:
                            ce = _element_cotangent(tape, pe, ce, plain_call)
                            old = cts[pe]
                            cts[pe] = ce if old is None else old + ce
                else:
                    _add_into(cts, owned, p, c, (passed and _alone(out, g)) if c is g else (
                        made and type(c) is np.ndarray and c.base is None))
            continue
        run = routed(foreign)
        for p, c in zip(rec.parents, _step(rec, g, run, met)):
            if p is None or c is None:
                continue
            if type(p) is list:
                if type(c) is not list and type(c) is not tuple:  # (an array, maybe the enclosing
                    c = [run(operator.getitem, c, k) for k in range(len(p))]  # run's: read in it)
                for pe, ce in zip(p, c):
                    if pe is not None and ce is not None:
                        ce = _element_cotangent(tape, pe, ce, run)
                        cts[pe] = ce if cts[pe] is None else run(operator.add, cts[pe], ce)
            else:
                cts[p] = c if cts[p] is None else run(operator.add, cts[p], c)
    return cts


def _tracked(tape, seeds, seed_weights=None):
    """:func:`backward`'s pass that tells an exact zero cotangent that holds near the point
    (*structural*) from a value's zero, the slow way (in Python, every step): beside each
    node's cotangent, a nonnegative *weight* of the same shape, positive where some step
    sent a contribution that is not a structural zero.  A weight is

    * the seed's: 0 where the seed is 0, else positive;
    * an elementwise step's (a rule given by its partials): the cotangent's, but 0 where the
      partial is exactly 0 and that zero holds near the point (:func:`registry.zeros_hold`:
      a constant factor, a selection); a partial that is 0 at the point only (``cos`` at 0)
      keeps the weight, so its zero is a value's;
    * any other step's (an index, ``np.where``'s own rule, a sum): the step's rule run on
      the weights (it is linear; random positive weights make a cancellation unlikely),
      positive where the cotangent it sends is not 0;
    * a user pullback's (``adjoint``, ``hook``, ``checkpoint``): positive where its result is
      not 0, and everywhere when a value's zero went in (it is not run again).

    Where a zero of positive weight meets a non-finite partial, the product is NaN.
    ``seed_weights``: the seeds' weights where they are given (a checkpoint's segment, run
    from the enclosing pass).  Returns the cotangents and the weights of every node."""
    with quiet():  # (the arithmetic of derivatives: see fpstate)
        return _tracked_pass(tape, seeds, seed_weights)


def _tracked_pass(tape, seeds, seed_weights):
    """:func:`_tracked` itself."""
    cts = [None] * len(tape)
    weights = [None] * len(tape)
    rng = np.random.default_rng(20261128)
    for n, g in seeds.items():
        w = _fresh(rng, untagged(g) != 0) if seed_weights is None or n not in seed_weights else seed_weights[n]
        cts[n] = g if cts[n] is None else cts[n] + g
        weights[n] = w if weights[n] is None else weights[n] + w
    owned, wowned = {}, {}  # (as _swept's)
    i = len(tape)
    while i > 0:
        i -= 1
        g = cts[i]
        if g is None:
            continue
        w = weights[i]
        owned.pop(id(g), None)  # (handed on now: see _swept)
        wowned.pop(id(w), None)
        if w is None:  # (not expected: every cotangent comes with its weight)
            w = _fresh(rng, np.ones(np.shape(untagged(g)), dtype=bool))
        rec = tape[i]
        if type(rec) is tuple or type(rec) is _SCALAR_RECORD:  # an inline float operation
            element = type(g) is _F64
            if element:
                g = float(g)
            for j in range(0, len(rec), 2):
                p, d = rec[j], rec[j + 1]
                c = g * d
                if c != c and (type(c) is float or type(c) is _F64) and (d == 0 or (g == 0 and not w > 0)):
                    c = 0.0  # (a zero partial, or a structural zero cotangent, wins)
                cts[p] = c if cts[p] is None else cts[p] + c
                held = d is HELD_ZERO or d is HELD_NEG_ZERO  # (a constant's 0: see HELD_ZERO)
                wc = 0.0 if held else float(w > 0 or c != 0)
                weights[p] = wc if weights[p] is None else weights[p] + wc
            continue
        if rec.kind is INPUT:
            continue
        foreign = rec.foreign or (context_of(g) if type(g) is Tagged else None)
        if foreign is None and type(g) is np.ndarray and nestlevel():
            foreign = enclosing(g)
        run = plain_call if foreign is None else routed(foreign)
        if rec.kind is GETITEM and foreign is None:
            _scatter_into(cts, owned, rec.parents[0], rec.kwargs, g)
            _scatter_into(weights, wowned, rec.parents[0], rec.kwargs, w)
            continue
        if rec.kind is RULE and rec.f not in _VJP:
            out, wout = _tracked_partials(rec, g, w, run)
        elif rec.kind is CUSTOM and run is plain_call and getattr(rec.f, "tracked", None) is not None:
            out, wraw = rec.f.tracked(g, w)  # (a checkpoint: its segment tells its own zeros)
            wout = [None if c is None else _weights_like(c, lambda v: np.ones(np.shape(v), dtype=bool), rng)
                    if wc is None else _weights_like(c, None, rng, wc) for c, wc in zip(out, wraw)]
        elif rec.kind is CUSTOM:
            out = _step(rec, g, run)
            value_zero = bool(np.any((untagged(g) == 0) & (w > 0)))
            own = getattr(rec.f, "weights", None)  # (a pullback that tells its own zeros:
            if own is not None and not value_zero:   # capstan.elementwise's)
                wout = _weights_like(out, None, rng, own(w))
            else:
                if rec.kwargs is not _HOOK and not value_zero:
                    # a user adjoint's or a checkpoint's pullback may multiply by a value's
                    # zero of its own (``2 * a`` at ``a == 0``), unseen here: where a live
                    # cotangent went in, the zeros it sends are the point's
                    value_zero = bool(np.any(w > 0))
                wout = _weights_like(out, lambda c: np.full(np.shape(c), value_zero) | (c != 0), rng)
        else:
            out = _step(rec, g, run)
            plain = _with_zeros_moved(rec, rng)
            tg = untagged(g)
            wg = w.astype(tg.dtype) if type(tg) is np.ndarray and type(w) is np.ndarray else w
            wout = _step(plain, wg, plain_call)
            out = [_undefined_where(c, wc, run) for c, wc in zip(out, wout)]
            wout = [None if c is None else _weights_like(c, None, rng, wc) for c, wc in zip(out, wout)]
        for p, c, wc in zip(rec.parents, out, wout):
            if p is None or c is None:
                continue
            listed = type(p) is list
            if not listed:
                p, c, wc = [p], [c], [wc]
            for pe, ce, we in zip(p, c, wc):
                if pe is None or ce is None:
                    continue
                if listed:
                    ce = _element_cotangent(tape, pe, ce, run)
                cts[pe] = ce if cts[pe] is None else run(operator.add, cts[pe], ce)
                if we is None:
                    we = _fresh(rng, np.ones(np.shape(untagged(ce)), dtype=bool))
                weights[pe] = we if weights[pe] is None else weights[pe] + we
    return cts, weights


#: a CUSTOM record's ``kwargs`` for a hook (whose function maps the cotangent alone)
_HOOK = ("hook",)
#: where :func:`_with_zeros_moved` puts an operand's exact zero: small enough that no
#: comparison with the operand's other values or the constants beside it changes
_MOVED_ZERO = 2.0 ** -100


def _with_zeros_moved(rec, rng):
    """``rec`` on plain values, each exact zero of a differentiated float operand moved off
    0 (the result recomputed): the rule run on the weights then sends a positive weight
    where its cotangent was 0 only because an operand was (``np.dot(sqrt(x), sqrt(x))``,
    ``abs``'s slope at 0, ``norm``'s ``x / norm``) -- a value's zero, which does not hold near
    the point -- and 0 where a selection, an index or a constant made it (which moving an
    operand's zero by so little does not change)."""
    vals = tuple(untagged(v) for v in rec.vals)
    parents = rec.parents
    moved = list(vals)
    changed = False
    for i, v in enumerate(vals):
        if i >= len(parents) or parents[i] is None or type(parents[i]) is list:
            continue
        if type(v) is np.ndarray and v.dtype.kind in "fc" and v.size and not _ALL(v != 0, axis=None):
            moved[i] = np.where(v == 0, _MOVED_ZERO * rng.uniform(0.5, 1.5, v.shape), v).astype(v.dtype)
            changed = True
        elif (type(v) is float or type(v) is _F64) and v == 0:
            moved[i] = type(v)(_MOVED_ZERO * rng.uniform(0.5, 1.5))
            changed = True
    ans = untagged(rec.ans)
    if changed and rec.kind is RULE:
        try:
            with np.errstate(all="ignore"):
                new = rec.f(*moved, **rec.kwargs)
            if np.shape(new) == np.shape(ans):
                ans = new
            else:
                changed = False
        except Exception:  # (a rule that does not take the moved values: as they were)
            changed = False
    return Record(rec.kind, rec.f, ans, tuple(moved) if changed else vals, rec.kwargs, rec.parents)


def _undefined_where(c, w, run):
    """A step's cotangent ``c`` with NaN where it is 0 but the step run on the weights gave
    a non-finite weight ``w``: a zero of positive weight met an infinite factor inside the
    rule (one that lets a zero win: ``elementwise``'s partials)."""
    if c is None or w is None:
        return c
    if type(c) is list or type(c) is tuple:
        return type(c)(_undefined_where(ce, we, run) for ce, we in zip(c, w))
    v, wv = untagged(c), untagged(w)
    with np.errstate(invalid="ignore"):
        undefined = (np.asarray(v) == 0) & ~np.isfinite(wv)
    if not np.any(undefined):
        return c
    if np.ndim(v) == 0:
        return run(operator.mul, c, math.nan)  # (a number stays one)
    return run(np.where, undefined, np.nan, c)


def _fresh(rng, live):
    """Weights for the boolean mask ``live``: random in [0.5, 1.5) where it holds, else 0."""
    if np.ndim(live) == 0:
        return 1.0 if live else 0.0
    return np.where(live, rng.uniform(0.5, 1.5, np.shape(live)), 0.0)


def _weights_like(c, live_of, rng, w=None):
    """The weights of a step's cotangent ``c`` (an element, a list of them, or ``None``):
    fresh ones where ``live_of(c)`` holds, or, given the step run on the weights ``w``,
    where that or ``c`` is not 0."""
    if c is None:
        return None
    if type(c) is list or type(c) is tuple:
        ws = w if w is not None else [None] * len(c)
        return [_weights_like(ce, live_of, rng, we) for ce, we in zip(c, ws)]
    v = untagged(c)
    with np.errstate(invalid="ignore"):
        if w is None:
            return _fresh(rng, live_of(v))
        return _fresh(rng, (np.abs(untagged(w)) != 0) | (v != 0))


def _tracked_partials(rec, g, w, run):
    """:func:`_step`'s partials branch for :func:`_tracked`: the parents' cotangents and
    weights; NaN where a zero of ``g`` with positive weight meets a non-finite partial."""
    f, ans, vals, kwargs = rec.f, rec.ans, rec.vals, rec.kwargs
    partials = _PARTIALS[f]
    out, wout = [], []
    rg = untagged(g)
    for i, p in enumerate(rec.parents):
        if p is None or i >= len(partials) or partials[i] is None:
            out.append(None)
            wout.append(None)
            continue
        d = conjugated(run, call_partial_at(run, partials[i], f, ans, *vals, **kwargs))
        rd = untagged(d)
        with np.errstate(invalid="ignore", over="ignore"):
            c = run(operator.mul, g, d)
            if not _finite(untagged(c)):
                c = run(_nested_exact(g, d), g, d)
                undefined = (np.asarray(rg) == 0) & (np.asarray(w) > 0) & ~np.isfinite(rd)
                if np.any(undefined):
                    c = run(np.where, undefined, np.nan, c)
                    if np.ndim(untagged(c)) == 0 and np.ndim(rg) == 0 and np.ndim(rd) == 0:
                        c = run(operator.getitem, c, ())  # (np.where's 0-d array: a number again)
        if f in _KINKS:  # (as _step)
            c = kinked(run, f, i, c, g, ans, vals, kwargs)
        wc = w * (rd != 0) if registry.zeros_hold(f, i, rec.parents) else w
        wc = np.broadcast_to(wc, np.shape(untagged(c))) if np.ndim(wc) < np.ndim(untagged(c)) or (
            np.shape(wc) != np.shape(untagged(c))) else wc
        x = vals[i]
        out.append(summed_to(run, c, x))
        wout.append(registry.unbroadcast(np.asarray(wc, dtype=float) if np.ndim(wc) else float(wc), untagged(x)))
    return out, wout


def check_equalities(ctx):
    """Refuse the run if an exact equality that held (``if h == 0:``) compared values whose
    difference has a nonzero derivative: one backward pass seeded with random weights on
    each difference, where it held, reaches an input only then (``losses``, channel 6)."""
    weights = np.random.default_rng(20261127)
    first = ctx.equalities[0][0]
    seeds = {}
    for f, vals, nodes, where in ctx.equalities:
        shape = np.broadcast_shapes(np.shape(where), *(np.shape(untagged(v)) for v in vals))
        w = weights.uniform(0.5, 1.5, shape) * where
        for value, n, sign in zip(vals, nodes, (1.0, -1.0)):
            if n is None or type(n) is list:
                continue
            g = registry.unbroadcast(sign * w, untagged(value))
            g = float(g) if np.ndim(untagged(value)) == 0 else np.asarray(g, dtype=float)
            seeds[n] = g if n not in seeds else seeds[n] + g
    ctx.equalities = []
    if not seeds:
        return
    cts = backward(ctx.tape, seeds)
    for n, rec in enumerate(ctx.tape):
        if (type(rec) is not tuple and type(rec) is not _SCALAR_RECORD and rec.kind is INPUT and cts[n] is not None
                and np.any(untagged(cts[n]) != 0)):
            raise losses.point_branch(first, "reverse")


_F64 = np.float64
_ALL = np.logical_and.reduce
_isnan = math.isnan
_DOUBLE = np.dtype(np.float64)
_sweep = capstan_native.sweep if capstan_native is not None else None
#: the C kernels' scalar tape record, which reads as the tuple the Python fast paths append
_SCALAR_RECORD = capstan_native.ScalarRecord if capstan_native is not None else tuple
if capstan_native is not None:
    capstan_native.setup_records(Record, np.ndarray, RULE, HELD_ZERO, HELD_NEG_ZERO)
    _record, _record_array = capstan_native.record, capstan_native.record_array
    # what the C twins of apply/compute and arrays (reverse_call) ask and call
    capstan_native.setup_calls(ReverseCtx, _PARTIALS, _VJP, _ONLY_FIRST,
                               (registry.SOLVERS, registry.IMPLS, registry.NONDIFF, losses.ZERO_TESTS,
                                ADJOINTS, INPLACE), operator.getitem, _DOUBLE, np.ufunc,
                               ReverseCtx._computed, drop_own_frames)
else:
    _record = _record_array = None


def _add_into(cts, owned, p, c, new):
    """``cts[p] += c`` on the first backward pass.  ``owned`` maps the ids of the cotangent
    arrays this pass made, which nothing else holds, to them: those are added into in place
    (a cotangent summed over many steps costs no new array each); ``new``: ``c`` is such an
    array (a product made for this parent alone)."""
    old = cts[p]
    if old is None:
        cts[p] = c
        if new:
            owned[id(c)] = c
        return
    if owned.get(id(old)) is old and (type(c) is np.ndarray or type(c) is float or type(c) is _F64) \
            and np.result_type(old, c) == old.dtype and np.broadcast_shapes(np.shape(c), old.shape) == old.shape:
        np.add(old, c, out=old)  # (the same sums as old + c, into old's memory)
        return
    owned.pop(id(old), None)
    cts[p] = total = old + c
    if type(total) is np.ndarray:
        owned[id(total)] = total


def _alone(out, g):
    """Whether no other cotangent in ``out`` may share memory with ``g`` (a view of it)."""
    return all(c is g or type(c) is not np.ndarray or c.base is None for c in out)


def _add_reads(cts, owned, p, read, positions, cotangents):
    """``cts[p] += `` the cotangents of single float elements read from node ``p``, all at
    once (an element-read loop costs a list append per read on the reverse pass)."""
    buf = cts[p]
    if buf is None or owned.get(id(buf)) is not buf:
        new = np.zeros(read[0], dtype=np.result_type(read[1], np.float64))
        if buf is not None:
            new += buf
        cts[p] = buf = owned[id(new)] = new
    np.add.at(buf, positions, cotangents)


def _scatter_into(cts, owned, p, read, g):
    """``cts[p] += (g scattered at the index read)``, in place in a buffer this backward
    pass owns: element reads in a loop cost O(1) each, not a new array each."""
    shape, dtype, k = read
    buf = cts[p]
    if buf is None or owned.get(id(buf)) is not buf:
        new = np.zeros(shape, dtype=np.result_type(dtype, np.float64))
        if buf is not None:
            new += buf
        cts[p] = buf = owned[id(new)] = new
    if buf.dtype.kind != "c" and (type(g) is complex or isinstance(g, np.complexfloating) or (
            type(g) is np.ndarray and g.dtype.kind == "c")):
        g = g.real
    if _simple_index(k):
        buf[k] += g  # (no repeated positions: a plain in-place add)
    else:
        np.add.at(buf, k, g)


def _simple_index(k):
    if type(k) is int or isinstance(k, (np.integer, slice)):
        return True
    return type(k) is tuple and all(type(e) is int or isinstance(e, (np.integer, slice)) or e is None
                                    or e is Ellipsis for e in k)


def _bad_vjp_result(f, out, parents):
    """The clear error for a reverse rule whose result would drop a differentiated
    argument's cotangent (a bare cotangent instead of a tuple, or too short a tuple)."""
    got = ("a tuple of %d" % len(out)) if type(out) in (tuple, list) else type(out).__name__
    return TypeError("capstan: the reverse rule of %s returned %s; it must return a tuple with one "
                     "cotangent per positional argument (%d here; None for an argument without one)"
                     % (getattr(f, "__qualname__", repr(f)), got, len(parents)))


def _takes_arrays(f):
    """Whether ``f`` reads a list or tuple argument as an array (NumPy's functions and
    ufuncs: ``np.clip([x, 2 * x], 0.0, 1.0)``)."""
    if type(f) is np.ufunc:
        return True
    module = getattr(f, "__module__", None)
    return type(module) is str and (module == "numpy" or module.startswith("numpy."))


def _array_arguments(vals, parents, run):
    """``vals`` with each list or tuple argument of differentiated elements as the array
    NumPy reads it as, for the rule's partials (which compare and broadcast arrays:
    ``np.clip``'s raised "'>=' not supported between 'list' and 'float'"); its cotangent
    is then split over the elements, as before.  Left as it is where the elements do not
    form a regular numeric array (``np.concatenate`` of parts of different lengths)."""
    vals = list(vals)
    for i, p in enumerate(parents):
        v = vals[i]
        if type(p) is not list or (type(v) is not list and type(v) is not tuple):
            continue
        try:
            plain = np.asarray([untagged(e) for e in v])
        except (ValueError, TypeError):
            continue
        if plain.dtype.kind not in "biufc" or plain.shape[:1] != (len(p),):
            continue
        vals[i] = run(np.array, list(v)) if any(type(e) is Tagged for e in v) else plain
    return vals


def _step(rec, g, run, met=None):
    """The cotangents of ``rec``'s parents, given the cotangent ``g`` of its result (``met``:
    as :func:`_swept`'s)."""
    kind = rec.kind
    if kind is RULE:
        f = rec.f
        vjp = _VJP.get(f)
        if type(vjp) is tuple:  # one rule per argument: only the ones needed
            out = [None if p is None or i >= len(vjp) or vjp[i] is None
                   else run(vjp[i], g, rec.ans, *rec.vals, **rec.kwargs)
                   for i, p in enumerate(rec.parents)]
            return _real_where_real(out, rec, run) if _complex(g) else out
        if vjp is not None:
            out = run(vjp, g, rec.ans, *rec.vals, **rec.kwargs)
            if type(out) is not tuple and type(out) is not list or len(out) < len(rec.parents) and any(
                    p is not None for p in rec.parents[len(out):]):
                raise _bad_vjp_result(f, out, rec.parents)
            return _real_where_real(out, rec, run) if _complex(g) else out
        partials = _PARTIALS[f]
        if run is plain_call:
            return _plain_partials(rec, g, partials, met)
        out = []
        for i, p in enumerate(rec.parents):
            if p is None or i >= len(partials) or partials[i] is None:
                out.append(None)
                continue
            d = call_partial_at(run, partials[i], f, rec.ans, *rec.vals, **rec.kwargs)
            td = type(d)
            if f in _KINKS:  # (a slope at a kink: its product marked before the sum, see kink_rules)
                c = run(operator.mul, g, d) if td is float or td is int else product(
                    run, g, conjugated(run, d), _nested_exact(g, d))
                out.append(summed_to(run, kinked(run, f, i, c, g, rec.ans, rec.vals, rec.kwargs), rec.vals[i]))
                continue
            if td is float or td is int:  # a constant partial: sum over broadcast axes first
                c = summed_to(run, g, rec.vals[i])
                if d != 1 and d - d != 0 and met is not None and _zero_meets_infinite(untagged(c), d):
                    met.append(True)
                out.append(c if d == 1 else c * d if run is plain_call else run(operator.mul, c, d))
            else:
                d = conjugated(run, d)
                c = run(operator.mul, g, d)
                if not _finite(untagged(c)):
                    if met is not None and _zero_meets_infinite(untagged(g), untagged(d)):
                        met.append(True)
                    c = product(run, g, d, _nested_exact(g, d))
                out.append(summed_to(run, c, rec.vals[i]))
        return out
    if kind is GETITEM:
        shape, dtype, k = rec.kwargs
        return (run(getitem_back, g, shape, dtype, k),)
    if kind is SETITEM:
        vshape, k, vdtype = rec.kwargs
        return run(setitem_back, g, vshape, k, vdtype)
    meets = getattr(rec.f, "meets", None) if met is not None and run is plain_call else None
    # CUSTOM: a user adjoint's pullback, a hook, a checkpoint (``meets``: its segment's pass)
    out = run(rec.f, g) if meets is None else meets(g, met)
    if rec.vals and (type(out) is not tuple and type(out) is not list or len(out) != len(rec.parents)):
        raise _bad_pullback(rec, out)  # (only an adjoint's record keeps its arguments)
    return out


def _complex(g):
    """Whether cotangent ``g`` is complex (a rule may then hand a real argument a complex
    cotangent)."""
    tg = type(g)
    if tg is np.ndarray:
        return g.dtype.kind == "c"
    if tg is float or tg is _F64:
        return False
    if tg is Tagged:
        g = untagged(g)
    return np.iscomplexobj(g)


def _real_where_real(out, rec, run):
    """A rule's cotangents with the real part taken for each real argument: a rule that
    passes a complex cotangent on by position (``take``'s gather, ``cumsum`` with
    ``dtype=complex``) would give a real argument, which cannot move in the imaginary
    direction, the imaginary part too -- a complex gradient for a real input, and a wrong
    one for the complex values it came from (``abs(z)`` further back).  (The elements of a
    list argument: :func:`_element_cotangent`.)"""
    vals, fixed = rec.vals, None
    for i, c in enumerate(out):
        if c is None or i >= len(vals) or type(c) is list or type(c) is tuple:
            continue
        if _real_valued(vals[i]) and _complex(c):
            fixed = list(out) if fixed is None else fixed
            fixed[i] = run(np.real, c)
    return out if fixed is None else fixed


def _element_cotangent(tape, node, c, run):
    """Cotangent ``c`` of an element ``node`` of a list argument (``np.stack([abs(z), w])``):
    its real part where the element is real (the rule saw the list as one complex array,
    and handed every element a complex part)."""
    if not _complex(c):
        return c
    rec = tape[node]
    if type(rec) is tuple or type(rec) is _SCALAR_RECORD:  # (a float operation's result)
        return run(np.real, c)
    kind = rec.kind
    if (kind is RULE or kind is CUSTOM) and _real_valued(rec.ans) or (
            kind is GETITEM and rec.kwargs[1].kind in "biuf"):
        return run(np.real, c)
    return c  # (an input: its gradient is made real with it, assembly.like_leaf)


def _real_valued(v):
    """Whether ``v`` is a real number or real numeric array (a value that can only move
    along the real axis)."""
    v = untagged(v)
    tv = type(v)
    if tv is float or tv is int or tv is bool:
        return True
    if tv is np.ndarray or isinstance(v, np.number):
        return v.dtype.kind in "biuf"
    return False


def _nested_exact(g, d):
    """How a cotangent ``g`` times a partial ``d`` lets an exact zero win over an infinite
    factor inside a nested differentiation: a zero of a factor that varies with an
    enclosing one holds at the point alone (``2 x`` at 0 against sqrt's slope at ``x * x``),
    and does not win."""
    if type(g) is Tagged:
        return registry.no_zero_wins if type(d) is Tagged else registry.zero_of_second_wins
    return registry.zero_of_first_wins if type(d) is Tagged else registry.strong_mul


def _plain_partials(rec, g, partials, met=None):
    """``_step``'s partials branch for plain values (no enclosing differentiation): what
    ``call_partial``, ``summed_to``, ``product`` and ``conjugated`` do with ``plain_call``,
    in one frame (``met``: as :func:`_swept`'s)."""
    ans, vals, kwargs = rec.ans, rec.vals, rec.kwargs
    n = len(partials)
    out = []
    for i, p in enumerate(rec.parents):
        fn = partials[i] if i < n else None
        if p is None or fn is None:
            out.append(None)
            continue
        kind = _TRIVIAL.get(fn, _UNKNOWN)
        if kind is _UNKNOWN:
            kind = trivial(fn)
        if kind is not None and kind[0] == "const":
            d = kind[1]
        elif kind is not None and kind[1] <= len(vals):
            d = ans if kind[1] == 0 else vals[kind[1] - 1]
        else:
            try:
                d = fn(ans, *vals, **kwargs)
            except SINGULAR as exc:
                d = singular_partial(fn, rec.f, (ans,) + tuple(vals), kwargs, exc)
        x = vals[i]
        td = type(d)
        if td is float or td is int:  # a constant partial: sum over broadcast axes first
            c = _summed(g, x)
            if d != 1 and d - d != 0 and met is not None and _zero_meets_infinite(c, d):
                met.append(True)  # (an infinite partial, 0.5 / sqrt(0.0): see _swept)
            out.append(c if d == 1 else c * d)
            continue
        c = _scalar_dot(g, d, x)
        if c is None:
            if not (td is float or (td is np.ndarray and d.dtype.kind in "fi")):
                d = registry.conj(d)
            c = g * d
            if not _finite(c):
                if met is not None and _zero_meets_infinite(g, d):
                    met.append(True)
                c = registry.strong_mul(g, d)
            c = _summed(c, x)
        out.append(c)
    return out


def _finite(v):
    """Whether a product ``v`` (a number or an array) is finite throughout; ``True`` for what
    is neither (an integer, an object array)."""
    tv = type(v)
    if tv is np.ndarray:
        return v.dtype.kind not in "fc" or registry._all_finite(v)
    if tv in _INEXACT:
        return v - v == 0  # (NaN for an infinite or NaN number)
    return True


_INEXACT = frozenset({float, complex, np.float64, np.complex128, np.float32, np.complex64})


def _zero_meets_infinite(g, d):
    """Whether an exact zero of cotangent ``g`` meets a non-finite element of partial ``d``."""
    with np.errstate(invalid="ignore"):
        return bool(np.any((np.asarray(g) == 0) & ~np.isfinite(d)))


def _name(f):
    return getattr(f, "__qualname__", None) or repr(f)


def _bad_adjoint(f, adjoint, pair):
    """The clear error for an ``@capstan.adjoint`` rule whose result is not ``(y, pullback)``."""
    if type(pair) in (tuple, list) and len(pair) == 2:
        got = "(y, %s), whose pullback is not callable" % type(pair[1]).__name__
    elif type(pair) in (tuple, list):
        got = "a %s of %d" % (type(pair).__name__, len(pair))
    else:
        got = type(pair).__name__
    return TypeError("@capstan.adjoint(%s): the rule %s returned %s; it must return a pair "
                     "(y, pullback), pullback a function of the output's cotangent"
                     % (_name(f), _name(adjoint), got))


def _bad_pullback(rec, out):
    """The clear error for a user adjoint's pullback that does not return one cotangent per
    positional argument (a bare cotangent, too few or too many would pair cotangents with
    the wrong arguments, or drop some, without a word)."""
    got = ("a %s of %d" % (type(out).__name__, len(out))) if type(out) in (tuple, list) \
        else "a bare %s" % type(out).__name__
    n = len(rec.parents)
    return TypeError("@capstan.adjoint: the pullback %s returned %s; it must return a tuple with one "
                     "cotangent per positional argument (%d here, as in (%s); None for an argument "
                     "without one)" % (_name(rec.f), got, n, ", ".join(["d%d" % i for i in range(n)])
                                       + ("," if n == 1 else "")))


def _summed(g, x):
    """``summed_to(plain_call, g, x)``."""
    tg, tx = type(g), type(x)
    if (tg is np.ndarray and tx is np.ndarray and g.shape == x.shape and (g.dtype.kind != "c" or x.dtype.kind == "c")) \
            or (tg is float and tx is float):
        return g
    return registry.unbroadcast(g, x)


_UNKNOWN = object()


def _scalar_dot(g, d, x):
    """``sum(g * d)`` as one dot product, for a real scalar argument ``x`` of an elementwise
    step whose cotangent ``g`` and partial ``d`` are float64 arrays of one shape (a scalar
    parameter of an array formula: ``loc``, ``scale``); ``None`` otherwise, or when the dot
    is not finite (then the products are made one by one: an exact zero factor must win
    over an infinite one)."""
    tx = type(x)
    if not (tx is float or tx is _F64 or (tx is np.ndarray and x.ndim == 0 and x.dtype.kind == "f")):
        return None
    if (type(g) is not np.ndarray or type(d) is not np.ndarray or g.shape != d.shape
            or g.dtype != _F64 or d.dtype != _F64 or g.ndim == 0):
        return None
    c = np.dot(g.ravel(), d.ravel())
    return c if math.isfinite(c) else None


def _call(fn, g):
    """``fn(g)`` for a user function; inside the enclosing differentiation that ``g``
    belongs to, if any (this module is machinery, its calls are not routed)."""
    return overdub(context_of(g), fn, g) if type(g) is Tagged else fn(g)


def _writable(g):
    return g.copy() if type(g) is np.ndarray and not g.flags.writeable else g


# ----------------------------------------------------------------------------- public API
def adjoint(f: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering a user reverse rule for ``f``: the decorated function takes
    ``f``'s arguments and returns ``(y, pullback)``; ``pullback(dy)`` returns one
    cotangent per argument (``None`` for none)."""
    if not callable(f):
        raise TypeError("@capstan.adjoint(f): f must be callable, got %r" % (f,))

    def register(rule):
        if not callable(rule):
            raise TypeError("@capstan.adjoint(%s) must decorate a function" % getattr(f, "__name__", f))
        ADJOINTS[f] = rule
        registry._changed(f)
        return rule

    return register


class _Run:
    """One recorded run of ``f``: its tape, inputs and outputs."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...], fname: str, ctx: Any = None) -> None:
        if not callable(f):
            raise TypeError("capstan.%s(f, *args): f must be callable, got %r" % (fname, f))
        self.ctx = ctx = ReverseCtx() if ctx is None else ctx
        self.arg_structs: list[tuple[list[Any], list[Any], Callable[[Any], Any]]] = []
        tagged_args = []
        for a in args:
            if type(a) is float:  # (a float point: one leaf, its input node)
                t = ctx.input(a)
                self.arg_structs.append(([a], [metadata_of(t)], structure.single))
                tagged_args.append(t)
                continue
            leaves, rebuild = structure.flatten(a)
            if structure.is_flat(rebuild) and structure.all_floats(leaves):
                new, nodes = ctx.float_inputs(leaves)  # (a list or tuple of floats)
                self.arg_structs.append((leaves, nodes, rebuild))
                tagged_args.append(rebuild(new))
                continue
            nodes = []
            new = []
            for leaf in leaves:
                if type(leaf) is float or structure.is_differentiable(leaf):
                    if type(leaf) is np.ndarray:
                        outer = enclosing(leaf)
                        if outer is not None:  # a plain array holding an enclosing derivative
                            leaf = route(outer, copied, leaf)
                    t = ctx.input(leaf)
                    nodes.append(metadata_of(t))
                    new.append(t)
                else:
                    nodes.append(None)
                    new.append(leaf)
            self.arg_structs.append((leaves, nodes, rebuild))
            tagged_args.append(rebuild(new))
        with running(ctx):
            y = overdub(ctx, f, *tagged_args)
        losses.check_finished(ctx)
        if ctx.equalities:
            check_equalities(ctx)
        self.finish(y, fname)

    def finish(self, y, fname):
        """The run ended with output ``y``."""
        self.y = y = without_finished_tags(y)
        self.out_leaves, self.out_rebuild = structure.flatten(y)
        checks.no_object_arrays(self.out_leaves, fname)

    def primal(self):
        ctx = self.ctx
        return self.out_rebuild([value_of(leaf) if ctx.owns(leaf) else leaf for leaf in self.out_leaves])

    def back(self, seeds):
        return self.back_from(self.ctx.backward(seeds))

    def back_from(self, cts):
        """The argument gradients from the cotangents ``cts`` of every node."""
        out = []
        for leaves, nodes, rebuild in self.arg_structs:
            if rebuild is structure.single and type(leaves[0]) is float:  # (a float point)
                n = nodes[0]
                c = None if n is None else cts[n]
                out.append(None if c is None else _like(c, leaves[0]))
                continue
            got = [None if n is None else cts[n] for n in nodes]
            if structure.is_flat(rebuild) and structure.all_floats(leaves):  # (a list or tuple of floats)
                kinds = set(map(type, got))
                if kinds == _FLOAT_KIND:
                    out.append(rebuild(got))
                    continue
                if kinds == _FLOAT_OR_NONE:  # (0.0 where nothing flowed, as for any float leaf)
                    out.append(rebuild([0.0 if c is None else c for c in got]))
                    continue
            if all(c is None for c in got):
                out.append(None)
                continue
            fixed = []
            for leaf, n, c in zip(leaves, nodes, got):
                if n is None:
                    fixed.append(None)
                elif c is None:
                    fixed.append(structure.zeros_like(leaf))
                else:
                    fixed.append(_like(c, leaf))
            out.append(rebuild(fixed))
        return tuple(out)


_FLOAT_KIND = frozenset((float,))
_FLOAT_OR_NONE = frozenset((float, type(None)))


def _like(c, leaf):
    """Cotangent ``c`` as the type of its input ``leaf`` (float for float, float32 for
    float32...)."""
    if type(c) is float and type(leaf) is float:
        return c
    if type(c) is Tagged or type(leaf) is Tagged:  # (inside an enclosing differentiation)
        return route(enclosing(c, leaf), like_leaf, c, leaf)
    if not isinstance(leaf, (float, complex)) and hasattr(leaf, "dtype"):
        c = checks.match_dtype(c, leaf)
    if type(leaf) is float or (isinstance(leaf, float) and not isinstance(leaf, np.generic)):
        return float(np.real(c))  # (a float subclass's gradient is a float too)
    if type(leaf) is complex:
        return complex(c)
    if isinstance(leaf, np.ndarray) and not isinstance(c, np.ndarray):
        return np.full(leaf.shape, c, dtype=np.result_type(leaf, c))
    if isinstance(c, np.ndarray):
        if isinstance(leaf, np.ndarray) and c.dtype != leaf.dtype and c.dtype.kind == leaf.dtype.kind:
            return c.astype(leaf.dtype)  # (float32 in, float32 gradient)
        if not c.flags.writeable:
            return c.copy()  # a broadcast view made by the backward pass
    return c


def gradient(f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """Gradient of the real scalar function ``f`` with respect to each argument: a
    tuple of one gradient per argument, shaped like it (``None`` where nothing flows).

    Example::

        >>> import math, capstan
        >>> capstan.gradient(lambda x, y: x * math.sin(y), 2.0, 0.0)
        (0.0, 2.0)

    Raises:
        TypeError: no point given (``gradient(f)``: use ``capstan.grad(f)`` for a
            function), the point given by keyword, ``f`` not callable, no argument
            can carry a derivative (``gradient(f, 3)``: pass ``3.0``), or ``f`` returns
            no number (a string, ``None``).
        ValueError: ``f`` returns an array or a complex number, not a real scalar.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    if len(args) == 1 and type(args[0]) is float and not kwargs and callable(f):
        if type(f) is FunctionType and _reverse_entry is not None:  # (the same steps, in C)
            grads: tuple[Any, ...] = _reverse_entry(ReverseCtx, f, args[0])
        else:
            grads = _gradient_at_float(f, args[0])  # (the commonest call: every check passes)
        return grads
    if len(args) == 1 and type(args[0]) is np.ndarray and args[0].dtype is _DOUBLE and not kwargs and callable(f):
        grads = _gradient_at_array(f, args[0])  # (a float64 array: every check passes)
        return grads
    checks.point_given("gradient", args, kwargs)
    checks.check_callable("gradient", f)
    checks.require_differentiable("gradient", args)
    with borrowed(ReverseCtx) as ctx:
        return _gradient(_Run(f, args, "gradient", ctx), args)


def _gradient_at_array(f, x):
    """``gradient(f, x)`` at one float64 array ``x``: ``_Run`` and ``_gradient`` with their
    common case inline -- the input tagged whole, a float output carrying its node -- and
    their general steps for every other output."""
    with borrowed(ReverseCtx) as ctx:
        outer = enclosing(x)
        t = ctx.input(x if outer is None else route(outer, copied, x))  # (as _Run: an enclosing derivative)
        node = metadata_of(t)
        with running(ctx):
            y = run_at(ctx, f, t)
        if not ctx.equalities and type(y) is Tagged and tag_of(y) is ctx._tagkey and (
                type(value_of(y)) is float or type(value_of(y)) is _F64) and type(metadata_of(y)) is int:
            c = backward(ctx.tape, {metadata_of(y): 1.0})[node]
            if c is not None and _has_nan((c,)) and structure.all_finite(value_of(y)) and structure.all_finite(x):
                raise losses.undefined_in_reverse("gradient")  # (NaN where f and x are finite)
            return (None if c is None else _like(c, x),)
        return _gradient_rest(ctx, x, node, y)


def _gradient_at_float(f, x):
    """``gradient(f, x)`` at one float ``x``: ``_Run`` and ``_gradient`` with their common
    case inline (a float output carrying its node), which is the fixed cost of a run
    (``capstan_native.reverse_entry`` takes the same steps in C)."""
    with borrowed(ReverseCtx) as ctx:
        t = ctx.input(x)
        node = metadata_of(t)
        with running(ctx):
            y = run_at(ctx, f, t)
        if not ctx.equalities and type(y) is Tagged and tag_of(y) is ctx._tagkey and type(value_of(y)) is float:
            n = metadata_of(y)
            if n is None:
                return (None,)
            c = backward(ctx.tape, {n: 1.0})[node]
            if c is not None and c != c and x - x == 0 and value_of(y) - value_of(y) == 0:
                raise losses.undefined_in_reverse("gradient")  # (NaN where f and x are finite)
            return (None if c is None else _like(c, x),)
        return _gradient_rest(ctx, x, node, y)


def _gradient_rest(ctx, x, node, y):
    """``_gradient_at_float``'s and ``_gradient_at_array``'s other outputs: the general
    steps of ``_gradient``."""
    if ctx.equalities:
        check_equalities(ctx)
    run = _Run.__new__(_Run)
    run.ctx = ctx
    run.arg_structs = [([x], [node], structure.single)]
    run.finish(y, "gradient")
    return _gradient(run, (x,))


def _gradient(run: "_Run", args: tuple[Any, ...], fname: str = "gradient") -> tuple[Any, ...]:
    leaves = run.out_leaves
    y = run.y
    if len(leaves) != 1 or leaves[0] is not y:
        raise ValueError("capstan.%s: f must return a real scalar, got %s; use "
                         "capstan.jacobian(f, x) or capstan.pullback(f, *args) for other outputs"
                         % (fname, type(y).__name__))
    value = value_of(y) if run.ctx.owns(y) else y
    if type(value) is not float:  # (a float is a real scalar)
        real_scalar(fname, value)
    n = run.ctx.node(y)
    if n is None:
        return tuple(None for _ in args)
    grads: tuple[Any, ...] = run.back({n: 1.0})
    if _has_nan(grads) and structure.all_finite((value, [leaves for leaves, _, _ in run.arg_structs])):
        raise losses.undefined_in_reverse(fname)
    return grads


def real_scalar(fname: str, value: Any) -> None:
    """Refuse an output ``value`` of ``f`` that is no real scalar (the gradient's, and a
    replayed tape's, condition)."""
    checks.numeric_output(fname, [value], bools=False)
    if np.ndim(value) != 0:
        raise ValueError("capstan.%s: f must return a real scalar, got an array of shape %s; use "
                         "capstan.jacobian(f, x) or capstan.pullback(f, *args)" % (fname, np.shape(value)))
    if np.iscomplexobj(value):
        raise ValueError("capstan.%s: f returned a complex number; gradients are defined for "
                         "real-valued functions (use capstan.pullback for complex outputs)" % fname)


def _has_nan(tree: Any) -> bool:
    """Whether a gradient (a tuple of structures of floats and arrays) holds a NaN."""
    if type(tree) is tuple and all((type(g) is list or type(g) is tuple) and structure.all_floats(g)
                                   for g in tree):  # (gradients at lists of floats)
        return any(any(map(_isnan, g)) for g in tree)
    for leaf in structure.flatten(tree)[0]:
        v = untagged(leaf)
        if type(v) is float:
            if v != v:
                return True
        elif isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "fc" and np.isnan(np.sum(v)):
            if np.isnan(v).any():  # (the sum is NaN for inf - inf too)
                return True
    return False


if capstan_native is not None:
    capstan_native.setup_reverse(backward, _gradient_rest, _like, _INPUT)
    _reverse_entry = capstan_native.reverse_entry
else:
    _reverse_entry = None


def pullback(f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``(f(*args), back)``: ``back(dy)`` returns the tuple of argument cotangents for
    output cotangent ``dy`` (shaped like the output); ``back`` may be called many times.

    Example::

        >>> import capstan
        >>> y, back = capstan.pullback(lambda x: [x * x, 3.0 * x], 2.0)
        >>> y, back([1.0, 1.0])
        ([4.0, 6.0], (7.0,))

    Raises:
        TypeError: as :func:`gradient` (no point, a keyword point, ``f`` not callable,
            no argument that can carry a derivative).
        ValueError: ``dy`` does not have the structure or shapes of the output.
        capstan.NoRuleError: ``f`` calls a C function without a derivative rule.
    """
    return pullback_named("pullback", f, args, kwargs)


def pullback_named(fname: str, f: Callable[..., Any], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """:func:`pullback` for the entry point ``fname`` (named by its errors): ``back``
    refuses a cotangent that came out NaN where ``f``'s value, its arguments and ``dy``
    are finite, as :func:`gradient` does (an infinite partial whose terms cancel)."""
    checks.point_given(fname, args, kwargs)
    checks.check_callable(fname, f)
    checks.require_differentiable(fname, args)
    ctx, give_back = lent(ReverseCtx)  # (a new context's machinery costs a hundred microseconds)
    try:
        run = _Run(f, args, fname, ctx)
        y = run.primal()
        run.ctx.cleanup()
    except BaseException:
        give_back()
        raise

    def back(dy):
        if type(dy) is not float and isinstance(y, (dict, list, tuple)):
            dy = structure.aligned(y, dy, fname, "dy", "f's output")  # (a dict's entries by key)
        dleaves, _ = structure.flatten(dy)
        if len(dleaves) != len(run.out_leaves):
            raise ValueError("capstan.%s: dy must have the structure of f's output "
                             "(%d parts, got %d)" % (fname, len(run.out_leaves), len(dleaves)))
        seeds = {}
        for leaf, d in zip(run.out_leaves, dleaves):
            n = run.ctx.node(leaf)
            if n is not None and d is not None:
                value = value_of(leaf) if type(leaf) is Tagged else leaf
                if type(d) is not float:
                    checks.cotangent_leaf(fname, d)
                if np.shape(d) != np.shape(value):
                    raise ValueError("capstan.%s: dy has shape %s where the output has %s"
                                     % (fname, np.shape(d), np.shape(value)))
                seeds[n] = d if n not in seeds else seeds[n] + d
            elif n is None and d is not None and type(leaf) is not float:
                checks.cotangent_target(fname, leaf)
        grads = run.back(seeds)
        if seeds and _has_nan(grads) and _finite_run(run, dleaves):
            raise losses.undefined_in_reverse(fname)  # (NaN where f, its arguments and dy are finite)
        return grads

    weakref.finalize(back, give_back).atexit = False  # (the tape is used until back dies)
    return y, back


def _finite_run(run: "_Run", extra: Any = ()) -> bool:
    """Whether ``run``'s output values, its arguments and the leaves ``extra`` (the
    output cotangents) are all finite."""
    return structure.all_finite((run.out_leaves, [leaves for leaves, _, _ in run.arg_structs], list(extra)))


def reverse_jacobian(f: Callable[..., Any], x: Any, recorded: Any = None) -> Any:
    """Jacobian by reverse mode: one backward pass per output element (``recorded``: the
    ``(y, back)`` of a pullback already taken)."""
    structure.check_leaf(x, "jacobian")
    y, back = recorded or pullback_named("jacobian", f, (x,), {})
    checks.check_single_output(y)
    checks.numeric_output("jacobian", [y])
    ya = route(enclosing(y), as_array, y)
    shape = np.shape(ya)
    size = int(np.prod(shape))
    dtype = np.result_type(untagged(ya), untagged(x))
    rows = []
    rows_i: list[Any] | None = [] if np.iscomplexobj(untagged(ya)) and not np.iscomplexobj(untagged(x)) else None
    for i in range(size):
        e = np.zeros(size, dtype=untagged(ya).dtype)
        e[i] = 1.0
        rows.append(back(e.reshape(shape) if shape else e[0])[0])
        if rows_i is not None:  # (a complex output of a real input: 1j gives the imaginary parts)
            rows_i.append(back(1j * e.reshape(shape) if shape else 1j * e[0])[0])
    return route(enclosing(rows, rows_i), reverse_jacobian_from, rows, shape, np.shape(x), dtype, rows_i)
