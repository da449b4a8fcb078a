/* _overdub_native: the C layer of overdub's runtime.
 *
 * TaggedBase is the storage of a tagged value (see tagged.h).  overdub.tagging.Tagged
 * subclasses it and adds, in Python, every protocol a tagged value answers; keeping the
 * fields in C makes a tagged value cheap to build (from Python and from C kernels such as
 * capstan's scalar arithmetic) and cheap to read.
 *
 * overdub/_native.py chooses between this module and its pure-Python reference
 * (OVERDUB_PURE_PYTHON=1); both must behave the same.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <string.h>

#include "tagged.h"

static PyObject *str_tagkey;  /* "_tagkey" */

/* Tagged(value, meta, ctx): the tag identity is read from ctx now, as a later
   ctx.renew_tags() must leave this value behind as a plain one */
static PyObject *
tagged_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"value", "meta", "ctx", NULL};
    PyObject *value, *meta, *ctx;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 3) {
        value = PyTuple_GET_ITEM(args, 0);
        meta = PyTuple_GET_ITEM(args, 1);
        ctx = PyTuple_GET_ITEM(args, 2);
    }
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:Tagged", kwlist, &value, &meta, &ctx)) {
        return NULL;
    }
    PyObject *tagkey = PyObject_GetAttr(ctx, str_tagkey);
    if (tagkey == NULL) {
        return NULL;
    }
    TaggedObject *self = (TaggedObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(tagkey);
        return NULL;
    }
    Py_INCREF(value);
    self->value = value;
    Py_INCREF(meta);
    self->meta = meta;
    self->tagkey = tagkey;
    Py_INCREF(ctx);
    self->ctx = ctx;
    return (PyObject *)self;
}

static int
tagged_traverse(TaggedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->value);
    Py_VISIT(self->meta);
    Py_VISIT(self->tagkey);
    Py_VISIT(self->ctx);
    return 0;
}

static int
tagged_clear(TaggedObject *self)
{
    Py_CLEAR(self->value);
    Py_CLEAR(self->meta);
    Py_CLEAR(self->tagkey);
    Py_CLEAR(self->ctx);
    return 0;
}

static void
tagged_dealloc(TaggedObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    tagged_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef tagged_members[] = {
    {"_value", T_OBJECT_EX, offsetof(TaggedObject, value), 0, "the plain value"},
    {"_meta", T_OBJECT_EX, offsetof(TaggedObject, meta), 0, "the context's metadata"},
    {"_tagkey", T_OBJECT_EX, offsetof(TaggedObject, tagkey), 0, "the tag identity"},
    {"_ctx", T_OBJECT_EX, offsetof(TaggedObject, ctx), 0, "the tagging context"},
    {NULL}
};

static PyTypeObject TaggedBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.TaggedBase",
    .tp_doc = "The fields of a tagged value (overdub.tagging.Tagged adds its protocols).",
    .tp_basicsize = sizeof(TaggedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = tagged_new,
    .tp_dealloc = (destructor)tagged_dealloc,
    .tp_traverse = (traverseproc)tagged_traverse,
    .tp_clear = (inquiry)tagged_clear,
    .tp_members = tagged_members,
    .tp_weaklistoffset = offsetof(TaggedObject, weakreflist),
};

/* ------------------------------------------------------------------ guarded operators */

/* GuardedOperator(name, guard, slot, pre, fn): what rewritten code calls for one binary
 * or comparison operator, `op(a, b)`.  It does what the pure-Python rewrite inlines:
 *
 *     if pre is not None: pre(fn, a, b)          # a prehook called inline
 *     if guard and type(a) in guard and type(b) in guard:
 *         return a <op> b                        # CPython's own operator
 *     return slot(a, b)                          # the context's dispatch
 *
 * guard is a set of exact types (empty: the context sees every operation); slot is the
 * runtime's operator slot (a bound method is called unbound, saving a hop). */

enum {
    G_ADD, G_AND, G_FLOOR_DIVIDE, G_LSHIFT, G_MATRIX_MULTIPLY, G_MULTIPLY, G_REMAINDER, G_OR,
    G_POWER, G_RSHIFT, G_SUBTRACT, G_TRUE_DIVIDE, G_XOR,
    G_INPLACE_ADD, G_INPLACE_AND, G_INPLACE_FLOOR_DIVIDE, G_INPLACE_LSHIFT,
    G_INPLACE_MATRIX_MULTIPLY, G_INPLACE_MULTIPLY, G_INPLACE_REMAINDER, G_INPLACE_OR,
    G_INPLACE_POWER, G_INPLACE_RSHIFT, G_INPLACE_SUBTRACT, G_INPLACE_TRUE_DIVIDE, G_INPLACE_XOR,
    G_LT, G_LE, G_EQ, G_NE, G_GT, G_GE, G_COUNT
};

static const char *guarded_names[G_COUNT] = {
    "ADD", "AND", "FLOOR_DIVIDE", "LSHIFT", "MATRIX_MULTIPLY", "MULTIPLY", "REMAINDER", "OR",
    "POWER", "RSHIFT", "SUBTRACT", "TRUE_DIVIDE", "XOR",
    "INPLACE_ADD", "INPLACE_AND", "INPLACE_FLOOR_DIVIDE", "INPLACE_LSHIFT",
    "INPLACE_MATRIX_MULTIPLY", "INPLACE_MULTIPLY", "INPLACE_REMAINDER", "INPLACE_OR",
    "INPLACE_POWER", "INPLACE_RSHIFT", "INPLACE_SUBTRACT", "INPLACE_TRUE_DIVIDE", "INPLACE_XOR",
    "LT", "LE", "EQ", "NE", "GT", "GE",
};

typedef struct {
    PyObject_HEAD
    int op;               /* G_* */
    PyObject *guard;      /* a set of exact types, or NULL when empty */
    PyObject *slot;       /* the slot itself */
    PyObject *slot_func;  /* the slot's function when it is a bound method, else NULL */
    PyObject *slot_self;
    PyObject *pre;        /* the inline prehook, or NULL */
    PyObject *fn;         /* the operator function the prehook is told about */
    vectorcallfunc vectorcall;
} GuardedObject;

static PyObject *
native_operation(int op, PyObject *a, PyObject *b)
{
    switch (op) {
    case G_ADD: return PyNumber_Add(a, b);
    case G_AND: return PyNumber_And(a, b);
    case G_FLOOR_DIVIDE: return PyNumber_FloorDivide(a, b);
    case G_LSHIFT: return PyNumber_Lshift(a, b);
    case G_MATRIX_MULTIPLY: return PyNumber_MatrixMultiply(a, b);
    case G_MULTIPLY: return PyNumber_Multiply(a, b);
    case G_REMAINDER: return PyNumber_Remainder(a, b);
    case G_OR: return PyNumber_Or(a, b);
    case G_POWER: return PyNumber_Power(a, b, Py_None);
    case G_RSHIFT: return PyNumber_Rshift(a, b);
    case G_SUBTRACT: return PyNumber_Subtract(a, b);
    case G_TRUE_DIVIDE: return PyNumber_TrueDivide(a, b);
    case G_XOR: return PyNumber_Xor(a, b);
    case G_INPLACE_ADD: return PyNumber_InPlaceAdd(a, b);
    case G_INPLACE_AND: return PyNumber_InPlaceAnd(a, b);
    case G_INPLACE_FLOOR_DIVIDE: return PyNumber_InPlaceFloorDivide(a, b);
    case G_INPLACE_LSHIFT: return PyNumber_InPlaceLshift(a, b);
    case G_INPLACE_MATRIX_MULTIPLY: return PyNumber_InPlaceMatrixMultiply(a, b);
    case G_INPLACE_MULTIPLY: return PyNumber_InPlaceMultiply(a, b);
    case G_INPLACE_REMAINDER: return PyNumber_InPlaceRemainder(a, b);
    case G_INPLACE_OR: return PyNumber_InPlaceOr(a, b);
    case G_INPLACE_POWER: return PyNumber_InPlacePower(a, b, Py_None);
    case G_INPLACE_RSHIFT: return PyNumber_InPlaceRshift(a, b);
    case G_INPLACE_SUBTRACT: return PyNumber_InPlaceSubtract(a, b);
    case G_INPLACE_TRUE_DIVIDE: return PyNumber_InPlaceTrueDivide(a, b);
    case G_INPLACE_XOR: return PyNumber_InPlaceXor(a, b);
    case G_LT: return PyObject_RichCompare(a, b, Py_LT);
    case G_LE: return PyObject_RichCompare(a, b, Py_LE);
    case G_EQ: return PyObject_RichCompare(a, b, Py_EQ);
    case G_NE: return PyObject_RichCompare(a, b, Py_NE);
    case G_GT: return PyObject_RichCompare(a, b, Py_GT);
    case G_GE: return PyObject_RichCompare(a, b, Py_GE);
    }
    PyErr_SetString(PyExc_SystemError, "GuardedOperator: unknown operation");
    return NULL;
}

static PyObject *
guarded_vectorcall(GuardedObject *g, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a guarded operator takes exactly two operands");
        return NULL;
    }
    PyObject *a = args[0], *b = args[1];
    if (g->pre != NULL) {
        PyObject *call[3] = {g->fn, a, b};
        PyObject *r = PyObject_Vectorcall(g->pre, call, 3, NULL);
        if (r == NULL) {
            return NULL;
        }
        Py_DECREF(r);
    }
    if (g->guard != NULL) {
        int in = PySet_Contains(g->guard, (PyObject *)Py_TYPE(a));
        if (in > 0) {
            in = PySet_Contains(g->guard, (PyObject *)Py_TYPE(b));
        }
        if (in < 0) {
            return NULL;
        }
        if (in) {
            return native_operation(g->op, a, b);
        }
    }
    if (g->slot_func != NULL) {
        PyObject *call[3] = {g->slot_self, a, b};
        return PyObject_Vectorcall(g->slot_func, call, 3, NULL);
    }
    return PyObject_Vectorcall(g->slot, args, 2, NULL);
}

static PyObject *
guarded_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"name", "guard", "slot", "pre", "fn", NULL};
    const char *name;
    PyObject *guard, *slot, *pre, *fn;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOOO:GuardedOperator", kwlist,
                                     &name, &guard, &slot, &pre, &fn)) {
        return NULL;
    }
    int op = -1;
    for (int i = 0; i < G_COUNT; i++) {
        if (strcmp(name, guarded_names[i]) == 0) {
            op = i;
        }
    }
    if (op < 0) {
        PyErr_Format(PyExc_ValueError, "GuardedOperator: unknown operator %s", name);
        return NULL;
    }
    if (!PyAnySet_Check(guard)) {
        PyErr_SetString(PyExc_TypeError, "GuardedOperator: guard must be a set of types");
        return NULL;
    }
    if (!PyCallable_Check(slot) || (pre != Py_None && !PyCallable_Check(pre))) {
        PyErr_SetString(PyExc_TypeError, "GuardedOperator: slot and pre must be callable");
        return NULL;
    }
    GuardedObject *g = (GuardedObject *)type->tp_alloc(type, 0);
    if (g == NULL) {
        return NULL;
    }
    g->op = op;
    g->guard = PySet_GET_SIZE(guard) ? Py_NewRef(guard) : NULL;
    g->slot = Py_NewRef(slot);
    if (PyMethod_Check(slot)) {
        g->slot_func = Py_NewRef(PyMethod_GET_FUNCTION(slot));
        g->slot_self = Py_NewRef(PyMethod_GET_SELF(slot));
    }
    g->pre = pre == Py_None ? NULL : Py_NewRef(pre);
    g->fn = Py_NewRef(fn);
    g->vectorcall = (vectorcallfunc)guarded_vectorcall;
    return (PyObject *)g;
}

static int
guarded_traverse(GuardedObject *g, visitproc visit, void *arg)
{
    Py_VISIT(g->guard);
    Py_VISIT(g->slot);
    Py_VISIT(g->slot_func);
    Py_VISIT(g->slot_self);
    Py_VISIT(g->pre);
    Py_VISIT(g->fn);
    return 0;
}

static int
guarded_clear(GuardedObject *g)
{
    Py_CLEAR(g->guard);
    Py_CLEAR(g->slot);
    Py_CLEAR(g->slot_func);
    Py_CLEAR(g->slot_self);
    Py_CLEAR(g->pre);
    Py_CLEAR(g->fn);
    return 0;
}

static void
guarded_dealloc(GuardedObject *g)
{
    PyObject_GC_UnTrack(g);
    guarded_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *
guarded_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static PyObject *
guarded_repr(GuardedObject *g)
{
    return PyUnicode_FromFormat("<overdub guarded operator %s>", guarded_names[g->op]);
}

static PyObject *
guarded_get_slot(GuardedObject *g, void *closure)
{
    return Py_NewRef(g->slot);
}

static PyGetSetDef guarded_getset[] = {
    {"slot", (getter)guarded_get_slot, NULL, "the context's slot for this operator", NULL},
    {NULL}
};

static PyTypeObject Guarded_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.GuardedOperator",
    .tp_doc = "GuardedOperator(name, guard, slot, pre, fn): one operator of rewritten code.",
    .tp_basicsize = sizeof(GuardedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(GuardedObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = guarded_new,
    .tp_repr = (reprfunc)guarded_repr,
    .tp_dealloc = (destructor)guarded_dealloc,
    .tp_traverse = (traverseproc)guarded_traverse,
    .tp_clear = (inquiry)guarded_clear,
    .tp_getset = guarded_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_overdub_native",
    .m_doc = "The C layer of overdub's runtime (see overdub/_native.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__overdub_native(void)
{
    str_tagkey = PyUnicode_InternFromString("_tagkey");
    if (str_tagkey == NULL || PyType_Ready(&TaggedBase_Type) < 0 || PyType_Ready(&Guarded_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&TaggedBase_Type);
    Py_INCREF(&Guarded_Type);
    if (PyModule_AddObject(m, "GuardedOperator", (PyObject *)&Guarded_Type) < 0
        || PyModule_AddObject(m, "TaggedBase", (PyObject *)&TaggedBase_Type) < 0
        || PyModule_AddIntConstant(m, "ABI", OVERDUB_NATIVE_ABI) < 0
        || PyModule_AddIntConstant(m, "TAGGED_SIZE", (long)sizeof(TaggedObject)) < 0) {
        Py_DECREF(&TaggedBase_Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
