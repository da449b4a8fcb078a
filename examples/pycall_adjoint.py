"""An adjoint that calls another framework inside a capstan gradient (the seeds' pycall).

The reverse rule of `softplus_sum` is computed by PyTorch (or JAX) autograd.  Runs
when one of them is installed; otherwise says so and exits cleanly.

    python examples/pycall_adjoint.py
"""
import numpy as np

import capstan


def softplus_sum(x):
    return float(np.sum(np.log1p(np.exp(x))))


def torch_adjoint():
    import torch

    @capstan.adjoint(softplus_sum)
    def _(x):
        t = torch.tensor(np.asarray(x), requires_grad=True)
        y = torch.nn.functional.softplus(t).sum()
        (g,) = torch.autograd.grad(y, t)
        return float(y), lambda dy: (dy * g.numpy(),)

    return "torch"


def jax_adjoint():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    @capstan.adjoint(softplus_sum)
    def _(x):
        y, pull = jax.vjp(lambda v: jnp.sum(jax.nn.softplus(v)), jnp.asarray(x))
        return float(y), lambda dy: (np.asarray(pull(dy)[0]),)

    return "jax"


def main():
    for install in (torch_adjoint, jax_adjoint):
        try:
            used = install()
            break
        except ImportError:
            continue
    else:
        print("neither torch nor jax is installed: nothing to show (skipped)")
        return
    x = np.array([-1.0, 0.0, 2.0])
    (g,) = capstan.gradient(lambda v: 3.0 * softplus_sum(v * 2.0), x)
    expected = 6.0 / (1.0 + np.exp(-2.0 * x))
    print("gradient through a %s adjoint:" % used, g)
    print("matches the closed form:", bool(np.allclose(g, expected)))


if __name__ == "__main__":
    main()
