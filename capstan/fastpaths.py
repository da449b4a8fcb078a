"""Inline forms of float arithmetic, the hot path of scalar loops.

The rule tables define every derivative; this module only makes the commonest
case cheap: ``+ - * / **`` and unary ``-`` on Python floats, tagged by the running
context with float tangents (forward) or tape nodes (reverse).  The derivative
formulas below are the table's partials written out inline; anything else (arrays,
complex numbers, nested differentiation) goes to the generic ``apply``.
"""
import math
import operator

from overdub import Tagged, primitive

from .rules import math_rules  # noqa: F401  (the math partials the fast paths are made from)
from .rules.registry import PARTIALS

#: f -> (result, partial wrt a, partial wrt b), Python expressions over a, b and r (result)
BINARY = {
    operator.add: ("a + b", "1.0", "1.0"),
    operator.sub: ("a - b", "1.0", "-1.0"),
    operator.mul: ("a * b", "b", "a"),
    operator.truediv: ("a / b", "1.0 / b", "-r / b"),
}
UNARY = {operator.neg: ("-a", "-1.0")}
#: one-argument math functions spelled out for generated tape code (tests check them
#: against the rule table's partials)
MATH = {
    math.sin: ("math.sin(a)", "math.cos(a)"), math.cos: ("math.cos(a)", "-math.sin(a)"),
    math.tan: ("math.tan(a)", "1.0 + r * r"), math.exp: ("math.exp(a)", "r"),
    math.log: ("math.log(a)", "1.0 / a"), math.sqrt: ("math.sqrt(a)", "0.5 / r"),
    math.tanh: ("math.tanh(a)", "1.0 - r * r"), math.atan: ("math.atan(a)", "1.0 / (1.0 + a * a)"),
    math.sinh: ("math.sinh(a)", "math.cosh(a)"), math.cosh: ("math.cosh(a)", "math.sinh(a)"),
    math.log1p: ("math.log1p(a)", "1.0 / (1.0 + a)"), math.expm1: ("math.expm1(a)", "r + 1.0"),
}
#: a power with a constant exponent b: (result, partial wrt a)
POWER = ("a ** b", "(b * a ** (b - 1) if b else 0.0)")
#: decisions on values, spelled out for the guards of generated tape code
COMPARE = {operator.lt: "a < b", operator.le: "a <= b", operator.gt: "a > b", operator.ge: "a >= b",
           operator.eq: "a == b", operator.ne: "a != b"}
IN_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.itruediv: operator.truediv}

_FORWARD = """
def method(self, x, y):
    key = self._tagkey
    ty = type(y)
    if type(x) is Tagged and x._tagkey is key:
        a = x._value
        ta = x._meta
        if type(a) is float and type(ta) is float:
            if ty is float or ty is int:
                b = y
                r = {r}
                return Tagged(r, ({da}) * ta, self)
            if ty is Tagged and y._tagkey is key:
                b = y._value
                tb = y._meta
                if type(b) is float and type(tb) is float:
                    r = {r}
                    return Tagged(r, ({da}) * ta + ({db}) * tb, self)
    elif ty is Tagged and y._tagkey is key and (type(x) is float or type(x) is int):
        a = x
        b = y._value
        tb = y._meta
        if type(b) is float and type(tb) is float:
            r = {r}
            return Tagged(r, ({db}) * tb, self)
    return self.apply(f, (x, y), {{}})
"""

_REVERSE = """
def method(self, x, y):
    key = self._tagkey
    ty = type(y)
    if type(x) is Tagged and x._tagkey is key:
        a = x._value
        if type(a) is float:
            if ty is float or ty is int:
                b = y
                r = {r}
                tape = self.tape
                tape.append((x._meta, {da}))
                return Tagged(r, len(tape) - 1, self)
            if ty is Tagged and y._tagkey is key:
                b = y._value
                if type(b) is float:
                    r = {r}
                    tape = self.tape
                    tape.append((x._meta, {da}, y._meta, {db}))
                    return Tagged(r, len(tape) - 1, self)
    elif ty is Tagged and y._tagkey is key and (type(x) is float or type(x) is int):
        a = x
        b = y._value
        if type(b) is float:
            r = {r}
            tape = self.tape
            tape.append((y._meta, {db}))
            return Tagged(r, len(tape) - 1, self)
    return self.apply(f, (x, y), {{}})
"""

_FORWARD_UNARY = """
def method(self, x):
    if type(x) is not Tagged:
        return self.apply(f, (x,), {{}})
    a = x._value
    ta = x._meta
    if type(a) is float and type(ta) is float and x._tagkey is self._tagkey:
        r = {r}
        return Tagged(r, ({da}) * ta, self)
    return self.apply(f, (x,), {{}})
"""

_REVERSE_UNARY = """
def method(self, x):
    if type(x) is not Tagged:
        return self.apply(f, (x,), {{}})
    a = x._value
    if type(a) is float and x._tagkey is self._tagkey:
        r = {r}
        tape = self.tape
        tape.append((x._meta, {da}))
        return Tagged(r, len(tape) - 1, self)
    return self.apply(f, (x,), {{}})
"""


_FORWARD_CALL = """
def method(self, *args, **kwargs):
    if len(args) == 1 and not kwargs:
        x = args[0]
        tx = type(x)
        if tx is float or tx is int:
            return f(x)
        if tx is Tagged and x._tagkey is self._tagkey:
            a = x._value
            ta = x._meta
            if type(a) is float and type(ta) is float:
                r = f(a)
                return Tagged(r, p(r, a) * ta, self)
    return self.apply(f, args, kwargs)
"""

_REVERSE_CALL = """
def method(self, *args, **kwargs):
    if len(args) == 1 and not kwargs:
        x = args[0]
        tx = type(x)
        if tx is float or tx is int:
            return f(x)
        if tx is Tagged and x._tagkey is self._tagkey:
            a = x._value
            if type(a) is float:
                r = f(a)
                tape = self.tape
                tape.append((x._meta, p(r, a)))
                return Tagged(r, len(tape) - 1, self)
    return self.apply(f, args, kwargs)
"""

_FORWARD_POWER = """
def method(self, x, y):
    ty = type(y)
    if type(x) is Tagged and x._tagkey is self._tagkey and (ty is int or ty is float):
        a = x._value
        ta = x._meta
        if type(a) is float and type(ta) is float and (ty is int or a > 0.0):
            b = y
            r = {r}
            return Tagged(r, ({da}) * ta, self)
    return self.apply(f, (x, y), {{}})
"""

_REVERSE_POWER = """
def method(self, x, y):
    ty = type(y)
    if type(x) is Tagged and x._tagkey is self._tagkey and (ty is int or ty is float):
        a = x._value
        if type(a) is float and (ty is int or a > 0.0):
            b = y
            r = {r}
            tape = self.tape
            tape.append((x._meta, {da}))
            return Tagged(r, len(tape) - 1, self)
    return self.apply(f, (x, y), {{}})
"""


def _make(template, f, forms):
    names = dict(zip(("r", "da", "db"), forms))
    ns = {"Tagged": Tagged, "f": f}
    exec(compile(template.format(**names), "<capstan fast path for %s>" % f.__name__, "exec"), ns)
    return ns["method"]


def install(cls, mode):
    """Add the inline float primitives to context class ``cls`` (mode: forward/reverse)."""
    binary, unary = (_FORWARD, _FORWARD_UNARY) if mode == "forward" else (_REVERSE, _REVERSE_UNARY)
    for f, forms in BINARY.items():
        for g in [f] + [k for k, v in IN_PLACE.items() if v is f]:
            method = _make(binary, g, forms)
            primitive(g, Tagged, total=True)(method)  # (also sees arrays and user objects: it
            primitive(g, object, Tagged)(method)      # hands them to apply)
            setattr(cls, "_fast_%s" % g.__name__, method)
    for f in (operator.pow, operator.ipow):
        method = _make(_FORWARD_POWER if mode == "forward" else _REVERSE_POWER, f, POWER)
        primitive(f, Tagged, total=True)(method)
        setattr(cls, "_fast_%s" % f.__name__, method)
    for f, forms in UNARY.items():
        method = _make(unary, f, forms)
        primitive(f, Tagged, total=True)(method)
        setattr(cls, "_fast_%s" % f.__name__, method)
    call = _FORWARD_CALL if mode == "forward" else _REVERSE_CALL
    for f, partials in list(PARTIALS.items()):  # one-argument math functions, from the table
        if getattr(f, "__module__", None) == "math" and len(partials) == 1:
            ns = {"Tagged": Tagged, "f": f, "p": partials[0]}
            exec(compile(call, "<capstan fast path for math.%s>" % f.__name__, "exec"), ns)
            primitive(f, Tagged, total=True)(ns["method"])  # (plain floats: the call itself)
            setattr(cls, "_fast_math_%s" % f.__name__, ns["method"])
