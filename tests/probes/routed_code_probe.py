"""A known divergence for the package harness to find (not collected by the main suite).

A routed function runs a rewritten copy of its code, and its frame shows that copy as
``f_code`` (docs/overdub.md, "What is not transparent": the frame's code goes with its
``f_lasti``, an offset into the copy): under any routing context
``test_frame_runs_the_functions_own_code`` fails, while ``test_arithmetic`` must not:
together they show that the harness really routes the test calls and compares their
outcomes.
"""
import sys


def test_frame_runs_the_functions_own_code():
    assert sys._getframe().f_code is test_frame_runs_the_functions_own_code.__code__


def test_arithmetic():
    assert sum(i * i for i in range(10)) == 285
