"""Lists that hold themselves, or nest deeper than the recursion limit, in differentiated
code: capstan looks into lists and tuples (is a differentiated value among a C function's
arguments?) without recursing, so such lists behave as plainly (CPython's own
test_list.test_repr and test_repr_deep under capstan's forward context)."""
import sys

import pytest

import capstan
import overdub


def program(x):
    a = [0.0, 1.0]
    a.append(a)  # (a list holding itself, then a differentiated value)
    a.append(x)
    deep = []
    for _ in range(sys.getrecursionlimit() + 100):
        deep = [deep]
    deep.append(x)
    text = str(a)  # "[0.0, 1.0, [...], 1.5]": CPython's own guard against the cycle
    return a[3] * 2.0 + deep[1] * x + len(a) + 0.0 * len(text)


@pytest.mark.parametrize("x", [0.5, 1.5])
def test_self_holding_and_deep_lists_differentiate(x):
    assert program(x) == pytest.approx(2.0 * x + x * x + 4)
    assert capstan.D(program, x) == pytest.approx(2.0 + 2.0 * x)
    assert capstan.gradient(program, x) == pytest.approx((2.0 + 2.0 * x,))


def test_a_deep_list_behaves_as_plainly():
    """repr of a list nested deeper than the recursion limit raises RecursionError where
    CPython's does (3.11; 3.12+ count C recursion apart); the list's append before it (a
    C function given a list) raises nothing."""
    def run():
        a = []
        for _ in range(sys.getrecursionlimit() + 100):
            a = [a]
        a.append(1.0)
        try:
            repr(a)
        except RecursionError:
            return "RecursionError"
        return "no error"

    assert overdub.overdub(capstan.ForwardCtx(), run) == run()
