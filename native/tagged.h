/* The memory layout of overdub's tagged values, shared by the two C modules.
 *
 * `_overdub_native.TaggedBase` defines it; `overdub.tagging.Tagged` is a Python subclass
 * that adds no fields (`__slots__ = ()`), so every Tagged instance has exactly this layout.
 * `_capstan_native` builds Tagged results of scalar arithmetic directly in it.
 */
#ifndef OVERDUB_TAGGED_H
#define OVERDUB_TAGGED_H

#include <Python.h>

/* bumped whenever the layout or a module's interface changes: the Python side refuses a
   stale build instead of misreading memory */
#define OVERDUB_NATIVE_ABI 12

typedef struct {
    PyObject_HEAD
    PyObject *value;   /* the plain value (or a value tagged by another context) */
    PyObject *meta;    /* the context's metadata: a tangent, a tape index, ... */
    PyObject *tagkey;  /* the tagging context's tag identity when the tag was made */
    PyObject *ctx;     /* the tagging context */
    PyObject *weakreflist;
} TaggedObject;

#endif
