"""capstan: automatic differentiation and tools for unmodified Python, built on overdub.

Forward mode (``D``, ``jvp``, ``jacobian``), reverse mode (``gradient``,
``pullback``, ``hessian``, ``adjoint``, ``checkpoint``, ``hook``, ``nestlevel``),
derivatives as functions in JAX's style (``grad``, ``value_and_grad``, ``jacfwd``,
``jacrev``) and tool contexts (``PrintCtx``, ``CountCtx``, ``TraceCtx``, ``GPUCtx``, ``bit32pass``).
See docs/capstan-forward.md, docs/capstan-reverse.md and docs/tools.md.
"""
import overdub
from overdub import __version__

from . import adcontext, forward, fpstate, losses, nesting, pool, reverse, structure, tape
from .adcontext import register_all
from .losses import NoRuleError
from .bit32 import bit32pass
from .counting import CountCtx
from .derivatives import hessian, jacobian
from .forward import D, ForwardCtx, jvp
from .gpu import GPUCtx
from .markers import checkpoint, hook, stop_gradient
from .nesting import nestlevel
from .printing import PrintCtx
from .reverse import ReverseCtx, adjoint, gradient, pullback
from .rules import builtin_rules, linalg_rules, math_rules, numpy_rules, operator_rules  # noqa: F401
from .rules import placement_rules, sorting_rules, statistics_rules, stride_rules  # noqa: F401
from .rules import decomposition_rules, fft_rules, special_rules  # noqa: F401  (SciPy, decompositions, FFT)
from .rules import solver_rules  # noqa: F401  (SciPy solvers: roots, quadrature, ODEs)
from .rules import distribution_rules  # noqa: F401  (scipy.stats' distribution functions)
from .rules import stdlib_rules, ufunc_rules  # noqa: F401  (C helpers: partial, heapq, ufunc methods...)
from .rules import interpolate_rules  # noqa: F401  (scipy.interpolate's kernels)
from .rules import ndimage_rules  # noqa: F401  (scipy.ndimage's filters)
from .rules import signal_rules  # noqa: F401  (scipy.signal's recursive filters)
from .rules import spatial_rules  # noqa: F401  (scipy.spatial.distance's cdist and pdist)
from .rules import random_rules  # noqa: F401  (NumPy's location-scale samplers)
from .rules import composite_rules  # noqa: F401  (NumPy functions through Python equivalents)
from .rules import defderiv, defimpl, defjvp, deflinear, defvjp, nondifferentiable
from .tape import Tape, TapeGuardError, record_tape
from .mixed import elementwise  # (after the rule tables: it reads them)
from .transforms import grad, jacfwd, jacrev, value_and_grad
from . import graph_coloring, sparse, sparsity
from .graph_coloring import coloring
from .sparse import hvp, prepare_sparse_hessian, prepare_sparse_jacobian, sparse_hessian, sparse_jacobian
from .sparsity import hessian_sparsity, jacobian_sparsity

register_all()


def __getattr__(name: str) -> type:
    # TraceCtx is imported on first use, so that ``python -m capstan.trace`` runs the
    # module as __main__ without it already being in sys.modules (runpy's warning).
    if name == "TraceCtx":
        from .trace import TraceCtx

        return TraceCtx
    raise AttributeError("module 'capstan' has no attribute %r" % (name,))

overdub.opaque(adcontext, forward, fpstate, losses, reverse, structure, nesting, pool, tape)
overdub.opaque(sparsity, sparse, graph_coloring)

__all__ = ["D", "jvp", "jacobian", "gradient", "pullback", "hessian", "adjoint", "checkpoint", "hook",
           "grad", "value_and_grad", "jacfwd", "jacrev",
           "stop_gradient",
           "elementwise",
           "nestlevel", "record_tape", "Tape", "TapeGuardError", "ForwardCtx", "ReverseCtx", "NoRuleError",
           "defderiv", "defjvp", "defvjp", "deflinear", "defimpl", "nondifferentiable",
           "PrintCtx", "CountCtx", "TraceCtx", "GPUCtx", "bit32pass",
           "jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian",
           "prepare_sparse_jacobian", "prepare_sparse_hessian", "coloring", "hvp"]
