"""Rules for C functions of the standard library that numeric code calls with values
being differentiated: ``functools.partial``, ``operator.methodcaller`` (and the
getters' calls), ``itertools.chain`` and ``product``,
``heapq``'s C heap operations, ``statistics.NormalDist.inv_cdf`` and
``math.remainder``.

The containers and iterators only hold or reorder values; each runs as a Python
equivalent (``defimpl``) that keeps them as they are, derivatives included.  The
numerical ones get partial derivatives (``defderiv``) or an equivalent of functions
that have rules.
"""
import functools
import heapq
import itertools
import math
import operator
import statistics

from .registry import defderiv, defimpl, plain_valued

_SQRT_2PI = math.sqrt(2.0 * math.pi)


# ----------------------------------------------------------------------------- functools.partial
class Partial:
    """``functools.partial(func, *args, **keywords)``: ``func`` with leading arguments
    and keywords fixed (nested partials are flattened, as functools does)."""

    def __init__(self, func, /, *args, **keywords):
        if not callable(func):
            raise TypeError("the first argument must be callable")
        if isinstance(func, (Partial, functools.partial)):
            args = tuple(func.args) + args
            keywords = {**func.keywords, **keywords}
            func = func.func
        self.func, self.args, self.keywords = func, args, keywords

    def __call__(self, /, *args, **keywords):
        return self.func(*self.args, *args, **{**self.keywords, **keywords})

    def __repr__(self):
        parts = [repr(self.func)] + [repr(a) for a in self.args] + ["%s=%r" % kv for kv in self.keywords.items()]
        return "functools.partial(%s)" % ", ".join(parts)


defimpl(functools.partial, Partial)


# ----------------------------------------------------------------------------- operator's getters
class MethodCaller:
    """``operator.methodcaller(name, *args, **kwargs)``: calls ``obj.name(*args, **kwargs)``."""

    def __init__(self, name, /, *args, **kwargs):
        if not isinstance(name, str):
            raise TypeError("method name must be a string")
        self.name, self.args, self.kwargs = name, args, kwargs

    def __call__(self, obj, /):
        return getattr(obj, self.name)(*self.args, **self.kwargs)


defimpl(operator.methodcaller, MethodCaller)


def _item_getter(items):
    if len(items) == 1:
        item = items[0]
        return lambda obj, /: obj[item]
    return lambda obj, /: tuple(obj[i] for i in items)


def _attr_getter(names):
    def get(obj, name):
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    if len(names) == 1:
        return lambda obj, /: get(obj, names[0])
    return lambda obj, /: tuple(get(obj, n) for n in names)


def getter_as_python(f):
    """A Python equivalent of an ``operator.itemgetter``/``attrgetter``/``methodcaller``
    object (C code, which would hand on the numbers of the values it reads from a tuple,
    or call a method on a differentiated value unseen), or ``None``."""
    maker, params = f.__reduce__()[:2]
    if maker is operator.itemgetter:
        return _item_getter(params)
    if maker is operator.attrgetter:
        return _attr_getter(params)
    kwargs = {}
    if isinstance(maker, functools.partial):  # methodcaller(name, *args, **kwargs)
        maker, params, kwargs = maker.func, maker.args + params, maker.keywords
    if maker is operator.methodcaller:
        return MethodCaller(*params, **kwargs)
    return None


#: the types of the objects ``getter_as_python`` spells out
GETTERS = frozenset((operator.itemgetter, operator.attrgetter, operator.methodcaller))


# ----------------------------------------------------------------------------- itertools
def _chain(*iterables):
    """``itertools.chain``: the elements of each iterable in turn."""
    for iterable in iterables:
        yield from iterable


def _chain_from_iterable(iterables):
    for iterable in iterables:
        yield from iterable


def _product(*iterables, repeat=1):
    """``itertools.product``: the Cartesian product, the last iterable varying fastest."""
    if repeat < 0:
        raise ValueError("repeat argument cannot be negative")
    pools = [tuple(p) for p in iterables] * repeat
    combos = [()]
    for pool in pools:
        combos = [c + (v,) for c in combos for v in pool]
    yield from combos


defimpl(itertools.chain, _chain)
defimpl(itertools.chain.from_iterable, _chain_from_iterable)
defimpl(itertools.product, _product)


# ----------------------------------------------------------------------------- heapq (C versions)
def _sift_up(heap, pos):
    """Move ``heap[pos]`` towards the root while it is smaller than its parent."""
    item = heap[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if item < heap[parent]:
            heap[pos] = heap[parent]
            pos = parent
        else:
            break
    heap[pos] = item


def _sift_down(heap, pos):
    """Move ``heap[pos]`` down below its smaller children."""
    n = len(heap)
    item = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] < item:
            heap[pos] = heap[child]
            pos = child
        else:
            break
    heap[pos] = item


def _heappush(heap, item):
    heap.append(item)
    _sift_up(heap, len(heap) - 1)


def _heappop(heap):
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    heap[0] = last
    _sift_down(heap, 0)
    return top


def _heapreplace(heap, item):
    top = heap[0]
    heap[0] = item
    _sift_down(heap, 0)
    return top


def _heappushpop(heap, item):
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        _sift_down(heap, 0)
    return item


def _heapify(heap):
    for pos in reversed(range(len(heap) // 2)):
        _sift_down(heap, pos)


for _f, _impl in ((heapq.heappush, _heappush), (heapq.heappop, _heappop), (heapq.heapreplace, _heapreplace),
                  (heapq.heappushpop, _heappushpop), (heapq.heapify, _heapify)):
    if type(_f).__name__ == "builtin_function_or_method":  # (the C versions only)
        defimpl(_f, _impl)


# ----------------------------------------------------------------------------- statistics, math
_inv_cdf = getattr(statistics, "_normal_dist_inv_cdf", None)
if _inv_cdf is not None and type(_inv_cdf).__name__ == "builtin_function_or_method":
    # x = mu + sigma z(p): dx/dp = sigma / phi(z), dx/dmu = 1, dx/dsigma = z
    defderiv(_inv_cdf,
             lambda ans, p, mu, sigma: sigma * _SQRT_2PI * math.exp(0.5 * ((ans - mu) / sigma) ** 2),
             lambda ans, p, mu, sigma: 1.0,
             lambda ans, p, mu, sigma: (ans - mu) / sigma)

def remainder_quotient(x, y, ans):
    """The integer ``n`` of ``remainder(x, y) = x - n y`` (no derivative)."""
    return float(round((x - ans) / y))


plain_valued(remainder_quotient)
defderiv(math.remainder, lambda ans, x, y: 1.0, lambda ans, x, y: -remainder_quotient(x, y, ans))


# (math.frexp stays refused: its mantissa is mostly taken apart into integers to rebuild the
# number exactly -- mpmath.mpf(x), fractions -- where int() would drop the derivative silently)
#: the functions this table gives entries (tests/test_coverage_rules.py checks each one)
FUNCTIONS = [functools.partial, operator.methodcaller, itertools.chain, itertools.chain.from_iterable, itertools.product,
             heapq.heappush, heapq.heappop, heapq.heapreplace, heapq.heappushpop, heapq.heapify,
             math.remainder, remainder_quotient] + ([_inv_cdf] if _inv_cdf else [])
