"""The correctness survey (issue 8) as tests: every case of tests/survey in forward and
in reverse mode must come out right or as a clear error; a silent wrong number (None,
zeros, a wrong value or shape) or a crash (an internal exception, a hang) fails.

Clear errors pass.  They are listed in tests/survey/refused.txt (rewritten by
``python -m tests.survey``) so that coverage can be tracked in git; a clear error that is
not listed there only warns: fixes in progress turn crashes and silent wrongs into clear
errors before they turn them into derivatives, and NumPy/SciPy versions differ between
interpreters, so failing on it would punish exactly the changes the survey asks for.
The file is compared by case, mode and entry point (not by message).

The last tests check the survey's own machinery: that each verdict is reachable, so
that the survey can fail.
"""
import functools
import math
import os
import time
import warnings

import numpy as np
import pytest

import capstan
from survey import LIBRARIES, Case, all_cases, runner
from survey.reference import UnreliableReference, reference

CASES = all_cases()
REFUSED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "survey", "refused.txt")


@functools.lru_cache(maxsize=None)
def _refused():
    with open(REFUSED) as fh:
        return {tuple(line.split("  ")[:2]) + (line.split("  ")[2].split(":")[0],)
                for line in fh if line.strip() and not line.startswith("#")}


@functools.lru_cache(maxsize=None)
def _reference(case_id):
    case = next(c for c in CASES if c.id == case_id)
    return case, reference(case)


#: Silent wrong results that are known, diagnosed and not fixed yet: each fails strictly
#: (a fix makes its xfail fail, and the entry must then go).  They are open work, listed in
#: the issue note; the list may only shrink.
KNOWN_WRONG = {
}


def _params():
    for c in CASES:
        for mode in runner.MODES:
            why = KNOWN_WRONG.get((c.id, mode))
            marks = [pytest.mark.xfail(strict=True, reason="known silent wrong: " + why)] if why else []
            yield pytest.param(c.id, mode, marks=marks, id="%s-%s" % (c.id, mode))


@pytest.mark.parametrize("case_id,mode", list(_params()))
def test_survey(case_id, mode):
    try:
        case, ref = _reference(case_id)
    except UnreliableReference as e:
        pytest.fail("badly chosen case (fix the case, not capstan): %s" % e)
    kind, outcomes = runner.run(case, mode, ref)
    report = "\n".join("%s via %s: %s%s" % (o.kind, o.via, o.detail, " [%s]" % o.frame if o.frame else "")
                       for o in outcomes if o.kind != runner.CORRECT)
    for o in outcomes:
        if o.kind == runner.CLEAR and (case.id, mode, o.via) not in _refused():
            warnings.warn("survey: %s %s via %s is a clear error not listed in refused.txt: %s"
                          % (case.id, mode, o.via, o.first_line))
    assert kind in (runner.CORRECT, runner.CLEAR), "%s in %s mode: %s\n%s" % (case.id, mode, kind, report)


def test_survey_covers_the_libraries():
    """At least 300 functions, every library of the issue represented."""
    assert len(CASES) >= 300
    per_library = {lib: sum(c.library == lib for c in CASES) for lib in LIBRARIES}
    assert all(n >= 10 for n in per_library.values()), per_library


# ----------------------------------------------------------------------------- the survey's own machinery
def _case(f, x, **kw):
    return Case("stdlib", "machinery", f, x, **kw)


def test_finite_differences_are_accurate():
    case = _case(lambda x: np.sin(x) * np.exp(x), np.array([0.3, 1.7]))
    ref = reference(case)
    exact = (np.cos(case.x) + np.sin(case.x)) * np.exp(case.x) * ref.v
    assert np.allclose(ref.jv, exact, rtol=1e-10, atol=1e-12)


def test_unreliable_reference_is_refused():
    with pytest.raises(UnreliableReference):
        reference(_case(lambda x: math.floor(x * 1000) * 1.0, 0.7))


def _cube(x):
    return x ** 3


capstan.defderiv(_cube, lambda ans, x: 2 * x)    # a deliberately wrong rule


@pytest.mark.parametrize("mode", runner.MODES)
def test_a_wrong_rule_is_a_silent_wrong(mode):
    kind, outcomes = runner.run(_case(lambda x: _cube(x) + x, 0.7), mode)
    assert kind == runner.WRONG, outcomes


def _double(x):
    return x * 2


capstan.defderiv(_double, lambda ans, x: 0.0)    # a deliberately dropped derivative


@pytest.mark.parametrize("mode", runner.MODES)
def test_a_dropped_derivative_is_a_silent_wrong(mode):
    kind, outcomes = runner.run(_case(lambda x: _double(x), np.array([0.3, 1.2])), mode)
    assert kind == runner.WRONG and all(o.kind == runner.WRONG for o in outcomes), outcomes


@pytest.mark.parametrize("mode", runner.MODES)
def test_a_right_derivative_is_correct(mode):
    kind, outcomes = runner.run(_case(lambda x: np.sin(x) * x, np.array([0.3, 1.2])), mode)
    assert kind == runner.CORRECT, outcomes


def test_exceptions_are_classified():
    assert runner.classify_exception("D", capstan.NoRuleError("x")).kind == runner.CLEAR
    assert runner.classify_exception("D", TypeError("capstan.D: f must be callable")).kind == runner.CLEAR
    assert runner.classify_exception("D", TypeError("unsupported operand")).kind == runner.CRASH
    assert runner.classify_exception("D", AttributeError("capstan")).kind == runner.CRASH
    assert runner.classify_exception("D", runner.SurveyTimeout()).kind == runner.CRASH


def test_a_hang_is_a_crash():
    def spin(x):
        while True:
            x = x * 1.0

    start = time.perf_counter()
    outcome = runner._attempt("D", lambda: capstan.D(spin, 0.5), lambda got: None, timeout=0.3)
    assert outcome.kind == runner.CRASH and "timeout" in outcome.detail
    assert time.perf_counter() - start < 5


def test_a_wrong_shape_is_a_silent_wrong():
    ref = reference(_case(lambda x: x * np.ones(3), 0.5))
    assert runner.check_tangent("D", 1.0, ref, 1e-6).kind == runner.WRONG
    assert runner.check_tangent("D", None, ref, 1e-6).kind == runner.WRONG
    assert runner.check_tangent("D", np.ones(3), ref, 1e-6).kind == runner.CORRECT
    ref = reference(_case(lambda x: np.sum(x * x), np.array([0.5, 1.5])))
    assert runner.check_cotangent("gradient", None, np.ones(2), ref, 1e-6, 1.0).kind == runner.WRONG
    assert runner.check_cotangent("gradient", np.ones(3), np.ones(2), ref, 1e-6, 1.0).kind == runner.WRONG
    assert runner.check_cotangent("gradient", 2 * np.array([0.5, 1.5]), np.ones(2), ref, 1e-6, 1.0).kind == \
        runner.CORRECT
