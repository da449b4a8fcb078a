"""Every way a derivative can leave a differentiation is guarded (capstan/losses.py).

Each test is a class of loss from the issue "Never a silent wrong derivative": before
the guards, each of these returned a wrong number, a zero or ``None`` without a word.
Now each gives the right derivative or raises ``NoRuleError``; ``right_or_refused``
accepts either, never anything else, in both modes.
"""
import array
import ast
import heapq
import io
import json
import math
import statistics
from decimal import Decimal

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.signal

import capstan
import overdub
from capstan import D, NoRuleError, gradient, jvp, stop_gradient


def both_modes(f, x):
    """``f'(x)`` by forward and by reverse mode (a scalar ``f`` of a scalar ``x``)."""
    return D(f, x), gradient(f, x)[0]


def refused(f, x, match=None):
    for mode in (lambda: D(f, x), lambda: gradient(f, x)):
        with pytest.raises(NoRuleError, match=match):
            mode()


def right_or_refused(f, x, expected):
    for name, mode in (("forward", lambda: D(f, x)), ("reverse", lambda: gradient(f, x)[0])):
        try:
            got = mode()
        except NoRuleError:
            continue
        assert got is not None and np.allclose(got, expected), (name, got, expected)


# ----------------------------------------------------------------------------- 1. C consumes
def test_c_function_draining_an_iterator_of_differentiated_values_is_refused():
    refused(lambda x: array.array("d", (x * i for i in range(3)))[2], 2.0, "array")
    refused(lambda x: array.array("d", map(lambda i: x * i, (1, 2)))[1], 2.0)


def test_iterables_into_c_functions_are_right_or_refused():
    right_or_refused(lambda x: math.fsum(x * i for i in (1, 2, 3)), 2.0, 6.0)
    right_or_refused(lambda x: statistics.fmean(x * k for k in range(1, 5)), 2.0, 2.5)
    right_or_refused(lambda x: float(np.sum(np.fromiter((x * i for i in range(3)), float))), 2.0, 3.0)


def test_the_error_names_the_c_function_and_the_line():
    with pytest.raises(NoRuleError) as info:
        D(lambda x: array.array("d", (x * i for i in range(3)))[2], 2.0)
    message = str(info.value)
    assert "array" in message and "test_losses.py" in message and "defderiv" in message


# ----------------------------------------------------------------------------- 2. callbacks
def test_c_code_calling_back_a_closure_over_the_value_is_right_or_refused():
    right_or_refused(lambda p: scipy.integrate.quad(lambda t: p * t ** 2, 0.0, 1.0)[0], 2.0, 1 / 3)
    right_or_refused(lambda p: scipy.optimize.brentq(lambda t: t - p, 0.0, 10.0), 2.0, 1.0)


def test_c_callback_result_converted_is_refused_by_name():
    # (quad itself has a solver rule now: its C routine, called directly, has none)
    qagse = scipy.integrate._quadpack._qagse
    with pytest.raises(NoRuleError, match="_qagse"):
        gradient(lambda p: qagse(lambda t: p * t ** 2, 0.0, 1.0, (), 0, 1.49e-8, 1.49e-8, 50)[0], 2.0)


# ----------------------------------------------------------------------------- 3. C writes
def test_c_code_writing_into_a_differentiated_array_is_right_or_refused():
    def sort_copy(x):
        y = x.copy()
        y.sort()
        return y[0] * 1.0 + 2.0 * y[2]

    x = np.array([3.0, 1.0, 2.0])
    for mode in (lambda: jvp(sort_copy, (x,), (np.array([1.0, 10.0, 100.0]),))[1],
                 lambda: gradient(sort_copy, x)[0] @ np.array([1.0, 10.0, 100.0])):
        try:
            assert np.isclose(mode(), 10.0 + 2.0)
        except NoRuleError:
            pass


def test_rule_less_c_function_writing_in_place_is_refused():
    from scipy.signal._sosfilt import _sosfilt  # (sosfilt's compiled core, which filters in place)

    sos = scipy.signal.butter(2, 0.3, output="sos")
    x = np.ones(4)

    def core(v):
        rows = np.array(v.reshape(1, -1))
        _sosfilt(sos, rows, np.zeros((1, 1, 2)))
        return rows[0]

    expected = scipy.signal.sosfilt(sos, np.ones(4))  # linear in x: J @ ones == f(ones)
    try:
        got = jvp(core, (x,), (np.ones(4),))[1]
    except NoRuleError:
        return
    np.testing.assert_allclose(got, expected)


def test_expm_forward_derivative_is_right_or_refused():
    A = np.array([[1.0, 2.0], [0.5, -1.0]])
    E = np.array([[0.0, 1.0], [0.0, 0.0]])
    expected = scipy.linalg.expm_frechet(A, E, compute_expm=False)
    try:
        got = jvp(scipy.linalg.expm, (A,), (E,))[1]
    except NoRuleError:
        return
    np.testing.assert_allclose(got, expected, rtol=1e-7)


# ----------------------------------------------------------------------------- 4. raw memory
def test_views_from_raw_memory_are_right_or_refused():
    x = np.arange(4.0)
    window_sums = lambda v: np.sum(np.lib.stride_tricks.sliding_window_view(v, 2) ** 2)
    try:
        (g,) = gradient(window_sums, x)
    except NoRuleError:
        g = None
    if g is not None:
        np.testing.assert_allclose(g, [0.0, 4.0, 8.0, 6.0])


def test_array_memory_and_flat_iteration_are_right_or_refused():
    x = np.array([3.0, 1.0])
    try:
        (g,) = gradient(lambda v: sum(v.flat) * 1.0, x)
    except NoRuleError:
        return
    np.testing.assert_allclose(g, [1.0, 1.0])


def test_numpy_called_from_code_capstan_does_not_see_is_routed_back():
    # a callback run by C (here: sorted's key is routed, so use a C-level map of a
    # closure) sees the tagged array; NumPy functions on it come back to the context
    def f(x):
        (total,) = list(map(np.sum, [x * x]))
        return total * 1.0

    (g,) = gradient(f, np.arange(3.0))
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0])


# ----------------------------------------------------------------------------- 6. caught
def test_a_refusal_caught_by_library_code_still_fails_the_differentiation():
    def swallowing(x):
        try:
            return array.array("d", (x * i for i in (1,)))[0]
        except:  # noqa: E722 -- a library's bare except
            return 0.0

    refused(swallowing, 2.0)

    def mpmath_style(x):
        try:
            return float(repr(x)) * 2  # (parsing the value's own text)
        except Exception:
            return 0.0

    refused(mpmath_style, 2.0)


# ----------------------------------------------------------------------------- 7. text
@pytest.mark.parametrize("round_trip", [
    lambda x: float(str(x)),
    lambda x: float(repr(x)),
    lambda x: float(format(x, ".17g")),
    lambda x: float(f"{x}"),
    lambda x: float("%.17g" % x),
    lambda x: json.loads(json.dumps(x)),
    lambda x: json.loads(json.dumps({"a": x}))["a"],
    lambda x: float(Decimal(str(x))),
    lambda x: float(str(x).encode()),
    lambda x: eval(repr(x)),
    lambda x: eval(compile("[%r, 1.0]" % x, "<text>", "eval"))[0],
    lambda x: ast.literal_eval(repr(x)),
    lambda x: (lambda ns: (exec("y = %r" % x, ns), ns["y"])[1])({}),
], ids=["str", "repr", "format", "fstring", "percent", "json", "json-dict", "Decimal", "bytes", "eval", "compile",
        "literal_eval", "exec"])
def test_numbers_parsed_back_from_their_text_are_refused(round_trip):
    refused(lambda x: round_trip(x) * x, 2.0, "text")


def test_printing_and_formatting_keep_working():
    out = io.StringIO()

    def f(x):
        print("x =", x, f"{x:.3f}", "%.2f" % x, format(x, "e"), json.dumps({"a": x}), file=out)
        return x * x

    assert both_modes(f, 2.0) == (4.0, 4.0)
    assert out.getvalue().splitlines()[0] == 'x = 2.0 2.000 2.00 2.000000e+00 {"a": 2.0}'


# ----------------------------------------------------------------------------- 8. copies
def test_heapq_nsmallest_keeps_every_derivative():
    f = lambda x: sum(heapq.nsmallest(3, [4 * x, x, 3 * x, 2 * x])) * 1.0
    assert both_modes(f, 1.0) == (6.0, 6.0)


# ----------------------------------------------------------------------------- declared drops
def test_stop_gradient_drops_on_purpose_in_every_enclosing_differentiation():
    assert both_modes(lambda x: x * stop_gradient(x), 3.0) == (3.0, 3.0)
    # x * sg(x) * y * sg(y): d/dy = x * sg(x) * sg(y); d/dx of that at y = 2 is sg(x) * 2
    assert D(lambda x: D(lambda y: x * stop_gradient(x) * y * stop_gradient(y), 2.0), 3.0) == 6.0
    (g,) = gradient(lambda a: np.sum(a * stop_gradient(a)), np.arange(3.0))
    np.testing.assert_allclose(g, [0.0, 1.0, 2.0])
    assert D(lambda x: array.array("d", stop_gradient([x, 2 * x]))[1] + x, 1.0) == 1.0
    assert stop_gradient(2.5) == 2.5  # outside a differentiation: the identity


def test_integer_conversions_are_piecewise_constant():
    assert both_modes(lambda x: float(int(x)) + x, 2.5) == (1.0, 1.0)
    assert both_modes(lambda x: float(len(range(int(x)))) + x, 2.5) == (1.0, 1.0)


# ----------------------------------------------------------------------------- lifetimes
def test_values_left_over_from_a_run_are_plain_constants_afterwards():
    kept = {}

    def f(x):
        kept["y"] = y = x * 3.0
        globals()["_LEFT_OVER"] = y
        return y

    D(f, 2.0)
    left = globals().pop("_LEFT_OVER")
    assert float(left) == 6.0 and str(left) == "6.0" and math.sin(left) == math.sin(6.0)
    assert np.sum(np.array([left])) == 6.0


# ----------------------------------------------------------------------------- overdub's hook
def test_escape_hook_sees_protocols_used_by_c_code():
    seen = []

    class Watch(overdub.Context):
        def escape(self, protocol, x, /, *args):
            seen.append(protocol)
            return super().escape(protocol, x, *args)

    ctx = Watch()

    def run(x):
        return math.fsum(v for v in (x, x)), "%d" % x, f"{x}"  # ("%" is routed: no escape)

    out = overdub.overdub(ctx, run, overdub.tag(2.0, ctx, "m"))
    assert out == (4.0, "2", "2.0")
    assert seen == ["__float__", "__float__", "__format__"]


def test_writes_through_views_of_a_temporary_keep_its_derivative():
    # the array np.moveaxis views is a temporary: its tagged owner dies before the write
    w = np.array([0.5, -1.0, 2.0, 0.25])

    def f(v):
        view = np.moveaxis(v * 1.0, 0, -1)
        view[1:3] *= 2.0
        return np.sum(w * view)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = gradient(f, x)
    np.testing.assert_allclose(g, w * [1.0, 2.0, 2.0, 1.0])
    np.testing.assert_allclose(jvp(f, (x,), (np.ones(4),))[1], np.sum(w * [1.0, 2.0, 2.0, 1.0]))


def test_a_c_write_of_the_values_memory_already_held_is_refused():
    # _ppoly.evaluate_bernstein (a BPoly's values; no rule) writes into np.empty(...) memory;
    # after one refused run that memory may already hold the very result, so comparing
    # before and after sees no write
    from scipy import interpolate

    xs = np.linspace(0.0, 3.0, 6)
    f = lambda c: interpolate.BPoly(c.reshape(2, 5), xs)(np.array([0.4, 2.2]))
    c0 = np.cos(np.arange(10.0))
    for _ in range(3):
        with pytest.raises(NoRuleError, match="_ppoly"):
            jvp(f, (c0,), (np.ones(10),))
        with pytest.raises(NoRuleError, match="_ppoly"):
            capstan.pullback(f, c0)


# ----------------------------------------------------------------------------- nesting with arrays
_X = np.array([0.5, -1.2])


@pytest.mark.parametrize("inner", [
    lambda p: capstan.gradient(lambda w: p * np.sum(w ** 2), _X)[0],
    lambda p: capstan.gradient(lambda w: np.sum(w * w) * p, _X)[0],
    lambda p: capstan.gradient(lambda w: p * np.sum(np.sin(w)), _X)[0] * 2.0 * _X / np.cos(_X),
    lambda p: capstan.pullback(lambda w: np.sum(np.sin(w)), _X)[1](p)[0] * 2.0 * _X / np.cos(_X),
], ids=["p*sum(w**2)", "sum(w*w)*p", "p*sum(sin w)", "pullback with a differentiated cotangent"])
def test_reverse_inside_an_enclosing_differentiation_keeps_its_derivative(inner):
    """A cotangent an enclosing differentiation carries in a plain array it shadows (the
    reverse pass of sum hands one to sin) runs the next rule inside that differentiation:
    d/dp of 2 p w is 2 w, in forward and in reverse over reverse."""
    assert np.allclose(capstan.D(inner, 2.0), 2 * _X)
    assert np.allclose(capstan.jacobian(inner, 2.0, mode="reverse"), 2 * _X)


@pytest.mark.parametrize("f", [
    lambda w: np.reshape([1.0, w], (2,)), lambda w: np.ravel([1.0, w]), lambda w: np.flip([1.0, w]),
    lambda w: np.transpose([1.0, w]), lambda w: np.sin([1.0, w]), lambda w: np.cumsum([1.0, w]),
    lambda w: np.multiply([1.0, w], 2.0), lambda w: np.exp((1.0, w)),
    lambda w: np.stack([[w, 1.0], [2.0, w]]).sum(axis=0),
], ids=["reshape", "ravel", "flip", "transpose", "sin", "cumsum", "multiply", "exp of a tuple", "stack"])
def test_forward_mode_reads_a_list_with_constants_as_an_array(f):
    """np.f([1.0, w]): the constant elements have zero tangents (they were None: NaN or
    a TypeError), in D, jvp and the chunked forward Jacobian alike."""
    expected = capstan.jacobian(f, 1.3, mode="reverse")
    assert np.all(np.isfinite(capstan.D(f, 1.3)))
    assert np.allclose(capstan.D(f, 1.3), expected)
    x = np.array([1.3, 0.4])
    g = lambda v: f(v[0]) * v[1]  # noqa: E731
    assert np.allclose(capstan.jacobian(g, x), capstan.jacobian(g, x, mode="reverse"))


@pytest.mark.parametrize("f,expected", [
    (lambda p: capstan.D(lambda z: capstan.D(lambda t: t * t * p, z), 0.5), 2.0),
    (lambda p: capstan.D(lambda z: capstan.D(lambda t: t * z * p, z), 0.5), 1.0),
    (lambda p: capstan.D(lambda z: capstan.D(lambda t: t * p * t, z), 0.5), 2.0),
    (lambda p: capstan.jacobian(lambda z: z * z * p, 0.5), 1.0),
    (lambda p: capstan.jacobian(lambda z: capstan.D(lambda t: t * t * p, z), 0.5), 2.0),
    (lambda p: capstan.jacobian(lambda z: capstan.jacobian(lambda t: np.sum(t * t * p), z), _X)[0, 0], 2.0),
    (lambda p: capstan.jacobian(lambda z: capstan.jacobian(lambda t: t * t * p, z), 0.5), 2.0),
], ids=["D3 t*t*p", "D3 t*z*p", "D3 t*p*t", "jacobian at a scalar", "jacobian of D",
        "jacobian of jacobian", "scalar jacobian of jacobian"])
def test_three_nested_differentiations_with_closures(f, expected):
    """A value carrying derivatives of two enclosing differentiations goes to the deeper
    one first (it hands the other's on); a scalar jacobian's tangent that carries an
    enclosing derivative is assembled inside it.  Both gave 0 silently."""
    assert np.allclose(capstan.D(f, 0.7), expected)
    value, tangent = capstan.jvp(f, (0.7,), (1.0,))
    assert np.allclose(tangent, expected) and np.asarray(value).dtype != object


def test_an_output_array_of_objects_holding_derivatives_is_refused():
    from capstan import checks

    t = capstan.jvp(lambda x: x, (1.0,), (1.0,))  # (plain results: no error)
    assert t == (1.0, 1.0)
    with pytest.raises(TypeError, match="dtype=object"):
        checks.no_object_arrays([np.array([overdub.tag(1.0, overdub.Context(), None)], dtype=object)], "jvp")


def test_unhashable_c_callables_are_refused_clearly_in_every_mode():
    """A ctypes function is a C callable that cannot be hashed: given a differentiated
    value it is a NoRuleError naming it in every mode (it was an internal 'unhashable
    type' TypeError); given plain values it is called as is."""
    import ctypes

    libm = ctypes.CDLL(None)
    cbrt = libm.cbrt
    cbrt.restype, cbrt.argtypes = ctypes.c_double, [ctypes.c_double]
    with pytest.raises(TypeError):
        hash(cbrt)
    f = lambda x: cbrt(x) * 2.0  # noqa: E731
    for run in (lambda: capstan.D(f, 8.0), lambda: capstan.gradient(f, 8.0),
                lambda: capstan.hessian(f, 8.0), lambda: capstan.record_tape(f, 8.0),
                lambda: capstan.hessian_sparsity(lambda v: f(v[0]), np.ones(1)),
                lambda: capstan.jacobian_sparsity(lambda v: f(v[0]), np.ones(1))):
        with pytest.raises(capstan.NoRuleError, match="cbrt has no derivative rule"):
            run()
    g = lambda x: x * cbrt(8.0)  # noqa: E731
    assert capstan.D(g, 3.0) == 2.0 and capstan.gradient(g, 3.0) == (2.0,)


def test_lru_cache_functions_and_methods_are_differentiated_through_their_body():
    """functools.lru_cache/cache wrap a Python body in a C object: differentiated
    arguments call the body (derivatives right in every mode; it was a NoRuleError), and
    the cache never keeps a differentiated value (later plain calls see plain numbers)."""
    import functools

    @functools.lru_cache(maxsize=None)
    def sq(t):
        return t * t * math.sin(t)

    class Model:
        @functools.cache
        def energy(self, t):
            return math.exp(t) * t

    m = Model()
    f = lambda x: sq(x) + m.energy(x) + sq(2.0)  # noqa: E731
    exact = lambda x: 2 * x * math.sin(x) + x * x * math.cos(x) + math.exp(x) * (1 + x)  # noqa: E731
    assert math.isclose(capstan.D(f, 0.7), exact(0.7), rel_tol=1e-13)
    assert math.isclose(capstan.gradient(f, 0.7)[0], exact(0.7), rel_tol=1e-13)
    assert math.isclose(capstan.hessian(f, 0.7), capstan.D(exact, 0.7), rel_tol=1e-12)
    assert sq.cache_info().currsize == 1  # only the plain call sq(2.0) was cached
    assert type(sq(2.0)) is float and sq.cache_info().hits >= 1
