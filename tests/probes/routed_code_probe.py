"""A known divergence for the package harness to find (not collected by the main suite).

A routed function runs its routed twin's code object, not the one it holds in
``__code__`` (docs/overdub.md, "How the rewrite works"), and a frame shows it: under any
routing context ``test_frame_code`` fails, while ``test_arithmetic`` must not: together
they show that the harness really routes the test calls and compares their outcomes.
"""
import sys


def test_frame_code():
    frame = sys._getframe(0)
    assert frame.f_code is test_frame_code.__code__, "the frame runs another __code__"


def test_arithmetic():
    assert sum(i * i for i in range(10)) == 285
