"""Hypothesis writes small programs that push a differentiated scalar (or a small array)
through generators, lists, dicts, tuples, closures and C functions (sum, math.fsum,
sorted, min, max, functools.reduce, statistics, heapq, NumPy constructors), then
differentiates each in forward and reverse mode: the derivative must match careful
finite differences, or the run must raise a clear error (capstan.NoRuleError, or a
TypeError/ValueError naming capstan).  A derivative silently lost on the way (0, None,
a wrong number) or an internal exception fails.

The judging is the survey's (tests/survey/runner.py); points where finite differences
cannot be trusted (ties in sorted/min/max) are rejected, not judged."""
import functools
import heapq
import math
import os
import statistics

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from survey import Case, runner
from survey.reference import UnreliableReference, plain, reference

EXAMPLES = int(os.environ.get("CAPSTAN_HYPOTHESIS_EXAMPLES", 60))
# the recursive strategy's repr is large; hypothesis warns about it when reporting
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

SMOOTH = ["math.sin(%s)", "math.cos(%s)", "math.tanh(%s)", "math.atan(%s)", "(%s * 0.5 + 0.25)",
          "1.0 / (1.0 + %s ** 2)", "np.sin(%s)"]
# each template turns one or two scalar expressions into a scalar expression through a
# container, a generator, a closure or a C function
THROUGH_ONE = [
    "sum(%s * k for k in range(1, 4))",
    "math.fsum(%s * k for k in (1, 2, 3))",
    "math.fsum([%s, 0.5])",
    "statistics.fmean(%s * k for k in range(1, 4))",
    "statistics.mean([%s, 0.3])",
    "float(np.sum(np.array([%s, 0.5])))",
    "float(np.fromiter((%s * k for k in range(3)), float).sum())",
    "float(np.asarray([%s, 2.0]).prod())",
    "float(np.array([[%s]])[0, 0])",
    "functools.reduce(lambda a, b: a * b + 0.5, [%s, 1.5, 0.7])",
    "(lambda q: q * q)(%s)",
    "apply(lambda t: t * 3.0, %s)",
    "make_scaler(%s)(1.5)",
    "{'k': %s}['k']",
    "dict(zip('ab', [%s, 1.0]))['a']",
    "tuple(v * 2 for v in (%s, 1.0))[0]",
    "list(map(math.sin, [%s]))[0]",
    "next(iter([%s]))",
    "[v for v in (%s, 0.25)][0]",
    "heapq.nlargest(1, [%s, -5.0])[0]",
    "sorted([%s, -5.0, 5.0])[1]",
    "Box(%s).value",
    "gen_total(%s)",
]
THROUGH_TWO = [
    "(%s + %s)", "(%s * %s)",
    "min(%s, %s)", "max([%s, %s])", "sorted([%s, %s])[0]",
    "math.fsum([%s, %s])", "sum([%s, %s], 0.5)",
    "statistics.fmean([%s, %s])", "statistics.variance([%s, %s, 0.5])",
    "functools.reduce(lambda a, b: a * b, (%s, %s))",
    "heapq.nsmallest(1, [%s, %s])[0]",
    "float(np.max(np.array([%s, %s])))",
    "float(np.dot(np.asarray([%s, %s]), np.array([0.5, 1.5])))",
    "(lambda a, b: a - b)(%s, %s)",
    "{'a': %s, 'b': %s}['b']",
]


def apply(fn, v):
    return fn(v)


def make_scaler(v):
    def scale(t):
        return v * t
    return scale


class Box:
    def __init__(self, value):
        self.value = value


def gen_total(v):
    def gen():
        for k in range(3):
            yield v * (k + 1)
    return sum(gen())


NAMESPACE = {"math": math, "np": np, "functools": functools, "heapq": heapq, "statistics": statistics,
             "apply": apply, "make_scaler": make_scaler, "Box": Box, "gen_total": gen_total}


def _grow(children):
    return st.one_of(
        st.tuples(st.sampled_from(SMOOTH), children).map(lambda t: t[0] % t[1]),
        st.tuples(st.sampled_from(THROUGH_ONE), children).map(lambda t: t[0] % t[1]),
        st.tuples(st.sampled_from(THROUGH_TWO), children, children).map(lambda t: t[0] % (t[1], t[2])),
    )


def expressions(leaves):
    return st.recursive(st.sampled_from(leaves), _grow, max_leaves=4)


def _judge(source, arg, name):
    program = eval(compile("lambda x: " + source, "<hypothesis>", "eval"), dict(NAMESPACE))
    case = Case("stdlib", name, program, arg)
    try:
        y = plain(program, arg)
    except (ArithmeticError, ValueError, statistics.StatisticsError):
        assume(False)
    assume(np.all(np.isfinite(y)))
    try:
        ref = reference(case)
    except UnreliableReference:
        assume(False)
    for mode in runner.MODES:
        kind, outcomes = runner.run(case, mode, ref)
        report = "; ".join("%s via %s: %s %s" % (o.kind, o.via, o.detail, o.frame) for o in outcomes
                           if o.kind != runner.CORRECT)
        assert kind in (runner.CORRECT, runner.CLEAR), \
            "lambda x: %s\nat %r, %s mode: %s" % (source, arg, mode, report)


@SETTINGS
@given(source=expressions(["x", "x", "0.5"]), x=st.sampled_from([0.3, 0.7, 1.3, -0.9]))
def test_scalar_through_containers_and_c_functions(source, x):
    assume("x" in source)
    _judge(source, x, "hypothesis scalar")


ARRAY_LEAVES = ["x[0]", "x[1]", "x[2]", "float(np.sum(x * x))", "math.fsum(x)", "sum(x)", "min(x)", "max(x)",
                "sorted(x)[1]", "statistics.fmean(x)", "float(np.fromiter(x, float)[2])",
                "float(np.median(x))",
                "float(np.asarray(list(x)).sum())", "heapq.nsmallest(2, x)[1]",
                "functools.reduce(lambda a, b: a + b, x)", "sum(v * v for v in x)",
                "float(np.array([v for v in x]).prod())", "float(np.sort(x)[0])"]
POINTS = [np.array([0.3, 1.1, -0.6]), np.array([1.7, 0.2, 0.9])]


@SETTINGS
@given(source=expressions(ARRAY_LEAVES), x=st.sampled_from(POINTS))
def test_array_through_containers_and_c_functions(source, x):
    _judge(source, x, "hypothesis array")
