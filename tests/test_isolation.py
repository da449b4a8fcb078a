"""Nothing global changes; caches do not keep user code alive; threads stay apart."""
import builtins
import gc
import math
import operator
import threading
import weakref

import pytest

import overdub
from overdub import Context
from recursion_depth import deepest


class Count(Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


def work(n):
    total = 0
    for i in range(n):
        total += math.floor(i / 3) * 2
    return total


def test_no_global_state_is_patched():
    before = (dict(vars(builtins)), dict(vars(math)), dict(vars(operator)), work.__code__)
    overdub.overdub(Count([0]), work, 50)
    assert before == (dict(vars(builtins)), dict(vars(math)), dict(vars(operator)), work.__code__)


def test_plain_thread_unaffected_while_another_overdubs():
    expected = work(300)
    results, counts, errors = [], [], []
    barrier = threading.Barrier(3)

    def plain():
        barrier.wait()
        for _ in range(200):
            results.append(work(300))

    def routed(ctx):
        barrier.wait()
        try:
            for _ in range(20):
                results.append(overdub.overdub(ctx, work, 300))
            counts.append(ctx.metadata[0])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ctxs = [Count([0]), Count([0])]
    threads = [threading.Thread(target=plain)] + [threading.Thread(target=routed, args=(c,)) for c in ctxs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [expected] * 240
    single = Count([0])
    overdub.overdub(single, work, 300)
    assert counts == [20 * single.metadata[0]] * 2


def test_function_collected_after_overdub():
    namespace = {}
    exec("def victim(x):\n    return [x * 2 for _ in range(2)]", namespace)
    f = namespace.pop("victim")
    ctx = Count([0])
    assert overdub.overdub(ctx, f, 3) == [6, 6]
    ref, code_ref = weakref.ref(f), weakref.ref(f.__code__)
    del f, namespace
    gc.collect()
    assert ref() is None and code_ref() is None


def test_closure_created_inside_is_ordinary_outside():
    def make(k):
        def inner(x):
            nonlocal k
            k += x
            return k
        return inner, lambda: k

    inner, peek = overdub.overdub(Count([0]), make, 10)
    assert inner.__qualname__.endswith("make.<locals>.inner")
    assert inner.__code__ is make.__code__.co_consts[1] or inner.__code__.co_name == "inner"
    assert inner(5) == 15 and peek() == 15  # cells shared, runs plainly
    ctx = Count([0])
    assert overdub.overdub(ctx, inner, 1) == 16 and peek() == 16 and ctx.metadata[0] >= 2


def test_escaped_generator_keeps_running_in_context():
    def gen(n):
        for i in range(n):
            yield abs(-i)

    ctx = Count([0])
    g = overdub.overdub(ctx, gen, 3)
    after_creation = ctx.metadata[0]
    assert list(g) == [0, 1, 2]
    assert ctx.metadata[0] > after_creation  # range, neg and abs were seen while draining


def test_escaped_coroutine_and_async_generator_keep_running_in_context():
    import asyncio

    async def agen(n):
        for i in range(n):
            yield abs(-i)
            await asyncio.sleep(0)

    async def main(n):
        return [x async for x in agen(n)]

    ctx = Count([0])
    coro = overdub.overdub(ctx, main, 3)  # created inside, driven outside by asyncio
    before = ctx.metadata[0]
    assert asyncio.run(coro) == [0, 1, 2]
    assert ctx.metadata[0] > before + 3


def test_recursion_depth_is_a_large_fraction_of_cpythons():
    def rec(n):
        return 0 if n == 0 else 1 + rec(n - 1)

    plain = deepest(rec, lo=1)
    routed = deepest(lambda n: overdub.overdub(Count([0]), rec, n), lo=1)
    assert routed >= plain // 2 - 10  # two Python frames per user frame


def test_traceback_points_at_user_lines():
    import traceback

    def boom(x):
        return 1 / x

    def top(x):
        return boom(x) + 1

    with pytest.raises(ZeroDivisionError) as info:
        overdub.overdub(Count([0]), top, 0)
    frames = traceback.extract_tb(info.value.__traceback__)
    user = [(fr.name, fr.line) for fr in frames if fr.filename == __file__]
    assert user[-2:] == [("top", "return boom(x) + 1"), ("boom", "return 1 / x")]
    assert not any("overdub" in fr.filename and fr.name in ("call", "slot") for fr in frames)
