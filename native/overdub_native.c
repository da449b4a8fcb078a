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
#include "slotcache.h"

static PyObject *str_tagkey;  /* "_tagkey" */
static PyObject *str_name;  /* "__name__" */
static int lasting_function(PyObject *f);

/* Calling a routed Python function from C re-enters the interpreter loop: C recursion.
 * CPython 3.12+ bounds it itself (its C recursion limit).  3.11 does not: there a routed
 * call checks how much of the thread's C stack is left (read once per thread with
 * pthread_getattr_np), and raises RecursionError when less than a margin is, so that a
 * recursion the program allows (sys.setrecursionlimit) ends in RecursionError rather
 * than a C stack overflow, while the recursion limit itself counts the program's frames
 * alone, as in plain Python.  Where the stack cannot be read, each such call counts
 * against the recursion limit instead (a routed recursion then reaches half its depth). */
#if PY_VERSION_HEX < 0x030C0000
#if defined(__linux__) && defined(__GLIBC__)
#include <pthread.h>
#define HAVE_STACK_BOUNDS 1
#endif

/* read on every routed call: the initial-exec model reads them without a call to
   __tls_get_addr (a few bytes of the static TLS space glibc keeps for loaded modules) */
#if defined(__GNUC__)
#define FAST_TLS __attribute__((tls_model("initial-exec")))
#else
#define FAST_TLS
#endif

/* per thread: 0 not known yet, 1 the stack is checked, 2 calls count against the limit */
static _Thread_local int callee_mode FAST_TLS;
static _Thread_local char *stack_floor FAST_TLS;  /* below it, a routed call raises RecursionError */

static void
read_stack_bounds(void)
{
    callee_mode = 2;
#ifdef HAVE_STACK_BOUNDS
    pthread_attr_t attr;
    void *low;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return;
    }
    int err = pthread_attr_getstack(&attr, &low, &size);
    pthread_attr_destroy(&attr);
    char here;
    if (err != 0 || size == 0 || &here < (char *)low || &here >= (char *)low + size) {
        return;
    }
    size_t margin = size / 4;  /* (what CPython's own C code and the hooks may still need) */
    margin = margin > (1 << 20) ? (1 << 20) : margin < (1 << 16) ? (1 << 16) : margin;
    if (margin >= size) {
        return;
    }
    stack_floor = (char *)low + margin;
    callee_mode = 1;
#endif
}

static inline int
enter_callee(void)
{
    if (callee_mode == 0) {
        read_stack_bounds();
    }
    if (callee_mode == 1) {
        char here;
        if (&here < stack_floor) {
            PyErr_SetString(PyExc_RecursionError,
                            "maximum recursion depth exceeded while calling a Python object");
            return 0;
        }
        return 1;
    }
    return Py_EnterRecursiveCall(" while calling a Python object") == 0;
}

#define ENTER_CALLEE() enter_callee()
#define LEAVE_CALLEE() ((void)(callee_mode == 1 ? 0 : (Py_LeaveRecursiveCall(), 0)))
#else
#define ENTER_CALLEE() 1
#define LEAVE_CALLEE() ((void)0)
#endif

/* Python code of overdub's own (resolving a callee on its first call, the entry's set-up) and
 * of the context (its hooks) runs with MACHINERY_LEVELS more levels of this thread's recursion
 * limit: a program that sets its limit a few frames above its current depth
 * (test_tomllib, test_exceptions.test_recursion_in_except_handler) then reaches the depth it
 * reaches plainly, where the machinery's frames would take its last levels.  Only the
 * Python-frame count is raised (3.12+ keep C recursion apart, and it stays as it is). */
#define MACHINERY_LEVELS 200

static PyObject *
call_machinery(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyThreadState *ts = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030C0000
    ts->py_recursion_remaining += MACHINERY_LEVELS;
    PyObject *r = PyObject_Vectorcall(callable, args, nargsf, kwnames);
    ts->py_recursion_remaining -= MACHINERY_LEVELS;
#else
    ts->recursion_remaining += MACHINERY_LEVELS;
    PyObject *r = PyObject_Vectorcall(callable, args, nargsf, kwnames);
    ts->recursion_remaining -= MACHINERY_LEVELS;
#endif
    return r;
}

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

/* Tagged values are made and dropped once per differentiated operation: the one Python
   subclass overdub.tagging.Tagged (adopt_tagged) recycles its memory through a free list,
   as CPython does for floats and tuples, instead of the allocator and subtype_dealloc's
   general path.  The list holds untracked memory only: no object, no reference. */
#define TAGGED_FREELIST_MAX 1024
static PyTypeObject TaggedBase_Type;
static PyObject *tagged_freelist[TAGGED_FREELIST_MAX];
static int tagged_numfree;
static PyTypeObject *tagged_adopted;  /* overdub.tagging.Tagged (a strong reference) */

static PyObject *
tagged_alloc(PyTypeObject *type, Py_ssize_t nitems)
{
    if (type == tagged_adopted && nitems == 0 && tagged_numfree > 0) {
        PyObject *op = tagged_freelist[--tagged_numfree];
        memset((char *)op + sizeof(PyObject), 0, sizeof(TaggedObject) - sizeof(PyObject));
        PyObject_Init(op, type);  /* (a new reference; a heap type is increfed) */
        PyObject_GC_Track(op);
        return op;
    }
    return PyType_GenericAlloc(type, nitems);
}

/* the adopted class's tp_dealloc (and its subclasses' base deallocator) */
static void
tagged_recycle(PyObject *op)
{
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    TaggedObject *self = (TaggedObject *)op;
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs(op);
    }
    tagged_clear(self);
    if (type == tagged_adopted && tagged_numfree < TAGGED_FREELIST_MAX) {
        tagged_freelist[tagged_numfree++] = op;
    }
    else {
        type->tp_free(op);
    }
    Py_DECREF(type);  /* (a heap type's instance holds a reference to it) */
}

/* adopt_tagged(cls): cls, the Python subclass of TaggedBase that adds no fields, gets the
   free list.  Called once, when overdub.tagging defines Tagged. */
static PyObject *
adopt_tagged(PyObject *self, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &TaggedBase_Type)
        || ((PyTypeObject *)cls)->tp_basicsize != sizeof(TaggedObject)
        || !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)
        || ((PyTypeObject *)cls)->tp_free != PyObject_GC_Del) {
        PyErr_SetString(PyExc_TypeError,
                        "adopt_tagged(cls): a Python subclass of TaggedBase that adds no fields");
        return NULL;
    }
    if (tagged_adopted != NULL && tagged_adopted != (PyTypeObject *)cls) {
        PyErr_SetString(PyExc_RuntimeError, "adopt_tagged: a class was adopted already");
        return NULL;
    }
    PyTypeObject *tp = (PyTypeObject *)cls;
    tp->tp_alloc = tagged_alloc;
    tp->tp_dealloc = tagged_recycle;
    tagged_adopted = (PyTypeObject *)Py_NewRef(cls);
    Py_RETURN_NONE;
}

/* tag_each(values, metas, ctx): [Tagged(v, m, ctx) for v, m in zip(values, metas)] for two
   lists of one length, the tag identity read once (seeding a point of many floats: a list
   of 100 is a common one).  Items are read after each allocation, which can collect. */
static PyObject *
tag_each(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])
        || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "tag_each(values, metas, ctx): two lists of one length");
        return NULL;
    }
    if (tagged_adopted == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tag_each: no tagged-value class was adopted");
        return NULL;
    }
    PyObject *values = args[0], *metas = args[1], *ctx = args[2];
    PyObject *tagkey = PyObject_GetAttr(ctx, str_tagkey);
    if (tagkey == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(tagkey);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        TaggedObject *t = (TaggedObject *)tagged_alloc(tagged_adopted, 0);
        if (t == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, i, (PyObject *)t);
        if (PyList_GET_SIZE(values) != n || PyList_GET_SIZE(metas) != n) {
            PyErr_SetString(PyExc_RuntimeError, "tag_each: a list changed size");
            goto fail;
        }
        t->value = Py_NewRef(PyList_GET_ITEM(values, i));
        t->meta = Py_NewRef(PyList_GET_ITEM(metas, i));
        t->tagkey = Py_NewRef(tagkey);
        t->ctx = Py_NewRef(ctx);
    }
    Py_DECREF(tagkey);
    return out;
fail:
    Py_DECREF(tagkey);
    Py_DECREF(out);
    return NULL;
}

/* value_of(t), metadata_of(t), tag_of(t), context_of(t): a tagged value's fields, the
   accessors overdub.tagging gives the packages built on overdub; one C call each, and a
   clear TypeError for anything but a tagged value. */
static PyObject *
tagged_field(PyObject *x, Py_ssize_t offset, const char *name)
{
    if (Py_TYPE(x) != tagged_adopted && !PyType_IsSubtype(Py_TYPE(x), &TaggedBase_Type)) {
        PyErr_Format(PyExc_TypeError, "overdub.tagging.%s(t): t must be a tagged value, not %.200s",
                     name, Py_TYPE(x)->tp_name);
        return NULL;
    }
    PyObject *field = *(PyObject **)((char *)x + offset);
    if (field == NULL) {  /* (cleared by the collector while breaking a cycle) */
        PyErr_Format(PyExc_AttributeError, "overdub.tagging.%s(t): t has been cleared", name);
        return NULL;
    }
    return Py_NewRef(field);
}

static PyObject *
value_of(PyObject *self, PyObject *x) { return tagged_field(x, offsetof(TaggedObject, value), "value_of"); }

static PyObject *
metadata_of(PyObject *self, PyObject *x) { return tagged_field(x, offsetof(TaggedObject, meta), "metadata_of"); }

static PyObject *
tag_of(PyObject *self, PyObject *x) { return tagged_field(x, offsetof(TaggedObject, tagkey), "tag_of"); }

static PyObject *
context_of(PyObject *self, PyObject *x) { return tagged_field(x, offsetof(TaggedObject, ctx), "context_of"); }

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

/* GuardedOperator(name, guard, slot, pre, fn, post=None): what rewritten code calls for one
 * binary or comparison operator, `op(a, b)`.  It does what the pure-Python rewrite inlines
 * (and, for a posthook, what the operator's slot does):
 *
 *     if pre is not None: pre(fn, a, b)          # a prehook called inline
 *     if guard and type(a) in guard and type(b) in guard:
 *         r = a <op> b                           # CPython's own operator
 *         if post is not None: post(r, fn, a, b) # a posthook called inline
 *         return r
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
    PyObject *post;       /* the inline posthook, or NULL */
    PyObject *fn;         /* the operator function the hooks are told about */
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
        PyObject *r = call_machinery(g->pre, call, 3, NULL);
        if (r == NULL) {
            return NULL;
        }
        Py_DECREF(r);
    }
    /* (a tagged value is never among the guard's builtin types: it goes to the slot) */
    if (g->guard != NULL && Py_TYPE(a) != tagged_adopted && Py_TYPE(b) != tagged_adopted) {
        int in = PySet_Contains(g->guard, (PyObject *)Py_TYPE(a));
        if (in > 0) {
            in = PySet_Contains(g->guard, (PyObject *)Py_TYPE(b));
        }
        if (in < 0) {
            return NULL;
        }
        if (in) {
            PyObject *r = native_operation(g->op, a, b);
            if (r != NULL && g->post != NULL) {
                PyObject *call[4] = {r, g->fn, a, b};
                PyObject *h = call_machinery(g->post, call, 4, NULL);
                if (h == NULL) {
                    Py_CLEAR(r);
                }
                Py_XDECREF(h);
            }
            return r;
        }
    }
    if (!ENTER_CALLEE()) {
        return NULL;
    }
    PyObject *r;
    if (g->slot_func != NULL) {
        PyObject *call[3] = {g->slot_self, a, b};
        /* (the slot is the runtime's own, a C kernel or a Python method: called through its
           vectorcall pointer directly, without the generic call's result check) */
        vectorcallfunc direct = PyVectorcall_Function(g->slot_func);
        r = direct != NULL ? direct(g->slot_func, call, 3, NULL) : PyObject_Vectorcall(g->slot_func, call, 3, NULL);
    }
    else {
        r = PyObject_Vectorcall(g->slot, args, 2, NULL);
    }
    LEAVE_CALLEE();
    return r;
}

static PyObject *
guarded_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"name", "guard", "slot", "pre", "fn", "post", NULL};
    const char *name;
    PyObject *guard, *slot, *pre, *fn, *post = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOOO|O:GuardedOperator", kwlist,
                                     &name, &guard, &slot, &pre, &fn, &post)) {
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
    if (!PyCallable_Check(slot) || (pre != Py_None && !PyCallable_Check(pre))
        || (post != Py_None && !PyCallable_Check(post))) {
        PyErr_SetString(PyExc_TypeError, "GuardedOperator: slot, pre and post must be callable");
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
    g->post = post == Py_None ? NULL : Py_NewRef(post);
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
    Py_VISIT(g->post);
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
    Py_CLEAR(g->post);
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

/* ------------------------------------------------------------------ attribute loads */

/* GuardedAttribute(fast_types, native, attrs, all_names, slot[, fn, prehook, posthook]): what
 * rewritten code calls for `o.name`, `getattr(o, name)`.  For an object whose exact type is
 * in fast_types (types no primitive of the context takes; the context's hooks, when it has
 * hooks and nothing else to say about attribute loads, are called around it, with the
 * machinery's recursion levels) it does what the Python slot's last branch does:
 *
 *     if type(o) in native or name not in attrs.get(type(o), all_names): return getattr(o, name)
 *
 * and calls the slot otherwise. */

typedef struct {
    PyObject_HEAD
    PyObject *fast_types;  /* frozenset of exact types */
    PyObject *native;      /* set of exact types (overdub's NATIVE) */
    PyObject *attrs;       /* dict: type -> the names CPython's own rules give meaning to */
    PyObject *all_names;
    PyObject *slot;
    PyObject *fn, *pre, *post;  /* the operator (getattr, operator.getitem) and the context's
                                   prehook and posthook to call around the fast branch, or NULL */
    int invert;                 /* (GuardedContains: `not in`) */
    int modules;                /* (GuardedAttribute) plain modules are in fast_types */
    vectorcallfunc vectorcall;
} AttributeObject;

/* the fast branch's operation with the context's hooks around it, as the slot calls them
   (prehook(fn, a, b) before, posthook(r, fn, a, b) after a result) */
static PyObject *
hooked(AttributeObject *g, PyObject *a, PyObject *b, PyObject *(*operation)(PyObject *, PyObject *))
{
    if (g->pre != NULL) {
        PyObject *call[3] = {g->fn, a, b};
        PyObject *h = call_machinery(g->pre, call, 3, NULL);
        if (h == NULL) {
            return NULL;
        }
        Py_DECREF(h);
    }
    PyObject *r = operation(a, b);
    if (r != NULL && g->post != NULL) {
        PyObject *call[4] = {r, g->fn, a, b};
        PyObject *h = call_machinery(g->post, call, 4, NULL);
        if (h == NULL) {
            Py_CLEAR(r);
        }
        Py_XDECREF(h);
    }
    return r;
}

/* getattr(m, name) for an instance m of CPython's own module type: a name found in its
   __dict__ is the attribute (the type's only data descriptors, __dict__, __class__ and
   __annotations__, are dunder names, which take CPython's way), any other goes to getattr
   (a type attribute, the module's __getattr__, the AttributeError) */
static PyObject *
module_attribute(PyObject *m, PyObject *name)
{
    if (PyUnicode_GET_LENGTH(name) < 2 || PyUnicode_READ_CHAR(name, 0) != '_'
        || PyUnicode_READ_CHAR(name, 1) != '_') {
        PyObject *v = PyDict_GetItemWithError(PyModule_GetDict(m), name);  /* (borrowed) */
        if (v != NULL) {
            return Py_NewRef(v);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return PyObject_GetAttr(m, name);
}

/* whether accessing attribute name on instances of tp runs no Python code -- the slots' test
   `tp in native or name not in attrs.get(tp, all_names)`: 1, 0, or -1 with an error set */
static int
plain_attribute(AttributeObject *g, PyObject *tp, PyObject *name)
{
    int plain = PySet_Contains(g->native, tp);
    if (plain != 0) {
        return plain;
    }
    PyObject *names = PyDict_GetItemWithError(g->attrs, tp);
    if (names == NULL && PyErr_Occurred()) {
        return -1;
    }
    int special = PySequence_Contains(names != NULL ? names : g->all_names, name);
    return special < 0 ? -1 : !special;
}

static PyObject *
attribute_vectorcall(AttributeObject *g, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && PyUnicode_CheckExact(args[1])) {
        if (g->modules && PyModule_CheckExact(args[0])) {
            /* (CPython's module type has no Python descriptors: every name is plain) */
            return hooked(g, args[0], args[1], module_attribute);
        }
        PyObject *tp = (PyObject *)Py_TYPE(args[0]);
        int fast = PySet_Contains(g->fast_types, tp);
        if (fast < 0) {
            return NULL;
        }
        if (fast) {
            int plain = plain_attribute(g, tp, args[1]);
            if (plain < 0) {
                return NULL;
            }
            if (plain) {
                return hooked(g, args[0], args[1], PyObject_GetAttr);
            }
        }
    }
    return PyObject_Vectorcall(g->slot, args, nargsf, kwnames);
}

/* GuardedSetattr(native, attrs, all_names, slot, fn, prehook, posthook): `o.name = v` of
 * rewritten code, called as (o, name, v), in a context where no primitive takes setattr: the
 * slot's last branch (`setattr(o, name, v)` when `type(o) in native or name not in
 * attrs.get(type(o), all_names)`) between the context's hooks, the slot otherwise. */

static PyObject *
setattr_vectorcall(AttributeObject *g, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) == 3 && kwnames == NULL && PyUnicode_CheckExact(args[1])) {
        PyObject *tp = (PyObject *)Py_TYPE(args[0]);
        int plain = plain_attribute(g, tp, args[1]);
        if (plain < 0) {
            return NULL;
        }
        if (plain) {
            if (g->pre != NULL) {
                PyObject *call[4] = {g->fn, args[0], args[1], args[2]};
                PyObject *h = call_machinery(g->pre, call, 4, NULL);
                if (h == NULL) {
                    return NULL;
                }
                Py_DECREF(h);
            }
            if (PyObject_SetAttr(args[0], args[1], args[2]) < 0) {
                return NULL;
            }
            if (g->post != NULL) {
                PyObject *call[5] = {Py_None, g->fn, args[0], args[1], args[2]};
                PyObject *h = call_machinery(g->post, call, 5, NULL);
                if (h == NULL) {
                    return NULL;
                }
                Py_DECREF(h);
            }
            Py_RETURN_NONE;
        }
    }
    return PyObject_Vectorcall(g->slot, args, nargsf, kwnames);
}

static PyObject *
setattr_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *native, *attrs, *all_names, *slot, *fn, *pre, *post;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "GuardedSetattr takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!OOOOO:GuardedSetattr", &native, &PyDict_Type, &attrs, &all_names,
                          &slot, &fn, &pre, &post)) {
        return NULL;
    }
    if (!PyAnySet_Check(native) || !PyCallable_Check(slot)) {
        PyErr_SetString(PyExc_TypeError, "GuardedSetattr: native must be a set, slot callable");
        return NULL;
    }
    AttributeObject *g = (AttributeObject *)type->tp_alloc(type, 0);
    if (g == NULL) {
        return NULL;
    }
    g->native = Py_NewRef(native);
    g->attrs = Py_NewRef(attrs);
    g->all_names = Py_NewRef(all_names);
    g->slot = Py_NewRef(slot);
    g->fn = Py_NewRef(fn);
    g->pre = pre == Py_None ? NULL : Py_NewRef(pre);
    g->post = post == Py_None ? NULL : Py_NewRef(post);
    g->vectorcall = (vectorcallfunc)setattr_vectorcall;
    return (PyObject *)g;
}

static PyObject *
attribute_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast_types, *native, *attrs, *all_names, *slot, *fn = Py_None, *pre = Py_None, *post = Py_None;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "GuardedAttribute takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OO!OO|OOO:GuardedAttribute", &PyFrozenSet_Type, &fast_types, &native,
                          &PyDict_Type, &attrs, &all_names, &slot, &fn, &pre, &post)) {
        return NULL;
    }
    if (!PyAnySet_Check(native) || !PyCallable_Check(slot)) {
        PyErr_SetString(PyExc_TypeError, "GuardedAttribute: native must be a set, slot callable");
        return NULL;
    }
    AttributeObject *g = (AttributeObject *)type->tp_alloc(type, 0);
    if (g == NULL) {
        return NULL;
    }
    g->fast_types = Py_NewRef(fast_types);
    g->native = Py_NewRef(native);
    g->attrs = Py_NewRef(attrs);
    g->all_names = Py_NewRef(all_names);
    g->slot = Py_NewRef(slot);
    g->fn = Py_NewRef(fn);
    g->pre = pre == Py_None ? NULL : Py_NewRef(pre);
    g->post = post == Py_None ? NULL : Py_NewRef(post);
    g->vectorcall = (vectorcallfunc)attribute_vectorcall;
    g->modules = PySet_Contains(fast_types, (PyObject *)&PyModule_Type);
    if (g->modules < 0) {
        Py_DECREF(g);
        return NULL;
    }
    return (PyObject *)g;
}

static int
attribute_traverse(AttributeObject *g, visitproc visit, void *arg)
{
    Py_VISIT(g->fast_types);
    Py_VISIT(g->native);
    Py_VISIT(g->attrs);
    Py_VISIT(g->all_names);
    Py_VISIT(g->slot);
    Py_VISIT(g->fn);
    Py_VISIT(g->pre);
    Py_VISIT(g->post);
    return 0;
}

static int
attribute_clear(AttributeObject *g)
{
    Py_CLEAR(g->fast_types);
    Py_CLEAR(g->native);
    Py_CLEAR(g->attrs);
    Py_CLEAR(g->all_names);
    Py_CLEAR(g->slot);
    Py_CLEAR(g->fn);
    Py_CLEAR(g->pre);
    Py_CLEAR(g->post);
    return 0;
}

static void
attribute_dealloc(AttributeObject *g)
{
    PyObject_GC_UnTrack(g);
    attribute_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *
attribute_get_slot(AttributeObject *g, void *closure)
{
    return Py_NewRef(g->slot);
}

static PyGetSetDef attribute_getset[] = {
    {"slot", (getter)attribute_get_slot, NULL, "the context's slot for attribute loads", NULL},
    {NULL}
};

static PyTypeObject Attribute_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.GuardedAttribute",
    .tp_doc = "GuardedAttribute(fast_types, native, attrs, all_names, slot[, fn, prehook, posthook]): "
              "attribute loads of rewritten code.",
    .tp_basicsize = sizeof(AttributeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AttributeObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = attribute_new,
    .tp_dealloc = (destructor)attribute_dealloc,
    .tp_traverse = (traverseproc)attribute_traverse,
    .tp_clear = (inquiry)attribute_clear,
    .tp_getset = attribute_getset,
};

/* GuardedSubscript(fast_types, fast_keys, slot[, fn, prehook, posthook]): `c[k]` of rewritten
 * code: CPython's own subscript when the container's exact type is in fast_types and the
 * key's in fast_keys (builtin types no primitive of the context takes), between the context's
 * hooks when it has hooks (and nothing else to say about subscripts), the slot otherwise. */

static PyObject *
subscript_vectorcall(AttributeObject *g, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        int fast = PySet_Contains(g->fast_types, (PyObject *)Py_TYPE(args[0]));
        if (fast > 0) {
            fast = PySet_Contains(g->native, (PyObject *)Py_TYPE(args[1]));
        }
        if (fast < 0) {
            return NULL;
        }
        if (fast) {
            return hooked(g, args[0], args[1], PyObject_GetItem);
        }
    }
    return PyObject_Vectorcall(g->slot, args, nargsf, kwnames);
}

/* GuardedContains(fast_types, slot, fn, prehook, posthook, invert): `x in c` (`x not in c`
 * with invert) of rewritten code, called as (x, c): CPython's own test when c's exact type is
 * in fast_types (builtin types, no primitive of the context on operator.contains), between
 * the context's hooks as the slot calls them (prehook(operator.contains, c, x)); the
 * `contains` slot otherwise (its answer negated for `not in`). */

static PyObject *
contains_operation(PyObject *c, PyObject *x)
{
    int r = PySequence_Contains(c, x);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *
contains_vectorcall(AttributeObject *g, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *r;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        int fast = PySet_Contains(g->fast_types, (PyObject *)Py_TYPE(args[1]));
        if (fast < 0) {
            return NULL;
        }
        if (fast) {
            r = hooked(g, args[1], args[0], contains_operation);
            goto answer;
        }
    }
    r = PyObject_Vectorcall(g->slot, args, nargsf, kwnames);
answer:
    if (r == NULL || !g->invert) {
        return r;
    }
    int truth = PyObject_Not(r);
    Py_DECREF(r);
    return truth < 0 ? NULL : PyBool_FromLong(truth);
}

static PyObject *
contains_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast_types, *slot, *fn, *pre, *post;
    int invert;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "GuardedContains takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OOOOp:GuardedContains", &PyFrozenSet_Type, &fast_types, &slot,
                          &fn, &pre, &post, &invert)) {
        return NULL;
    }
    if (!PyCallable_Check(slot)) {
        PyErr_SetString(PyExc_TypeError, "GuardedContains: slot must be callable");
        return NULL;
    }
    AttributeObject *g = (AttributeObject *)type->tp_alloc(type, 0);
    if (g == NULL) {
        return NULL;
    }
    g->fast_types = Py_NewRef(fast_types);
    g->slot = Py_NewRef(slot);
    g->fn = Py_NewRef(fn);
    g->pre = pre == Py_None ? NULL : Py_NewRef(pre);
    g->post = post == Py_None ? NULL : Py_NewRef(post);
    g->invert = invert;
    g->vectorcall = (vectorcallfunc)contains_vectorcall;
    return (PyObject *)g;
}

static PyObject *
subscript_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast_types, *fast_keys, *slot, *fn = Py_None, *pre = Py_None, *post = Py_None;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "GuardedSubscript takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O|OOO:GuardedSubscript", &PyFrozenSet_Type, &fast_types,
                          &PyFrozenSet_Type, &fast_keys, &slot, &fn, &pre, &post)) {
        return NULL;
    }
    if (!PyCallable_Check(slot)) {
        PyErr_SetString(PyExc_TypeError, "GuardedSubscript: slot must be callable");
        return NULL;
    }
    AttributeObject *g = (AttributeObject *)type->tp_alloc(type, 0);
    if (g == NULL) {
        return NULL;
    }
    g->fast_types = Py_NewRef(fast_types);
    g->native = Py_NewRef(fast_keys);  /* (the keys' exact types) */
    g->slot = Py_NewRef(slot);
    g->fn = Py_NewRef(fn);
    g->pre = pre == Py_None ? NULL : Py_NewRef(pre);
    g->post = post == Py_None ? NULL : Py_NewRef(post);
    g->vectorcall = (vectorcallfunc)subscript_vectorcall;
    return (PyObject *)g;
}

static PyTypeObject Subscript_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.GuardedSubscript",
    .tp_doc = "GuardedSubscript(fast_types, fast_keys, slot): subscripts c[k] of rewritten code.",
    .tp_basicsize = sizeof(AttributeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AttributeObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = subscript_new,
    .tp_dealloc = (destructor)attribute_dealloc,
    .tp_traverse = (traverseproc)attribute_traverse,
    .tp_clear = (inquiry)attribute_clear,
    .tp_getset = attribute_getset,
};

static PyTypeObject Contains_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.GuardedContains",
    .tp_doc = "GuardedContains(fast_types, slot, fn, prehook, posthook, invert): `in` and "
              "`not in` of rewritten code.",
    .tp_basicsize = sizeof(AttributeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AttributeObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = contains_new,
    .tp_dealloc = (destructor)attribute_dealloc,
    .tp_traverse = (traverseproc)attribute_traverse,
    .tp_clear = (inquiry)attribute_clear,
    .tp_getset = attribute_getset,
};

static PyTypeObject Setattr_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.GuardedSetattr",
    .tp_doc = "GuardedSetattr(native, attrs, all_names, slot, fn, prehook, posthook): attribute "
              "stores of rewritten code.",
    .tp_basicsize = sizeof(AttributeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AttributeObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = setattr_new,
    .tp_dealloc = (destructor)attribute_dealloc,
    .tp_traverse = (traverseproc)attribute_traverse,
    .tp_clear = (inquiry)attribute_clear,
    .tp_getset = attribute_getset,
};

/* ------------------------------------------------------------------ call dispatchers */

/* Dispatcher(method, fcache, resolve, prehook, posthook, method_of, getattr_, ModuleType, twins):
 * what rewritten code calls at a call site, `call(f, *args, **kwargs)`, or at a method call
 * site, `meth(obj, name, *args, **kwargs)`.  The same logic as codegen.CALL_SRC (the
 * pure-Python reference), in C: no Python frame of overdub's stands between the caller's
 * frame and the routed callee's.
 *
 *     call(f, *args):      prehook(f, *args); g = fcache[f] or resolve(f); r = g(*args);
 *                          posthook(r, f, *args); return r
 *     meth(obj, name, *a): a module's attribute, or an instance attribute shadowing the
 *                          class's: call(getattr_(obj, name), *a); otherwise the class's
 *                          function f: the same as call(f, obj, *a), resolving f as a
 *                          lasting class attribute.  obj a LoadedAttribute (what methload
 *                          gave): call(obj.value, *a).
 *     methload(obj, name): where the arguments of a method call may run code, the look-up
 *                          happens before them, as CPython's LOAD_ATTR/LOAD_METHOD does it:
 *                          obj itself when meth's look-up can neither fail nor run code
 *                          (the class's function; a name in a module's __dict__), else
 *                          LoadedAttribute(getattr_(obj, name)).
 */

/* LoadedAttribute(value): an attribute a method-call site looked up before its arguments
   ran (methload), handed to meth in place of the object */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} LoadedObject;

static PyMemberDef loaded_members[] = {
    {"value", T_OBJECT, offsetof(LoadedObject, value), READONLY, NULL},
    {NULL}
};

static PyObject *
loaded_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *value;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "LoadedAttribute takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:LoadedAttribute", &value)) {
        return NULL;
    }
    LoadedObject *o = (LoadedObject *)type->tp_alloc(type, 0);
    if (o != NULL) {
        o->value = Py_NewRef(value);
    }
    return (PyObject *)o;
}

static int
loaded_traverse(LoadedObject *o, visitproc visit, void *arg)
{
    Py_VISIT(o->value);
    return 0;
}

static int
loaded_clear(LoadedObject *o)
{
    Py_CLEAR(o->value);
    return 0;
}

static void
loaded_dealloc(LoadedObject *o)
{
    PyObject_GC_UnTrack(o);
    loaded_clear(o);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyTypeObject Loaded_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.LoadedAttribute",
    .tp_doc = "LoadedAttribute(value): a method-call site's attribute, looked up before its arguments.",
    .tp_basicsize = sizeof(LoadedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = loaded_new,
    .tp_dealloc = (destructor)loaded_dealloc,
    .tp_traverse = (traverseproc)loaded_traverse,
    .tp_clear = (inquiry)loaded_clear,
    .tp_members = loaded_members,
};

#define SMALL_ARGS 8

typedef struct {
    PyObject_HEAD
    int method;           /* 0: call, 1: meth, 2: methload */
    PyObject *fcache;     /* dict: callee -> what runs it; (type, name) -> (function, hasdict) */
    PyObject *resolve;
    PyObject *prehook;    /* or NULL */
    PyObject *posthook;   /* or NULL */
    PyObject *method_of;
    PyObject *getattr_;
    PyObject *module_type;
    PyObject *runtime;    /* the runtime whose routed twins a miss may take (NULL: none) */
    PyObject *totals;     /* its spec's tables of primitives (dicts), with runtime */
    PyObject *primitives;
    vectorcallfunc vectorcall;
} DispatcherObject;

static PyObject *str_dict;  /* "__dict__" */

static PyObject *known_callee(DispatcherObject *d, PyObject *f, int lasting, PyObject **prepend);
static PyTypeObject RuntimeBase_Type;

/* fcache[f], else the routed twin the runtime keeps across runs when that is what resolve
   would give (known_callee), else resolve(f) (resolve(f, False) when f is unhashable or its hash fails); a new
   reference.  *prepend: set to the object to pass first, for a bound method of a Python
   function whose function is known (what resolve gives is partial(inner, obj)). */
static PyObject *
resolved(DispatcherObject *d, PyObject *f, int lasting, PyObject **prepend)
{
    if (Py_TYPE(f)->tp_hash == _PyWeakref_RefType.tp_hash) {
        /* a weak reference (or a subclass's) is never hashed: its hash is its referent's,
           and the reference keeps it (plaincall.hashable) */
        PyObject *args[2] = {f, Py_False};
        return call_machinery(d->resolve, args, 2, NULL);
    }
    PyObject *g = PyDict_GetItemWithError(d->fcache, f);
    if (g != NULL) {
        return Py_NewRef(g);
    }
    if (!PyErr_Occurred() && d->runtime != NULL) {
        g = known_callee(d, f, lasting, prepend);
        if (g != NULL || PyErr_Occurred()) {
            return g;
        }
    }
    if (PyErr_Occurred()) {
        /* unhashable, or a hash that fails (a weakref to a writable memoryview: ValueError),
           which plain CPython, never hashing the callee, does not see */
        if (lasting || !PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
        PyObject *args[2] = {f, Py_False};
        return call_machinery(d->resolve, args, 2, NULL);
    }
    if (lasting) {
        PyObject *args[3] = {f, Py_True, Py_True};
        return call_machinery(d->resolve, args, 3, NULL);
    }
    return call_machinery(d->resolve, &f, 1, NULL);
}

/* hook(*head, *args) with head of one or two objects, args[0..n) and kwnames */
static int
call_hook(PyObject *hook, PyObject *h0, PyObject *h1, PyObject *const *args, Py_ssize_t n,
          PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    Py_ssize_t head = h1 == NULL ? 1 : 2, total = head + n + nkw;
    PyObject *small[SMALL_ARGS], **stack = small;
    if (total > SMALL_ARGS) {
        stack = PyMem_Malloc(total * sizeof(PyObject *));
        if (stack == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    stack[0] = h0;
    if (h1 != NULL) {
        stack[1] = h1;
    }
    for (Py_ssize_t i = 0; i < n + nkw; i++) {
        stack[head + i] = args[i];
    }
    PyObject *r = call_machinery(hook, stack, head + n, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* the routed call of f: args[0..n) and kwnames are f's arguments; with self_arg, f is a
   class's function called on the instance self_arg (prepended) */
static PyObject *
dispatch(DispatcherObject *d, PyObject *f, PyObject *self_arg, PyObject *const *args,
         Py_ssize_t n, PyObject *kwnames)
{
    if (d->prehook != NULL && call_hook(d->prehook, f, self_arg, args, n, kwnames) < 0) {
        return NULL;
    }
    PyObject *bound = NULL;  /* (a bound method's object, when its function is called) */
    PyObject *g = resolved(d, f, self_arg != NULL, &bound);
    if (g == NULL) {
        return NULL;
    }
    PyObject *first = self_arg != NULL ? self_arg : bound;
    PyObject *r;
    if (!ENTER_CALLEE()) {
        Py_DECREF(g);
        return NULL;
    }
    if (first == NULL) {
        r = PyObject_Vectorcall(g, args, n, kwnames);
    }
    else {
        Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
        PyObject *small[SMALL_ARGS], **stack = small;
        if (1 + n + nkw > SMALL_ARGS) {
            stack = PyMem_Malloc((1 + n + nkw) * sizeof(PyObject *));
            if (stack == NULL) {
                LEAVE_CALLEE();
                Py_DECREF(g);
                return PyErr_NoMemory();
            }
        }
        Py_INCREF(first);
        stack[0] = first;
        for (Py_ssize_t i = 0; i < n + nkw; i++) {
            stack[1 + i] = args[i];
        }
        r = PyObject_Vectorcall(g, stack, 1 + n, kwnames);
        Py_DECREF(first);
        if (stack != small) {
            PyMem_Free(stack);
        }
    }
    LEAVE_CALLEE();
    Py_DECREF(g);
    if (r == NULL || d->posthook == NULL) {
        return r;
    }
    /* posthook(r, f, [self_arg,] *args) */
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    Py_ssize_t head = self_arg == NULL ? 2 : 3, total = head + n + nkw;
    PyObject *small[SMALL_ARGS], **stack = small;
    if (total > SMALL_ARGS) {
        stack = PyMem_Malloc(total * sizeof(PyObject *));
        if (stack == NULL) {
            Py_DECREF(r);
            return PyErr_NoMemory();
        }
    }
    stack[0] = r;
    stack[1] = f;
    if (self_arg != NULL) {
        stack[2] = self_arg;
    }
    for (Py_ssize_t i = 0; i < n + nkw; i++) {
        stack[head + i] = args[i];
    }
    PyObject *h = call_machinery(d->posthook, stack, head + n, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    if (h == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    Py_DECREF(h);
    return r;
}

/* The class's function f for obj.name(...) when CPython's method-call shortcut applies
   (method_of(type, name), cached in fcache under (type, name), and no instance attribute
   of that name shadows it): 1 and *f (a new reference); 0 when it does not apply; -1 on an
   error. */
static int
class_function(DispatcherObject *d, PyObject *obj, PyObject *name, PyObject **f)
{
    PyTypeObject *tp = Py_TYPE(obj);
    PyObject *key = PyTuple_Pack(2, (PyObject *)tp, name);
    if (key == NULL) {
        return -1;
    }
    PyObject *pair = PyDict_GetItemWithError(d->fcache, key);
    if (pair != NULL) {
        Py_INCREF(pair);
    }
    else if (!PyErr_Occurred()) {
        PyObject *margs[2] = {(PyObject *)tp, name};
        pair = call_machinery(d->method_of, margs, 2, NULL);
        if (pair != NULL && PyDict_SetItem(d->fcache, key, pair) < 0) {
            Py_CLEAR(pair);
        }
    }
    Py_DECREF(key);
    if (pair == NULL) {
        return -1;
    }
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_SystemError, "overdub: method_of must give (function, hasdict)");
        return -1;
    }
    PyObject *fn = PyTuple_GET_ITEM(pair, 0);
    int use_class = fn != Py_None;
    if (use_class) {
        int hasdict = PyObject_IsTrue(PyTuple_GET_ITEM(pair, 1));
        if (hasdict < 0) {
            Py_DECREF(pair);
            return -1;
        }
        if (hasdict) {  /* an instance attribute of that name shadows the class's */
            PyObject *dict = PyObject_GetAttr(obj, str_dict);
            int in = dict == NULL ? -1 : PySequence_Contains(dict, name);
            Py_XDECREF(dict);
            if (in < 0) {
                Py_DECREF(pair);
                return -1;
            }
            use_class = !in;
        }
    }
    if (use_class) {
        *f = Py_NewRef(fn);
    }
    Py_DECREF(pair);
    return use_class;
}

/* methload(obj, name): see the comment above the dispatcher's type */
static PyObject *
method_load(DispatcherObject *d, PyObject *obj, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(obj);
    if ((PyObject *)tp == d->module_type) {
        PyObject *dict = PyModule_GetDict(obj);  /* (borrowed) */
        int in = dict != NULL && PyDict_CheckExact(dict) && PyUnicode_CheckExact(name)
            ? PyDict_Contains(dict, name) : 0;
        if (in < 0) {
            return NULL;
        }
        if (in) {
            return Py_NewRef(obj);
        }
    }
    else {
        PyObject *f;
        int found = class_function(d, obj, name, &f);
        if (found < 0) {
            return NULL;
        }
        if (found) {
            Py_DECREF(f);
            return Py_NewRef(obj);
        }
    }
    PyObject *gargs[2] = {obj, name};
    PyObject *attr = PyObject_Vectorcall(d->getattr_, gargs, 2, NULL);
    if (attr == NULL) {
        return NULL;
    }
    LoadedObject *o = PyObject_GC_New(LoadedObject, &Loaded_Type);
    if (o == NULL) {
        Py_DECREF(attr);
        return NULL;
    }
    o->value = attr;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

static PyObject *
dispatcher_vectorcall(DispatcherObject *d, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!d->method) {
        if (nargs < 1) {
            PyErr_SetString(PyExc_TypeError, "call(f, /, *args, **kwargs) needs f");
            return NULL;
        }
        return dispatch(d, args[0], NULL, args + 1, nargs - 1, kwnames);
    }
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "meth(obj, name, /, *args, **kwargs) needs obj and name");
        return NULL;
    }
    PyObject *obj = args[0], *name = args[1];
    PyTypeObject *tp = Py_TYPE(obj);
    if (d->method == 2) {
        if (nargs != 2 || kwnames != NULL) {
            PyErr_SetString(PyExc_TypeError, "methload(obj, name) takes two arguments");
            return NULL;
        }
        return method_load(d, obj, name);
    }
    if (tp == &Loaded_Type) {  /* (methload looked the attribute up) */
        PyObject *attr = Py_NewRef(((LoadedObject *)obj)->value);
        PyObject *r = dispatch(d, attr, NULL, args + 2, nargs - 2, kwnames);
        Py_DECREF(attr);
        return r;
    }
    if ((PyObject *)tp != d->module_type) {
        PyObject *f;
        int found = class_function(d, obj, name, &f);
        if (found < 0) {
            return NULL;
        }
        if (found) {
            PyObject *r = dispatch(d, f, obj, args + 2, nargs - 2, kwnames);
            Py_DECREF(f);
            return r;
        }
    }
    PyObject *gargs[2] = {obj, name};
    PyObject *attr = PyObject_Vectorcall(d->getattr_, gargs, 2, NULL);
    if (attr == NULL) {
        return NULL;
    }
    PyObject *r = dispatch(d, attr, NULL, args + 2, nargs - 2, kwnames);
    Py_DECREF(attr);
    return r;
}

static PyObject *
dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    int method;
    PyObject *fcache, *resolve, *prehook, *posthook, *method_of, *getattr_, *module_type;
    PyObject *twins = Py_None;
    PyObject *runtime = NULL, *totals = NULL, *primitives = NULL;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "iO!OOOOOO|O:Dispatcher", &method, &PyDict_Type, &fcache, &resolve,
                          &prehook, &posthook, &method_of, &getattr_, &module_type, &twins)) {
        return NULL;
    }
    if (twins != Py_None) {
        if (!PyArg_ParseTuple(twins, "O!O!O!:Dispatcher's twins", &RuntimeBase_Type, &runtime,
                              &PyDict_Type, &totals, &PyDict_Type, &primitives)) {
            return NULL;
        }
    }
    if (method < 0 || method > 2) {
        PyErr_SetString(PyExc_ValueError, "Dispatcher: method must be 0 (call), 1 (meth) or 2 (methload)");
        return NULL;
    }
    DispatcherObject *d = (DispatcherObject *)type->tp_alloc(type, 0);
    if (d == NULL) {
        return NULL;
    }
    d->method = method;
    d->fcache = Py_NewRef(fcache);
    d->resolve = Py_NewRef(resolve);
    d->prehook = prehook == Py_None ? NULL : Py_NewRef(prehook);
    d->posthook = posthook == Py_None ? NULL : Py_NewRef(posthook);
    d->method_of = Py_NewRef(method_of);
    d->getattr_ = Py_NewRef(getattr_);
    d->module_type = Py_NewRef(module_type);
    d->runtime = Py_XNewRef(runtime);
    d->totals = Py_XNewRef(totals);
    d->primitives = Py_XNewRef(primitives);
    d->vectorcall = (vectorcallfunc)dispatcher_vectorcall;
    return (PyObject *)d;
}

static int
dispatcher_traverse(DispatcherObject *d, visitproc visit, void *arg)
{
    Py_VISIT(d->fcache);
    Py_VISIT(d->resolve);
    Py_VISIT(d->prehook);
    Py_VISIT(d->posthook);
    Py_VISIT(d->method_of);
    Py_VISIT(d->getattr_);
    Py_VISIT(d->module_type);
    Py_VISIT(d->runtime);
    Py_VISIT(d->totals);
    Py_VISIT(d->primitives);
    return 0;
}

static int
dispatcher_clear(DispatcherObject *d)
{
    Py_CLEAR(d->fcache);
    Py_CLEAR(d->resolve);
    Py_CLEAR(d->prehook);
    Py_CLEAR(d->posthook);
    Py_CLEAR(d->method_of);
    Py_CLEAR(d->getattr_);
    Py_CLEAR(d->module_type);
    Py_CLEAR(d->runtime);
    Py_CLEAR(d->totals);
    Py_CLEAR(d->primitives);
    return 0;
}

static void
dispatcher_dealloc(DispatcherObject *d)
{
    PyObject_GC_UnTrack(d);
    dispatcher_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyObject *
dispatcher_repr(DispatcherObject *d)
{
    return PyUnicode_FromString(d->method ? "<overdub method dispatcher>" : "<overdub call dispatcher>");
}

static PyTypeObject Dispatcher_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.Dispatcher",
    .tp_doc = "Dispatcher(method, fcache, resolve, prehook, posthook, method_of, getattr_, "
              "ModuleType, twins=None): a call site's dispatcher (see codegen.CALL_SRC); twins, "
              "(runtime, totals, primitives): a miss may take the runtime's routed twins.",
    .tp_basicsize = sizeof(DispatcherObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(DispatcherObject, vectorcall),
    .tp_call = guarded_call,
    .tp_new = dispatcher_new,
    .tp_repr = (reprfunc)dispatcher_repr,
    .tp_dealloc = (destructor)dispatcher_dealloc,
    .tp_traverse = (traverseproc)dispatcher_traverse,
    .tp_clear = (inquiry)dispatcher_clear,
};

/* ------------------------------------------------------------------------------------------
 * RuntimeBase: the fields of overdub.runtime.Runtime that the entry points below read on
 * every call.  Runtime subclasses it (in Python) as Tagged subclasses TaggedBase.
 */

typedef struct {
    PyObject_HEAD
    PyObject *ctx;             /* the context this runtime serves */
    PyObject *ctx_type;        /* its type when the runtime was made */
    PyObject *spec;            /* what that type overrides (a stale spec: make a new runtime) */
    PyObject *outer;           /* the run this one is nested in, or None */
    PyObject *targets;         /* dict: f -> what recurse runs for it (this run) */
    PyObject *fallback_kinds;  /* dict: builtin -> how the default fallback calls it */
    PyObject *recursable;      /* dict: builtin -> the default canrecurse's answer for it */
    PyObject *op_answers;      /* dict: (op, name or None, id(type) per operand) -> (tags..., answer) */
    PyObject *fcache;          /* dict: callee -> what runs it (this run; see leave) */
    PyObject *kept;            /* dict: the entries of fcache that survive a run's end */
    PyObject *instance_calls;  /* dict: class -> (its __call__, what runs it) (this run) */
    PyObject *attr_info;       /* dict: type -> names of Python-level descriptors (this run) */
    PyObject *code_table;      /* dict: the runtime's routed codes (CodeCache storage) */
    PyObject *code_twins;      /* dict: id(code) -> CodeRef (weakref to code) whose value is a
                                  TwinRef (weakref to f) holding f's routed twin, kept across
                                  runs (overdub.lifetimes.CodeCache storage) */
    Py_ssize_t depth;          /* runs of this runtime in progress */
    char own_canrecurse;       /* the context overrides canrecurse */
    char own_fallback;         /* the context overrides fallback */
} RuntimeBaseObject;

#define CODE_TABLE_LIMIT 4096  /* overdub.runtime.CACHE_LIMIT */

static PyMemberDef runtime_members[] = {
    {"ctx", T_OBJECT_EX, offsetof(RuntimeBaseObject, ctx), 0, NULL},
    {"ctx_type", T_OBJECT_EX, offsetof(RuntimeBaseObject, ctx_type), 0, NULL},
    {"spec", T_OBJECT_EX, offsetof(RuntimeBaseObject, spec), 0, NULL},
    {"outer", T_OBJECT_EX, offsetof(RuntimeBaseObject, outer), 0, NULL},
    {"targets", T_OBJECT_EX, offsetof(RuntimeBaseObject, targets), 0, NULL},
    {"fallback_kinds", T_OBJECT_EX, offsetof(RuntimeBaseObject, fallback_kinds), 0, NULL},
    {"recursable", T_OBJECT_EX, offsetof(RuntimeBaseObject, recursable), 0, NULL},
    {"op_answers", T_OBJECT_EX, offsetof(RuntimeBaseObject, op_answers), 0, NULL},
    {"fcache", T_OBJECT_EX, offsetof(RuntimeBaseObject, fcache), 0, NULL},
    {"kept", T_OBJECT_EX, offsetof(RuntimeBaseObject, kept), 0, NULL},
    {"instance_calls", T_OBJECT_EX, offsetof(RuntimeBaseObject, instance_calls), 0, NULL},
    {"attr_info", T_OBJECT_EX, offsetof(RuntimeBaseObject, attr_info), 0, NULL},
    {"code_table", T_OBJECT_EX, offsetof(RuntimeBaseObject, code_table), 0, NULL},
    {"code_twins", T_OBJECT_EX, offsetof(RuntimeBaseObject, code_twins), 0, NULL},
    {"depth", T_PYSSIZET, offsetof(RuntimeBaseObject, depth), 0, NULL},
    {"own_canrecurse", T_BOOL, offsetof(RuntimeBaseObject, own_canrecurse), 0, NULL},
    {"own_fallback", T_BOOL, offsetof(RuntimeBaseObject, own_fallback), 0, NULL},
    {NULL}
};

static int
runtime_traverse(RuntimeBaseObject *rt, visitproc visit, void *arg)
{
    Py_VISIT(rt->ctx);
    Py_VISIT(rt->ctx_type);
    Py_VISIT(rt->spec);
    Py_VISIT(rt->outer);
    Py_VISIT(rt->targets);
    Py_VISIT(rt->fallback_kinds);
    Py_VISIT(rt->recursable);
    Py_VISIT(rt->op_answers);
    Py_VISIT(rt->fcache);
    Py_VISIT(rt->kept);
    Py_VISIT(rt->instance_calls);
    Py_VISIT(rt->attr_info);
    Py_VISIT(rt->code_table);
    Py_VISIT(rt->code_twins);
    return 0;
}

static int
runtime_clear(RuntimeBaseObject *rt)
{
    Py_CLEAR(rt->ctx);
    Py_CLEAR(rt->ctx_type);
    Py_CLEAR(rt->spec);
    Py_CLEAR(rt->outer);
    Py_CLEAR(rt->targets);
    Py_CLEAR(rt->fallback_kinds);
    Py_CLEAR(rt->recursable);
    Py_CLEAR(rt->op_answers);
    Py_CLEAR(rt->fcache);
    Py_CLEAR(rt->kept);
    Py_CLEAR(rt->instance_calls);
    Py_CLEAR(rt->attr_info);
    Py_CLEAR(rt->code_table);
    Py_CLEAR(rt->code_twins);
    return 0;
}

static void
runtime_dealloc(RuntimeBaseObject *rt)
{
    PyObject_GC_UnTrack(rt);
    runtime_clear(rt);
    Py_TYPE(rt)->tp_free((PyObject *)rt);
}

/* rt.leave(): one run of rt ends (runs nest).  At the outermost, what was resolved during
 * the run is forgotten (fcache back to the kept entries; the per-run tables emptied); True
 * when the runtime's table of routed code has outgrown its limit (the caller trims it).
 * The pure-Python reference is overdub/_native.py's _PyRuntimeBase.leave. */
static PyObject *
runtime_leave(RuntimeBaseObject *rt, PyObject *Py_UNUSED(ignored))
{
    rt->depth -= 1;
    if (rt->depth != 0) {
        Py_RETURN_FALSE;
    }
    PyObject *dicts[] = {rt->fcache, rt->kept, rt->instance_calls, rt->targets, rt->op_answers,
                         rt->attr_info, rt->code_table};
    for (size_t i = 0; i < sizeof(dicts) / sizeof(dicts[0]); i++) {
        if (dicts[i] == NULL || !PyDict_Check(dicts[i])) {
            PyErr_SetString(PyExc_TypeError, "Runtime.leave: a runtime's tables must be dicts");
            return NULL;
        }
    }
    /* (a clear may run a key's __del__, which may use the runtime: hold the dicts) */
    PyObject *fcache = rt->fcache, *kept = rt->kept;
    Py_INCREF(fcache);
    Py_INCREF(kept);
    int err = 0;
    if (PyDict_GET_SIZE(fcache) != 0) {
        PyDict_Clear(fcache);
    }
    if (PyDict_GET_SIZE(kept) != 0) {
        err = PyDict_Update(fcache, kept);
    }
    Py_DECREF(kept);
    Py_DECREF(fcache);
    if (err < 0) {
        return NULL;
    }
    PyObject *runs[] = {rt->instance_calls, rt->targets, rt->op_answers, rt->attr_info};
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        PyObject *d = runs[i];
        if (d != NULL && PyDict_Check(d) && PyDict_GET_SIZE(d) != 0) {
            Py_INCREF(d);
            PyDict_Clear(d);
            Py_DECREF(d);
        }
    }
    if (rt->code_table != NULL && PyDict_GET_SIZE(rt->code_table) > CODE_TABLE_LIMIT) {
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}


static PyTypeObject RuntimeBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.RuntimeBase",
    .tp_doc = "The fields of overdub.runtime.Runtime that recurse, canrecurse and fallback "
              "read on every call.",
    .tp_basicsize = sizeof(RuntimeBaseObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_members = runtime_members,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)runtime_dealloc,
    .tp_traverse = (traverseproc)runtime_traverse,
    .tp_clear = (inquiry)runtime_clear,
};

/* ------------------------------------------------------------------------------------------
 * The entry points recurse(ctx, f, *args, **kwargs), canrecurse(...) and fallback(...).
 *
 * Each takes its common case here -- a context with a ready runtime inside a run, a callee
 * whose answer the runtime already knows -- and hands every other case, unchanged, to its
 * Python reference in overdub/dispatch.py, which also fills the tables read here.  No
 * frame of overdub's then stands between a wildcard primitive and the callee it recurses
 * into or falls back to.  `configure_entry_points` gives this module the references and
 * the tables once, at import.
 */

static struct {
    PyObject *recurse, *canrecurse, *fallback;  /* the Python references */
    PyObject *machinery_files;   /* dict: co_filename -> bool (overdub's own code) */
    PyObject *machinery_codes;   /* dict: id(code) -> weakref (code declared opaque) */
    PyObject *op_by_fn;          /* dict: operator function -> its slot entry */
    PyObject *native_types;      /* set: types whose operators run no Python */
    PyObject *tagged_type;       /* overdub.tagging.Tagged */
    PyObject *plain, *as_is, *structural, *attribute_write;  /* the fallback kinds called here */
    PyObject *type_new;          /* type.__new__ (its fallback rewrites arguments) */
    PyObject *attribute_ops;     /* (getattr, setattr, delattr) */
    PyObject *fallback_kind;     /* fallback_kind(rt, f): how the default fallback calls f */
} entry;

static PyObject *str_runtime, *str_stale, *str_target;
static PyObject *cached_twin(RuntimeBaseObject *rt, PyObject *f);

/* ctx's runtime when it is ready for the common case (made for ctx and its type, from a
   spec still current, inside a run), else NULL; a new reference, no error set */
static RuntimeBaseObject *
ready_runtime(PyObject *ctx)
{
    if (entry.recurse == NULL) {
        return NULL;
    }
    PyObject *rt = PyObject_GetAttr(ctx, str_runtime);
    if (rt == NULL) {
        PyErr_Clear();
        return NULL;
    }
    RuntimeBaseObject *r = (RuntimeBaseObject *)rt;
    if (!PyObject_TypeCheck(rt, &RuntimeBase_Type) || r->ctx != ctx
        || r->ctx_type != (PyObject *)Py_TYPE(ctx) || r->depth <= 0 || r->spec == NULL) {
        Py_DECREF(rt);
        return NULL;
    }
    PyObject *stale = PyObject_GetAttr(r->spec, str_stale);
    if (stale == NULL) {
        PyErr_Clear();
    }
    else {
        Py_DECREF(stale);
    }
    if (stale != Py_False) {
        Py_DECREF(rt);
        return NULL;
    }
    return r;
}

/* d[key] as a borrowed reference, or NULL (no error set) when absent or unhashable; a
   weak reference is not hashed (plaincall.hashable) */
static PyObject *
lookup(PyObject *d, PyObject *key)
{
    if (Py_TYPE(key)->tp_hash == _PyWeakref_RefType.tp_hash) {
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL && PyErr_Occurred()) {
        PyErr_Clear();
    }
    return v;
}

static PyObject *
call_plainly(PyObject *f, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    if (!ENTER_CALLEE()) {
        return NULL;
    }
    PyObject *r = PyObject_Vectorcall(f, args, n, kwnames);
    LEAVE_CALLEE();
    return r;
}

static PyObject *
entry_recurse(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    RuntimeBaseObject *rt = n >= 2 ? ready_runtime(args[0]) : NULL;
    if (rt == NULL) {
        return PyObject_Vectorcall(entry.recurse, args, nargsf, kwnames);
    }
    if (rt->own_canrecurse) {
        Py_DECREF(rt);
        return PyObject_Vectorcall(entry.recurse, args, nargsf, kwnames);
    }
    /* what recurse runs for f: known this run, or (a Python function) its routed twin kept
       across runs, else Runtime.target finds (and keeps) it */
    PyObject *f = args[1];
    PyObject *g = Py_XNewRef(lookup(rt->targets, f));
    if (g == NULL && PyFunction_Check(f)) {
        g = Py_XNewRef(cached_twin(rt, f));
        if (g != NULL && lasting_function(f)
            && PyDict_GET_SIZE(rt->targets) < CODE_TABLE_LIMIT && PyDict_SetItem(rt->targets, f, g) < 0) {
            PyErr_Clear();  /* (a table of this run: best effort) */
        }
    }
    if (g == NULL) {
        PyObject *target = PyObject_GetAttr((PyObject *)rt, str_target);
        g = target == NULL ? NULL : call_machinery(target, &f, 1, NULL);
        Py_XDECREF(target);
    }
    Py_DECREF(rt);
    if (g == NULL) {
        return NULL;
    }
    PyObject *r = call_plainly(g, args + 2, n - 2, kwnames);
    Py_DECREF(g);
    return r;
}

/* whether code is overdub's own: 1, 0, or -1 when only the Python reference knows */
static int
is_machinery(PyObject *code)
{
    PyObject *inside = lookup(entry.machinery_files, ((PyCodeObject *)code)->co_filename);
    if (inside == Py_True) {
        return 1;
    }
    if (inside != Py_False) {
        return -1;
    }
    if (PyDict_GET_SIZE(entry.machinery_codes) == 0) {
        return 0;
    }
    PyObject *key = PyLong_FromVoidPtr(code);  /* id(code) */
    if (key == NULL) {
        PyErr_Clear();
        return -1;
    }
    PyObject *opaque = lookup(entry.machinery_codes, key);
    Py_DECREF(key);
    return opaque == NULL ? 0 : -1;
}

/* An operator (getattr, setattr, delattr included) on instances of Python classes: whether
 * it runs Python code depends on its operands' classes' namespaces alone (and, for the
 * attribute operators, on the name), which CPython's type version tags follow.  The Python
 * reference's answers are kept under the classes' ids and checked against their tags (a
 * class made later at the same address has another tag), so that the table holds no class
 * alive. */

#define MAX_KEPT_OPERANDS 3

/* the key of an operator answer, or NULL (no error set) when the call has none */
static PyObject *
operator_key(PyObject *f, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1 || n > MAX_KEPT_OPERANDS || entry.attribute_ops == NULL) {
        return NULL;
    }
    PyObject *name = Py_None;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entry.attribute_ops); i++) {
        if (PyTuple_GET_ITEM(entry.attribute_ops, i) == f) {
            if (n < 2 || !PyUnicode_CheckExact(args[1])) {
                return NULL;
            }
            name = args[1];
        }
    }
    PyObject *key = PyTuple_New(2 + n);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(f));
    PyTuple_SET_ITEM(key, 1, Py_NewRef(name));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = (PyObject *)Py_TYPE(args[i]);
        PyObject *id = t == entry.tagged_type ? NULL : PyLong_FromVoidPtr(t);
        if (id == NULL) {
            PyErr_Clear();
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, 2 + i, id);
    }
    return key;
}

/* whether tp has a version tag now (3.11 marks it with a flag; 3.12+ by a tag other than 0) */
static int
type_tag_valid(PyTypeObject *tp)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) && tp->tp_version_tag != 0;
#else
    return tp->tp_version_tag != 0;
#endif
}

static int
known_operator_answer(RuntimeBaseObject *rt, PyObject *f, PyObject *const *args, Py_ssize_t n)
{
    PyObject *key = operator_key(f, args, n);
    if (key == NULL) {
        return -1;
    }
    PyObject *known = lookup(rt->op_answers, key);
    Py_DECREF(key);
    if (known == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *tp = Py_TYPE(args[i]);
        if (!type_tag_valid(tp)
            || PyLong_AsUnsignedLong(PyTuple_GET_ITEM(known, i)) != tp->tp_version_tag) {
            if (PyErr_Occurred()) {
                PyErr_Clear();
            }
            return -1;
        }
    }
    return PyTuple_GET_ITEM(known, n) == Py_True;
}

/* keep the Python reference's answer for an operator (best effort: errors dropped) */
static void
remember_operator_answer(RuntimeBaseObject *rt, PyObject *f, PyObject *const *args, Py_ssize_t n,
                         PyObject *answer)
{
    if ((answer != Py_True && answer != Py_False) || PyDict_GET_SIZE(rt->op_answers) >= 4096
        || lookup(entry.op_by_fn, f) == NULL) {
        return;
    }
    PyObject *key = operator_key(f, args, n);
    if (key == NULL) {
        return;
    }
    PyObject *value = PyTuple_New(n + 1);
    for (Py_ssize_t i = 0; value != NULL && i < n; i++) {
        PyTypeObject *tp = Py_TYPE(args[i]);
        (void)_PyType_Lookup(tp, str_dict);  /* (assigns the type a version tag) */
        if (!type_tag_valid(tp)) {
            Py_CLEAR(value);
            break;
        }
        PyObject *tag = PyLong_FromUnsignedLong(tp->tp_version_tag);
        if (tag == NULL) {
            Py_CLEAR(value);
            break;
        }
        PyTuple_SET_ITEM(value, i, tag);
    }
    if (value != NULL) {
        PyTuple_SET_ITEM(value, n, Py_NewRef(answer));
        if (PyDict_SetItem(rt->op_answers, key, value) < 0) {
            PyErr_Clear();
        }
        Py_DECREF(value);
    }
    if (PyErr_Occurred()) {
        PyErr_Clear();
    }
    Py_DECREF(key);
}

/* the default canrecurse's answer: 1, 0, or -1 when only the Python reference knows */
static int
default_canrecurse(RuntimeBaseObject *rt, PyObject *f, PyObject *const *args, Py_ssize_t n)
{
    PyTypeObject *tf = Py_TYPE(f);
    if (tf == &PyMethod_Type) {
        f = PyMethod_GET_FUNCTION(f);
        tf = Py_TYPE(f);
    }
    if (tf == &PyFunction_Type) {
        int internal = is_machinery(PyFunction_GET_CODE(f));
        return internal < 0 ? -1 : !internal;
    }
    if (lookup(entry.op_by_fn, f) != NULL) {  /* an operator on values of native types */
        for (Py_ssize_t i = 0; i < n; i++) {
            int native = PySet_Contains(entry.native_types, (PyObject *)Py_TYPE(args[i]));
            if (native != 1) {
                if (native < 0) {
                    PyErr_Clear();
                }
                return known_operator_answer(rt, f, args, n);
            }
        }
        return 0;
    }
    PyObject *known = lookup(rt->recursable, f);
    if (known == Py_True || known == Py_False) {
        return known == Py_True;
    }
    return -1;
}

static PyObject *
entry_canrecurse(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    RuntimeBaseObject *rt = n >= 2 ? ready_runtime(args[0]) : NULL;
    if (rt == NULL) {
        return PyObject_Vectorcall(entry.canrecurse, args, nargsf, kwnames);
    }
    PyObject *r;
    int answer = rt->own_canrecurse ? -1 : default_canrecurse(rt, args[1], args + 2, n - 2);
    if (answer >= 0) {
        r = Py_NewRef(answer ? Py_True : Py_False);
    }
    else {
        r = PyObject_Vectorcall(entry.canrecurse, args, nargsf, kwnames);
        if (r != NULL && kwnames == NULL && !rt->own_canrecurse) {
            remember_operator_answer(rt, args[1], args + 2, n - 2, r);
        }
    }
    Py_DECREF(rt);
    return r;
}

static PyObject *
entry_fallback(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    RuntimeBaseObject *rt = n >= 2 ? ready_runtime(args[0]) : NULL;
    if (rt != NULL && (rt->own_fallback || rt->outer != Py_None)) {
        Py_CLEAR(rt);
    }
    if (rt != NULL) {
        PyObject *f = args[1];
        PyObject *kind = NULL;
        if (f != (PyObject *)&PyType_Type && f != entry.type_new) {
            kind = Py_XNewRef(lookup(rt->fallback_kinds, f));
            if (kind == NULL) {
                PyObject *fargs[2] = {(PyObject *)rt, f};
                kind = PyObject_Vectorcall(entry.fallback_kind, fargs, 2, NULL);
                if (kind == NULL) {
                    Py_DECREF(rt);
                    return NULL;
                }
            }
        }
        int plainly = kind != NULL && (kind == entry.as_is || kind == entry.structural);
        if (kind != NULL && kind == entry.attribute_write && n >= 3) {
            /* setattr/delattr on an object neither tagged nor a function (whose code and
               names the runtime follows) */
            PyTypeObject *t = Py_TYPE(args[2]);
            plainly = (PyObject *)t != entry.tagged_type && t != &PyFunction_Type;
        }
        if (kind != NULL && kind == entry.plain) {
            /* a plain call with nothing to untag (plaincall.plain_call's first case) */
            Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
            plainly = 1;
            for (Py_ssize_t i = 2; i < n + nkw; i++) {
                PyObject *t = (PyObject *)Py_TYPE(args[i]);
                if (t == entry.tagged_type || (i < n && t == (PyObject *)&PyTuple_Type)) {
                    plainly = 0;
                    break;
                }
            }
        }
        Py_XDECREF(kind);  /* (compared by identity only from here on) */
        Py_DECREF(rt);
        if (plainly) {
            Py_INCREF(f);
            PyObject *r = call_plainly(f, args + 2, n - 2, kwnames);
            Py_DECREF(f);
            return r;
        }
    }
    return PyObject_Vectorcall(entry.fallback, args, nargsf, kwnames);
}

static PyObject *
configure_entry_points(PyObject *module, PyObject *args)
{
    PyObject *recurse, *canrecurse, *fallback, *files, *codes, *ops, *natives, *tagged;
    PyObject *plain, *as_is, *structural, *attribute_write, *type_new, *attribute_ops, *kind;
    if (!PyArg_ParseTuple(args, "OOOO!O!O!O!OOOOOOO!O:configure_entry_points", &recurse, &canrecurse,
                          &fallback, &PyDict_Type, &files, &PyDict_Type, &codes, &PyDict_Type, &ops,
                          &PySet_Type, &natives, &tagged, &plain, &as_is, &structural,
                          &attribute_write, &type_new, &PyTuple_Type, &attribute_ops, &kind)) {
        return NULL;
    }
    Py_XSETREF(entry.attribute_ops, Py_NewRef(attribute_ops));
    Py_XSETREF(entry.fallback_kind, Py_NewRef(kind));
    Py_XSETREF(entry.recurse, Py_NewRef(recurse));
    Py_XSETREF(entry.canrecurse, Py_NewRef(canrecurse));
    Py_XSETREF(entry.fallback, Py_NewRef(fallback));
    Py_XSETREF(entry.machinery_files, Py_NewRef(files));
    Py_XSETREF(entry.machinery_codes, Py_NewRef(codes));
    Py_XSETREF(entry.op_by_fn, Py_NewRef(ops));
    Py_XSETREF(entry.native_types, Py_NewRef(natives));
    Py_XSETREF(entry.tagged_type, Py_NewRef(tagged));
    Py_XSETREF(entry.plain, Py_NewRef(plain));
    Py_XSETREF(entry.as_is, Py_NewRef(as_is));
    Py_XSETREF(entry.structural, Py_NewRef(structural));
    Py_XSETREF(entry.attribute_write, Py_NewRef(attribute_write));
    Py_XSETREF(entry.type_new, Py_NewRef(type_new));
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * rt.run(f, arg): overdub(rt.ctx, f, arg) for the commonest run -- the entry of a run (no
 * run of rt in progress), nothing that sees calls (plain_calls), f a Python function whose
 * routed twin this runtime made before and that nothing takes (no primitive) -- in C; the
 * sentinel NOT_RUN in every other case, where the caller calls overdub.  Its pure-Python
 * reference is _PyRuntimeBase.run (overdub/_native.py): the same steps.
 */
static struct {
    PyObject *not_run;  /* the sentinel */
    PyObject *strip;    /* strip(exc): exc with overdub's frames dropped from its traceback */
    PyObject *trim;     /* trim(rt): the routed code outgrew its limit */
} run_hooks;

/* whether the weak reference ref points to o */
static int
weak_is(PyObject *ref, PyObject *o)
{
    if (!PyWeakref_CheckRef(ref)) {
        return 0;
    }
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *x;
    if (PyWeakref_GetRef(ref, &x) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(x);  /* (only compared: o is alive) */
    return x == o;
#else
    return PyWeakref_GET_OBJECT(ref) == o;
#endif
}

static PyObject *str_plain_calls, *str_totals, *str_primitives, *str_empty, *str_value, *str_weak_key, *str_drop;

/* the routed twin of f that rt made for f's current code, defaults and names, or NULL
   (borrowed, no error set) */
static PyObject *
cached_twin(RuntimeBaseObject *rt, PyObject *f)
{
    PyObject *twins = rt->code_twins;
    if (twins == NULL) {
        return NULL;
    }
    Py_INCREF(twins);
    PyObject *code = PyFunction_GET_CODE(f);
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *found = NULL;
    if (key != NULL && PyDict_Check(twins)) {
        /* e: a lifetimes.CodeRef (weak reference to code) whose value is a lifetimes.TwinRef
           (weak reference to f) holding the twin as its value */
        PyObject *e = lookup(twins, key);
        PyObject *last = NULL, *twin_obj = NULL;
        Py_XINCREF(e);
        if (e != NULL && PyWeakref_Check(e) && weak_is(e, code)
            && (last = slot_or_getattr(e, str_value)) != NULL && PyWeakref_Check(last)
            && weak_is(last, f) && (twin_obj = slot_or_getattr(last, str_value)) != NULL
            && PyFunction_Check(twin_obj)) {
            PyFunctionObject *twin = (PyFunctionObject *)twin_obj;
            PyFunctionObject *fn = (PyFunctionObject *)f;
            if (twin->func_defaults == fn->func_defaults && twin->func_kwdefaults == fn->func_kwdefaults
                && twin->func_name == fn->func_name && twin->func_qualname == fn->func_qualname
                && (entry.machinery_codes == NULL || PyDict_GET_SIZE(entry.machinery_codes) == 0
                    || lookup(entry.machinery_codes, key) == NULL)) {  /* (not declared opaque since) */
                found = (PyObject *)twin;  /* (borrowed: the entry holds it) */
            }
        }
        Py_XDECREF(last);
        Py_XDECREF(twin_obj);
        Py_XDECREF(e);
    }
    PyErr_Clear();
    Py_XDECREF(key);
    Py_DECREF(twins);
    return found;
}

/* The routed twin of f, a function made anew from code routed earlier in this runtime (a
   generator expression, a comprehension before 3.12, a lambda or closure made in a loop:
   a new function object each time its definition runs), made as Runtime._rewritten makes
   it -- the routed code with f's globals, name, qualified name, module, defaults and cells
   -- and entered in the call cache under a weak key, as Runtime.resolve enters it (so a
   second call of the same f finds it; plain Python frees f as it would).  NULL with no
   error: Python resolves f. */
static PyObject *
fresh_twin(DispatcherObject *d, PyObject *f)
{
    RuntimeBaseObject *rt = (RuntimeBaseObject *)d->runtime;
    PyObject *table = rt->code_table;
    PyObject *code = PyFunction_GET_CODE(f);
    if (table == NULL || !PyDict_Check(table) || PyDict_GET_SIZE(d->fcache) >= CODE_TABLE_LIMIT) {
        return NULL;
    }
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *result = NULL, *routed = NULL, *weak_key = NULL, *drop = NULL, *wk = NULL;
    PyFunctionObject *twin = NULL;
    PyObject *e = lookup(table, key);  /* a lifetimes.CodeRef to code holding its routed code */
    Py_XINCREF(e);
    if (e == NULL || !PyWeakref_Check(e) || !weak_is(e, code)
        || (entry.machinery_codes != NULL && PyDict_GET_SIZE(entry.machinery_codes) != 0
            && lookup(entry.machinery_codes, key) != NULL)  /* (declared opaque since) */
        || (routed = PyObject_GetAttr(e, str_value)) == NULL || !PyCode_Check(routed) || routed == code
        || (weak_key = PyObject_GetAttr(d->runtime, str_weak_key)) == NULL
        || (drop = PyObject_GetAttr(d->runtime, str_drop)) == NULL) {
        goto done;
    }
    PyFunctionObject *fn = (PyFunctionObject *)f;
    twin = (PyFunctionObject *)PyFunction_NewWithQualName(routed, fn->func_globals, fn->func_qualname);
    if (twin == NULL) {
        goto done;
    }
    Py_XSETREF(twin->func_name, Py_NewRef(fn->func_name));
    Py_XSETREF(twin->func_module, Py_XNewRef(fn->func_module));
    Py_XSETREF(twin->func_defaults, Py_XNewRef(fn->func_defaults));
    Py_XSETREF(twin->func_closure, Py_XNewRef(fn->func_closure));
    /* (as FunctionType() and Runtime._rewritten: defaults and cells given at creation, the
       keyword defaults through their setter) */
    if (PyFunction_SetKwDefaults((PyObject *)twin, fn->func_kwdefaults != NULL ? fn->func_kwdefaults : Py_None) < 0) {
        goto done;
    }
    PyObject *args[2] = {f, drop};
    wk = PyObject_Vectorcall(weak_key, args, 2, NULL);  /* WeakKey(f, rt._drop) */
    if (wk == NULL || PyDict_SetItem(d->fcache, wk, (PyObject *)twin) < 0) {
        goto done;
    }
    result = Py_NewRef((PyObject *)twin);
done:
    PyErr_Clear();
    Py_XDECREF(wk);
    Py_XDECREF((PyObject *)twin);
    Py_XDECREF(drop);
    Py_XDECREF(weak_key);
    Py_XDECREF(routed);
    Py_XDECREF(e);
    Py_DECREF(key);
    return result;
}

/* whether f is no key of the dict table (1), is one (0), or -1 with an error set */
static int
not_taken(PyObject *table, PyObject *f)
{
    if (table == NULL || PyDict_GET_SIZE(table) == 0) {
        return 1;
    }
    int r = PyDict_Contains(table, f);
    return r < 0 ? -1 : !r;
}

/* A Dispatcher's miss (f not in fcache) where resolve's answer is known without asking it:
 * a Python function that no primitive takes, in a context without a wildcard or its own
 * canrecurse, resolves to its routed twin, which the runtime keeps across runs in its
 * code_twins table and which cached_twin gives only while f holds the code, defaults and
 * names it was made for (and is not declared opaque since).  A bound method of such a
 * function resolves to partial(what runs the function, obj): the function's answer is
 * returned and *prepend set to obj.  The twin enters fcache as resolve would enter it.  A
 * function defined inside another (which plain Python may free during the run: fcache holds
 * it under a weak key) is left to resolve, which enters it so.  NULL with no error set: not
 * known here (resolve decides); the Python reference is Runtime.known_callee. */
/* Whether the Python function f lives as long as an imported module: defined at its top
   level (no CO_NESTED) in the namespace sys.modules holds (plaincall.transient's test; a
   function of code given to exec with a fresh namespace, or of a private module copy, may
   die during the run and is no key of the run's tables) */
static int
lasting_function(PyObject *f)
{
    if (((PyCodeObject *)PyFunction_GET_CODE(f))->co_flags & CO_NESTED) {
        return 0;
    }
    PyObject *globals = PyFunction_GET_GLOBALS(f);
    PyObject *name = PyDict_GetItemWithError(globals, str_name);  /* (borrowed) */
    if (name == NULL || !PyUnicode_CheckExact(name)) {
        PyErr_Clear();
        return 0;
    }
    PyObject *module = PyImport_GetModule(name);  /* (new; NULL without an error when absent) */
    if (module == NULL) {
        PyErr_Clear();
        return 0;
    }
    int held = PyModule_Check(module) && PyModule_GetDict(module) == globals;
    Py_DECREF(module);
    return held;
}

static PyObject *
known_callee(DispatcherObject *d, PyObject *f, int lasting, PyObject **prepend)
{
    PyObject *func = f, *obj = NULL;
    int ok;
    if (Py_IS_TYPE(f, &PyMethod_Type)) {
        if ((ok = not_taken(d->totals, f)) <= 0 || (ok = not_taken(d->primitives, f)) <= 0) {
            return NULL;
        }
        func = PyMethod_GET_FUNCTION(f);
        obj = PyMethod_GET_SELF(f);
        PyObject *inner = PyDict_GetItemWithError(d->fcache, func);
        if (inner != NULL) {
            *prepend = obj;
            return Py_NewRef(inner);
        }
        if (PyErr_Occurred()) {
            PyErr_Clear();  /* (resolve's own lookup gives the error) */
            return NULL;
        }
        lasting = 0;
    }
    if (!PyFunction_Check(func)) {
        return NULL;
    }
    if ((ok = not_taken(d->totals, func)) <= 0 || (ok = not_taken(d->primitives, func)) <= 0) {
        return NULL;
    }
    int nested = (((PyCodeObject *)PyFunction_GET_CODE(func))->co_flags & CO_NESTED) != 0;
    int kept = lasting || lasting_function(func);
    PyObject *twin = cached_twin((RuntimeBaseObject *)d->runtime, func);
    if (twin != NULL) {
        Py_INCREF(twin);
    }
    else if (nested && !lasting) {  /* (a function made anew from code routed before) */
        twin = fresh_twin(d, func);
    }
    if (twin == NULL) {
        return NULL;
    }
    /* (a function defined inside another, which plain Python may free during the run, is
       no key of the call cache: its code's last twin answers for it) */
    if (kept && PyDict_GET_SIZE(d->fcache) < CODE_TABLE_LIMIT
        && PyDict_SetItem(d->fcache, func, twin) < 0) {
        Py_DECREF(twin);
        return NULL;
    }
    *prepend = obj;
    return twin;
}

/* rt.known_twin(f): the routed twin cached_twin finds for the Python function f, or None */
static PyObject *
runtime_known_twin(RuntimeBaseObject *rt, PyObject *f)
{
    PyObject *twin = PyFunction_Check(f) ? cached_twin(rt, f) : NULL;
    return Py_NewRef(twin != NULL ? twin : Py_None);
}

/* whether attribute name of o is exactly True (False, or -1 with no error set: not) */
static int
attr_is(PyObject *o, PyObject *name, PyObject *value)
{
    PyObject *v = slot_or_getattr(o, name);
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(v);
    return v == value;
}

/* whether f is a key of the dict attribute name of spec (1), not (0), or unknown (-1) */
static int
spec_has(PyObject *spec, PyObject *name, PyObject *f)
{
    PyObject *d = slot_or_getattr(spec, name);
    if (d == NULL || !PyDict_CheckExact(d)) {
        PyErr_Clear();
        Py_XDECREF(d);
        return -1;
    }
    int r = PyDict_Contains(d, f);
    Py_DECREF(d);
    if (r < 0) {
        PyErr_Clear();
    }
    return r;
}

static PyObject *finish_run(RuntimeBaseObject *rt, PyObject *result);

static PyObject *
runtime_run(RuntimeBaseObject *rt, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "run(f, arg) takes 2 arguments");
        return NULL;
    }
    if (run_hooks.not_run == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "run: configure_run() was not called");
        return NULL;
    }
    PyObject *f = args[0], *ctx = rt->ctx;
    if (rt->depth != 0 || !PyFunction_Check(f) || ctx == NULL || rt->spec == NULL
        || rt->ctx_type != (PyObject *)Py_TYPE(ctx)
        || attr_is((PyObject *)rt, str_plain_calls, Py_True) != 1
        || attr_is(ctx, str_runtime, (PyObject *)rt) != 1
        || attr_is(rt->spec, str_stale, Py_False) != 1 || attr_is(rt->spec, str_empty, Py_False) != 1
        || spec_has(rt->spec, str_totals, f) != 0 || spec_has(rt->spec, str_primitives, f) != 0) {
        return Py_NewRef(run_hooks.not_run);
    }
    PyObject *twin = cached_twin(rt, f);
    if (twin == NULL) {
        return Py_NewRef(run_hooks.not_run);
    }
    Py_INCREF(twin);
    rt->depth = 1;
    PyObject *result = PyObject_Vectorcall(twin, args + 1, 1, NULL);
    Py_DECREF(twin);
    return finish_run(rt, result);
}

/* The end of a run that began with rt->depth += 1 (overdub's finally block): the traceback
   plain Python shows on an error (run_hooks.strip), rt.leave(), then the trim it asks for */
static PyObject *
finish_run(RuntimeBaseObject *rt, PyObject *result)
{
    if (result == NULL && run_hooks.strip != Py_None) {  /* (the traceback plain Python shows) */
        PyObject *tp, *val, *tb;
        PyErr_Fetch(&tp, &val, &tb);
        PyErr_NormalizeException(&tp, &val, &tb);
        if (tb != NULL && val != NULL) {
            PyException_SetTraceback(val, tb);
        }
        PyObject *stripped = val == NULL ? NULL : PyObject_CallOneArg(run_hooks.strip, val);
        if (stripped == NULL) {  /* (keep the original) */
            PyErr_Clear();
            PyErr_Restore(tp, val, tb);
        }
        else {
            Py_XDECREF(tb);
            tb = PyException_GetTraceback(stripped);
            Py_DECREF(stripped);
            PyErr_Restore(tp, val, tb);
        }
    }
    PyObject *pending_tp = NULL, *pending_val = NULL, *pending_tb = NULL;
    if (result == NULL) {
        PyErr_Fetch(&pending_tp, &pending_val, &pending_tb);
    }
    PyObject *trim = runtime_leave(rt, NULL);
    if (trim == Py_True) {
        PyObject *r = PyObject_CallOneArg(run_hooks.trim, (PyObject *)rt);
        Py_XDECREF(r);
        if (r == NULL) {
            Py_DECREF(trim);
            trim = NULL;
        }
    }
    if (trim == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(pending_tp);
        Py_XDECREF(pending_val);
        Py_XDECREF(pending_tb);
        return NULL;
    }
    Py_DECREF(trim);
    if (result == NULL) {
        PyErr_Restore(pending_tp, pending_val, pending_tb);
    }
    return result;
}

static PyObject *
configure_run(PyObject *module, PyObject *args)
{
    PyObject *not_run, *strip, *trim;
    if (!PyArg_ParseTuple(args, "OOO:configure_run", &not_run, &strip, &trim)) {
        return NULL;
    }
    Py_XSETREF(run_hooks.not_run, Py_NewRef(not_run));
    Py_XSETREF(run_hooks.strip, Py_NewRef(strip));
    Py_XSETREF(run_hooks.trim, Py_NewRef(trim));
    Py_RETURN_NONE;
}

static PyMethodDef runtime_methods[] = {
    {"leave", (PyCFunction)runtime_leave, METH_NOARGS,
     "leave(): one run ends; at the outermost, forget what the run resolved.  True: the "
     "table of routed code has outgrown its limit."},
    {"known_twin", (PyCFunction)runtime_known_twin, METH_O,
     "known_twin(f): the routed twin this runtime made for the Python function f, while f holds "
     "the code, defaults and names it was made for (and is not declared opaque since); else None."},
    {"run", (PyCFunction)(void (*)(void))runtime_run, METH_FASTCALL,
     "run(f, arg): overdub(ctx, f, arg) for the commonest run, or NOT_RUN (see configure_run)."},
    {NULL}
};

/* EntryPoint(which): recurse (0), canrecurse (1) or fallback (2) as a callable object.
 * overdub.dispatch copies its Python reference's name, documentation and annotations onto
 * it (functools.update_wrapper: the instance has a __dict__), and like a Python function it
 * binds as a method when it is a class attribute. */

/* overdub(ctx, f, *args, **kwargs) when ctx's runtime is ready and its context type observes
 * something (overdub.dispatch.overdub's common case), from C: f's routed frame has the
 * program's frame as its caller, with no frame of overdub's between them (what a program
 * reading its stack sees; the recursion depth it has).  Every other case -- a first run,
 * a stale or empty spec, bad arguments -- goes to the Python reference unchanged. */
static PyObject *python_overdub;  /* overdub.dispatch.overdub (set by configure_overdub) */
static PyObject *python_run_of;   /* overdub.dispatch.run_of: the runtime of a run, or None */
static PyObject *str_enter, *str_call;

/* this thread's list of the frames that called overdub for the runs in progress, outermost
   first (borrowed; NULL with an error set) -- overdub.lookaside.user_frame's boundary
   between the program's frames and a run's, which the Python entry's own frame marks on
   the pure-Python path */
static PyObject *str_run_entries;

static PyObject *
run_entries_list(void)
{
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "overdub: no thread state dict");
        return NULL;
    }
    PyObject *entries = PyDict_GetItemWithError(d, str_run_entries);
    if (entries == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        entries = PyList_New(0);
        if (entries == NULL || PyDict_SetItem(d, str_run_entries, entries) < 0) {
            Py_XDECREF(entries);
            return NULL;
        }
        Py_DECREF(entries);  /* (the dict holds it) */
    }
    return entries;
}

static PyObject *
run_entries(PyObject *module, PyObject *unused)
{
    return Py_XNewRef(run_entries_list());
}

static PyObject *
entry_overdub(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n < 2 || python_overdub == NULL || run_hooks.not_run == NULL) {
        return PyObject_Vectorcall(python_overdub, args, nargsf, kwnames);
    }
    PyObject *ctx = args[0], *f = args[1];
    PyObject *rto = PyObject_GetAttr(ctx, str_runtime);
    RuntimeBaseObject *rt = (RuntimeBaseObject *)rto;
    if (rto == NULL) {
        PyErr_Clear();
    }
    if (rto == NULL || !PyObject_TypeCheck(rto, &RuntimeBase_Type) || rt->ctx != ctx
        || rt->ctx_type != (PyObject *)Py_TYPE(ctx) || rt->spec == NULL || !PyCallable_Check(f)
        || attr_is(rt->spec, str_stale, Py_False) != 1 || attr_is(rt->spec, str_empty, Py_False) != 1) {
        /* a first run, a stale or empty spec, bad arguments: the reference decides */
        Py_XDECREF(rto);
        rto = call_machinery(python_run_of, args, nargsf, kwnames);
        if (rto == NULL) {
            return NULL;
        }
        if (rto == Py_None) {  /* nothing to observe or change: plain Python */
            Py_DECREF(rto);
            return PyObject_Vectorcall(f, args + 2, n - 2, kwnames);
        }
        if (!PyObject_TypeCheck(rto, &RuntimeBase_Type)) {
            Py_DECREF(rto);
            PyErr_SetString(PyExc_SystemError, "overdub: run_of gave no runtime");
            return NULL;
        }
        rt = (RuntimeBaseObject *)rto;
    }
    PyObject *entries = run_entries_list();
    PyObject *caller = (PyObject *)PyEval_GetFrame();  /* (borrowed) */
    if (entries == NULL || PyList_Append(entries, caller != NULL ? caller : Py_None) < 0) {
        Py_DECREF(rto);
        return NULL;
    }
    Py_INCREF(entries);
    Py_ssize_t mark = PyList_GET_SIZE(entries) - 1;
    int plain_calls = attr_is(rto, str_plain_calls, Py_True);
    rt->depth += 1;
    PyObject *result = NULL;
    if (plain_calls == 1) {
        PyObject *enter = PyObject_GetAttr(rto, str_enter);
        PyObject *g = enter == NULL ? NULL : call_machinery(enter, &f, 1, NULL);
        Py_XDECREF(enter);
        if (g == NULL) {
            goto done;
        }
        if (g != Py_None) {
            result = PyObject_Vectorcall(g, args + 2, n - 2, kwnames);
            Py_DECREF(g);
            goto done;
        }
        Py_DECREF(g);
    }
    PyObject *call = PyObject_GetAttr(rto, str_call);
    if (call != NULL) {
        result = PyObject_Vectorcall(call, args + 1, n - 1, kwnames);
        Py_DECREF(call);
    }
done:
    result = finish_run(rt, result);
    Py_DECREF(rto);
    if (PyList_GET_SIZE(entries) > mark) {  /* (this run's entry, and any a run left behind) */
        PyObject *pending_tp, *pending_val, *pending_tb;
        PyErr_Fetch(&pending_tp, &pending_val, &pending_tb);
        if (PyList_SetSlice(entries, mark, PyList_GET_SIZE(entries), NULL) < 0) {
            PyErr_Clear();
        }
        PyErr_Restore(pending_tp, pending_val, pending_tb);
    }
    Py_DECREF(entries);
    return result;
}

static PyObject *
configure_overdub(PyObject *module, PyObject *args)
{
    PyObject *reference, *run_of;
    if (!PyArg_ParseTuple(args, "OO:configure_overdub", &reference, &run_of)) {
        return NULL;
    }
    Py_XSETREF(python_overdub, Py_NewRef(reference));
    Py_XSETREF(python_run_of, Py_NewRef(run_of));
    Py_RETURN_NONE;
}

typedef struct {
    PyObject_HEAD
    int which;
    PyObject *dict;
    vectorcallfunc vectorcall;
} EntryPointObject;

static PyObject *
entry_point_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    int which;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "EntryPoint takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "i:EntryPoint", &which)) {
        return NULL;
    }
    static const vectorcallfunc entries[4] = {
        (vectorcallfunc)entry_recurse, (vectorcallfunc)entry_canrecurse, (vectorcallfunc)entry_fallback,
        (vectorcallfunc)entry_overdub};
    if (which < 0 || which > 3) {
        PyErr_SetString(PyExc_ValueError,
                        "EntryPoint(which): 0 (recurse), 1 (canrecurse), 2 (fallback) or 3 (overdub)");
        return NULL;
    }
    EntryPointObject *e = (EntryPointObject *)type->tp_alloc(type, 0);
    if (e == NULL) {
        return NULL;
    }
    e->which = which;
    e->vectorcall = entries[which];
    return (PyObject *)e;
}

static PyObject *
entry_point_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

static PyObject *
entry_point_reduce(PyObject *self, PyObject *unused)
{
    return PyObject_GetAttrString(self, "__qualname__");  /* pickled by name, as a function */
}

static PyObject *
entry_point_repr(EntryPointObject *e)
{
    static const char *names[4] = {"recurse", "canrecurse", "fallback", "overdub"};
    return PyUnicode_FromFormat("<built-in function %s>", names[e->which]);
}

static int
entry_point_traverse(EntryPointObject *e, visitproc visit, void *arg)
{
    Py_VISIT(e->dict);
    return 0;
}

static int
entry_point_clear(EntryPointObject *e)
{
    Py_CLEAR(e->dict);
    return 0;
}

static void
entry_point_dealloc(EntryPointObject *e)
{
    PyObject_GC_UnTrack(e);
    entry_point_clear(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyMethodDef entry_point_methods[] = {
    {"__reduce__", entry_point_reduce, METH_NOARGS, NULL},
    {NULL}
};

static PyGetSetDef entry_point_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

static PyTypeObject EntryPoint_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.EntryPoint",
    .tp_doc = "EntryPoint(which): overdub's recurse (0), canrecurse (1), fallback (2) or overdub (3), in C.",
    .tp_basicsize = sizeof(EntryPointObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(EntryPointObject, vectorcall),
    .tp_dictoffset = offsetof(EntryPointObject, dict),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = entry_point_get,
    .tp_new = entry_point_new,
    .tp_repr = (reprfunc)entry_point_repr,
    .tp_methods = entry_point_methods,
    .tp_getset = entry_point_getset,
    .tp_dealloc = (destructor)entry_point_dealloc,
    .tp_traverse = (traverseproc)entry_point_traverse,
    .tp_clear = (inquiry)entry_point_clear,
};

/* ------------------------------------------------------------------------------------------
 * Constructor(cls, new, call): cls(*args, **kwargs) as type.__call__ runs it, a Python
 * __new__ or __init__ called through `call` (the run's call dispatcher) and anything else
 * plainly -- from C, so that no Python frame of overdub's stands between the program's
 * frame and __init__'s (what `__init__` sees as its caller, `warnings.warn(stacklevel=)`,
 * the recursion depth).  Its pure-Python reference is semantics.Steps.instantiate's
 * construct, which the pure-Python path runs.
 */
typedef struct {
    PyObject_HEAD
    PyObject *cls;
    PyObject *new_;  /* the __new__ found on cls (a staticmethod's function) */
    PyObject *call;  /* call(f, *args, **kwargs): the run's call dispatcher */
    vectorcallfunc vectorcall;
} ConstructorObject;

static PyObject *str_init;  /* "__init__" */

/* method(head, *args, **kwargs): through the dispatcher when method is a Python function */
static PyObject *
apply_method(ConstructorObject *c, PyObject *method, PyObject *head, PyObject *const *args,
             size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = n + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    int routed = PyFunction_Check(method);
    Py_ssize_t extra = routed ? 2 : 1;
    PyObject *small[SMALL_ARGS + 2];
    PyObject **stack = small;
    if (total + extra > SMALL_ARGS + 2) {
        stack = PyMem_Malloc((total + extra) * sizeof(PyObject *));
        if (stack == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    Py_ssize_t i = 0;
    if (routed) {
        stack[i++] = method;
    }
    stack[i++] = head;
    for (Py_ssize_t j = 0; j < total; j++) {
        stack[i + j] = args[j];
    }
    PyObject *r = PyObject_Vectorcall(routed ? c->call : method, stack, n + extra, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return r;
}

static PyObject *
constructor_vectorcall(ConstructorObject *c, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *obj = apply_method(c, c->new_, c->cls, args, nargsf, kwnames);
    if (obj == NULL) {
        return NULL;
    }
    PyTypeObject *tobj = Py_TYPE(obj);
    if (!PyType_IsSubtype(tobj, (PyTypeObject *)c->cls)) {
        return obj;
    }
    PyObject *init = _PyType_Lookup(tobj, str_init);  /* (borrowed) */
    if (init == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(obj);
            return NULL;
        }
        return obj;
    }
    Py_INCREF(init);
    PyObject *r = apply_method(c, init, obj, args, nargsf, kwnames);
    Py_DECREF(init);
    if (r == NULL) {
        Py_DECREF(obj);
        return NULL;
    }
    if (r != Py_None) {
        PyObject *name = PyType_GetName(Py_TYPE(r));
        if (name != NULL) {
            PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%U'", name);
            Py_DECREF(name);
        }
        Py_DECREF(r);
        Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(r);
    return obj;
}

static PyObject *
constructor_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *cls, *new_, *call;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Constructor(cls, new, call) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Constructor", 3, 3, &cls, &new_, &call)) {
        return NULL;
    }
    if (!PyType_Check(cls) || !PyCallable_Check(new_) || !PyCallable_Check(call)) {
        PyErr_SetString(PyExc_TypeError, "Constructor(cls, new, call): a class and two callables");
        return NULL;
    }
    ConstructorObject *c = (ConstructorObject *)type->tp_alloc(type, 0);
    if (c == NULL) {
        return NULL;
    }
    c->cls = Py_NewRef(cls);
    c->new_ = Py_NewRef(new_);
    c->call = Py_NewRef(call);
    c->vectorcall = (vectorcallfunc)constructor_vectorcall;
    return (PyObject *)c;
}

static int
constructor_traverse(ConstructorObject *c, visitproc visit, void *arg)
{
    Py_VISIT(c->cls);
    Py_VISIT(c->new_);
    Py_VISIT(c->call);
    return 0;
}

static int
constructor_clear(ConstructorObject *c)
{
    Py_CLEAR(c->cls);
    Py_CLEAR(c->new_);
    Py_CLEAR(c->call);
    return 0;
}

static void
constructor_dealloc(ConstructorObject *c)
{
    PyObject_GC_UnTrack(c);
    constructor_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *
constructor_repr(ConstructorObject *c)
{
    return PyUnicode_FromFormat("<overdub constructor of %R>", c->cls);
}

static PyTypeObject Constructor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.Constructor",
    .tp_doc = "Constructor(cls, new, call): cls(*args, **kwargs) with Python __new__/__init__ routed.",
    .tp_basicsize = sizeof(ConstructorObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ConstructorObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = constructor_new,
    .tp_repr = (reprfunc)constructor_repr,
    .tp_dealloc = (destructor)constructor_dealloc,
    .tp_traverse = (traverseproc)constructor_traverse,
    .tp_clear = (inquiry)constructor_clear,
};

/* ------------------------------------------------------------------------------------------
 * CallbackTaker(fn, positions, keywords, arity, wrap, on_error): a callback-taking C function
 * (map, sorted(key=), re.Pattern.sub...) whose callable arguments are first given to wrap
 * (which answers a stand-in that runs them routed), in C, so that no frame of overdub's lies
 * between the program's frame and fn -- nor, below them, under the Python code fn calls back
 * plainly (re.Pattern.sub calls re._subx, which warns with a stacklevel counting frames).
 * positions: a tuple of argument indexes; keywords: a tuple of names; arity: None, or the one
 * number of positional arguments for which positions apply; on_error(exc) tidies an
 * exception's traceback.  The pure-Python reference is overdub.lookaside.wrap_callbacks's
 * step.
 */
typedef struct {
    PyObject_HEAD
    PyObject *fn, *positions, *keywords, *arity, *wrap, *on_error;
    vectorcallfunc vectorcall;
} CallbackTakerObject;

#define TAKER_STACK 8

static PyObject *
taker_vectorcall(CallbackTakerObject *t, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    Py_ssize_t total = n + nkw;
    PyObject *stack[TAKER_STACK];
    PyObject **copy = total <= TAKER_STACK ? stack : PyMem_Malloc(total * sizeof(PyObject *));
    if (copy == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t i, filled = 0;
    PyObject *result = NULL;
    for (i = 0; i < total; i++) {
        copy[i] = Py_NewRef(args[i]);
    }
    filled = total;
    int applies = n > 0 && PyTuple_GET_SIZE(t->positions) > 0
                  && (t->arity == Py_None || PyLong_AsSsize_t(t->arity) == n);
    if (PyErr_Occurred()) {
        goto done;
    }
    if (applies) {
        for (i = 0; i < PyTuple_GET_SIZE(t->positions); i++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(t->positions, i));
            if (at == -1 && PyErr_Occurred()) {
                goto done;
            }
            if (at >= 0 && at < n) {
                PyObject *w = PyObject_CallOneArg(t->wrap, copy[at]);
                if (w == NULL) {
                    goto done;
                }
                Py_SETREF(copy[at], w);
            }
        }
    }
    for (i = 0; i < nkw && PyTuple_GET_SIZE(t->keywords) > 0; i++) {
        int wanted = PySequence_Contains(t->keywords, PyTuple_GET_ITEM(kwnames, i));
        if (wanted < 0) {
            goto done;
        }
        if (wanted) {
            PyObject *w = PyObject_CallOneArg(t->wrap, copy[n + i]);
            if (w == NULL) {
                goto done;
            }
            Py_SETREF(copy[n + i], w);
        }
    }
    result = PyObject_Vectorcall(t->fn, copy, n, kwnames);
done:
    for (i = 0; i < filled; i++) {
        Py_DECREF(copy[i]);
    }
    if (copy != stack) {
        PyMem_Free(copy);
    }
    if (result == NULL && t->on_error != Py_None) {  /* (plain Python's traceback) */
        PyObject *tp, *val, *tb;
        PyErr_Fetch(&tp, &val, &tb);
        PyErr_NormalizeException(&tp, &val, &tb);
        if (val != NULL) {
            if (tb != NULL) {
                PyException_SetTraceback(val, tb);
            }
            PyObject *r = PyObject_CallOneArg(t->on_error, val);
            if (r == NULL) {
                PyErr_Clear();
            }
            Py_XDECREF(r);
            Py_XDECREF(tb);
            tb = PyException_GetTraceback(val);
        }
        PyErr_Restore(tp, val, tb);
    }
    return result;
}

static PyObject *
taker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn, *positions, *keywords, *arity, *wrap, *on_error;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "CallbackTaker takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!O!OOO:CallbackTaker", &fn, &PyTuple_Type, &positions,
                          &PyTuple_Type, &keywords, &arity, &wrap, &on_error)) {
        return NULL;
    }
    CallbackTakerObject *t = (CallbackTakerObject *)type->tp_alloc(type, 0);
    if (t == NULL) {
        return NULL;
    }
    t->fn = Py_NewRef(fn);
    t->positions = Py_NewRef(positions);
    t->keywords = Py_NewRef(keywords);
    t->arity = Py_NewRef(arity);
    t->wrap = Py_NewRef(wrap);
    t->on_error = Py_NewRef(on_error);
    t->vectorcall = (vectorcallfunc)taker_vectorcall;
    return (PyObject *)t;
}

static int
taker_traverse(CallbackTakerObject *t, visitproc visit, void *arg)
{
    Py_VISIT(t->fn);
    Py_VISIT(t->positions);
    Py_VISIT(t->keywords);
    Py_VISIT(t->arity);
    Py_VISIT(t->wrap);
    Py_VISIT(t->on_error);
    return 0;
}

static int
taker_clear(CallbackTakerObject *t)
{
    Py_CLEAR(t->fn);
    Py_CLEAR(t->positions);
    Py_CLEAR(t->keywords);
    Py_CLEAR(t->arity);
    Py_CLEAR(t->wrap);
    Py_CLEAR(t->on_error);
    return 0;
}

static void
taker_dealloc(CallbackTakerObject *t)
{
    PyObject_GC_UnTrack(t);
    taker_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *
taker_repr(CallbackTakerObject *t)
{
    return PyUnicode_FromFormat("<overdub callback taker %R>", t->fn);
}

static PyTypeObject CallbackTaker_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_overdub_native.CallbackTaker",
    .tp_doc = "CallbackTaker(fn, positions, keywords, arity, wrap, on_error): fn with its "
              "callable arguments given to wrap first (see overdub.lookaside.wrap_callbacks).",
    .tp_basicsize = sizeof(CallbackTakerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(CallbackTakerObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = taker_new,
    .tp_repr = (reprfunc)taker_repr,
    .tp_dealloc = (destructor)taker_dealloc,
    .tp_traverse = (traverseproc)taker_traverse,
    .tp_clear = (inquiry)taker_clear,
};

/* type_version(tp): tp's version tag (assigned now if it has none), 0 when it cannot have
   one; CPython gives a type a new tag whenever it or a base class changes */
static PyObject *
type_version(PyObject *self, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "type_version(tp): tp must be a type");
        return NULL;
    }
    PyTypeObject *tp = (PyTypeObject *)arg;
    if (!type_tag_valid(tp)) {
        (void)_PyType_Lookup(tp, str_dict);  /* (assigns the type a version tag) */
        if (PyErr_Occurred()) {
            PyErr_Clear();
        }
    }
    return PyLong_FromUnsignedLong(type_tag_valid(tp) ? tp->tp_version_tag : 0);
}

/* type_lookup(tp, name): _PyType_Lookup -- the attribute name in tp's MRO, unbound, or None
   (overdub.semantics.lookup's pure-Python reference walks the MRO's dicts itself) */
static PyObject *
type_lookup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyType_Check(args[0]) || !PyUnicode_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "type_lookup(tp, name): a type and a str");
        return NULL;
    }
    PyObject *found = _PyType_Lookup((PyTypeObject *)args[0], args[1]);
    if (found == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return Py_NewRef(found);
}

/* untrack_tuple: a tuple leaves the collector's lists when it cannot be in a reference
   cycle through itself -- only atoms inside, or (top level of a code object made by overdub)
   held by code objects alone, which the collector never sees either */
static void
untrack_atoms(PyObject *t, int depth)
{
    if (t == NULL || !PyTuple_CheckExact(t) || !PyObject_GC_IsTracked(t)) {
        return;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        PyObject *item = PyTuple_GET_ITEM(t, i);
        if (PyTuple_CheckExact(item) && depth < 8) {
            untrack_atoms(item, depth + 1);
        }
        if (depth > 0 && PyObject_IS_GC(item) && PyObject_GC_IsTracked(item)) {
            return;  /* (a nested tuple holding a tracked object stays as it is) */
        }
    }
    PyObject_GC_UnTrack(t);
}

/* untrack_code(code, names_only=False): the tuples a code object made by overdub holds
   (constants, names) leave the collector's lists (see overdub/_native.py); names_only: only
   its cached tuples of names (strings: never in a cycle), for the code of a program's
   function, whose co_varnames the rewriter's reading made (3.12+ keeps it) */
static PyObject *
untrack_code(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *code = nargs >= 1 ? args[0] : NULL;
    if (nargs > 2 || code == NULL || !PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "untrack_code(code, names_only=False): a code object");
        return NULL;
    }
    PyCodeObject *co = (PyCodeObject *)code;
    long before = 0;  /* (names only: code_cached's mask before the rewriter read code) */
    int names_only = nargs > 1;
    if (names_only && (before = PyLong_AsLong(args[1])) == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!names_only) {
        untrack_atoms(co->co_consts, 0);
        untrack_atoms(co->co_names, 0);
        untrack_atoms(co->co_localsplusnames, 0);
    }
#if PY_VERSION_HEX >= 0x030C0000
    if (co->_co_cached != NULL) {  /* (co_varnames and the like, made on first access) */
        if (!(before & 1)) {
            untrack_atoms(co->_co_cached->_co_varnames, 0);
        }
        if (!(before & 2)) {
            untrack_atoms(co->_co_cached->_co_cellvars, 0);
        }
        if (!(before & 4)) {
            untrack_atoms(co->_co_cached->_co_freevars, 0);
        }
    }
#endif
    Py_RETURN_NONE;
}

/* code_cached(code): whether code holds its cached co_varnames and the like (3.12+; always
   False before) */
static PyObject *
code_cached(PyObject *self, PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "code_cached(code): a code object");
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030C0000
    _PyCoCached *c = ((PyCodeObject *)code)->_co_cached;
    long mask = c == NULL ? 0 : ((c->_co_varnames != NULL) | (c->_co_cellvars != NULL) << 1
                                 | (c->_co_freevars != NULL) << 2);
    return PyLong_FromLong(mask);
#else
    return PyLong_FromLong(0);
#endif
}

/* ---------------------------------------------------------------- call-site entries */

/* Rewritten code calls the runtime's C objects (guarded operators, dispatchers, attribute and
   subscript slots) through a builtin function bound to each, `call_site_entry(obj)`.  CPython
   specialises a call of a builtin function to a direct call of its C pointer (3.11:
   PRECALL_NO_KW_BUILTIN_FAST and PRECALL_BUILTIN_FAST_WITH_KEYWORDS; 3.12 and 3.13 CALL_...),
   while a callable object of another type takes the generic call path: about 80 machine
   instructions more per routed operator.  Each entry calls its object's vectorcall function. */
#define SITE_ENTRY(name, call, Obj)                                                          \
    static PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)            \
    {                                                                                        \
        return call((Obj *)self, args, (size_t)nargs, NULL);                                 \
    }
SITE_ENTRY(guarded_entry, guarded_vectorcall, GuardedObject)
SITE_ENTRY(attribute_entry, attribute_vectorcall, AttributeObject)
SITE_ENTRY(setattr_entry, setattr_vectorcall, AttributeObject)
SITE_ENTRY(subscript_entry, subscript_vectorcall, AttributeObject)
SITE_ENTRY(contains_entry, contains_vectorcall, AttributeObject)
#undef SITE_ENTRY

static PyObject *
dispatcher_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return dispatcher_vectorcall((DispatcherObject *)self, args, (size_t)nargs, kwnames);
}

#define SITE_DOC "A call site of rewritten code: the runtime's C object it is bound to, called directly."
static PyMethodDef site_entries[] = {
    {"routed", (PyCFunction)(void (*)(void))guarded_entry, METH_FASTCALL, SITE_DOC},
    {"routed", (PyCFunction)(void (*)(void))attribute_entry, METH_FASTCALL, SITE_DOC},
    {"routed", (PyCFunction)(void (*)(void))setattr_entry, METH_FASTCALL, SITE_DOC},
    {"routed", (PyCFunction)(void (*)(void))subscript_entry, METH_FASTCALL, SITE_DOC},
    {"routed", (PyCFunction)(void (*)(void))contains_entry, METH_FASTCALL, SITE_DOC},
    {"routed", (PyCFunction)(void (*)(void))dispatcher_entry, METH_FASTCALL | METH_KEYWORDS, SITE_DOC},
};
#undef SITE_DOC

/* An entry called through the generic call path (a call site not yet specialised, a traced
   frame) runs its object's vectorcall as a call of the object itself would: a builtin
   function's own vectorcall would count one more level of recursion on 3.11, which shares
   the Python recursion limit, so a routed recursion would reach its limit at half depth. */
static PyObject *
site_vectorcall(PyObject *entry, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *obj = PyCFunction_GET_SELF(entry);
    return PyVectorcall_Function(obj)(obj, args, nargsf, kwnames);
}

/* call_site_entry(obj): the builtin function rewritten code calls for obj, one of the C slot
   types above; any other object comes back as it is */
static PyObject *
call_site_entry(PyObject *self, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    PyMethodDef *def = tp == &Guarded_Type ? &site_entries[0]
                       : tp == &Attribute_Type ? &site_entries[1]
                       : tp == &Setattr_Type ? &site_entries[2]
                       : tp == &Subscript_Type ? &site_entries[3]
                       : tp == &Contains_Type ? &site_entries[4]
                       : tp == &Dispatcher_Type ? &site_entries[5] : NULL;
    if (def == NULL) {
        return Py_NewRef(obj);
    }
    PyObject *entry = PyCFunction_NewEx(def, obj, NULL);
    if (entry != NULL) {
        ((PyCFunctionObject *)entry)->vectorcall = site_vectorcall;
    }
    return entry;
}

static PyMethodDef module_functions[] = {
    {"call_site_entry", call_site_entry, METH_O,
     "call_site_entry(obj): the builtin function rewritten code calls for one of the runtime's C slot objects "
     "(CPython calls a builtin function's C pointer directly); obj itself for anything else."},
    {"adopt_tagged", adopt_tagged, METH_O,
     "adopt_tagged(cls): overdub.tagging.Tagged recycles its instances' memory (a free list)."},
    {"tag_each", (PyCFunction)(void (*)(void))tag_each, METH_FASTCALL,
     "tag_each(values, metas, ctx): [Tagged(v, m, ctx) for v, m in zip(values, metas)] for two lists."},
    {"value_of", value_of, METH_O, "value_of(t): the value a tagged value wraps."},
    {"metadata_of", metadata_of, METH_O, "metadata_of(t): a tagged value's metadata."},
    {"tag_of", tag_of, METH_O, "tag_of(t): the tag identity a tagged value was made under."},
    {"context_of", context_of, METH_O, "context_of(t): the context that tagged a tagged value."},
    {"code_cached", code_cached, METH_O,
     "code_cached(code): whether code holds its cached co_varnames and the like (3.12+)."},
    {"untrack_code", (PyCFunction)(void (*)(void))untrack_code, METH_FASTCALL,
     "untrack_code(code, names_only=False): the tuples a code object made by overdub holds leave the collector's "
     "lists (a routed gc.get_objects() shows none of them)."},
    {"type_lookup", (PyCFunction)(void (*)(void))type_lookup, METH_FASTCALL,
     "type_lookup(tp, name): the attribute name in tp's MRO without binding (None: none)."},
    {"type_version", type_version, METH_O,
     "type_version(tp): tp's version tag, which changes whenever tp or a base class changes "
     "(0: none can be given)."},
    {"run_entries", run_entries, METH_NOARGS,
     "run_entries(): this thread's list of the frames that called overdub for the runs in "
     "progress, outermost first."},
    {"configure_overdub", configure_overdub, METH_VARARGS,
     "configure_overdub(overdub, run_of): the Python overdub and the function that gives a "
     "run's runtime (or None: f runs plainly), which EntryPoint(3) calls."},
    {"configure_run", configure_run, METH_VARARGS,
     "configure_run(NOT_RUN, strip, trim): RuntimeBase.run's sentinel and hooks (strip None: "
     "tracebacks kept as they are)."},
    {"configure_entry_points", configure_entry_points, METH_VARARGS,
     "configure_entry_points(recurse, canrecurse, fallback, machinery_files, machinery_codes, "
     "op_by_fn, native_types, Tagged, PLAIN, AS_IS, STRUCTURAL, ATTRIBUTE_WRITE, type_new, "
     "(getattr, setattr, delattr), fallback_kind): the Python references and the tables the "
     "entry points read (overdub.dispatch calls it once)."},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_overdub_native",
    .m_doc = "The C layer of overdub's runtime (see overdub/_native.py).",
    .m_size = -1,
    .m_methods = module_functions,
};

PyMODINIT_FUNC
PyInit__overdub_native(void)
{
    str_tagkey = PyUnicode_InternFromString("_tagkey");
    str_name = PyUnicode_InternFromString("__name__");
    if (str_name == NULL) {
        return NULL;
    }
    str_dict = PyUnicode_InternFromString("__dict__");
    str_runtime = PyUnicode_InternFromString("_runtime");
    str_stale = PyUnicode_InternFromString("stale");
    str_target = PyUnicode_InternFromString("target");
    str_plain_calls = PyUnicode_InternFromString("plain_calls");
    str_value = PyUnicode_InternFromString("value");
    str_weak_key = PyUnicode_InternFromString("weak_key");
    str_drop = PyUnicode_InternFromString("_drop");
    str_enter = PyUnicode_InternFromString("enter");
    str_run_entries = PyUnicode_InternFromString("overdub.run_entries");
    str_call = PyUnicode_InternFromString("call");
    str_totals = PyUnicode_InternFromString("totals");
    str_primitives = PyUnicode_InternFromString("primitives");
    str_empty = PyUnicode_InternFromString("empty");
    str_init = PyUnicode_InternFromString("__init__");
    if (str_init == NULL || PyType_Ready(&Constructor_Type) < 0) {
        return NULL;
    }
    if (str_plain_calls == NULL || str_totals == NULL || str_primitives == NULL || str_empty == NULL || str_value == NULL || str_weak_key == NULL
        || str_drop == NULL) {
        return NULL;
    }
    if (str_tagkey == NULL || str_dict == NULL || str_runtime == NULL || str_stale == NULL || str_target == NULL
        || (RuntimeBase_Type.tp_methods = runtime_methods, 0)
        || PyType_Ready(&TaggedBase_Type) < 0 || PyType_Ready(&RuntimeBase_Type) < 0
        || PyType_Ready(&EntryPoint_Type) < 0
        || PyType_Ready(&CallbackTaker_Type) < 0
        || PyType_Ready(&Guarded_Type) < 0 || PyType_Ready(&Dispatcher_Type) < 0
        || PyType_Ready(&Loaded_Type) < 0
        || PyType_Ready(&Attribute_Type) < 0 || PyType_Ready(&Subscript_Type) < 0
        || PyType_Ready(&Contains_Type) < 0 || PyType_Ready(&Setattr_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&TaggedBase_Type);
    Py_INCREF(&Guarded_Type);
    Py_INCREF(&Dispatcher_Type);
    Py_INCREF(&Attribute_Type);
    Py_INCREF(&Subscript_Type);
    Py_INCREF(&RuntimeBase_Type);
    Py_INCREF(&EntryPoint_Type);
    Py_INCREF(&Constructor_Type);
    if (PyModule_AddObject(m, "Constructor", (PyObject *)&Constructor_Type) < 0
        || PyModule_AddObject(m, "GuardedOperator", (PyObject *)&Guarded_Type) < 0
        || PyModule_AddObject(m, "Dispatcher", (PyObject *)&Dispatcher_Type) < 0
        || PyModule_AddObject(m, "LoadedAttribute", Py_NewRef((PyObject *)&Loaded_Type)) < 0
        || PyModule_AddObject(m, "GuardedAttribute", (PyObject *)&Attribute_Type) < 0
        || PyModule_AddObject(m, "GuardedSubscript", (PyObject *)&Subscript_Type) < 0
        || PyModule_AddObject(m, "GuardedContains", Py_NewRef((PyObject *)&Contains_Type)) < 0
        || PyModule_AddObject(m, "GuardedSetattr", Py_NewRef((PyObject *)&Setattr_Type)) < 0
        || PyModule_AddObject(m, "TaggedBase", (PyObject *)&TaggedBase_Type) < 0
        || PyModule_AddObject(m, "RuntimeBase", (PyObject *)&RuntimeBase_Type) < 0
        || PyModule_AddObject(m, "EntryPoint", (PyObject *)&EntryPoint_Type) < 0
        || PyModule_AddObject(m, "CallbackTaker", Py_NewRef((PyObject *)&CallbackTaker_Type)) < 0
        || PyModule_AddIntConstant(m, "ABI", OVERDUB_NATIVE_ABI) < 0
        || PyModule_AddIntConstant(m, "TAGGED_SIZE", (long)sizeof(TaggedObject)) < 0) {
        Py_DECREF(&TaggedBase_Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
