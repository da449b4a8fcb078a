"""Functions that mean something to reverse mode and nothing elsewhere.

Outside a differentiation -- and under forward mode -- they are what they look
like (``checkpoint(f, *args)`` is ``f(*args)``, ``hook(fn, x)`` is ``x``); the
reverse-mode context takes them over as primitives.  This module is deliberately
*not* declared opaque to overdub, so that contexts without a rule for them step
into these bodies like any user code.
"""


def checkpoint(f, *args):
    """``f(*args)``; under ``gradient``/``pullback`` its intermediate values are not kept
    but recomputed on the reverse pass (trading time for memory on long computations)."""
    return f(*args)


def hook(fn, x):
    """``x``; under reverse mode the gradient flowing back into ``x`` is replaced by
    ``fn(gradient)`` (``hook(operator.neg, x)`` reverses it, ``hook(print, x)`` shows it...
    print returns None, so use ``lambda g: (print(g), g)[1]``)."""
    return x


def stop_gradient(x):
    """``x``, declared constant: no derivative flows through it, in any enclosing
    differentiation (JAX's ``stop_gradient``).  ``x`` may be a number, an array or a
    list/tuple/dict/dataclass of them.  This is how to drop a derivative on purpose --
    for example to pass a value to a C function that has no rule::

        capstan.gradient(lambda x: x * ext.c_func(capstan.stop_gradient(x)), 2.0)
    """
    return x
