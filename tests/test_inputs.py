"""One rule for inputs across every entry point: what cannot carry a derivative, the
dtype of what comes back, and error messages that name the function the user called."""
import numpy as np
import pytest

import capstan
import overdub

square = lambda x: x * x  # noqa: E731
total = lambda x: float(np.sum(x * 1.0))  # noqa: E731

ENTRY_POINTS = {
    "D": lambda x: capstan.D(square, x),
    "jvp": lambda x: capstan.jvp(square, (x,), (x,)),
    "gradient": lambda x: capstan.gradient(total, x),
    "pullback": lambda x: capstan.pullback(square, x),
    "jacobian": lambda x: capstan.jacobian(square, x),
    "hessian": lambda x: capstan.hessian(total, x),
    "grad": lambda x: capstan.grad(total)(x),
    "value_and_grad": lambda x: capstan.value_and_grad(total)(x),
    "jacfwd": lambda x: capstan.jacfwd(square)(x),
    "jacrev": lambda x: capstan.jacrev(square)(x),
}

BAD = [
    (3, r"got int 3; pass 3.0 instead of 3"),
    (True, r"got bool True; booleans are never differentiable"),
    ("ab", r"got str 'ab'; strings have no derivative"),
    (np.array([1, 2]), r"got a NumPy array of dtype int64; pass x.astype\(float\)"),
    (np.int32(4), r"got a NumPy scalar of dtype int32"),
    ([1, 2], r"got int 1; pass 1.0 instead of 1"),
]


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("x, says", BAD, ids=[repr(b[0]) for b in BAD])
def test_no_differentiable_input_is_a_type_error_everywhere(name, x, says):
    with pytest.raises(TypeError, match=r"capstan\.%s: .*can(not)? carry a derivative: %s" % (name, says)):
        ENTRY_POINTS[name](x)


def test_non_float_arguments_beside_a_float_one_keep_none():
    assert capstan.gradient(lambda x, n, s: x ** n * len(s), 2.0, 3, "ab") == (24.0, None, None)
    assert capstan.gradient(lambda x: 3.0, 2.0) == (None,)  # a float nothing flows from


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_gradient_dtype_follows_input(dtype):
    x = np.array([1.0, 2.0], dtype=dtype)
    (g,) = capstan.gradient(lambda v: np.sum(v * v), x)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g, [2.0, 4.0])
    (g,) = capstan.gradient(lambda v: v * v, dtype(3.0))
    assert type(g) is dtype and g == 6.0
    assert capstan.grad(lambda v: np.sum(v * v))(x).dtype == dtype
    assert capstan.hessian(lambda v: np.sum(v ** 3), x).dtype == dtype
    assert capstan.jacobian(lambda v: v * v, x).dtype == dtype
    assert capstan.jacobian(lambda v: v * v, x, mode="reverse").dtype == dtype


def test_python_float_stays_float():
    (g,) = capstan.gradient(lambda v: v * np.float32(2.0), 3.0)
    assert type(g) is float and g == 2.0


@pytest.mark.parametrize("name", ["gradient", "pullback", "jacobian", "hessian"])
def test_no_point_says_what_to_do(name):
    fn = getattr(capstan, name)
    with pytest.raises(TypeError, match=r"capstan\.%s\(f.*\) needs the point to differentiate at.*use "
                                        r"capstan\." % name) as info:
        fn(square)
    assert "codegen" not in str(info.value)
    with pytest.raises(TypeError, match=r"capstan\.%s\(f.*\) takes the point positionally" % name):
        fn(square, x=1.0)


def test_errors_name_the_entry_point():
    with pytest.raises(ValueError, match=r"^capstan\.hessian: f must return a real scalar"):
        capstan.hessian(lambda v: v * v, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"^capstan\.gradient: f must return a real scalar"):
        capstan.gradient(lambda v: v * v, np.array([1.0, 2.0]))


def test_overdub_with_the_context_class_says_to_instantiate():
    class Log(overdub.Context):
        pass

    with pytest.raises(TypeError, match=r"ctx is the context class Log itself; pass an instance: "
                                        r"overdub\(Log\(\), f, \.\.\.\)"):
        overdub.overdub(Log, square, 2.0)


def test_autograd_style_defvjp_is_explained():
    def cube(x):
        return x ** 3

    for rule in (lambda ans, x: lambda g: g * 3 * x ** 2,   # named like autograd's
                 lambda a, x: lambda g: g * 3 * x ** 2):    # one parameter too few
        with pytest.raises(TypeError, match=r"autograd-style.*defvjp\(f, lambda g, ans, x: g \* ans\)"):
            capstan.defvjp(cube, rule)
    # capstan's own form is accepted and used
    capstan.defvjp(cube, lambda g, ans, x: (g * 3 * x ** 2,))
    assert capstan.gradient(cube, 2.0) == (12.0,)


def test_a_reverse_rule_that_drops_a_cotangent_is_a_type_error():
    """A user rule returning a bare cotangent, or a tuple shorter than the arguments that
    are differentiated, used to crash inside the backward pass ("'float' object is not
    iterable") or, for the short tuple, give None for the dropped argument."""
    def twice(x):
        return x * 2.0

    def times(x, y):
        return x * y

    capstan.defvjp(twice, lambda g, ans, x: g * 2.0)
    capstan.defvjp(times, lambda g, ans, x, y: (g * y,))
    with pytest.raises(TypeError, match=r"reverse rule of .*twice returned float; it must return a tuple"):
        capstan.gradient(twice, 1.0)
    with pytest.raises(TypeError, match=r"reverse rule of .*times returned a tuple of 1; .* \(2 here"):
        capstan.gradient(times, 2.0, 3.0)
    assert capstan.gradient(times, 2.0, 3) == (3.0, None)  # (an int's cotangent may be left out)


@pytest.mark.parametrize("entry", [capstan.gradient, capstan.pullback, capstan.jacobian, capstan.hessian])
def test_a_keyword_named_like_the_function_parameter_is_the_clear_error(entry):
    # (f is positional-only: no "got multiple values for argument 'f'")
    with pytest.raises(TypeError, match="takes the point positionally"):
        entry(lambda x, f=1.0: x * f, 2.0, f=3.0)


@pytest.mark.parametrize("out", ["text", None, [1.0], {"a": 1.0}])
def test_gradient_of_something_not_a_number_is_a_type_error(out):
    with pytest.raises((TypeError, ValueError), match="capstan.gradient: f must return (a real scalar|numbers)"):
        capstan.gradient(lambda x: out, 1.0)


NOT_NUMBERS = {"text": "text", "None": None, "object": object()}
OUTPUT_ENTRY_POINTS = {
    "D": lambda f: capstan.D(f, 1.0),
    "jvp": lambda f: capstan.jvp(f, (1.0,), (1.0,)),
    "gradient": lambda f: capstan.gradient(f, 1.0),
    "grad": lambda f: capstan.grad(f)(1.0),
    "value_and_grad": lambda f: capstan.value_and_grad(f)(1.0),
    "jacobian": lambda f: capstan.jacobian(f, np.ones(2)),
    "jacobian mode='reverse'": lambda f: capstan.jacobian(f, np.ones(2), mode="reverse"),
    "jacfwd": lambda f: capstan.jacfwd(f)(1.0),
    "jacrev": lambda f: capstan.jacrev(f)(1.0),
    "hessian": lambda f: capstan.hessian(f, np.ones(2)),
    "hvp": lambda f: capstan.hvp(f, np.ones(2), np.ones(2)),
}


@pytest.mark.parametrize("out", sorted(NOT_NUMBERS))
@pytest.mark.parametrize("entry", sorted(OUTPUT_ENTRY_POINTS))
def test_an_output_that_is_no_number_is_a_type_error_naming_the_entry_point(entry, out):
    # (never None or zero for a derivative of a string or None)
    value = NOT_NUMBERS[out]
    name = entry.split()[0]
    with pytest.raises(TypeError, match=r"^capstan\.%s: f must return" % name):
        OUTPUT_ENTRY_POINTS[entry](lambda x: value)


SCALAR_OUTPUT_ENTRY_POINTS = ["gradient", "grad", "value_and_grad", "hessian", "hvp", "jacfwd", "jacrev"]
TRUTH_VALUES = {"bool": lambda x: bool(np.sum(x) > 0), "np.bool_": lambda x: np.all(x > 0),
                "allclose": lambda x: np.allclose(x, 2.0 * x), "bool array": lambda x: x > 0}


@pytest.mark.parametrize("out", sorted(TRUTH_VALUES))
@pytest.mark.parametrize("entry", SCALAR_OUTPUT_ENTRY_POINTS)
def test_a_truth_value_output_is_a_type_error_not_a_zero_gradient(entry, out):
    """A comparison's result has no derivative: these entry points used to answer None or
    zeros for f returning a bool (JAX and autograd refuse it too)."""
    f = TRUTH_VALUES[out]
    if out == "bool array" and entry not in ("jacfwd", "jacrev"):
        return  # (the scalar entry points refuse any array output already)
    with pytest.raises(TypeError, match=r"^capstan\.%s: f returned .*truth value has no derivative" % entry):
        OUTPUT_ENTRY_POINTS[entry](f)
