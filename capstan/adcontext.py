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
import operator

import numpy as np
from overdub import Context, Tagged, is_structural, overdub, primitive

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


class NoRuleError(TypeError):
    """A value being differentiated reached a C function that has no derivative rule."""


def no_rule(f, mode="forward"):
    name = qualified_name(f)
    return NoRuleError(
        "capstan: %s has no derivative rule, and it was called with a value being differentiated; "
        "its result would silently lose the derivative.  Register a rule, for example:\n"
        "    capstan.defderiv(%s, lambda ans, x: <d%s/dx>)    # elementwise or scalar\n"
        "    capstan.defjvp(%s, lambda tangents, ans, *args: ...)    # forward mode\n"
        "    capstan.defvjp(%s, lambda cotangent, ans, *args: (...,))    # reverse mode\n"
        "or declare it piecewise constant with capstan.nondifferentiable(%s)."
        % (name, name, getattr(f, "__name__", "f"), name, name, name))


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
        self.shadows = {}

    def apply(self, f, args, kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    def owns(self, x):
        return type(x) is Tagged and x._tagkey is self._tagkey

    def shadow(self, x):
        """``(array, tangent or node, enclosing context or None)`` for a shadowed array."""
        if type(x) is np.ndarray and self.shadows:
            entry = self.shadows.get(id(x))
            if entry is not None and entry[0] is x:
                return entry
        return None

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
        if is_structural(f) or f in registry.NONDIFF or not self._differentiated(args, kwargs):
            return Context.fallback(self, f, *args, **kwargs)
        if f in _registered:  # a rule exists, the argument pattern was not foreseen
            return self.apply(f, args, kwargs)
        result = Context.fallback(self, f, *args, **kwargs)
        if _inexact(result) or (type(result) in (tuple, list) and any(map(_inexact, result))):
            raise no_rule(f, self.mode)
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


def _inexact(x):
    if isinstance(x, (float, complex, np.inexact)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def register_all():
    for table in (registry.PARTIALS, registry.JVP, registry.VJP, registry.IMPLS):
        for f in list(table):
            _register(f)


registry.on_change(lambda f: f in registry.NONDIFF or _register(f))
