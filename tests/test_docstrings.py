"""The public entry points' docstrings: each has an example, which runs (doctest), and
says what it raises."""
import doctest

import pytest

import capstan

DOCUMENTED = [capstan.grad, capstan.value_and_grad, capstan.jacfwd, capstan.jacrev, capstan.gradient,
              capstan.pullback, capstan.D, capstan.jvp, capstan.jacobian, capstan.hessian,
              capstan.checkpoint, capstan.stop_gradient, capstan.hook,
              capstan.elementwise]


@pytest.mark.parametrize("fn", DOCUMENTED, ids=lambda f: f.__name__)
def test_docstring_has_a_running_example_and_says_what_it_raises(fn):
    doc = fn.__doc__ or ""
    assert "Raises:" in doc
    tests = doctest.DocTestFinder(recurse=False).find(fn, fn.__name__, globs={})
    examples = [ex for t in tests for ex in t.examples]
    assert examples, "%s has no >>> example" % fn.__name__
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, "%s's example failed (see the output above)" % fn.__name__
