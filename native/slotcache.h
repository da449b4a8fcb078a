/* A cache of where instances keep their __slots__ attributes, shared by the two C modules
 * (each has its own table).  The contexts' tag identity and tape, the runtime's and its
 * spec's flags are read once per operation or per run: a slot read at its offset costs a
 * few instructions, getattr a type look-up and a descriptor call.
 *
 * What a class says about a name is remembered per (name, class) under the class's version
 * tag, which CPython changes whenever the class or one of its bases changes (as its own
 * attribute caches do): no reference is held.  Names must outlive the cache's use of them:
 * interned module statics, or strings a module-level table holds.
 */
#ifndef OVERDUB_SLOTCACHE_H
#define OVERDUB_SLOTCACHE_H

#include <Python.h>
#include <stdint.h>
#include <structmember.h>

typedef struct {
    PyObject *name;
    PyTypeObject *type;
    unsigned int version;  /* type->tp_version_tag when found; 0: empty */
    Py_ssize_t offset;     /* the slot's offset, or -1: not a slot of that class */
} SlotCacheEntry;

#define SLOT_CACHE_SIZE 64  /* 2**6: the hash's top six bits */
static SlotCacheEntry slot_cache[SLOT_CACHE_SIZE];

/* Where obj keeps `name` when its class declares it a writable object slot (a Python
   __slots__ entry): the member descriptor found in the class, checked as its __get__ checks
   it; NULL otherwise.  The slot itself may be empty (NULL: never set). */
static inline PyObject **
instance_slot(PyObject *obj, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(obj);
    /* (a multiplicative hash: strings of one size class sit at regular addresses) */
    uint64_t h = ((uint64_t)(uintptr_t)name ^ ((uint64_t)(uintptr_t)tp << 7)) * UINT64_C(0x9E3779B97F4A7C15);
    SlotCacheEntry *e = &slot_cache[h >> 58];
    if (e->name == name && e->type == tp && e->version != 0 && e->version == tp->tp_version_tag) {
        return e->offset < 0 ? NULL : (PyObject **)((char *)obj + e->offset);
    }
    PyObject *descr = _PyType_Lookup(tp, name);  /* (borrowed; assigns tp a version tag) */
    Py_ssize_t offset = -1;
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY)
            && (tp == PyDescr_TYPE(descr) || PyObject_TypeCheck(obj, PyDescr_TYPE(descr)))) {
            offset = m->offset;
        }
    }
    if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) && tp->tp_version_tag != 0) {
        e->name = name;
        e->type = tp;
        e->version = tp->tp_version_tag;
        e->offset = offset;
    }
    return offset < 0 ? NULL : (PyObject **)((char *)obj + offset);
}

/* getattr(obj, name) (a new reference), read straight from the slot when obj's class
   declares name a slot, holds a value there and looks attributes up as object does */
static inline PyObject *
slot_or_getattr(PyObject *obj, PyObject *name)
{
    if (Py_TYPE(obj)->tp_getattro == PyObject_GenericGetAttr) {
        PyObject **slot = instance_slot(obj, name);
        if (slot != NULL && *slot != NULL) {
            return Py_NewRef(*slot);
        }
    }
    return PyObject_GetAttr(obj, name);
}

#endif
