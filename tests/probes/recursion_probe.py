"""A known divergence for the package harness to find (not collected by the main suite).

Routed code costs two Python frames per call (docs/overdub.md, known limits), so a
recursion that fits CPython's default limit plainly exceeds it under any routing
context.  ``test_deep_recursion`` must therefore diverge under every context, and
``test_arithmetic`` must not: together they show that the harness really routes the test
calls and compares their outcomes.
"""


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)


def test_deep_recursion():
    assert depth(600) == 600


def test_arithmetic():
    assert sum(i * i for i in range(10)) == 285
