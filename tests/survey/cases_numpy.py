"""Survey cases: NumPy -- ufuncs, reductions, sorting and order statistics, shape and
indexing functions, in-place writes and ``out=``, constructors, linalg, fft,
polynomials, interp/convolve, stride tricks, nan-functions, ndarray methods."""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from . import Table

T = Table("numpy")
add = T.add
A = np.array([0.3, 0.7, 1.1])
B = np.array([0.9, 0.2, 1.3, 0.5])       # distinct values, for order statistics
M = np.array([[2.0, 0.3, 0.1], [0.4, 1.5, 0.2], [0.1, 0.6, 1.8]])
C = np.array([0.5, -0.2, 0.8])           # a constant operand
X = 0.7

# ----------------------------------------------------------------------------- unary ufuncs
UNARY = [
    ("sin", np.sin, A, np.cos), ("cos", np.cos, A, lambda x: -np.sin(x)),
    ("tan", np.tan, A, lambda x: 1 / np.cos(x) ** 2),
    ("arcsin", np.arcsin, A / 2, lambda x: 1 / np.sqrt(1 - x * x)),
    ("arccos", np.arccos, A / 2, lambda x: -1 / np.sqrt(1 - x * x)),
    ("arctan", np.arctan, A, lambda x: 1 / (1 + x * x)),
    ("sinh", np.sinh, A, np.cosh), ("cosh", np.cosh, A, np.sinh),
    ("tanh", np.tanh, A, lambda x: 1 - np.tanh(x) ** 2),
    ("arcsinh", np.arcsinh, A, lambda x: 1 / np.sqrt(1 + x * x)),
    ("arccosh", np.arccosh, A + 1.2, lambda x: 1 / np.sqrt(x * x - 1)),
    ("arctanh", np.arctanh, A / 2, lambda x: 1 / (1 - x * x)),
    ("exp", np.exp, A, np.exp), ("exp2", np.exp2, A, lambda x: np.log(2) * np.exp2(x)),
    ("expm1", np.expm1, A, np.exp), ("log", np.log, A, lambda x: 1 / x),
    ("log2", np.log2, A, lambda x: 1 / (x * np.log(2))),
    ("log10", np.log10, A, lambda x: 1 / (x * np.log(10))),
    ("log1p", np.log1p, A, lambda x: 1 / (1 + x)), ("sqrt", np.sqrt, A, lambda x: 0.5 / np.sqrt(x)),
    ("cbrt", np.cbrt, A, lambda x: np.cbrt(x) / (3 * x)), ("square", np.square, A, lambda x: 2 * x),
    ("reciprocal", np.reciprocal, A, lambda x: -1 / x ** 2),
    ("negative", np.negative, A, lambda x: -np.ones_like(x)),
    ("positive", np.positive, A, np.ones_like), ("abs", np.abs, C, np.sign), ("fabs", np.fabs, C, np.sign),
    ("deg2rad", np.deg2rad, A, lambda x: np.full_like(x, np.pi / 180)),
    ("rad2deg", np.rad2deg, A, lambda x: np.full_like(x, 180 / np.pi)),
    ("sinc", np.sinc, A, None), ("i0", np.i0, A, None),
    ("sign * x", lambda x: np.sign(x) * x, C, np.sign),
    ("floor + x", lambda x: np.floor(3 * x) + x, A, np.ones_like),
    ("rint * x", lambda x: np.rint(3 * x) * x, A + 0.05, lambda x: np.rint(3 * x)),
    ("round(x, 1) + x", lambda x: np.round(x, 1) + x, A + 0.02, np.ones_like),
]
for name, fn, x, d in UNARY:
    add("np." + name, fn, x, d=d)

# ----------------------------------------------------------------------------- binary ufuncs, both sides
BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("power", np.power), ("float_power", np.float_power), ("arctan2", np.arctan2), ("hypot", np.hypot),
    ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2), ("maximum", np.maximum),
    ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin), ("fmod", np.fmod), ("mod", np.mod),
    ("copysign", np.copysign),
]
P = np.array([0.4, 1.3, 0.6])            # the constant second operand (positive)
for name, fn in BINARY:
    add("np.%s(x, c)" % name, lambda x, fn=fn: fn(x, P), A)
    add("np.%s(c, x)" % name, lambda x, fn=fn: fn(P, x), A)
add("np.ldexp", lambda x: np.ldexp(x, 2), A, d=lambda x: np.full_like(x, 4.0))
add("np.heaviside * x", lambda x: np.heaviside(x, 0.5) * x, C, lambda x: np.heaviside(x, 0.5))
add("np.power(x, x)", lambda x: np.power(x, x), A, d=lambda x: x ** x * (np.log(x) + 1))
add("operator ** array", lambda x: x ** 2.5 + 2.0 ** x, A)
add("x @ x", lambda x: x @ x, A, ref=lambda x, v: 2 * x @ v)
add("matrix @ vector", lambda x: M @ x, A, ref=lambda x, v: M @ v)

# ----------------------------------------------------------------------------- reductions
add("np.sum", np.sum, M)
add("np.sum axis", lambda x: np.sum(x, axis=0), M)
add("np.sum keepdims", lambda x: np.sum(x * x, axis=1, keepdims=True), M)
add("np.prod", np.prod, A, ref=lambda x, v: np.prod(x) * np.sum(v / x))
add("np.prod axis", lambda x: np.prod(x, axis=1), M)
add("np.mean", np.mean, M)
add("np.mean axis", lambda x: np.mean(x, axis=1), M)
add("np.average weights", lambda x: np.average(x, weights=[1.0, 2.0, 3.0]), A)
add("np.average differentiated weights", lambda w: np.average(A, weights=w), P)
add("np.std", np.std, B)
add("np.std ddof", lambda x: np.std(x, ddof=1), B)
add("np.var", np.var, B)
add("np.var axis", lambda x: np.var(x, axis=0), M)
add("np.max", np.max, B)
add("np.min axis", lambda x: np.min(x, axis=1), M)
add("np.amax", np.amax, B)
add("np.ptp", np.ptp, B)
add("np.cumsum", np.cumsum, B)
add("np.cumsum axis", lambda x: np.cumsum(x, axis=1), M)
add("np.cumprod", np.cumprod, B)
add("np.diff", np.diff, B)
add("np.diff n=2", lambda x: np.diff(x, n=2), B)
add("np.ediff1d", np.ediff1d, B)
add("np.gradient", np.gradient, B)
add("np.trapezoid", lambda x: np.trapezoid(x ** 2, dx=0.5), B)
add("np.trace", np.trace, M)
add("np.dot", lambda x: np.dot(x, P), A)
add("np.vdot", lambda x: np.vdot(x, x), A)
add("np.inner", lambda x: np.inner(x, P), A)
add("np.outer", lambda x: np.outer(x, P), A)
add("np.multiply.outer", lambda x: np.multiply.outer(x, x), A)
add("np.tensordot", lambda x: np.tensordot(x, M, axes=1), A)
add("np.einsum ij,j", lambda x: np.einsum("ij,j->i", M, x), A)
add("np.einsum ii", lambda x: np.einsum("ii", x), M)
add("np.einsum ij,ij", lambda x: np.einsum("ij,ij->", x, x), M)
add("np.kron", lambda x: np.kron(x, P), A)
add("np.cross", lambda x: np.cross(x, P), A)
add("np.add.reduce", lambda x: np.add.reduce(x * x), A)
add("np.multiply.reduce", lambda x: np.multiply.reduce(x), A)
add("np.add.accumulate", lambda x: np.add.accumulate(x * x), A)
add("np.maximum.reduce", lambda x: np.maximum.reduce(x), B)
add("np.logaddexp.reduce", lambda x: np.logaddexp.reduce(x), A)
add("np.cov", np.cov, M)
add("np.cov(x, y)", lambda x: np.cov(x, P), A)
add("np.corrcoef", lambda x: np.corrcoef(x, P)[0, 1], A)
add("np.count_nonzero * x", lambda x: np.count_nonzero(x > 0.5) * x, A, d=lambda x: np.full_like(x, 2.0))

# ----------------------------------------------------------------------------- sorting, quantiles, nan*
add("np.sort", np.sort, B)
add("np.sort axis 0", lambda x: np.sort(x, axis=0), M)
add("ndarray.sort on a copy", lambda x: _sorted_copy(x), B)
add("np.argsort indexing", lambda x: x[np.argsort(x)], B)
add("np.partition", lambda x: np.partition(x, 2), B)
add("np.median odd", lambda x: np.median(x[:3]), B)
add("np.median even", np.median, B)
add("np.median axis", lambda x: np.median(x, axis=0), M)
add("np.percentile", lambda x: np.percentile(x, 30.0), B)
add("np.quantile", lambda x: np.quantile(x, [0.25, 0.8]), B)
add("np.nanmedian", lambda x: np.nanmedian(np.where(x > 1.0, np.nan, x)), B)
add("np.nanpercentile", lambda x: np.nanpercentile(x, 40.0), B)
add("np.nansum", lambda x: np.nansum(np.where(x > 1.0, np.nan, x) ** 2), B)
add("np.nanmean", lambda x: np.nanmean(np.where(x > 1.0, np.nan, x) ** 2), B)
add("np.nanstd", lambda x: np.nanstd(np.where(x > 1.0, np.nan, x)), B)
add("np.nanvar", lambda x: np.nanvar(x), B)
add("np.nanmax", lambda x: np.nanmax(x), B)
add("np.nanmin", lambda x: np.nanmin(x), B)
add("np.nanprod", lambda x: np.nanprod(x), B)
add("np.nancumsum", lambda x: np.nancumsum(x), B)
add("np.nan_to_num", lambda x: np.nan_to_num(np.log(x - 0.4)), B)
add("np.max of a list", lambda x: max(list(x)), B)
add("np.unique values", lambda x: np.unique(x), B)
add("np.lexsort indexing", lambda x: x[np.lexsort((x,))], B)

# ----------------------------------------------------------------------------- shapes, joining, indexing
add("np.reshape", lambda x: np.reshape(x, (3, 3)).T, M.ravel())
add("np.transpose", np.transpose, M)
add("np.moveaxis keywords", lambda x: np.moveaxis(x, source=0, destination=1), M)
add("np.swapaxes", lambda x: np.swapaxes(x, 0, 1), M)
add("np.flip", np.flip, A)
add("np.roll", lambda x: np.roll(x, 1), B)
add("np.rot90", np.rot90, M)
add("np.tile", lambda x: np.tile(x, 2), A)
add("np.repeat", lambda x: np.repeat(x, 2), A)
add("np.concatenate", lambda x: np.concatenate([x, x * x]), A)
add("np.stack", lambda x: np.stack([x, 2 * x]), A)
add("np.vstack", lambda x: np.vstack([x, P]), A)
add("np.hstack", lambda x: np.hstack([x, P]), A)
add("np.column_stack", lambda x: np.column_stack([x, x ** 2]), A)
add("np.split", lambda x: np.split(x, 2)[1], B)
add("np.array_split", lambda x: np.array_split(x, 3)[0], B)
add("np.squeeze", lambda x: np.squeeze(x[None, :]), A)
add("np.expand_dims", lambda x: np.expand_dims(x, 0), A)
add("np.broadcast_to", lambda x: np.broadcast_to(x, (2, 3)) * 1.0, A)
add("np.broadcast_arrays", lambda x: np.broadcast_arrays(x, M)[0] * M, A)
add("np.pad", lambda x: np.pad(x, 1), A)
add("np.pad reflect", lambda x: np.pad(x, 2, mode="reflect"), A)
add("np.triu", np.triu, M)
add("np.tril", np.tril, M)
add("np.diag", np.diag, A)
add("np.diagonal", np.diagonal, M)
add("np.take", lambda x: np.take(x, [2, 0, 2]), B)
add("np.take_along_axis", lambda x: np.take_along_axis(x, np.array([[0], [2], [1]]), axis=1), M)
add("np.put", lambda x: _put(x), B)
add("np.put_along_axis", lambda x: _put_along_axis(x), M)
add("np.place", lambda x: _place(x), B)
add("np.putmask", lambda x: _putmask(x), B)
add("np.fill_diagonal", lambda x: _fill_diagonal(x), M)
add("np.copyto", lambda x: _copyto(x), A)
add("np.select", lambda x: np.select([x < 0.5, x >= 0.5], [x * x, 3 * x]), A)
add("np.piecewise", lambda x: np.piecewise(x, [x < 0.5, x >= 0.5], [lambda t: t * t, lambda t: 3 * t]), A)
add("np.where", lambda x: np.where(x > 0.5, x * x, -x), A)
add("np.clip", lambda x: np.clip(x, 0.5, 1.0), A)
add("ndarray.clip", lambda x: x.clip(0.5, 1.0), A)
add("np.append", lambda x: np.append(x, 2 * x), A)
add("np.insert", lambda x: np.insert(x, 1, x[0] * 5), A)
add("np.delete", lambda x: np.delete(x, 1), A)
add("np.atleast_2d", np.atleast_2d, A)
add("np.ravel", np.ravel, M)
add("ndarray.flatten", lambda x: x.flatten(), M)
add("ndarray.flat", lambda x: np.array([v * v for v in x.flat]), A)
add("ndarray.flat index", lambda x: x.flat[4] * x.flat[0], M)
add("np.nditer", lambda x: _nditer_sum(x), A)
add("np.ndenumerate", lambda x: sum(i[0] * v for i, v in np.ndenumerate(x)), A)
add("np.r_", lambda x: np.r_[x, 2 * x], A)
add("np.c_", lambda x: np.c_[x, P], A)
add("np.meshgrid", lambda x: np.meshgrid(x, P)[0] * np.meshgrid(x, P)[1], A)
add("fancy indexing", lambda x: x[[0, 2, 2]] * x[np.array([1, 1, 0])], A)
add("boolean mask", lambda x: x[x > 0.5] ** 2, A)
add("slice assignment", lambda x: _slice_assign(x), A)
add("augmented slice", lambda x: _augmented(x), A)

# ----------------------------------------------------------------------------- out=, in place
add("np.add out=", lambda x: _out(np.add, x, x), A)
add("np.sin out=", lambda x: _out(np.sin, x), A)
add("np.multiply out=self", lambda x: _out_self(x), A)
add("np.cumsum out=", lambda x: _cumsum_out(x), A)
add("np.dot out=", lambda x: _dot_out(x), A)
add("np.add.at", lambda x: _add_at(x), A)
add("ndarray +=", lambda x: _iadd(x), A)

# ----------------------------------------------------------------------------- constructors
add("np.array from list", lambda x: np.array([x, 2 * x, 1.0]), X)
add("np.array nested", lambda x: np.array([[x, 1.0], [x * x, 2.0]]), X)
add("np.asarray of a list", lambda x: np.asarray([x, x * x]), X)
add("np.fromiter", lambda x: np.fromiter((x * k for k in range(3)), dtype=float), X)
add("np.full", lambda x: np.full(3, x), X)
add("np.full_like", lambda x: np.full_like(P, x) * P, X)
add("np.linspace(0, x)", lambda x: np.linspace(0.0, x, 4), X)
add("np.linspace(x, 2)", lambda x: np.linspace(x, 2.0, 4), X)
add("np.arange * x", lambda x: np.arange(3) * x, X)
add("np.logspace", lambda x: np.logspace(0.0, x, 3), X)
add("np.geomspace", lambda x: np.geomspace(1.0, 1.0 + x, 3), X)
add("zeros then assign", lambda x: _zeros_assign(x), X)
add("np.float64(x)", lambda x: np.float64(x) ** 2, X)
add("np.vectorize", lambda x: np.vectorize(lambda t: t * t + math.sin(t))(x), A)
add("np.frompyfunc", lambda x: np.frompyfunc(lambda t: t * t, 1, 1)(x).astype(float), A)
add("np.apply_along_axis", lambda x: np.apply_along_axis(lambda r: r @ r, 1, x), M)
add("x + constant array", lambda x: x + C, X)
add("np.sum(x + c)", lambda x: np.sum(x + C), X)
add("ndarray.tolist", lambda x: sum(v * v for v in x.tolist()), A)
add("ndarray.item", lambda x: x.item(1) * x[0], A)
add("float(x[0])", lambda x: float(x[0]) * x[1], A)
add("builtin sum of an array", lambda x: sum(x * x), A)
add("math.fsum of an array", lambda x: math.fsum(x * x), A)

# ----------------------------------------------------------------------------- ndarray methods
add("ndarray.sum", lambda x: x.sum(axis=0), M)
add("ndarray.prod", lambda x: x.prod(), A)
add("ndarray.mean", lambda x: x.mean(), M)
add("ndarray.std", lambda x: x.std(), B)
add("ndarray.var", lambda x: x.var(), B)
add("ndarray.max", lambda x: x.max(), B)
add("ndarray.cumsum", lambda x: x.cumsum(), B)
add("ndarray.dot", lambda x: x.dot(M), A)
add("ndarray.T", lambda x: x.T @ P, M)
add("ndarray.reshape", lambda x: x.reshape(-1)[::2], M)
add("ndarray.astype", lambda x: x.astype(np.float32).astype(float) * 0 + x.astype(float) ** 2, A)
add("ndarray.conj", lambda x: (x.conj() * x).real, A)
add("ndarray.ptp", lambda x: np.max(x) - np.min(x), B)
add("ndarray.trace", lambda x: x.trace(), M)
add("ndarray.diagonal", lambda x: x.diagonal() ** 2, M)
add("ndarray.copy then write", lambda x: _copy_write(x), A)

# ----------------------------------------------------------------------------- linalg
S = M @ M.T
add("np.linalg.inv", np.linalg.inv, M, ref=lambda x, v: -np.linalg.inv(x) @ v @ np.linalg.inv(x))
add("np.linalg.det", np.linalg.det, M, ref=lambda x, v: np.linalg.det(x) * np.trace(np.linalg.solve(x, v)))
add("np.linalg.slogdet", lambda x: np.linalg.slogdet(x)[1], M)
add("np.linalg.solve", lambda x: np.linalg.solve(x, P), M)
add("np.linalg.solve rhs", lambda b: np.linalg.solve(M, b), A)
add("np.linalg.eigh values", lambda x: np.linalg.eigh(x + x.T)[0], M)
add("np.linalg.eigvalsh", lambda x: np.linalg.eigvalsh(x @ x.T), M)
add("np.linalg.eigvals", lambda x: np.sort(np.linalg.eigvals(x).real), M)
add("np.linalg.svd values", lambda x: np.linalg.svd(x)[1], M)
add("np.linalg.svdvals-free norm 2", lambda x: np.linalg.norm(x, 2), M)
add("np.linalg.cholesky", lambda x: np.linalg.cholesky(x @ x.T), M)
add("np.linalg.qr R", lambda x: np.abs(np.linalg.qr(x)[1]), M)
add("np.linalg.lstsq", lambda x: np.linalg.lstsq(np.vstack([x, P]).T, C, rcond=None)[0], A)
add("np.linalg.pinv", np.linalg.pinv, M)
add("np.linalg.matrix_power", lambda x: np.linalg.matrix_power(x, 3), M)
add("np.linalg.multi_dot", lambda x: np.linalg.multi_dot([x, M, x]), M)
add("np.linalg.norm", np.linalg.norm, A)
add("np.linalg.norm fro", lambda x: np.linalg.norm(x, "fro"), M)
add("np.linalg.norm ord 1", lambda x: np.linalg.norm(x, 1), C)
add("np.linalg.norm axis", lambda x: np.linalg.norm(x, axis=1), M)
add("np.linalg.norm of a list", lambda x: np.linalg.norm([x, 2.0 * x, 1.0]), X)
add("np.linalg.cond", lambda x: np.linalg.cond(x), S)
add("np.linalg.tensorsolve", lambda b: np.linalg.tensorsolve(M, b), A)

# ----------------------------------------------------------------------------- fft
add("np.fft.fft", np.fft.fft, B)
add("np.fft.ifft", np.fft.ifft, B)
add("np.fft.rfft", np.fft.rfft, B)
add("np.fft.irfft", lambda x: np.fft.irfft(np.fft.rfft(x) * np.array([1.0, 0.5, 0.25])), B)
add("np.fft.fft2", np.fft.fft2, M)
add("np.fft.fftshift", np.fft.fftshift, B)
add("abs(np.fft.fft)", lambda x: np.abs(np.fft.fft(x)), B)
add("np.fft.fft complex input", np.fft.fft, B + 0.5j * B[::-1])

# ----------------------------------------------------------------------------- polynomials, interp, convolve
add("np.polyval in x", lambda x: np.polyval([1.0, -2.0, 0.5], x), A)
add("np.polyval coefficients", lambda c: np.polyval(c, 0.7), A)
add("np.poly1d", lambda x: np.poly1d([1.0, -2.0, 0.5])(x), A)
add("np.poly1d coefficients", lambda c: np.poly1d(c)(0.7), A)
add("np.poly1d.deriv", lambda c: np.poly1d(c).deriv()(0.7), A)
add("np.polyfit", lambda y: np.polyfit([0.0, 1.0, 2.0, 3.0], y, 2), B)
add("np.polyder", lambda c: np.polyder(c), A)
add("np.polyint", lambda c: np.polyint(c), A)
add("np.polymul", lambda c: np.polymul(c, P), A)
add("np.roots", lambda c: np.sort(np.roots(np.array([1.0, c[0] * -3, c[1]])).real), np.array([1.2, 0.5]))
add("Polynomial", lambda c: np.polynomial.Polynomial(c)(0.7), A)
add("polynomial.polyval", lambda x: np.polynomial.polynomial.polyval(x, [1.0, 2.0, 0.5]), A)
add("chebyshev.chebval", lambda x: np.polynomial.chebyshev.chebval(x, [1.0, 2.0, 0.5]), A)
add("legendre.legval", lambda c: np.polynomial.legendre.legval(0.3, c), A)
add("hermite.hermval", lambda x: np.polynomial.hermite.hermval(x, [1.0, 2.0, 0.5]), A)
add("Chebyshev.fit", lambda y: np.polynomial.Chebyshev.fit([0.0, 1.0, 2.0, 3.0], y, 2).coef, B)
add("np.interp at x", lambda x: np.interp(x, [0.0, 0.5, 1.0, 1.5], [0.0, 1.0, 0.5, 2.0]), A)
add("np.interp values", lambda y: np.interp([0.2, 0.9], [0.0, 0.5, 1.0, 1.5], y), B)
add("np.convolve", lambda x: np.convolve(x, P), A)
add("np.convolve same", lambda x: np.convolve(x, x, mode="same"), A)
add("np.correlate", lambda x: np.correlate(x, P, mode="full"), A)
add("np.histogram weights", lambda w: np.histogram([0.1, 0.4, 0.8, 0.9], bins=2, weights=w)[0], B)
add("np.bincount weights", lambda w: np.bincount([0, 1, 1, 2], weights=w), B)

# ----------------------------------------------------------------------------- stride tricks
add("as_strided windows",
    lambda x: as_strided(x, shape=(3, 2), strides=(x.strides[0], x.strides[0])).sum(axis=1), B)
add("sliding_window_view", lambda x: sliding_window_view(x, 2).prod(axis=1), B)
add("sliding_window_view 2d", lambda x: sliding_window_view(x, (2, 2)).sum(axis=(2, 3)), M)

# ----------------------------------------------------------------------------- complex arrays
ZA = np.array([0.3 + 0.4j, -0.7 + 0.2j])
add("np.exp complex", np.exp, ZA, d=np.exp)
add("np.abs complex", np.abs, ZA)
add("np.angle", np.angle, ZA)
add("np.real", lambda z: np.real(z * z), ZA)
add("np.imag", lambda z: np.imag(z * z), ZA)
add("np.conj", lambda z: np.conj(z) * 2, ZA)
add("complex array from real", lambda x: np.abs(x + 1j * x[::-1]) ** 2, A)


# ----------------------------------------------------------------------------- helpers
def _sorted_copy(x):
    y = x.copy()
    y.sort()
    return y


def _put(x):
    y = np.zeros(5)
    np.put(y, [0, 3], x[:2] * 2)
    return y + x.sum()


def _put_along_axis(x):
    y = np.ones_like(x)
    np.put_along_axis(y, np.array([[0], [1], [2]]), x[:, :1] ** 2, axis=1)
    return y


def _place(x):
    y = np.ones(4)
    np.place(y, x > 0.6, x[x > 0.6] * 3)
    return y * x


def _putmask(x):
    y = x.copy()
    np.putmask(y, y > 0.6, y * y)
    return y


def _fill_diagonal(x):
    y = x.copy()
    np.fill_diagonal(y, x[0, 1] * 2)
    return y


def _copyto(x):
    y = np.zeros(3)
    np.copyto(y, x * x)
    return y


def _nditer_sum(x):
    total = 0.0
    for v in np.nditer(x):
        total = total + v * v
    return total


def _slice_assign(x):
    y = np.zeros(5)
    y[1:4] = x * x
    y[0] = x[2]
    return y


def _augmented(x):
    y = x.copy()
    y[1:] += y[:-1] * 2
    return y


def _out(fn, *args):
    buf = np.empty(3)
    fn(*args, out=buf)
    return buf


def _out_self(x):
    y = x.copy()
    np.multiply(y, y, out=y)
    return y


def _cumsum_out(x):
    buf = np.empty(3)
    np.cumsum(x * x, out=buf)
    return buf


def _dot_out(x):
    buf = np.empty(3)
    np.dot(M, x, out=buf)
    return buf


def _add_at(x):
    y = np.zeros(2)
    np.add.at(y, [0, 1, 0], x)
    return y


def _iadd(x):
    y = np.ones(3)
    y += x * x
    y *= x
    return y


def _zeros_assign(x):
    y = np.zeros(3)
    y[0] = x
    y[2] = x * x
    return y


def _copy_write(x):
    y = x.copy()
    y[0] = y[1] * y[2]
    return y


# ----------------------------------------------------------------------------- NumPy 2 and composite functions
def _flat_write(x):
    y = np.zeros((2, 3)).T
    y.flat[[0, 4]] = x[:2] ** 2
    return y


if hasattr(np, "vecdot"):  # (NumPy 2.0+; matvec and vecmat 2.2+; cumulative_sum and unstack 2.1+)
    add("np.vecdot", lambda x: np.vecdot(M, x), A)
if hasattr(np, "matvec"):
    add("np.matvec", lambda x: np.matvec(M, x * x), A)
    add("np.vecmat", lambda x: np.vecmat(x, M), A)
add("np.divmod remainder", lambda x: np.divmod(5 * x, 0.65)[1], A)
add("np.modf", lambda x: np.modf(3 * x)[0], A)
add("np.compress", lambda x: np.compress([True, False, True], x) ** 2, A)
add("np.choose", lambda x: np.choose([1, 0, 1], [x, x ** 2]), A)
add("np.block", lambda x: np.block([[x, x ** 2], [x[::-1], x * 3]]), A)
add("np.diagflat", lambda x: np.diagflat(x, k=1).sum(axis=0), A)
add("plain.flat[k] = x", _flat_write, A)
if hasattr(np, "unstack"):
    add("np.cumulative_sum", lambda x: np.cumulative_sum(x * x, include_initial=True), A)
    add("np.unstack", lambda x: np.unstack(np.outer(x, x))[1], A)
