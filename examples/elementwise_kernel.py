"""Mixed mode: a scalar material law, written with math and an if, applied to every
element of an array and differentiated as one node (capstan.elementwise).

    python examples/elementwise_kernel.py

A hyperelastic-like energy density per element (a stiffening law with a kink at the
yield strain), summed over a bar of 10^4 elements; its gradient is the internal force,
its Hessian (diagonal here) the tangent stiffness.  The same law through np.vectorize
gives the same numbers.
"""
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import capstan  # noqa: E402

YIELD = 0.02


@capstan.elementwise
def energy(strain, stiffness):
    """Energy density of one element: quadratic, then logarithmic past the yield strain."""
    e = abs(strain)
    if e < YIELD:
        return 0.5 * stiffness * e * e
    return stiffness * YIELD * (0.5 * YIELD + math.log1p((e - YIELD) / YIELD) * YIELD)


def total_energy(strains, stiffness):
    return np.sum(energy(strains, stiffness))


def main():
    rng = np.random.default_rng(1)
    n = 10_000
    strains = rng.normal(0.0, 0.02, n)
    stiffness = rng.uniform(1.0, 2.0, n)

    force, dk = capstan.gradient(total_energy, strains, stiffness)
    law = energy.__wrapped__
    loop = np.array([capstan.gradient(law, float(e), float(k))[0]
                     for e, k in zip(strains[:200], stiffness[:200])])
    print("elements:", n, " paths recorded:", sum(len(p) for p in energy.paths.values()))
    print("force matches the per-element gradients:", bool(np.allclose(force[:200], loop, rtol=1e-12)))
    print("np.vectorize gives the same force:",
          bool(np.allclose(capstan.gradient(
              lambda s: np.sum(np.vectorize(law)(s, stiffness)), strains)[0], force, rtol=1e-12)))

    H = capstan.hessian(lambda s: total_energy(s, stiffness[:50]), strains[:50])
    ref = [capstan.hessian(lambda e, k=k: law(e, k), float(e)) for e, k in zip(strains[:50], stiffness[:50])]
    print("tangent stiffness is diagonal and matches:",
          bool(np.allclose(H, np.diag(ref), rtol=1e-10, atol=1e-12)))

    t = time.perf_counter()
    for _ in range(10):
        capstan.gradient(total_energy, strains, stiffness)
    t_grad = (time.perf_counter() - t) / 10
    t = time.perf_counter()
    for _ in range(10):
        sum(law(e, k) for e, k in zip(strains.tolist(), stiffness.tolist()))
    t_loop = (time.perf_counter() - t) / 10
    print("gradient: %.2f ms; plain Python loop for the values only: %.2f ms" % (t_grad * 1e3, t_loop * 1e3))


if __name__ == "__main__":
    main()
