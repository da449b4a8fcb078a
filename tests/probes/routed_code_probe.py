"""A known divergence for the package harness to find (not collected by the main suite).

``overdub.overdub`` enters a run through a Python frame of its own, which the program sees
below its own frames when it walks the whole stack (docs/overdub.md, "What is not
transparent"): under any routing context ``test_no_frame_of_overdub_below`` fails, while
``test_arithmetic`` must not: together they show that the harness really routes the test
calls and compares their outcomes.
"""
import traceback


def test_no_frame_of_overdub_below():
    files = [frame.filename for frame in traceback.extract_stack()]
    assert not any("/overdub/" in name for name in files), files


def test_arithmetic():
    assert sum(i * i for i in range(10)) == 285
