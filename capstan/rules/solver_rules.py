"""Rules for SciPy's solvers: root finders, quadrature and ODE integrators.

These functions call back into user code from C or Fortran (``brentq``, ``quad``,
``odeint``) or iterate to a tolerance (``solve_ivp``), and the callback may *close
over* a differentiated value: ``brentq(lambda t: t * t - p, 0, 3)`` is called with no
differentiated argument at all.  So each entry here is a *solver rule*
(``defsolver``): it takes over every call of the function inside a differentiation,
finds the differentiated values the call depends on -- in its arguments, in the
callback's ``args=``, in the callback's closure, defaults, bound object or
``functools.partial`` -- and then

1. solves plainly: the same SciPy call on plain values (the callback's closure
   stripped of its derivatives), so C code never sees a differentiated value and the
   result's value is exactly what SciPy returns;
2. adds a zero-valued *correction* computed inside the differentiation, whose
   derivative is the solution's:

   * **roots** (``brentq``, ``bisect``, ``brenth``, ``ridder``, ``toms748``,
     ``newton``, ``root_scalar``, ``fsolve``, ``root``): Newton steps from the plain
     root ``x*``, ``x - F(x, p) / F_x(x, p)``.  One step's derivative at ``x*`` is the
     implicit function theorem's ``-F_p / F_x``; each step doubles the order of
     derivatives it gets right, so nested differentiation (Hessians) takes
     ``ceil(log2(levels + 1))`` steps.  Nothing is differentiated through the
     solver's iterations.
   * **quadrature** (``quad``, ``quad_vec``): the integral as a Gauss-Legendre sum on
     the subintervals SciPy's adaptive rule ended with, with the nodes mapped from
     the (possibly differentiated) limits: differentiating it differentiates under the
     integral sign, and the limits' derivative (``f(b) db - f(a) da``) comes with it.
     Infinite ranges use SciPy's own variable change ``x = a + (1 - t) / t``.
   * **ODEs** (``solve_ivp``, ``odeint``): the linearised equation ``u' = J u + f_p dp``
     (``u`` the solution's derivative, ``J = df/dy`` along the plain solution) solved
     on the plain solution's own steps by Gauss collocation (order 6), starting from
     the initial value's derivative.  The forcing ``f_p dp`` is the callback itself
     evaluated inside the differentiation at the collocation nodes, so forward mode
     gets forward sensitivities and reverse mode an adjoint (the transposed
     recurrence), for any number of parameters.  Nested (second-order) differentiation
     takes two Newton steps on the collocation equations instead (see
     ``_two_newton_steps``).

Refused with a clear :class:`capstan.NoRuleError`: weighted and ``points=``
quadrature, differentiated time spans and events of ODEs, third-order derivatives of
ODE solutions, and solver failures.  See docs/capstan-scipy.md ("Solvers").
"""
import functools
import inspect
import math
import operator
import types
import warnings

import numpy as np

from overdub import Context, Tagged, overdub
from overdub.tagging import metadata_of, tag_of, value_of

from ..losses import NoRuleError as _NoRuleError
from .registry import defderiv, defsolver

try:
    from scipy import integrate as _integrate
    from scipy import optimize as _optimize
except ImportError:  # pragma: no cover - scipy is optional
    _integrate = _optimize = None
try:
    from scipy.integrate._ivp.rk import RkDenseOutput as _RkDense
except ImportError:  # pragma: no cover - scipy is optional, its private modules may move
    _RkDense = None


def _no_rule(message):
    return _NoRuleError("capstan: " + message)


# ----------------------------------------------------------------------------- what a call depends on
def _collect(x, found, depth=0, seen=None):
    """Append to ``found`` the differentiated values (tagged numbers and arrays) reachable
    from ``x``: containers, a function's closure, defaults and bound object,
    ``functools.partial`` arguments, an object's attributes (a few levels deep)."""
    tx = type(x)
    if tx is Tagged:
        found.append(x)
        return
    if tx is np.ndarray:
        if x.dtype.kind in "fc":
            found.append(x)  # (a plain array may hold differentiated values: shadowed)
        return
    if x is None or depth > 8 or isinstance(x, (int, float, complex, str, bytes, type, types.ModuleType,
                                                  np.generic, Context)):
        return
    seen = set() if seen is None else seen
    if id(x) in seen:
        return
    seen.add(id(x))
    if tx is list or tx is tuple or isinstance(x, tuple):
        for e in x:
            _collect(e, found, depth + 1, seen)
    elif isinstance(x, dict):
        for e in x.values():
            _collect(e, found, depth + 1, seen)
    elif tx is types.FunctionType:
        for cell in x.__closure__ or ():
            try:
                _collect(cell.cell_contents, found, depth + 1, seen)
            except ValueError:  # (an empty cell)
                pass
        _collect(x.__defaults__, found, depth + 1, seen)
        _collect(x.__kwdefaults__, found, depth + 1, seen)
    elif tx is types.MethodType:
        _collect(x.__self__, found, depth + 1, seen)
        _collect(x.__func__, found, depth + 1, seen)
    elif tx is functools.partial:
        _collect((x.func, x.args, x.keywords), found, depth + 1, seen)
    else:
        try:
            attributes = object.__getattribute__(x, "__dict__")
        except Exception:  # noqa: BLE001  (no __dict__: a C object, slots)
            attributes = None
        if type(attributes) is dict:
            _collect(attributes, found, depth + 1, seen)
        call = getattr(type(x), "__call__", None)
        if type(call) is types.FunctionType:
            _collect(call, found, depth + 1, seen)


def _owner(*values):
    """The innermost active differentiation that the values reachable from ``values``
    belong to (``None``: the call depends on no differentiated value)."""
    from ..nesting import enclosing
    found = []
    _collect(values, found)
    return enclosing(*found) if found else None


def _tagged(x):
    found = []
    _collect(x, found)
    return any(type(v) is Tagged for v in found)


def _levels(*values):
    """How many differentiations the tagged values reachable from ``values`` belong to."""
    found, keys = [], set()
    _collect(values, found)
    stack = [v for v in found if type(v) is Tagged]
    while stack:
        v = stack.pop()
        keys.add(id(tag_of(v)))
        for part in (value_of(v), metadata_of(v)):
            if type(part) is Tagged:
                stack.append(part)
    return len(keys)


def _plain(x, depth=0):
    """``x`` with every tag removed (containers rebuilt, one level of objects deep)."""
    tx = type(x)
    if tx is Tagged:
        while type(x) is Tagged:
            x = value_of(x)
        return x
    if depth > 6:
        return x
    if tx is list or tx is tuple:
        return tx(_plain(e, depth + 1) for e in x)
    if tx is dict:
        return {k: _plain(v, depth + 1) for k, v in x.items()}
    return x


def _stripped(f, depth=0):
    """A copy of function ``f`` whose closure cells and defaults hold plain values in
    place of differentiated ones (cells without them are shared, so ``nonlocal``
    counters keep working); ``None`` when the values are out of reach."""
    if not _tagged(f):
        return f
    if depth > 3:
        return None
    if type(f) is functools.partial:
        inner = _stripped(f.func, depth + 1)
        if inner is None:
            return None
        out = functools.partial(inner, *_plain(f.args), **_plain(f.keywords))
        return None if _tagged(out) else out
    if type(f) is not types.FunctionType:
        return None
    cells = []
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            cells.append(cell)
            continue
        if not _tagged(value):
            cells.append(cell)
            continue
        if callable(value) and type(value) is not Tagged:
            new = _stripped(value, depth + 1)
        else:
            new = _plain(value)
        if new is None or _tagged(new):
            return None
        cells.append(types.CellType(new))
    defaults = _plain(f.__defaults__)
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, defaults, tuple(cells) or None)
    g.__kwdefaults__ = _plain(f.__kwdefaults__)
    g.__qualname__ = f.__qualname__
    return None if _tagged(g) else g


def _plain_arguments(ctx, arguments):
    """``arguments`` (a name -> value mapping) with plain values: callbacks as plain
    copies (:func:`_plain_callable`), everything else without derivatives."""
    return {k: (_plain_callable(ctx, v) if callable(v) and type(v) is not Tagged else _plain(v))
            for k, v in arguments.items()}


def _plain_callable(ctx, f):
    """``f`` for the plain solve: ``f`` itself, a copy with its closure stripped, or
    (when the differentiated values are out of reach) ``f`` run inside the
    differentiation with its results' tags removed."""
    if f is None or not callable(f):
        return f
    g = _stripped(f)
    if g is not None:
        return g
    return lambda *a, **k: _plain(overdub(ctx, f, *a, **k))


def _bind(f, args, kwargs):
    """``(the call's arguments by name with defaults filled in, the names given)``; a
    wrong call raises SciPy's own error."""
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except TypeError:
        f(*_plain(args), **_plain(kwargs))  # (SciPy's own error for a wrong call)
        raise
    given = set(bound.arguments)
    bound.apply_defaults()
    return bound, given


def _call(f, given, plain, **forced):
    """The plain solve: ``f`` with the arguments the caller gave (their plain versions in
    ``plain``) and ``forced`` ones -- defaults are left to ``f`` (some are sentinels)."""
    call = {k: v for k, v in plain.items() if k in given}
    call.update(forced)
    return f(**call)


_MINE = object()


def _route(ctx, f, args, kwargs, depends):
    """``_MINE`` when this context is to differentiate the call; else the call's result
    (plain, when it depends on no differentiated value; or computed by the enclosing
    differentiation that owns the values)."""
    owner = _owner(*depends)
    if owner is ctx:
        return _MINE
    if owner is None:
        return f(*_plain(args), **_plain(kwargs))
    return overdub(owner, f, *args, **kwargs)


_SINGULAR = ("the derivative of the solution is undefined here: the residual's Jacobian with "
             "respect to the unknowns is singular at the solution (a double root, or a flat function)")
_NOT_FINITE = "the derivative is not finite: the callback is not finite where the rule evaluates it"


def _correction(ctx, helper, *args, why=_SINGULAR):
    """``helper(*args)`` run inside the differentiation: a zero-valued quantity whose
    derivative is the solution's; refused (saying ``why``) if its value is not finite."""
    out = overdub(ctx, helper, *args)
    if not np.all(np.isfinite(_plain(out))):
        raise _no_rule(why)
    return out


def _add(ctx, a, b):
    """``a + b`` inside the differentiation."""
    return overdub(ctx, operator.add, a, b)


def _newton_steps():
    """Newton steps that get every active order of derivatives right."""
    from ..nesting import nestlevel
    levels = nestlevel()
    return 1 if levels <= 1 else math.ceil(math.log2(levels + 1))


# ----------------------------------------------------------------------------- roots
def _scalar_newton(F, x, fargs, steps, elementwise, slope):
    """(Run inside the differentiation.)  Newton steps on ``F(x, *fargs) = 0`` from the
    plain root ``x``, the first with ``slope``, the plain derivative at the plain root
    (first-order derivatives need no more), the next ones with the derivative
    differentiated in turn; returns ``x_new - stop_gradient(x_new)`` (value zero)."""
    from ..forward import D, jvp
    from ..markers import stop_gradient
    x = x - F(x, *fargs) / slope
    for _ in range(steps - 1):
        r = F(x, *fargs)
        if elementwise:
            slope = jvp(lambda z: F(z, *fargs), (x,), (np.ones(np.shape(x)),))[1]
        else:
            slope = D(lambda z: F(z, *fargs), x)
        x = x - r / slope
    return x - stop_gradient(x)


def _plain_slope(F, x, fargs):
    """The plain derivative of scalar or elementwise ``F`` at ``x``."""
    from ..forward import D, jvp
    if np.ndim(x) > 0:
        return np.asarray(jvp(lambda z: F(z, *fargs), (np.asarray(x, dtype=float),),
                              (np.ones(np.shape(x)),))[1], dtype=float)
    return float(D(lambda z: F(z, *fargs), float(x)))


def _vector_newton(F, x, fargs, steps, J):
    """(Run inside the differentiation.)  Newton steps on a system ``F(x) = 0``; the
    first with ``J``, the plain Jacobian at the plain root (first-order derivatives need
    no more), the next ones with the Jacobian differentiated in turn."""
    from ..derivatives import jacobian
    from ..markers import stop_gradient
    shape = np.shape(x)

    def residual(z):
        return np.ravel(np.asarray(F(np.reshape(z, shape), *fargs)))

    x = np.ravel(x)
    x = x - np.linalg.solve(J, residual(x))
    for _ in range(steps - 1):
        x = x - np.linalg.solve(jacobian(residual, x), residual(x))
    x = np.reshape(x, shape)
    return x - stop_gradient(x)


#: root finder -> (callback's parameter name, starting-point parameters, how results hold the root)
_ROOTS = {}


def _root_rule(ctx, f, args, kwargs):
    func_name, starts, kind = _ROOTS[f]
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a.get("args", ())
    depends = [v for k, v in a.items() if k not in starts]
    routed = _route(ctx, f, args, kwargs, depends)
    if routed is not _MINE:
        return routed
    func = a[func_name]
    if kind == "root" and a.get("jac") is True:  # fun returns (F, J)
        F = _first(func)
    else:
        F = func
    if kind == "root_scalar" and a.get("fprime") is True:
        F = _first(func)
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    if not isinstance(fargs, tuple):
        fargs = (fargs,)
    steps = _newton_steps()
    if kind in ("scalar", "newton", "root_scalar"):
        if kind == "root_scalar":
            if not out.converged:
                raise _no_rule("scipy.optimize.root_scalar did not converge (%s); the root has no "
                               "derivative" % out.flag)
            root = out.root
        else:
            root = out[0] if type(out) is tuple else out
        if np.iscomplexobj(root):
            raise _no_rule("%s of a complex root has no derivative rule" % _qualified(f))
        elementwise = np.ndim(root) > 0
        F_plain = _first(plain[func_name]) if F is not func else plain[func_name]
        slope = _plain_slope(F_plain, root, _plain(fargs))
        x = _add(ctx, root, _correction(ctx, _scalar_newton, F, root, fargs, steps, elementwise, slope))
        if kind == "root_scalar":
            out.root = x
            ctx.remember(out, "root")
            return out
        return (x,) + out[1:] if type(out) is tuple else x
    if kind == "fsolve":
        root = out[0] if type(out) is tuple else out
        J = _check_root("scipy.optimize.fsolve", plain[func_name], root, plain["args"],
                        out[3] if type(out) is tuple else "")
        x = _add(ctx, root, _correction(ctx, _vector_newton, F, root, fargs, steps, J))
        return (x,) + out[1:] if type(out) is tuple else x
    # kind == "root": an OptimizeResult
    J = _check_root("scipy.optimize.root", _first(plain["fun"]) if a.get("jac") is True else plain["fun"],
                    out.x, plain["args"], out.message)
    out.x = _add(ctx, out.x, _correction(ctx, _vector_newton, F, out.x, fargs, steps, J))
    ctx.remember(out, "x")
    return out


def _check_root(name, F, x, fargs, message, limit=1e-6, with_step=False):
    """Refuse a system's "root" that is not one: the Newton step from it must be small
    (a solver may report failure at a tolerance tighter than it can reach while its
    answer is a root to rounding error).  The derivative is as accurate as the root:
    its error is of the order of that step."""
    from ..derivatives import jacobian
    fargs = fargs if isinstance(fargs, tuple) else (fargs,)
    shape = np.shape(x)

    def residual(z):
        return np.ravel(np.asarray(F(np.reshape(z, shape), *fargs), dtype=float))

    flat = np.ravel(np.asarray(x, dtype=float))
    J = np.reshape(np.asarray(jacobian(residual, flat), dtype=float), (flat.size, flat.size))
    with np.errstate(all="ignore"):
        try:
            step = np.linalg.solve(J, residual(flat))
        except np.linalg.LinAlgError:
            step = np.array([np.inf])
    size = np.linalg.norm(step)
    if not np.all(np.isfinite(step)) or size > limit * (1 + np.linalg.norm(flat)):
        raise _no_rule("%s: its result is not a solution to the accuracy a derivative needs (%s; a "
                       "Newton step from it has length %.3g); tighten the solver's tolerance"
                       % (name, message, size))
    return (J, size) if with_step else J


def _first(func):
    return lambda *a: func(*a)[0]


# ----------------------------------------------------------------------------- minimisers
def _gradient_of(F, scalar):
    """The residual of the optimality condition: ``F``'s derivative in its first argument."""
    from ..forward import D
    from ..reverse import gradient

    if scalar:
        return lambda x, *fargs: D(lambda z: F(z, *fargs), x)
    # (reverse mode: a second-order Newton step differentiates this again by a forward
    # Jacobian, and an enclosing Hessian twice more; forward Jacobians nested three deep
    # are refused by the engine today)
    return lambda x, *fargs: gradient(lambda z: F(z, *fargs), x)[0]


def _minimiser(ctx, name, F, F_plain, x_plain, fargs, message, bounds=None):
    """The minimiser ``x_plain`` of ``F(., *fargs)`` made differentiable (Newton steps on
    the optimality condition ``grad F = 0``, as for roots: one for first derivatives, two
    for second), and ``F`` there: ``(x, F(x))``.  With
    ``bounds`` ``(lower, upper)``: refused unless the minimiser is clear of them (on a
    bound the optimality condition does not hold)."""
    scalar = np.ndim(x_plain) == 0
    steps = _newton_steps()
    clearance = np.inf
    x_flat = np.ravel(np.asarray(x_plain, dtype=float))
    scale = 1 + np.max(np.abs(x_flat))
    if bounds is not None:
        lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), x_flat.shape) for b in bounds)
        clearance = np.min(np.minimum(x_flat - lower, upper - x_flat))
    try:
        J, step = _check_root(name, _gradient_of(F_plain, scalar), x_plain, _plain(fargs), message,
                              limit=1e-3, with_step=True)
    except _NoRuleError:
        if clearance <= 1e-4 * scale:  # (not a stationary point because it is on a bound)
            raise _no_rule(_BOUNDED % name) from None
        raise
    if clearance <= 10 * step + 1e-8 * scale:
        raise _no_rule(_BOUNDED % name)
    residual = _gradient_of(F, scalar)
    if scalar:
        x = _add(ctx, x_plain, _correction(ctx, _scalar_newton, residual, x_plain, fargs, steps, False,
                                           float(np.ravel(J)[0])))
    else:
        x = _add(ctx, x_plain, _correction(ctx, _vector_newton, residual, x_plain, fargs, steps, J))
    return x, overdub(ctx, F, x, *fargs)  # (F's derivative there: the envelope theorem's F_p)


_BOUNDED = ("%s: the minimiser is on (or next to) a bound, where the optimality condition the rule "
            "differentiates does not hold; its derivative there has no rule")
_CONSTRAINED = ("%s with constraints has no derivative rule (the optimality condition of a constrained "
                "minimiser has multipliers); minimise without them")


def _bounds_of(bounds, scalar_pair=False):
    """``(lower, upper)`` from ``minimize``'s bounds (a ``Bounds`` or ``(min, max)`` pairs,
    ``None`` for no bound) or, with ``scalar_pair``, from a ``(lower, upper)`` pair of
    numbers or arrays (``minimize_scalar``, ``least_squares``, ``curve_fit``)."""
    if bounds is None:
        return None
    bounds = _plain(bounds)
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        return bounds.lb, bounds.ub
    if scalar_pair:
        return tuple(np.asarray(b, dtype=float) for b in bounds)
    pairs = [(-np.inf if lo is None else lo, np.inf if hi is None else hi) for lo, hi in bounds]
    return tuple(np.asarray(side, dtype=float) for side in zip(*pairs))


def _minimize_rule(ctx, f, args, kwargs):
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    scalar = f is _optimize.minimize_scalar
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    starts = {"x0", "bracket", "callback", "options", "tol", "method"}  # (bounds: refused where active)
    routed = _route(ctx, f, args, kwargs, [v for k, v in a.items() if k not in starts])
    if routed is not _MINE:
        return routed
    name = "scipy.optimize." + f.__name__
    if not scalar and a["constraints"] not in ((), [], None):
        raise _no_rule(_CONSTRAINED % name)
    fun = a["fun"]
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    first = not scalar and a["jac"] is True  # (fun returns (F, gradient))
    x, value = _minimiser(ctx, name, _first(fun) if first else fun,
                          _first(plain["fun"]) if first else plain["fun"], out.x, fargs,
                          getattr(out, "message", ""), _bounds_of(a["bounds"], scalar_pair=scalar))
    out.x = x
    ctx.remember(out, "x")
    if "fun" in out:  # (a custom method's result may not have it)
        out.fun = _add(ctx, out.fun, _correction(ctx, _deviation, value, why=_NOT_FINITE))
        ctx.remember(out, "fun")
    return out


def _bracketed_minimum_rule(ctx, f, args, kwargs):
    """``golden`` and ``brent``: the minimiser (and with ``full_output``, the minimum)."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    routed = _route(ctx, f, args, kwargs, [a["func"], fargs])
    if routed is not _MINE:
        return routed
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    x_plain = out[0] if type(out) is tuple else out
    x, value = _minimiser(ctx, "scipy.optimize." + f.__name__, a["func"], plain["func"], x_plain, fargs, "")
    if type(out) is tuple:
        return (x, _add(ctx, out[1], _correction(ctx, _deviation, value, why=_NOT_FINITE))) + out[2:]
    return x


def _legacy_minimiser_rule(ctx, f, args, kwargs):
    """SciPy's older unconstrained minimisers (``fmin``, ``fmin_powell``, ``fmin_bfgs``,
    ``fmin_cg``, ``fmin_ncg``, ``fmin_l_bfgs_b``, ``fmin_tnc``, ``fminbound``): the
    minimiser (the first result) and, where returned second, the minimum, as for
    ``minimize``.  Their iterations run in Python: differentiated through, a simplex's
    comparisons would give the minimiser a derivative of zero."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    key = "func" if "func" in a else "f"
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    starts = {"x0", "callback", "initial_simplex", "direc", "epsilon", "disp", "full_output",
              "retall", "maxiter", "maxfun", "xtol", "ftol", "gtol", "avextol", "norm", "pgtol", "factr",
              "m", "iprint", "maxls", "messages", "scale", "offset", "maxCGit", "eta", "stepmx", "accuracy",
              "fmin", "rescale", "approx_grad"}  # (bounds: refused where active)
    routed = _route(ctx, f, args, kwargs, [v for k, v in a.items() if k not in starts])
    if routed is not _MINE:
        return routed
    name = "scipy.optimize." + f.__name__
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    pair = f in (_optimize.fmin_l_bfgs_b, _optimize.fmin_tnc) and a.get("fprime") is None and not a["approx_grad"]
    fun, fun_plain = (_first(a[key]), _first(plain[key])) if pair else (a[key], plain[key])
    if f is _optimize.fminbound:
        bounds = (float(_plain(a["x1"])), float(_plain(a["x2"])))
    elif a.get("bounds") is not None:
        bounds = _bounds_of(a["bounds"])
    else:
        bounds = None
    several = type(out) is tuple
    x_plain = out[0] if several else out
    x, value = _minimiser(ctx, name, fun, fun_plain, x_plain, fargs, "", bounds)
    if not several:
        return x
    rest = list(out[1:])
    if f is not _optimize.fmin_tnc:  # (the minimum second; fmin_tnc's second is a count)
        rest[0] = _add(ctx, rest[0], _correction(ctx, _deviation, value, why=_NOT_FINITE))
    return (x, *rest)


def _raveled(func):
    return lambda x, *rest: func(np.ravel(x), *rest)


def _global_minimiser_rule(ctx, f, args, kwargs):
    """Global minimisers (``differential_evolution``, ``dual_annealing``, ``shgo``,
    ``direct``, ``basinhopping``, ``brute``): the minimiser they found, differentiated as a
    local one (Newton steps on ``grad F = 0``; refused where it is not a stationary point to
    a derivative's accuracy, or lies on a bound).  Their searches compare values: run
    through, they would give the minimiser a derivative of zero."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    hopping = f is _optimize.basinhopping
    extra = dict(a["minimizer_kwargs"] or {}) if hopping else {}
    fargs = extra.get("args", ()) if hopping else a.get("args", ())
    fargs = fargs if isinstance(fargs, tuple) else (fargs,)
    depends = [a["func"], fargs, extra] + [a[k] for k in ("bounds", "ranges") if k in a]
    routed = _route(ctx, f, args, kwargs, depends)
    if routed is not _MINE:
        return routed
    name = "scipy.optimize." + f.__name__
    plain = _plain_arguments(ctx, a)
    if hopping and a["minimizer_kwargs"] is not None:
        plain["minimizer_kwargs"] = {k: (_plain_callable(ctx, v) if callable(v) else _plain(v))
                                     for k, v in extra.items()}
    out = _call(f, given, plain)
    pair = hopping and extra.get("jac") is True  # (func returns (F, gradient))
    fun, fun_plain = (_first(a["func"]), _first(plain["func"])) if pair else (a["func"], plain["func"])
    if f is _optimize.brute:  # (brute hands its function 1-d points, and returns a number for one)
        fun, fun_plain = _raveled(fun), _raveled(fun_plain)
    bounds = _bounds_of(a["bounds"]) if a.get("bounds") is not None else None
    result = isinstance(out, _optimize.OptimizeResult)
    x_plain = out.x if result else (out[0] if type(out) is tuple else out)
    x, value = _minimiser(ctx, name, fun, fun_plain, x_plain, fargs,
                          getattr(out, "message", "") if result else "", bounds)
    if not result:
        return (x, _add(ctx, out[1], _correction(ctx, _deviation, value, why=_NOT_FINITE))) + out[2:] \
            if type(out) is tuple else x
    out.x = x
    out.fun = _add(ctx, out.fun, _correction(ctx, _deviation, value, why=_NOT_FINITE))
    ctx.remember(out, "x")
    ctx.remember(out, "fun")
    return out


def _least_squares_rule(ctx, f, args, kwargs):
    """``least_squares`` with the plain loss: the minimiser of half the sum of squared
    residuals (clear of its bounds); ``.x``, ``.cost`` and ``.fun`` (the residuals there)
    differentiable."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    extra = a["kwargs"] or {}
    starts = {"x0", "callback", "x_scale", "diff_step", "tr_options", "jac_sparsity"}
    routed = _route(ctx, f, args, kwargs, [v for k, v in a.items() if k not in starts])
    if routed is not _MINE:
        return routed
    name = "scipy.optimize.least_squares"
    if a["loss"] != "linear":
        raise _no_rule("%s with loss=%r has no derivative rule; use loss='linear'" % (name, a["loss"]))
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    fun, fun_plain, plain_extra = a["fun"], plain["fun"], _plain(extra)

    def cost(x, *rest):
        r = np.asarray(fun(x, *rest, **extra))
        return 0.5 * np.sum(r * r)

    def cost_plain(x, *rest):
        r = np.asarray(fun_plain(x, *rest, **plain_extra))
        return 0.5 * np.sum(r * r)

    x, value = _minimiser(ctx, name, cost, cost_plain, out.x, fargs, out.message,
                          _bounds_of(a["bounds"], scalar_pair=True))
    out.x = x
    out.cost = _add(ctx, out.cost, _correction(ctx, _deviation, value, why=_NOT_FINITE))
    residuals = overdub(ctx, _residuals, fun, x, fargs, extra)
    out.fun = _add(ctx, out.fun, _correction(ctx, _deviation, residuals, why=_NOT_FINITE))
    for field in ("x", "cost", "fun"):
        ctx.remember(out, field)
    return out


def _curve_fit_rule(ctx, f, args, kwargs):
    """``curve_fit`` (``popt`` clear of its bounds): ``popt`` minimises half the weighted sum of squares,
    differentiable in ``ydata``, ``xdata``, ``sigma`` and the model's closure; ``pcov`` is
    ``inv(J^T J)`` (scaled by the residual variance unless ``absolute_sigma``) at the
    differentiable ``popt``, with SciPy's value."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    options = a.get("kwargs", {})
    starts = {"p0", "method", "check_finite", "nan_policy", "full_output", "kwargs", "jac"}
    routed = _route(ctx, f, args, kwargs, [v for k, v in a.items() if k not in starts])
    if routed is not _MINE:
        return routed
    name = "scipy.optimize.curve_fit"
    if a["sigma"] is not None and np.ndim(_plain(a["sigma"])) > 1:
        raise _no_rule("%s with a covariance matrix as sigma has no derivative rule; pass standard "
                       "deviations (a 1-d sigma)" % name)
    plain = _plain_arguments(ctx, {k: v for k, v in a.items() if k != "kwargs"})
    out = _call(f, given, plain, **{k: _plain(v) for k, v in options.items()})
    model, xdata, ydata, sigma = a["f"], a["xdata"], a["ydata"], a["sigma"]
    weights = 1.0 if sigma is None else sigma
    plain_model, plain_x, plain_y = plain["f"], plain["xdata"], plain["ydata"]
    plain_weights = 1.0 if sigma is None else plain["sigma"]

    def cost(q):
        r = (np.asarray(model(xdata, *q)) - ydata) / weights
        return 0.5 * np.sum(r * r)

    def cost_plain(q):
        r = (np.asarray(plain_model(plain_x, *q)) - plain_y) / plain_weights
        return 0.5 * np.sum(r * r)

    popt_plain, pcov_plain = out[0], out[1]
    popt, _ = _minimiser(ctx, name, cost, cost_plain, popt_plain, (), "",
                         _bounds_of(a["bounds"], scalar_pair=True))
    dof = np.size(_plain(ydata)) - np.size(popt_plain)
    if dof > 0 and np.all(np.isfinite(pcov_plain)):
        cov = overdub(ctx, _covariance, model, xdata, ydata, weights, popt, dof, a["absolute_sigma"])
        pcov = _add(ctx, pcov_plain, _correction(ctx, _deviation, cov, why=_NOT_FINITE))
    else:
        pcov = pcov_plain  # (no residual degrees of freedom: SciPy's infinite covariance)
    return (popt, pcov) + tuple(out[2:])


def _covariance(model, xdata, ydata, weights, popt, dof, absolute):
    """(Run inside the differentiation.)  ``inv(J^T J)``, times the residual variance
    unless ``absolute``, for the weighted residuals at ``popt``."""
    from ..derivatives import jacobian
    J = jacobian(lambda q: np.ravel(np.asarray(model(xdata, *q)) / weights), popt)
    cov = np.linalg.inv(J.T @ J)
    if absolute:
        return cov
    r = np.ravel((np.asarray(model(xdata, *popt)) - ydata) / weights)
    return cov * (np.sum(r * r) / dof)


def _linear_least_squares_rule(ctx, f, args, kwargs):
    """``lsq_linear`` and ``nnls``: the minimiser of ``|A x - b|^2 / 2`` clear of its bounds
    (``nnls``: of zero), differentiable in ``A`` and ``b``; ``lsq_linear``'s ``.cost`` and
    ``.fun``, ``nnls``'s residual norm, at the differentiable minimiser."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    routed = _route(ctx, f, args, kwargs, [a["A"], a["b"], a.get("bounds")])
    if routed is not _MINE:
        return routed
    A, b = a["A"], a["b"]
    if _tagged(A) and not isinstance(_plain(A), np.ndarray) or np.ndim(_plain(b)) != 1:
        raise _no_rule("scipy.optimize.%s: a differentiated A must be a dense array, and b a vector"
                       % f.__name__)
    plain = {k: _plain(v) for k, v in a.items()}
    out = _call(f, given, plain)
    nnls = f is _optimize.nnls
    x_plain = out[0] if nnls else out.x
    bounds = (0.0, np.inf) if nnls else _bounds_of(a["bounds"], scalar_pair=True)
    cost = lambda x: 0.5 * np.sum((A @ x - b) ** 2)  # noqa: E731
    A_plain, b_plain = plain["A"], plain["b"]
    cost_plain = lambda x: 0.5 * np.sum((A_plain @ x - b_plain) ** 2)  # noqa: E731
    x, value = _minimiser(ctx, "scipy.optimize." + f.__name__, cost, cost_plain, x_plain, (), "", bounds)
    residuals = overdub(ctx, _residuals, lambda z: A @ z - b, x, (), {})
    if nnls:
        norm = overdub(ctx, np.linalg.norm, residuals)
        return (x, _add(ctx, out[1], _correction(ctx, _deviation, norm, why=_NOT_FINITE)))
    out.x = x
    out.cost = _add(ctx, out.cost, _correction(ctx, _deviation, value, why=_NOT_FINITE))
    out.fun = _add(ctx, out.fun, _correction(ctx, _deviation, residuals, why=_NOT_FINITE))
    for field in ("x", "cost", "fun"):
        ctx.remember(out, field)
    return out


def _residuals(fun, x, fargs, extra):
    """(Run inside the differentiation.)  The residual vector at ``x``."""
    return np.ravel(np.asarray(fun(x, *fargs, **extra)))


def _fixed_point_rule(ctx, f, args, kwargs):
    """``fixed_point``: the root of ``x - func(x, *args)`` (elementwise, as SciPy's)."""
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    routed = _route(ctx, f, args, kwargs, [a["func"], fargs])
    if routed is not _MINE:
        return routed
    plain = _plain_arguments(ctx, a)
    out = _call(f, given, plain)
    func, func_plain = a["func"], plain["func"]
    F = lambda x, *rest: x - func(x, *rest)  # noqa: E731
    F_plain = lambda x, *rest: x - func_plain(x, *rest)  # noqa: E731
    root = out[()] if type(out) is np.ndarray and out.ndim == 0 else out
    slope = _plain_slope(F_plain, root, _plain(fargs))
    x = _add(ctx, root, _correction(ctx, _scalar_newton, F, root, fargs, _newton_steps(), np.ndim(root) > 0,
                                    slope))
    return overdub(ctx, np.asarray, x) if type(out) is np.ndarray else x


# ----------------------------------------------------------------------------- quadrature
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(20)


def _gauss(intervals):
    """Gauss-Legendre nodes and weights on each ``(lo, hi)`` interval, concatenated."""
    lo, hi = np.asarray(intervals, dtype=float).T
    half = (hi - lo) / 2
    nodes = (lo + half)[:, None] + half[:, None] * _NODES
    return nodes.ravel(), (half[:, None] * _WEIGHTS).ravel()


def _quadrature_sum(F, fargs, a, b, kind, u, w):
    """(Run inside the differentiation.)  The integral as a weighted sum of ``F`` at
    nodes mapped from the limits: ``kind`` "finite" (``x = a + (b - a) u``), "upper"
    (``x = a + u``, to infinity), "lower" (``x = b - u``) or "both" (``x = u``)."""
    total = 0.0
    if kind == "finite":
        h = b - a
        for uk, wk in zip(u, w):
            total = total + wk * F(a + h * uk, *fargs)
        return h * total
    for uk, wk in zip(u, w):
        x = a + uk if kind == "upper" else (b - uk if kind == "lower" else uk)
        total = total + wk * F(x, *fargs)
    return total


def _transformed(intervals, kind):
    """Nodes and weights for the variable change SciPy uses on infinite ranges:
    ``x = (1 - t) / t``, ``dx = dt / t**2`` (``t`` in the intervals given)."""
    t, wt = _gauss(intervals)
    return (1 - np.abs(t)) / t, wt / (t * t)


def _quadrature_nodes(a, b, intervals, both_signs):
    """``(kind, u, w)`` for ``_quadrature_sum`` from the plain limits and the final
    subintervals (in ``x`` for finite ranges, in ``t`` for infinite ones)."""
    fa, fb = math.isfinite(a), math.isfinite(b)
    if fa and fb:
        if a == b or not len(intervals):
            u, w = _gauss([(0.0, 1.0)])
            return "finite", u, w
        x, wx = _gauss(intervals)  # (intervals oriented either way: weights taken positive)
        return "finite", (x - a) / (b - a), np.abs(wx) / abs(b - a)
    u, w = _transformed(intervals, "t")
    if fa:
        return "upper", u, w
    if fb:
        return "lower", u, w
    if both_signs:  # (quad's both-infinite rule integrates f(x) + f(-x) over x > 0)
        return "both", np.concatenate([u, -u]), np.concatenate([w, w])
    return "both", u, w


def _resolved(name, F_plain, fargs, lo, hi, intervals, both_signs, value, abserr, epsabs, epsrel):
    """``(kind, u, w)``: nodes on subintervals that resolve the integrand.  SciPy's final
    subintervals do where a Gauss-Legendre sum on them gives SciPy's value; where it does
    not (QUADPACK extrapolated toward an endpoint singularity, ``1 / sqrt(t)`` at 0, or a
    slowly decaying tail), the worst subinterval is halved until the sum's own error
    estimate and its distance to SciPy's value are within SciPy's tolerance; failing that
    (a divergent integral), refused.  A sum that misses the integrand would differentiate
    to a wrong derivative."""
    kind, u, w = _quadrature_nodes(lo, hi, intervals, both_signs)
    value = np.asarray(value, dtype=float)
    scale = float(np.max(np.abs(value))) if value.size else 0.0
    tol = max(epsabs, epsrel * scale, float(np.max(np.abs(abserr))), 1e-14 * scale)

    def miss(total):
        with np.errstate(invalid="ignore"):
            return float(np.max(np.abs(np.asarray(total) - value))) if value.size else 0.0

    fast = miss(_quadrature_sum(F_plain, fargs, lo, hi, kind, u, w)) <= 100 * tol
    finite = math.isfinite(lo) and math.isfinite(hi)
    ivs = [tuple(iv) for iv in np.asarray(intervals, dtype=float).reshape(-1, 2)]
    if not ivs:
        ivs = [(lo, hi) if finite else (0.0, 1.0)]

    def part(iv):
        k, uu, ww = _quadrature_nodes(lo, hi, np.array([iv]), both_signs)
        return np.asarray(_quadrature_sum(F_plain, fargs, lo, hi, k, uu, ww), dtype=float)

    ends = (lo, hi) if finite else (0.0, 1.0)  # (infinite ranges: t in (0, 1], singular toward 0)

    def halves(iv):
        """Two parts of ``iv``: graded 1:15 toward an end of the range (where singularities
        and tails sit, so a few splits reach far), else halves."""
        a, b = iv
        if a in ends and b not in ends:
            mid = a + (b - a) / 16
        elif b in ends and a not in ends:
            mid = b - (b - a) / 16
        else:
            mid = (a + b) / 2
        return (a, mid), (mid, b)

    def entry(iv, whole=None):
        whole = part(iv) if whole is None else whole
        left, right = halves(iv)
        sl, sr = part(left), part(right)
        return [iv, whole, float(np.max(np.abs(whole - sl - sr))), sl, sr]

    # (the derivative is the sum's, so the sum must resolve the integrand beyond SciPy's
    # tolerance on the value: a sum within 1e-6 of SciPy's moments gave their derivatives to
    # 1e-5, and exponpow's skewness, a difference of them, to 0.5%)
    fine = max(1e-12 * scale, 1e-300)
    table = [entry(iv) for iv in ivs]
    best = [e[0] for e in table] if fast else None
    for _ in range(150):
        total, spread = sum(e[1] for e in table), sum(e[2] for e in table)
        if miss(total) <= tol and spread <= tol:
            best = [e[0] for e in table]
            if spread <= fine:
                break
        if best is not None and len(table) >= 2 * len(ivs) + 24:
            break  # (resolved to SciPy's tolerance; finer would make the derivative slow)
        worst = max(range(len(table)), key=lambda i: table[i][2])
        iv, _, _, sl, sr = table.pop(worst)
        left, right = halves(iv)
        table += [entry(left, sl), entry(right, sr)]
    if best is not None:
        return _quadrature_nodes(lo, hi, np.array(best), both_signs)
    raise _no_rule("scipy.integrate.%s: the subintervals SciPy's adaptive rule ended with do not resolve the "
                   "integrand, and halving them did not either (a Gauss-Legendre sum misses SciPy's value by "
                   "%.3g: the integral may diverge), so its derivative cannot be taken; split the range, or "
                   "integrate a faster decaying integrand" % (name, miss(sum(e[1] for e in table))))


def _limits_order(f, args, kwargs, bound, names):
    """For an infinite range given high to low: ``-f(..., b, a, ...)``'s arguments."""
    a, b = (_plain(bound.arguments[n]) for n in names)
    if (math.isinf(a) or math.isinf(b)) and a > b:
        swapped = dict(bound.arguments)
        swapped[names[0]], swapped[names[1]] = bound.arguments[names[1]], bound.arguments[names[0]]
        return swapped
    return None


def _quad_rule(ctx, f, args, kwargs):
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    routed = _route(ctx, f, args, kwargs, [a["func"], a["args"], a["a"], a["b"], a["wvar"]])  # (wvar: refused)
    if routed is not _MINE:
        return routed
    if a["weight"] is not None or a["points"] is not None or a["complex_func"]:
        raise _no_rule("scipy.integrate.quad with weight=, points= or complex_func=True has no derivative "
                       "rule; integrate without them (split the range yourself at the points)")
    swapped = _limits_order(f, args, kwargs, bound, ("a", "b"))
    if swapped is not None:
        out = _quad_rule(ctx, f, (), swapped)
        return (overdub(ctx, operator.neg, out[0]),) + tuple(out[1:])
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    lo, hi = _plain(a["a"]), _plain(a["b"])
    plain = {k: _plain(v) for k, v in a.items()}
    plain["func"] = _plain_callable(ctx, a["func"])
    out = _call(f, given, plain, full_output=1)
    info = out[2]
    if len(out) > 3 and not a["full_output"]:
        warnings.warn(out[3], _integrate.IntegrationWarning, stacklevel=3)
    last = info["last"] if isinstance(info, dict) and "last" in info else 0
    intervals = (np.stack([info["alist"][:last], info["blist"][:last]], axis=1) if last
                 else np.empty((0, 2)))
    if not last and not (math.isfinite(lo) and math.isfinite(hi)):
        intervals = np.array([[0.0, 1.0]])
    kind, u, w = _resolved("quad", plain["func"], _plain(fargs), lo, hi, intervals, True, out[0], out[1],
                           plain["epsabs"], plain["epsrel"])
    total = overdub(ctx, _quadrature_sum, a["func"], fargs, a["a"], a["b"], kind, u, w)
    value = _add(ctx, out[0], _correction(ctx, _deviation, total, why=_NOT_FINITE))
    return (value,) + tuple(out[1:]) if a["full_output"] else (value, out[1])


def _deviation(x):
    """(Run inside the differentiation.)  ``x - stop_gradient(x)``: zero, with ``x``'s derivative."""
    from ..markers import stop_gradient
    return x - stop_gradient(x)


def _quad_vec_rule(ctx, f, args, kwargs):
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    depends = [a["f"], a["args"], a["a"], a["b"]]
    routed = _route(ctx, f, args, kwargs, depends)
    if routed is not _MINE:
        return routed
    swapped = _limits_order(f, args, kwargs, bound, ("a", "b"))
    if swapped is not None:
        out = _quad_vec_rule(ctx, f, (), swapped)
        return (overdub(ctx, operator.neg, out[0]),) + tuple(out[1:])
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    lo, hi = _plain(a["a"]), _plain(a["b"])
    plain = {k: _plain(v) for k, v in a.items()}
    plain["f"] = _plain_callable(ctx, a["f"])
    out = _call(f, given, plain, full_output=True)
    intervals = np.asarray(out[2].intervals, dtype=float).reshape(-1, 2)
    kind, u, w = _resolved("quad_vec", plain["f"], _plain(fargs), lo, hi, intervals, False, out[0], out[1],
                           plain["epsabs"], plain["epsrel"])
    total = overdub(ctx, _quadrature_sum, a["f"], fargs, a["a"], a["b"], kind, u, w)
    value = _add(ctx, out[0], _correction(ctx, _deviation, total, why=_NOT_FINITE))
    return (value,) + tuple(out[1:]) if a["full_output"] else (value, out[1])


# ----------------------------------------------------------------------------- ODEs
def _collocation(stages=3):
    """Gauss collocation on [0, 1]: nodes ``c``, weights ``b`` and matrix ``A``
    (``A[i, j]`` = integral of the j-th Lagrange basis polynomial from 0 to ``c[i]``)."""
    x, wx = np.polynomial.legendre.leggauss(stages)
    c, b = (x + 1) / 2, wx / 2
    A = np.empty((stages, stages))
    for j in range(stages):
        others = np.delete(c, j)
        basis = np.polynomial.Polynomial.fromroots(others) / np.prod(c[j] - others)
        antiderivative = basis.integ()
        A[:, j] = antiderivative(c) - antiderivative(0.0)
    return c, b, A


_COLLOCATIONS = {3: _collocation(3), 4: _collocation(4)}


def _stages(method):
    """Collocation stages for the sensitivity recurrence: order 6, or 8 beside DOP853's
    long steps (the derivative then keeps the solution's accuracy)."""
    return _COLLOCATIONS[4 if method == "DOP853" else 3]


def _steps_plan(step_times, out_times):
    """The segments of the sensitivity recurrence: the plain solver's steps, split at
    the output times (ordered along the integration); and for each output time the
    number of segments before it."""
    t0, t1 = step_times[0], step_times[-1]
    sign = 1.0 if t1 >= t0 else -1.0
    every = np.concatenate([np.asarray(step_times, float), np.asarray(out_times, float)])
    breaks = np.unique(every * sign) * sign
    counts = [int(np.searchsorted(breaks * sign, t * sign, side="left")) for t in out_times]
    return breaks, counts


def _nodes(breaks, method, sol, n):
    """Collocation nodes of every segment: times ``(segments * k,)`` and plain states
    ``(segments * k, n)`` from the plain solution's dense output."""
    _C = _stages(method)[0]
    h = np.diff(breaks)
    s = (breaks[:-1, None] + h[:, None] * _C).ravel()
    ys = np.asarray(_dense_values(sol, s), dtype=float).reshape(n, -1).T if len(s) else np.empty((0, n))
    return s, ys


def _dense_values(sol, s):
    """``sol(s)`` (shape ``(n, len(s))``) for points ``s`` strictly inside the solver's steps.
    When every step's interpolant is an explicit Runge-Kutta one (RK23, RK45: SciPy's
    ``RkDenseOutput``, ``y_old + h Q [x, x^2, ...]`` with ``x = (t - t_old) / h``), all
    points at once, with the same formula: ``OdeSolution.__call__`` loops in Python over
    the steps, which costs more than the plain solve's own dense output."""
    interpolants = getattr(sol, "interpolants", None)
    ts = np.asarray(getattr(sol, "ts", ()), dtype=float)
    if (_RkDense is None or not interpolants or len(ts) != len(interpolants) + 1
            or any(type(i) is not _RkDense for i in interpolants)):
        return sol(s)
    Q = np.stack([i.Q for i in interpolants])  # (steps, n, order + 1)
    y_old = np.stack([i.y_old for i in interpolants])
    t_old = np.array([i.t_old for i in interpolants], dtype=float)
    h = np.array([i.h for i in interpolants], dtype=float)
    if Q.ndim != 3 or y_old.shape != Q.shape[:2] or Q.dtype.kind != "f" or y_old.dtype.kind != "f":
        return sol(s)
    sign = 1.0 if ts[-1] >= ts[0] else -1.0
    step = np.clip(np.searchsorted(ts * sign, s * sign, side="right") - 1, 0, len(interpolants) - 1)
    x = (s - t_old[step]) / h[step]
    p = np.cumprod(np.tile(x, (Q.shape[2], 1)), axis=0)  # (order + 1, points)
    return (h[step, None] * np.einsum("pno,op->pn", Q[step], p) + y_old[step]).T


def _segments(jacs, breaks, n, method):
    """Plain matrices of Gauss collocation of ``u' = J u + g`` on each segment, from the
    Jacobians ``jacs`` at the nodes: the stage values are ``K = R u + S g`` (``u`` the
    segment's start, ``g`` its forcing at the nodes, stacked), the end ``u + BJ K + B g``;
    ``Minv`` solves the stage equations (for residuals, :func:`_sweep`)."""
    _C, _B, _A = _stages(method)
    k = len(_C)
    h = np.diff(breaks)
    jacs = np.reshape(jacs, (len(h), k, n, n))
    eye = np.eye(n)
    big = np.zeros((len(h), k * n, k * n))
    for i in range(k):
        big[:, i * n:(i + 1) * n, i * n:(i + 1) * n] = jacs[:, i]
    A_big = np.kron(_A, eye)
    M = np.eye(k * n) - h[:, None, None] * (A_big @ big)
    Minv = np.linalg.inv(M) if len(h) else np.zeros((0, k * n, k * n))
    R = Minv @ np.kron(np.ones((k, 1)), eye)
    S = h[:, None, None] * (Minv @ A_big)
    B = h[:, None, None] * np.kron(_B[None, :], eye)
    BJ = B @ big
    return R, S, Minv, B, BJ


def _linearised(jacs, breaks, counts, n, method):
    """The plain part of the sensitivity recurrence, from the Jacobians ``jacs`` at the
    nodes.  On each segment, Gauss collocation of ``u' = J u + g`` gives
    ``u_next = P u + Q g`` (``g``: the forcing at the segment's nodes, stacked); unrolled,
    the derivative at output ``c`` is ``Phi[c] @ u0 + W[c] @ g_all``."""
    R, S, _, B, BJ = _segments(jacs, breaks, n, method)
    k = len(_stages(method)[0])
    h = np.diff(breaks)
    eye = np.eye(n)
    P = eye + BJ @ R  # (segments, n, n)
    Q = BJ @ S + B  # (segments, n, k n)
    Phi = np.empty((len(counts), n, n))
    W = np.zeros((len(counts), n, len(h), k * n))
    for c, count in enumerate(counts):
        acc = eye
        for j in range(count - 1, -1, -1):
            W[c, :, j] = acc @ Q[j]
            acc = acc @ P[j]
        Phi[c] = acc
    return Phi, W.reshape(len(counts), n, -1)


def _sweep(segments, u0, g=None, rs=None, re=None):
    """(Run inside the differentiation.)  The collocation recurrence segment by segment:
    from the start deviation ``u0``, with forcing ``g`` at the nodes (``(segments, k n)``),
    or stage and end residuals ``rs``, ``re`` to cancel (a Newton step); returns the
    deviations at the segments' starts (and the last end) and at the nodes."""
    R, S, Minv, B, BJ = segments
    u, starts, nodes = u0, [u0], []
    for j in range(len(R)):
        K = R[j] @ u
        if g is not None:
            K = K + S[j] @ g[j]
        if rs is not None:
            K = K - Minv[j] @ rs[j]
        u = u + BJ[j] @ K
        if g is not None:
            u = u + B[j] @ g[j]
        if re is not None:
            u = u - re[j]
        starts.append(u)
        nodes.append(K)
    return starts, nodes


def _at_nodes(G, fargs, s, Y, n, batched):
    """``G`` at every node (``s``, states ``Y`` of shape ``(nodes, n)``): ``(nodes, n)``."""
    if batched:
        return np.transpose(np.asarray(G(s, np.transpose(Y), *fargs)))
    return np.stack([np.reshape(np.asarray(G(si, Y[i], *fargs)), (n,)) for i, si in enumerate(s)])


def _two_newton_steps(G, fargs, y0, segments, breaks, s, ys, starts_plain, counts, n, method, batched):
    """(Run inside the differentiation.)  Second-order derivatives of an ODE solution: the
    Gauss collocation equations on the plain solution's steps are a system ``F(Y, p) = 0``
    for the states at the nodes and steps; two Newton steps from the plain solution with
    its plain Jacobian (each residual minus its own value, so the value stays SciPy's)
    give derivatives right to second order -- the first step's residual has no first
    derivative left, so the second step needs no differentiated Jacobian."""
    from ..markers import stop_gradient
    _C, _B, _A = _stages(method)
    k = len(_C)
    h = np.diff(breaks)
    segs = len(h)
    y0 = np.ravel(np.asarray(y0, dtype=float))
    u0 = y0 - stop_gradient(y0)
    g = None
    if segs:
        g = _at_nodes(G, fargs, s, ys, n, batched)
        g = np.reshape(g - stop_gradient(g), (segs, k * n))
    starts1, nodes1 = _sweep(segments, u0, g=g)
    starts = starts_plain + np.stack(starts1)  # (segs + 1, n): the first step's states
    r0 = starts[0] - y0
    delta2 = [-(r0 - stop_gradient(r0))]
    if segs:
        Y = ys + np.reshape(np.stack(nodes1), (segs * k, n))
        F = np.reshape(_at_nodes(G, fargs, s, Y, n, batched), (segs, k, n))
        rs = np.reshape(Y, (segs, k, n)) - starts[:-1, None, :] - h[:, None, None] * np.matmul(_A, F)
        re = starts[1:] - starts[:-1] - h[:, None] * np.matmul(_B, F)
        rs, re = rs - stop_gradient(rs), re - stop_gradient(re)
        delta2, _ = _sweep(segments, delta2[0], rs=np.reshape(rs, (segs, k * n)), re=re)
    return np.stack([starts1[c] + delta2[c] for c in counts])


def _batches(G, s, ys, fargs, n):
    """Whether ``G(s, Y)`` evaluated once on all nodes (``s`` an array, ``Y`` of shape
    ``(n, nodes)``) gives each node's own ``G(s_k, y_k)``, checked on a few nodes: then
    the forcing and the Jacobians take one call instead of one per node."""
    if len(s) < 4:
        return False
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            together = np.asarray(G(s, ys.T, *fargs), dtype=float)
            if together.shape != (n, len(s)):
                return False
            picks = np.unique(np.linspace(0, len(s) - 1, 6).astype(int))
            alone = np.stack([np.reshape(np.asarray(G(s[k], ys[k], *fargs), dtype=float), (n,))
                              for k in picks], axis=1)
    except Exception:  # noqa: BLE001  (a callback written for one state at a time)
        return False
    return bool(np.allclose(together[:, picks], alone, rtol=1e-12, atol=1e-300))


def _forcing(G, fargs, s, ys, n, batched):
    """(Run inside the differentiation.)  ``G(s, y(s)) - stop_gradient(...)`` at every
    node, stacked node by node: zero, with the derivative of ``G`` in its differentiated
    parameters."""
    from ..markers import stop_gradient
    if batched:
        g = np.ravel(np.transpose(np.asarray(G(s, np.transpose(ys), *fargs))))
    else:
        # (asarray first: the callback may return a list)
        parts = [np.reshape(np.asarray(G(si, yi, *fargs)), (n,)) for si, yi in zip(s, ys)]
        g = np.concatenate(parts)
    return g - stop_gradient(g)


def _node_jacobians(G_plain, user_jac, s, ys, plain_args, n, batched):
    """Plain Jacobians ``dG/dy`` at the nodes, ``(nodes, n, n)``: the user's, or by forward
    mode (``n`` runs on all nodes at once when ``G`` batches, else one per node)."""
    from ..derivatives import jacobian
    from ..forward import jvp
    if user_jac is not None:
        return np.stack([np.reshape(np.asarray(user_jac(si, yi), dtype=float), (n, n))
                         for si, yi in zip(s, ys)])
    if batched:
        # one run on every node n times over, the i-th copy along the i-th unit vector: column
        # i of every node's Jacobian -- if the copies give the nodes' values again (a callback
        # that batches over any number of nodes), else one run per column
        m = len(s)
        Y = np.tile(ys.T, (1, n))
        value, tangent = jvp(lambda Y: np.asarray(G_plain(np.tile(s, n), Y, *plain_args)), (Y,),
                             (np.repeat(np.eye(n), m, axis=1),))
        value, tangent = np.asarray(_plain(value)), np.asarray(_plain(tangent), dtype=float)
        if (value.shape == (n, n * m) and tangent.shape == (n, n * m) and value.dtype.kind == "f"
                and np.array_equal(value, np.tile(np.asarray(G_plain(s, ys.T, *plain_args)), (1, n)),
                                   equal_nan=True)):
            return np.transpose(tangent.reshape(n, n, m), (2, 0, 1))
        columns = [np.asarray(_plain(jvp(lambda Y: np.asarray(G_plain(s, Y, *plain_args)), (ys.T,),
                                         (np.outer(np.eye(n)[i], np.ones(m)),))[1]), dtype=float)
                   for i in range(n)]  # column i of every node's Jacobian: (n, nodes)
        return np.transpose(np.stack(columns), (2, 1, 0))
    return np.stack([np.reshape(np.asarray(_plain(jacobian(
        lambda z: np.ravel(np.asarray(G_plain(si, z, *plain_args))), yi)), dtype=float), (n, n))
        for si, yi in zip(s, ys)])


def _ode_sensitivity(ctx, G, fargs, y0, sol, step_times, out_times, user_jac=None, method=None):
    """The derivative part of an ODE solution at ``out_times`` (zero-valued, shape
    ``(len(out_times), n)``), computed inside the differentiation.  ``user_jac(t, y)``:
    the user's plain Jacobian, if given (then no Jacobian is differentiated)."""
    G_plain = _plain_callable(ctx, G)
    plain_args = _plain(fargs)
    n = int(np.size(_plain(y0)))
    breaks, counts = _steps_plan(step_times, out_times)
    s, ys = _nodes(breaks, method, sol, n)
    batched = _batches(G_plain, s, ys, plain_args, n)
    if _levels(G, fargs, y0) > 1:  # (nested differentiation: second order)
        segments = _segments(_node_jacobians(G_plain, user_jac, s, ys, plain_args, n, batched),
                             breaks, n, method)
        starts_plain = np.asarray(sol(breaks), dtype=float).reshape(n, -1).T
        return _correction(ctx, _two_newton_steps, G, fargs, y0, segments, breaks, s, ys, starts_plain,
                           counts, n, method, batched, why=_NOT_FINITE)
    Phi, W = _linearised(_node_jacobians(G_plain, user_jac, s, ys, plain_args, n, batched),
                         breaks, counts, n, method)
    u0 = overdub(ctx, _deviation, overdub(ctx, np.ravel, overdub(ctx, np.asarray, y0, float)))
    delta = overdub(ctx, np.matmul, Phi, u0)
    if _owner(G, fargs) is ctx and len(s):
        g = _correction(ctx, _forcing, G, fargs, s, ys, n, batched, why=_NOT_FINITE)
        delta = _add(ctx, delta, overdub(ctx, np.matmul, W, g))
    return _correction(ctx, _deviation, delta, why=_NOT_FINITE)


def _user_jacobian(jac, fargs):
    """The user's ODE Jacobian option as ``J(t, y)`` (a callable with the ODE's
    ``args``, or a constant matrix); ``None`` if absent or sparse."""
    if jac is None:
        return None
    if callable(jac):
        return lambda t, y: jac(t, y, *fargs)
    if isinstance(jac, np.ndarray) or isinstance(jac, (list, tuple)):
        return lambda t, y: jac
    return None


def _qualified(f):
    """``scipy.optimize.newton`` for SciPy's solvers (their modules are private)."""
    module = getattr(f, "__module__", None) or ""
    for public in ("scipy.integrate", "scipy.optimize"):
        if module.startswith(public):
            return "%s.%s" % (public, f.__name__)
    return getattr(f, "__qualname__", repr(f))


def _ode_checks(name, ctx, depends, times):
    if _tagged(times):
        raise _no_rule("%s with a differentiated time span or output times has no derivative rule; "
                       "pass the times as plain numbers" % name)
    if any(np.iscomplexobj(_plain(v)) for v in depends if isinstance(_plain(v), (complex, np.ndarray, list))):
        raise _no_rule("%s of a complex ODE has no derivative rule; write it as a real system of twice the "
                       "size" % name)
    if _levels(*depends) > 2:
        raise _no_rule("%s: derivatives of third or higher order (differentiation nested three deep) of "
                       "ODE solutions are not supported" % name)


def _solve_ivp_rule(ctx, f, args, kwargs):
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a["args"] if a["args"] is not None else ()
    if not isinstance(fargs, tuple):
        fargs = (fargs,)
    depends = [a["fun"], fargs, a["y0"], a["events"]]
    routed = _route(ctx, f, args, kwargs, depends + [a["t_span"], a["t_eval"]])
    if routed is not _MINE:
        return routed
    moving = _tagged((a["t_span"], a["t_eval"]))
    if moving:
        _moving_times_checks(ctx, a, depends)
    _ode_checks("scipy.integrate.solve_ivp", ctx, depends, () if moving else (a["t_span"], a["t_eval"]))
    if a["events"] is not None:
        raise _no_rule("scipy.integrate.solve_ivp with events= has no derivative rule (event times move "
                       "with the parameters); solve without events")
    options = a.get("options", {})
    plain = dict(fun=_plain_callable(ctx, a["fun"]), t_span=_plain(a["t_span"]), y0=_plain(a["y0"]),
                 method=a["method"], t_eval=_plain(a["t_eval"]), dense_output=True,
                 vectorized=a["vectorized"], args=_plain(a["args"]),
                 **_plain_arguments(ctx, options))
    out = f(**plain)
    if out.status < 0:
        raise _no_rule("scipy.integrate.solve_ivp failed (%s); its result has no derivative" % out.message)
    user_jac = _user_jacobian(plain.get("jac"), _plain(fargs))
    y0 = a["y0"]
    if moving:  # a moved start: the initial state moved back along the flow, y0 - f(t0, y0) dt0
        y0 = _moved_start(ctx, plain, y0, a["t_span"])
    delta = _ode_sensitivity(ctx, a["fun"], fargs, y0, out.sol, out.sol.ts, out.t, user_jac, a["method"])
    out.y = _add(ctx, out.y, overdub(ctx, np.transpose, delta))
    if moving and _tagged(a["t_eval"]):  # moved output times: dy(t_i) = f(t_i, y(t_i)) dt_i
        out.y, out.t = _moved_outputs(ctx, plain, out, a["t_eval"])
    elif a["t_eval"] is None and len(out.t) > 2:
        out.y, out.t = _solver_times(ctx, plain, out, delta)
    out.sol = (_DenseSolution(ctx, out.sol, a["fun"], fargs, y0, user_jac, a["method"])
               if a["dense_output"] else None)
    ctx.remember(out, "y")
    return out


def _step_times(t, moved):
    """The solver's own step times ``t`` (a solve without ``t_eval``), tied to ``moved`` (a
    zero-valued quantity that moves with the solution): the value ``t``; the derivative is
    undefined (NaN) at the inner times, 0 at the ends of the span."""
    return np.array(t, dtype=float)


def _step_times_partial(ans, t, moved):
    partial = np.full(np.shape(ans), np.nan)
    partial[0] = partial[-1] = 0.0
    return partial


defderiv(_step_times, None, _step_times_partial)


def _solver_times(ctx, plain, out, delta):
    """``(y, t)`` of a solve without ``t_eval``: the output times are the solver's steps,
    which move with the parameters (its step-size control reads the solution's error
    estimates), so neither their derivative (it was 0) nor the states' at them (the
    solution's at fixed times, ``f(t_i, y_i) dt_i`` short) is known.  Both are marked
    undefined (NaN) at the inner times: a result that uses them is refused ("came out NaN");
    the states at the fixed ends of the span keep their derivative.  Pass ``t_eval``."""
    moved = overdub(ctx, np.sum, delta, axis=1)
    t = overdub(ctx, _step_times, out.t, moved)
    return _moved_outputs(ctx, plain, out, t)


def _moving_times_checks(ctx, a, depends):
    """Differentiated times of ``solve_ivp``: the start ``t_span[0]`` and the output times
    ``t_eval``, at first order.  Refused: the end of the span without ``t_eval`` (the
    solver chooses the output times then), second order, events."""
    t_span, t_eval = a["t_span"], a["t_eval"]
    if t_eval is None:
        raise _no_rule("scipy.integrate.solve_ivp with a differentiated time span and no t_eval has no "
                       "derivative rule (the output times are the solver's own steps, which move with the "
                       "span); pass t_eval")
    if _tagged(_index(ctx, t_span, 1)) and not _tagged(_index(ctx, t_span, 0)) and not _tagged(t_eval):
        return  # (only the end moves: with t_eval given no output depends on it)
    if _levels(*depends, t_span, t_eval) > 1:
        raise _no_rule("scipy.integrate.solve_ivp: second-order derivatives in a differentiated t_span[0] "
                       "or t_eval are not supported; pass the times as plain numbers, or differentiate "
                       "once")
    if a["events"] is not None:
        raise _no_rule("scipy.integrate.solve_ivp with events= has no derivative rule (event times move "
                       "with the parameters); solve without events")


def _index(ctx, x, i):
    return overdub(ctx, operator.getitem, x, i)


def _moved_start(ctx, plain, y0, t_span):
    """``y0 - f(t0, y0) (t0 - stop_gradient(t0))``: the state at the plain start time of
    the solution that starts from ``y0`` at the differentiated ``t0`` (first order)."""
    t0 = _index(ctx, t_span, 0)
    if not _tagged(t0):
        return y0
    fun, args = plain["fun"], plain["args"] if plain["args"] is not None else ()
    args = args if isinstance(args, tuple) else (args,)
    f0 = np.reshape(np.asarray(fun(float(plain["t_span"][0]), np.asarray(plain["y0"], dtype=float), *args),
                               dtype=float), np.shape(plain["y0"]))
    step = overdub(ctx, np.multiply, -f0, overdub(ctx, _deviation, t0))
    return _add(ctx, overdub(ctx, np.asarray, y0, float), step)


def _moved_outputs(ctx, plain, out, t_eval):
    """``(y, t)`` with ``y[:, i] += f(t_i, y_i) (t_i - stop_gradient(t_i))`` and ``t`` the
    differentiated output times."""
    fun, args = plain["fun"], plain["args"] if plain["args"] is not None else ()
    args = args if isinstance(args, tuple) else (args,)
    ys = np.asarray(_plain(out.y), dtype=float)
    F = np.stack([np.reshape(np.asarray(fun(float(t), ys[:, i], *args), dtype=float), (ys.shape[0],))
                  for i, t in enumerate(_plain(out.t))], axis=1)
    t = overdub(ctx, np.asarray, t_eval, float)
    y = _add(ctx, out.y, overdub(ctx, np.multiply, F, overdub(ctx, _deviation, t)))
    return y, t


class _DenseSolution:
    """``solve_ivp(..., dense_output=True).sol`` of a differentiated solve: ``sol(t)`` is
    the plain dense output plus the sensitivity at ``t`` (computed when called, inside the
    differentiation that made it; after it has ended, the plain values)."""

    def __init__(self, ctx, plain, G, fargs, y0, user_jac, method):
        self.ctx, self.tagkey, self.plain = ctx, ctx._tagkey, plain
        self.G, self.fargs, self.y0, self.user_jac, self.method = G, fargs, y0, user_jac, method
        self.t_min, self.t_max = plain.t_min, plain.t_max

    def __call__(self, t):
        return self.plain(_plain(t))  # (inside a differentiation, _dense_rule runs instead)


def _dense_rule(ctx, f, args, kwargs):
    from ..threadstate import thread_state
    dense, t = args[0], args[1] if len(args) > 1 else kwargs.get("t")
    made = dense.ctx
    if made._tagkey is not dense.tagkey or not any(c is made for c in thread_state().contexts):
        return dense.plain(_plain(t))  # (the differentiation that made it has ended)
    if made is not ctx:
        return overdub(made, f, *args, **kwargs)
    if _tagged(t):
        raise _no_rule("the dense output of scipy.integrate.solve_ivp at a differentiated time has no "
                       "derivative rule; pass the time as a plain number")
    times = np.atleast_1d(np.asarray(_plain(t), dtype=float))
    if np.any(times < dense.t_min) or np.any(times > dense.t_max):
        raise _no_rule("the dense output of scipy.integrate.solve_ivp outside the time span has no "
                       "derivative rule (it extrapolates)")
    values = dense.plain(times)
    delta = _ode_sensitivity(ctx, dense.G, dense.fargs, dense.y0, dense.plain, dense.plain.ts, times,
                             dense.user_jac, dense.method)
    out = _add(ctx, values, overdub(ctx, np.transpose, delta))
    return out if np.ndim(_plain(t)) else overdub(ctx, operator.getitem, out, (slice(None), 0))


def _odeint_rule(ctx, f, args, kwargs):
    bound, given = _bind(f, args, kwargs)
    a = bound.arguments
    fargs = a["args"] if isinstance(a["args"], tuple) else (a["args"],)
    depends = [a["func"], fargs, a["y0"], a["Dfun"]]
    routed = _route(ctx, f, args, kwargs, depends + [a["t"]])
    if routed is not _MINE:
        return routed
    if _tagged(a["t"]):
        return _odeint_at_moving_times(ctx, f, a, given)
    _ode_checks("scipy.integrate.odeint", ctx, depends, a["t"])
    plain = {k: _plain(v) for k, v in a.items()}
    plain["func"] = _plain_callable(ctx, a["func"])
    plain["Dfun"] = _plain_callable(ctx, a["Dfun"])
    out = _call(f, given, plain)
    t = np.asarray(plain["t"], dtype=float)
    func, tfirst = a["func"], a["tfirst"]
    G = func if tfirst else _swapped(func)
    G_plain = plain["func"] if tfirst else _swapped(plain["func"])
    rtol = plain["rtol"] if plain["rtol"] is not None else 1.49012e-8
    atol = plain["atol"] if plain["atol"] is not None else 1.49012e-8
    dense = _integrate.solve_ivp(G_plain, (t[0], t[-1]), np.ravel(plain["y0"]), method="LSODA",
                                 dense_output=True, rtol=rtol, atol=atol, args=_plain(fargs) or None)
    if dense.status < 0:
        raise _no_rule("scipy.integrate.odeint: the solution could not be retraced for its derivative (%s)"
                       % dense.message)
    user_jac = None
    if plain["Dfun"] is not None:
        Dfun, by_column = plain["Dfun"], plain["col_deriv"]
        user_jac = (lambda s, y: _transposed_if(Dfun(y, s, *_plain(fargs)), by_column)) if not tfirst else (
            lambda s, y: _transposed_if(Dfun(s, y, *_plain(fargs)), by_column))
    delta = _ode_sensitivity(ctx, G, fargs, a["y0"], dense.sol, dense.sol.ts, t, user_jac)
    y = out[0] if type(out) is tuple else out
    y = _add(ctx, y, delta)
    return (y,) + out[1:] if type(out) is tuple else y


_ODEINT_OPTIONS = ("rtol", "atol", "mxstep", "h0", "hmax", "hmin", "ixpr", "mxhnil", "mxordn", "mxords",
                   "printmessg", "ml", "mu")


def _odeint_at_moving_times(ctx, f, a, given):
    """odeint at differentiated output times: each interval ``[t[i-1], t[i]]`` mapped onto
    ``[0, 1]`` (``dy/ds = w func(y, t[i-1] + s w)``, ``w = t[i] - t[i-1]``), one solve per
    interval, so that the times become parameters of the equation, which the ODE rule
    differentiates like any other."""
    unsupported = [k for k in ("Dfun", "tcrit") if a[k] is not None] + (["full_output"] if a["full_output"]
                                                                         else [])
    if unsupported:
        raise _no_rule("scipy.integrate.odeint with differentiated output times and %s= has no derivative "
                       "rule; pass the times as plain numbers" % "=, ".join(unsupported))
    options = {k: a[k] for k in given if k in _ODEINT_OPTIONS}
    plain = {k: _plain(v) for k, v in a.items()}
    plain["func"] = _plain_callable(ctx, a["func"])
    value = _call(f, given, plain)  # (SciPy's own solution: the interval-by-interval one differs
    # from it within the solver's tolerance, 2e-8 at the defaults)
    rows = overdub(ctx, _odeint_interval_by_interval, f, a["func"], a["y0"], a["t"], a["args"], a["tfirst"],
                   options)
    return overdub(ctx, _value_with_slope_of, value, rows)


def _value_with_slope_of(value, rows):
    """``value``, exactly, carrying the derivative of ``rows`` (``rows`` held constant minus
    ``rows`` is 0.0 in value)."""
    from ..markers import stop_gradient

    return value - (stop_gradient(rows) - rows)


def _odeint_interval_by_interval(odeint, func, y0, t, args, tfirst, options):
    """The rows ``y(t[i])``, solving from each output time to the next on ``s`` in ``[0, 1]``."""
    fargs = args if isinstance(args, tuple) else (args,)
    y = np.ravel(np.asarray(y0)) * 1.0
    rows = [y]
    for i in range(1, len(t)):
        start, width = t[i - 1], t[i] - t[i - 1]
        if tfirst:
            def scaled(s, y, *rest, start=start, width=width):
                return width * np.asarray(func(start + s * width, y, *rest))
        else:
            def scaled(y, s, *rest, start=start, width=width):
                return width * np.asarray(func(y, start + s * width, *rest))
        y = odeint(scaled, y, np.array([0.0, 1.0]), args=fargs, tfirst=tfirst, **options)[1]
        rows.append(y)
    return np.stack(rows)


def _transposed_if(J, by_column):
    return np.transpose(J) if by_column else J


def _swapped(func):
    """``func(y, t, *args)`` as ``G(t, y, *args)``."""
    return lambda t, y, *rest: func(y, t, *rest)


# ----------------------------------------------------------------------------- table
def _not_on_a_kept_tape(rule):
    """``rule``, refusing inside ``record_tape``: a kept tape replays the recorded steps for
    new inputs, and the plain solve is no step of it (the replay would return the old
    solution)."""
    def guarded(ctx, f, args, kwargs):
        if getattr(ctx, "keep_bases", False) and _owner(*args, *kwargs.values()) is not None:
            raise _no_rule("%s cannot be recorded on a kept tape (capstan.record_tape): a replay for "
                           "new inputs would not solve again; differentiate it with capstan.gradient "
                           "or capstan.jvp instead" % _qualified(f))
        return rule(ctx, f, args, kwargs)

    guarded.__name__ = guarded.__qualname__ = rule.__name__
    return guarded


if _optimize is not None:
    for _solver in (_optimize.brentq, _optimize.bisect, _optimize.brenth, _optimize.ridder,
                    _optimize.toms748):
        _ROOTS[_solver] = ("f", {"a", "b"}, "scalar")
    _ROOTS[_optimize.newton] = ("func", {"x0", "x1"}, "newton")
    _ROOTS[_optimize.root_scalar] = ("f", {"bracket", "x0", "x1"}, "root_scalar")
    _ROOTS[_optimize.fsolve] = ("func", {"x0"}, "fsolve")
    _ROOTS[_optimize.root] = ("fun", {"x0"}, "root")
    for _solver in _ROOTS:
        defsolver(_solver, _not_on_a_kept_tape(_root_rule))
    defsolver(_optimize.minimize, _not_on_a_kept_tape(_minimize_rule))
    for _legacy in (_optimize.fmin, _optimize.fmin_powell, _optimize.fmin_bfgs, _optimize.fmin_cg,
                    _optimize.fmin_ncg, _optimize.fmin_l_bfgs_b, _optimize.fmin_tnc, _optimize.fminbound):
        defsolver(_legacy, _not_on_a_kept_tape(_legacy_minimiser_rule))
    for _search in (_optimize.differential_evolution, _optimize.dual_annealing, _optimize.shgo,
                    _optimize.direct, _optimize.basinhopping, _optimize.brute):
        defsolver(_search, _not_on_a_kept_tape(_global_minimiser_rule))
    defsolver(_optimize.golden, _not_on_a_kept_tape(_bracketed_minimum_rule))
    defsolver(_optimize.brent, _not_on_a_kept_tape(_bracketed_minimum_rule))
    defsolver(_optimize.least_squares, _not_on_a_kept_tape(_least_squares_rule))
    defsolver(_optimize.curve_fit, _not_on_a_kept_tape(_curve_fit_rule))
    defsolver(_optimize.lsq_linear, _not_on_a_kept_tape(_linear_least_squares_rule))
    defsolver(_optimize.nnls, _not_on_a_kept_tape(_linear_least_squares_rule))
    defsolver(_optimize.fixed_point, _not_on_a_kept_tape(_fixed_point_rule))
    defsolver(_optimize.minimize_scalar, _not_on_a_kept_tape(_minimize_rule))
    defsolver(_integrate.quad, _not_on_a_kept_tape(_quad_rule))
    defsolver(_integrate.quad_vec, _not_on_a_kept_tape(_quad_vec_rule))
    defsolver(_integrate.solve_ivp, _not_on_a_kept_tape(_solve_ivp_rule))
    defsolver(_integrate.odeint, _not_on_a_kept_tape(_odeint_rule))
    defsolver(_DenseSolution.__call__, _not_on_a_kept_tape(_dense_rule))
