"""The HM-LSTM cell update (Chung et al., "Hierarchical Multiscale Recurrent Neural
Networks", 2017) as an elementwise NumPy kernel, run unmodified on the GPU by
``capstan.GPUCtx``: every ``np.*`` call becomes CuPy's, arrays move to the device and
the results come back as NumPy.  Without CuPy or a GPU it runs on NumPy (the same
substitution, with NumPy as the target module) and says so.

    python examples/hmlstm_gpu.py [N]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import overdub  # noqa: E402
from capstan.gpu import GPUCtx  # noqa: E402


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def hmlstm_kernel(f, i, o, g, z, zb, c, h):
    """One HM-LSTM step, elementwise.  f, i, o, g: gate pre-activations; z: the
    boundary detected by this layer at t-1; zb: the boundary from the layer below at
    t; c, h: the previous cell and hidden state.  Returns the new (c, h):

    * FLUSH (z == 1):            c = sigmoid(i) * tanh(g)
    * UPDATE (z == 0, zb == 1):  c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    * COPY (z == 0, zb == 0):    c and h unchanged
    and otherwise h = sigmoid(o) * tanh(c).
    """
    flush = z == 1.0
    copy = (z == 0.0) & (zb == 0.0)
    write = sigmoid(i) * np.tanh(g)
    c_new = np.where(flush, write, np.where(copy, c, sigmoid(f) * c + write))
    h_new = np.where(copy, h, sigmoid(o) * np.tanh(c_new))
    return c_new, h_new


def inputs(n, dtype=np.float32, seed=0):
    """Random gates and states, and boundaries that exercise all three branches."""
    rng = np.random.default_rng(seed)
    f, i, o, g, c, h = (rng.standard_normal(n).astype(dtype) for _ in range(6))
    z = (rng.random(n) < 0.3).astype(dtype)
    zb = (rng.random(n) < 0.5).astype(dtype)
    return f, i, o, g, z, zb, c, h


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    args = inputs(n)
    ctx = GPUCtx()
    where = "CuPy on the GPU" if ctx.on_gpu else "NumPy (no CuPy or no GPU: the substitution targets NumPy)"
    print("GPUCtx runs on:", where)
    c_dev, h_dev = overdub.overdub(ctx, hmlstm_kernel, *args)
    c_ref, h_ref = hmlstm_kernel(*args)
    print("n = %d; results are %s, %s" % (n, type(c_dev).__name__, c_dev.dtype))
    print("max |difference| from plain NumPy: c %.3g, h %.3g"
          % (np.max(np.abs(c_dev - c_ref)), np.max(np.abs(h_dev - h_ref))))
    assert np.allclose(c_dev, c_ref, atol=1e-5) and np.allclose(h_dev, h_ref, atol=1e-5)
    print("substituted calls:", dict(sorted(ctx.substituted.items())), "arrays moved:", ctx.moved)
    print("plain NumPy:                %8.3f ms" % (1e3 * best_of(lambda: hmlstm_kernel(*args))))
    label = "GPUCtx, with transfers:    " if ctx.on_gpu else "GPUCtx on NumPy (overhead):"
    print("%s %8.3f ms" % (label, 1e3 * best_of(lambda: overdub.overdub(ctx, hmlstm_kernel, *args))))
    if ctx.on_gpu:
        import cupy

        dev_args = [cupy.asarray(a) for a in args]
        keep = GPUCtx(to_host=False)

        def on_device():
            overdub.overdub(keep, hmlstm_kernel, *dev_args)
            cupy.cuda.Device().synchronize()

        on_device()
        print("GPUCtx, data on the device: %8.3f ms" % (1e3 * best_of(on_device)))
