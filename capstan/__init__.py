"""capstan: differentiation and tools built as overdub contexts.

Under construction: forward mode (``D``, ``jvp``), reverse mode (``gradient``,
``pullback``, ...) and the tool contexts arrive with the next issues.  Nothing
is exported yet, so nothing pretends to work.
"""
__all__ = []
