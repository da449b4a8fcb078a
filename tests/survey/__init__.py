"""The correctness survey (issue 8): real library functions, each differentiated in
forward and reverse mode and checked against a closed form or careful finite
differences, every run classified as correct / clear error / silent wrong / crash.

A case is one function of ONE argument (a scalar or a small array) that calls the real,
unmodified library function -- often through a closure over the differentiated value --
together with an input point and, where one is known, a reference derivative.  Cases are
kept as tables, one module per library (``cases_*.py``); ``runner.py`` runs and
classifies them; ``python -m tests.survey`` prints the tables and rewrites
``refused.txt`` (the clear errors, tracked in git); ``tests/test_survey.py`` fails on
any silent wrong or crash.
"""
import dataclasses
from typing import Any, Callable, Optional

import numpy as np

LIBRARIES = ["stdlib", "numpy", "scipy.special", "scipy.stats", "scipy.linalg", "scipy.integrate",
             "scipy.optimize", "scipy.interpolate", "scipy.signal", "scipy.ndimage", "issue"]


@dataclasses.dataclass
class Case:
    """One surveyed function.

    ``ref(x, v)`` is the exact directional derivative of ``f`` at ``x`` along ``v``
    (shaped like ``f(x)``); ``None`` means careful finite differences.  ``rtol`` is the
    relative tolerance of the comparison (loosened only for adaptive algorithms whose
    derivative is the derivative of the computed, not the exact, result); ``step`` overrides the finite
    difference step (for a point near a kink or a domain edge).  ``kink=(lo, hi)``: ``x``
    is a real scalar at a kink of ``f``, and any derivative in ``[lo, hi]`` (a
    subgradient) is right."""
    library: str
    name: str
    f: Callable
    x: Any
    ref: Optional[Callable] = None
    rtol: float = 1e-6
    step: Optional[float] = None
    kink: Optional[tuple] = None

    @property
    def id(self):
        return "%s:%s" % (self.library, self.name)


class Table:
    """The cases of one library, added in order: ``t.add(name, f, x, d=f')``."""

    def __init__(self, library):
        assert library in LIBRARIES, library
        self.library = library
        self.cases = []

    def add(self, name, f, x, d=None, ref=None, rtol=1e-6, step=None, kink=None):
        """Add a case.  ``d``: the elementwise (or scalar) derivative ``f'(x)``, so that
        the directional derivative is ``f'(x) * v``; ``ref``: the directional
        derivative ``ref(x, v)`` itself, for anything else."""
        assert d is None or ref is None
        if d is not None:
            ref = _elementwise(d)
        if isinstance(x, (list, tuple)):
            x = np.array(x, dtype=float)
        case = Case(self.library, name, f, x, ref, rtol, step, kink)
        assert all(c.name != name for c in self.cases), "duplicate case %s" % case.id
        self.cases.append(case)
        return case


def _elementwise(d):
    return lambda x, v: np.asarray(d(x)) * v


def all_cases():
    """Every case of every library, in table order."""
    from . import (cases_integrate, cases_interpolate, cases_issue, cases_linalg, cases_ndimage,
                   cases_numpy, cases_optimize, cases_signal, cases_special, cases_stats, cases_stdlib)
    tables = [cases_stdlib, cases_numpy, cases_special, cases_stats, cases_linalg, cases_integrate,
              cases_optimize, cases_interpolate, cases_signal, cases_ndimage, cases_issue]
    cases = [c for module in tables for c in module.T.cases]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases
