"""checkpoint(): recompute a long computation on the reverse pass instead of storing it.

    python examples/checkpoint_memory.py
"""
import tracemalloc

import numpy as np

import capstan


def step(x):
    return np.tanh(x * 1.01 + 0.1)


def segment(x):
    for _ in range(20):
        x = step(x)
    return x


def plain_loss(x):
    for _ in range(10):
        x = segment(x)
    return np.sum(x * x)


def checkpointed_loss(x):
    for _ in range(10):
        x = capstan.checkpoint(segment, x)
    return np.sum(x * x)


def peak(f, x):
    tracemalloc.start()
    g = capstan.gradient(f, x)[0]
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return g, top


def main():
    x = np.linspace(-1.0, 1.0, 20_000)
    g1, m1 = peak(plain_loss, x)
    g2, m2 = peak(checkpointed_loss, x)
    print("same gradient:", bool(np.allclose(g1, g2)))
    print("peak memory without checkpoint: %.1f MB" % (m1 / 1e6))
    print("peak memory with checkpoint:    %.1f MB" % (m2 / 1e6))
    print("drop: %.1fx" % (m1 / m2))


if __name__ == "__main__":
    main()
