"""A known divergence for the package harness to find (not collected by the main suite).

The first routed call of a function makes its routed twin and the run's cache entries for
it, objects the garbage collector tracks (docs/overdub.md, "What is not transparent"), so
``len(gc.get_objects())`` grows around a first use where plainly it does not: under any
routing context ``test_first_use_allocations`` fails, while ``test_arithmetic`` must not:
together they show that the harness really routes the test calls and compares their
outcomes.
"""
import gc


def test_first_use_allocations():
    class Probe:
        def __eq__(self, other):
            return False

    probe = Probe()
    enabled = gc.isenabled()
    gc.disable()  # (no collection in between: plainly the count does not move)
    try:
        before = len(gc.get_objects())
        for _ in range(10):
            probe == probe
        grown = len(gc.get_objects()) - before
    finally:
        if enabled:
            gc.enable()
    assert grown == 0, "the first use of Probe.__eq__ allocated %d tracked objects" % grown


def test_arithmetic():
    assert sum(i * i for i in range(10)) == 285
