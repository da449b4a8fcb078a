"""NumPy's location-scale samplers differentiated in their parameters (``defimpl``): with
the generator's state fixed, ``rng.normal(loc, scale)`` is ``loc + scale * z`` for the
standard draw ``z`` NumPy takes from the same stream (``standard_normal``, ``random``,
``standard_exponential``), so each runs as that expression -- the same numbers, and the
derivative of the sample in ``loc`` and ``scale`` (the reparameterization, or pathwise,
derivative).  ``Generator`` and the legacy ``RandomState`` alike."""
import math

import numpy as np

from .registry import defimpl


def _shape(size, *parameters):
    """The shape of the draws: ``size``, else the parameters' broadcast shape."""
    if size is not None:
        return size
    return np.broadcast_shapes(*(np.shape(p) for p in parameters))


def _draw(method, shape):
    """``method(shape)``, or ``method()`` (a Python float) for a scalar draw."""
    return method() if shape == () else method(shape)


def _normal(self, loc=0.0, scale=1.0, size=None):
    """``normal(loc, scale, size)``: ``loc + scale * standard_normal``."""
    return loc + scale * _draw(self.standard_normal, _shape(size, loc, scale))


def _lognormal(self, mean=0.0, sigma=1.0, size=None):
    """``lognormal(mean, sigma, size)``: ``exp(normal(mean, sigma, size))`` (a Python
    float for a scalar draw, as NumPy returns)."""
    z = _normal(self, mean, sigma, size)
    return np.exp(z) if np.ndim(z) else math.exp(z)


def _exponential(self, scale=1.0, size=None):
    """``exponential(scale, size)``: ``scale * standard_exponential``."""
    return scale * _draw(self.standard_exponential, _shape(size, scale))


def _uniform_with(unit):
    def uniform(self, low=0.0, high=1.0, size=None):
        """``uniform(low, high, size)``: ``low + (high - low) * (a uniform draw on [0, 1))``."""
        return low + (high - low) * _draw(getattr(self, unit), _shape(size, low, high))
    return uniform


#: the samplers given equivalents here (tests/test_random_rules.py checks them; their
#: unbound methods must not be called on anything but a generator: NumPy does not check)
FUNCTIONS = []
for _cls, _unit in ((np.random.Generator, "random"), (np.random.RandomState, "random_sample")):
    for _f, _impl in ((_cls.normal, _normal), (_cls.lognormal, _lognormal), (_cls.exponential, _exponential),
                      (_cls.uniform, _uniform_with(_unit))):
        defimpl(_f, _impl)
        FUNCTIONS.append(_f)
