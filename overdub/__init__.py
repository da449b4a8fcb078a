"""overdub: contextual dispatch for CPython by bytecode rewriting.

``overdub(ctx, f, *args)`` runs ``f`` with every call, operator, subscript and
attribute access in its body -- and, recursively, in everything it calls --
routed through the context ``ctx``: its ``prehook``, a matching ``@primitive``
or ``recurse``, then its ``posthook``.  See docs/overdub.md.
"""
from .context import Context, context, primitive
from .dispatch import canrecurse, fallback, overdub, recurse
from .lookaside import opaque
from .passes import PassError, replace_match
from .plaincall import is_structural
from .tagging import Tagged, hasmetadata, istagged, metadata, retag, tag, untag

__all__ = ["Context", "context", "primitive", "overdub", "recurse", "fallback", "canrecurse",
           "tag", "retag", "untag", "metadata", "hasmetadata", "istagged", "Tagged", "replace_match",
           "PassError", "opaque", "is_structural"]
__version__ = "0.1.0"
