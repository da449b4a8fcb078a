"""What forward and reverse differentiation contexts share.

* Every function with a rule becomes a ``@primitive`` of :class:`ADContext`; the
  primitive hands the call to the subclass's ``apply(f, args, kwargs)``.
  Operators only match when an operand is tagged (or is an array), so arithmetic on
  plain numbers keeps running as CPython's own instruction.
* Plain NumPy arrays that had a differentiated value written into them
  (``a[i] = x``) are *shadowed*: the context keeps their tangents (or tape nodes)
  beside them, keyed by identity, for the rest of the differentiation.
* ``fallback`` guards the door to C code: a function without a rule that turns a
  differentiated value into a float would silently drop its derivative, so it
  raises :class:`NoRuleError` instead.
"""
import bisect
import collections
import decimal
import dis
import fractions
import functools
import inspect
import heapq
import itertools
import math
import numbers
import operator
import sys
import types
from functools import partial
from typing import Any

import numpy as np

from overdub import Context, Tagged, is_structural, ops, overdub, primitive, recurse
from overdub._native import capstan_native
from overdub.semantics import PROTOCOLS, is_py, lookup
from overdub.tagging import context_of, metadata_of, tag_of, value_of

from . import jitted, losses, structure
from .aliasing import root_of
from .fastpaths import FAST
from .markers import stop_gradient
from .nesting import inner
from .pool import quiet_reset
from .losses import EQUALITIES, EXPORTING, NoRuleError, derivative_free, no_rule
from .rules import kink_rules, numpy_rules, registry, stdlib_rules, ufunc_rules

_BINARY = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.matmul, operator.iadd, operator.isub,
           operator.imul, operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
           operator.imatmul, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
           operator.ne, operator.getitem}
_UNARY = {operator.neg, operator.pos, abs}
#: the arithmetic operators capstan differentiates, by their names in overdub's one table
_ARITHMETIC = ("ADD", "SUBTRACT", "MULTIPLY", "TRUE_DIVIDE", "FLOOR_DIVIDE", "REMAINDER", "POWER",
               "MATRIX_MULTIPLY")
#: in-place operator -> its plain operator (``operator.iadd -> operator.add``...)
INPLACE = {ops.INPLACE["INPLACE_" + name][0]: ops.BINARY[name][0] for name in _ARITHMETIC}
#: operator -> (method, reflected method, symbol in CPython's error message)
_DUNDERS = {ops.BINARY[name][0]: ops.BINARY[name][1:] for name in _ARITHMETIC}
_UNARY_DUNDERS = {operator.neg: ("__neg__", "unary -"), operator.pos: ("__pos__", "unary +"),
                  abs: ("__abs__", "abs()")}
#: the numbers and arrays capstan's rules take as operands; a user class registered as a
#: ``numbers.Number`` (``class Q(numbers.Real)``) is not one: its own ``__mul__``... may hold
#: differentiated values, and runs routed like any user class's
_NUMERIC = (int, float, complex, fractions.Fraction, decimal.Decimal, np.ndarray, np.generic, Tagged)
#: comparisons within a tolerance, computed as decisions on the plain values
_TOLERANCES = {np.isclose, np.allclose}
_JUMPS = registry.JUMPS
#: module-name prefixes whose functions read list arguments as matrices
_MATRIX_MODULES = ("numpy.linalg", "scipy.linalg")
_PLAIN_NUMERIC = {float, int, complex, bool, np.ndarray, np.float64, np.float32, np.complex128, Tagged}
_ARRAYS = (np.ndarray, np.generic)  # (a tagged one answers isinstance as its value)
NOT_MINE = object()
OPERATORS = set(_DUNDERS) | set(_UNARY_DUNDERS) | set(INPLACE)


def _conditions(f):
    """The argument-type patterns under which calls of ``f`` are taken over."""
    if f in _BINARY:
        return [(Tagged,), (object, Tagged), (np.ndarray,), (object, np.ndarray)]
    if f in _UNARY:
        return [(Tagged,), (np.ndarray,)]
    if getattr(f, "__module__", None) in ("math", "cmath") and f not in registry.IMPLS:  # numbers only
        return [(Tagged,), (object, Tagged)]  # (further positions reach ``fallback``)
    return [()]


_registered = {}
#: argument types that never carry a derivative (an exact type check: a subclass may compute)
_PLAIN_NUMBERS = frozenset({int, float, bool, complex})


def _register(f):
    if f in _registered:
        return
    def rule(self, /, *args, **kwargs):
        for a in args:
            if type(a) not in _PLAIN_NUMBERS:
                break
        else:  # (plain numbers alone carry no derivative: float(i), int(3.5), round(2.5))
            if not kwargs and f not in registry.SOLVERS:
                return self.fallback(f, *args)
        return self.apply(f, args, kwargs)

    rule.__name__ = rule.__qualname__ = "rule_for_" + getattr(f, "__name__", "f")
    if capstan_native is not None:  # (reverse mode's calls on float64 arrays in C; the rest: rule)
        rule.__overdub_native__ = capstan_native.RuleTwin(f, rule)
    for argtypes in _conditions(f):
        primitive(f, *argtypes)(rule)
    _registered[f] = rule
    setattr(ADContext, "_rule_%d" % len(_registered), rule)


#: what ADContext.reset finds empty after a quiet run (see capstan.pool.quiet_reset)
_QUIET_EMPTY = ("stored", "shadows", "losses", "texts", "outside")
#: types math functions take as they are (no Python ``__float__`` to run routed)
_FLOATS_AS_IS = frozenset({float, int, bool, Tagged, np.float64, np.float32})
_FLOAT_READER_TYPES = frozenset({types.BuiltinFunctionType, type})
#: C functions that read their arguments with ``__float__``: math's and NumPy's float types
_FLOAT_READERS = frozenset({f for f in vars(math).values() if type(f) is types.BuiltinFunctionType}
                           | {np.float64, np.float32, np.float16, np.longdouble})


class ADContext(Context):
    """Base of the differentiation contexts (see the module docstring)."""

    # slots: the end of every run reads each (capstan.pool.quiet_reset), in C, at an offset
    __slots__ = ("shadows", "losses", "texts", "decisions", "outside")
    in_rules = 0  # how deep capstan's own rule code runs here (its exact comparisons are exempt)

    def __init__(self, metadata=None, pass_=None):
        super().__init__(metadata, pass_)
        self.outside = ()  # the differentiations enclosing this one's run, innermost first (nesting.push)
        self.shadows = {}  # id(plain ndarray) -> (the array, its tangent or tape node)
        self.losses = []  # refusals of this run (raised at its end even if code caught them)
        self.texts = set()  # text made from differentiated values during this run
        self.decisions = None  # a list: record (function, result) of each decision taken

    @quiet_reset(none=("decisions",), empty=_QUIET_EMPTY)
    def reset(self):
        """Forget the state of the last run (the context is about to be reused).  What the
        run left empty is kept: most runs store, shadow and refuse nothing."""
        if self.__dict__.get("stored"):
            self.cleanup()
        if self.shadows:
            self.shadows = {}
        if self.losses:
            self.losses = []
        if self.texts:
            self.texts = set()
        if self.outside:  # (no reference to the enclosing runs' contexts kept past this one)
            self.outside = ()
        self.decisions = None

    # -- containers that received differentiated values ------------------------------------------
    def cleanup(self):
        """Replace this context's tagged values left in containers and attributes written
        during the run by their plain values, so that state outside ``f`` ends as plain
        Python would leave it."""
        stored, self.stored = self.__dict__.get("stored", {}), {}
        for target, name in stored.values():
            if name is _WHOLE:
                if type(target) is list or type(target) is collections.deque:
                    for i, v in enumerate(target):
                        if self.owns(v):
                            target[i] = _strip(v, self)
                elif type(target) is dict or isinstance(target, dict):
                    for k, v in list(target.items()):
                        if self.owns(v):
                            target[k] = _strip(v, self)
            else:
                d = getattr(target, "__dict__", None)
                if d is not None and self.owns(d.get(name)):
                    if type(d) is dict:
                        d[name] = _strip(d[name], self)
                    else:  # a class's attribute (its __dict__ is a read-only mappingproxy)
                        type.__setattr__(target, name, _strip(d[name], self))
                    continue
                slot = getattr(type(target), name, None)  # (an instance with __slots__)
                if type(slot) is types.MemberDescriptorType:
                    try:
                        v = slot.__get__(target)
                    except AttributeError:
                        continue
                    if self.owns(v):
                        slot.__set__(target, _strip(v, self))

    def remember(self, target, name=None):
        """Note that ``target`` (or its attribute ``name``) received a differentiated value
        (once per container: appending in a loop stays linear)."""
        name = _WHOLE if name is None else name
        stored = self.__dict__.get("stored")
        if stored is None:
            stored = self.stored = {}
        stored[id(target), name] = (target, name)

    @primitive(operator.setitem, object, object, Tagged)
    def store_item(self, c, k, v):
        if type(c) is np.ndarray or self.owns(c):
            return self.setitem(c, k, v)
        if type(c) is np.flatiter:  # plain.flat[k] = x (np.diagflat): a write in C order
            overdub(self, np.put, c.base, np.arange(c.base.size)[k], v)
            return None
        out = recurse(self, operator.setitem, c, k, v)
        if isinstance(c, (list, dict)):
            self.remember(c)
        return out

    @primitive(operator.setitem, (np.ndarray, Tagged), object, (list, tuple))
    def store_sequence(self, c, k, v):
        """``a[k] = [x, y]`` into an array: a list holding differentiated values is written
        as the array NumPy makes of it (NumPy would convert each to a plain float)."""
        if self._differentiated((v,), {}):
            return overdub(self, operator.setitem, c, k, overdub(self, np.asarray, v))
        return recurse(self, operator.setitem, c, k, v)

    @primitive(setattr, object, object, Tagged)
    def store_attr(self, o, name, v):
        if isinstance(raw(o), np.ndarray):
            return self.store_array_attr(o, name, v)
        out = recurse(self, setattr, o, name, v)
        self.remember(o, name)
        return out

    @primitive(setattr, Tagged, object, Tagged)  # (object matches no value this context tags)
    @primitive(setattr, Tagged, object, object)
    @primitive(setattr, np.ndarray, object, object)
    def store_array_attr(self, o, name, v):
        """``a.real = v``, ``a.imag = v``, ``a.flat = v``: writes into ``a``'s elements,
        made as the element writes they are (so that the derivative follows them).
        ``a.shape``, ``a.strides``, ``a.dtype`` relabel the memory of an array being
        differentiated in place, which its derivative cannot follow: refused (NumPy's call
        wrote the value only, and the derivative kept the old layout)."""
        value = raw(o)
        if not isinstance(value, np.ndarray) or not self._differentiated((o, v), {}):
            return recurse(self, setattr, o, name, v)
        if name in ("real", "imag") and (name == "real" or value.dtype.kind == "c"):
            overdub(self, operator.setitem, overdub(self, getattr, o, name), Ellipsis, v)
            return None
        if name == "flat":
            overdub(self, np.put, o, np.arange(value.size), v)
            return None
        if name == "shape" and not self.owns(v):
            try:
                same = value.reshape(v).shape == value.shape  # (the same shape: nothing moves)
            except (TypeError, ValueError):
                same = False
            if same:
                return recurse(self, setattr, o, name, v)
        if name in ("shape", "strides", "dtype"):
            recurse(self, setattr, np.empty_like(value), name, raw(v))  # (NumPy's own errors first)
            raise NoRuleError("capstan: setting ndarray.%s of an array being differentiated changes its "
                              "layout in place, which the derivative cannot follow; use a new array: "
                              "a = a.reshape(...) / a.view(...) / a.astype(...)" % name)
        return recurse(self, setattr, o, name, v)


    def user_operator(self, f, args):
        """``a * b`` where an operand is a user object (a class with ``__mul__``...): run
        that class's own Python method inside the context, as plain Python would call
        it; ``NOT_MINE`` when every operand is a number or an array."""
        called = f
        if f in INPLACE:
            if not isinstance(args[0], _NUMERIC):
                method = getattr(type(args[0]), "__i%s__" % _DUNDERS[INPLACE[f]][0][2:-2], None)
                if method is not None:
                    out = overdub(self, method, *args)
                    if out is not NotImplemented:
                        return out
            f = INPLACE[f]
        if f in _UNARY_DUNDERS:
            if isinstance(args[0], _NUMERIC):
                return NOT_MINE
            name, sym = _UNARY_DUNDERS[f]
            method = getattr(type(args[0]), name, None)
            if method is None:
                raise TypeError("bad operand type for %s: '%s'" % (sym, type(args[0]).__name__))
            return overdub(self, method, args[0])
        entry = _DUNDERS.get(f)
        if entry is None or len(args) != 2:
            return NOT_MINE
        a, b = args
        if (type(a) in _PLAIN_NUMERIC or isinstance(a, _NUMERIC)) and (
                type(b) in _PLAIN_NUMERIC or isinstance(b, _NUMERIC)):
            return NOT_MINE
        arrays = _ARRAYS if f is not operator.mul else np.ndarray  # (a NumPy scalar * a list: repetition)
        if isinstance(a, arrays) and isinstance(b, (list, tuple)) or (
                isinstance(b, arrays) and isinstance(a, (list, tuple))):  # array * [1, 2, 3]:
            return self.apply(called, tuple(overdub(self, np.asarray, v) if isinstance(v, (list, tuple)) else v
                                            for v in args), {})  # NumPy makes the sequence an array
        name, rname, sym = entry
        if _overridden_operator(a, b):  # arr * w: NumPy's operator calls np.multiply, which
            return overdub(self, _OPERATOR_UFUNCS[f], a, b)  # w's Python __array_ufunc__ takes
        for obj, other, method_name in ((a, b, name), (b, a, rname)):
            if isinstance(obj, _NUMERIC) or isinstance(obj, (list, tuple, str, bytes, dict)):
                continue
            method = getattr(type(obj), method_name, None)
            if method is not None:
                out = overdub(self, method, obj, other)
                if out is not NotImplemented:
                    return out
        ta, tb = type(raw(a)), type(raw(b))
        if sym == "*" and (issubclass(ta, (list, tuple)) or issubclass(tb, (list, tuple))):
            raise TypeError("can't multiply sequence by non-int of type '%s'"
                            % _type_name(tb if issubclass(ta, (list, tuple)) else ta))
        raise TypeError("unsupported operand type(s) for %s: '%s' and '%s'" % (sym, _type_name(ta), _type_name(tb)))

    def nested_arrays(self, seq):
        """``seq`` with inner lists holding differentiated values made arrays (inside the
        context), so that rules see one level of list: ``np.array([[x, y], [y, x]])``."""
        if not any((type(e) is list or type(e) is tuple) and self._differentiated(e, {}) for e in seq):
            return seq
        return type(seq)(overdub(self, np.asarray, e)
                         if (type(e) is list or type(e) is tuple) and self._differentiated(e, {}) else e
                         for e in seq)

    # -- taking arguments apart and applying rules (both modes) ----------------------------------
    def _split(self, args):
        """``(values, metadata, any differentiated, enclosing context)`` of positional
        arguments: values without this context's tags, their tangents or nodes (``None`` for
        constants); lists and tuples of differentiated values are split one level deep."""
        key = self._tagkey
        vals = list(args)
        metas = [None] * len(args)
        found = False
        foreign = None
        for i, a in enumerate(args):
            ta = type(a)
            if ta is Tagged:
                if tag_of(a) is key:
                    vals[i] = v = value_of(a)
                    metas[i] = m = metadata_of(a)
                    found = True
                    if type(v) is Tagged:
                        foreign = inner(foreign, context_of(v))
                    if type(m) is Tagged:  # a tangent carrying an enclosing derivative
                        foreign = inner(foreign, context_of(m))
                else:
                    foreign = inner(foreign, context_of(a))
            elif ta is np.ndarray:
                entry = self.shadow(a)
                if entry is not None:
                    metas[i] = entry[1]
                    found = True
                    foreign = inner(foreign, entry[2])
                elif self.outside:
                    foreign = inner(foreign, self.outer_shadow(a))
            elif (ta is list or ta is tuple) and a:
                a = self.nested_arrays(a)
                sub_vals, sub_metas, sub_found, sub_foreign = self._split(a)
                if sub_found:
                    vals[i], metas[i], found = ta(sub_vals), sub_metas, True
                foreign = inner(foreign, sub_foreign)
        return vals, metas, found, foreign

    def _as_matrices(self, args):
        """Lists and tuples holding differentiated values, as the arrays a linear-algebra
        function reads them as (``np.linalg.eigvalsh([[x, 0.1], [0.1, 2.0]])``)."""
        out = None
        for i, a in enumerate(args):
            if (type(a) is list or type(a) is tuple) and self._differentiated((a,), {}):
                try:  # (only a regular numeric array: scipy's (lu, piv) pairs stay as they are)
                    numeric = np.asarray(_plain_tree(a)).dtype.kind in "biufc"
                except (ValueError, TypeError):
                    numeric = False
                if numeric:
                    out = list(args) if out is None else out
                    out[i] = overdub(self, np.asarray, a)
        return args if out is None else tuple(out)

    def _floats_by_protocol(self, args):
        """``args`` with each object whose class defines ``__float__`` in Python replaced by
        its routed ``float(...)``, for a ``math`` function or a NumPy float type (which call
        ``__float__`` from C, where a derivative it computes would be lost); ``None`` when
        there is none."""
        out = None
        for i, a in enumerate(args):
            tp = type(a)
            if tp not in _FLOATS_AS_IS and is_py(lookup(tp, "__float__")):
                out = list(args) if out is None else out
                out[i] = overdub(self, float, a)
        return None if out is None else tuple(out)

    def _as_operands(self, args):
        """A ufunc's list and tuple operands as the arrays NumPy reads them as (through
        ``np.asarray`` routed here where they hold differentiated values), so that its
        partials compute on arrays (``np.multiply([2.0, 3.0], x)``)."""
        out = None
        for i, a in enumerate(args):
            if type(a) is list or type(a) is tuple:
                try:
                    numeric = np.asarray(_plain_tree(a)).dtype.kind in "biufc"
                except (ValueError, TypeError):
                    numeric = False
                if numeric:
                    out = list(args) if out is None else out
                    out[i] = overdub(self, np.asarray, a) if self._differentiated((a,), {}) else np.asarray(a)
        return args if out is None else tuple(out)

    def _array_protocol(self, args):
        """``args`` with each user object whose class defines ``__array__`` in Python, and
        whose ``__array__()`` (run here) gives differentiated values, replaced by that array:
        NumPy would call the method from C, where its result cannot be a tagged array."""
        out = None
        for i, a in enumerate(args):
            if type(a) in _NOT_ARRAY_PROTOCOL:
                continue
            method = getattr(type(a), "__array__", None)
            if type(method) is types.FunctionType:
                array = overdub(self, method, a)
                if self._differentiated((array,), {}):
                    out = list(args) if out is None else out
                    out[i] = array
        return args if out is None else tuple(out)

    def numpy_override(self, f, args, kwargs):
        """A NumPy function or ufunc (or ufunc method) given a user object whose class
        overrides it in Python (``__array_ufunc__`` / ``__array_function__``, not an ndarray
        subclass): that method run here, as NumPy calls it, so that the differentiated
        values it holds reach the rules (called from C, it would compute on them unseen);
        ``NOT_MINE`` where no argument overrides ``f`` or every override declines."""
        for a in args:  # (the common call: arrays, numbers, tagged values only)
            if type(a) not in _PLAIN_OPERANDS:
                break
        else:
            if not kwargs:
                return NOT_MINE
        owner = getattr(f, "__self__", None)
        if type(f) is np.ufunc:
            ufunc, method, name = f, "__call__", "__array_ufunc__"
        elif type(owner) is np.ufunc:
            ufunc, method, name = owner, f.__name__, "__array_ufunc__"
        elif getattr(f, "_implementation", None) is not None:  # (NumPy's dispatched functions)
            ufunc = method = None
            name = "__array_function__"
        else:
            return NOT_MINE
        found = []
        candidates = list(args) + list(kwargs.values())
        if name == "__array_ufunc__":  # (out=(a, b): its arrays are operands too)
            out = kwargs.get("out")
            if type(out) is tuple:
                candidates.extend(out)
        else:  # (np.concatenate([w, v]): the sequences' elements are relevant too)
            candidates.extend(e for a in args if type(a) is list or type(a) is tuple for e in a)
        for a in candidates:
            ta = type(a)
            if ta in _NOT_ARRAY_PROTOCOL or isinstance(a, (np.ndarray, np.generic)):
                continue
            if type(getattr(ta, name, None)) is types.FunctionType and ta not in found:
                found.append(ta)
        if not found:
            return NOT_MINE
        # NumPy's order: a subclass before its base class, otherwise left to right
        found.sort(key=lambda t: sum(1 for u in found if u is not t and issubclass(u, t)))
        for ta in found:
            obj = next(a for a in candidates if type(a) is ta)
            if ufunc is not None:
                out = overdub(self, getattr(ta, name), obj, ufunc, method, *args, **kwargs)
            else:
                out = overdub(self, getattr(ta, name), obj, f, tuple(found), args, kwargs)
            if out is not NotImplemented:
                return out
        return NOT_MINE

    def meta(self, x):
        """The tangent (forward) or node (reverse) ``x`` carries here; ``None``: a constant."""
        if type(x) is Tagged:
            return metadata_of(x) if tag_of(x) is self._tagkey else None
        entry = self.shadow(x)
        return entry[1] if entry is not None else None

    def apply(self, f, args, kwargs):
        """A call of ``f`` (which has a rule) with these arguments: the parts both modes
        share, then the mode's ``compute``."""
        solver = registry.SOLVERS.get(f)
        if solver is not None:  # (taken over even when no argument is differentiated: closures)
            return solver(self, f, args, kwargs)
        if _numpy_function(f):
            out = self.numpy_override(f, args, kwargs)
            if out is not NOT_MINE:
                return out
        if type(f) is np.ufunc and len(args) > f.nin and "out" not in kwargs:  # np.subtract(a, b, y)
            out = tuple(args[f.nin:])
            args, kwargs = args[:f.nin], {**kwargs, "out": out[0] if len(out) == 1 else out}
        elif len(args) > 2 and "out" not in kwargs:  # np.outer(x, y, buf), np.sum(a, 0, None, buf)
            args, kwargs = _out_by_keyword(f, args, kwargs)
        impl = registry.IMPLS.get(f)
        if impl is not None and not _lazy(impl):
            # (a C function of iterables: generators and map objects as lists; not one that
            # reads them lazily, as itertools.chain: an infinite one, or one whose reading has
            # side effects, is read as plainly, one element at a time)
            args, kwargs = _materialized(args, kwargs, _read_limit(f, args, kwargs))
        if kwargs and impl is None and self._differentiated((), kwargs):
            # (an implementation takes the call as it is: no signature to bind; a list of
            # values by keyword too: np.stack(arrays=[x, y]))
            args, kwargs = registry.positional(f, args, kwargs) or (args, kwargs)
        vals, metas, found, foreign = self._split(args)
        if impl is not None and (found or self._differentiated((), kwargs) or any(
                type(a) is dict and self._in_tree(a) for a in args)):  # (json.dumps({"a": x}))
            if found and _list_of_matrices(f, metas):
                args = self._as_matrices(args)
            out = kwargs.get("out")
            if out is not None and (type(raw(out)) is np.ndarray or type(out) is tuple):
                # (an implementation returns its result: written into out as NumPy's does,
                # where np.outer(x, y, out=buf) left buf as it was)
                out = out[0] if type(out) is tuple and len(out) == 1 else out
                if type(raw(out)) is np.ndarray:
                    return self._write_out(f, args, kwargs, out)
            return overdub(self, impl, *args, **kwargs)
        if found and _list_of_matrices(f, metas):
            matrices = self._as_matrices(args)
            if matrices is not args:
                return overdub(self, f, *matrices, **kwargs)
        if found and type(f) is np.ufunc and any(type(v) is list or type(v) is tuple for v in vals):
            operands = self._as_operands(args)  # (the rules' formulas need arrays: 1.0 / [2.0, 3.0])
            if operands is not args:
                return overdub(self, f, *operands, **kwargs)
        if kwargs and (any(self.meta(v) is not None for v in kwargs.values()) or not found and any(
                k != "out" and (type(v) is list or type(v) is tuple) and self._differentiated(v, {})
                for k, v in kwargs.items())):  # (a list of values by a keyword the signature
            out = kwargs.get("out")  # does not take by position: the rule would not see it)
            out = out[0] if type(out) is tuple and len(out) == 1 else out
            if self.meta(out) is not None and type(raw(out)) is np.ndarray:
                return self._write_out(f, args, kwargs, out)
            raise TypeError("capstan: pass the differentiated value to %s positionally, not as a "
                            "keyword argument" % getattr(f, "__name__", f))
        if kwargs and type(f) is np.ufunc and kwargs.get("where", True) is not True and found:
            return self._masked_ufunc(f, args, kwargs)
        if not found and args and _numpy_function(f):  # np.asarray(obj) of a Python __array__
            converted = self._array_protocol(args)
            if converted is not args:
                return overdub(self, f, *converted, **kwargs)
        if not found and foreign is not None:
            # only an enclosing differentiation's values (plain arrays it wrote into: v * v of
            # np.vander's result inside D of D): its call, or the operator ran plainly and lost them
            return overdub(foreign, f, *args, **kwargs)
        if not found:  # (an operator on user objects runs their methods routed, as usual)
            op = INPLACE.get(f, f)
            if op in _OPERATOR_UFUNCS and len(args) == 2 and _overridden_operator(*args):
                return overdub(self, _OPERATOR_UFUNCS[op], *args)
            if f in OPERATORS or f in PROTOCOLS or (impl is not None and type(f) is types.FunctionType
                                                    and _holders(args)):  # (np.polymul(poly1d, poly1d)...)
                return recurse(self, f, *args, **kwargs)
            return self.fallback(f, *args, **kwargs)
        if f in OPERATORS and type(vals[0]) in (str, bytes):  # "%.3f" % x: text, no derivative
            out = self._plain(f, args, kwargs)
            losses.note_text(self, out)
            if f is operator.mod and len(args) == 2:  # (and what each value became: "v=%r;" % x)
                losses.note_format(self, vals[0], args[1], losses.plain_copy(args[1]))
            return out
        if f in OPERATORS:
            out = self.user_operator(f, args)
            if out is not NOT_MINE:
                return out
        if f is operator.getitem and metas[0] is None:  # only the key differentiated: np.r_[x]
            method = getattr(type(args[0]), "__getitem__", None)
            if type(method) is types.FunctionType:
                return overdub(self, method, *args)
            if isinstance(args[0], (dict, types.MappingProxyType)):  # by the key itself, as `key in d`:
                return args[0][args[1]]  # an equal plain key found is an equality that held (losses)
            return Context.fallback(self, f, *vals)
        if f is operator.getitem:  # a[key] with an array key on an array written to: the mode's read
            return self.getitem(*args)
        if f in registry.NONDIFF:
            out = Context.fallback(self, f, *vals, **kwargs)
            self._tests_held(f, args, vals, metas, kwargs, out)
            return out if foreign is None or f not in _JUMPS else jumped(self, foreign, f, out, vals, kwargs)
        if f in losses.ZERO_TESTS and not self.in_rules:  # np.where(a, x, y), a.astype(bool)
            losses.zero_test_held(self, f, args, vals, metas, kwargs, sys._getframe(1))
        run = plain_call if foreign is None else routed(foreign)
        out = self.compute(f, vals, metas, kwargs, args, run, foreign)
        return out if foreign is None or f not in _JUMPS else jumped(self, foreign, f, out, vals, kwargs)

    def _equality(self, f, vals, metas, out):
        """An exact comparison ``f`` of a differentiated value gave ``out``: where the
        equality held, the mode checks whether a branch on it could be a formula valid only
        at that point (``losses``, channel 6)."""
        if len(vals) != 2 or not _numbers(vals):
            return
        where = losses.equal_where(f, out)
        if where is not None and not losses.compared_by_capstan(sys._getframe(1)):
            self.equality_held(f, vals, metas, where)

    def equality_held(self, f, vals, metas, where):
        """(Each mode says what an exact equality that held means for its derivative.)"""

    def decided(self, f, out):
        """Note the result of ``f``, a function without derivative applied to a differentiated
        value (a comparison, ``np.floor``...): branches may follow it, so sparsity patterns
        keep these as guards (``capstan.sparse``).  Values made without reading the input's
        values (``np.empty_like``) are no decisions."""
        if getattr(f, "__name__", "").endswith("_like"):
            return
        self.decisions.append((f, out.copy() if type(out) is np.ndarray else out))

    def _masked_ufunc(self, f, args, kwargs):
        """``f(..., where=mask)`` of a value being differentiated, for a ufunc ``f`` with one
        output: NumPy's own call for the errors and warnings, then ``f`` of the operands with
        their elements where ``mask`` is false replaced by those at a point where it is true
        (the rules' partials are never formed outside the domain NumPy was asked about), and
        ``np.where(mask, that, out)`` written into ``out`` -- or ``np.where(mask, that, 0)``
        where no ``out`` is given (NumPy leaves those elements uninitialized)."""
        if f.nout != 1:
            raise NoRuleError("capstan: np.%s(..., where=...) of a value being differentiated has no "
                              "derivative rule (a ufunc with %d results); call it without where= and "
                              "select with np.where(mask, ...) on its results" % (f.__name__, f.nout))
        out = kwargs.get("out")
        out = out[0] if type(out) is tuple and len(out) == 1 else out
        where = kwargs["where"]
        rest = {k: v for k, v in kwargs.items() if k not in ("out", "where")}
        if out is not None and type(raw(out)) is not np.ndarray:
            raise TypeError("capstan: np.%s(..., out=...) takes an ndarray for out" % f.__name__)
        given = {} if "out" not in kwargs else {"out": kwargs["out"] if out is None else np.array(raw(out))}
        plain = Context.fallback(self, f, *args, **rest, where=where, **given)  # (into a copy of out)
        mask = np.asarray(raw(where), dtype=bool)
        shape = np.broadcast_shapes(mask.shape, *(np.shape(raw(a)) for a in args),
                                    *(() if out is None else (np.shape(raw(out)),)))
        mask = np.broadcast_to(mask, shape)
        if not mask.any():  # (nothing computed: out as it was, or the uninitialized result)
            return plain if out is None else kwargs["out"]
        at = np.unravel_index(int(np.argmax(mask)), shape)
        operands = []
        for a in args:
            a = overdub(self, np.broadcast_to, a, shape)
            operands.append(overdub(self, np.where, mask, a, overdub(self, operator.getitem, a, at)))
        with np.errstate(all="ignore"):  # (NumPy's call above gave its warnings)
            full = overdub(self, f, *operands, **rest)
        if out is None:
            return overdub(self, np.where, mask, full, np.zeros((), dtype=plain.dtype))
        overdub(self, operator.setitem, out, Ellipsis, overdub(self, np.where, mask, full, out))
        return kwargs["out"]

    def _write_out(self, f, args, kwargs, out):
        """``f(..., out=y)`` into an array ``y`` that carries a derivative: ``y[...] = f(...)``
        (a ufunc's ``where=`` keeps ``y``'s old elements where it is false), the write that
        both modes follow like any other."""
        rest = {k: v for k, v in kwargs.items() if k not in ("out", "where", "casting")}
        result = overdub(self, f, *args, **rest)
        where = kwargs.get("where", True)
        if type(f) is np.ufunc and where is not True:
            result = overdub(self, np.where, where, result, out)
        overdub(self, operator.setitem, out, Ellipsis, result)
        return kwargs["out"]

    def compute(self, f, vals, metas, kwargs, args, run, foreign):  # pragma: no cover - per mode
        raise NotImplementedError

    @primitive(iter, Tagged)
    @primitive(iter, np.ndarray)
    def iter_(self, x, *sentinel):
        """``iter(x)`` of a differentiated array, or of a plain one holding differentiated
        values (``np.full(n, x)``, written into): its elements, differentiated."""
        value = value_of(x) if type(x) is Tagged else x
        plain = iter(value, *sentinel)  # (NumPy's own errors: 0-d arrays...)
        if sentinel:
            return plain
        if self.meta(x) is None:
            value, foreign = self.unwrap(x)
            if type(value) is np.ndarray and isinstance(foreign, ADContext) and foreign.shadow(value) is not None:
                return overdub(foreign, iter, value)  # (an enclosing differentiation's values)
            return plain
        return (self.getitem(x, i) for i in range(len(value)))

    @primitive(operator.mod, str)
    @primitive(operator.mod, bytes)
    @primitive(operator.imod, str)
    @primitive(operator.imod, bytes)
    @primitive(str.__mod__, str)
    @primitive(bytes.__mod__, bytes)
    def format_text(self, fmt, values):
        """``"%.3f %s" % (x, y)``: CPython's formatting reads the values, inside a tuple or
        dict too, in C; it runs as the explicit ``str.__mod__(fmt, values)`` call does (the
        fallback: the values formatted as themselves, text that is read back refused)."""
        if type(fmt) is not str and type(fmt) is not bytes:
            return recurse(self, operator.mod, fmt, values)  # (a subclass: its own __mod__, if any)
        out = self.fallback(type(fmt).__mod__, fmt, values)
        losses.note_format(self, fmt, values, losses.plain_copy(values))
        return out

    @primitive(stop_gradient)
    def stop_gradient_(self, x):
        """``x`` without the derivative this context (and every enclosing one) carries."""
        leaves, rebuild = structure.flatten(x)
        plain = []
        for leaf in leaves:
            value, foreign = self.unwrap(leaf)
            if type(value) is np.ndarray and self.shadow(value) is not None:
                value = value.copy()  # (a plain array holding differentiated values)
            if foreign is not None:
                value = overdub(foreign, stop_gradient, value)
            plain.append(value)
        return rebuild(plain)

    @primitive(getattr, Tagged)
    @primitive(getattr, np.ndarray)
    def getattr_(self, o, name, *default):
        """``x.real``, ``x.T`` (rules); ``x.sum(...)`` becomes ``type(x).sum(x, ...)`` -- for
        differentiated values and for plain arrays holding differentiated values alike."""
        if type(o) is not Tagged:
            if not self.shadows or self.shadow(o) is None:
                return getattr(o, name, *default)
            value = o
        else:
            value = value_of(o)
        rule = ATTRIBUTES.get(name)
        if rule is not None and hasattr(value, name):
            return self.apply(rule, (o,), {})
        attr = getattr(type(raw(value)), name, None)
        if callable(attr) and not isinstance(attr, type) and hasattr(attr, "__get__"):
            if type(raw(value)) is np.ndarray:  # (a.sum: np.sum bound to a, as its impl calls it)
                attr = numpy_rules.METHOD_FUNCTIONS.get(attr, attr)
            return partial(attr, o)
        out = getattr(value, name, *default)
        if self.meta(o) is not None and (name in losses.RAW_MEMORY or not derivative_free(out)):
            raise losses.refuse(self, losses.attribute_lost(o, name, self.mode))
        return out

    def owns(self, x):
        return type(x) is Tagged and tag_of(x) is self._tagkey

    def shadow(self, x):
        """``(array, tangent or node, enclosing context or None)`` for a shadowed array --
        or for a view of one, whose entry is derived from its memory root's."""
        if type(x) is np.ndarray and self.shadows:
            entry = self.shadows.get(id(x))
            if entry is not None and entry[0] is x:
                return entry
            if x.base is not None:
                root = root_of(x)
                entry = self.shadows.get(id(root))
                if entry is not None and entry[0] is root:
                    return (x, self.view_meta(x, root, entry[1], entry[2]), entry[2])
        elif self.shadows and type(x) is not Tagged and isinstance(x, np.ndarray):
            self._subclass_view(x)
        return None

    def _subclass_view(self, x):
        """Refuse ``x``, an instance of an ndarray subclass (``np.ma.MaskedArray``,
        ``np.matrix``, ``np.recarray``...) made before a value being differentiated was written
        into the memory it shares: its elements would be read as plain numbers."""
        a = x
        while isinstance(a.base, np.ndarray):
            a = a.base
        entry = self.shadows.get(id(a))
        if entry is not None and entry[0] is a:
            tp = type(x)
            raise losses.refuse(self, losses.array_lost(
                "the memory of a %s.%s (an ndarray subclass), which was then read" % (tp.__module__, tp.__qualname__),
                self.mode))

    def view_meta(self, view, root, meta, foreign):  # pragma: no cover - per mode
        raise NotImplementedError

    def unwrap(self, x):
        """``(x without this context's tag, the enclosing context whose values it holds)``."""
        if type(x) is Tagged and tag_of(x) is self._tagkey:
            x = value_of(x)
        if type(x) is Tagged:
            return x, context_of(x)
        entry = self.shadow(x)
        if entry is not None:
            return x, entry[2]
        return x, (self.outer_shadow(x) if self.outside and type(x) is np.ndarray else None)

    def outer_shadow(self, a):
        """The innermost enclosing differentiation that shadows the plain array ``a`` (wrote
        its derivatives into it): to this one, ``a`` holds that one's values, as a value it
        tagged would."""
        for ctx in self.outside:
            if getattr(ctx, "shadows", None) and ctx.shadow(a) is not None:
                return ctx
        return None

    def _outer_values(self, args, kwargs):
        """The innermost enclosing differentiation whose values -- tagged, or plain arrays
        it shadows -- are among ``args`` and ``kwargs`` (into nested lists and tuples, as
        ``_differentiated`` looks: ``np.array([[y]])`` of an enclosing ``y`` was made plain,
        its derivative lost), else ``None``: a call of them without this one's values is
        that one's call (its tag must stay inside this one's on every value carrying both)."""
        foreign = None
        for a in (*args, *kwargs.values()):
            te = type(a)
            if te is Tagged and context_of(a)._tagkey is tag_of(a):  # (a finished run's: plain)
                foreign = inner(foreign, context_of(a))
            elif te is np.ndarray:
                foreign = inner(foreign, self.outer_shadow(a))
            elif (te is list or te is tuple) and a:
                foreign = inner(foreign, self._outer_values(a, {}))
        return foreign

    def write(self, value, k, v, foreign):
        """``value[k] = v``; through the enclosing context when nested values are involved."""
        try:
            if foreign is None:
                value[k] = v
            else:
                overdub(foreign, operator.setitem, value, k, v)
        except ValueError:
            from .rules.stride_rules import refuse_write
            refusal = refuse_write(raw(value))
            if refusal is not None:
                raise refusal from None
            raise

    def plain_write(self, value, k):
        """``value[k] = x`` has written a value being differentiated into ``value``, an array
        no derivative follows yet: whether the write is plain (integer and boolean elements
        keep no slope; text is noted as text made from the value), ``False`` where the
        derivative follows (float and complex memory owned by plain arrays).  Elements that
        would hold it otherwise -- objects, records, memory shared with an ndarray subclass
        (``np.recarray`` fields, ``np.ma``'s data, ``np.matrix``), which capstan does not
        track -- are refused: the derivative was lost silently."""
        kind = value.dtype.kind
        if kind in "biu":
            return True
        if kind in "SU":
            losses.note_text(self, np.asarray(value[k]).tolist())
            return True
        a, subclass = value, None
        while True:
            if type(a) is not np.ndarray:
                subclass = type(a)
            if not isinstance(a.base, np.ndarray):
                break
            a = a.base
        if subclass is not None:
            where = "the memory of a %s.%s (an ndarray subclass)" % (subclass.__module__, subclass.__qualname__)
        elif kind not in "fc" or a.dtype.kind not in "fc":
            dtype = value.dtype if kind not in "fc" else a.dtype
            where = "a NumPy array of dtype %s" % ("object" if dtype.kind == "O" else dtype)
        else:
            return False
        raise losses.refuse(self, losses.array_lost(where, self.mode))

    def subscript(self, c, k):
        """``(c[k], c's tangent or node, c's value, the plain key, enclosing context)``: the
        read both modes' ``getitem`` start from."""
        meta = self.meta(c)
        value, foreign = self.unwrap(c)
        if type(k) is Tagged:
            k = self.unwrap(k)[0]
        return self.read(value, k, foreign), meta, value, k, foreign

    def read(self, value, k, foreign):
        return value[k] if foreign is None else overdub(foreign, operator.getitem, value, k)

    def fallback(self, f, /, *args, **kwargs):
        """A plain call of a C function (or of a class or callable without a Python body
        to step into); refuses to drop a derivative silently (see ``capstan.losses``)."""
        texts = self.texts
        if _numpy_function(f) or type(getattr(f, "__self__", None)) is np.ufunc:
            out = self.numpy_override(f, args, kwargs)
            if out is not NOT_MINE:
                return out
        if type(f) in stdlib_rules.GETTERS:  # itemgetter(0)((x, 1.0)), methodcaller("norm")(obj):
            getter = stdlib_rules.getter_as_python(f)  # a Python equivalent (C would read unseen)
            if getter is not None:
                return overdub(self, getter, *args, **kwargs)
        if type(f) is _METHOD_WRAPPER and f.__name__ == "__call__" and not isinstance(f.__self__, type):
            elementwise = jitted.elementwise_of(f.__self__)  # (numba's @vectorize: its Python kernel)
            if elementwise is not None:
                return overdub(self, elementwise, *args, **kwargs)
            owner = f.__self__
            if not is_py(lookup(type(owner), "__call__")):
                return overdub(self, owner, *args, **kwargs)  # np.sin.__call__(x) is np.sin(x)
            # a Python __call__'s super().__call__(...): its C base's call (never the object
            # again, which would recurse); a partial's, spelled out, else refused below
            if isinstance(owner, partial):
                return overdub(self, owner.func, *owner.args, *args, **{**owner.keywords, **kwargs})
        if type(f) in losses.TEXT_WRITERS:  # json's C encoder: plain numbers in, text out
            return losses.write_text(self, f, args, kwargs)
        for a in args:
            ta = type(a)
            if ta is Tagged or ta is list or ta is tuple or ta is np.ndarray or (
                    texts and (ta is str or ta is bytes or isinstance(a, (str, bytes, bytearray)))):  # (np.str_)
                break
        else:
            if not kwargs:
                if type(f) in _FLOAT_READER_TYPES and f in _FLOAT_READERS:
                    numbers = self._floats_by_protocol(args)
                    if numbers is not None:  # math.sin(q): q.__float__ may compute with derivatives
                        return overdub(self, f, *numbers)
                try:
                    return f(*args)  # nothing differentiated: the plain call itself
                except NoRuleError as err:  # a value reached it indirectly (iterator, callback)
                    raise losses.in_function(self, err, f) from None
        if isinstance(f, type) and issubclass(f, BaseException):
            return f(*args, **kwargs)  # exceptions keep their arguments as they are
        key = _table_key(f)  # (a bound method of an array, a ctypes function: in no table)
        if key in _INSPECTING:  # (they read types and dtypes, never values: no write to watch for)
            return self._plain(f, args, kwargs)
        if texts and key in losses.LINE_READERS:  # np.loadtxt's: the lines checked as C reads them
            args = losses.checked_lines(self, f, args)
        if not self._differentiated(args, kwargs):
            outer = self._outer_values(args, kwargs) if self.outside else None
            if outer is not None:
                return overdub(outer, f, *args, **kwargs)
            result = self._plain(f, args, kwargs)
            if texts and not derivative_free(result) and losses.reads_text(self, args, kwargs):
                if type(result) in losses.TEXT_HOLDERS:  # str.encode, io.StringIO(text): text still
                    losses.note_text(self, result)
                    return result
                raise losses.refuse(self, losses.parsed_text(f, self.mode))
            return result
        if key in _TOLERANCES:  # (a decision: their exact == for infinities is no point branch)
            return self._nondifferentiable(f, key, args, kwargs)
        implementation = getattr(f, "_implementation", None)
        if type(implementation) is types.FunctionType:
            # a NumPy function without a rule whose body is Python (np.polyval, np.linspace...):
            # differentiate through that body
            return overdub(self, implementation, *args, **kwargs)
        if type(f) is _MEMOIZED:
            # functools.lru_cache/cache: differentiated arguments call the body (a cache
            # would keep differentiated values past the run, and hand them to later calls)
            return overdub(self, f.__wrapped__, *args, **kwargs)
        python = jitted.python_of(f)
        if python is not None:  # numba's @jit/@njit: the Python function it was compiled from
            return overdub(self, python, *args, **kwargs)
        container = _storing_into(f, key, args)
        if container is not None:  # C functions that store their arguments (heapq, deque...)
            out = f(*args, **kwargs)
            self.remember(container)
            return out
        if key is operator.contains and len(args) == 2 and type(raw(args[0])) is np.ndarray:
            # x in a: NumPy's (a == x).any(), an equality checked as == is
            return bool(overdub(self, np.any, overdub(self, operator.eq, args[0], args[1])))
        if key in EXPORTING:
            raise losses.refuse(self, losses.exported(f, self.mode) if key in losses.EXACT_EXPORTS
                                else no_rule(f, self.mode))
        if key in registry.NONDIFF:
            return self._nondifferentiable(f, key, args, kwargs)
        if is_structural(f):
            return self._plain(f, args, kwargs)
        if key in _registered:  # a rule exists, the argument pattern was not foreseen
            return self.apply(f, args, kwargs)
        op, args = _spelled_out(f, args)
        if op is not None:  # a.__setitem__(i, x), np.ndarray.__mul__(a, b): the operator itself
            return overdub(self, op, *args, **kwargs)
        owner = getattr(f, "__self__", None)
        if owner is not None and type(owner) not in (Tagged, np.ufunc) and not isinstance(owner, (type, types.ModuleType)):
            unbound = _table_key(getattr(type(owner), getattr(f, "__name__", ""), None))
            if unbound is not None and (unbound in registry.IMPLS or unbound in registry.JVP):
                # plain.choose(differentiated choices), a converter's wrap(differentiated):
                # the unbound method's rule, with the owner first
                return overdub(self, unbound, owner, *args, **kwargs)
        reduction = _UFUNC_REDUCTIONS.get((owner, f.__name__)) if type(owner) is np.ufunc else None
        if reduction is not None and args:  # np.add.reduce(a, axis) is np.sum(a, axis)...
            kwargs = dict(kwargs)
            axis = args[1] if len(args) > 1 else kwargs.pop("axis", 0)
            return overdub(self, reduction, args[0], axis, *args[2:], **kwargs)
        method = ufunc_rules.METHODS.get(f.__name__) if type(owner) is np.ufunc else None
        if method is not None:  # np.logaddexp.reduce, np.multiply.outer, np.add.at...
            if owner in losses.LOGICAL_UFUNCS and args and not self.in_rules:  # np.any(a): a's elements tested
                vals, metas, _, _ = self._split(args)
                losses.zero_test_held(self, f, args, vals, metas, kwargs, sys._getframe(1), (0,))
            return overdub(self, method, owner, *args, **kwargs)
        watch = losses.WriteWatch(f, args, kwargs)
        result = self._plain_top(f, args, kwargs)
        if watch.wrote() or (result is None and self._has_buffer(args, kwargs)):
            # (a C function given differentiated values and a plain array that returns nothing
            # worked by writing into it -- perhaps the very values an uninitialised array
            # already held, which no comparison can see: np.empty(...) reusing freed memory)
            raise losses.refuse(self, losses.wrote(f, self.mode))
        if not derivative_free(result):
            raise losses.refuse(self, no_rule(f, self.mode))
        losses.note_text(self, result)
        return result

    def _nondifferentiable(self, f, key, args, kwargs):
        """A function without derivative called with differentiated values: computed on
        their numbers (lists holding them too), noted as a decision, and an exact equality
        that held is checked."""
        vals, metas, _, foreign = self._split(args)
        if foreign is not None:  # (an enclosing run's values, in lists too: its call, np.isnan([x]))
            out = overdub(foreign, f, *vals, **kwargs)
        else:
            out = self._plain(f, vals, kwargs)
        self._tests_held(key, args, vals, metas, kwargs, out, decided_as=f)
        return out if foreign is None or key not in _JUMPS else jumped(self, foreign, key, out, vals, kwargs)

    def _tests_held(self, key, args, vals, metas, kwargs, out, decided_as=None):
        """After a plain call of a comparison or test ``key``: the decision noted, and an
        exact equality, point test, zero test or zero tolerance that held checked (the
        frame named is the caller's of the method that called this)."""
        if self.decisions is not None:
            self.decided(key if decided_as is None else decided_as, out)
        if self.in_rules:
            return
        if key in EQUALITIES:
            self._equality(key, vals, metas, out)
        elif key in losses.POINT_TESTS:
            losses.point_test_held(self, key, vals, metas, out, sys._getframe(2))
        elif key in losses.ZERO_TESTS:
            losses.zero_test_held(self, key, args, vals, metas, kwargs, sys._getframe(2))
        elif key in losses.TOLERANCES:
            losses.tolerance_held(self, key, args, vals, metas, kwargs, sys._getframe(2))

    def _plain(self, f, args, kwargs):
        """``Context.fallback``: the call with this context's tags removed."""
        try:
            return Context.fallback(self, f, *args, **kwargs)
        except NoRuleError as err:
            raise losses.in_function(self, err, f) from None

    def _plain_top(self, f, args, kwargs):
        """A rule-less C call given this context's values untagged (at the top level and one
        level into tuples -- lists are the caller's, C may change them; values of an enclosing
        differentiation go to it).  A
        container argument the call changes while it was given untagged values (it stored
        them) is refused: what C stores must keep its derivative (see ``STORING``)."""
        key = self._tagkey
        foreign = None
        stripped = False
        plain = []
        for a in args:
            ta = type(a)
            if ta is Tagged and tag_of(a) is key:
                a, stripped = value_of(a), True
            elif ta is tuple and any(type(e) is Tagged and tag_of(e) is key for e in a):
                a, stripped = tuple(value_of(e) if type(e) is Tagged and tag_of(e) is key else e for e in a), True
            if type(a) is Tagged and context_of(a)._tagkey is tag_of(a):
                foreign = inner(foreign, context_of(a))
            plain.append(a)
        for k, a in kwargs.items():
            if type(a) is Tagged and tag_of(a) is key:
                kwargs, stripped = {**kwargs, k: value_of(a)}, True
        watch = losses.StoreWatch(f, args) if stripped else None
        g = getattr(f, "_implementation", f)  # (a NumPy function: no dispatch back to us)
        try:
            if foreign is not None:
                out = overdub(foreign, g, *plain, **kwargs)
            else:
                out = g(*plain, **kwargs)
        except NoRuleError as err:
            raise losses.in_function(self, err, f) from None
        if watch is not None and watch.stored():
            raise losses.refuse(self, losses.stored(f, self.mode))
        return out

    def escape(self, protocol, x, /, *args):
        """C code (or Python called from C) used a protocol of a differentiated value:
        see ``capstan.losses.escape``."""
        out = losses.escape(self, protocol, x, *args)
        if self.decisions is not None and protocol in _DECIDING:
            self.decisions.append((protocol, out))
        return out

    def _in_tree(self, tree, depth=0):
        """Whether this context's values are in the dicts and lists of ``tree``."""
        for v in (tree.values() if type(tree) is dict else tree):
            tv = type(v)
            if (tv is Tagged and tag_of(v) is self._tagkey) or (
                    (tv is dict or tv is list or tv is tuple) and depth < 8 and self._in_tree(v, depth + 1)):
                return True
        return False

    def _has_buffer(self, args, kwargs):
        """Whether a plain writable array (an output buffer, maybe) is among the arguments."""
        for a in (*args, *kwargs.values()):
            if type(a) is np.ndarray and a.flags.writeable and a.size and self.shadow(a) is None:
                return True
        return False

    def _differentiated(self, args, kwargs):
        """Whether a value of this run is among the arguments, or in lists and tuples among
        them (looked into once each, without recursion: ``a.append(a)``, a list nested
        deeper than the recursion limit)."""
        key, shadows = self._tagkey, self.shadows
        pending = [(*args, *kwargs.values())]
        seen = None
        while pending:
            for a in pending.pop():
                ta = type(a)
                if ta is Tagged and tag_of(a) is key:
                    return True
                if ta is np.ndarray and shadows and self.shadow(a) is not None:
                    return True
                if ta is list or ta is tuple:
                    if seen is None:
                        seen = set()
                    if id(a) not in seen:
                        seen.add(id(a))
                        pending.append(a)
        return False


_WHOLE = object()
#: protocols whose result is a decision on a value (``if x:``, ``range(x)``)
_DECIDING = frozenset(("__bool__", "__int__", "__index__"))
#: C functions that only inspect the types and dtypes of their arguments
_INSPECTING = {type, isinstance, np.result_type, np.can_cast, np.promote_types}
#: C functions that store their arguments as they are (tagged values included)
STORING = {heapq.heappush, heapq.heappushpop, heapq.heapreplace, bisect.insort_left,
           bisect.insort_right, collections.deque.append, collections.deque.appendleft,
           collections.deque.extend, collections.deque.extendleft, collections.deque.insert}
STORING |= {getattr(heapq, name) for name in ("_heapreplace_max", "heapreplace_max", "heappush_max",
                                              "heappushpop_max") if hasattr(heapq, name)}  # (nsmallest)


_METHOD_WRAPPER = type((1).__add__)
#: the ufunc an ndarray's operator calls (where an operand overrides ufuncs)
_OPERATOR_UFUNCS = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
                    operator.truediv: np.true_divide, operator.floordiv: np.floor_divide,
                    operator.mod: np.remainder, operator.pow: np.power, operator.matmul: np.matmul}
_MEMOIZED = type(functools.lru_cache()(lambda: None))  # functools._lru_cache_wrapper


_OUT_POSITIONS = {}


def out_position(f):
    """``(position of f's out parameter, the names of the positional parameters from it
    on)``, or ``None`` where ``f`` takes no ``out`` by position (or has no signature)."""
    try:
        return _OUT_POSITIONS[f]
    except (KeyError, TypeError):
        pass
    pos = None
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    for i, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            break
        if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD and p.default is None:  # (NumPy's)
            pos = (i, tuple(q.name for q in params[i:] if q.kind is q.POSITIONAL_OR_KEYWORD))
            break
    try:
        _OUT_POSITIONS[f] = pos
    except TypeError:
        pass
    return pos


def takes_out(f, n):
    """Whether ``n`` positional arguments of ``f`` reach its ``out`` parameter."""
    pos = out_position(f)
    return pos is not None and n > pos[0]


def general_call(f, args, kwargs, rules):
    """Whether a call of ``f`` needs ``ADContext.apply``'s questions whatever its arguments:
    keywords, no rule in ``PARTIALS`` or the mode's ``rules`` table, a solver, an
    implementation, a function without derivative, a subscript, a zero test, a ufunc not
    given its operands alone, ``out`` given by position.  The modes' ``apply`` take the
    other calls on their own run's plain values straight to ``compute``."""
    return bool(kwargs or (f not in registry.PARTIALS and f not in rules) or f in registry.SOLVERS
                or f in registry.IMPLS or f in registry.NONDIFF or f is operator.getitem
                or f in losses.ZERO_TESTS or (type(f) is np.ufunc and len(args) != f.nin)
                or (len(args) > 2 and type(f) is not np.ufunc and takes_out(f, len(args))))


def _out_by_keyword(f, args, kwargs):
    """``(args, kwargs)`` of a call of ``f`` with an ``out`` parameter given by position
    moved to the keywords (with the positional arguments after it): the implementations
    capstan gives such functions write ``out=`` as NumPy does, and took a positional one
    for an operand -- or ignored it, leaving the buffer as it was."""
    pos = out_position(f)
    if pos is None or len(args) <= pos[0]:
        return args, kwargs
    i, names = pos
    if len(args) - i > len(names) or any(n in kwargs for n in names[:len(args) - i]):
        return args, kwargs  # (NumPy's own error for the call)
    return args[:i], {**kwargs, **dict(zip(names, args[i:]))}


def _table_key(f):
    """``f`` as a key of the rule tables (``None`` for unhashable callables)."""
    try:
        hash(f)
    except TypeError:
        return None
    return f


def _storing_into(f, key, args):
    """The container a storing C function (``heapq.heappush(h, x)``, ``d.append(x)``)
    writes into, or ``None`` (``key``: ``f`` as a table key)."""
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return owner if _table_key(getattr(type(owner), getattr(f, "__name__", ""), None)) in STORING else None
    return args[0] if key in STORING and args else None


_SEQUENCES = (list, tuple, str, bytes, bytearray, dict, np.ndarray, Tagged, numbers.Number)
#: exact types of values that are no one-pass iterables (read without isinstance's ABC checks)
_PLAIN_VALUES = frozenset({float, int, bool, complex, str, bytes, list, tuple, dict, np.ndarray, Tagged,
                           type(None), np.float64})


#: C functions that read at most ``count`` items of an iterable: (position, keyword) of ``count``
_READ_LIMITS = {np.fromiter: (2, "count")}


def _read_limit(f, args, kwargs):
    where = _READ_LIMITS.get(_table_key(f))
    if where is None:
        return None
    count = args[where[0]] if len(args) > where[0] else kwargs.get(where[1], -1)
    return None if type(count) is not int or count < 0 else count


def _lazy(impl):
    """Whether ``impl`` is a generator function: the C function it stands for reads its
    iterables lazily (``itertools.chain``), so they are not read ahead to look at their values."""
    code = getattr(impl, "__code__", None)
    return code is not None and bool(code.co_flags & inspect.CO_GENERATOR)


def _materialized(args, kwargs, limit=None):
    """``args`` and ``kwargs`` with one-pass iterables (generators, ``map``, ``zip``...)
    read into lists (the first ``limit`` items only, if given), so that the values they
    yield can be seen (and still passed on)."""
    def read(a):
        if isinstance(a, _SEQUENCES) or not hasattr(a, "__next__"):
            return a
        return list(a) if limit is None else list(itertools.islice(a, limit))

    if any(type(a) not in _PLAIN_VALUES and not isinstance(a, _SEQUENCES) and hasattr(a, "__next__")
           for a in args):
        args = tuple(read(a) for a in args)
    if kwargs and any(type(a) not in _PLAIN_VALUES and not isinstance(a, _SEQUENCES) and hasattr(a, "__next__")
                      for a in kwargs.values()):
        kwargs = {k: read(a) for k, a in kwargs.items()}
    return args, kwargs


def _holders(args):
    """Whether some argument is an object that may hold differentiated values where
    ``_split`` does not look (a ``np.poly1d``, a user object)."""
    return any(not isinstance(a, _SEQUENCES) and a is not None and not isinstance(a, (np.generic, type))
               for a in args)


def without_finished_tags(y):
    """The output ``y`` of a differentiated function without the tags of runs that have
    finished (a nested ``D`` that stored ``y * x`` in a global or a slot, which the outer
    function returned): underneath, such a value may carry a running differentiation's
    derivative, which reading it as a constant silently dropped (a zero)."""
    if type(y) is Tagged:
        while type(y) is Tagged and context_of(y)._tagkey is not tag_of(y):
            y = value_of(y)
        return y
    if type(y) is float or type(y) is np.ndarray:
        return y
    leaves, rebuild = structure.flatten(y)
    if any(type(leaf) is Tagged and context_of(leaf)._tagkey is not tag_of(leaf) for leaf in leaves):
        return rebuild([without_finished_tags(leaf) for leaf in leaves])
    return y


def _strip(v, ctx):
    while type(v) is Tagged and tag_of(v) is ctx._tagkey:
        v = value_of(v)
    return v


def _storing(method):
    """A primitive running the structural builtin ``method`` (``list.append``...) with
    tagged values kept, remembering the container for :meth:`ADContext.cleanup`."""
    def store(self, c, /, *args, **kwargs):
        out = method(c, *args, **kwargs)
        self.remember(c)
        return out

    store.__name__ = "store_" + method.__name__
    return store


_DUNDER_OPERATORS = {"__%s__" % name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs",
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
    "getitem", "setitem", "lt", "le", "gt", "ge", "eq", "ne")}
#: conversion and protocol special methods: ``x.__float__()`` is ``float(x)``, ``x.__round__(2)``
#: ``round(x, 2)``, ``a.__divmod__(b)`` ``divmod(a, b)`` (for numbers and arrays)
_DUNDER_OPERATORS.update({"__float__": float, "__complex__": complex, "__int__": int, "__bool__": bool,
                          "__index__": operator.index, "__round__": round, "__trunc__": math.trunc,
                          "__floor__": math.floor, "__ceil__": math.ceil, "__divmod__": divmod,
                          "__iter__": iter, "__len__": len})
#: reflected special methods: ``a.__rsub__(b)`` is ``b - a`` (for numbers and arrays)
_REFLECTED_OPERATORS = {"__r%s__" % name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")}
_REFLECTED_OPERATORS["__rdivmod__"] = divmod


#: ``ufunc.reduce``/``accumulate`` -> the NumPy function (called with the ufunc's axis=0 default)
_UFUNC_REDUCTIONS = {(np.add, "reduce"): np.sum, (np.multiply, "reduce"): np.prod,
                     (np.maximum, "reduce"): np.max, (np.minimum, "reduce"): np.min,
                     (np.add, "accumulate"): np.cumsum, (np.multiply, "accumulate"): np.cumprod}


def _spelled_out(f, args):
    """``(operator, arguments)`` when ``f`` is an operator's special method called by name
    on an array or number (bound or unbound), else ``(None, args)``."""
    name = getattr(f, "__name__", None)
    op = _DUNDER_OPERATORS.get(name)
    if op is None:
        op = _REFLECTED_OPERATORS.get(name)
        if op is None:
            return None, args
        owner = getattr(f, "__self__", None)
        full = (owner, *args) if owner is not None and not isinstance(owner, type) else args
        if (isinstance(getattr(f, "__objclass__", owner and type(owner)), type) and len(full) == 2
                and isinstance(full[0], _NUMERIC) and isinstance(full[1], _NUMERIC)):
            return op, (full[1], full[0])
        return None, args
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        if isinstance(owner, _NUMERIC) or (op is operator.mod and (type(owner) is str or type(owner) is bytes)):
            return op, (owner, *args)  # (fmt.__mod__(values): the % format)
        return None, args
    cls = getattr(f, "__objclass__", None)
    if isinstance(cls, type) and args and isinstance(args[0], _NUMERIC) and isinstance(args[0], cls):
        return op, args  # (float.__float__(x); not complex.__complex__(1.5), which CPython refuses)
    return None, args


def _overridden_operator(a, b):
    """Whether ``a op b`` is an array's (or NumPy scalar's) operator with a user object
    whose class overrides ufuncs in Python: NumPy hands it to the ufunc, and so to that
    override."""
    for array, obj in ((a, b), (b, a)):
        if (type(raw(array)) is np.ndarray or isinstance(array, np.generic)) and type(
                getattr(type(obj), "__array_ufunc__", None)) is types.FunctionType:
            return True
    return False


def _type_name(t):
    """A type's name as CPython's own messages spell it (``numpy.float64``, ``list``)."""
    if t.__flags__ & 512 or t.__module__ == "builtins":  # (Py_TPFLAGS_HEAPTYPE: the bare name)
        return t.__name__
    return "%s.%s" % (t.__module__, t.__name__)


#: argument types that never carry a Python ``__array__`` (skipped without a look-up)
#: operand types that never override NumPy themselves and hold no object that does
_PLAIN_OPERANDS = frozenset((float, int, bool, complex, str, np.ndarray, np.float64, Tagged, type(None)))
_NOT_ARRAY_PROTOCOL = frozenset((float, int, bool, complex, str, bytes, list, tuple, dict, type(None),
                                 np.ndarray, np.float64, Tagged, slice, type(Ellipsis)))


def _numpy_function(f):
    """Whether ``f`` is a ufunc or a function of NumPy's (which read array-likes)."""
    if type(f) is np.ufunc:
        return True
    module = getattr(f, "__module__", None)
    return type(module) is str and (module == "numpy" or module.startswith("numpy."))


def _list_of_matrices(f, metas):
    """Whether a list or tuple holding differentiated values (its metadata a list, from
    ``_split``) goes to a linear-algebra function, which reads it as a matrix."""
    return (any(type(m) is list for m in metas) and f not in registry.TUPLE_PARAMETERS
            and (getattr(f, "__module__", None) or "").startswith(_MATRIX_MODULES))


def _plain_tree(x):
    """Nested lists and tuples with every tagged value replaced by its plain value."""
    if type(x) is list or type(x) is tuple:
        return [_plain_tree(e) for e in x]
    return raw(x)


def _numbers(vals):
    """Whether a comparison's operands are all numbers or arrays (not lists, text or user
    objects, whose equality is no point of a formula)."""
    return all(type(raw(v)) in _COMPARED for v in vals)


_COMPARED = {float, int, complex, np.ndarray, np.float64, np.float32, np.float16, np.complex128,
             np.complex64, np.longdouble}


def raw(x):
    """The plain value under every tag (an enclosing differentiation's included)."""
    while type(x) is Tagged:
        x = value_of(x)
    return x


def plain_call(f, /, *args, **kwargs):
    return f(*args, **kwargs)


# ----------------------------------------------------------------------------- rule arithmetic
# A rule's own arithmetic (a partial times a tangent, a cotangent summed down to an
# argument's shape) is run by ``run``: the plain call, or, when an enclosing differentiation
# holds the values, routed into it so that it follows every operation.  Routing costs an
# entry into rewritten code per call; the helpers below route only the operations that
# carry a derivative and decide the rest on the plain values underneath, with the same
# result (nested differentiation: Hessians, hvp, sparse Hessians).
def routed(ctx):
    """A ``run`` for rule arithmetic that routes into the enclosing differentiation ``ctx``:
    a function with a rule goes straight to ``ctx.apply`` (what its primitive does, without
    the way through ``overdub``'s dispatch), anything else through ``overdub``."""
    return partial(_route, ctx)


def _route(ctx, f, /, *args, **kwargs):
    if f in _registered and type(ctx) in DIRECT and f not in _SPECIAL:
        fast = None if kwargs else FAST[type(ctx)].get(f)
        if fast is not None:  # (the float arithmetic's inline path, as ctx's primitive runs it)
            return fast(ctx, *args)
        return ctx.apply(f, args, kwargs)
    if not isinstance(ctx, ADContext):  # (a user's own context)
        return overdub(ctx, f, *args, **kwargs)
    ctx.in_rules += 1  # (a rule's body: its exact comparisons are capstan's, not the program's)
    try:
        return overdub(ctx, f, *args, **kwargs)
    finally:
        ctx.in_rules -= 1


#: context classes whose primitive for a function with a rule is ``apply`` (forward and
#: reverse mode add themselves), and the functions with primitives of their own
DIRECT: set[type] = set()
_SPECIAL = {operator.getitem, operator.setitem, setattr, getattr, iter, stop_gradient}


def product(run, a, b, exact=registry.strong_mul):
    """``exact(a, b)`` run by ``run`` (``registry.strong_mul``, or forward mode's
    ``registry.tangent_product`` for a partial taken at the point): one routed ``a * b``,
    and only when that has a non-finite element, ``exact`` itself (its mask of exact
    zeros)."""
    if run is plain_call:
        return exact(a, b)
    r = run(operator.mul, a, b)
    v = raw(r)
    tv = type(v)
    if ((tv is np.ndarray and v.dtype.kind in "fc" and not np.isfinite(v).all())
            or (tv in _SCALARS and v - v != 0)):  # (v - v: NaN for an infinite or NaN scalar)
        return run(exact, a, b)
    return r


_SCALARS = frozenset({float, complex, np.float64, np.complex128, np.float32, np.complex64})


def summed_to(run, g, x):
    """``registry.unbroadcast(g, x)`` run by ``run``; ``g`` itself, unrouted, when it has
    ``x``'s shape already (and is not complex for a real ``x``) or both are Python floats:
    what unbroadcast returns then, read on the plain values."""
    vg, vx = raw(g), raw(x)
    if (type(vg) is np.ndarray and type(vx) is np.ndarray and vg.shape == vx.shape
            and (vg.dtype.kind != "c" or vx.dtype.kind == "c")) or (type(vg) is float and type(vx) is float):
        return g
    return run(registry.unbroadcast, g, x)


def conjugated(run, d):
    """``registry.conj(d)`` run by ``run``; ``d`` itself for a real float or array."""
    v = raw(d)
    tv = type(v)
    if tv is float or (tv is np.ndarray and v.dtype.kind in "fi"):
        return d
    return run(registry.conj, d)


#: partial -> its :func:`trivial` kind.  Partials are the rule tables' functions, which the
#: tables hold anyway; the entries go when a table changes (no replaced rule is kept alive)
_TRIVIAL: dict[Any, Any] = {}
_SKIPPED = {"RESUME", "NOP", "CACHE", "EXTENDED_ARG"}


def trivial(fn):
    """``("const", c)`` for a Python function whose body is ``return c`` (a constant),
    ``("arg", k)`` for ``return <its k-th positional parameter>``, else ``None``: such a
    partial (``lambda ans, a, b: b``) needs no routing, its result is known."""
    try:
        return _TRIVIAL[fn]
    except KeyError:
        pass
    except TypeError:  # (unhashable)
        return None
    kind = None
    code = getattr(fn, "__code__", None)
    if type(fn) is types.FunctionType and code is not None:
        steps = [i for i in dis.get_instructions(code) if i.opname not in _SKIPPED]
        if len(steps) == 1 and steps[0].opname == "RETURN_CONST":
            kind = ("const", steps[0].argval)
        elif len(steps) == 2 and steps[1].opname == "RETURN_VALUE":
            op = steps[0]
            if op.opname == "LOAD_CONST":
                kind = ("const", op.argval)
            elif op.opname == "LOAD_FAST" and op.arg < code.co_argcount:
                kind = ("arg", op.arg)
    _TRIVIAL[fn] = kind
    return kind


def call_partial(run, fn, *args, **kwargs):
    """``run(fn, *args, **kwargs)`` for a rule's partial ``fn``, without routing when its
    result is a constant or one of its positional arguments (:func:`trivial`), by its
    fold (``registry.FOLDS``) when one applies."""
    fold = registry.FOLDS.get(fn)
    if fold is not None and run is not plain_call:
        out = fold(run, *args, **kwargs)
        if out is not NotImplemented:
            return out
    kind = trivial(fn)
    if kind is not None:
        if kind[0] == "const":
            return kind[1]
        if kind[1] < len(args):
            return args[kind[1]]
    return run(fn, *args, **kwargs)


#: what Python's float arithmetic raises where NumPy's gives inf or NaN
SINGULAR = (ZeroDivisionError, OverflowError)


def singular_partial(fn, f, args, kwargs, exc):
    """Partial ``fn`` of ``f``, whose Python float arithmetic raised ``exc`` (``1 / x`` at
    0, ``x ** -2`` past the float range) where ``f`` itself gave a value: the same formula
    in NumPy's float semantics (the infinite slope NumPy's own functions give; an exactly
    zero tangent beside it then contributes nothing).  Refused (NoRuleError) where that
    is NaN or raises too, for complex values, and for values of an enclosing
    differentiation, whose derivative through the singularity is undefined."""
    if all(type(a) is float or type(a) is int or type(a) is np.float64 or type(a) is bool for a in args):
        try:
            with np.errstate(all="ignore"):
                d = fn(*[np.float64(a) if type(a) is float else a for a in args], **kwargs)
        except SINGULAR + (ValueError,):
            d = None
        if (type(d) is np.float64 or type(d) is float) and d == d:
            return float(d) if all(type(a) is not np.float64 for a in args) else d
    raise losses.singular_partial(f, exc) from exc


def jumped(ctx, foreign, f, out, vals, kwargs):
    """``out``, the value of ``f`` (a step: ``registry.JUMPS``) in ``ctx``'s run at arguments
    ``vals`` that an enclosing differentiation (``foreign``) moves, marked where ``f`` jumps
    there: the enclosing run then finds its derivative NaN (refused), not the 0 of a step's
    slope (see ``kink_rules``).  A first derivative is not asked: ``ctx``'s own run keeps
    slope 0."""
    tr = type(raw(out))
    if not (tr is float or tr is np.float64 or (tr is np.ndarray and raw(out).dtype.kind == "f")):
        return out  # (an int or a bool carries no derivative)
    mask = registry.JUMPS[f](*[raw(v) for v in vals], **kwargs)
    if mask is False or not np.any(mask):
        return out
    own = type(out) is Tagged and tag_of(out) is ctx._tagkey
    value = value_of(out) if own else out
    marked = overdub(foreign, kink_rules.at_kink, value, mask, None, *vals)
    return Tagged(marked, metadata_of(out), ctx) if own else marked


def kinked(run, f, i, d, g, ans, vals, kwargs):
    """``d``, the product of ``f``'s partial in argument ``i`` with ``g`` (a tangent or a
    cotangent), marked where that partial is taken at a kink of ``f``
    (``registry.KINKS``), for nested differentiation (``run`` routes): there its
    derivative is NaN, not the 0 of a piecewise constant slope (see ``kink_rules``)."""
    kinks = registry.KINKS.get(f)
    if kinks is None or run is plain_call:
        return d
    mask = kinks(i, raw(ans), *[raw(v) for v in vals], **kwargs)
    if mask is False or not np.any(mask):
        return d
    return run(kink_rules.at_kink, d, mask, g, *vals)


def call_partial_at(run, fn, f, *args, **kwargs):
    """``call_partial`` for partial ``fn`` of ``f``, with ``singular_partial`` where
    Python's float arithmetic raises."""
    try:
        return call_partial(run, fn, *args, **kwargs)
    except SINGULAR as exc:
        return singular_partial(fn, f, args, kwargs, exc)


def out_argument(kwargs):
    """The plain array a ufunc's ``out=`` argument names, if any."""
    out = kwargs.get("out") if kwargs else None
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    return out if type(out) is np.ndarray else None


ATTRIBUTES = {"real": np.real, "imag": np.imag, "T": np.transpose}  # attributes with rules
if hasattr(np, "matrix_transpose"):
    ATTRIBUTES["mT"] = np.matrix_transpose


for _method, _types in ((list.append, (list, Tagged)), (list.insert, (list, object, Tagged)),
                        (list.extend, (list,)), (dict.setdefault, (dict, object, Tagged)),
                        (dict.update, (dict,)), (set.add, (set, Tagged))):
    _store = _storing(_method)
    primitive(_method, *_types)(_store)
    setattr(ADContext, "_store_%s_%s" % (_method.__objclass__.__name__, _method.__name__), _store)


def _parsing(f):
    """The primitive for builtin ``f`` (``eval``, ``exec``, ``compile``) given source text:
    text made from a differentiated value (``eval(repr(x))``) would come back as a plain
    constant, and is refused (``losses``, 4)."""
    def method(self, /, *args, **kwargs):
        if self.texts and losses.reads_text(self, args[:1], {}):
            raise losses.refuse(self, losses.parsed_text(f, self.mode))
        return recurse(self, f, *args, **kwargs)
    return method


for _f in (eval, exec, compile, fractions.Fraction):  # (Fraction parses its text in Python, to ints)
    _parse = _parsing(_f)
    primitive(_f, (str, bytes))(_parse)
    setattr(ADContext, "_parse_%s" % _f.__name__, _parse)


def register_all() -> None:
    for table in (registry.PARTIALS, registry.JVP, registry.VJP, registry.IMPLS, registry.SOLVERS):
        for f in list(table):
            _register(f)


registry.on_change(lambda f: f in registry.NONDIFF or _register(f))
registry.on_change(lambda f: _TRIVIAL.clear())
