"""Regressions from the eleventh bug hunt (bad and unusual inputs to every public entry
point): each case raised an internal exception, a message not naming the entry point the
user called, or a name clash with the user's keywords before its fix."""
import numpy as np
import pytest

import capstan
import overdub
from overdub import Context


# ------------------------------------------------------------------ an empty array as the point
@pytest.mark.parametrize("f, shape", [
    (lambda x: x * 2, (0, 0)),
    (lambda x: np.sum(x) + np.ones(2), (2, 0)),
])
def test_jacobian_of_an_empty_array(f, shape):
    """Was ValueError 'chunk must be a positive int, got 0' (a chunk the user never gave)."""
    J = capstan.jacobian(f, np.zeros(0))
    assert J.shape == shape
    np.testing.assert_array_equal(J, capstan.jacfwd(f)(np.zeros(0)))


def test_hessian_of_an_empty_array():
    assert capstan.hessian(lambda x: np.sum(x * x), np.zeros(0)).shape == (0, 0)


def test_jacobian_of_an_empty_array_inside_a_gradient():
    g = capstan.gradient(lambda x: np.sum(capstan.jacobian(lambda y: y * x, np.zeros(0))) + x, 1.0)
    assert g == (1.0,)


def test_jacobian_chunk_true_is_refused():
    """Was "TypeError: an integer is required" from inside the seeding."""
    with pytest.raises(ValueError, match=r"capstan\.jacobian: chunk"):
        capstan.jacobian(lambda x: x * 2, np.ones(2), chunk=True)


# ------------------------------------------------------------------ checkpoint
def test_checkpoint_non_callable_names_checkpoint():
    with pytest.raises(TypeError, match=r"capstan\.checkpoint"):
        capstan.gradient(lambda x: capstan.checkpoint(3, x), 1.0)
    with pytest.raises(TypeError, match=r"capstan\.checkpoint"):
        capstan.checkpoint(3, 1.0)


def _scaled(x, f):
    return x * f


@pytest.mark.parametrize("run", [
    lambda: capstan.checkpoint(_scaled, 1.5, f=2.0),
    lambda: capstan.gradient(lambda t: capstan.checkpoint(_scaled, t, f=2.0), 1.5)[0],
    lambda: capstan.jvp(lambda t: capstan.checkpoint(_scaled, t, f=2.0), (1.5,), (1.0,))[1],
    lambda: capstan.D(lambda t: capstan.checkpoint(_scaled, t, f=2.0), 1.5),
])
def test_checkpoint_passes_a_keyword_named_f(run):
    """Was "checkpoint() / ReverseCtx.checkpoint_() got multiple values for argument 'f'"."""
    assert run() in (3.0, 2.0)


def test_checkpoint_keyword_gradient_is_right():
    g = capstan.gradient(lambda t: capstan.checkpoint(_scaled, t, f=t), 1.5)
    assert g == (3.0,)


def test_checkpoint_keyword_it_cannot_take_by_position_names_checkpoint():
    """Was "ReverseCtx.checkpoint_() got an unexpected keyword argument 'dy'"."""
    def g(x, **k):
        return x * k["dy"]
    with pytest.raises(TypeError, match=r"capstan\.checkpoint\(g\): keyword"):
        capstan.gradient(lambda t: capstan.checkpoint(g, t, dy=3.0), 2.0)


# ------------------------------------------------------------------ pullback's dy
def test_pullback_string_dy_names_pullback():
    """Was "can't multiply sequence by non-int of type 'float'" from the backward pass."""
    _, back = capstan.pullback(lambda x: x * x, 3.0)
    with pytest.raises(TypeError, match=r"capstan\.pullback: dy"):
        back("a")
    assert back(1) == (6.0,)


def test_jacrev_string_dy_never_reached():
    _, back = capstan.pullback(lambda x: x * 2, np.ones(2))
    with pytest.raises(TypeError, match=r"capstan\.pullback: dy"):
        back(np.array(["a", "b"]))


# ------------------------------------------------------------------ overdub's tagging functions
def test_untag_with_a_non_context_names_untag():
    """Was AttributeError: 'NoneType' object has no attribute '_tagkey'."""
    t = overdub.tag(1.0, Context(), "m")
    with pytest.raises(TypeError, match=r"untag\(x, ctx\)"):
        overdub.untag(t, None)


def test_hasmetadata_names_itself():
    """Named ``metadata(x, ctx)`` before."""
    with pytest.raises(TypeError, match=r"^hasmetadata\(x, ctx\)"):
        overdub.hasmetadata(1.0, None)
    c = Context()
    assert overdub.hasmetadata(overdub.tag(1.0, c, "m"), c)
    assert not overdub.hasmetadata(overdub.tag(1.0, c, None), c)
    assert not overdub.hasmetadata(overdub.tag(1.0, c, "m"), Context())


def test_reverse_jacobians_of_complex_outputs_of_real_inputs_are_complex():
    """A complex output of a real input: reverse mode's Jacobian is complex, as forward
    mode's (one backward pass from 1 gives its real part, one from 1j its imaginary part);
    ``jacrev`` and ``jacobian(mode="reverse")`` gave the real part alone."""
    import numpy as np

    f = lambda x: x * (2 + 3j)  # noqa: E731
    g = lambda v: np.exp(1j * v) * v  # noqa: E731
    h = lambda a, z: a * z * z  # noqa: E731
    x = np.array([1.0, 2.0])
    for jac in (capstan.jacrev(f)(1.0), capstan.jacobian(f, 1.0, mode="reverse")):
        assert jac == 2 + 3j
    for jac in (capstan.jacrev(g)(x), capstan.jacobian(g, x, mode="reverse")):
        np.testing.assert_allclose(jac, capstan.jacfwd(g)(x), rtol=1e-14, atol=1e-15)
    for got, want in zip(capstan.jacrev(h, argnums=(0, 1))(2.0, 1.0 + 1j), (2j, 4 + 4j)):
        assert got == pytest.approx(want)
    assert capstan.D(lambda t: capstan.jacobian(lambda y: y * (2 + 3j) * t, 1.0, mode="reverse"), 1.0) == 2 + 3j
    np.testing.assert_allclose(capstan.jacrev(np.sin)(x), np.diag(np.cos(x)), atol=1e-15)  # (real: as before)


def test_tangents_and_cotangents_pair_with_the_point_by_key_and_shape():
    """A dict of tangents (``jvp``) or of output cotangents (``pullback``'s ``back``) in
    another key order pairs by key: it paired by position (a silent wrong slope); a tangent
    that is text or of another structure is refused naming the entry point (``(1.0, 'a')``
    and a list for a float were taken as they came)."""
    import collections

    import numpy as np

    assert capstan.jvp(lambda d: d["a"] * 2 + d["b"] * 3, ({"a": 1.0, "b": 1.0},),
                       ({"b": 1.0, "a": 0.0},)) == (5.0, 3.0)
    _, back = capstan.pullback(lambda x: {"a": x * 2, "b": [x * 3, x]}, 1.0)
    assert back({"b": [1.0, 0.0], "a": 0.0}) == (3.0,)
    Point = collections.namedtuple("Point", "u v")
    assert capstan.jvp(lambda p: p.u * 2 + p.v * 3, (Point(1.0, 2.0),), ((0.0, 1.0),)) == (8.0, 3.0)
    with pytest.raises(TypeError, match="capstan.jvp: tangents must be numbers"):
        capstan.jvp(lambda x: x, (1.0,), ("a",))
    with pytest.raises(TypeError, match="capstan.jvp: tangents must be numbers"):
        capstan.jvp(lambda x: x, (np.ones(2),), (np.array(["a", "b"]),))
    with pytest.raises(ValueError, match="capstan.jvp: tangents must have the structure of the primals"):
        capstan.jvp(lambda x: x, (1.0,), ([1.0],))
    with pytest.raises(ValueError, match="capstan.jvp: tangents must have the structure"):
        capstan.jvp(lambda d: d["a"], ({"a": 1.0},), ({"b": 1.0},))
    with pytest.raises(ValueError, match="capstan.pullback: dy must have the structure of f's output"):
        back({"a": 1.0})
