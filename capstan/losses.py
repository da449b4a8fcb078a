"""Loss detection: every way a derivative could silently leave a differentiation.

A value being differentiated is a tagged number or array whose derivative (tangent or
tape node) travels beside it.  The derivative is carried only by code capstan sees:
calls with a rule, and Python code it steps into.  The number can leave for code that
does not carry the derivative in five ways, and a sixth way loses it in place (a branch
taken at a single point); each is guarded here:

1. **A C function without a rule is called with it** (``ADContext.fallback``): its
   result is refused unless it cannot hold a derivative (:func:`derivative_free`);
   functions that export a float's exact value (:data:`EXPORTING`) are refused outright.
2. **C code, or Python called back from C, uses one of its protocols**
   (``math.fsum`` draining a generator, ``quad`` calling an integrand that closes over
   the value, ``np.asarray`` of an object): the tagged value hands the protocol to its
   context (:func:`escape`).  Conversions to a number or to raw memory (``__float__``,
   ``__complex__``, ``__array_interface__``, pickling) are refused; truth values, hashes,
   lengths and integer conversions carry no derivative and pass; NumPy functions and
   attribute reads are routed back into the differentiation.
3. **C code writes into arrays** it was given: a rule-less C function called with
   differentiated values has its writable array arguments compared before and after
   (:class:`WriteWatch`), and a write is refused.
4. **Text**: printing and formatting a differentiated value works, and the text made is
   remembered; a C function that parses such text back into a number
   (``float(str(x))``, ``json.loads``, ``Decimal``) is refused.
5. **Library code that catches the error** (a bare ``except:``): every refusal is also
   recorded on the context, and the differentiation fails at its end with the first one
   (:func:`check_finished`) even if something caught it.
6. **An exact equality that held** (``if h == 0:``, ``np.where(x == 0, ...)``): code
   that tests a differentiated value for equality and finds it may switch to a formula
   valid only at that point (SciPy's ``kappa4`` at ``h = 0``), whose derivative is not
   the function's.  When the equality held for values whose difference has a nonzero
   derivative (forward mode: the tangents differ; reverse mode: one backward pass from
   the compared values at the run's end reaches an input), the run is refused
   (:func:`point_branch`).  Comparisons inside capstan's own rules are exempt.

A deliberate drop is declared, never guessed: ``capstan.nondifferentiable(f)`` for a
function, ``capstan.stop_gradient(x)`` for a value.
"""
import array
import cmath
import importlib
import io
import math
import operator
import os
import re
import sys
from typing import Any, cast

import numpy as np

from overdub import Tagged, overdub
from overdub.tagging import PLAIN_PROTOCOLS, value_of

__all__ = ["NoRuleError", "no_rule", "escape", "derivative_free", "check_finished"]


class NoRuleError(TypeError):
    """A value being differentiated reached code that cannot carry its derivative (a C
    function without a derivative rule, a conversion to a plain number, a write into an
    array by C code, text parsed back into a number)."""

    function = None  # the C function the loss happened in, once known


_FIX = ("Register a rule, for example:\n"
        "    capstan.defderiv({name}, lambda ans, x: <d{short}/dx>)    # elementwise or scalar\n"
        "    capstan.defjvp({name}, lambda tangents, ans, *args: ...)    # forward mode\n"
        "    capstan.defvjp({name}, lambda cotangent, ans, *args: (...,))    # reverse mode\n"
        "or, if dropping the derivative is what you want, declare it: capstan.nondifferentiable({name}) "
        "for the function, or pass capstan.stop_gradient(x) for the value.")


def _fix(f):
    if type(f) is np.ufunc and f.__name__.endswith(" (vectorized)"):  # (np.frompyfunc's ufuncs)
        return ("A ufunc made by np.frompyfunc outside the differentiated function hides its "
                "Python function from capstan: make it inside, or use np.vectorize(kernel) or "
                "capstan.elementwise(kernel), which differentiate the kernel.")
    return _FIX.format(name=qualified_name(f), short=getattr(f, "__name__", "f"))


def no_rule(f, mode="forward"):
    """The error for a C function ``f`` without a rule that was given a value being
    differentiated."""
    err = NoRuleError(
        "capstan: %s has no derivative rule (for %s mode), and it was called with a value being "
        "differentiated; its result would silently lose the derivative.  %s"
        % (qualified_name(f), mode, _fix(f)))
    err.function = f
    return err


def no_argument_rule(f, position, mode="forward"):
    """The error for a value being differentiated given to argument ``position`` (from 0)
    of ``f``, which its rule does not cover."""
    err = NoRuleError(
        "capstan: %s has a derivative rule (for %s mode) that does not cover its argument %d, and "
        "that argument was given a value being differentiated; its derivative would silently be "
        "lost.  %s" % (qualified_name(f), mode, position + 1, _fix(f)))
    err.function = f
    return err


_PROTOCOL_WORDS = {
    "__float__": "converted to a plain float", "__complex__": "converted to a plain complex",
    "__reduce__": "pickled or copied", "__reduce_ex__": "pickled or copied",
    "__getattr__": "read as raw memory",
}


def escaped(protocol, mode, where):
    """The error for a differentiated value converted by code capstan does not see."""
    detail = "%s (%s)%s" % (_PROTOCOL_WORDS.get(protocol, "used"), protocol, where)
    err = NoRuleError(
        "capstan: a value being differentiated (%s mode) was %s by code that cannot carry its "
        "derivative -- C code, or a function called back from C.  The result would silently lose "
        "the derivative.  If a C function consumes the value (through an iterator, a callback or a "
        "container: math.fsum, np.fromiter, scipy.integrate.quad...), register a derivative rule for "
        "it (capstan.defderiv / defjvp / defvjp), or, if dropping the derivative is what you want, "
        "pass capstan.stop_gradient(x) instead of x." % (mode, detail))
    err.detail = detail
    return err


def in_function(ctx, err, f):
    """``err`` (raised while C function ``f`` ran) restated to name ``f``, in place of
    ``err`` among the context's recorded losses."""
    if err.function is not None:
        return err
    mode = ctx.mode
    new = NoRuleError(
        "capstan: %s has no derivative rule (for %s mode), and a value being differentiated reached "
        "it indirectly (through an iterator, a container or a function it called back) and was %s.  %s"
        % (qualified_name(f), mode, getattr(err, "detail", "used"), _fix(f)))
    new.function = f
    ctx.losses[:] = [new if e is err else e for e in ctx.losses]
    return new


def wrote(f, mode):
    err = NoRuleError(
        "capstan: %s has no derivative rule (for %s mode), and it wrote into an array that holds or "
        "receives values being differentiated; the derivative cannot follow a write made by C code.  %s"
        % (qualified_name(f), mode, _fix(f)))
    err.function = f
    return err


def array_lost(target, mode):
    """The error for a value being differentiated written into an array whose elements
    cannot carry a derivative (``target`` says which)."""
    return NoRuleError(
        "capstan: a value being differentiated (%s mode) was written into %s; its derivative "
        "cannot be carried there and would silently be lost.  Write it into a plain float array "
        "(np.zeros(n)) or a list instead, or pass capstan.stop_gradient(x) if dropping the "
        "derivative is what you want." % (mode, target))


def attribute_lost(x, name, mode):
    kind = x.__class__.__name__
    return NoRuleError(
        "capstan: the attribute .%s of a differentiated %s has no derivative rule (%s mode); reading it "
        "would silently lose the derivative.  Register one with capstan.defjvp/defvjp on a function "
        "and compute it from the value, or, if dropping the derivative is what you want, read it from "
        "capstan.stop_gradient(x)." % (name, kind, mode))


def stored(f, mode):
    err = NoRuleError(
        "capstan: %s has no derivative rule (for %s mode), and it stored values being differentiated "
        "into a container as plain numbers; their derivatives would be lost.  %s"
        % (qualified_name(f), mode, _fix(f)))
    err.function = f
    return err


def masked_array(f=None, mode=None):
    """The error for a value being differentiated made part of a ``numpy.ma`` masked array
    (by ``np.ma.array``, ``.view(MaskedArray)``, or an operation with one)."""
    err = NoRuleError(
        "capstan: numpy.ma masked arrays cannot carry a derivative (np.ma.array, masked_where... "
        "made one of a value being differentiated%s): their methods run compiled code on the raw "
        "data.  Select with the mask instead: np.where(mask, x, fill), x[~mask], or "
        "np.sum(x, where=~mask)"
        % ("" if f is None else ", or %s combined one with it (%s mode)" % (qualified_name(f), mode)))
    err.function = f
    return err


def parsed_text(f, mode):
    err = NoRuleError(
        "capstan: %s turned text made from a value being differentiated (by str, repr, format, "
        "an f-string or json) back into a number (%s mode); the derivative cannot follow a number "
        "through text.  Compute with the value itself, or pass capstan.stop_gradient(x) if dropping "
        "the derivative is what you want." % (qualified_name(f), mode))
    err.function = f
    return err


def qualified_name(f):
    """``module.qualname`` of a function, as a user would write it."""
    module = getattr(f, "__module__", None) or getattr(getattr(f, "__objclass__", None),
                                                       "__module__", None)
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if not isinstance(qual, str):  # a callable object: name its type
        tp = type(f)
        module, qual = tp.__module__, "%s object" % tp.__qualname__
    if module is None and type(f) is np.ufunc:  # (SciPy's ufuncs name no module)
        special = sys.modules.get("scipy.special")
        if special is not None and getattr(special, qual, None) is f:
            module = "scipy.special"
    if module in (None, "builtins"):
        return qual
    module = {"numpy.core.multiarray": "numpy", "numpy._core.multiarray": "numpy",
              "numpy._core.umath": "numpy", "numpy.core.umath": "numpy",
              "numpy._core._multiarray_umath": "numpy", "numpy.core._multiarray_umath": "numpy", "_operator": "operator"}.get(module, module)
    return "%s.%s" % (module, qual)


class UndefinedInReverse(NoRuleError):
    """A reverse-mode derivative came out NaN at a point where forward mode may still
    tell (``capstan.hvp`` and ``sparse_hessian`` then take forward over reverse)."""


def undefined_in_reverse(fname: str) -> NoRuleError:
    """A gradient that came out NaN where ``f``'s value and arguments are finite."""
    return UndefinedInReverse(
        "capstan.%s: the derivative came out NaN at this point, where f's value and its arguments are "
        "finite: on the way, a partial derivative is infinite or undefined (sqrt, cbrt, arcsin, a "
        "fractional power at the end of its domain...) and reverse mode cannot tell how the terms "
        "through it cancel (math.sqrt(x - x) + x), or it meets a slope that is exactly 0 there, "
        "where the limit depends on higher orders (math.cos(math.sqrt(x)) at 0), or a second "
        "derivative is taken at a kink, where the slope jumps (abs, a norm or hypot at 0, maximum, "
        "clip, a sort or max at a tie), or a log of a subnormal number (its slope 1/x is past the "
        "float range), or it used the inner step times of scipy.integrate.solve_ivp "
        "without t_eval or the states at them (they move with the parameters: pass t_eval).  Use forward "
        "mode for the first kind (capstan.D, capstan.jvp, capstan.jacfwd); for any, differentiate at a "
        "point off that singularity." % fname)


def undefined_in_forward(fname):
    """A tangent that came out NaN where ``f``'s value, its arguments and the direction
    are finite."""
    return NoRuleError(
        "capstan.%s: the derivative came out NaN at this point, where f's value and its arguments are "
        "finite: on the way, a partial derivative is infinite or undefined (sqrt, cbrt, arcsin, a "
        "fractional power at the end of its domain...) and the terms through it cancel as inf - inf "
        "(math.sqrt(x) - math.sqrt(x)), or a derivative is undefined here (an eigenvector of a repeated "
        "eigenvalue; a second derivative at a kink, where the slope jumps: abs, a norm or hypot at 0, "
        "maximum, clip, a sort or max at a tie; a log of a subnormal number, whose slope 1/x is past "
        "the float range; the inner step times of scipy.integrate.solve_ivp without "
        "t_eval, or the states at them: pass t_eval).  Differentiate at a point off that singularity, or "
        "register a rule for the function that contains it (capstan.defjvp)." % fname)


def singular_partial(f, exc):
    """The error for a partial derivative of ``f`` that cannot be computed at this point:
    infinite, undefined or past the float range where ``f`` itself has a value."""
    err = NoRuleError(
        "capstan: the derivative of %s is infinite or undefined at this point (its rule's arithmetic "
        "raised %s: %s), or a derivative of it taken inside another differentiation is; the "
        "derivative here cannot be computed.  Differentiate at a point off that singularity, or "
        "register a rule for the function that contains it (capstan.defjvp / defvjp)."
        % (qualified_name(f), type(exc).__name__, exc))
    err.function = f
    return err


def point_branch(f, mode):
    err = NoRuleError(
        "capstan: the function being differentiated tested a value being differentiated for exact "
        "equality (%s) and the equality held (%s mode).  Code that branches on such a test may use "
        "a formula valid only at that point, whose derivative is not the function's, so the "
        "derivative here cannot be trusted.  Differentiate at a point where the equality does not "
        "hold, or register a rule for the function that branches (capstan.defjvp / defvjp)."
        % (_test_name(f), mode))
    err.function = f
    return err


def _test_name(f):
    """How :func:`point_branch` names the test ``f``."""
    name = {operator.eq: "==", operator.ne: "!=", bool: "a truth test, x != 0"}.get(f)
    if name is not None:
        return name
    owner = getattr(f, "__self__", None)
    if type(owner) is np.ufunc:  # (np.any, np.all: np.logical_or.reduce, np.logical_and.reduce)
        return "numpy.%s.%s (np.any, np.all), a truth test of elements, x != 0" % (owner.__name__, f.__name__)
    if f in ZERO_TESTS:
        return "%s, a truth test of elements, x != 0" % qualified_name(f)
    if f in TOLERANCES:
        return "%s, with a tolerance of zero at these values" % qualified_name(f)
    return qualified_name(f)


# ----------------------------------------------------------------------------- equalities (6)
#: the exact comparisons, each -> whether it is true where its operands differ
EQUALITIES = {operator.eq: False, operator.ne: True, np.equal: False, np.not_equal: True,
              np.array_equal: False, np.array_equiv: False}


#: tests that are exact equalities in disguise: each -> (its result where the equality
#: held, the constant the value then equals): ``if x:`` is ``x != 0``, ``x.is_integer()``
#: is ``x == round(x)``
POINT_TESTS: dict[Any, tuple[bool, Any]] = {bool: (False, lambda v: 0.0), operator.truth: (False, lambda v: 0.0),
               operator.not_: (True, lambda v: 0.0)}
POINT_TESTS.update({t.is_integer: (True, round) for t in (float, np.float16, np.float32, np.float64)})
POINT_TESTS[np.bool_] = (False, lambda v: 0.0)

#: NumPy functions that test the elements of some arguments for truth, each ``!= 0``: each
#: -> (the positions of those arguments, the position of a ``dtype`` argument that makes it
#: a test only when it is bool, or ``None``)
ZERO_TESTS: dict[Any, tuple[tuple[int, ...], Any]] = {
    f: ((0,), None) for f in (np.any, np.all, np.ndarray.any, np.ndarray.all, np.count_nonzero, np.nonzero,
                              np.ndarray.nonzero, np.flatnonzero, np.argwhere, np.logical_not, np.where,
                              np.extract, np.compress)}
ZERO_TESTS.update({f: ((0, 1), None) for f in (np.logical_and, np.logical_or, np.logical_xor)})

def _numpy_core(name):
    """NumPy's private module ``name`` (``numpy._core``'s in NumPy 2, ``numpy.core``'s in 1.x)."""
    try:
        return importlib.import_module("numpy._core." + name)
    except ImportError:  # pragma: no cover - NumPy 1.x
        return importlib.import_module("numpy.core." + name)


#: what ``np.count_nonzero(a)`` of a whole array calls
count_nonzero_c = _numpy_core("multiarray").count_nonzero
ZERO_TESTS[count_nonzero_c] = ((0,), None)
#: ufuncs whose ``reduce`` tests the elements for truth (``np.any``, ``np.all``)
LOGICAL_UFUNCS = frozenset((np.logical_and, np.logical_or, np.logical_xor))
ZERO_TESTS.update({f: ((0,), 1) for f in (np.ndarray.astype, np.generic.astype, getattr(np, "astype", np.ndarray.astype),
                                          np.array, np.asarray, np.asanyarray)})


def point_test_held(ctx, f, vals, metas, out, frame):
    """``f`` (of :data:`POINT_TESTS`) of one differentiated number gave ``out``: where that
    means an equality held, the mode checks it as it does ``==`` (``x * 2 if x else x * 3``
    at 0 gave 3, ``x.is_integer()`` at 2.0 the branch of that point)."""
    held, constant = POINT_TESTS[f]
    if len(vals) != 1 or metas[0] is None or (type(out) is not bool and type(out) is not np.bool_) or bool(out) is not held:
        return
    number = vals[0]
    while type(number) is Tagged:
        number = value_of(number)
    if type(number) is np.ndarray and number.size == 1 and number.dtype.kind in "fc" and held is False:
        number = number.reshape(())[()]  # (``if a:`` of an array of one element)
    if isinstance(number, (float, complex, np.inexact)) and not compared_by_capstan(frame):
        ctx.equality_held(bool if held is False else f, (vals[0], constant(number)), (metas[0], None), True)


def zero_test_held(ctx, f, args, vals, metas, kwargs, frame, positions=None):
    """``f`` (of :data:`ZERO_TESTS`) tested elements of differentiated arguments for truth
    (``np.any(a)``, ``np.nonzero(a)``, ``a.astype(bool)``): where some were exactly 0 and the
    result would differ had they not been, an equality ``a == 0`` held there, which the mode
    checks as it does ``==`` (``x * 2 if np.any([x, 0.0]) else x * 3`` at 0 gave 3)."""
    positions, dtype_at = ZERO_TESTS[f] if positions is None else (positions, None)
    if dtype_at is not None and not _to_bool(args, kwargs, dtype_at):
        return
    plain = None
    for i in positions:
        if i >= len(vals) or metas[i] is None:
            continue
        a = _float_array(vals[i])
        if a is None:
            continue
        zeros = a == 0
        if not zeros.any():
            continue
        if compared_by_capstan(frame):
            return
        if dtype_at is None:  # (no test that mattered if the result is the same without those zeros)
            plain = [plain_copy(v) for v in vals] if plain is None else plain
            flipped = list(plain)
            flipped[i] = np.where(zeros, 1.0, a).reshape(np.shape(a))
            rest = {k: plain_copy(v) for k, v in kwargs.items()}
            try:
                if _same(f(*plain, **rest), f(*flipped, **rest)):
                    continue
            except Exception:  # (the test is taken as held)
                pass
        value, meta = vals[i], metas[i]
        if type(meta) is list:  # (a list of differentiated numbers: as the array it is read as)
            got, metas_, _, _ = ctx._split((overdub(ctx, np.asarray, args[i]),))
            value, meta = got[0], metas_[0]
            if meta is None or type(meta) is list:
                continue
        ctx.equality_held(f, (value, 0.0), (meta, None), zeros)


#: comparisons within a tolerance, each -> its (relative, absolute) tolerance parameters
#: (name, default) after the two values
TOLERANCES = {np.isclose: (("rtol", 1e-05), ("atol", 1e-08)), np.allclose: (("rtol", 1e-05), ("atol", 1e-08)),
              math.isclose: (("rel_tol", 1e-09), ("abs_tol", 0.0)),
              cmath.isclose: (("rel_tol", 1e-09), ("abs_tol", 0.0))}


def tolerance_held(ctx, f, args, vals, metas, kwargs, frame):
    """``f`` (of :data:`TOLERANCES`) compared differentiated values within a tolerance that
    is zero where they are equal (``math.isclose(x, 0.0)``: no absolute tolerance, and the
    relative one is 0 at 0): an exact equality held there, checked as ``==`` is."""
    if len(vals) < 2 or (metas[0] is None and metas[1] is None):
        return
    (rel, rel_default), (abs_, abs_default) = TOLERANCES[f]
    rtol = kwargs.get(rel, vals[2] if len(vals) > 2 else rel_default)
    atol = kwargs.get(abs_, vals[3] if len(vals) > 3 else abs_default)
    a, b = _float_array(vals[0]), _float_array(vals[1])
    if a is None or b is None:
        return
    try:
        if f is math.isclose or f is cmath.isclose:
            band = np.maximum(rtol * np.maximum(np.abs(a), np.abs(b)), atol)
        else:
            band = atol + rtol * np.abs(b)
        where = (band == 0) & (a == b)
    except (TypeError, ValueError):
        return
    if not where.any() or compared_by_capstan(frame):
        return
    values, nodes = [], []
    for i in (0, 1):
        value, meta = vals[i], metas[i]
        if type(meta) is list:  # (a list of differentiated numbers: as the array it is read as)
            got, metas_, _, _ = ctx._split((overdub(ctx, np.asarray, args[i]),))
            value, meta = got[0], metas_[0]
            meta = None if type(meta) is list else meta
        values.append(value)
        nodes.append(meta)
    ctx.equality_held(f, tuple(values), tuple(nodes), where)


def _float_array(v):
    """The plain numbers of ``v`` (a differentiated value, or a list of them) as an array,
    if they are floats (or complex)."""
    v = plain_copy(v)
    if type(v) is np.ndarray:
        a = v
    elif isinstance(v, (float, complex, np.inexact, list, tuple)):
        try:
            a = np.asarray(v)
        except (ValueError, TypeError):
            return None
    else:
        return None
    return a if a.dtype.kind in "fc" else None


def _to_bool(args, kwargs, at):
    """Whether the ``dtype`` argument (position ``at``, or the keyword) asks for booleans."""
    dtype = kwargs.get("dtype", args[at] if len(args) > at else None)
    if dtype is None:
        return False
    try:
        return np.dtype(dtype) == np.bool_
    except TypeError:
        return False


def _same(a, b):
    """Whether two results of a NumPy function are the same booleans or indices (tuples of
    arrays too); values that are numbers are never the same (``np.where(a, 2 * x, 3 * x)``
    at ``x = 0`` selects equal numbers with different derivatives)."""
    if type(a) is tuple or type(b) is tuple:
        return type(a) is type(b) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    return (np.shape(a) == np.shape(b) and np.result_type(a).kind in "biu" and np.result_type(b).kind in "biu"
            and bool(np.array_equal(a, b)))


def equal_where(f, out):
    """Where the operands of the exact comparison ``f`` were equal, from its result
    ``out``: ``True``, a boolean mask, or ``None`` when nowhere (or ``out`` is not a
    comparison of numbers)."""
    negated = EQUALITIES[f]
    t = type(out)
    if t is bool or t is np.bool_:
        return True if bool(out) is not negated else None
    if t is np.ndarray and out.dtype == np.bool_:
        mask = ~out if negated else out
        return mask if mask.any() else None
    return None


_MACHINERY = ("capstan.adcontext", "capstan.forward", "capstan.reverse", "capstan.tape", "capstan.fastpaths")
#: code of capstan's functions that call the user's function for the user (``np.vectorize``'s
#: kernel, a builtin such as ``bool`` included): a test made there is the user's
ON_USERS_BEHALF: set[Any] = set()


def compared_by_capstan(frame):
    """Whether the comparison being routed, seen from ``frame`` inside the machinery, was
    made by capstan's own code (a rule's Python equivalent of a compiled kernel), which
    handles its special points itself."""
    while frame is not None:
        module = frame.f_globals.get("__name__") or "overdub"  # (generated code: the machinery's)
        if not (module.startswith("overdub") or module.startswith(_MACHINERY)):
            return module.startswith("capstan.") and frame.f_code not in ON_USERS_BEHALF
        frame = frame.f_back
    return False


def tangents_differ(where, values, tangents, chunk):
    """Whether, somewhere in ``where``, the tangents of the two compared ``values`` differ
    (``None``: a constant; ``chunk``: tangents carry a leading axis of that many
    directions)."""
    nd = max(np.ndim(v) for v in values)
    lead = () if chunk is None else (chunk,)
    spread = []
    for v, t in zip(values, tangents):
        if t is None:
            continue
        while type(t) is Tagged:  # (a tangent carrying an enclosing derivative)
            t = value_of(t)
        t = np.asarray(t)
        spread.append(t.reshape(lead + (1,) * (nd - np.ndim(v)) + np.shape(v)))
    if not spread:
        return False
    diff = spread[0] - spread[1] if len(spread) == 2 else spread[0]
    moving = diff != 0
    if chunk is not None:
        moving = moving.any(axis=0)
    return bool(np.any(moving & where))


# ----------------------------------------------------------------------------- recording
def refuse(ctx, err):
    """Record ``err`` on ``ctx`` (so that catching it does not hide the loss) and return
    it for raising."""
    ctx.losses.append(err)
    return err


def check_finished(ctx: Any) -> None:
    """At the end of a differentiation: raise the first loss detected during it, even if
    the code being differentiated caught the exception."""
    if ctx.losses:
        err = ctx.losses[0]
        del ctx.losses[:]
        raise err.with_traceback(None)


class guard:
    """``with guard(ctx):`` around a differentiation: if it fails with another exception
    after a loss was detected (library code that caught the ``NoRuleError`` and then
    failed differently), the loss is what is raised."""

    __slots__ = ("ctx",)

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        return self.ctx

    def __exit__(self, tp, exc, tb):
        return failed(self.ctx, exc)


def failed(ctx: Any, exc: BaseException | None) -> bool:
    """``guard``'s way out after exception ``exc`` (``None``: none): the first loss ``ctx``
    recorded is raised instead of another exception; ``False`` otherwise."""
    found = ctx.losses
    if exc is None or not found or any(exc is e for e in found):
        return False
    err = found[0]
    del found[:]
    raise err.with_traceback(None) from exc


# ----------------------------------------------------------------------------- protocols (2)
_LOSSY = frozenset(("__float__", "__complex__", "__reduce__", "__reduce_ex__"))
_TEXT = frozenset(("__str__", "__repr__", "__format__"))
#: attributes that hand out an array's memory or contents as plain data
RAW_MEMORY = frozenset(("__array_interface__", "__array_struct__", "__array__", "__dlpack__",
                         "__buffer__", "data", "ctypes", "tobytes", "tostring", "tofile", "tolist",
                         "item", "itemset"))
_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(cast(str, m.__file__))) + os.sep
                      for m in (sys.modules["overdub"], sys.modules[__name__.rpartition(".")[0]]))


def escape(ctx, protocol, x, *args):
    """``Context.escape`` for differentiation contexts (see the module docstring, 2)."""
    value = value_of(x)
    if protocol in _LOSSY:
        if ctx.meta(x) is None:  # (a constant that happens to be tagged)
            return _plain(protocol, value, args)
        raise refuse(ctx, escaped(protocol, ctx.mode, _where()))
    if protocol in _TEXT:
        text = _plain(protocol, value, args)
        note_text(ctx, text)
        return text
    if protocol == "__getattr__":
        return _attribute(ctx, x, args[0])
    out = _plain(protocol, value, args)  # __bool__, __hash__, __len__, __int__, __index__
    if protocol == "__bool__" and out is False and not ctx.in_rules:  # (``if x:`` is ``x != 0``)
        point_test_held(ctx, bool, (value,), (ctx.meta(x),), out, sys._getframe(1))
    return out


def _plain(protocol, value, args):
    return PLAIN_PROTOCOLS[protocol](value, *args)


def _attribute(ctx, x, name):
    """``x.name`` read by code capstan does not see: plain when it cannot hold the
    derivative (shape, dtype...), refused for raw memory, else read inside the
    differentiation (methods come back bound inside it)."""
    attr = getattr(value_of(x), name)
    if name in RAW_MEMORY and ctx.meta(x) is not None:
        raise refuse(ctx, escaped("__getattr__", ctx.mode, " (its .%s)%s" % (name, _where())))
    if derivative_free(attr):
        return attr
    out = overdub(ctx, getattr, x, name)
    if callable(out) and not isinstance(out, type) and type(out) is not Tagged:
        return _Bound(ctx, out)
    return out


class _Bound:
    """A method of a differentiated value handed to code capstan does not see: calling
    it runs inside the differentiation."""

    __slots__ = ("ctx", "method")

    def __init__(self, ctx, method):
        self.ctx, self.method = ctx, method

    def __call__(self, /, *args, **kwargs):
        return overdub(self.ctx, self.method, *args, **kwargs)


def _where():
    """``", at file:line in function"`` for the nearest frame of user code."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame = frame.f_back
    if frame is None:
        return ""
    code = frame.f_code
    return ", at %s:%d in %s" % (code.co_filename, frame.f_lineno, code.co_name)


# ----------------------------------------------------------------------------- results (1)
_PLAIN_RESULTS = (type(None), bool, int, str, type, slice, range, np.dtype, np.integer, np.bool_,
                  re.Match, re.Pattern, type(np.empty(0).flags))
#: functions that export a float's exact value as integers or text (their results carry no
#: float, yet code computes with them: statistics.mean, fractions) or write values into an
#: array in C: refuse, don't drop the derivative
EXPORTING = {float.as_integer_ratio, float.hex, float.__getnewargs__, float.__reduce_ex__,
             int.from_bytes, np.put, np.place, np.putmask, np.ndarray.put, np.ndarray.fill, np.ndarray.tofile,
             getattr(np.ndarray, "itemset", np.put)}
# (NumPy's float scalars have their own: Fraction(a[0]) of an array's element called it)
EXPORTING.update(t.as_integer_ratio for t in (np.float16, np.float32, np.float64, np.longdouble))
#: those that export a float's exact value as integers or hex text (:func:`exported`)
EXACT_EXPORTS = frozenset({float.as_integer_ratio, float.hex}
                          | {t.as_integer_ratio for t in (np.float16, np.float32, np.float64, np.longdouble)})


def exported(f, mode):
    """The error for a float's exact value exported as integers or hex text (``Fraction(x)``,
    ``x.as_integer_ratio()``, ``x.hex()``): no rule can carry a derivative into integers or
    text, and the code that takes them apart (decoding the digits) cannot be followed."""
    err = NoRuleError(
        "capstan: %s exports the exact value of a value being differentiated as integers or hex "
        "text (fractions.Fraction(x), statistics.mean, x.as_integer_ratio(), x.hex()), which cannot "
        "carry its derivative (%s mode).  Compute with the float itself (statistics.fmean for "
        "statistics.mean), or pass capstan.stop_gradient(x) if dropping the derivative is what you "
        "want." % (qualified_name(f), mode))
    err.function = f
    return err
_EXPORTS = {bytes, bytearray, memoryview, array.array}


def derivative_free(x, depth=0):
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
        return all(derivative_free(e, depth + 1) for e in x)
    if tx is dict and depth < 3:
        return all(derivative_free(e, depth + 1) for e in x.values())
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


# ----------------------------------------------------------------------------- writes (3)
class WriteWatch:
    """Copies of the writable arrays a C call may write into (its arguments, one level
    into lists, tuples and dicts; the raw arrays under tagged ones), to tell afterwards
    whether it wrote."""

    __slots__ = ("arrays",)

    def __init__(self, f, args, kwargs):
        found = {}
        owner = getattr(f, "__self__", None)
        for a in (owner, *args, *kwargs.values()):
            _collect(a, found, 0)
        self.arrays = [(a, a.copy()) for a in found.values()]

    def wrote(self):
        for a, before in self.arrays:
            if not np.array_equal(a, before, equal_nan=a.dtype.kind in "fc"):
                return True
        return False


class StoreWatch:
    """The lists, dicts and sets a C call was given (and the one it is bound to), to tell
    whether it stored something in them; and the raw memory it was given (``array.array``,
    ``bytearray``, a writable ``memoryview``), which a store converts to plain numbers
    (``a.append(x)``, ``struct.pack_into(fmt, buf, 0, x)``)."""

    __slots__ = ("containers", "buffers")

    def __init__(self, f, args):
        owner = getattr(f, "__self__", None)
        self.containers = [(c, list(c.items()) if type(c) is dict else list(c))
                           for c in (owner, *args) if type(c) in (list, dict, set)]
        self.buffers = [(c, bytes(c)) for c in (owner, *args) if type(c) in _BUFFERS or (
            type(c) is memoryview and not c.readonly and c.c_contiguous)]

    def stored(self):
        for c, before in self.containers:
            now = list(c.items()) if type(c) is dict else list(c)
            if len(now) != len(before) or any(a is not b for a, b in zip(now, before)):
                return True
        for c, before in self.buffers:
            if bytes(c) != before:
                return True
        return False


_BUFFERS = (array.array, bytearray)


def _collect(a, found, depth):
    while type(a) is Tagged:
        a = value_of(a)
    ta = type(a)
    if ta is np.ndarray:
        if a.flags.writeable and a.size and id(a) not in found:
            found[id(a)] = a
    elif (ta is list or ta is tuple) and depth < 1:
        for e in a:
            _collect(e, found, depth + 1)
    elif ta is dict and depth < 1:
        for e in a.values():
            _collect(e, found, depth + 1)


# ----------------------------------------------------------------------------- text (4)
#: what separates the numbers in a text made of several (``"[0.7 1.2]"``, ``"0.7, 1.2"``)
_SEPARATORS = re.compile(r"[\s,;:=\[\](){}]+")


def is_text(x):
    """Whether ``x`` is text: a string or an array of strings."""
    return isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype.kind in "SU")


def note_text(ctx, result, depth=0):
    """Remember the text a C function made from values being differentiated: the whole
    text and, where it holds several numbers (an array printed), each of them, which a
    slice of the text may be read back as.  Text arrays (``a.astype(str)``) note their
    elements."""
    tr = type(result)
    if tr is bytearray:
        result, tr = bytes(result), bytes
    if tr is bytes or isinstance(result, bytes):
        result, tr = bytes(result).decode("latin-1"), str
    if tr is str or isinstance(result, str):
        if result:
            ctx.texts.add(str(result))
            for piece in _SEPARATORS.split(result):
                if piece and piece != result and any(c.isdigit() for c in piece):
                    ctx.texts.add(piece)
    elif (tr is tuple or tr is list) and depth < 2:
        for e in result:
            note_text(ctx, e, depth + 1)
    elif tr is np.ndarray and result.dtype.kind in "SUO":  # (objects: np.char.mod's strings)
        for e in result.ravel().tolist():
            note_text(ctx, e, 2)


#: one conversion of a ``%`` format: ``%[(key)][flags][width][.precision][length]type``
_CONVERSION = re.compile(r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?"
                         r"(?:\.(?P<precision>\*|\d+))?[hlL]?(?P<type>[diouxXeEfFgGcrsab%])")


def note_format(ctx, fmt, values, plain):
    """Remember the text each differentiated value of ``fmt % values`` became (``"%.2f" %
    x`` is ``1.00``): a number read back from any text holding it is then refused, as for
    ``str(x)``.  ``plain`` is ``values`` with the plain numbers."""
    text = fmt.decode("latin-1") if type(fmt) is bytes else fmt
    if type(values) is not tuple:
        values, plain = (values,), (plain,)
    i = 0
    for m in _CONVERSION.finditer(text):
        if m.group("type") == "%":
            continue
        for part in ("width", "precision"):  # (a * takes the next value as a number)
            if m.group(part) == "*":
                i += 1
        if m.group("key") is not None or i >= len(values):
            return
        if type(values[i]) is Tagged or type(values[i]) is np.ndarray:
            spec = m.group(0)
            if m.group("width") == "*" or m.group("precision") == "*":
                return note_text(ctx, str(plain[i]))
            try:
                piece = spec % (plain[i],)
            except (TypeError, ValueError, OverflowError):
                piece = str(plain[i])
            note_text(ctx, piece.strip())
        i += 1


def _text_writers():
    """C serializers that check their inputs' exact types (``PyFloat_Check``): they must be
    given plain numbers, and what they write is text."""
    writers = set()
    try:
        from json import encoder
    except ImportError:  # pragma: no cover
        return writers
    if encoder.c_make_encoder is not None:
        writers.add(encoder.c_make_encoder)
    return writers


#: C serializers, by type of the callable (``json``'s C encoder object)
TEXT_WRITERS = _text_writers()


def write_text(ctx, f, args, kwargs):
    """``f(*args, **kwargs)`` for a C serializer: differentiated values inside its
    arguments are given as plain numbers, and the text it makes is remembered -- only
    then: text made from plain values only is plain text (a doctest's source compiled
    after ``json.dumps(2 + 1j, ...)`` under a context with nothing to carry)."""
    plain = [plain_copy(a) for a in args]
    result = f(*plain, **kwargs)
    if any(p is not a for p, a in zip(plain, args)):
        note_text(ctx, result)
    return result


#: C parsers that read lines of text from an iterator given first (``np.loadtxt``'s; NumPy
#: 1.x parses in Python)
LINE_READERS = frozenset(f for f in (getattr(_numpy_core("_multiarray_umath"), "_load_from_filelike", None),)
                         if f is not None)


#: what holds text as it is (encoded, or in a buffer): made from remembered text, it is
#: remembered in turn (bytes) or read from (:func:`reads_text`), not refused
TEXT_HOLDERS = frozenset((bytes, bytearray, io.StringIO, io.BytesIO))


def checked_lines(ctx, f, args):
    """``args`` of the line reader ``f`` with its iterator of lines replaced by one that
    refuses a line holding text made from a differentiated value as C pulls it
    (``np.loadtxt([str(x)])``): the lines are not otherwise visible."""
    lines = args[0] if args else None
    if lines is None or isinstance(lines, (str, bytes)) or not hasattr(lines, "__next__"):
        return args  # (a file C reads by itself: its text is checked when it is an io.StringIO)

    def checked():
        for line in lines:
            if reads_text(ctx, (line,), {}):
                raise refuse(ctx, parsed_text(f, ctx.mode))
            yield line
    return (checked(), *args[1:])


def plain_copy(x, depth=0):
    """``x`` with the plain numbers of its tagged values, in dicts, lists and tuples too;
    ``x`` itself where it holds none (a C serializer given it sees the very objects: its
    ``default`` callback, its circular-reference check)."""
    tx = type(x)
    if tx is Tagged:
        while type(x) is Tagged:
            x = value_of(x)
        return x
    if depth > 32:
        return x
    if tx is dict:
        items = [(plain_copy(k, depth + 1), plain_copy(v, depth + 1)) for k, v in x.items()]
        if all(pk is k and pv is v for (pk, pv), (k, v) in zip(items, x.items())):
            return x
        return dict(items)
    if tx is list or tx is tuple:
        elements = [plain_copy(e, depth + 1) for e in x]
        if all(p is e for p, e in zip(elements, x)):
            return x
        return tx(elements)
    return x


def reads_text(ctx, args, kwargs):
    """Whether any string argument (or the text in an ``io.StringIO`` or ``io.BytesIO``)
    contains text made from a differentiated value."""
    texts = ctx.texts
    for a in (*args, *kwargs.values()):
        ta = type(a)
        if ta is io.StringIO or ta is io.BytesIO:  # (np.loadtxt(buf) after np.savetxt(buf, ...))
            a, ta = a.getvalue(), type(a.getvalue())
        if ta is bytes or ta is bytearray or isinstance(a, bytes):  # (np.bytes_, np.str_ too)
            a, ta = bytes(a).decode("latin-1"), str
        if (ta is str or isinstance(a, str)) and any(t in a for t in texts):
            return True
        if ta is np.ndarray and a.dtype.kind in "SU" and reads_text(ctx, a.ravel().tolist(), {}):
            return True  # (float(a) of a 0-d text array, a.astype(float))
        if (ta is list or ta is tuple) and a and reads_text(ctx, a, {}):
            return True  # (np.loadtxt(lines))
    return False
