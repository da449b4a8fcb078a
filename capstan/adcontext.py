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
import array
import bisect
import collections
import heapq
import numbers
import operator
import types
from functools import partial

import numpy as np

from overdub import Context, Tagged, is_structural, overdub, primitive, recurse

from .aliasing import root_of
from .rules import registry

_BINARY = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.matmul, operator.iadd, operator.isub,
           operator.imul, operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
           operator.imatmul, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
           operator.ne, operator.getitem}
_UNARY = {operator.neg, operator.pos, abs}
INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
           operator.itruediv: operator.truediv, operator.ipow: operator.pow,
           operator.imatmul: operator.matmul, operator.imod: operator.mod,
           operator.ifloordiv: operator.floordiv}


_DUNDERS = {  # operator -> (method, reflected method, symbol)
    operator.add: ("__add__", "__radd__", "+"), operator.sub: ("__sub__", "__rsub__", "-"),
    operator.mul: ("__mul__", "__rmul__", "*"), operator.truediv: ("__truediv__", "__rtruediv__", "/"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__", "//"), operator.mod: ("__mod__", "__rmod__", "%"),
    operator.pow: ("__pow__", "__rpow__", "** or pow()"), operator.matmul: ("__matmul__", "__rmatmul__", "@"),
}
_UNARY_DUNDERS = {operator.neg: ("__neg__", "unary -"), operator.pos: ("__pos__", "unary +"),
                  abs: ("__abs__", "abs()")}
_NUMERIC = (numbers.Number, np.ndarray, np.generic, Tagged)
_PLAIN_NUMERIC = {float, int, complex, bool, np.ndarray, np.float64, np.float32, np.complex128, Tagged}
NOT_MINE = object()
#: functions that export a float's exact value as integers or text (their results carry no
#: float, yet code computes with them: statistics.mean, fractions) or write values into an
#: array in C: refuse, don't drop the derivative
EXPORTING = {float.as_integer_ratio, float.hex, float.__getnewargs__, float.__reduce_ex__,
             int.from_bytes, np.put, np.place, np.putmask, np.ndarray.put, np.ndarray.fill,
             np.ndarray.itemset if hasattr(np.ndarray, "itemset") else np.put}
OPERATORS = set(_DUNDERS) | set(_UNARY_DUNDERS) | {operator.iadd, operator.isub, operator.imul,
                                                   operator.itruediv, operator.ifloordiv, operator.imod,
                                                   operator.ipow, operator.imatmul}


class NoRuleError(TypeError):
    """A value being differentiated reached a C function that has no derivative rule."""


def no_rule(f, mode="forward"):
    name = qualified_name(f)
    return NoRuleError(
        "capstan: %s has no derivative rule (for %s mode), and it was called with a value being "
        "differentiated; its result would silently lose the derivative.  Register a rule, for example:\n"
        "    capstan.defderiv(%s, lambda ans, x: <d%s/dx>)    # elementwise or scalar\n"
        "    capstan.defjvp(%s, lambda tangents, ans, *args: ...)    # forward mode\n"
        "    capstan.defvjp(%s, lambda cotangent, ans, *args: (...,))    # reverse mode\n"
        "or declare it piecewise constant with capstan.nondifferentiable(%s)."
        % (name, mode, name, getattr(f, "__name__", "f"), name, name, name))


def qualified_name(f):
    module = getattr(f, "__module__", None) or getattr(getattr(f, "__objclass__", None),
                                                       "__module__", None)
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    if module in (None, "builtins"):
        return qual
    module = {"numpy.core.multiarray": "numpy", "numpy._core.multiarray": "numpy",
              "numpy._core.umath": "numpy", "numpy.core.umath": "numpy"}.get(module, module)
    return "%s.%s" % (module, qual)


def _conditions(f):
    """The argument-type patterns under which calls of ``f`` are taken over."""
    if f in _BINARY:
        return [(Tagged,), (object, Tagged), (np.ndarray,), (object, np.ndarray)]
    if f in _UNARY:
        return [(Tagged,), (np.ndarray,)]
    if getattr(f, "__module__", None) in ("math", "cmath"):  # numbers only, no arrays or lists
        return [(Tagged,), (object, Tagged)]  # (further positions reach ``fallback``)
    return [()]


_registered = {}


def _register(f):
    if f in _registered:
        return
    def rule(self, *args, **kwargs):
        return self.apply(f, args, kwargs)

    rule.__name__ = rule.__qualname__ = "rule_for_" + getattr(f, "__name__", "f")
    for argtypes in _conditions(f):
        primitive(f, *argtypes)(rule)
    _registered[f] = rule
    setattr(ADContext, "_rule_%d" % len(_registered), rule)


class ADContext(Context):
    """Base of the differentiation contexts (see the module docstring)."""

    def __init__(self, metadata=None, pass_=None):
        super().__init__(metadata, pass_)
        self.shadows = {}  # id(plain ndarray) -> (the array, its tangent or tape node)

    def reset(self):
        """Forget the state of the last run (the context is about to be reused)."""
        self.cleanup()
        self.shadows = {}

    # -- containers that received differentiated values ------------------------------------------
    def cleanup(self):
        """Replace this context's tagged values left in containers and attributes written
        during the run by their plain values, so that state outside ``f`` ends as plain
        Python would leave it."""
        stored, self.stored = self.__dict__.get("stored", []), []
        for target, name in stored:
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
                    d[name] = _strip(d[name], self)

    def remember(self, target, name=None):
        self.__dict__.setdefault("stored", []).append((target, _WHOLE if name is None else name))

    @primitive(operator.setitem, object, object, Tagged)
    def store_item(self, c, k, v):
        if type(c) is np.ndarray or self.owns(c):
            return self.setitem(c, k, v)
        out = recurse(self, operator.setitem, c, k, v)
        if isinstance(c, (list, dict)):
            self.remember(c)
        return out

    @primitive(setattr, object, object, Tagged)
    def store_attr(self, o, name, v):
        out = recurse(self, setattr, o, name, v)
        self.remember(o, name)
        return out


    def user_operator(self, f, args):
        """``a * b`` where an operand is a user object (a class with ``__mul__``...): run
        that class's own Python method inside the context, as plain Python would call
        it; ``NOT_MINE`` when every operand is a number or an array."""
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
        name, rname, sym = entry
        for obj, other, method_name in ((a, b, name), (b, a, rname)):
            if isinstance(obj, _NUMERIC) or isinstance(obj, (list, tuple, str, bytes, dict)):
                continue
            method = getattr(type(obj), method_name, None)
            if method is not None:
                out = overdub(self, method, obj, other)
                if out is not NotImplemented:
                    return out
        raise TypeError("unsupported operand type(s) for %s: '%s' and '%s'"
                        % (sym, type(a).__name__, type(b).__name__))

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
                if a._tagkey is key:
                    vals[i] = v = a._value
                    metas[i] = m = a._meta
                    found = True
                    if type(v) is Tagged:
                        foreign = v._ctx
                    if type(m) is Tagged:  # a tangent carrying an enclosing derivative
                        foreign = m._ctx
                else:
                    foreign = a._ctx
            elif ta is np.ndarray:
                entry = self.shadow(a)
                if entry is not None:
                    metas[i] = entry[1]
                    found = True
                    foreign = entry[2] or foreign
            elif (ta is list or ta is tuple) and a:
                a = self.nested_arrays(a)
                sub_vals, sub_metas, sub_found, sub_foreign = self._split(a)
                if sub_found:
                    vals[i], metas[i], found = ta(sub_vals), sub_metas, True
                foreign = sub_foreign or foreign
        return vals, metas, found, foreign

    def meta(self, x):
        """The tangent (forward) or node (reverse) ``x`` carries here; ``None``: a constant."""
        if type(x) is Tagged:
            return x._meta if x._tagkey is self._tagkey else None
        entry = self.shadow(x)
        return entry[1] if entry is not None else None

    def apply(self, f, args, kwargs):
        """A call of ``f`` (which has a rule) with these arguments: the parts both modes
        share, then the mode's ``compute``."""
        vals, metas, found, foreign = self._split(args)
        if kwargs and any(self.meta(v) is not None for v in kwargs.values()):
            raise TypeError("capstan: pass the differentiated value to %s positionally, not as a "
                            "keyword argument" % getattr(f, "__name__", f))
        if kwargs and type(f) is np.ufunc and kwargs.get("where", True) is not True and found:
            raise TypeError("capstan: np.%s(..., where=...) has no derivative rule; use np.where "
                            "on the result instead" % f.__name__)
        if not found:  # (an operator on user objects runs their methods routed, as usual)
            if f in OPERATORS:
                return recurse(self, f, *args, **kwargs)
            return Context.fallback(self, f, *args, **kwargs)
        if f in OPERATORS:
            out = self.user_operator(f, args)
            if out is not NOT_MINE:
                return out
        impl = registry.IMPLS.get(f)
        if impl is not None:
            return overdub(self, impl, *args, **kwargs)
        if f in registry.NONDIFF:
            return Context.fallback(self, f, *vals, **kwargs)
        run = plain_call if foreign is None else partial(overdub, foreign)
        return self.compute(f, vals, metas, kwargs, args, run, foreign)

    def compute(self, f, vals, metas, kwargs, args, run, foreign):  # pragma: no cover - per mode
        raise NotImplementedError

    @primitive(iter, Tagged)
    def iter_(self, x, *sentinel):
        """``for v in x`` over a differentiated array: its elements, differentiated."""
        value = x._value
        plain = iter(value, *sentinel)  # (NumPy's own errors: 0-d arrays...)
        if sentinel or self.meta(x) is None:
            return plain
        return (self.getitem(x, i) for i in range(len(value)))

    @primitive(getattr, Tagged)
    def getattr_(self, o, name, *default):
        """``x.real``, ``x.T`` (rules); ``x.sum(...)`` becomes ``type(x).sum(x, ...)``."""
        value = o._value
        rule = ATTRIBUTES.get(name)
        if rule is not None and hasattr(value, name):
            return self.apply(rule, (o,), {})
        attr = getattr(type(raw(value)), name, None)
        if callable(attr) and not isinstance(attr, type) and hasattr(attr, "__get__"):
            return partial(attr, o)
        return getattr(value, name, *default)

    def owns(self, x):
        return type(x) is Tagged and x._tagkey is self._tagkey

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
        return None

    def view_meta(self, view, root, meta, foreign):  # pragma: no cover - per mode
        raise NotImplementedError

    def unwrap(self, x):
        """``(x without this context's tag, the enclosing context whose values it holds)``."""
        if type(x) is Tagged and x._tagkey is self._tagkey:
            x = x._value
        if type(x) is Tagged:
            return x, x._ctx
        entry = self.shadow(x)
        return x, (entry[2] if entry is not None else None)

    def write(self, value, k, v, foreign):
        """``value[k] = v``; through the enclosing context when nested values are involved."""
        if foreign is None:
            value[k] = v
        else:
            overdub(foreign, operator.setitem, value, k, v)

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
        """A plain call; refuses to drop a derivative silently (see :func:`no_rule`)."""
        for a in args:
            ta = type(a)
            if ta is Tagged or ta is list or ta is tuple or ta is np.ndarray:
                break
        else:
            if not kwargs:
                return f(*args)  # nothing tagged: the plain call itself
        if isinstance(f, type) and issubclass(f, BaseException):
            return f(*args, **kwargs)  # exceptions keep their arguments as they are
        implementation = getattr(f, "_implementation", None)
        if type(implementation) is types.FunctionType and self._differentiated(args, kwargs):
            # a NumPy function without a rule whose body is Python (np.polyval, np.linspace...):
            # differentiate through that body
            return overdub(self, implementation, *args, **kwargs)
        container = _storing_into(f, args)
        if container is not None:  # C functions that store their arguments (heapq, deque...)
            out = f(*args, **kwargs)
            self.remember(container)
            return out
        if f in EXPORTING and self._differentiated(args, kwargs):
            raise no_rule(f, self.mode)
        if is_structural(f) or f in registry.NONDIFF or not self._differentiated(args, kwargs):
            return Context.fallback(self, f, *args, **kwargs)
        if f in _registered:  # a rule exists, the argument pattern was not foreseen
            return self.apply(f, args, kwargs)
        op, args = _spelled_out(f, args)
        if op is not None:  # a.__setitem__(i, x), np.ndarray.__mul__(a, b): the operator itself
            return overdub(self, op, *args, **kwargs)
        reduction = _UFUNC_REDUCTIONS.get((getattr(f, "__self__", None), getattr(f, "__name__", None)))
        if reduction is not None and args:  # np.add.reduce(a, axis) is np.sum(a, axis)...
            kwargs = dict(kwargs)
            axis = args[1] if len(args) > 1 else kwargs.pop("axis", 0)
            return overdub(self, reduction, args[0], axis, *args[2:], **kwargs)
        watched = [(a, a.copy()) for a in args if type(a) is np.ndarray and self.shadow(a) is not None]
        result = Context.fallback(self, f, *args, **kwargs)
        if not _derivative_free(result) or any(not np.array_equal(a, old, equal_nan=True) for a, old in watched):
            raise no_rule(f, self.mode)  # (or it wrote into an array holding differentiated values)
        return result

    def _differentiated(self, args, kwargs):
        key, shadows = self._tagkey, self.shadows
        for a in (*args, *kwargs.values()):
            ta = type(a)
            if ta is Tagged and a._tagkey is key:
                return True
            if ta is np.ndarray and shadows and id(a) in shadows:
                return True
            if (ta is list or ta is tuple) and self._differentiated(a, {}):
                return True
        return False


_WHOLE = object()
#: C functions that store their arguments as they are (tagged values included)
STORING = {heapq.heappush, heapq.heappushpop, heapq.heapreplace, bisect.insort_left,
           bisect.insort_right, collections.deque.append, collections.deque.appendleft,
           collections.deque.extend, collections.deque.extendleft, collections.deque.insert}
#: results that hold a float's value in another form (bytes of a double...)
_EXPORTS = {bytes, bytearray, memoryview, array.array}


def _storing_into(f, args):
    """The container a storing C function (``heapq.heappush(h, x)``, ``d.append(x)``)
    writes into, or ``None``."""
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return owner if getattr(type(owner), getattr(f, "__name__", ""), None) in STORING else None
    return args[0] if f in STORING and args else None


def _strip(v, ctx):
    while type(v) is Tagged and v._tagkey is ctx._tagkey:
        v = v._value
    return v


def _storing(method):
    """A primitive running the structural builtin ``method`` (``list.append``...) with
    tagged values kept, remembering the container for :meth:`ADContext.cleanup`."""
    def store(self, c, *args, **kwargs):
        out = method(c, *args, **kwargs)
        self.remember(c)
        return out

    store.__name__ = "store_" + method.__name__
    return store


_DUNDER_OPERATORS = {"__%s__" % name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs",
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
    "getitem", "setitem", "lt", "le", "gt", "ge", "eq", "ne")}


#: ``ufunc.reduce``/``accumulate`` -> the NumPy function (called with the ufunc's axis=0 default)
_UFUNC_REDUCTIONS = {(np.add, "reduce"): np.sum, (np.multiply, "reduce"): np.prod,
                     (np.maximum, "reduce"): np.max, (np.minimum, "reduce"): np.min,
                     (np.add, "accumulate"): np.cumsum, (np.multiply, "accumulate"): np.cumprod}


def _spelled_out(f, args):
    """``(operator, arguments)`` when ``f`` is an operator's special method called by name
    on an array or number (bound or unbound), else ``(None, args)``."""
    op = _DUNDER_OPERATORS.get(getattr(f, "__name__", None))
    if op is None:
        return None, args
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        return (op, (owner, *args)) if isinstance(owner, _NUMERIC) else (None, args)
    if isinstance(getattr(f, "__objclass__", None), type) and args and isinstance(args[0], _NUMERIC):
        return op, args
    return None, args


def raw(x):
    """The plain value under every tag (an enclosing differentiation's included)."""
    while type(x) is Tagged:
        x = x._value
    return x


def plain_call(f, *args, **kwargs):
    return f(*args, **kwargs)


def out_argument(kwargs):
    """The plain array a ufunc's ``out=`` argument names, if any."""
    out = kwargs.get("out") if kwargs else None
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    return out if type(out) is np.ndarray else None


ATTRIBUTES = {"real": np.real, "imag": np.imag, "T": np.transpose}  # attributes with rules
if hasattr(np, "matrix_transpose"):
    ATTRIBUTES["mT"] = np.matrix_transpose


_PLAIN_RESULTS = (type(None), bool, int, str, type, slice, range, np.dtype, np.integer, np.bool_)


def _derivative_free(x, depth=0):
    """Whether a C function's result cannot be hiding a derivative: no values, or ints,
    strings, dtypes, integer arrays, tagged values, or containers of those.  Anything
    else -- floats, float arrays, bytes, objects of other C types that may hold the
    untagged inputs -- is refused rather than silently dropped."""
    tx = type(x)
    if tx is Tagged or isinstance(x, _PLAIN_RESULTS):
        return True
    if tx is np.ndarray:
        return x.dtype.kind in "biuSU" or (x.dtype.kind == "O" and not _inexact(x))
    if (tx is tuple or tx is list or tx is set or tx is frozenset) and depth < 3:
        return all(_derivative_free(e, depth + 1) for e in x)
    if tx is dict and depth < 3:
        return all(_derivative_free(e, depth + 1) for e in x.values())
    return False


def _inexact(x):
    """A plain float-like result (a tagged one still carries its derivative)."""
    if type(x) is Tagged:
        return False
    if isinstance(x, (float, complex, np.inexact)):
        return True
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "O":  # (np.frompyfunc, np.vectorize: an array of Python numbers)
            return any(isinstance(e, (float, complex)) for e in x.flat)
        return x.dtype.kind in "fc"
    return False


for _method, _types in ((list.append, (list, Tagged)), (list.insert, (list, object, Tagged)),
                        (list.extend, (list,)), (dict.setdefault, (dict, object, Tagged)),
                        (dict.update, (dict,)), (set.add, (set, Tagged))):
    _store = _storing(_method)
    primitive(_method, *_types)(_store)
    setattr(ADContext, "_store_%s_%s" % (_method.__objclass__.__name__, _method.__name__), _store)


def register_all():
    for table in (registry.PARTIALS, registry.JVP, registry.VJP, registry.IMPLS):
        for f in list(table):
            _register(f)


registry.on_change(lambda f: f in registry.NONDIFF or _register(f))
