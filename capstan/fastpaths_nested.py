"""Forward mode's float fast paths when the floats are an enclosing differentiation's.

In ``D(D(f))`` (or forward mode inside a gradient, a Hessian's inner ``jvp``...) the inner
differentiation's values and tangents are floats tagged by the outer one.  The generic
path hands each step of a rule to the outer context one call at a time (``apply`` for the
operation, for each partial, each product and each sum).  The functions made here compute
the same formulas as :mod:`capstan.fastpaths` -- the same strings, lowered to one
statement per operation -- with every operation on a tagged operand sent straight to the
outer context's own fast path for it (its native twin where built), and plain operands
computed plainly.  The outer context differentiates that arithmetic exactly as it would
the generic path's: same operations, same order.

Anything outside the shape handled here (arrays, chunked tangents, two different outer
contexts, a finished outer run, a differentiated exponent) goes to the generic ``apply``.
"""
import ast
import linecache
import math
import operator

import numpy as np

from overdub import Tagged
from overdub.tagging import context_of, metadata_of, tag_of, value_of

#: AST operators -> the operator functions whose fast paths run them
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_F64 = np.float64


class _Lowering:
    """One formula string lowered to statements: each operation on a possibly tagged
    operand becomes ``K(f)(outer, ...)`` when an operand is tagged, else the plain one."""

    def __init__(self):
        self.lines = []
        self.kernels = {}  # function -> the local name its fast path is bound to
        self.count = 0

    def kernel(self, f):
        return self.kernels.setdefault(f, "K%d" % len(self.kernels))

    def temp(self):
        self.count += 1
        return "_t%d" % self.count

    def lower(self, node, indent):
        """Append the statements computing ``node``; return a name or constant for it."""
        if isinstance(node, ast.Constant):
            return repr(node.value)
        if isinstance(node, ast.Name):
            return node.id
        t = self.temp()
        if isinstance(node, ast.BinOp):
            a, b = self.lower(node.left, indent), self.lower(node.right, indent)
            k, sym = self.kernel(_BINOPS[type(node.op)]), _SYMBOL[type(node.op)]
            self.lines.append("%s%s = %s(o, %s, %s) if type(%s) is Tagged or type(%s) is Tagged else %s %s %s"
                              % (indent, t, k, a, b, a, b, a, sym, b))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = self.lower(node.operand, indent)
            self.lines.append("%s%s = %s(o, %s) if type(%s) is Tagged else -%s"
                              % (indent, t, self.kernel(operator.neg), a, a, a))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "math"):
            fn = getattr(math, node.func.attr)
            a = self.lower(node.args[0], indent)
            self.lines.append("%s%s = %s(o, %s) if type(%s) is Tagged else math.%s(%s)"
                              % (indent, t, self.kernel(fn), a, a, node.func.attr, a))
        elif isinstance(node, ast.IfExp):  # (its test reads plain values only: the caller checks)
            self.lines.append("%sif %s:" % (indent, ast.unparse(node.test)))
            self.lines.append("%s    %s = %s" % (indent, t, self.lower(node.body, indent + "    ")))
            self.lines.append("%selse:" % indent)
            self.lines.append("%s    %s = %s" % (indent, t, self.lower(node.orelse, indent + "    ")))
        else:
            raise ValueError("fastpaths_nested: cannot lower %s" % ast.unparse(node))
        return t

    def formula(self, text, target, indent="    "):
        self.lines.append("%s%s = %s" % (indent, target, self.lower(ast.parse(text, mode="eval").body, indent)))

    def term(self, partial, tangent, indent):
        """``t += partial * tangent`` (the generic path's ``product`` and sum; a partial of
        exactly 1.0 is the tangent itself, as there)."""
        if partial.strip() == "1.0":
            d = tangent
        else:
            self.formula(partial, "_p", indent)
            d = "_d"
            self.lines.append("%s_d = %s(o, _p, %s) if type(_p) is Tagged or type(%s) is Tagged else _p * %s"
                              % (indent, self.kernel(operator.mul), tangent, tangent, tangent))
        self.lines.append("%st = %s if t is None else (%s(o, t, %s) if type(t) is Tagged or type(%s) is Tagged "
                          "else t + %s)" % (indent, d, self.kernel(operator.add), d, d, d))


_SPLIT = """\
    if type({v}) is Tagged and tag_of({v}) is key:
        {a}, t{a} = value_of({v}), metadata_of({v})
    else:
        {a}, t{a} = {v}, None
"""

# Every tagged operand (value or tangent) must be a float tagged by the one outer context,
# still running; every other one a plain number (or no tangent).
_CHECK_OPERAND = """\
    if type({v}) is Tagged:
        if o is None:
            o = context_of({v})
        if context_of({v}) is not o or tag_of({v}) is not o._tagkey or (
                type(value_of({v})) is not float and type(value_of({v})) is not F64):
            return self.apply(f, {args}, {{}})
    elif type({v}) is not float and type({v}) is not int and type({v}) is not F64{none}:
        return self.apply(f, {args}, {{}})
"""


def make(f, forms, arity, fast, available, plain_exponent=False):
    """The nested fast path of forward mode for ``f`` (``forms``: the result and the partial
    per argument, as in :mod:`capstan.fastpaths`), as ``nested(self, x[, y])``; ``None``
    when a formula needs a function outside ``available`` (those with fast paths).
    ``fast`` maps a context class to its fast paths by function.  ``plain_exponent``:
    ``a ** b``, taken only for a plain exponent ``b`` (a positive base unless ``b`` is an
    int), so the exponent's partial is never needed."""
    low = _Lowering()
    params = ("x", "y")[:arity]
    names = ("a", "b")[:arity]
    args = "(%s,)" % ", ".join(params)
    head = ["    key = self._tagkey"]
    head += [_SPLIT.format(v=v, a=a) for v, a in zip(params, names)]
    head.append("    if self.chunk is not None:\n        return self.apply(f, %s, {})\n    o = None" % args)
    for v in names:
        head.append(_CHECK_OPERAND.format(v=v, args=args, none=""))
    for v in names:
        head.append(_CHECK_OPERAND.format(v="t" + v, args=args, none=" and t%s is not None" % v))
    if plain_exponent:
        head.append("    if tb is not None or type(b) is Tagged or not (type(b) is int or (type(b) is float and "
                    "raw(a) > 0.0)):\n        return self.apply(f, %s, {})" % args)
    head.append("    K = None if o is None else fast.get(type(o))\n    if not K:\n"
                "        return self.apply(f, %s, {})" % args)
    low.formula(forms[0], "r")
    low.lines.append("    t = None")
    if plain_exponent:
        forms = forms[:2]
    for a, partial in zip(names, forms[1:1 + arity]):
        low.lines.append("    if t%s is not None:" % a)
        low.term(partial, "t" + a, "        ")
    if not set(low.kernels) <= available:
        return None
    body = low.lines + ["    return Tagged(r, t, self) if t is not None else r"]
    # where float arithmetic raises (a partial past the float range, 1 / x at 0; NumPy's
    # under np.seterr or -W error), the generic path takes over: it raises the plain error,
    # or computes the derivative with NumPy's errors ignored (fpstate), or refuses it
    body = ["    try:"] + ["    " + line for line in body] + [
        "    except (ArithmeticError, RuntimeWarning):", "        return self.apply(f, %s, {})" % args]
    binds = ["    %s = K[%s]" % (name, "FN%d" % i) for i, name in enumerate(low.kernels.values())]
    source = "def nested(self, %s):\n%s\n" % (", ".join(params), "\n".join(
        [line.rstrip("\n") for line in head] + binds + body))
    env = {"Tagged": Tagged, "math": math, "f": f, "fast": fast, "raw": _raw, "F64": _F64, "value_of": value_of,
           "metadata_of": metadata_of, "tag_of": tag_of, "context_of": context_of}
    env.update(("FN%d" % i, fn) for i, fn in enumerate(low.kernels))
    filename = "<capstan nested fast path for %s>" % f.__name__
    exec(compile(source, filename, "exec"), env)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # (tracebacks)
    return env["nested"]


def _raw(x):
    while type(x) is Tagged:
        x = value_of(x)
    return x
