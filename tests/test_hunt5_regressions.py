"""Regressions from the fifth bug hunt: differentiated values written where no derivative
follows (object and record arrays, ndarray subclasses, ``array.array`` and ``bytearray``
stores by C, string arrays), ``out`` given by position, and ``a ** b``'s slope in ``b`` at
``a = 0``.  Each test failed (a zero or ``None`` derivative, a wrong Jacobian, an internal
TypeError) before its fix."""
import array
import math
import struct

import numpy as np
import pytest

import capstan
from test_reverse import fd_grad

X = 1.3


def _both(f, x=X):
    """``D`` and ``gradient`` of scalar ``f`` at ``x``."""
    return [lambda: capstan.D(f, x), lambda: capstan.gradient(f, x)[0]]


# ------------------------------------------------------------- writes that cannot carry it
class _Sub(np.ndarray):
    pass


def _object_array(x):
    a = np.empty(2, dtype=object)
    a[0] = x
    return a[0] * 2


def _object_array_fill(x):
    a = np.empty(2, dtype=object)
    a.fill(x)
    return a[1] * 2


def _object_array_slice(x):
    a = np.empty(2, dtype=object)
    a[:] = x
    return a[1] * 2


def _recarray_field(x):
    a = np.zeros(2, dtype=[("a", float)]).view(np.recarray)
    a.a[0] = x
    return float(a.a[0]) * 2


def _structured_field(x):
    a = np.zeros(2, dtype=[("a", float), ("b", float)])
    a["a"][0] = x
    return float(a["a"][0]) * 2


def _masked(x):
    a = np.ma.zeros(2)
    a[0] = x
    return float(a[0]) * 2


def _plain_view_of_subclass(x):
    m = np.zeros(2).view(_Sub)
    m.view(np.ndarray)[0] = x
    return float(m[0]) * 2


def _subclass_view_made_before(x):
    p = np.zeros(2)
    m = p.view(_Sub)
    p[0] = x
    return float(m[0]) * 2


def _array_append(x):
    a = array.array("d", [1.0])
    a.append(x)
    return sum(a)


def _array_insert(x):
    a = array.array("d", [1.0])
    a.insert(0, x)
    return a[0] * 2


def _array_setitem_method(x):
    a = array.array("d", [1.0])
    a.__setitem__(0, x)
    return a[0] * 2


def _pack_into(x):
    b = bytearray(8)
    struct.pack_into("d", b, 0, x)
    return struct.unpack("d", b)[0]


def _string_array(x):
    a = np.zeros(2, dtype="U20")
    a[0] = x
    return float(a[0]) * 2


def _bytes_array(x):
    a = np.zeros(2, dtype="S20")
    a[0] = x
    return float(a[0]) * 2


@pytest.mark.parametrize("f", [_object_array, _object_array_fill, _object_array_slice, _recarray_field,
                               _structured_field, _masked, _plain_view_of_subclass,
                               _subclass_view_made_before, _array_append, _array_insert,
                               _array_setitem_method, _pack_into, _string_array, _bytes_array])
def test_writes_where_no_derivative_follows_are_refused(f):
    """Each kept the number of ``x`` only (slope 0.0 from D, ``None`` from gradient, where
    plain Python's slope is 2 or 1); now capstan's refusal."""
    f(X)  # (plain Python runs it)
    for run in _both(f):
        with pytest.raises(capstan.NoRuleError):
            run()


def _integer_array(x):
    a = np.zeros(2, dtype=int)
    a[0] = x * 10
    return float(a[0]) + x


def _float_array(x):
    a = np.zeros(3)
    a[0] = x
    a[1:] = [x * x, 2.0]
    return float(a @ a)


def _list_store(x):
    out = [1.0]
    out.append(x)
    return sum(out) * x


@pytest.mark.parametrize("f, want", [(_integer_array, 1.0), (_float_array, 2 * X + 4 * X ** 3),
                                     (_list_store, 1.0 + 2 * X)])
def test_writes_that_carry_it_are_unchanged(f, want):
    for run in _both(f):
        assert run() == pytest.approx(want)


def test_refusal_names_the_target():
    with pytest.raises(capstan.NoRuleError, match="dtype object"):
        capstan.D(_object_array, X)
    with pytest.raises(capstan.NoRuleError, match="recarray"):
        capstan.gradient(_recarray_field, X)
    with pytest.raises(capstan.NoRuleError, match="array.append"):
        capstan.D(_array_append, X)


# ----------------------------------------------------------------------- out by position
A = np.array([[0.3, 1.2], [2.0, -0.7]])


def _fd_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


_POSITIONAL_OUT = {
    "outer": (lambda a, o: np.outer(a[0], a[1], o), (2, 2)),
    "sum": (lambda a, o: np.sum(a, 0, None, o), (2,)),
    "mean": (lambda a, o: np.mean(a, 0, None, o), (2,)),
    "cumsum": (lambda a, o: np.cumsum(a, 0, None, o), (2, 2)),
    "clip": (lambda a, o: np.clip(a, 0.0, 1.0, o), (2, 2)),
    "dot": (lambda a, o: np.dot(a, a, o), (2, 2)),
    "std": (lambda a, o: np.std(a, 0, None, o), (2,)),
    "amax": (lambda a, o: np.amax(a, 0, o), (2,)),
    "take": (lambda a, o: np.take(a, [1, 0], 1, o), (2, 2)),
    "median": (lambda a, o: np.median(a, 0, o), (2,)),
    "nanmean": (lambda a, o: np.nanmean(a, 0, None, o), (2,)),
    "ndarray.dot": (lambda a, o: a.dot(a, o), (2, 2)),
}


@pytest.mark.parametrize("name", sorted(_POSITIONAL_OUT))
def test_out_given_by_position_is_written(name):
    """``np.outer(x, y, buf)`` and friends: the buffer was taken for an operand, or left
    as it was (a zero Jacobian; a TypeError inside np.clip's rule)."""
    call, shape = _POSITIONAL_OUT[name]

    def f(a):
        o = np.zeros(shape)
        call(a, o)
        return o * 1.0

    want = _fd_jacobian(f, A)
    np.testing.assert_allclose(capstan.jacfwd(f)(A), want, atol=1e-6)
    np.testing.assert_allclose(capstan.jacrev(f)(A), want, atol=1e-6)


# ------------------------------------------------------------------- a ** b at a = 0
@pytest.mark.parametrize("f", [lambda b: 0.0 ** b, lambda b: math.pow(0.0, b), lambda b: np.power(0.0, b)])
def test_power_of_zero_has_no_slope_in_the_exponent_at_zero(f):
    """``0 ** b`` jumps from 1 (b = 0) to 0 (b > 0): the slope was 0."""
    for run in _both(f, 0.0):
        with pytest.raises(capstan.NoRuleError, match="a = 0"):
            run()


@pytest.mark.parametrize("b", [0.5, 1.0])
@pytest.mark.parametrize("power", [lambda a, b: a ** b, math.pow, np.power])
def test_power_hessian_at_zero_base_is_refused(power, b):
    """The mixed partial of ``a ** b`` is infinite at ``a = 0`` for ``0 < b <= 1``: the
    Hessian at (0, 1) was [[0, 1], [0, 0]]."""
    with pytest.raises(capstan.NoRuleError):
        capstan.hessian(lambda v: power(v[0], v[1]), np.array([0.0, b]))


def test_power_slopes_that_exist_at_zero_base_are_unchanged():
    assert capstan.gradient(lambda a, b: a ** b, 0.0, 2.0) == (0.0, 0.0)
    assert capstan.D(lambda b: 0.0 ** b, 0.5) == 0.0
    assert capstan.D(lambda a: a ** 0.0, 0.0) == 0.0
    np.testing.assert_array_equal(capstan.hessian(lambda v: v[0] ** v[1], np.array([0.0, 2.0])),
                                  [[2.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(capstan.hessian(lambda v: v[0] ** v[1], np.array([1.0, 1.0])),
                               [[0.0, 1.0], [1.0, 0.0]])


# ------------------------------------------------------------------- % formatting of a tuple
def test_percent_formatting_of_a_tuple_formats_the_values():
    """``"%.3f %s" % (x, y)``: CPython formats the tuple's values in C, where a tagged value
    was converted with ``__float__`` and refused, though plain Python runs it; the text is
    made from the values (as the explicit ``str.__mod__`` call makes it), and reading a
    number back from it is still refused."""
    def f(x):
        s = "%.3f %s" % (x, x)
        t = b"%d-%s" % (3, b"b")  # (no differentiated value: as plainly)
        return x * (len(s) + len(t))

    assert f(1.0) == 12.0
    assert capstan.D(f, 1.0) == 12.0
    assert capstan.gradient(f, 1.0) == (12.0,)

    # a number read back from a piece of the text: refused (the explicit str.__mod__ forms
    # gave a silent 0 and None: only the whole text was remembered)
    read_backs = [lambda x: float(("%.2f %s" % (x, 1)).split()[0]),
                  lambda x: float(("%.2f %s" % (x, 1))[:4]),
                  lambda x: float(("%*.*f|" % (6, 2, x)).split("|")[0]),
                  lambda x: float(str.__mod__("%.2f %s", (x, 1)).split()[0]),
                  lambda x: float("%.2f %s".__mod__((x, 1)).split()[0])]
    for read_back in read_backs:
        for run in (capstan.D, capstan.gradient):
            with pytest.raises(capstan.NoRuleError):
                run(read_back, 1.0)

    class Template(str):
        def __mod__(self, values):
            return "<%d values>" % len(values)

    def g(x):
        return x * len(Template("%s") % (x, x))

    assert capstan.D(g, 2.0) == g(1.0) == len("<2 values>")


# ------------------------------------------------------------------- repeated eigenvalues alone
EQUAL_LOW = np.diag([1.0, 1.0, 2.0])   # eigenvalues 1, 1, 2
EQUAL_HIGH = np.diag([2.0, 2.0, 1.0])  # singular values 2, 2, 1


@pytest.mark.parametrize("value, a", [
    (lambda a: np.linalg.eigh(a)[0][0], EQUAL_LOW),   # the smaller of two equal eigenvalues
    (lambda a: np.linalg.eigvalsh(a)[1], EQUAL_LOW),
    (lambda a: np.linalg.svd(a)[1][0], EQUAL_HIGH),   # the larger of two equal singular values
    (lambda a: np.linalg.svd(a, compute_uv=False)[1], EQUAL_HIGH),
])
def test_a_repeated_eigenvalue_alone_is_refused_in_reverse_mode(value, a):
    """Where two eigenvalues (singular values) meet, the sorted values swap: each alone has
    a kink (slopes 1 and 0 on either side along ``e0 e0^T``), which reverse mode gave as the
    one-sided, basis-dependent ``e0 e0^T``."""
    with pytest.raises(ValueError, match="repeated"):
        capstan.gradient(value, a)


def test_functions_symmetric_in_repeated_eigenvalues_keep_their_gradient():
    def weighted(m):
        w = np.linalg.eigh(m)[0]
        return w[0] + w[1] + 3 * w[2]

    np.testing.assert_allclose(capstan.gradient(weighted, EQUAL_LOW)[0], np.diag([1.0, 1.0, 3.0]), atol=1e-12)
    g = capstan.gradient(lambda m: np.sum(np.linalg.svd(m, compute_uv=False) ** 2), EQUAL_HIGH)[0]
    np.testing.assert_allclose(g, 2 * EQUAL_HIGH, atol=1e-12)
    b = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])  # (distinct eigenvalues)
    smallest = lambda m: np.linalg.eigvalsh(m)[0]  # noqa: E731
    np.testing.assert_allclose(capstan.gradient(smallest, b)[0], fd_grad(smallest, b), atol=1e-7)


def test_eigenvectors_of_a_split_repeated_eigenvalue_have_no_forward_derivative():
    """A direction splitting two equal eigenvalues swaps their sorted order, and their
    vectors with it (``V[0, 0]`` jumps between 1 and 0): the tangent was a silent 0; it is
    refused, as for a direction that rotates them.  A shift of both keeps its derivative."""
    def first_vector(v):
        return np.linalg.eigh(np.diag(v))[1][0, 0]

    v = np.array([1.0, 1.0, 2.0])
    with pytest.raises(capstan.NoRuleError, match="came out NaN"):
        capstan.jvp(first_vector, (v,), (np.array([1.0, 0.0, 0.0]),))
    assert capstan.jvp(first_vector, (v,), (np.array([1.0, 1.0, 0.0]),))[1] == 0.0
    a = np.diag([2.0, 2.0, 1.0])
    with pytest.raises(capstan.NoRuleError, match="came out NaN"):
        capstan.jvp(lambda m: np.linalg.svd(m)[0][0, 0], (a,), (np.diag([1.0, 0.0, 0.0]),))
