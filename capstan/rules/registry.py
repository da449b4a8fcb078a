"""The rule tables and the functions that fill them (see ``capstan.rules``)."""
import inspect
import math
import operator
from typing import Any, Callable

import numpy as np

PARTIALS: dict[Any, Any] = {}  # f -> tuple of partial-derivative functions, one per positional argument
JVP: dict[Any, Any] = {}  # f -> (rule, batched): forward rule; batched rules accept tangents with leading axes
VJP: dict[Any, Any] = {}  # f -> reverse rule
NONDIFF: set[Any] = set()  # functions whose results carry no derivative
IMPLS: dict[Any, Any] = {}  # f -> Python function differentiated in f's place (C functions of iterables)
SOLVERS: dict[Any, Any] = {}  # f -> handler(ctx, f, args, kwargs): solvers whose callbacks may close over derivatives
#: partial -> fold(run, *args): the partial's value by fewer routed operations when its
#: constant arguments allow (``NotImplemented`` otherwise), for nested differentiation
FOLDS: dict[Any, Any] = {}
PATTERN: dict[Any, Any] = {}  # f -> how index sets flow through f, for sparsity detection (see pattern_rules)
SECOND: dict[Any, Any] = {}  # f -> pairs of argument positions whose second derivative may be nonzero
#: f -> kinks(i, ans, *args, **kwargs): where ``f``'s partial in argument ``i`` is taken at
#: a kink (a boolean mask over the result, or False), read on plain values; nested
#: differentiation marks those products (see ``kink_rules``)
KINKS: dict[Any, Any] = {}
JUMPS: dict[Any, Any] = {}
#: f -> (rule, scatter): while ``VJP[f]`` is ``rule``, ``scatter(g, ans, *args, **kwargs)``
#: gives the cotangent of ``f``'s first argument as a few elements, ``(index, values)``,
#: where it is zero elsewhere (the maximum of a whole array), or None; the backward pass
#: adds those into the argument's cotangent in place instead of an array of zeros
SCATTERS: dict[Any, Any] = {}
_listeners: list[Callable[[Any], None]] = []  # called with f whenever a table entry for f changes


def on_change(callback):
    """Call ``callback(f)`` whenever a rule for ``f`` is added or replaced."""
    _listeners.append(callback)


def _changed(f):
    for callback in _listeners:
        callback(f)


def _check(f, what):
    if not callable(f):
        raise TypeError("%s(f, ...): f must be a callable, got %r" % (what, f))


_DISPATCHER = type(np.concatenate)  # (NumPy's __array_function__ dispatchers)


def _keys(f):
    """The table keys of ``f``: ``f``, and for a NumPy function the implementation its
    dispatcher calls (``f.__wrapped__``), which NumPy's own code calls directly
    (``np.block`` calls ``np.concatenate.__wrapped__``): one rule serves both."""
    raw = getattr(f, "__wrapped__", None) if type(f) is _DISPATCHER else None
    return (f,) if raw is None or raw is f or not callable(raw) else (f, raw)


def _put(table, f, entry):
    for key in _keys(f):
        table[key] = entry
        _changed(key)


def defderiv(f: Callable[..., Any], *partials: Callable[..., Any] | None) -> None:
    """Register the partial derivatives of scalar/elementwise ``f``, one per positional
    argument: ``partials[i](ans, *args, **kwargs)``; ``None`` for an argument that
    carries no derivative.  Serves forward and reverse mode."""
    _check(f, "defderiv")
    for p in partials:
        if p is not None and not callable(p):
            raise TypeError("defderiv(%s, ...): each partial must be a callable "
                            "(ans, *args) -> derivative, or None; got %r" % (_name(f), p))
    _put(PARTIALS, f, partials)


def defjump(f: Callable[..., Any], jumps: Callable[..., Any]) -> None:
    """Declare where ``f``'s value jumps (a step: ``np.sign`` at 0, ``np.floor`` at an
    integer): ``jumps(*args, **kwargs)`` gives, on plain values, a boolean mask over the
    result (or False).  Its slope there is 0 by convention, and a first derivative keeps
    it; in an enclosing differentiation, where an argument moves, the value's derivative is
    NaN (refused), as a kink's slope's is (see ``kink_rules``)."""
    _check(f, "defjump")
    _put(JUMPS, f, jumps)


def defkink(f: Callable[..., Any], kinks: Callable[..., Any]) -> None:
    """Declare where ``f``'s partials (``defderiv``) are taken at a kink of ``f`` (``|x|``
    at 0, a tie of ``maximum``): ``kinks(i, ans, *args, **kwargs)`` gives, on plain
    values, a boolean mask over the result (or False) for argument ``i``.  There the
    slope is a convention, and a derivative of it in an enclosing differentiation is
    NaN (refused), not 0 (see ``kink_rules``)."""
    _check(f, "defkink")
    _put(KINKS, f, kinks)


def defjvp(f: Callable[..., Any], rule: Callable[..., Any] | None = None, *,
           batched: bool = False) -> Callable[..., Any]:
    """Register a forward rule ``rule(tangents, ans, *args, **kwargs) -> tangent``.
    Usable as a decorator: ``@defjvp(f)``.  ``batched=True`` promises the rule also
    works when every tangent has extra leading axes (chunked Jacobians)."""
    _check(f, "defjvp")
    if rule is None:
        return lambda r: (defjvp(f, r, batched=batched), r)[1]
    if not callable(rule):
        raise TypeError("defjvp(%s, rule): rule must be callable, got %r" % (_name(f), rule))
    _put(JVP, f, (rule, batched))
    return rule


def defvjp(f: Callable[..., Any], rule: Callable[..., Any] | None = None,
           *per_argument: Callable[..., Any] | None) -> Any:
    """Register a reverse rule ``rule(cotangent, ans, *args, **kwargs)`` returning one
    cotangent per positional argument (``None`` where none flows).  Usable as a
    decorator: ``@defvjp(f)``.  ``defvjp(f, rule_0, rule_1, ...)`` registers one rule per
    argument instead (each returns that argument's cotangent; ``None`` for an argument
    without one), and only the rules of arguments that need a cotangent are called."""
    _check(f, "defvjp")
    if rule is None and not per_argument:
        return lambda r: (defvjp(f, r), r)[1]
    rules = (rule,) + per_argument
    for r in rules:
        if r is not None and not callable(r):
            raise TypeError("defvjp(%s, rule): rule must be callable, got %r" % (_name(f), r))
    from ..checks import autograd_style_vjp, vjp_rule_error  # (the usual autograd mix-up)
    if any(r is not None and autograd_style_vjp(f, r) for r in rules):
        raise vjp_rule_error(_name(f))
    _put(VJP, f, rules if per_argument else rule)
    return rule


def vjp_of(f):
    """``f``'s reverse rule as one function returning every argument's cotangent (also
    for rules registered per argument); ``None`` when ``f`` has none."""
    rule = VJP.get(f)
    if type(rule) is not tuple:
        return rule
    return lambda g, ans, *args, **kw: tuple(None if r is None else r(g, ans, *args, **kw)
                                             for r in rule[:len(args)]) + (None,) * (len(args) - len(rule))


def deflinear(f: Callable[..., Any], transpose: Callable[..., Any] | None = None) -> None:
    """``f`` is linear in its first argument (the others are fixed parameters): its
    tangent is ``f(tangent, *rest)``; ``transpose(cotangent, ans, *args, **kwargs)``
    gives the cotangent of the first argument for reverse mode."""
    defjvp(f, lambda ts, ans, x, *rest, **kw: f(ts[0], *rest, **kw) if ts[0] is not None else None)
    if transpose is not None:
        defvjp(f, lambda g, ans, *args, **kw: (transpose(g, ans, *args, **kw),)
               + (None,) * (len(args) - 1))


_PATTERN_KINDS = ("elementwise", "moves", "same", "reduce", "along", "matmul")


def defpattern(f: Callable[..., Any], kind: str | None = None, *, second: Any = None) -> None:
    """Tell sparsity detection how ``f``'s result depends on its arguments: ``kind`` is
    one of ``"elementwise"``, ``"moves"``, ``"same"``, ``"reduce"``, ``"along"``, ``"matmul"`` (see
    ``capstan.rules.pattern_rules``), or ``None`` for an elementwise ``defderiv`` entry;
    ``second`` lists the pairs ``(i, j)`` of argument positions whose second derivative
    may be nonzero (``()`` for a linear ``f``; ``None``: all of them)."""
    _check(f, "defpattern")
    if kind is not None and kind not in _PATTERN_KINDS:
        raise ValueError("defpattern(%s, kind): kind must be one of %s or None, got %r"
                         % (_name(f), ", ".join(_PATTERN_KINDS), kind))
    for key in _keys(f):
        if kind is not None:
            PATTERN[key] = kind
        if second is None:
            SECOND.pop(key, None)
        else:
            SECOND[key] = tuple((int(i), int(j)) for i, j in second)


def defimpl(f: Callable[..., Any], impl: Callable[..., Any]) -> None:
    """Differentiate calls of ``f`` by running ``impl`` (a Python equivalent) in its
    place -- for C functions that take iterables of numbers, such as ``math.fsum``."""
    _check(f, "defimpl")
    _check(impl, "defimpl")
    _put(IMPLS, f, impl)


def defsolver(f: Callable[..., Any], handler: Callable[..., Any]) -> None:
    """Take over every call of ``f`` made inside a differentiation, differentiated
    arguments or not: ``handler(ctx, f, args, kwargs)`` computes the result.  For solvers
    and quadratures whose callback may close over a differentiated value (the call
    itself then carries none), see ``capstan.rules.solver_rules``."""
    _check(f, "defsolver")
    _check(handler, "defsolver")
    _put(SOLVERS, f, handler)


#: functions whose rules differentiate their first argument only (reductions: the others are
#: axes, dtypes, flags -- or values such as ``initial`` that the rules do not model)
ONLY_FIRST: set[Any] = set()


def only_first_argument(f: Callable[..., Any]) -> None:
    """Declare that ``f``'s rules carry the derivative of its first argument only: a value
    being differentiated in another argument is refused (NoRuleError), not dropped."""
    _check(f, "only_first_argument")
    for key in _keys(f):
        ONLY_FIRST.add(key)
        _changed(key)


def nondifferentiable(*fs: Callable[..., Any]) -> None:
    """Declare functions whose results carry no derivative (piecewise constant,
    integer- or boolean-valued)."""
    for f in fs:
        _check(f, "nondifferentiable")
        for key in _keys(f):
            NONDIFF.add(key)
            _changed(key)


#: linear-algebra functions whose tuple arguments are tuples (``solve_toeplitz((c, r), b)``),
#: not matrices written as nested sequences
TUPLE_PARAMETERS: set[Any] = set()
PLAIN_VALUED: set[Any] = set()  # functions declared by plain_valued (sparsity detection reads it)


def plain_valued(f):
    """Declare Python function ``f`` to give plain values (no derivative flows through
    it): it runs on its arguments' values, outside the differentiation."""
    PLAIN_VALUED.add(f)
    defjvp(f, lambda ts, ans, *args, **kw: None)
    defvjp(f, lambda g, ans, *args, **kw: (None,) * len(args))


_F64 = np.float64
_SUM = np.add.reduce
_ALL = np.logical_and.reduce  # (ndarray.all without its Python wrapper)


def unbroadcast(g, x):
    """Cotangent ``g`` summed down to the shape of argument ``x`` (undoing NumPy
    broadcasting); real when ``x`` is real."""
    tg, tx = type(g), type(x)
    if tg is np.ndarray:
        if tx is np.ndarray and g.shape == x.shape and (g.dtype.kind != "c" or x.dtype.kind == "c"):
            return g
        if g.dtype.kind == "f" and (tx is float or tx is _F64 or (
                tx is np.ndarray and x.ndim == 0 and x.dtype.kind != "c")):
            return _SUM(g, axis=None)  # (a real scalar operand: every axis summed, a NumPy scalar; g.sum()
            # without its Python wrapper)
    elif (tg is float or tg is _F64) and (tx is float or tx is _F64):
        return g
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape != shape:
        extra = len(gshape) - len(shape)
        if extra > 0:
            g = np.sum(g, axis=tuple(range(extra)))
        axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(g)[i] != 1)
        if axes:
            g = np.sum(g, axis=axes, keepdims=True)
    if not np.iscomplexobj(x) and np.iscomplexobj(g):
        g = np.real(g)
    if not shape and not isinstance(x, np.ndarray) and isinstance(g, np.ndarray):
        g = g[()]
    return g


def no_object_arrays(ans):
    """Refuse a result that is an array of Python objects made from differentiated values
    (``np.vectorize``, ``np.frompyfunc``, ``dtype=object``): its derivative would be lost.
    An empty one holds no value, so nothing is lost (SciPy calls its vectorized generic
    methods on the empty selection of points that need them)."""
    if type(ans) is np.ndarray and ans.dtype.kind == "O" and ans.size:
        raise TypeError("capstan: a differentiated array cannot become an array of Python objects "
                        "(dtype=object, as np.vectorize and np.frompyfunc make): its derivative would "
                        "be lost; write the elementwise function with NumPy operations, or apply the "
                        "scalar function with capstan.elementwise(f)")


def conj(x):
    """Complex conjugate that leaves real numbers (and their types) alone."""
    tx = type(x)
    if tx is float or tx is int:
        return x
    if tx is complex:
        return x.conjugate()
    if tx is np.ndarray:
        return np.conj(x) if x.dtype.kind == "c" else x
    return np.conj(x) if np.iscomplexobj(x) else x


def _name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def positional(f, args, kwargs):
    """``(args, kwargs)`` with the keyword arguments that ``f``'s signature also takes by
    position moved there (``pow(base=2.0, exp=x)`` is ``pow(2.0, x)``), so that rules,
    which see differentiated values positionally, see them; ``None`` when ``f`` has no
    signature or the call does not bind to it."""
    if "out" in kwargs or type(f) is np.ufunc:  # (out= is a destination, not an operand)
        return None
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    return bound.args, bound.kwargs


#: below this magnitude ``1 / x`` overflows (x subnormal)
_OVERFLOWING = 1.0 / np.finfo(float).max


def reciprocal_slope(x, scale=1.0):
    """``1 / x / scale``, a log's slope, NaN where it overflows though ``x`` is not 0: for a
    subnormal ``x`` the slope is finite but past the float range, and its product with a
    tangent, which may well be finite (``log`` of a density in its far tail), cannot be
    formed; NaN gets the derivative refused ("came out NaN") where an infinite slope would
    have been a silent ``inf``.  A zero tangent or cotangent still wins."""
    r = 1.0 / x / scale
    if type(r) is float or type(r) is np.float64:
        if r - r != 0 and x != 0:
            return math.nan
        return r
    if not np.all(np.isfinite(r)):
        r = np.where(np.isinf(r) & (x != 0), np.nan, r)
    return r


def strong_mul(a, b):
    """``a * b`` where an exactly zero factor wins over an infinite or NaN one (a partial
    times a tangent or cotangent): an element that does not depend on the input
    contributes nothing, even where the function's derivative is undefined
    (``np.nansum(np.where(x > 1, np.nan, x) ** 2)``)."""
    return _zeros_win(a * b, a, b)


def _all_finite(r):
    """Whether every element of the float or complex array ``r`` is finite.  A large one is
    summed first (one pass, no temporary): a finite sum has no infinite or NaN term; only
    where the sum is not finite (such a term, or an overflow) are the elements tested."""
    if r.size >= 4096:
        with np.errstate(over="ignore", invalid="ignore"):
            s = _SUM(r, axis=None)
        if np.isfinite(s):
            return True
    return bool(_ALL(np.isfinite(r), axis=None))


def _zeros_win(r, *factors):
    """The product ``r``, 0 where it is not finite and one of ``factors`` is exactly 0."""
    tr = type(r)
    if tr is np.ndarray:
        if r.dtype.kind in "fc" and not _all_finite(r):
            zero = factors[0] == 0
            for f in factors[1:]:
                zero = zero | (f == 0)
            r = np.where(zero, 0, r)
    elif (tr is float or tr is np.float64 or tr is complex or tr is np.complex128) and r - r != 0:
        if any(_zero(f) for f in factors):  # (r - r: 0 for a finite scalar, NaN for an infinite or NaN one)
            r = tr(0)
    return r


#: functions whose partials are piecewise constant (a selection's 0 or 1, a remainder's
#: quotient): an exact zero of theirs holds near the point too
PIECEWISE_LINEAR = {np.maximum, np.minimum, np.fmax, np.fmin, np.clip, np.where, np.heaviside,
                    np.copysign, math.copysign, np.remainder, np.fmod, math.fmod, math.remainder,
                    operator.mod, operator.imod}
#: f -> the arguments whose partial is the other arguments' doing alone (``x * c``,
#: ``x / c``, ``c / x``, ``c ** x``): constant when only that argument is differentiated
CONSTANT_OTHERS: dict[Any, tuple[int, ...]] = {
    **{f: (0, 1) for f in (operator.mul, operator.imul, np.multiply, operator.truediv, operator.itruediv, np.divide)},
    **{f: (1,) for f in (operator.pow, operator.ipow, np.power, math.pow, np.float_power)}}


def zeros_hold(f, i, tangents):
    """Whether an exact zero of ``f``'s partial in argument ``i`` holds near the point, so
    that it wins over an infinite tangent (:func:`strong_mul`), where ``tangents`` (None
    for a constant) are those of ``f``'s arguments; otherwise the zero is the point's
    (:func:`tangent_product`)."""
    if f in PIECEWISE_LINEAR:
        return True
    args = CONSTANT_OTHERS.get(f)
    return args is not None and i in args and all(t is None for j, t in enumerate(tangents) if j != i)


def tangent_product(p, t):
    """Partial ``p``, taken at the point, times tangent ``t`` in forward mode: 0 where ``t``
    is exactly 0 (that element does not move: ``np.sqrt(x - x)``), but a zero ``p`` against
    an infinite ``t`` stays NaN: the limit is undefined at first order (``np.cos(np.sqrt(x))``
    at 0, whose slope is -1/2, not 0), and forward mode refuses it.  A partial whose zeros
    do not depend on the point (a constant factor, a selection) uses :func:`strong_mul`."""
    return _zeros_win(p * t, t)


def zero_of_first_wins(a, b):
    """``a * b`` where only ``a``'s exact zeros win over an infinite or NaN ``b``: inside a
    nested differentiation, ``b`` varies with the enclosing one, so its zero holds at the
    point alone (``2 x`` at 0 times sqrt's infinite slope at ``x * x``)."""
    return _zeros_win(a * b, a)


def zero_of_second_wins(a, b):
    """:func:`zero_of_first_wins` with the roles swapped."""
    return _zeros_win(a * b, b)


def no_zero_wins(a, b):
    """``a * b``: both factors vary with an enclosing differentiation (NaN stays)."""
    return a * b


def _zero(v):
    """Whether ``v`` is an exact scalar zero (a 0-d array holding one counts: ``np.where``
    of a scalar condition makes one; a larger array never is, here)."""
    if type(v) is np.ndarray:
        return v.shape == () and v == 0
    return v == 0
