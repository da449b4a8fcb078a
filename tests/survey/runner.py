"""Run a case in forward or reverse mode and classify what came out.

Forward mode runs ``capstan.D(f, x)`` (real scalar ``x``) and ``capstan.jvp(f, (x,),
(v,))``; reverse mode runs ``capstan.gradient(f, x)`` (real scalar output) and
``capstan.pullback(f, x)`` pulled back along a random output weight ``w``.  Each entry
point is judged on its own and the mode gets the worst verdict:

* ``correct``: the derivative (and the primal value where one is returned) matches the
  reference, with the right shape;
* ``clear error``: ``capstan.NoRuleError``, or a TypeError / ValueError /
  NotImplementedError whose message names capstan;
* ``silent wrong``: a wrong number, ``None`` or zeros where the reference is not zero,
  a wrong shape, a complex gradient for a real input;
* ``crash``: any other exception, or a run longer than the time limit.
"""
import dataclasses
import os
import signal
import traceback
import warnings

import numpy as np

import capstan

from .reference import reference

CORRECT, CLEAR, WRONG, CRASH = "correct", "clear error", "silent wrong", "crash"
KINDS = [CORRECT, CLEAR, WRONG, CRASH]
MODES = ["forward", "reverse"]
TIMEOUT = float(os.environ.get("SURVEY_TIMEOUT", "20"))  # (a hang; generous for loaded CI machines)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(capstan.__file__)))
_OURS = tuple(os.path.join(_ROOT, d) + os.sep for d in ("capstan", "overdub"))


@dataclasses.dataclass
class Outcome:
    """The verdict of one entry point (``via``) on one case."""
    kind: str
    via: str
    detail: str = ""
    first_line: str = ""      # an exception's first line (for refused.txt)
    frame: str = ""           # innermost capstan/overdub frame of a crash


class SurveyTimeout(BaseException):
    """A run took longer than TIMEOUT seconds (a BaseException, so that the surveyed
    code's ``except Exception`` cannot swallow it)."""


def _alarm(signum, frame):
    raise SurveyTimeout()


def _limited(fn, timeout=None):
    """``fn()`` under the time limit (where signals can be used: the main thread)."""
    try:
        old = signal.signal(signal.SIGALRM, _alarm)
    except ValueError:
        return fn()
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT if timeout is None else timeout)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _frames(tb):
    frames = traceback.extract_tb(tb)
    ours = [fr for fr in frames if os.path.normpath(fr.filename).startswith(_OURS)]
    where = lambda fr: "%s:%d %s" % (os.path.relpath(fr.filename, _ROOT), fr.lineno, fr.name)  # noqa: E731
    inner = ("innermost ours %s" % where(ours[-1])) if ours else "no capstan/overdub frame"
    last = frames[-1] if frames else None
    raised = (" ; raised at %s:%d %s" % (os.path.basename(last.filename), last.lineno, last.name)
              if last is not None and (not ours or last is not ours[-1]) else "")
    return inner + raised


def classify_exception(via, e):
    first = (str(e).strip().splitlines() or [""])[0][:200]
    if isinstance(e, SurveyTimeout):
        return Outcome(CRASH, via, "timeout after %gs" % TIMEOUT, "timeout", _frames(e.__traceback__))
    text = "%s: %s" % (type(e).__name__, first)
    if isinstance(e, capstan.NoRuleError) or (
            isinstance(e, (TypeError, ValueError, NotImplementedError)) and "capstan" in str(e).lower()):
        return Outcome(CLEAR, via, text, text)
    return Outcome(CRASH, via, text, text, _frames(e.__traceback__))


def _norm(a):
    return float(np.linalg.norm(np.ravel(np.asarray(a, dtype=complex))))


def _short(a):
    a = np.asarray(a)
    if a.size > 6:
        return "array%s[%s ...]" % (a.shape, ", ".join("%.6g" % z for z in np.ravel(a)[:4].real))
    return np.array2string(a, precision=6, separator=", ").replace("\n", "")


def _is_number_like(got):
    if got is None:
        return False
    try:
        np.asarray(got, dtype=complex)
    except (TypeError, ValueError):
        return False
    return True


def _exact_zero(ref):
    return ref.atol <= 1e-9 and _norm(ref.jv) == 0.0


def check_value(via, got, y):
    """A wrong primal value is a silent wrong too."""
    if not _is_number_like(got):
        return Outcome(WRONG, via, "primal is %r, expected %s" % (type(got).__name__, _short(y)))
    g = np.asarray(got, dtype=complex)
    if g.shape != y.shape or not np.allclose(g, y, rtol=1e-9, atol=1e-12, equal_nan=True):
        return Outcome(WRONG, via, "primal %s, expected %s" % (_short(got), _short(y)))
    return None


def _check_kink(via, got, ref, what):
    """At a kink any subgradient is right; None, NaN or a value outside is not."""
    lo, hi = ref.kink
    if _is_number_like(got) and np.ndim(got) == 0 and np.imag(got) == 0 and lo <= np.real(got) <= hi:
        return Outcome(CORRECT, via)
    return Outcome(WRONG, via, "%s %r at a kink, expected one of [%g, %g]" % (what, got, lo, hi))


def check_tangent(via, got, ref, rtol):
    """A forward derivative against ``ref.jv``."""
    if ref.kink:
        return _check_kink(via, got, ref, "derivative")
    if got is None and _exact_zero(ref):
        return Outcome(CORRECT, via)
    if not _is_number_like(got):
        what = got if got is None else type(got).__name__
        return Outcome(WRONG, via, "derivative is %r, expected %s" % (what, _short(ref.jv)))
    g = np.asarray(got, dtype=complex)
    if g.shape != ref.jv.shape:
        return Outcome(WRONG, via, "derivative has shape %s, expected %s (%s vs %s)"
                       % (g.shape, ref.jv.shape, _short(got), _short(ref.jv)))
    err = _norm(g - ref.jv)
    if not err <= rtol * _norm(ref.jv) + ref.atol:
        what = "zeros" if _norm(g) == 0 else _short(got)
        return Outcome(WRONG, via, "derivative %s, expected %s (%s)" % (what, _short(ref.jv), ref.source))
    return Outcome(CORRECT, via)


def check_cotangent(via, got, x, ref, rtol, weight):
    """A reverse derivative: ``Re <got, v>`` against ``Re <w, jv>``."""
    if ref.kink:
        return _check_kink(via, got, ref, "gradient")
    if got is None and _exact_zero(ref):
        return Outcome(CORRECT, via)
    if not _is_number_like(got):
        what = got if got is None else type(got).__name__
        expected = "a number" if np.ndim(x) == 0 else "an array"
        return Outcome(WRONG, via, "gradient is %r, expected %s" % (what, expected))
    g = np.asarray(got, dtype=complex)
    if g.shape != np.shape(x):
        return Outcome(WRONG, via, "gradient has shape %s, input %s" % (g.shape, np.shape(x)))
    if not np.iscomplexobj(x) and np.any(g.imag != 0):
        return Outcome(WRONG, via, "complex gradient %s for a real input" % _short(got))
    got_d = float(np.real(np.vdot(g, ref.v)))
    want = float(np.real(np.vdot(weight, ref.jv)))
    scale = _norm(weight) * _norm(ref.jv)
    if not abs(got_d - want) <= rtol * max(scale, abs(want)) + _norm(weight) * ref.atol:
        what = "zeros" if _norm(g) == 0 else _short(got)
        return Outcome(WRONG, via, "gradient %s gives <g,v>=%.9g, expected %.9g (%s)"
                       % (what, got_d, want, ref.source))
    return Outcome(CORRECT, via)


def _attempt(via, fn, judge, timeout=None):
    try:
        got = _limited(fn, timeout)
    except SurveyTimeout as e:
        return classify_exception(via, e)
    except Exception as e:  # noqa: BLE001 -- every exception is classified
        return classify_exception(via, e)
    try:
        return judge(got)
    except Exception as e:  # noqa: BLE001 -- a result that cannot even be compared
        return Outcome(WRONG, via, "result cannot be compared: %s: %s (%r)" % (type(e).__name__, e, got))


def _x(case):
    return case.x.copy() if isinstance(case.x, np.ndarray) else case.x


def run_forward(case, ref):
    """The forward-mode outcomes of ``case`` (D where ``x`` is a real scalar, and jvp)."""
    outcomes = []
    if np.ndim(case.x) == 0 and not np.iscomplexobj(case.x):
        outcomes.append(_attempt("D", lambda: capstan.D(case.f, _x(case)),
                                 lambda got: check_tangent("D", got, ref, case.rtol)))

    def judge_jvp(got):
        y, t = got
        return check_value("jvp", y, ref.y) or check_tangent("jvp", t, ref, case.rtol)
    outcomes.append(_attempt("jvp", lambda: capstan.jvp(case.f, (_x(case),), (ref.v,)), judge_jvp))
    return outcomes


def run_reverse(case, ref):
    """The reverse-mode outcomes of ``case`` (gradient where the output is a real
    scalar, and pullback along ``ref.w``)."""
    outcomes = []
    if ref.y.ndim == 0 and not np.iscomplexobj(ref.y):
        def judge_gradient(got):
            if not isinstance(got, tuple) or len(got) != 1:
                return Outcome(WRONG, "gradient", "returned %r, expected a 1-tuple" % (got,))
            return check_cotangent("gradient", got[0], case.x, ref, case.rtol, 1.0)
        outcomes.append(_attempt("gradient", lambda: capstan.gradient(case.f, _x(case)), judge_gradient))

    def pull():
        y, back = capstan.pullback(case.f, _x(case))
        return y, back(ref.w)

    def judge_pullback(got):
        y, cts = got
        bad = check_value("pullback", y, ref.y)
        if bad:
            return bad
        if not isinstance(cts, tuple) or len(cts) != 1:
            return Outcome(WRONG, "pullback", "back returned %r, expected a 1-tuple" % (cts,))
        return check_cotangent("pullback", cts[0], case.x, ref, case.rtol, ref.w)
    outcomes.append(_attempt("pullback", pull, judge_pullback))
    return outcomes


SEVERITY = {WRONG: 3, CRASH: 2, CLEAR: 1, CORRECT: 0}


def verdict(outcomes):
    """The mode's verdict: the worst outcome (silent wrong, then crash, then clear error)."""
    return max(outcomes, key=lambda o: SEVERITY[o.kind]).kind


def run(case, mode, ref=None):
    """``(verdict, outcomes)`` of ``case`` in ``mode``."""
    ref = reference(case) if ref is None else ref
    outcomes = (run_forward if mode == "forward" else run_reverse)(case, ref)
    return verdict(outcomes), outcomes
