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
