"""Functions that mean something to reverse mode and nothing elsewhere.

Outside a differentiation -- and under forward mode -- they are what they look
like (``checkpoint(f, *args)`` is ``f(*args)``, ``hook(fn, x)`` is ``x``); the
reverse-mode context takes them over as primitives.  This module is deliberately
*not* declared opaque to overdub, so that contexts without a rule for them step
into these bodies like any user code.
"""


from typing import Any, Callable, TypeVar

T = TypeVar("T")


def checkpoint(f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args)``; under ``gradient``/``pullback`` its intermediate values are not kept
    but recomputed on the reverse pass (trading time for memory on long computations).

    Without arguments, ``checkpoint(f)`` -- or ``@capstan.checkpoint`` above a ``def``
    -- returns ``f`` as a function whose every call is checkpointed this way
    (keyword arguments are passed by position, in both forms)::

        >>> import capstan
        >>> @capstan.checkpoint
        ... def segment(x):
        ...     return x * x * x
        >>> capstan.gradient(lambda x: segment(x) + x, 2.0)
        (13.0,)

    Raises:
        TypeError: ``f`` is not callable; a keyword argument that ``f`` cannot take by
            position.
    """
    if kwargs or not callable(f):
        args = positional(f, args, kwargs)
    if not args:
        return _checkpointed(f)
    return f(*args)


def positional(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``checkpoint(f, *args, **kwargs)``'s arguments as positions (the recorded segment
    is rerun by position), or a TypeError naming ``capstan.checkpoint``."""
    if not callable(f):
        raise TypeError("capstan.checkpoint(f, *args): f must be callable, got %r" % (f,))
    if not kwargs:
        return args
    import inspect

    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError):
        bound = None
    if bound is None or bound.kwargs:
        raise TypeError("capstan.checkpoint(%s): keyword arguments must be ones it can take "
                        "by position, got %s" % (getattr(f, "__name__", f), ", ".join(kwargs)))
    return bound.args


def _checkpointed(f: Callable[..., Any]) -> Callable[..., Any]:
    if not callable(f):
        raise TypeError("capstan.checkpoint(f): f must be callable, got %r" % (f,))
    import functools

    @functools.wraps(f)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return checkpoint(f, *positional(f, args, kwargs))

    return checkpointed


def hook(fn: Callable[[Any], Any], x: T) -> T:
    """``x``; under reverse mode the gradient flowing back into ``x`` is replaced by
    ``fn(gradient)`` (``hook(operator.neg, x)`` reverses it, ``hook(print, x)`` shows it...
    print returns None, so use ``lambda g: (print(g), g)[1]``).

    Example::

        >>> import capstan
        >>> capstan.gradient(lambda x: capstan.hook(lambda g: 2 * g, x) * 3.0, 1.0)
        (6.0,)

    Raises:
        TypeError: ``fn`` is not callable (checked on the forward pass, in and out of a
            differentiation); what ``fn`` raises on the backward pass propagates.
    """
    if not callable(fn):
        raise hook_error(fn)
    return x


def hook_error(fn: Any) -> TypeError:
    return TypeError("capstan.hook(fn, x): fn must be callable (it is called with the gradient "
                     "flowing into x), got %r" % (fn,))


def stop_gradient(x: T) -> T:
    """``x``, declared constant: no derivative flows through it, in any enclosing
    differentiation (JAX's ``stop_gradient``).  ``x`` may be a number, an array or a
    list/tuple/dict/dataclass of them.  This is how to drop a derivative on purpose --
    for example to pass a value to a C function that has no rule::

        capstan.gradient(lambda x: x * ext.c_func(capstan.stop_gradient(x)), 2.0)

    Example::

        >>> import capstan
        >>> capstan.gradient(lambda x: x * capstan.stop_gradient(x), 3.0)
        (3.0,)

    Raises:
        Nothing: any value is accepted (non-numbers pass through unchanged).
    """
    return x
