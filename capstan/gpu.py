"""``GPUCtx``: run unmodified NumPy code on CuPy.

Inside the context every call of a NumPy function (``np.exp``, ufuncs, ``np.where``,
``np.linalg.norm``, ``np.zeros``...) is replaced by the function of the same name in
the target array module ``xp`` (``cupy.exp``...), with NumPy array arguments moved to
the device first (``xp.asarray``); operators then run on device arrays by themselves.
Arrays handed to the top-level call are moved on entry, and device arrays in its
result (inside tuples, lists and dicts too) come back as NumPy (``xp.asnumpy``; 0-d
arrays as NumPy scalars) unless ``to_host=False``.

Without CuPy or a GPU the target is NumPy itself (``ctx.on_gpu`` is False), or any
module given as ``GPUCtx(xp=module)`` that has NumPy's names plus ``ndarray``,
``asarray`` and ``asnumpy`` -- which is how the substitution is tested without a GPU.
A NumPy function that ``xp`` lacks runs on the host, with its arguments moved back
(``ctx.host_calls`` counts these).  It is a wildcard primitive: everything that is
not a NumPy call runs routed, so NumPy calls deep inside user functions are replaced too.
"""
from collections import Counter
from types import ModuleType
from typing import Any, Callable, cast

import numpy as np

import overdub
from overdub import Context, primitive

__all__ = ["GPUCtx", "default_xp"]


def default_xp() -> tuple[ModuleType, bool]:
    """``(cupy, True)`` when CuPy imports and sees a GPU, else ``(numpy, False)``."""
    try:
        import cupy  # type: ignore[import-not-found, unused-ignore]

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy, True  # type: ignore[no-any-return, unused-ignore]
    except Exception:  # noqa: BLE001, S110  (no CuPy, no driver, no device: run on NumPy)
        pass
    return np, False


_NOT_FOUND = object()
_OPERATOR_MODULES = ("_operator", "operator")


class GPUCtx(Context):
    """Replace NumPy calls by calls of ``xp`` (default: CuPy when a GPU is there, else NumPy).

    Options (keyword-only; ``metadata`` stays free for the user): ``xp``, the array
    module; ``to_host``, whether results come back as NumPy (default True).
    Statistics: ``ctx.substituted`` (Counter of replaced function names),
    ``ctx.moved`` (arrays moved to the device), ``ctx.host_calls`` (NumPy functions
    ``xp`` lacks, run on the host).
    """

    def __init__(self, metadata: Any = None, pass_: Callable[..., Any] | None = None, *,
                 xp: ModuleType | None = None, to_host: bool = True) -> None:
        super().__init__(metadata, pass_)
        if xp is None:
            xp, self.on_gpu = default_xp()
        else:
            self.on_gpu = getattr(xp, "__name__", "") == "cupy"
        self.xp = xp
        self.to_host = to_host
        self.substituted: Counter[str] = Counter()
        self.host_calls: Counter[str] = Counter()
        self.moved = 0
        self._targets: dict[Any, tuple[Any, str | None]] = {}
        self._depth = 0

    # -- moving arrays -------------------------------------------------------------
    def is_host(self, x: Any) -> bool:
        """A NumPy array that is not already one of ``xp``'s."""
        return isinstance(x, np.ndarray) and not isinstance(x, self.xp.ndarray)

    def device(self, x: Any) -> Any:
        """``x`` with its NumPy arrays (also inside lists and tuples) moved to the device."""
        if self.is_host(x):
            self.moved += 1
            return self.xp.asarray(x)
        if type(x) in (list, tuple) and any(self.is_host(v) or type(v) in (list, tuple) for v in x):
            return type(x)(self.device(v) for v in x)
        return x

    def host(self, x: Any) -> Any:
        """``x`` with its device arrays (also inside tuples, lists, dicts) as NumPy;
        0-d arrays become NumPy scalars, as NumPy's reductions return."""
        xp = self.xp
        if isinstance(x, xp.ndarray) and xp is not np:
            out = xp.asnumpy(x)
            return out[()] if out.ndim == 0 else out
        if type(x) in (list, tuple):
            return type(x)(self.host(v) for v in x)
        if type(x) is dict:
            return {k: self.host(v) for k, v in x.items()}
        return x

    # -- finding the device function ----------------------------------------------
    def target(self, f: Any) -> tuple[Any, str | None]:
        """``(g, label)``: ``g`` is the function of ``xp`` that replaces NumPy's ``f``
        (``None`` if ``f`` is not a NumPy function, ``_NOT_FOUND`` if ``xp`` lacks it);
        ``label`` its dotted name (``linalg.norm``).  Cached per ``f``."""
        try:
            return self._targets[f]
        except KeyError:
            pass
        except TypeError:  # unhashable callable: not a NumPy function
            return None, None
        found = self._targets[f] = self._lookup(f)
        return found

    def _lookup(self, f: Any) -> tuple[Any, str | None]:
        name = getattr(f, "__name__", None)
        if isinstance(f, type) or not isinstance(name, str):
            return None, None  # np.float32, np.ndarray...: the same classes on CuPy
        owner = getattr(f, "__objclass__", None)
        if owner is not None:  # a method descriptor: np.ndarray.sum(host_array)
            if owner is not np.ndarray:
                return None, None
            return getattr(self.xp.ndarray, name, _NOT_FOUND), "ndarray." + name
        path: list[str] = []
        if not isinstance(f, np.ufunc):
            mod = getattr(f, "__module__", None)
            if not isinstance(mod, str) or not (mod == "numpy" or mod.startswith("numpy.")):
                return None, None
            for part in mod.split(".")[1:]:  # numpy.linalg._linalg -> linalg
                if part.startswith("_"):
                    break
                path.append(part)
        obj: Any = self.xp
        for part in [*path, name]:
            obj = getattr(obj, part, _NOT_FOUND)
            if obj is _NOT_FOUND:
                break
        return (obj if callable(obj) else _NOT_FOUND), ".".join([*path, name])

    # -- the dispatch -------------------------------------------------------------------
    @primitive()
    def _to_device(self, f: Any, /, *args: Any, **kwargs: Any) -> Any:
        top = self._depth == 0
        self._depth += 1
        try:
            if top:
                args = tuple(self.device(a) for a in args)
                kwargs = {k: self.device(v) for k, v in kwargs.items()}
            out = self._call(f, args, kwargs)
        finally:
            self._depth -= 1
        return self.host(out) if top and self.to_host else out

    def _call(self, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        g, label = self.target(f)
        if g is None:
            if getattr(f, "__module__", None) in _OPERATOR_MODULES and any(map(self.is_host, args)) \
                    and any(isinstance(a, self.xp.ndarray) for a in args):
                args = tuple(self.device(a) for a in args)  # device_array + host_array
            return overdub.recurse(self, f, *args, **kwargs)
        if g is _NOT_FOUND:
            self.host_calls[cast(str, label)] += 1  # (a NumPy function has a label)
            return f(*self.host(args), **self.host(kwargs))
        self.substituted[cast(str, label)] += 1
        return g(*[self.device(a) for a in args], **{k: self.device(v) for k, v in kwargs.items()})

    def __repr__(self) -> str:
        return "GPUCtx(xp=%s, on_gpu=%s)" % (getattr(self.xp, "__name__", self.xp), self.on_gpu)
