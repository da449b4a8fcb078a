"""Inline forms of float arithmetic, the hot path of scalar loops.

The rule tables define every derivative; this module only makes the commonest
case cheap: ``+ - * / **`` and unary ``-`` on Python floats and NumPy float64 scalars
(with NumPy's own result types), tagged by the running
context with float tangents (forward) or tape nodes (reverse).  The derivative
formulas below are the table's partials written out inline; anything else (arrays,
complex numbers, nested differentiation) goes to the generic ``apply``.
"""
import math
import operator
import re

import numpy as np

from overdub import Tagged, ops, primitive
from overdub._native import capstan_native
from overdub.tagging import metadata_of, tag_of, value_of

from . import fastpaths_nested
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
    math.tanh: ("math.tanh(a)", "(1.0 / math.cosh(a)) ** 2"), math.atan: ("math.atan(a)", "1.0 / (1.0 + a * a)"),
    math.sinh: ("math.sinh(a)", "math.cosh(a)"), math.cosh: ("math.cosh(a)", "math.sinh(a)"),
    math.log1p: ("math.log1p(a)", "1.0 / (1.0 + a)"), math.expm1: ("math.expm1(a)", "r + 1.0"),
}
#: a power with a constant exponent b: (result, partial wrt a)
POWER = ("a ** b", "(b * a ** (b - 1) if b else 0.0)")
#: the partial of a ** b wrt the exponent b, for a positive base a
POWER_EXPONENT = "r * math.log(a)"
#: decisions on values, spelled out for the guards of generated tape code
COMPARE = {fn: "a %s b" % symbol for fn, _, _, symbol in ops.COMPARE.values()}
#: the in-place forms of BINARY's operators (from overdub's one operator table)
IN_PLACE = {ops.INPLACE["INPLACE_" + name][0]: ops.BINARY[name][0]
            for name in ("ADD", "SUBTRACT", "MULTIPLY", "TRUE_DIVIDE")}

# Each template is written once; the mode decides what a differentiated operand must carry
# (CHECK: a float tangent in forward mode, any tape node in reverse) and what a result is
# (EMIT: a tangent from the partials, or a tape record of (parent, partial) pairs; EMITC:
# the same where the lone partial is a constant operand's, see _emit).
_BINARY = """
def method(self, x, y):
    key = self._tagkey
    ty = type(y)
    if type(x) is Tagged and tag_of(x) is key:
        a = value_of(x)
        ta = type(a)
        if (ta is float or ta is F64) and CHECK(x):
            if ty is float or ty is int or ty is F64:
                b = y
                r = {r}
                EMITC(x: {da})
            if ty is Tagged and tag_of(y) is key:
                b = value_of(y)
                tb = type(b)
                if (tb is float or tb is F64) and CHECK(y):
                    r = {r}
                    EMIT(x: {da}, y: {db})
    elif ty is Tagged and tag_of(y) is key:
        tx = type(x)
        if tx is float or tx is int or tx is F64:
            a = x
            b = value_of(y)
            tb = type(b)
            if (tb is float or tb is F64) and CHECK(y):
                r = {r}
                EMITC(y: {db})
    return self.apply(f, (x, y), {{}})
"""

_UNARY = """
def method(self, x):
    if type(x) is Tagged and tag_of(x) is self._tagkey:
        a = value_of(x)
        ta = type(a)
        if (ta is float or ta is F64) and CHECK(x):
            r = {r}
            EMIT(x: {da})
    return self.apply(f, (x,), {{}})
"""

_POWER = """
def method(self, x, y):
    key = self._tagkey
    ty = type(y)
    if type(x) is Tagged and tag_of(x) is key:
        a = value_of(x)
        ta = type(a)
        if (ta is float or ta is F64) and CHECK(x):
            if ty is int or ty is float:
                if ty is int or a > 0.0:
                    b = y
                    r = {r}
                    EMIT(x: {da})
            elif ty is Tagged and tag_of(y) is key and a > 0.0:
                b = value_of(y)
                tb = type(b)
                if (tb is float or tb is F64) and CHECK(y):
                    r = {r}
                    EMIT(x: {da}, y: {db})
    elif ty is Tagged and tag_of(y) is key:
        tx = type(x)
        if (tx is float or tx is int) and x > 0:
            a = x
            b = value_of(y)
            tb = type(b)
            if (tb is float or tb is F64) and CHECK(y):
                r = {r}
                EMITC(y: {db})
    return self.apply(f, (x, y), {{}})
"""

_CALL = """
def method(self, /, *args, **kwargs):
    if len(args) == 1 and not kwargs:
        x = args[0]
        tx = type(x)
        if tx is float or tx is int or tx is F64:
            return f(x)
        if tx is Tagged and tag_of(x) is self._tagkey:
            a = value_of(x)
            ta = type(a)
            if (ta is float or ta is F64) and CHECK(x):
                r = f(a)
                EMIT(x: {da})
    return self.apply(f, args, kwargs)
"""

_CHECK = {"forward": " and (type(metadata_of({0})) is float or type(metadata_of({0})) is F64)", "reverse": ""}


def _emit(mode, pairs, hand_over=False, constant_partial=False):
    """The statement ending a fast path: ``pairs`` are ``(operand, partial expression)``.
    ``hand_over``: a tangent still NaN goes to the generic path (whose rule for the
    operator may combine the terms before they leave the float range).
    ``constant_partial``: a lone partial is the other, constant operand's doing (``x * c``,
    ``x / c``, ``c ** x``), so its exact zero is one whatever the point."""
    if mode == "forward":  # (NaN from an infinite factor: see _strong and _zero_tangent_wins)
        tangent = " + ".join("({1}) * metadata_of({0})".format(v, d) for v, d in pairs)
        term = "strong" if constant_partial and len(pairs) == 1 else "weak"
        exact = " + ".join("{2}({1}, metadata_of({0}))".format(v, d, term) for v, d in pairs)
        if hand_over and len(pairs) > 1:
            return "if (t := (t if (t := %s) == t else %s)) == t: return Tagged(r, t, self)" % (tangent, exact)
        return "return Tagged(r, t if (t := %s) == t else %s, self)" % (tangent, exact)
    if constant_partial and len(pairs) == 1:
        # (a constant's exact 0, 0.0 * x: recorded as HELD_ZERO, a zero that holds near the
        # point; _make leaves out the test where the partial is a number, as x + c's 1.0)
        pairs = [(pairs[0][0], "d if (d := %s) != 0 else held(d)" % pairs[0][1])]
    record = ", ".join("metadata_of({0}), {1}".format(v, d) for v, d in pairs)
    return "tape = self.tape; tape.append((%s)); return Tagged(r, len(tape) - 1, self)" % record


class _HeldZero(float):
    """The type of :data:`HELD_ZERO`."""

    __slots__ = ()

    def __repr__(self):
        return "HELD_ZERO" if math.copysign(1.0, self) > 0 else "HELD_NEG_ZERO"


#: a reverse-mode scalar record's partial that is exactly 0 because a constant operand
#: makes it so (``0.0 * x``, ``1.0 ** x``, ``0.0 / x``): a float 0.0 (or -0.0) to every
#: reader, but the backward pass knows the zero holds near the point, so the cotangent it
#: sends wins over an infinite partial further on (``0.0 * math.sqrt(x)`` at 0), where a
#: zero taken at the point (``math.cos``'s at 0) does not
HELD_ZERO, HELD_NEG_ZERO = _HeldZero(0.0), _HeldZero(-0.0)


def _held(d):
    """The held zero of zero ``d``'s sign."""
    return HELD_NEG_ZERO if math.copysign(1.0, d) < 0 else HELD_ZERO


_HELD_LITERAL = re.compile(r"d if \(d := (-?[0-9.]+)\) != 0 else held\(d\)")


def _guarded(match):
    """``r = ...`` and its EMIT line inside ``try``: where Python's float arithmetic raises
    (a partial past the float range, ``1 / x`` at 0), the generic path takes over."""
    pad = match.group(1)
    return "%stry:\n%s    r = %s\n%s    %s\n%sexcept (ArithmeticError, RuntimeWarning):\n%s    pass" % (
        pad, pad, match.group(2), pad, match.group(3), pad, pad)


def _source(template, mode, hand_over=False):
    """The template's code for ``mode``: ``EMITC`` marks a result whose lone partial is the
    constant operand's doing (``x * c``, ``c ** x``), ``EMIT`` one taken at the point."""
    template = re.sub(r"^( *)r = (.*)\n\1(EMITC?\(.*\))$", _guarded, template, flags=re.M)
    source = re.sub(r" and CHECK\((\w)\)", lambda m: _CHECK[mode].format(m.group(1)), template)
    return re.sub(r"EMIT(C?)\(([^)]*)\)", lambda m: _emit(mode, [part.split(": ", 1) for part in
                                                                m.group(2).split(", ")], hand_over,
                                                          m.group(1) == "C"), source)


#: operators whose NaN forward tangents (inf - inf of partials past the float range) the
#: generic path recomputes (``forward.COMBINED``): x / y at a subnormal y
_HAND_OVER_NAN = {operator.truediv, operator.itruediv}


#: how each template hands over what it does not take itself, and the same handed first
#: to forward mode's nested fast path (floats of an enclosing differentiation)
_HAND_OVER = {"x, y": ("return self.apply(f, (x, y), {{}})", "return nested(self, x, y)"),
              "x": ("return self.apply(f, (x,), {{}})", "return nested(self, x)"),
              "args": ("return self.apply(f, args, kwargs)",
                       "return nested(self, args[0]) if len(args) == 1 and not kwargs else "
                       "self.apply(f, args, kwargs)")}


#: the operators whose reverse fast path hands float64 arrays to ``ReverseCtx.arrays``
#: (not the in-place ones: an array changed in place is a write, which ``apply`` follows)
_ARRAY_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg}


def _make(template, mode, f, forms, nested_forms=None, **env):
    """The fast path of ``f`` from ``template``; in forward mode with ``nested_forms``
    (the formulas as strings), also taking an enclosing differentiation's floats; in
    reverse mode, an operator's arrays go to the context's ``arrays`` first."""
    names = dict(zip(("r", "da", "db"), forms))
    ns = {"Tagged": Tagged, "f": f, "F64": np.float64, "math": math, "strong": _strong, "weak": _zero_tangent_wins,
          "value_of": value_of, "metadata_of": metadata_of, "tag_of": tag_of, "held": _held, **env}
    source = _source(template, mode, f in _HAND_OVER_NAN)
    if mode == "reverse" and f in _ARRAY_OPERATORS:
        for params in ("x, y", "x"):
            source = source.replace("return self.apply(f, (%s), {{}})" % (params + ("," if params == "x" else "")),
                                    "return self.arrays(f, (%s))" % (params + ("," if params == "x" else "")))
        assert "self.arrays" in source
    if mode == "forward" and nested_forms is not None:
        for params, (generic, nested) in _HAND_OVER.items():
            if generic in source:
                arity = 1 if params != "x, y" else 2
                ns["nested"] = fastpaths_nested.make(f, nested_forms, arity, FAST, _WITH_FAST_PATHS,
                                                      plain_exponent=f in (operator.pow, operator.ipow))
                if ns["nested"] is not None:
                    source = source.replace(generic, nested)
                break
    source = _HELD_LITERAL.sub(r"\1", source.format(**names))
    exec(compile(source, "<capstan fast path for %s>" % f.__name__, "exec"), ns)
    return ns["method"]


def _strong(p, t):
    """Constant partial ``p`` times tangent ``t``, 0 where either is exactly 0
    (``registry.strong_mul`` for floats: ``0.0 * sqrt(x)`` at 0 does not move)."""
    return 0.0 if p == 0 or t == 0 else p * t


def _zero_tangent_wins(p, t):
    """Partial ``p`` taken at the point times tangent ``t``, 0 where ``t`` is exactly 0
    (``registry.tangent_product`` for floats: ``sqrt(x - x)`` has an infinite partial and
    does not move); a zero ``p`` against an infinite ``t`` stays NaN, undefined (``cos``
    of ``sqrt(x)`` at 0: its slope is -1/2, not 0 * inf)."""
    return 0.0 if t == 0 else p * t


if capstan_native is not None:  # the kernels build Tagged results; NumPy scalars are left to Python
    capstan_native.setup(Tagged, np.float64)

#: the operation each native kernel of ``_capstan_native`` performs, by operator function
#: (plain and in-place forms alike, from overdub's operator table)
_KERNEL_OPS = {operator.neg: "NEG"}
for _name, _kernel in (("ADD", "ADD"), ("SUBTRACT", "SUB"), ("MULTIPLY", "MUL"), ("TRUE_DIVIDE", "DIV"),
                       ("POWER", "POW")):
    _KERNEL_OPS[ops.BINARY[_name][0]] = _KERNEL_OPS[ops.INPLACE["INPLACE_" + _name][0]] = _kernel
del _name, _kernel


def _twin(method, mode, f):
    """Give ``method`` its native twin (see ``native/capstan_native.c``): the same
    computation in C for Python floats, handing every other case back to ``method``.
    The pure-Python path (``OVERDUB_PURE_PYTHON=1``) keeps ``method`` alone."""
    if capstan_native is None:
        return method
    reverse = mode == "reverse"
    if f in _KERNEL_OPS:  # (forward + - * / and -: also nested in a forward run, as the Python path;
        # reverse: the operators whose float64 arrays go to ReverseCtx.arrays, in C too)
        kernel = capstan_native.Kernel(getattr(capstan_native, _KERNEL_OPS[f]), reverse, method,
                                       nested=not reverse and _KERNEL_OPS[f] != "POW",
                                       arrays=f if reverse and f in _ARRAY_OPERATORS else None)
    elif getattr(f, "__module__", None) == "math" and f.__name__ in capstan_native.MATH_FUNCTIONS:
        kernel = capstan_native.Kernel(capstan_native.MATH, reverse, method, f,
                                       capstan_native.MATH_FUNCTIONS[f.__name__])
    else:
        return method
    method.__overdub_native__ = kernel
    return method


#: context class -> {function: its fast path, native twin first}: what the context's own
#: primitive for that function runs, for callers that hold the context and the function
#: (an inner differentiation's rule arithmetic handed to the enclosing one)
FAST: dict[type, dict] = {}


def _fast(cls, f, method):
    primitives = FAST.setdefault(cls, {})
    primitives[f] = getattr(method, "__overdub_native__", method)
    return method


#: the functions ``install`` gives fast paths (what a nested fast path may hand on)
_WITH_FAST_PATHS = ({g for f in BINARY for g in [f] + [k for k, v in IN_PLACE.items() if v is f]}
                    | {operator.pow, operator.ipow} | set(UNARY)
                    | {f for f, partials in PARTIALS.items()
                       if getattr(f, "__module__", None) == "math" and len(partials) == 1})


def install(cls, mode):
    """Add the inline float primitives to context class ``cls`` (mode: forward/reverse),
    each with its native twin where the C layer is built."""
    for f, forms in BINARY.items():
        for g in [f] + [k for k, v in IN_PLACE.items() if v is f]:
            method = _fast(cls, g, _twin(_make(_BINARY, mode, g, forms, forms), mode, g))
            primitive(g, Tagged, total=True)(method)  # (also sees arrays and user objects: it
            primitive(g, object, Tagged)(method)      # hands them to apply)
            setattr(cls, "_fast_%s" % g.__name__, method)
    for f in (operator.pow, operator.ipow):
        method = _fast(cls, f, _twin(_make(_POWER, mode, f, POWER + (POWER_EXPONENT,), POWER + (POWER_EXPONENT,)),
                                     mode, f))
        primitive(f, Tagged, total=True)(method)
        setattr(cls, "_fast_%s" % f.__name__, method)
    for f, forms in UNARY.items():
        method = _fast(cls, f, _twin(_make(_UNARY, mode, f, forms, forms), mode, f))
        primitive(f, Tagged, total=True)(method)
        setattr(cls, "_fast_%s" % f.__name__, method)
    for f, partials in list(PARTIALS.items()):  # one-argument math functions, from the table
        if getattr(f, "__module__", None) == "math" and len(partials) == 1:
            method = _fast(cls, f, _twin(_make(_CALL, mode, f, ("", "p(r, a)"), MATH.get(f), p=partials[0]),
                                         mode, f))
            primitive(f, Tagged, total=True)(method)  # (plain floats: the call itself)
            setattr(cls, "_fast_math_%s" % f.__name__, method)
