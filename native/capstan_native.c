/* _capstan_native: capstan's scalar arithmetic in C.
 *
 * A kernel is the native twin of one of capstan/fastpaths.py's generated methods: called
 * as kernel(ctx, x[, y]) with the same arguments, it computes the same result bit for bit
 * for the commonest case -- Python floats tagged by the running context with float
 * tangents (forward) or tape indices (reverse), mixed with float or int constants -- and
 * hands every other case to the Python method it twins (`fallback`), which applies the
 * rule tables.  Anything doubtful (a division by zero, an overflow, a NaN where Python's
 * math module would raise) also goes to the fallback, so errors are Python's own.
 *
 * Forward: a result is Tagged(r, da * ta + db * tb, ctx), the same expression, in the same
 * order, as the Python template.  Reverse: a result is Tagged(r, len(tape) - 1, ctx) after
 * appending the record (x._meta, da[, y._meta, db]) to ctx.tape.
 *
 * Sparsity detection has kernels of its own (PatternKernel, the twins of capstan/sparsity.py's
 * fast paths: index sets as int bit masks) and reads those masks out in one pass (mask_table).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <structmember.h>

#include "tagged.h"
#include "slotcache.h"

enum { K_ADD, K_SUB, K_MUL, K_DIV, K_POW, K_NEG, K_MATH };
enum { M_SIN, M_COS, M_TAN, M_EXP, M_SQRT, M_TANH, M_ATAN, M_SINH, M_COSH, M_LOG1P, M_EXPM1 };

static PyTypeObject *Tagged_Type;  /* overdub.tagging.Tagged, set by setup() */
static PyTypeObject *F64_Type;     /* numpy.float64: handled by the fallback, as constants too */
static PyObject *str_tagkey, *str_tape, *str_equalities;

typedef struct {
    PyObject_HEAD
    int op;             /* K_* */
    int fn;             /* M_* for K_MATH */
    int reverse;        /* 0: forward (float tangents), 1: reverse (tape records) */
    int nested;         /* forward: also take floats of an enclosing context of ctx's class */
    PyObject *fallback; /* the Python method this kernel twins: fallback(ctx, *args) */
    PyObject *func;     /* K_MATH: the math function (plain arguments are simply passed to it) */
    PyObject *arrays;   /* reverse + - * / ** and unary -: the operator, whose float64 arrays
                           reverse_call takes (ReverseCtx.arrays), else NULL */
    vectorcallfunc vectorcall;
} KernelObject;

static PyObject *reverse_call(PyObject *ctx, PyObject *f, PyObject *const *args, Py_ssize_t n, int op,
                              int *taken);

/* ---------------------------------------------------------------- operands */

/* x is tagged by this run's tag identity with a Python float value whose metadata this
   mode can carry (a float tangent in forward mode; any tape index in reverse mode) */
static inline int
own_float(PyObject *x, PyObject *key, int reverse, double *value, PyObject **meta)
{
    if (Py_TYPE(x) != Tagged_Type) {
        return 0;
    }
    TaggedObject *t = (TaggedObject *)x;
    if (t->tagkey != key || t->value == NULL || t->meta == NULL || !PyFloat_CheckExact(t->value)) {
        return 0;
    }
    if (!reverse && !PyFloat_CheckExact(t->meta)) {
        return 0;
    }
    *value = PyFloat_AS_DOUBLE(t->value);
    *meta = t->meta;
    return 1;
}

/* a plain float or int constant (NumPy scalars, bools and the rest: the fallback) */
static inline int
constant(PyObject *y, double *value)
{
    if (PyFloat_CheckExact(y)) {
        *value = PyFloat_AS_DOUBLE(y);
        return 1;
    }
    if (PyLong_CheckExact(y)) {
        double v = PyLong_AsDouble(y);
        if (v == -1.0 && PyErr_Occurred()) {  /* too large for a float: Python says so */
            PyErr_Clear();
            return 0;
        }
        *value = v;
        return 1;
    }
    return 0;
}


/* ctx.name for a context's own instance attribute (_tagkey, tape, shadows...): read from its
   slot or its __dict__ (a new reference), else by getattr.  capstan's contexts define no
   other descriptor of these names, and this runs once per differentiated operation. */
static inline PyObject *
ctx_attr(PyObject *ctx, PyObject *name)
{
    PyObject **slot = instance_slot(ctx, name);
    if (slot != NULL) {
        if (*slot != NULL) {
            return Py_NewRef(*slot);
        }
        return PyObject_GetAttr(ctx, name);  /* (unset: CPython's AttributeError) */
    }
    PyObject **dictptr = _PyObject_GetDictPtr(ctx);
    if (dictptr != NULL && *dictptr != NULL && PyDict_CheckExact(*dictptr)) {
        PyObject *v = PyDict_GetItemWithError(*dictptr, name);  /* (borrowed) */
        if (v != NULL) {
            return Py_NewRef(v);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return PyObject_GetAttr(ctx, name);
}

/* ctx.name as ctx_attr finds it, borrowed, without getattr: NULL when absent (an error
   set only when the lookup failed) */
static inline PyObject *
ctx_peek(PyObject *ctx, PyObject *name)
{
    PyObject **slot = instance_slot(ctx, name);
    if (slot != NULL) {
        return *slot;
    }
    PyObject **dictptr = _PyObject_GetDictPtr(ctx);
    if (dictptr == NULL || *dictptr == NULL) {
        return NULL;
    }
    return PyDict_GetItemWithError(*dictptr, name);
}

/* ctx.name = v into its slot or its __dict__ (as plain setattr would, capstan's contexts
   having no other descriptor of these names): 0, or -1 on an error */
static int
ctx_store(PyObject *ctx, PyObject *name, PyObject *v)
{
    PyObject **slot = instance_slot(ctx, name);
    if (slot != NULL) {
        Py_XSETREF(*slot, Py_NewRef(v));
        return 0;
    }
    return PyObject_SetAttr(ctx, name, v);
}

static inline int
is_own(PyObject *x, PyObject *key)
{
    return Py_TYPE(x) == Tagged_Type && ((TaggedObject *)x)->tagkey == key;
}

/* ---------------------------------------------------------------- results */

static PyObject *
new_tagged(double r, PyObject *meta, PyObject *key, PyObject *ctx)
{
    PyObject *value = PyFloat_FromDouble(r);
    if (value == NULL) {
        Py_XDECREF(meta);
        return NULL;
    }
    TaggedObject *t = (TaggedObject *)Tagged_Type->tp_alloc(Tagged_Type, 0);
    if (t == NULL) {
        Py_DECREF(value);
        Py_XDECREF(meta);
        return NULL;
    }
    t->value = value;
    t->meta = meta;  /* (stolen) */
    Py_INCREF(key);
    t->tagkey = key;
    Py_INCREF(ctx);
    t->ctx = ctx;
    return (PyObject *)t;
}

static PyObject *one, *minus_one;          /* the partials 1.0 and -1.0 */

/* a partial as a float object: the shared 1.0 and -1.0 of + and - made once */
static inline PyObject *
partial_object(double d)
{
    if (d == 1.0) {
        return Py_NewRef(one);
    }
    if (d == -1.0) {
        return Py_NewRef(minus_one);
    }
    return PyFloat_FromDouble(d);
}

/* whether a tape record holds plain ints and floats only (no cycle can pass through it) */
static inline int
untrackable(PyObject *record)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(record); i++) {
        PyTypeObject *t = Py_TYPE(PyTuple_GET_ITEM(record, i));
        if (t != &PyLong_Type && t != &PyFloat_Type) {
            return 0;
        }
    }
    return 1;
}

/* A reverse run's scalar tape record: one float operation's parents (tape indices) and the
   partial derivative with respect to each, as C numbers.  It reads as the tuple
   (parent, partial[, parent, partial]) the pure-Python fast paths append (len, indexing),
   holds no object (the collector never sees it) and costs one allocation. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t n;          /* 1 or 2 */
    Py_ssize_t parent[2];
    double partial[2];
} ScalarRecordObject;

static PyTypeObject ScalarRecord_Type;

static Py_ssize_t
scalar_record_length(ScalarRecordObject *r)
{
    return 2 * r->n;
}

static PyObject *
scalar_record_item(ScalarRecordObject *r, Py_ssize_t i)
{
    if (i < 0 || i >= 2 * r->n) {
        PyErr_SetString(PyExc_IndexError, "ScalarRecord index out of range");
        return NULL;
    }
    return i % 2 == 0 ? PyLong_FromSsize_t(r->parent[i / 2]) : PyFloat_FromDouble(r->partial[i / 2]);
}

static PyObject *
scalar_record_repr(ScalarRecordObject *r)
{
    PyObject *t = PySequence_Tuple((PyObject *)r);
    if (t == NULL) {
        return NULL;
    }
    PyObject *s = PyUnicode_FromFormat("ScalarRecord%R", t);
    Py_DECREF(t);
    return s;
}

static PySequenceMethods scalar_record_sequence = {
    .sq_length = (lenfunc)scalar_record_length,
    .sq_item = (ssizeargfunc)scalar_record_item,
};

static PyTypeObject ScalarRecord_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.ScalarRecord",
    .tp_doc = "A reverse run's scalar tape record: (parent, partial[, parent, partial]) as C numbers.",
    .tp_basicsize = sizeof(ScalarRecordObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_sequence = &scalar_record_sequence,
    .tp_repr = (reprfunc)scalar_record_repr,
};

/* an exact int as a double, when it is one exactly (|n| <= 2**53) */
static inline int
exact_int(PyObject *y, double *value)
{
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(y, &overflow);
    if (overflow || (n == -1 && PyErr_Occurred()) || n > (1LL << 53) || n < -(1LL << 53)) {
        PyErr_Clear();
        return 0;
    }
    *value = (double)n;
    return 1;
}

/* a record's parent: a tape index (an exact int) */
static inline int
record_parent(PyObject *meta, Py_ssize_t *index)
{
    if (!PyLong_CheckExact(meta)) {
        return 0;
    }
    Py_ssize_t i = PyLong_AsSsize_t(meta);
    if (i < 0) {
        PyErr_Clear();
        return 0;
    }
    *index = i;
    return 1;
}

/* a partial given as an object (an operand of *), as the double the sweep multiplies by:
   a float, or an int a float holds exactly (g * n is then g * float(n), as Python computes) */
static inline int
record_partial(PyObject *o, double d, double *out)
{
    if (o == NULL) {
        *out = d;
        return 1;
    }
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 1;
    }
    return PyLong_CheckExact(o) && exact_int(o, out);
}

/* partial p times tangent t, 0 where either is exactly 0 (fastpaths._strong): p is a
   constant operand's doing (x * c, c ** x), or a cotangent meets a partial */
static inline double
strong(double p, double t)
{
    return (p == 0.0 || t == 0.0) ? 0.0 : p * t;
}

/* partial p taken at the point times tangent t, 0 where t is exactly 0; a zero p against
   an infinite t stays NaN, undefined (fastpaths._zero_tangent_wins: cos(sqrt(x)) at 0) */
static inline double
zero_tangent_wins(double p, double t)
{
    return t == 0.0 ? 0.0 : p * t;
}

static PyObject *rec_held_zero, *rec_held_neg_zero;  /* fastpaths.HELD_ZERO, HELD_NEG_ZERO, or NULL */

/* the result: forward, its tangent from the partials; reverse, a tape record.
   mx/my are NULL for a constant operand; oa/ob, when not NULL, are the partials as the
   Python objects the template records (x * 3 records the int 3 itself, not 3.0). */
static PyObject *
emit_objects(KernelObject *k, PyObject *ctx, PyObject *key, double r,
             PyObject *mx, double da, PyObject *oa, PyObject *my, double db, PyObject *ob)
{
    if (!k->reverse) {
        double t;
        /* a lone partial of * / ** is the constant operand's doing (fastpaths' EMITC) */
        double (*term)(double, double) = (k->op == K_MUL || k->op == K_DIV || k->op == K_POW)
                                         ? strong : zero_tangent_wins;
        if (mx != NULL && my != NULL) {
            t = da * PyFloat_AS_DOUBLE(mx) + db * PyFloat_AS_DOUBLE(my);
            if (isnan(t)) {  /* an exact zero tangent wins over an infinite partial */
                t = zero_tangent_wins(da, PyFloat_AS_DOUBLE(mx)) + zero_tangent_wins(db, PyFloat_AS_DOUBLE(my));
            }
        }
        else if (mx != NULL) {
            t = da * PyFloat_AS_DOUBLE(mx);
            if (isnan(t)) {
                t = (k->op == K_POW ? zero_tangent_wins : term)(da, PyFloat_AS_DOUBLE(mx));
            }
        }
        else {
            t = db * PyFloat_AS_DOUBLE(my);
            if (isnan(t)) {
                t = term(db, PyFloat_AS_DOUBLE(my));
            }
        }
        PyObject *tangent = PyFloat_FromDouble(t);
        return tangent == NULL ? NULL : new_tagged(r, tangent, key, ctx);
    }
    PyObject *tape = ctx_attr(ctx, str_tape);
    if (tape == NULL) {
        return NULL;
    }
    if (!PyList_CheckExact(tape)) {
        Py_DECREF(tape);
        PyErr_SetString(PyExc_TypeError, "capstan: a reverse context's tape must be a list");
        return NULL;
    }
    Py_ssize_t n = (mx != NULL) + (my != NULL);
    Py_ssize_t pa = 0, pb = 0;
    double qa = 0.0, qb = 0.0;
    /* a lone partial of * / ** that is the constant operand's doing, exactly 0 (0.0 * x,
       1.0 ** x): recorded as fastpaths.HELD_ZERO, a zero that holds near the point */
    int held = n == 1 && rec_held_zero != NULL && rec_held_neg_zero != NULL && (mx != NULL ? da : db) == 0.0
               && (k->op == K_MUL || k->op == K_DIV || (k->op == K_POW && mx == NULL));
    if (held) {
        PyObject *zero = signbit(mx != NULL ? da : db) ? rec_held_neg_zero : rec_held_zero;
        if (mx != NULL) {
            oa = zero;
        }
        else {
            ob = zero;
        }
    }
    if (!held && (mx == NULL || (record_parent(mx, &pa) && record_partial(oa, da, &qa)))
        && (my == NULL || (record_parent(my, &pb) && record_partial(ob, db, &qb)))) {
        ScalarRecordObject *rec = PyObject_New(ScalarRecordObject, &ScalarRecord_Type);
        if (rec == NULL) {
            Py_DECREF(tape);
            return NULL;
        }
        rec->n = n;
        rec->parent[0] = mx != NULL ? pa : pb;
        rec->partial[0] = mx != NULL ? qa : qb;
        rec->parent[1] = pb;
        rec->partial[1] = qb;
        int err = PyList_Append(tape, (PyObject *)rec);
        Py_DECREF(rec);
        if (err < 0) {
            Py_DECREF(tape);
            return NULL;
        }
        PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(tape) - 1);
        Py_DECREF(tape);
        return index == NULL ? NULL : new_tagged(r, index, key, ctx);
    }
    PyObject *record = PyTuple_New(2 * n);
    if (record == NULL) {
        Py_DECREF(tape);
        return NULL;
    }
    Py_ssize_t i = 0;
    if (mx != NULL) {
        PyObject *p = oa != NULL ? Py_NewRef(oa) : partial_object(da);
        if (p == NULL) {
            goto fail;
        }
        Py_INCREF(mx);
        PyTuple_SET_ITEM(record, i++, mx);
        PyTuple_SET_ITEM(record, i++, p);
    }
    if (my != NULL) {
        PyObject *p = ob != NULL ? Py_NewRef(ob) : partial_object(db);
        if (p == NULL) {
            goto fail;
        }
        Py_INCREF(my);
        PyTuple_SET_ITEM(record, i++, my);
        PyTuple_SET_ITEM(record, i++, p);
    }
    if (untrackable(record)) {  /* (the collector never needs to see indices and floats) */
        PyObject_GC_UnTrack(record);
    }
    if (PyList_Append(tape, record) < 0) {
        goto fail;
    }
    Py_DECREF(record);
    PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(tape) - 1);
    Py_DECREF(tape);
    return index == NULL ? NULL : new_tagged(r, index, key, ctx);
fail:
    Py_DECREF(record);
    Py_DECREF(tape);
    return NULL;
}

static inline PyObject *
emit(KernelObject *k, PyObject *ctx, PyObject *key, double r,
     PyObject *mx, double da, PyObject *my, double db)
{
    return emit_objects(k, ctx, key, r, mx, da, NULL, my, db, NULL);
}

/* ---------------------------------------------------------------- the kernels */

static PyObject *
call_fallback(KernelObject *k, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(k->fallback, args, nargsf, kwnames);
}

/* x OP y for + - * / with one or two operands tagged by this run */
static PyObject *
binary(KernelObject *k, PyObject *ctx, PyObject *key, PyObject *x, PyObject *y, int *handled)
{
    double a, b;
    PyObject *mx = NULL, *my = NULL;
    if (own_float(x, key, k->reverse, &a, &mx)) {
        if (!constant(y, &b)) {
            if (is_own(y, key)) {
                if (!own_float(y, key, k->reverse, &b, &my)) {
                    return NULL;
                }
            }
            else {
                return NULL;
            }
        }
    }
    else if (is_own(y, key) && !is_own(x, key)) {
        if (!constant(x, &a) || !own_float(y, key, k->reverse, &b, &my)) {
            return NULL;
        }
    }
    else {
        return NULL;
    }
    double r, da, db;
    switch (k->op) {
    case K_ADD: r = a + b; da = 1.0; db = 1.0; break;
    case K_SUB: r = a - b; da = 1.0; db = -1.0; break;
    case K_MUL:  /* the partials are the operands themselves */
        *handled = 1;
        return emit_objects(k, ctx, key, a * b, mx, b, my == NULL ? y : ((TaggedObject *)y)->value,
                            my, a, mx == NULL ? x : ((TaggedObject *)x)->value);
    case K_DIV:
        if (b == 0.0) {
            return NULL;  /* Python raises ZeroDivisionError */
        }
        r = a / b; da = 1.0 / b; db = -r / b;
        if (!k->reverse && mx != NULL && my != NULL) {
            double ta = PyFloat_AS_DOUBLE(mx), tb = PyFloat_AS_DOUBLE(my);
            double t = da * ta + db * tb;
            if (isnan(t) && isnan(zero_tangent_wins(da, ta) + zero_tangent_wins(db, tb))) {
                /* 1/b and r/b past the float range (x / x at a subnormal x): inf - inf; the
                   Python path hands this to the generic rule, which combines the terms first */
                return NULL;
            }
        }
        break;
    default:
        return NULL;
    }
    *handled = 1;
    return emit(k, ctx, key, r, mx, da, my, db);
}

/* a ** b as Python's float power computes it for a nonzero finite base (and, for a
   negative one, an integral exponent): the power of |a|, negated for an odd exponent */
static inline double
python_pow(double a, double b)
{
    if (a > 0.0) {
        return pow(a, b);
    }
    double r = pow(-a, b);
    return fmod(b, 2.0) != 0.0 ? -r : r;
}

/* x ** y: a positive base tagged by this run with a constant or tagged exponent, or a
   positive constant base with a tagged exponent (the rest: the fallback, which also takes
   a negative base with an int exponent) */
static PyObject *
power(KernelObject *k, PyObject *ctx, PyObject *key, PyObject *x, PyObject *y, int *handled)
{
    double a, b;
    PyObject *mx = NULL, *my = NULL;
    if (own_float(x, key, k->reverse, &a, &mx)) {
        if (PyFloat_CheckExact(y)) {
            b = PyFloat_AS_DOUBLE(y);
        }
        else if (PyLong_CheckExact(y)) {
            if (!exact_int(y, &b)) {
                return NULL;
            }
        }
        else if (!is_own(y, key) || !own_float(y, key, k->reverse, &b, &my)) {
            return NULL;
        }
    }
    else if (is_own(y, key) && !is_own(x, key)) {
        if (PyFloat_CheckExact(x)) {
            a = PyFloat_AS_DOUBLE(x);
        }
        else if (!PyLong_CheckExact(x) || !exact_int(x, &a)) {
            return NULL;
        }
        if (!own_float(y, key, k->reverse, &b, &my)) {
            return NULL;
        }
    }
    else {
        return NULL;
    }
    /* a negative base only with a constant int exponent, as in the Python template */
    int int_exponent = my == NULL && PyLong_CheckExact(y);
    if (!(a > 0.0 || (a < 0.0 && int_exponent)) || !isfinite(a) || !isfinite(b)) {
        return NULL;
    }
    double r = python_pow(a, b);
    if (!isfinite(r)) {
        return NULL;  /* Python raises OverflowError */
    }
    double da = 0.0, db = 0.0;
    if (mx != NULL && b != 0.0) {
        double q = python_pow(a, b - 1.0);
        if (!isfinite(q)) {
            return NULL;
        }
        da = b * q;
    }
    if (my != NULL) {
        db = r * log(a);
    }
    *handled = 1;
    return emit(k, ctx, key, r, mx, da, my, db);
}

static PyObject *
negative(KernelObject *k, PyObject *ctx, PyObject *key, PyObject *x, int *handled)
{
    double a;
    PyObject *mx = NULL;
    if (!own_float(x, key, k->reverse, &a, &mx)) {
        return NULL;
    }
    *handled = 1;
    return emit(k, ctx, key, -a, mx, -1.0, NULL, 0.0);
}

/* f(a) and its partial, as the rule table writes it; 0 where Python would raise or the
   value is not finite (the fallback then does what Python does) */
static int
math1(int fn, double a, double *r, double *p)
{
    if (!isfinite(a)) {
        return 0;
    }
    switch (fn) {
    case M_SIN: *r = sin(a); *p = cos(a); break;
    case M_COS: *r = cos(a); *p = -sin(a); break;
    case M_TAN: *r = tan(a); *p = 1.0 + *r * *r; break;
    case M_EXP: *r = exp(a); *p = *r; break;
    case M_SQRT:
        if (!(a > 0.0)) {
            return 0;
        }
        *r = sqrt(a); *p = 0.5 / *r;
        break;
    case M_TANH: {  /* 1 / cosh^2, not 1 - tanh^2: that is 0 from |a| > 19 on */
        double s = 1.0 / cosh(a);  /* (as the Python paths: (1 / cosh(a)) ** 2) */
        *r = tanh(a); *p = pow(s, 2.0);  /* (CPython's float ** 2 calls pow: the same bits) */
        break;
    }
    case M_ATAN: *r = atan(a); *p = 1.0 / (1.0 + a * a); break;
    case M_SINH: *r = sinh(a); *p = cosh(a); break;
    case M_COSH: *r = cosh(a); *p = sinh(a); break;
    case M_LOG1P:
        if (!(a > -1.0)) {
            return 0;
        }
        *r = log1p(a); *p = 1.0 / (1.0 + a);
        break;
    case M_EXPM1: *r = expm1(a); *p = *r + 1.0; break;
    default: return 0;
    }
    return isfinite(*r) && isfinite(*p);
}

/* ---------------------------------------------------------------- nested forward mode */

/* Forward mode inside an enclosing forward differentiation of the same context class
   (D(D(f))): the operands' values and tangents are floats tagged by the outer context.
   The formulas are capstan/fastpaths_nested.py's, in the same order: every operation on
   an outer-tagged operand is the outer kernel's computation (binary() with ctx = outer),
   plain operands are computed plainly.  Anything else -- another context, arrays, a
   division by zero -- is left to the Python method (*handled stays 0), which hands it to
   the nested path in Python or to the rule tables. */

static KernelObject forward_op[K_NEG + 1];  /* op and reverse = 0 only: binary()'s view of a kernel */

/* an operand the nested path takes for outer context o (live key okey): a plain float or
   int, or a float tagged by o with a float tangent; NULL (no tangent) is taken too */
static inline int
nested_operand(PyObject *v, PyObject *o, PyObject *okey)
{
    if (v == NULL || PyFloat_CheckExact(v) || PyLong_CheckExact(v)) {
        return 1;
    }
    if (Py_TYPE(v) != Tagged_Type) {
        return 0;
    }
    TaggedObject *t = (TaggedObject *)v;
    return t->ctx == o && t->tagkey == okey && t->value != NULL && PyFloat_CheckExact(t->value)
           && t->meta != NULL && PyFloat_CheckExact(t->meta);
}

/* u OP v for outer context o: its kernel's result for a tagged operand, else Python's own.
   Returns a new reference, or NULL with *ok = 0 (not taken: no exception set) or with
   *ok = 1 (an exception). */
static PyObject *
outer_op(int op, PyObject *o, PyObject *okey, PyObject *u, PyObject *v, int *ok)
{
    if (Py_TYPE(u) == Tagged_Type || (v != NULL && Py_TYPE(v) == Tagged_Type)) {
        int handled = 0;
        PyObject *r = op == K_NEG ? negative(&forward_op[op], o, okey, u, &handled)
                                  : binary(&forward_op[op], o, okey, u, v, &handled);
        *ok = handled;
        return r;
    }
    *ok = 1;
    switch (op) {
    case K_ADD: return PyNumber_Add(u, v);
    case K_SUB: return PyNumber_Subtract(u, v);
    case K_MUL: return PyNumber_Multiply(u, v);
    case K_DIV: return PyNumber_TrueDivide(u, v);
    default: return PyNumber_Negative(u);
    }
}

/* t (may be NULL) plus partial p times tangent tv: the generic path's product and sum (a
   partial of exactly 1.0, p == NULL, is the tangent itself).  Steals t. */
static PyObject *
add_term(PyObject *o, PyObject *okey, PyObject *t, PyObject *p, PyObject *tv, int *ok)
{
    PyObject *d;
    if (p == NULL) {
        d = Py_NewRef(tv);
    }
    else {
        d = outer_op(K_MUL, o, okey, p, tv, ok);
        if (d == NULL) {
            Py_XDECREF(t);
            return NULL;
        }
    }
    if (t == NULL) {
        *ok = 1;
        return d;
    }
    PyObject *sum = outer_op(K_ADD, o, okey, t, d, ok);
    Py_DECREF(t);
    Py_DECREF(d);
    return sum;
}

static PyObject *
nested(KernelObject *k, PyObject *ctx, PyObject *key, PyObject *x, PyObject *y, int *handled)
{
    PyObject *a = x, *b = y, *ta = NULL, *tb = NULL;
    if (is_own(x, key)) {
        a = ((TaggedObject *)x)->value;
        ta = ((TaggedObject *)x)->meta;
    }
    if (y != NULL && is_own(y, key)) {
        b = ((TaggedObject *)y)->value;
        tb = ((TaggedObject *)y)->meta;
    }
    if (a == NULL || (y != NULL && b == NULL) || (ta == NULL && tb == NULL)) {
        return NULL;
    }
    PyObject *candidates[4] = {a, b, ta, tb}, *o = NULL;
    for (int i = 0; i < 4 && o == NULL; i++) {
        if (candidates[i] != NULL && Py_TYPE(candidates[i]) == Tagged_Type) {
            o = ((TaggedObject *)candidates[i])->ctx;
        }
    }
    if (o == NULL || o == ctx || Py_TYPE(o) != Py_TYPE(ctx)) {
        return NULL;
    }
    PyObject *okey = ctx_attr(o, str_tagkey);
    if (okey == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *r = NULL, *t = NULL, *p = NULL, *q = NULL;
    int ok = 0;
    if (!nested_operand(a, o, okey) || !nested_operand(b, o, okey) || !nested_operand(ta, o, okey)
        || !nested_operand(tb, o, okey)) {
        goto done;
    }
    r = outer_op(k->op, o, okey, a, b, &ok);
    if (r == NULL) {
        goto done;
    }
    switch (k->op) {
    case K_ADD:  /* partials 1.0, 1.0 */
        if (ta != NULL) t = add_term(o, okey, t, NULL, ta, &ok);
        if (ok && tb != NULL) t = add_term(o, okey, t, NULL, tb, &ok);
        break;
    case K_SUB:  /* 1.0, -1.0 */
        if (ta != NULL) t = add_term(o, okey, t, NULL, ta, &ok);
        if (ok && tb != NULL) t = add_term(o, okey, t, minus_one, tb, &ok);
        break;
    case K_MUL:  /* b, a */
        if (ta != NULL) t = add_term(o, okey, t, b, ta, &ok);
        if (ok && tb != NULL) t = add_term(o, okey, t, a, tb, &ok);
        break;
    case K_DIV:  /* 1.0 / b, -r / b */
        if (ta != NULL) {
            p = outer_op(K_DIV, o, okey, one, b, &ok);
            t = p == NULL ? NULL : add_term(o, okey, t, p, ta, &ok);
        }
        if (ok && tb != NULL) {
            PyObject *minus = outer_op(K_NEG, o, okey, r, NULL, &ok);
            q = minus == NULL ? NULL : outer_op(K_DIV, o, okey, minus, b, &ok);
            Py_XDECREF(minus);
            if (q == NULL) {
                Py_CLEAR(t);
            }
            else {
                t = add_term(o, okey, t, q, tb, &ok);
            }
        }
        break;
    case K_NEG:  /* -1.0 */
        t = add_term(o, okey, t, minus_one, ta, &ok);
        break;
    }
    if (t == NULL) {
        Py_CLEAR(r);
        goto done;
    }
    TaggedObject *res = (TaggedObject *)Tagged_Type->tp_alloc(Tagged_Type, 0);
    if (res == NULL) {
        Py_CLEAR(r);
        Py_CLEAR(t);
        ok = 1;
        goto done;
    }
    res->value = r;  /* (both stolen) */
    res->meta = t;
    res->tagkey = Py_NewRef(key);
    res->ctx = Py_NewRef(ctx);
    r = (PyObject *)res;
done:
    Py_XDECREF(p);
    Py_XDECREF(q);
    Py_DECREF(okey);
    *handled = ok;
    if (!ok) {  /* (not taken: nothing raised, the Python method decides) */
        PyErr_Clear();
        return NULL;
    }
    return r;
}

static PyObject *
kernel_vectorcall(KernelObject *k, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        return call_fallback(k, args, nargsf, kwnames);
    }
    Py_ssize_t want = (k->op == K_NEG || k->op == K_MATH) ? 2 : 3;
    if (nargs != want) {
        return call_fallback(k, args, nargsf, kwnames);
    }
    PyObject *ctx = args[0];
    if (k->op == K_MATH) {  /* plain numbers: the function itself, as in Python */
        PyTypeObject *tx = Py_TYPE(args[1]);
        if (tx == &PyFloat_Type || tx == &PyLong_Type || tx == F64_Type) {
            return PyObject_Vectorcall(k->func, args + 1, 1, NULL);
        }
        if (tx != Tagged_Type) {
            return call_fallback(k, args, nargsf, kwnames);
        }
    }
    PyObject *key = ctx_attr(ctx, str_tagkey);
    if (key == NULL) {
        return NULL;
    }
    int handled = 0;
    PyObject *result = NULL;
    switch (k->op) {
    case K_POW:
        result = power(k, ctx, key, args[1], args[2], &handled);
        break;
    case K_NEG:
        result = negative(k, ctx, key, args[1], &handled);
        break;
    case K_MATH: {
        double a, r, p;
        PyObject *mx = NULL;
        if (own_float(args[1], key, k->reverse, &a, &mx) && math1(k->fn, a, &r, &p)) {
            handled = 1;
            result = emit(k, ctx, key, r, mx, p, NULL, 0.0);
        }
        break;
    }
    default:
        result = binary(k, ctx, key, args[1], args[2], &handled);
    }
    if (!handled && k->nested && (k->op <= K_DIV || k->op == K_NEG)) {
        result = nested(k, ctx, key, args[1], k->op == K_NEG ? NULL : args[2], &handled);
    }
    Py_DECREF(key);
    if (handled) {
        return result;
    }
    if (k->arrays != NULL) {
        result = reverse_call(ctx, k->arrays, args + 1, nargs - 1, 1, &handled);
        if (handled) {
            return result;
        }
    }
    return call_fallback(k, args, nargsf, kwnames);
}

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"op", "reverse", "fallback", "func", "fn", "nested", "arrays", NULL};
    int op, reverse, fn = -1, nested_ok = 0;
    PyObject *fallback, *func = Py_None, *arrays = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ipO|OipO:Kernel", kwlist,
                                     &op, &reverse, &fallback, &func, &fn, &nested_ok, &arrays)) {
        return NULL;
    }
    if (op < K_ADD || op > K_MATH || (op == K_MATH && (fn < M_SIN || fn > M_EXPM1))) {
        PyErr_SetString(PyExc_ValueError, "Kernel: unknown operation");
        return NULL;
    }
    if (!PyCallable_Check(fallback) || (op == K_MATH && !PyCallable_Check(func))) {
        PyErr_SetString(PyExc_TypeError, "Kernel: fallback (and func) must be callable");
        return NULL;
    }
    KernelObject *k = (KernelObject *)type->tp_alloc(type, 0);
    if (k == NULL) {
        return NULL;
    }
    k->op = op;
    k->fn = fn;
    k->reverse = reverse;
    k->nested = nested_ok && !reverse;
    Py_INCREF(fallback);
    k->fallback = fallback;
    Py_INCREF(func);
    k->func = func;
    k->arrays = reverse && arrays != Py_None ? Py_NewRef(arrays) : NULL;
    k->vectorcall = (vectorcallfunc)kernel_vectorcall;
    return (PyObject *)k;
}

static PyObject *
kernel_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static int
kernel_traverse(KernelObject *k, visitproc visit, void *arg)
{
    Py_VISIT(k->fallback);
    Py_VISIT(k->func);
    Py_VISIT(k->arrays);
    return 0;
}

static int
kernel_clear(KernelObject *k)
{
    Py_CLEAR(k->fallback);
    Py_CLEAR(k->func);
    Py_CLEAR(k->arrays);
    return 0;
}

static void
kernel_dealloc(KernelObject *k)
{
    PyObject_GC_UnTrack(k);
    kernel_clear(k);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *
kernel_get_fallback(KernelObject *k, void *closure)
{
    Py_INCREF(k->fallback);
    return k->fallback;
}

static PyGetSetDef kernel_getset[] = {
    {"fallback", (getter)kernel_get_fallback, NULL, "the Python method this kernel twins", NULL},
    {NULL}
};

static PyTypeObject Kernel_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.Kernel",
    .tp_doc = "Kernel(op, reverse, fallback, func=None, fn=-1, nested=False, arrays=None): the "
              "native twin of one of capstan's scalar fast paths, called as kernel(ctx, x[, y]); "
              "nested: forward mode also takes floats of an enclosing context of ctx's class; "
              "arrays: reverse mode also takes float64 arrays of the run (ReverseCtx.arrays) "
              "for this operator.",
    .tp_basicsize = sizeof(KernelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(KernelObject, vectorcall),
    .tp_call = kernel_call,
    .tp_new = kernel_new,
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_clear = (inquiry)kernel_clear,
    .tp_getset = kernel_getset,
};

/* ---------------------------------------------------------------- sparsity detection */

/* A pattern kernel is the native twin of one of capstan/sparsity.py's scalar fast paths:
 * called as kernel(ctx, x[, y]), it computes the value with the operator or function
 * itself (so the value and any error are Python's own) and the index set of the result as
 * the union of its operands' bit masks (Python ints); in a second-order run (ctx.second)
 * it appends the pairs of operand masks that interact to ctx.scalar_pairs, in the order
 * the Python method does.  Operands that are not Python floats, ints or NumPy float64
 * scalars, masks that are not ints, a failing operation: the Python method (`fallback`). */

enum { P_00 = 1, P_01 = 2, P_11 = 4 };  /* binary: which pairs of operands interact */

typedef struct {
    PyObject_HEAD
    int arity;          /* 1 or 2 */
    int pairs;          /* binary: P_* bits; unary: 1 when nonlinear (the pair (ma, ma)) */
    PyObject *fallback; /* the Python method this kernel twins: fallback(ctx, *args) */
    PyObject *func;     /* the operator or function */
    vectorcallfunc vectorcall;
} PatternKernelObject;

static PyObject *str_second, *str_scalar_pairs, *small_zero;

static inline int
plain_number(PyObject *v)
{
    return PyFloat_CheckExact(v) || PyLong_CheckExact(v) || Py_TYPE(v) == F64_Type;
}

/* ctx.scalar_pairs when ctx.second is true (a new reference), NULL when it is false;
   *bad set when either cannot be read or the pairs are not a list (the fallback says why) */
static PyObject *
pairs_list(PyObject *ctx, int *bad)
{
    PyObject *second = PyObject_GetAttr(ctx, str_second);
    int on = second == NULL ? -1 : PyObject_IsTrue(second);
    Py_XDECREF(second);
    PyObject *pairs = on > 0 ? PyObject_GetAttr(ctx, str_scalar_pairs) : NULL;
    if (on < 0 || (on > 0 && (pairs == NULL || !PyList_CheckExact(pairs)))) {
        Py_XDECREF(pairs);
        PyErr_Clear();
        *bad = 1;
        return NULL;
    }
    return pairs;
}

static inline int
append_pair(PyObject *pairs, PyObject *a, PyObject *b)
{
    PyObject *pair = PyTuple_Pack(2, a, b);
    if (pair == NULL) {
        return -1;
    }
    int rc = PyList_Append(pairs, pair);
    Py_DECREF(pair);
    return rc;
}

/* x's value and mask (new references; the mask NULL for a constant, whose set is empty);
   0 when the fast path does not apply */
static inline int
pattern_operand(PyObject *x, PyObject *key, PyObject **value, PyObject **mask)
{
    PyObject *v = x, *m = NULL;
    if (Py_TYPE(x) == Tagged_Type && ((TaggedObject *)x)->tagkey == key) {
        v = ((TaggedObject *)x)->value;
        m = ((TaggedObject *)x)->meta;
        if (m == NULL || !PyLong_CheckExact(m)) {
            return 0;
        }
    }
    if (v == NULL || !plain_number(v)) {
        return 0;
    }
    *value = Py_NewRef(v);
    *mask = Py_XNewRef(m);
    return 1;
}

/* the result of an operation with value r and index set meta (both stolen) */
static PyObject *
pattern_result(PyObject *r, PyObject *meta, PyObject *key, PyObject *ctx)
{
    if (r == NULL || meta == NULL) {
        Py_XDECREF(r);
        Py_XDECREF(meta);
        return NULL;
    }
    TaggedObject *t = (TaggedObject *)Tagged_Type->tp_alloc(Tagged_Type, 0);
    if (t == NULL) {
        Py_DECREF(r);
        Py_DECREF(meta);
        return NULL;
    }
    t->value = r;
    t->meta = meta;
    t->tagkey = Py_NewRef(key);
    t->ctx = Py_NewRef(ctx);
    return (PyObject *)t;
}

/* x OP y: the union of the operands' sets, the pairs that interact */
static PyObject *
pattern_binary(PatternKernelObject *k, PyObject *ctx, PyObject *key, PyObject *pairs,
               PyObject *x, PyObject *y, int *handled)
{
    PyObject *operands[2], *ma = NULL, *mb = NULL;
    if (!pattern_operand(x, key, &operands[0], &ma)) {
        return NULL;
    }
    if (!pattern_operand(y, key, &operands[1], &mb)) {
        Py_DECREF(operands[0]);
        Py_XDECREF(ma);
        return NULL;
    }
    PyObject *r = PyObject_Vectorcall(k->func, operands, 2, NULL), *result = NULL;
    if (r == NULL) {  /* (the Python method raises the same error) */
        PyErr_Clear();
        goto done;
    }
    *handled = 1;
    int ta = ma != NULL && PyObject_IsTrue(ma), tb = mb != NULL && PyObject_IsTrue(mb);
    if (pairs != NULL
        && (((k->pairs & P_00) && ta && append_pair(pairs, ma, ma) < 0)
            || ((k->pairs & P_01) && ta && tb && append_pair(pairs, ma, mb) < 0)
            || ((k->pairs & P_11) && tb && append_pair(pairs, mb, mb) < 0))) {
        Py_DECREF(r);
        goto done;
    }
    PyObject *meta;
    if (ta && tb) {  /* ma | mb (of a mask with itself: that mask) */
        meta = ma == mb ? Py_NewRef(ma) : PyNumber_Or(ma, mb);
    }
    else {  /* ma or mb */
        meta = Py_NewRef(ta ? ma : mb != NULL ? mb : small_zero);
    }
    result = pattern_result(r, meta, key, ctx);
done:
    Py_DECREF(operands[0]);
    Py_DECREF(operands[1]);
    Py_XDECREF(ma);
    Py_XDECREF(mb);
    return result;
}

/* f(x): x's set; the pair (x, x) when f is nonlinear */
static PyObject *
pattern_unary(PatternKernelObject *k, PyObject *ctx, PyObject *key, PyObject *pairs,
              PyObject *x, int *handled)
{
    PyObject *a, *ma;
    if (Py_TYPE(x) != Tagged_Type || !pattern_operand(x, key, &a, &ma)) {
        return NULL;  /* (a tagged x passes only when it is this run's: ma is set) */
    }
    PyObject *r = PyObject_Vectorcall(k->func, &a, 1, NULL);
    Py_DECREF(a);
    if (r == NULL) {
        PyErr_Clear();
        Py_DECREF(ma);
        return NULL;
    }
    *handled = 1;
    if (pairs != NULL && append_pair(pairs, ma, ma) < 0) {
        Py_DECREF(r);
        Py_DECREF(ma);
        return NULL;
    }
    return pattern_result(r, ma, key, ctx);
}

static PyObject *
pattern_vectorcall(PatternKernelObject *k, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && nargs == k->arity + 1) {
        PyObject *ctx = args[0];
        if (k->arity == 1 && plain_number(args[1])) {  /* a plain number: the function itself */
            return PyObject_Vectorcall(k->func, args + 1, 1, NULL);
        }
        PyObject *key = ctx_attr(ctx, str_tagkey);
        if (key == NULL) {
            return NULL;
        }
        int bad = 0, handled = 0;
        PyObject *pairs = k->pairs ? pairs_list(ctx, &bad) : NULL, *result = NULL;
        if (!bad) {
            result = k->arity == 2 ? pattern_binary(k, ctx, key, pairs, args[1], args[2], &handled)
                                   : pattern_unary(k, ctx, key, pairs, args[1], &handled);
        }
        Py_DECREF(key);
        Py_XDECREF(pairs);
        if (handled) {
            return result;
        }
    }
    return PyObject_Vectorcall(k->fallback, args, nargsf, kwnames);
}

static PyObject *
pattern_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "arity", "pairs", "fallback", NULL};
    int arity, pairs;
    PyObject *func, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OiiO:PatternKernel", kwlist,
                                     &func, &arity, &pairs, &fallback)) {
        return NULL;
    }
    if ((arity != 1 && arity != 2) || pairs < 0 || pairs > (arity == 2 ? P_00 | P_01 | P_11 : 1)) {
        PyErr_SetString(PyExc_ValueError, "PatternKernel: arity 1 or 2, pairs as P_* bits");
        return NULL;
    }
    if (!PyCallable_Check(func) || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "PatternKernel: func and fallback must be callable");
        return NULL;
    }
    PatternKernelObject *k = (PatternKernelObject *)type->tp_alloc(type, 0);
    if (k == NULL) {
        return NULL;
    }
    k->arity = arity;
    k->pairs = pairs;
    k->func = Py_NewRef(func);
    k->fallback = Py_NewRef(fallback);
    k->vectorcall = (vectorcallfunc)pattern_vectorcall;
    return (PyObject *)k;
}

static int
pattern_traverse(PatternKernelObject *k, visitproc visit, void *arg)
{
    Py_VISIT(k->fallback);
    Py_VISIT(k->func);
    return 0;
}

static int
pattern_clear(PatternKernelObject *k)
{
    Py_CLEAR(k->fallback);
    Py_CLEAR(k->func);
    return 0;
}

static void
pattern_dealloc(PatternKernelObject *k)
{
    PyObject_GC_UnTrack(k);
    pattern_clear(k);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *
pattern_get_fallback(PatternKernelObject *k, void *closure)
{
    return Py_NewRef(k->fallback);
}

static PyGetSetDef pattern_getset[] = {
    {"fallback", (getter)pattern_get_fallback, NULL, "the Python method this kernel twins", NULL},
    {NULL}
};

static PyTypeObject PatternKernel_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.PatternKernel",
    .tp_doc = "PatternKernel(func, arity, pairs, fallback): the native twin of one of "
              "capstan.sparsity's scalar fast paths, called as kernel(ctx, x[, y]).",
    .tp_basicsize = sizeof(PatternKernelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(PatternKernelObject, vectorcall),
    .tp_call = kernel_call,
    .tp_new = pattern_new,
    .tp_dealloc = (destructor)pattern_dealloc,
    .tp_traverse = (traverseproc)pattern_traverse,
    .tp_clear = (inquiry)pattern_clear,
    .tp_getset = pattern_getset,
};

/* the digits of a non-negative int (0 for a negative one); CPython's layout, read the way
   its own longintrepr.h describes it */
static inline int
long_digits(PyObject *o, Py_ssize_t *ndigits, const digit **digits)
{
#if PY_VERSION_HEX >= 0x030C0000
    uintptr_t tag = ((PyLongObject *)o)->long_value.lv_tag;
    if ((tag & _PyLong_SIGN_MASK) == 2) {
        return 0;
    }
    *ndigits = (Py_ssize_t)(tag >> _PyLong_NON_SIZE_BITS);
    *digits = ((PyLongObject *)o)->long_value.ob_digit;
#else
    if (Py_SIZE(o) < 0) {
        return 0;
    }
    *ndigits = Py_SIZE(o);
    *digits = ((PyLongObject *)o)->ob_digit;
#endif
    return 1;
}

/* the lowest set bit of a nonzero word */
static inline int
lowest_bit(uint32_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(w);
#else
    int b = 0;
    while (!(w & 1u)) {
        w >>= 1;
        b++;
    }
    return b;
#endif
}

/* a growable array of int64 */
typedef struct {
    int64_t *data;
    Py_ssize_t size, capacity;
} Int64s;

static int
int64s_push(Int64s *a, int64_t v)
{
    if (a->size == a->capacity) {
        Py_ssize_t capacity = a->capacity ? 2 * a->capacity : 64;
        int64_t *grown = PyMem_Realloc(a->data, capacity * sizeof(int64_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        a->data = grown;
        a->capacity = capacity;
    }
    a->data[a->size++] = v;
    return 0;
}

/* appends the positions set in mask o, ascending; -1 (with an error) for anything but a
   non-negative int */
static int
push_bits(Int64s *out, PyObject *o)
{
    Py_ssize_t ndigits;
    const digit *digits;
    if (!PyLong_CheckExact(o) || !long_digits(o, &ndigits, &digits)) {
        PyErr_SetString(PyExc_ValueError, "mask_table: a mask is not a non-negative int");
        return -1;
    }
    Py_ssize_t d = 0;
    for (; d < ndigits; d += 16) {  /* (masks are mostly zeros: skipped 16 digits at a time) */
        const digit *g = digits + d;
        Py_ssize_t width = ndigits - d < 16 ? ndigits - d : 16;
        if (width == 16) {
            uint64_t w[16 * sizeof(digit) / sizeof(uint64_t)], any = 0;
            memcpy(w, g, sizeof w);
            for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) {
                any |= w[j];
            }
            if (any == 0) {
                continue;
            }
        }
        for (Py_ssize_t j = 0; j < width; j++) {
            for (uint32_t v = g[j]; v; v &= v - 1) {
                if (int64s_push(out, (int64_t)(d + j) * PyLong_SHIFT + lowest_bit(v)) < 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

static PyObject *
int64s_bytearray(Int64s *a)
{
    return PyByteArray_FromStringAndSize((const char *)a->data, a->size * (Py_ssize_t)sizeof(int64_t));
}

/* mask_table(masks): the distinct objects among a list of bit masks (non-negative ints, or
   tuples of them), in order of first appearance, and which one each mask is:
   (indptr, indices, ids), bytearrays of native int64 -- the positions set in distinct mask
   u are indices[indptr[u]:indptr[u + 1]], ascending; ids has one entry per int of masks.
   Masks are told apart by identity (big ints are slow to compare; an operation on one
   set mostly hands on the same object), as the Python reference does. */
static PyObject *
mask_table(PyObject *module, PyObject *masks)
{
    if (!PyList_CheckExact(masks)) {
        PyErr_SetString(PyExc_TypeError, "mask_table(masks): masks must be a list");
        return NULL;
    }
    Py_ssize_t count = 0, items = PyList_GET_SIZE(masks);
    for (Py_ssize_t i = 0; i < items; i++) {
        PyObject *item = PyList_GET_ITEM(masks, i);
        count += PyTuple_CheckExact(item) ? PyTuple_GET_SIZE(item) : 1;
    }
    size_t slots = 16;
    while (slots < 2 * (size_t)count) {
        slots *= 2;
    }
    PyObject **keys = PyMem_Calloc(slots, sizeof(PyObject *));
    Py_ssize_t *values = PyMem_Malloc(slots * sizeof(Py_ssize_t));
    Int64s indptr = {0}, indices = {0}, ids = {0};
    PyObject *result = NULL;
    if (keys == NULL || values == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (int64s_push(&indptr, 0) < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < items; i++) {
        PyObject *item = PyList_GET_ITEM(masks, i);
        int tuple = PyTuple_CheckExact(item);
        Py_ssize_t width = tuple ? PyTuple_GET_SIZE(item) : 1;
        for (Py_ssize_t j = 0; j < width; j++) {
            PyObject *o = tuple ? PyTuple_GET_ITEM(item, j) : item;
            size_t h = (size_t)(((uintptr_t)o >> 4) * (uintptr_t)0x9E3779B97F4A7C15ull) & (slots - 1);
            while (keys[h] != NULL && keys[h] != o) {
                h = (h + 1) & (slots - 1);
            }
            if (keys[h] == NULL) {  /* a new mask */
                if (push_bits(&indices, o) < 0 || int64s_push(&indptr, indices.size) < 0) {
                    goto done;
                }
                keys[h] = o;
                values[h] = indptr.size - 2;
            }
            if (int64s_push(&ids, values[h]) < 0) {
                goto done;
            }
        }
    }
    PyObject *a = int64s_bytearray(&indptr), *b = int64s_bytearray(&indices), *c = int64s_bytearray(&ids);
    if (a != NULL && b != NULL && c != NULL) {
        result = PyTuple_Pack(3, a, b, c);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
done:
    PyMem_Free(keys);
    PyMem_Free(values);
    PyMem_Free(indptr.data);
    PyMem_Free(indices.data);
    PyMem_Free(ids.data);
    return result;
}

/* ---------------------------------------------------------------- the reverse sweep */

/* cts[p] = c if cts[p] is None else cts[p] + c  (steals c) */
static int
accumulate(PyObject *cts, Py_ssize_t p, PyObject *c)
{
    if (p < 0 || p >= PyList_GET_SIZE(cts)) {
        Py_DECREF(c);
        PyErr_SetString(PyExc_IndexError, "capstan: a tape record names a node outside the tape");
        return -1;
    }
    PyObject *old = PyList_GET_ITEM(cts, p);
    if (old == Py_None) {
        PyList_SET_ITEM(cts, p, c);
        Py_DECREF(old);
        return 0;
    }
    PyObject *sum;
    if (PyFloat_CheckExact(old) && PyFloat_CheckExact(c)) {
        sum = PyFloat_FromDouble(PyFloat_AS_DOUBLE(old) + PyFloat_AS_DOUBLE(c));
    }
    else {
        sum = PyNumber_Add(old, c);
    }
    Py_DECREF(c);
    if (sum == NULL) {
        return -1;
    }
    PyList_SetItem(cts, p, sum);  /* (drops old: re-read, as PyNumber_Add may run Python code) */
    return 0;
}

/* The backward pass over the inline float records (parent, partial[, parent, partial]) of
   `tape` from node i down, exactly as reverse.backward's Python loop does it, adding into
   `cts`; skips the records `skip` (the shared input record; NULL: none).  Returns the first
   node it leaves to that loop (another kind of record, or a node whose element reads are
   pending in `reads`, a dict or NULL), -1 at the end, -2 with an error set.
   A cotangent times a partial: IEEE's product, except that a zero partial wins over an
   infinite cotangent (the factor nearer the input decides, as forward mode's zero tangent
   does); a zero cotangent against an infinite partial stays NaN, undefined: cos(sqrt(x))
   at 0 has slope -1/2, where 0 * inf gave 0 (reverse.backward drops zero seeds first).
   A NumPy float's zero cotangent, an element of an array's cotangent (an index, an untaken
   np.where branch, a stacked row), wins, as strong_mul's zeros do.  Either kind of zero
   may hold near the point (an index; a constant's 0, HELD_ZERO) or be a value's (cos's
   slope at 0): where a zero cotangent meets a non-finite partial, `*met` is set (NULL: not
   asked), and reverse.backward sweeps again telling them apart. */
static Py_ssize_t
sweep_from(PyObject *tape, PyObject *cts, Py_ssize_t i, PyObject *reads, PyObject *skip, int *met)
{
    for (; i >= 0; i--) {
        if (reads != NULL && PyDict_GET_SIZE(reads) != 0) {
            PyObject *key = PyLong_FromSsize_t(i);
            if (key == NULL) {
                return -2;
            }
            int pending = PyDict_Contains(reads, key);
            Py_DECREF(key);
            if (pending != 0) {
                return pending < 0 ? -2 : i;
            }
        }
        PyObject *g = PyList_GET_ITEM(cts, i);
        if (g == Py_None) {
            continue;
        }
        PyObject *rec = PyList_GET_ITEM(tape, i);
        if (rec == skip) {
            continue;
        }
        if (Py_TYPE(rec) == &ScalarRecord_Type) {
            ScalarRecordObject *sr = (ScalarRecordObject *)rec;
            Py_INCREF(g);
            for (Py_ssize_t j = 0; j < sr->n; j++) {
                double pv = sr->partial[j];
                PyObject *c;
                if (PyFloat_Check(g)) {  /* (a float, or a NumPy float: no NumPy warning) */
                    double gv = PyFloat_AS_DOUBLE(g), cv = gv * pv;
                    if (isnan(cv) && pv != 0.0 && gv == 0.0 && met != NULL) {
                        *met = 1;  /* (a zero cotangent against a non-finite partial) */
                    }
                    if (isnan(cv) && (pv == 0.0 || (gv == 0.0 && !PyFloat_CheckExact(g)))) {
                        cv = 0.0;  /* a zero partial wins over an infinite cotangent (see above) */
                    }
                    c = PyFloat_FromDouble(cv);
                }
                else {
                    PyObject *po = PyFloat_FromDouble(pv);
                    c = po == NULL ? NULL : PyNumber_Multiply(g, po);
                    Py_XDECREF(po);
                    if (c != NULL && PyFloat_Check(c) && isnan(PyFloat_AS_DOUBLE(c))
                        && (pv == 0.0 || (PyFloat_Check(g) && PyFloat_AS_DOUBLE(g) == 0.0))) {
                        /* (a NumPy float's zero is an array cotangent's element: it wins) */
                        if (pv != 0.0 && met != NULL) {
                            *met = 1;
                        }
                        Py_SETREF(c, PyFloat_FromDouble(0.0));
                    }
                }
                if (c == NULL || accumulate(cts, sr->parent[j], c) < 0) {
                    Py_DECREF(g);
                    return -2;
                }
            }
            Py_DECREF(g);
            continue;
        }
        if (!PyTuple_CheckExact(rec) || (PyTuple_GET_SIZE(rec) != 2 && PyTuple_GET_SIZE(rec) != 4)) {
            return i;
        }
        Py_INCREF(g);
        Py_INCREF(rec);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(rec); j += 2) {
            PyObject *parent = PyTuple_GET_ITEM(rec, j), *partial = PyTuple_GET_ITEM(rec, j + 1);
            Py_ssize_t p = PyLong_AsSsize_t(parent);
            if (p == -1 && PyErr_Occurred()) {
                goto fail;
            }
            PyObject *c;
            if (PyFloat_Check(g) && PyFloat_CheckExact(partial)) {
                double gv = PyFloat_AS_DOUBLE(g), pv = PyFloat_AS_DOUBLE(partial), cv = gv * pv;
                if (isnan(cv) && pv != 0.0 && gv == 0.0 && met != NULL) {
                    *met = 1;
                }
                if (isnan(cv) && (pv == 0.0 || (gv == 0.0 && !PyFloat_CheckExact(g)))) {
                    cv = 0.0;  /* a zero partial wins over an infinite cotangent */
                }
                c = PyFloat_FromDouble(cv);
            }
            else {
                c = PyNumber_Multiply(g, partial);
                if (c != NULL && PyFloat_Check(c) && isnan(PyFloat_AS_DOUBLE(c))) {
                    int pz = PyObject_Not(partial);  /* (1: an exact zero) */
                    if (pz < 0) {
                        Py_DECREF(c);
                        goto fail;
                    }
                    if (!pz && PyFloat_Check(g) && PyFloat_AS_DOUBLE(g) == 0.0 && met != NULL) {
                        *met = 1;
                    }
                    if (pz || (PyFloat_Check(g) && !PyFloat_CheckExact(g) && PyFloat_AS_DOUBLE(g) == 0.0)) {
                        Py_SETREF(c, PyFloat_FromDouble(0.0));
                    }
                }
            }
            if (c == NULL || accumulate(cts, p, c) < 0) {
                goto fail;
            }
        }
        Py_DECREF(rec);
        Py_DECREF(g);
        continue;
    fail:
        Py_DECREF(rec);
        Py_DECREF(g);
        return -2;
    }
    return -1;
}

static PyObject *rev_backward, *rev_rest, *rev_like, *rev_input_record;

/* sweep(tape, cts, i, reads[, met]): sweep_from for reverse.backward's loop (which handles
   the input records itself); appends True to the list `met` where an element's zero
   cotangent won over a non-finite partial */
static PyObject *
sweep(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if ((nargs != 4 && nargs != 5) || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])
        || !PyDict_CheckExact(args[3]) || (nargs == 5 && !PyList_CheckExact(args[4]))) {
        PyErr_SetString(PyExc_TypeError, "sweep(tape: list, cts: list, i: int, reads: dict[, met: list])");
        return NULL;
    }
    PyObject *tape = args[0], *cts = args[1];
    Py_ssize_t i = PyLong_AsSsize_t(args[2]);
    if (i == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (PyList_GET_SIZE(cts) != PyList_GET_SIZE(tape) || i >= PyList_GET_SIZE(tape)) {
        PyErr_SetString(PyExc_ValueError, "sweep: the cotangents do not match the tape");
        return NULL;
    }
    /* (reverse.backward steps over the shared input record, as it is skipped here) */
    int met = 0;
    Py_ssize_t left = sweep_from(tape, cts, i, args[3], rev_input_record, nargs == 5 ? &met : NULL);
    if (left == -2 || (met && PyList_Append(args[4], Py_True) < 0)) {
        return NULL;
    }
    return PyLong_FromSsize_t(left);
}

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *tagged, *f64;
    if (!PyArg_ParseTuple(args, "O!O!:setup", &PyType_Type, &tagged, &PyType_Type, &f64)) {
        return NULL;
    }
    if (((PyTypeObject *)tagged)->tp_basicsize != sizeof(TaggedObject)) {
        PyErr_SetString(PyExc_TypeError,
                        "setup: Tagged does not have the layout of _overdub_native.TaggedBase");
        return NULL;
    }
    Py_INCREF(tagged);
    Py_XSETREF(Tagged_Type, (PyTypeObject *)tagged);
    Py_INCREF(f64);
    Py_XSETREF(F64_Type, (PyTypeObject *)f64);
    Py_RETURN_NONE;
}


/* ------------------------------------------------------------------------------------------
 * Loan: capstan.pool.differentiating in C (``with Loan(ForwardCtx) as ctx:``), the fixed
 * cost of every D / jvp.  The Python class in capstan/pool.py is the reference: the same
 * steps, in the same order.  The pools and the nesting state are the thread's state
 * (ThreadState, below); setup_pool() hands over what a loss and a reset need.
 */
static PyObject *long_one;  /* 1 */
#define _PyLong_GetOne_compat() long_one

static PyObject *pool_failed;
static PyObject *pool_quiet, *pool_renew;  /* pool.QUIET_RESETS, overdub's Context.renew_tags */
static Py_ssize_t pool_keep;
static PyObject *str_outside, *str_reset, *str_renew_tags;

typedef struct {
    PyObject_HEAD
    PyObject *cls;
    PyObject *ctx;
} LoanObject;

/* ---------------------------------------------------------------- per-thread state */

/* What capstan keeps per thread, in one object (capstan/threadstate.py is the reference):
   the idle contexts by class, the contexts of the active differentiations (outermost
   first) and their number.  It lives in CPython's per-thread dictionary, so one lookup
   finds it, and it goes when the thread does. */
typedef struct {
    PyObject_HEAD
    PyObject *pools;     /* dict: context class -> list of idle contexts */
    PyObject *contexts;  /* list: the active differentiations' contexts (None for a level without one) */
    Py_ssize_t level;    /* how many differentiations are active */
} ThreadStateObject;

static PyTypeObject ThreadState_Type;
static PyObject *state_key;  /* its key in each thread's PyThreadState_GetDict() */

/* this thread's state (a borrowed reference: the thread's dictionary holds it) */
static ThreadStateObject *
thread_state_get(void)
{
    PyObject *d = PyThreadState_GetDict();
    if (d == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "capstan: this thread has no state dictionary");
        return NULL;
    }
    PyObject *st = PyDict_GetItemWithError(d, state_key);
    if (st != NULL && Py_TYPE(st) == &ThreadState_Type) {
        return (ThreadStateObject *)st;
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    ThreadStateObject *s = PyObject_GC_New(ThreadStateObject, &ThreadState_Type);
    if (s == NULL) {
        return NULL;
    }
    s->pools = PyDict_New();
    s->contexts = PyList_New(0);
    s->level = 0;
    PyObject_GC_Track(s);
    if (s->pools == NULL || s->contexts == NULL || PyDict_SetItem(d, state_key, (PyObject *)s) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    Py_DECREF(s);
    return s;
}

static PyObject *
thread_state(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return Py_XNewRef((PyObject *)thread_state_get());
}

static int
state_traverse(ThreadStateObject *s, visitproc visit, void *arg)
{
    Py_VISIT(s->pools);
    Py_VISIT(s->contexts);
    return 0;
}

static int
state_clear(ThreadStateObject *s)
{
    Py_CLEAR(s->pools);
    Py_CLEAR(s->contexts);
    return 0;
}

static void
state_dealloc(ThreadStateObject *s)
{
    PyObject_GC_UnTrack(s);
    state_clear(s);
    PyObject_GC_Del(s);
}

static PyMemberDef state_members[] = {
    {"pools", T_OBJECT_EX, offsetof(ThreadStateObject, pools), READONLY,
     "the idle contexts of each context class, in this thread"},
    {"contexts", T_OBJECT_EX, offsetof(ThreadStateObject, contexts), READONLY,
     "the contexts of the active differentiations, outermost first"},
    {"level", T_PYSSIZET, offsetof(ThreadStateObject, level), 0,
     "how many differentiations are active"},
    {NULL}
};

static PyTypeObject ThreadState_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.ThreadState",
    .tp_doc = "capstan's state in one thread: pools, contexts, level (capstan/threadstate.py).",
    .tp_basicsize = sizeof(ThreadStateObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)state_traverse,
    .tp_clear = (inquiry)state_clear,
    .tp_dealloc = (destructor)state_dealloc,
    .tp_members = state_members,
};

/* the idle contexts of cls in this thread (a new reference), made on its first run */
static PyObject *
idle_of(PyObject *cls)
{
    ThreadStateObject *st = thread_state_get();
    if (st == NULL) {
        return NULL;
    }
    PyObject *idle = PyDict_GetItemWithError(st->pools, cls);
    if (idle != NULL) {
        if (PyList_CheckExact(idle)) {
            return Py_NewRef(idle);
        }
        PyErr_SetString(PyExc_TypeError, "capstan: a pool of idle contexts must be a list");
        return NULL;
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    idle = PyList_New(0);
    if (idle == NULL || PyDict_SetItem(st->pools, cls, idle) < 0) {
        Py_XDECREF(idle);
        return NULL;
    }
    return idle;
}

static PyObject *
loan_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *cls;
    if (pool_failed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Loan: setup_pool() was not called");
        return NULL;
    }
    if (kwds != NULL || !PyArg_UnpackTuple(args, "Loan", 1, 1, &cls)) {
        if (kwds != NULL) {
            PyErr_SetString(PyExc_TypeError, "Loan(cls) takes no keyword arguments");
        }
        return NULL;
    }
    LoanObject *self = (LoanObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(cls);
    self->cls = cls;
    return (PyObject *)self;
}

static void
loan_dealloc(LoanObject *self)
{
    Py_XDECREF(self->cls);
    Py_XDECREF(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* an idle context of cls (or a new one): borrowed's way in (a new reference) */
static PyObject *
borrow(PyObject *cls)
{
    PyObject *idle = idle_of(cls);
    if (idle == NULL) {
        return NULL;
    }
    PyObject *ctx;
    Py_ssize_t n = PyList_GET_SIZE(idle);
    if (n > 0) {  /* (an idle context got its fresh identity when it was handed back) */
        ctx = PyList_GET_ITEM(idle, n - 1);
        Py_INCREF(ctx);
        if (PyList_SetSlice(idle, n - 1, n, NULL) < 0) {
            Py_DECREF(ctx);
            Py_DECREF(idle);
            return NULL;
        }
    }
    else {
        ctx = PyObject_CallNoArgs(cls);
    }
    Py_DECREF(idle);
    return ctx;
}

/* nesting.push(ctx), inline: one more active differentiation */
static int
push_level(PyObject *ctx)
{
    ThreadStateObject *st = thread_state_get();
    if (st == NULL) {
        return -1;
    }
    PyObject *contexts = Py_NewRef(st->contexts);
    Py_ssize_t m = PyList_GET_SIZE(contexts);
    int err = 0;
    if (m > 0) {  /* ctx.outside: the enclosing ones, innermost first */
        PyObject *outside = PyList_New(0);
        err = outside == NULL ? -1 : 0;
        for (Py_ssize_t i = m - 1; err == 0 && i >= 0; i--) {
            PyObject *c = PyList_GET_ITEM(contexts, i);
            if (c != Py_None && c != ctx) {
                err = PyList_Append(outside, c);
            }
        }
        if (err == 0) {
            PyObject *t = PyList_AsTuple(outside);
            err = t == NULL ? -1 : PyObject_SetAttr(ctx, str_outside, t);
            Py_XDECREF(t);
        }
        Py_XDECREF(outside);
    }
    else {
        PyObject *outside = ctx_attr(ctx, str_outside);
        int truth = outside == NULL ? -1 : PyObject_IsTrue(outside);
        Py_XDECREF(outside);
        if (truth < 0) {
            err = -1;
        }
        else if (truth) {
            PyObject *empty = PyTuple_New(0);
            err = empty == NULL ? -1 : PyObject_SetAttr(ctx, str_outside, empty);
            Py_XDECREF(empty);
        }
    }
    if (err == 0) {
        err = PyList_Append(contexts, ctx);
    }
    Py_DECREF(contexts);
    if (err == 0) {
        st = thread_state_get();  /* (the same one: setting ctx.outside may have run Python) */
        if (st == NULL) {
            return -1;
        }
        st->level++;
    }
    return err;
}

/* an idle context of cls (or a new one), counted as an active differentiation: Loan's
   way in (a new reference) */
static PyObject *
take(PyObject *cls)
{
    PyObject *ctx = borrow(cls);
    if (ctx != NULL && push_level(ctx) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    return ctx;
}

static PyObject *
loan_enter(LoanObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *ctx = take(self->cls);
    if (ctx == NULL) {
        return NULL;
    }
    Py_XSETREF(self->ctx, Py_NewRef(ctx));
    return ctx;
}

/* the finally block of __exit__: nesting.pop, reset, a fresh identity, back to the idle ones */
/* nesting.pop(), inline */
static int
pop_level(void)
{
    ThreadStateObject *st = thread_state_get();
    if (st == NULL) {
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(st->contexts);
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "pop from empty list");
        return -1;
    }
    st->level--;
    return PyList_SetSlice(st->contexts, n - 1, n, NULL);
}

/* ctx.reset() read off the context when its class's reset is in pool.QUIET_RESETS and the
   run was quiet (the attributes named there absent, None or empty): the lists named fresh
   replaced, nothing else to do.  1: done; 0: reset must run; -1: an error. */
static int
quiet_reset(PyObject *ctx)
{
    PyObject *reset = _PyType_Lookup(Py_TYPE(ctx), str_reset);  /* (borrowed: the class's function) */
    if (reset == NULL) {
        return 0;
    }
    PyObject *spec = pool_quiet == NULL ? NULL : PyDict_GetItemWithError(pool_quiet, reset);  /* borrowed */
    if (spec == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 3) {
        return 0;
    }
    for (int kind = 0; kind < 3; kind++) {
        PyObject *names = PyTuple_GET_ITEM(spec, kind);
        if (!PyTuple_CheckExact(names)) {
            return 0;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
            PyObject *name = PyTuple_GET_ITEM(names, i);
            if (kind == 2) {  /* (after every check: the run was quiet) */
                PyObject *fresh = PyList_New(0);
                int err = fresh == NULL ? -1 : ctx_store(ctx, name, fresh);
                Py_XDECREF(fresh);
                if (err < 0) {
                    return -1;
                }
                continue;
            }
            PyObject *v = ctx_peek(ctx, name);  /* (borrowed) */
            if (v == NULL) {
                if (PyErr_Occurred()) {
                    return -1;
                }
                continue;
            }
            if (kind == 0) {
                if (v != Py_None) {
                    return 0;
                }
                continue;
            }
            Py_INCREF(v);
            int truth = PyObject_IsTrue(v);
            Py_DECREF(v);
            if (truth != 0) {
                return truth < 0 ? -1 : 0;
            }
        }
    }
    return 1;
}

/* ctx.renew_tags(): a fresh object() as its _tagkey when its class's renew_tags is
   Context's own, else the method */
static int
renew_tags(PyObject *ctx)
{
    int own = _PyType_Lookup(Py_TYPE(ctx), str_renew_tags) == pool_renew;  /* (borrowed) */
    PyObject **slot = own ? instance_slot(ctx, str_tagkey) : NULL;
    if (slot == NULL) {
        PyObject *r = PyObject_CallMethodNoArgs(ctx, str_renew_tags);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    PyObject *key = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    int err = key == NULL ? -1 : ctx_store(ctx, str_tagkey, key);
    Py_XDECREF(key);
    return err;
}

/* borrowed's way out: reset, a fresh identity, back to the idle ones */
static int
hand_back(PyObject *cls, PyObject *ctx)
{
    int err;
    int quiet = quiet_reset(ctx);
    if (quiet < 0) {
        return -1;
    }
    if (!quiet) {
        PyObject *r = PyObject_CallMethodNoArgs(ctx, str_reset);
        if (r == NULL) {
            return -1;
        }
        Py_DECREF(r);
    }
    if (renew_tags(ctx) < 0) {
        return -1;
    }
    PyObject *idle = idle_of(cls);
    if (idle == NULL) {
        return -1;
    }
    err = PyList_GET_SIZE(idle) < pool_keep ? PyList_Append(idle, ctx) : 0;
    Py_DECREF(idle);
    return err;
}

/* Loan's way out (the finally block of __exit__) */
static int
give_back(PyObject *cls, PyObject *ctx)
{
    if (pop_level() < 0) {
        return -1;
    }
    return hand_back(cls, ctx);
}

static PyObject *
loan_exit(LoanObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "__exit__ takes 3 arguments");
        return NULL;
    }
    if (self->ctx == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Loan.__exit__ without __enter__");
        return NULL;
    }
    PyObject *failed = NULL;
    if (args[1] != Py_None) {  /* losses.failed(ctx, exc): raises the first loss recorded */
        PyObject *fargs[2] = {self->ctx, args[1]};
        failed = PyObject_Vectorcall(pool_failed, fargs, 2, NULL);
    }
    if (failed == NULL && args[1] != Py_None) {  /* (the loss raised, then the finally block) */
        PyObject *tp, *val, *tb;
        PyErr_Fetch(&tp, &val, &tb);
        if (give_back(self->cls, self->ctx) < 0) {
            Py_XDECREF(tp);
            Py_XDECREF(val);
            Py_XDECREF(tb);
            return NULL;
        }
        PyErr_Restore(tp, val, tb);
        return NULL;
    }
    Py_XDECREF(failed);
    if (give_back(self->cls, self->ctx) < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef loan_methods[] = {
    {"__enter__", (PyCFunction)loan_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))loan_exit, METH_FASTCALL, NULL},
    {NULL}
};

static PyMemberDef loan_members[] = {
    {"cls", T_OBJECT, offsetof(LoanObject, cls), READONLY, NULL},
    {"ctx", T_OBJECT, offsetof(LoanObject, ctx), READONLY, NULL},
    {NULL}
};

static PyTypeObject Loan_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.Loan",
    .tp_doc = "with Loan(cls) as ctx: capstan.pool.differentiating in C (see capstan/pool.py).",
    .tp_basicsize = sizeof(LoanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = loan_new,
    .tp_dealloc = (destructor)loan_dealloc,
    .tp_methods = loan_methods,
    .tp_members = loan_members,
};

static PyObject *
setup_pool(PyObject *module, PyObject *args)
{
    PyObject *failed, *quiet, *renew;
    Py_ssize_t keep;
    if (!PyArg_ParseTuple(args, "OnO!O:setup_pool", &failed, &keep, &PyDict_Type, &quiet, &renew)) {
        return NULL;
    }
    Py_XSETREF(pool_quiet, Py_NewRef(quiet));
    Py_XSETREF(pool_renew, Py_NewRef(renew));
    Py_XSETREF(pool_failed, Py_NewRef(failed));
    pool_keep = keep;
    Py_RETURN_NONE;
}

/* forward_entry(cls, f, x): capstan.D(f, x) for a float x and a Python function f, the
 * steps of its Python reference (capstan/forward.py D) in C: a context borrowed (Loan),
 * x tagged with tangent 1.0, the run (rt.run, else overdub), the losses checked, the
 * tangent of a float output read (else ctx.output_tangent), the context given back. */
static PyObject *entry_seed, *entry_overdub, *entry_check, *entry_not_run;
static PyObject *str_runtime, *str_run, *str_losses, *str_output_tangent, *str_D, *str_has_tags;

static PyObject *
forward_run(PyObject *ctx, PyObject *f, PyObject *x)
{
    PyObject *key = ctx_attr(ctx, str_tagkey);
    if (key == NULL) {
        return NULL;
    }
    PyObject *tx = NULL;
    PyObject **dictptr = _PyObject_GetDictPtr(ctx);
    PyObject *has = (dictptr != NULL && *dictptr != NULL) ? PyDict_GetItemWithError(*dictptr, str_has_tags) : NULL;
    if (has == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    int truth = has == NULL ? 0 : PyObject_IsTrue(has);
    if (truth < 0) {
        Py_DECREF(key);
        return NULL;
    }
    if (truth) {  /* Tagged(x, 1.0, ctx): x itself is the value */
        TaggedObject *t = (TaggedObject *)Tagged_Type->tp_alloc(Tagged_Type, 0);
        if (t != NULL) {
            t->value = Py_NewRef(x);
            t->meta = Py_NewRef(one);
            t->tagkey = Py_NewRef(key);
            t->ctx = Py_NewRef(ctx);
        }
        tx = (PyObject *)t;
    }
    else {
        PyObject *sargs[3] = {x, ctx, one};
        tx = PyObject_Vectorcall(entry_seed, sargs, 3, NULL);
        Py_SETREF(key, ctx_attr(ctx, str_tagkey));  /* (unchanged: read again all the same) */
    }
    if (tx == NULL || key == NULL) {
        Py_XDECREF(tx);
        Py_XDECREF(key);
        return NULL;
    }
    PyObject *y = NULL;
    PyObject *rt = ctx_attr(ctx, str_runtime);
    if (rt == NULL) {
        goto done;
    }
    if (rt != Py_None) {
        PyObject *rargs[3] = {rt, f, tx};
        y = PyObject_VectorcallMethod(str_run, rargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (y == NULL) {
            goto done;
        }
    }
    if (y == NULL || y == entry_not_run) {
        Py_XDECREF(y);
        PyObject *oargs[3] = {ctx, f, tx};
        y = PyObject_Vectorcall(entry_overdub, oargs, 3, NULL);
        if (y == NULL) {
            goto done;
        }
    }
    PyObject *losses = ctx_attr(ctx, str_losses);
    truth = losses == NULL ? -1 : PyObject_IsTrue(losses);
    Py_XDECREF(losses);
    if (truth > 0) {
        PyObject *r = PyObject_CallOneArg(entry_check, ctx);
        Py_XDECREF(r);
        truth = r == NULL ? -1 : 0;
    }
    if (truth < 0) {
        Py_CLEAR(y);
        goto done;
    }
    /* output_tangent's commonest case, inline: a float carrying a float tangent (a NaN one,
       or one of another type, goes to output_tangent, which refuses a NaN where the value
       is finite; x is finite here) */
    PyObject *meta = Py_TYPE(y) == Tagged_Type ? ((TaggedObject *)y)->meta : NULL;
    if (Py_TYPE(y) == Tagged_Type && ((TaggedObject *)y)->tagkey == key
        && PyFloat_CheckExact(((TaggedObject *)y)->value) && meta != NULL
        && PyFloat_CheckExact(meta) && !isnan(PyFloat_AS_DOUBLE(meta))) {
        Py_SETREF(y, Py_NewRef(((TaggedObject *)y)->meta));
    }
    else {
        PyObject *margs[3] = {ctx, y, str_D};
        Py_SETREF(y, PyObject_VectorcallMethod(str_output_tangent, margs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL));
    }
done:
    Py_XDECREF(rt);
    Py_DECREF(tx);
    Py_DECREF(key);
    return y;
}

/* the error set now handed to losses.failed(ctx, exc), which may replace it by a loss the
   run recorded; the error is set again afterwards (that one, or failed's own) */
static void
hand_to_failed(PyObject *ctx)
{
    PyObject *tp, *val, *tb;
    PyErr_Fetch(&tp, &val, &tb);
    PyErr_NormalizeException(&tp, &val, &tb);
    if (tb != NULL && val != NULL) {
        PyException_SetTraceback(val, tb);
    }
    PyObject *fargs[2] = {ctx, val != NULL ? val : Py_None};
    PyObject *r = PyObject_Vectorcall(pool_failed, fargs, 2, NULL);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_Restore(tp, val, tb);
    }
    else {
        Py_XDECREF(tp);
        Py_XDECREF(val);
        Py_XDECREF(tb);
    }
}

static PyObject *
forward_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyFloat_CheckExact(args[2]) || !PyFunction_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "forward_entry(cls, f, x): a Python function and a float");
        return NULL;
    }
    if (entry_seed == NULL || pool_failed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "forward_entry: setup_entry() was not called");
        return NULL;
    }
    PyObject *cls = args[0];
    PyObject *ctx = take(cls);
    if (ctx == NULL) {
        return NULL;
    }
    PyObject *y = forward_run(ctx, args[1], args[2]);
    if (y == NULL) {  /* Loan.__exit__ with the exception: a recorded loss replaces it */
        hand_to_failed(ctx);
        PyObject *tp, *val, *tb;
        PyErr_Fetch(&tp, &val, &tb);
        if (give_back(cls, ctx) < 0) {
            Py_XDECREF(tp);
            Py_XDECREF(val);
            Py_XDECREF(tb);
        }
        else {
            PyErr_Restore(tp, val, tb);
        }
        Py_DECREF(ctx);
        return NULL;
    }
    int err = give_back(cls, ctx);
    Py_DECREF(ctx);
    if (err < 0) {
        Py_DECREF(y);
        return NULL;
    }
    return y;
}

static PyObject *
setup_entry(PyObject *module, PyObject *args)
{
    PyObject *seed, *run, *check, *not_run;
    if (!PyArg_ParseTuple(args, "OOOO:setup_entry", &seed, &run, &check, &not_run)) {
        return NULL;
    }
    Py_XSETREF(entry_seed, Py_NewRef(seed));
    Py_XSETREF(entry_overdub, Py_NewRef(run));
    Py_XSETREF(entry_check, Py_NewRef(check));
    Py_XSETREF(entry_not_run, Py_NewRef(not_run));
    Py_RETURN_NONE;
}

/* reverse_entry(cls, f, x): capstan.gradient(f, x) for a float x and a Python function f,
 * the steps of its Python reference (capstan/reverse.py _gradient_at_float) in C. */
static PyObject *str_input, *str_meta;

/* The cotangents of every node of `tape` from the seed 1.0 at node `n` (an int):
   reverse.backward(tape, {n: 1.0}), in C when the tape holds inline float records and
   input records only, else by that function (which starts afresh). */
static PyObject *
backward_from(PyObject *tape, PyObject *n)
{
    Py_ssize_t size = PyList_CheckExact(tape) ? PyList_GET_SIZE(tape) : -1;
    Py_ssize_t seed = PyLong_AsSsize_t(n);
    if (seed == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size > 0 && seed >= 0 && seed < size) {
        PyObject *cts = PyList_New(size);
        if (cts == NULL) {
            return NULL;
        }
        for (Py_ssize_t k = 0; k < size; k++) {
            PyList_SET_ITEM(cts, k, Py_NewRef(k == seed ? one : Py_None));
        }
        int met = 0;
        Py_ssize_t left = sweep_from(tape, cts, seed, NULL, rev_input_record, &met);
        if (left == -1 && !met) {  /* (met: reverse.backward tells an element's zeros apart) */
            return cts;
        }
        Py_DECREF(cts);
        if (left == -2) {
            return NULL;
        }
    }
    PyObject *seeds = PyDict_New();
    if (seeds == NULL || PyDict_SetItem(seeds, n, one) < 0) {
        Py_XDECREF(seeds);
        return NULL;
    }
    PyObject *bargs[2] = {tape, seeds};
    PyObject *cts = PyObject_Vectorcall(rev_backward, bargs, 2, NULL);
    Py_DECREF(seeds);
    return cts;
}

/* the error set now, handed to losses.failed(ctx, exc) (which may raise a recorded loss
   instead), then nesting.pop(); always NULL */
static PyObject *
fail_and_pop(PyObject *ctx)
{
    hand_to_failed(ctx);
    PyObject *tp, *val, *tb;
    PyErr_Fetch(&tp, &val, &tb);
    if (pop_level() < 0) {
        Py_XDECREF(tp);
        Py_XDECREF(val);
        Py_XDECREF(tb);
    }
    else {
        PyErr_Restore(tp, val, tb);
    }
    return NULL;
}

/* ctx.input(x) for a float x: reverse.ReverseCtx.input's first branch in C (the shared
   input record appended to the run's tape, x tagged with its node) when the run has tags,
   else that method */
static PyObject *
reverse_input(PyObject *ctx, PyObject *x)
{
    PyObject **dictptr = _PyObject_GetDictPtr(ctx);
    PyObject *dict = dictptr != NULL ? *dictptr : NULL;
    PyObject *has = dict != NULL ? PyDict_GetItemWithError(dict, str_has_tags) : NULL;
    if (has == NULL && PyErr_Occurred()) {
        return NULL;
    }
    int truth = has == NULL ? 0 : PyObject_IsTrue(has);
    if (truth < 0) {
        return NULL;
    }
    PyObject *tape = truth ? ctx_peek(ctx, str_tape) : NULL;  /* borrowed */
    if (tape == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (tape == NULL || !PyList_CheckExact(tape) || rev_input_record == NULL) {
        PyObject *iargs[2] = {ctx, x};
        return PyObject_VectorcallMethod(str_input, iargs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    PyObject *key = ctx_attr(ctx, str_tagkey);
    if (key == NULL || PyList_Append(tape, rev_input_record) < 0) {
        Py_XDECREF(key);
        return NULL;
    }
    PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(tape) - 1);
    TaggedObject *t = index == NULL ? NULL : (TaggedObject *)Tagged_Type->tp_alloc(Tagged_Type, 0);
    if (t == NULL) {
        Py_XDECREF(index);
        Py_DECREF(key);
        return NULL;
    }
    t->value = Py_NewRef(x);
    t->meta = index;
    t->tagkey = key;
    t->ctx = Py_NewRef(ctx);
    return (PyObject *)t;
}

static PyObject *
reverse_run(PyObject *ctx, PyObject *f, PyObject *x)
{
    PyObject *t = reverse_input(ctx, x);
    if (t == NULL) {
        return NULL;
    }
    PyObject *node = PyObject_GetAttr(t, str_meta);
    if (node == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyObject *y = NULL, *result = NULL, *key = NULL, *tape = NULL;
    if (push_level(ctx) < 0) {  /* with running(ctx): */
        goto done;
    }
    PyObject *rt = ctx_attr(ctx, str_runtime);
    if (rt == NULL) {
        fail_and_pop(ctx);
        goto done;
    }
    if (rt != Py_None) {
        PyObject *rargs[3] = {rt, f, t};
        y = PyObject_VectorcallMethod(str_run, rargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(rt);
    if (rt != Py_None && y == NULL) {
        fail_and_pop(ctx);
        goto done;
    }
    if (y == NULL || y == entry_not_run) {
        Py_XDECREF(y);
        PyObject *oargs[3] = {ctx, f, t};
        y = PyObject_Vectorcall(entry_overdub, oargs, 3, NULL);
        if (y == NULL) {
            fail_and_pop(ctx);
            goto done;
        }
    }
    if (pop_level() < 0) {
        goto done;
    }
    PyObject *losses = ctx_attr(ctx, str_losses);
    int truth = losses == NULL ? -1 : PyObject_IsTrue(losses);
    Py_XDECREF(losses);
    if (truth > 0) {
        PyObject *r = PyObject_CallOneArg(entry_check, ctx);
        Py_XDECREF(r);
        truth = r == NULL ? -1 : 0;
    }
    if (truth < 0) {
        goto done;
    }
    key = ctx_attr(ctx, str_tagkey);
    if (key == NULL) {
        goto done;
    }
    /* exact equalities that held are checked by the general steps (reverse.check_equalities) */
    PyObject *equalities = ctx_attr(ctx, str_equalities);
    int held = equalities == NULL ? -1 : PyObject_IsTrue(equalities);
    Py_XDECREF(equalities);
    if (held < 0) {
        goto done;
    }
    if (!held && Py_TYPE(y) == Tagged_Type && ((TaggedObject *)y)->tagkey == key
        && PyFloat_CheckExact(((TaggedObject *)y)->value)) {  /* a float output carrying its node */
        PyObject *n = ((TaggedObject *)y)->meta;
        PyObject *c = NULL;
        if (n == Py_None) {
            c = Py_NewRef(Py_None);
        }
        else {
            tape = ctx_attr(ctx, str_tape);
            if (tape == NULL) {
                goto done;
            }
            PyObject *cts = backward_from(tape, n);
            if (cts == NULL) {
                goto done;
            }
            c = PyObject_GetItem(cts, node);
            Py_DECREF(cts);
            if (c == NULL) {
                goto done;
            }
            if (PyFloat_Check(c) && isnan(PyFloat_AS_DOUBLE(c))) {  /* (np.float64 too) */
                /* NaN: the general steps say whether f's value and x are finite (a refusal) */
                Py_DECREF(c);
                PyObject *gargs[4] = {ctx, x, node, y};
                result = PyObject_Vectorcall(rev_rest, gargs, 4, NULL);
                goto done;
            }
            if (c != Py_None && !PyFloat_CheckExact(c)) {
                PyObject *largs[2] = {c, x};
                Py_SETREF(c, PyObject_Vectorcall(rev_like, largs, 2, NULL));
                if (c == NULL) {
                    goto done;
                }
            }
        }
        result = PyTuple_New(1);
        if (result == NULL) {
            Py_DECREF(c);
            goto done;
        }
        PyTuple_SET_ITEM(result, 0, c);
    }
    else {
        PyObject *gargs[4] = {ctx, x, node, y};
        result = PyObject_Vectorcall(rev_rest, gargs, 4, NULL);
    }
done:
    Py_XDECREF(tape);
    Py_XDECREF(key);
    Py_XDECREF(y);
    Py_DECREF(node);
    Py_DECREF(t);
    return result;
}

static PyObject *
reverse_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyFloat_CheckExact(args[2]) || !PyFunction_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "reverse_entry(cls, f, x): a Python function and a float");
        return NULL;
    }
    if (rev_backward == NULL || entry_seed == NULL || pool_failed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "reverse_entry: setup_reverse() was not called");
        return NULL;
    }
    PyObject *cls = args[0];
    PyObject *ctx = borrow(cls);  /* with borrowed(cls) as ctx: */
    if (ctx == NULL) {
        return NULL;
    }
    PyObject *result = reverse_run(ctx, args[1], args[2]);
    PyObject *tp, *val, *tb;
    PyErr_Fetch(&tp, &val, &tb);
    if (hand_back(cls, ctx) < 0) {
        Py_XDECREF(tp);
        Py_XDECREF(val);
        Py_XDECREF(tb);
        Py_CLEAR(result);
    }
    else {
        PyErr_Restore(tp, val, tb);
    }
    Py_DECREF(ctx);
    return result;
}

static PyObject *
setup_reverse(PyObject *module, PyObject *args)
{
    PyObject *backward, *rest, *like, *input_record;
    if (!PyArg_ParseTuple(args, "OOOO:setup_reverse", &backward, &rest, &like, &input_record)) {
        return NULL;
    }
    Py_XSETREF(rev_input_record, Py_NewRef(input_record));
    Py_XSETREF(rev_backward, Py_NewRef(backward));
    Py_XSETREF(rev_rest, Py_NewRef(rest));
    Py_XSETREF(rev_like, Py_NewRef(like));
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * Tape records of reverse mode.  RecordBase holds the fields of capstan.reverse.Record (a
 * Python subclass that adds its repr); record(ctx, kind, f, ans, vals, kwargs, parents,
 * foreign) is ReverseCtx.record -- append the record to ctx.tape, note in ctx.readers which
 * arrays it holds (their memory owners' ids), return its node -- and record_array(ctx, f,
 * ans, vals, kwargs, parents, foreign) the commonest result of a rule or an operator, a
 * float64 array: its RULE record, its Tagged result and the note of the memory that result
 * owns or views (ReverseCtx._track).  Their pure-Python references are in capstan/reverse.py
 * (ReverseCtx.record, ReverseCtx._track): the same steps, in the same order.
 */
typedef struct {
    PyObject_HEAD
    PyObject *kind, *f, *ans, *vals, *kwargs, *parents, *foreign;
} RecordObject;

static PyMemberDef record_members[] = {
    {"kind", T_OBJECT, offsetof(RecordObject, kind), 0, NULL},
    {"f", T_OBJECT, offsetof(RecordObject, f), 0, NULL},
    {"ans", T_OBJECT, offsetof(RecordObject, ans), 0, NULL},
    {"vals", T_OBJECT, offsetof(RecordObject, vals), 0, NULL},
    {"kwargs", T_OBJECT, offsetof(RecordObject, kwargs), 0, NULL},
    {"parents", T_OBJECT, offsetof(RecordObject, parents), 0, NULL},
    {"foreign", T_OBJECT, offsetof(RecordObject, foreign), 0, NULL},
    {NULL}
};

static PyObject *
make_record(PyTypeObject *type, PyObject *kind, PyObject *f, PyObject *ans, PyObject *vals,
            PyObject *kwargs, PyObject *parents, PyObject *foreign)
{
    RecordObject *r = (RecordObject *)type->tp_alloc(type, 0);
    if (r == NULL) {
        return NULL;
    }
    r->kind = Py_NewRef(kind);
    r->f = Py_NewRef(f);
    r->ans = Py_NewRef(ans);
    r->vals = Py_NewRef(vals);
    r->kwargs = Py_NewRef(kwargs);
    r->parents = Py_NewRef(parents);
    r->foreign = Py_NewRef(foreign);
    return (PyObject *)r;
}

static PyObject *
record_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"kind", "f", "ans", "vals", "kwargs", "parents", "foreign", NULL};
    PyObject *kind, *f, *ans, *vals, *kwargs, *parents, *foreign = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOO|O:Record", names, &kind, &f, &ans, &vals,
                                     &kwargs, &parents, &foreign)) {
        return NULL;
    }
    return make_record(type, kind, f, ans, vals, kwargs, parents, foreign);
}

static int
record_traverse(RecordObject *r, visitproc visit, void *arg)
{
    Py_VISIT(r->kind);
    Py_VISIT(r->f);
    Py_VISIT(r->ans);
    Py_VISIT(r->vals);
    Py_VISIT(r->kwargs);
    Py_VISIT(r->parents);
    Py_VISIT(r->foreign);
    return 0;
}

static int
record_clear(RecordObject *r)
{
    Py_CLEAR(r->kind);
    Py_CLEAR(r->f);
    Py_CLEAR(r->ans);
    Py_CLEAR(r->vals);
    Py_CLEAR(r->kwargs);
    Py_CLEAR(r->parents);
    Py_CLEAR(r->foreign);
    return 0;
}

static void
record_dealloc(RecordObject *r)
{
    PyObject_GC_UnTrack(r);
    record_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyTypeObject RecordBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.RecordBase",
    .tp_doc = "RecordBase(kind, f, ans, vals, kwargs, parents, foreign=None): the fields of a "
              "reverse-mode tape record (capstan.reverse.Record).",
    .tp_basicsize = sizeof(RecordObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_members = record_members,
    .tp_new = record_new,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_traverse = (traverseproc)record_traverse,
    .tp_clear = (inquiry)record_clear,
};

static PyTypeObject *rec_type;  /* capstan.reverse.Record */
static PyObject *rec_ndarray;   /* numpy.ndarray */
static PyObject *rec_rule;      /* Kind.RULE */
static PyObject *str_readers, *str_holders, *str_views, *str_base;

/* the array under every tag of v, then the owner of its memory (following .base while it is
   an ndarray): a new reference; NULL with no error set when v holds no ndarray */
static PyObject *
memory_root(PyObject *v, PyObject **value)
{
    while (Tagged_Type != NULL && Py_TYPE(v) == Tagged_Type) {
        v = ((TaggedObject *)v)->value;
    }
    if (value != NULL) {
        *value = v;
    }
    if ((PyObject *)Py_TYPE(v) != rec_ndarray) {
        return NULL;
    }
    Py_INCREF(v);
    for (;;) {
        PyObject *base = PyObject_GetAttr(v, str_base);
        if (base == NULL) {
            Py_DECREF(v);
            return NULL;
        }
        if ((PyObject *)Py_TYPE(base) != rec_ndarray) {
            Py_DECREF(base);
            return v;
        }
        Py_SETREF(v, base);
    }
}

/* table.setdefault(id(root), []).append(n) */
static int
note_in(PyObject *table, PyObject *root, PyObject *n)
{
    PyObject *key = PyLong_FromVoidPtr(root);
    if (key == NULL) {
        return -1;
    }
    PyObject *list = PyDict_GetItemWithError(table, key);
    if (list == NULL) {
        if (PyErr_Occurred() || (list = PyList_New(0)) == NULL) {
            Py_DECREF(key);
            return -1;
        }
        if (PyDict_SetItem(table, key, list) < 0) {
            Py_DECREF(list);
            Py_DECREF(key);
            return -1;
        }
        Py_DECREF(list);  /* (the table holds it) */
    }
    Py_DECREF(key);
    return PyList_Append(list, n);
}

/* the node n of a new record (a new reference) */
static PyObject *
append_record(PyObject *ctx, PyObject *const *a)
{
    /* a: kind, f, ans, vals, kwargs, parents, foreign */
    if (rec_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "record: setup_records() was not called");
        return NULL;
    }
    PyObject *tape = ctx_attr(ctx, str_tape);
    if (tape == NULL) {
        return NULL;
    }
    if (!PyList_Check(tape)) {
        Py_DECREF(tape);
        PyErr_SetString(PyExc_TypeError, "record: ctx.tape must be a list");
        return NULL;
    }
    PyObject *rec = make_record(rec_type, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    if (rec == NULL || PyList_Append(tape, rec) < 0) {
        Py_XDECREF(rec);
        Py_DECREF(tape);
        return NULL;
    }
    Py_DECREF(rec);
    PyObject *n = PyLong_FromSsize_t(PyList_GET_SIZE(tape) - 1);
    Py_DECREF(tape);
    if (n == NULL) {
        return NULL;
    }
    PyObject *readers = PyObject_GetAttr(ctx, str_readers);
    if (readers == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    PyObject *vals = PySequence_Fast(a[3], "record: vals must be a sequence");
    int err = vals == NULL || !PyDict_Check(readers);
    if (!err) {
        Py_ssize_t count = PySequence_Fast_GET_SIZE(vals);
        for (Py_ssize_t i = 0; i <= count && !err; i++) {  /* (the values, then ans) */
            PyObject *root = memory_root(i < count ? PySequence_Fast_GET_ITEM(vals, i) : a[2], NULL);
            if (root == NULL) {
                err = PyErr_Occurred() != NULL;
                continue;
            }
            err = note_in(readers, root, n) < 0;
            Py_DECREF(root);
        }
    }
    else if (vals != NULL) {
        PyErr_SetString(PyExc_TypeError, "record: ctx.readers must be a dict");
    }
    Py_XDECREF(vals);
    Py_DECREF(readers);
    if (err) {
        Py_DECREF(n);
        return NULL;
    }
    return n;
}

static PyObject *
record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "record(ctx, kind, f, ans, vals, kwargs, parents, foreign)");
        return NULL;
    }
    return append_record(args[0], args + 1);
}

static PyObject *array_result(PyObject *ctx, PyObject *const *args);

static PyObject *
record_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "record_array(ctx, f, ans, vals, kwargs, parents, foreign)");
        return NULL;
    }
    if (Tagged_Type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "record_array: setup() was not called");
        return NULL;
    }
    return array_result(args[0], args + 1);
}

/* record_array's steps; args: f, ans, vals, kwargs, parents, foreign */
static PyObject *
array_result(PyObject *ctx, PyObject *const *args)
{
    PyObject *ans = args[1];
    PyObject *fields[7] = {rec_rule, args[0], ans, args[2], args[3], args[4], args[5]};
    PyObject *n = append_record(ctx, fields);
    if (n == NULL) {
        return NULL;
    }
    PyObject *targs[3] = {ans, n, ctx};
    PyObject *t = PyObject_Vectorcall((PyObject *)Tagged_Type, targs, 3, NULL);
    if (t == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    /* _track: the memory t owns (holders) or views (views) */
    PyObject *raw;
    PyObject *root = memory_root(((TaggedObject *)t)->value, &raw);
    int err = root == NULL && PyErr_Occurred() != NULL;
    if (root != NULL) {
        PyObject *base = PyObject_GetAttr(raw, str_base);
        PyObject *table = base == NULL ? NULL : PyObject_GetAttr(ctx, base == Py_None ? str_holders : str_views);
        PyObject *ref = table == NULL ? NULL : PyWeakref_NewRef(t, NULL);
        if (ref == NULL) {
            err = 1;
        }
        else if (!PyDict_Check(table)) {
            PyErr_SetString(PyExc_TypeError, "record_array: ctx.holders and ctx.views must be dicts");
            err = 1;
        }
        else if (base == Py_None) {  /* holders[id(raw)] = (weakref to t, raw, its node) */
            PyObject *key = PyLong_FromVoidPtr(raw);
            PyObject *entry = key == NULL ? NULL : PyTuple_Pack(3, ref, raw, n);
            err = entry == NULL || PyDict_SetItem(table, key, entry) < 0;
            Py_XDECREF(entry);
            Py_XDECREF(key);
        }
        else {  /* views.setdefault(id(root), []).append(weakref to t) */
            err = note_in(table, root, ref) < 0;
        }
        Py_XDECREF(ref);
        Py_XDECREF(table);
        Py_XDECREF(base);
        Py_DECREF(root);
    }
    Py_DECREF(n);
    if (err) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

static PyObject *
setup_records(PyObject *module, PyObject *args)
{
    PyObject *cls, *ndarray, *rule, *held = NULL, *held_neg = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O|OO:setup_records", &PyType_Type, &cls, &PyType_Type, &ndarray, &rule,
                          &held, &held_neg)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)cls, &RecordBase_Type)
        || ((PyTypeObject *)cls)->tp_basicsize != sizeof(RecordObject)) {
        PyErr_SetString(PyExc_TypeError, "setup_records: Record must subclass RecordBase adding no fields");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(rec_type, (PyTypeObject *)cls);
    Py_XSETREF(rec_ndarray, Py_NewRef(ndarray));
    Py_XSETREF(rec_rule, Py_NewRef(rule));
    Py_XSETREF(rec_held_zero, held == NULL ? NULL : Py_NewRef(held));
    Py_XSETREF(rec_held_neg_zero, held_neg == NULL ? NULL : Py_NewRef(held_neg));
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * Routed NumPy calls in reverse mode.  A call of a function with a rule, or an operator its
 * float kernel did not take, whose operands are this run's float64 arrays and floats (tape
 * nodes as metadata) and plain numbers -- and, for a function, plain arrays where the run
 * shadows none -- is computed and recorded here as capstan/reverse.py's ReverseCtx.apply
 * and ReverseCtx.compute (a function), resp. ReverseCtx.arrays (an operator), do it: the
 * same questions, the same record, the same result.  Every other call is handed back to
 * the Python method (`taken` stays 0 and nothing was called).  Only a ReverseCtx itself
 * (not a subclass, which may override those methods) is served.
 */
static struct {
    PyTypeObject *ctx_type;  /* capstan.reverse.ReverseCtx */
    PyObject *partials, *vjp, *only_first;  /* the rule tables (registry) */
    PyObject *refused;  /* functions apply takes the general way: SOLVERS, IMPLS, NONDIFF, ZERO_TESTS,
                           ADJOINTS, INPLACE (a tuple of containers), and operator.getitem */
    PyObject *getitem;
    PyObject *double_dtype;  /* numpy.dtype(float64) */
    PyObject *ufunc_type;  /* numpy.ufunc */
    PyObject *computed;  /* ReverseCtx._computed: the rest of compute, for other results */
    PyObject *strip;  /* overdub's drop_own_frames */
} rev_calls;

static PyObject *str_shadows, *str_nin, *str_dtype, *str_kind, *str_result;

/* whether container (a dict or set) holds f: 1, 0, -1 on an error (unhashable: 0) */
static int
holds(PyObject *container, PyObject *f)
{
    int r = PySequence_Contains(container, f);
    if (r < 0 && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        return -2;
    }
    return r;
}

/* the truth of ctx.name (shadows, outside): 1, 0, -1 on an error */
static int
ctx_truth(PyObject *ctx, PyObject *name)
{
    PyObject *v = ctx_attr(ctx, name);
    if (v == NULL) {
        return -1;
    }
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

#define RC_MAX 4

static PyObject *
reverse_call(PyObject *ctx, PyObject *f, PyObject *const *args, Py_ssize_t n, int op, int *taken)
{
    *taken = 0;
    if (rev_calls.ctx_type == NULL || Py_TYPE(ctx) != rev_calls.ctx_type || n < 1 || n > RC_MAX
        || Tagged_Type == NULL || rec_type == NULL) {
        return NULL;
    }
    int r;
    if (!op) {  /* (ReverseCtx.apply's questions of f) */
        if ((r = holds(rev_calls.vjp, f)) == 0) {
            r = holds(rev_calls.partials, f);
            if (r == 0) {
                return NULL;
            }
        }
        if (r < 0) {
            goto not_taken;
        }
        if (f == rev_calls.getitem) {
            return NULL;
        }
        if ((PyObject *)Py_TYPE(f) == rev_calls.ufunc_type) {
            PyObject *nin = PyObject_GetAttr(f, str_nin);
            if (nin == NULL) {
                goto not_taken;
            }
            Py_ssize_t k = PyLong_AsSsize_t(nin);
            Py_DECREF(nin);
            if (k != n) {
                goto not_taken;
            }
        }
        else if (n > 2) {  /* (where positional arguments may reach an out parameter) */
            return NULL;
        }
    }
    Py_ssize_t count = PyTuple_GET_SIZE(rev_calls.refused);
    for (Py_ssize_t i = 0; i < count; i++) {
        if ((r = holds(PyTuple_GET_ITEM(rev_calls.refused, i), f)) != 0) {
            goto not_taken;
        }
    }
    PyObject *key = ctx_attr(ctx, str_tagkey);
    if (key == NULL) {
        goto not_taken;
    }
    PyObject *vals[RC_MAX], *metas[RC_MAX];
    int found = 0, arrays = 0, plain_arrays = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = args[i];
        PyTypeObject *ta = Py_TYPE(a);
        if (ta == Tagged_Type) {
            TaggedObject *t = (TaggedObject *)a;
            if (t->tagkey != key || t->value == NULL || t->meta == NULL || !PyLong_CheckExact(t->meta)) {
                Py_DECREF(key);
                return NULL;
            }
            PyObject *v = t->value;
            PyTypeObject *tv = Py_TYPE(v);
            if ((PyObject *)tv == rec_ndarray) {
                PyObject *dtype = PyObject_GetAttr(v, str_dtype);
                if (dtype == NULL) {
                    Py_DECREF(key);
                    goto not_taken;
                }
                Py_DECREF(dtype);  /* (only its identity is compared) */
                if (dtype != rev_calls.double_dtype) {
                    Py_DECREF(key);
                    return NULL;
                }
                arrays = 1;
            }
            else if (tv != &PyFloat_Type && tv != F64_Type) {
                Py_DECREF(key);
                return NULL;
            }
            vals[i] = v;
            metas[i] = t->meta;
            found = 1;
        }
        else if (ta == &PyFloat_Type || ta == &PyLong_Type || ta == F64_Type) {
            vals[i] = a;
            metas[i] = Py_None;
        }
        else if (!op && (PyObject *)ta == rec_ndarray) {
            vals[i] = a;
            metas[i] = Py_None;
            plain_arrays = 1;
        }
        else {
            Py_DECREF(key);
            return NULL;
        }
    }
    Py_DECREF(key);
    if (!found || (op && !arrays)) {
        return NULL;
    }
    if (plain_arrays) {  /* (a plain array may hold differentiated values: shadowed) */
        if ((r = ctx_truth(ctx, str_shadows)) != 0 || (r = ctx_truth(ctx, str_outside)) != 0) {
            goto not_taken;
        }
    }
    if (!op) {  /* an argument the rule does not cover: compute refuses it */
        PyObject *rules = PyDict_GetItemWithError(rev_calls.vjp, f);
        if (rules == NULL && !PyErr_Occurred()) {
            rules = PyDict_GetItemWithError(rev_calls.partials, f);
        }
        if (rules == NULL) {
            goto not_taken;
        }
        Py_ssize_t covered = n;
        if (PyTuple_Check(rules)) {
            covered = PyTuple_GET_SIZE(rules);
        }
        else if ((r = holds(rev_calls.only_first, f)) != 0) {
            if (r < 0) {
                goto not_taken;
            }
            covered = 1;
        }
        for (Py_ssize_t i = covered; i < n; i++) {
            if (metas[i] != Py_None) {
                return NULL;
            }
        }
    }
    /* from here on the call is taken: f is called once, and its error is the caller's */
    *taken = 1;
    PyObject *ans = PyObject_Vectorcall(f, vals, n, NULL);
    if (ans == NULL) {
        return NULL;
    }
    PyObject *tvals = PyTuple_New(n);
    PyObject *parents = PyList_New(n);
    PyObject *kwargs = PyDict_New();
    PyObject *result = NULL;
    if (tvals == NULL || parents == NULL || kwargs == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(tvals, i, Py_NewRef(vals[i]));
        PyList_SET_ITEM(parents, i, Py_NewRef(metas[i]));
    }
    PyTypeObject *tans = Py_TYPE(ans);
    if ((PyObject *)tans == rec_ndarray) {
        int floating = op;
        if (!op) {
            for (Py_ssize_t i = 0; i < n; i++) {  /* returned_argument: a itself */
                if (vals[i] == ans && metas[i] != Py_None) {
                    result = Py_NewRef(args[i]);
                    goto done;
                }
            }
            PyObject *dtype = PyObject_GetAttr(ans, str_dtype);
            PyObject *kind = dtype == NULL ? NULL : PyObject_GetAttr(dtype, str_kind);
            Py_XDECREF(dtype);
            if (kind == NULL) {
                goto done;
            }
            floating = PyUnicode_Check(kind) && PyUnicode_GET_LENGTH(kind) == 1
                       && PyUnicode_READ_CHAR(kind, 0) == 'f';
            Py_DECREF(kind);
        }
        if (floating) {
            PyObject *fields[6] = {f, ans, tvals, kwargs, parents, Py_None};
            result = array_result(ctx, fields);
            goto done;
        }
    }
    else if (tans == &PyFloat_Type || tans == F64_Type) {  /* a float: Tagged(ans, node, ctx) */
        PyObject *fields[7] = {rec_rule, f, ans, tvals, kwargs, parents, Py_None};
        PyObject *node = append_record(ctx, fields);
        if (node != NULL) {
            PyObject *targs[3] = {ans, node, ctx};
            result = PyObject_Vectorcall((PyObject *)Tagged_Type, targs, 3, NULL);
            Py_DECREF(node);
        }
        goto done;
    }
    if (op) {  /* ReverseCtx.arrays: ctx._result(ans, ctx.record(RULE, ...)) */
        PyObject *fields[7] = {rec_rule, f, ans, tvals, kwargs, parents, Py_None};
        PyObject *node = append_record(ctx, fields);
        if (node != NULL) {
            result = PyObject_CallMethodObjArgs(ctx, str_result, ans, node, NULL);
            Py_DECREF(node);
        }
    }
    else {  /* the rest of ReverseCtx.compute: ctx._computed(f, ans, vals, parents, kwargs, args, out, foreign) */
        PyObject *targs = PyTuple_New(n);
        if (targs != NULL) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyTuple_SET_ITEM(targs, i, Py_NewRef(args[i]));
            }
            PyObject *cargs[9] = {ctx, f, ans, tvals, parents, kwargs, targs, Py_None, Py_None};
            result = PyObject_Vectorcall(rev_calls.computed, cargs, 9, NULL);
            Py_DECREF(targs);
        }
    }
done:
    Py_DECREF(ans);
    Py_XDECREF(tvals);
    Py_XDECREF(parents);
    Py_XDECREF(kwargs);
    return result;
not_taken:  /* (an error while asking: the Python method asks again, and raises it) */
    PyErr_Clear();
    return NULL;
}

/* the exception being raised leaves with overdub's frames dropped from its traceback, as
   the generated primitive dispatch (which the twin stands in for) leaves it */
static void
strip_frames(void)
{
    if (rev_calls.strip == NULL || rev_calls.strip == Py_None) {
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL) {
        PyErr_Restore(type, value, tb);
        return;
    }
    if (tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    PyObject *r = PyObject_CallOneArg(rev_calls.strip, value);
    if (r == NULL) {  /* (keep the original) */
        PyErr_Clear();
    }
    else {
        Py_DECREF(r);
        Py_XSETREF(tb, PyException_GetTraceback(value));
    }
    PyErr_Restore(type, value, tb);
}

/* A rule twin stands in for capstan's primitive for one function with a rule
 * (adcontext._register's `rule`), called as twin(ctx, *args, **kwargs): reverse_call, else
 * the Python primitive itself. */
typedef struct {
    PyObject_HEAD
    PyObject *func;      /* the function the rule is for */
    PyObject *fallback;  /* the Python primitive: fallback(ctx, *args, **kwargs) */
    vectorcallfunc vectorcall;
} RuleTwinObject;

static PyObject *
rule_twin_vectorcall(RuleTwinObject *k, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs >= 2 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        int taken;
        PyObject *r = reverse_call(args[0], k->func, args + 1, nargs - 1, 0, &taken);
        if (taken) {
            return r;
        }
    }
    PyObject *r = PyObject_Vectorcall(k->fallback, args, nargsf, kwnames);
    if (r == NULL) {
        strip_frames();
    }
    return r;
}

static PyObject *
rule_twin_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "fallback", NULL};
    PyObject *func, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:RuleTwin", kwlist, &func, &fallback)) {
        return NULL;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "RuleTwin: fallback must be callable");
        return NULL;
    }
    RuleTwinObject *k = (RuleTwinObject *)type->tp_alloc(type, 0);
    if (k == NULL) {
        return NULL;
    }
    k->func = Py_NewRef(func);
    k->fallback = Py_NewRef(fallback);
    k->vectorcall = (vectorcallfunc)rule_twin_vectorcall;
    return (PyObject *)k;
}

static PyObject *
rule_twin_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static int
rule_twin_traverse(RuleTwinObject *k, visitproc visit, void *arg)
{
    Py_VISIT(k->func);
    Py_VISIT(k->fallback);
    return 0;
}

static int
rule_twin_clear(RuleTwinObject *k)
{
    Py_CLEAR(k->func);
    Py_CLEAR(k->fallback);
    return 0;
}

static void
rule_twin_dealloc(RuleTwinObject *k)
{
    PyObject_GC_UnTrack(k);
    rule_twin_clear(k);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyMemberDef rule_twin_members[] = {
    {"func", T_OBJECT, offsetof(RuleTwinObject, func), READONLY, "the function the rule is for"},
    {"fallback", T_OBJECT, offsetof(RuleTwinObject, fallback), READONLY, "the Python primitive this twins"},
    {NULL}
};

static PyTypeObject RuleTwin_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_capstan_native.RuleTwin",
    .tp_doc = "RuleTwin(func, fallback): the native twin of capstan's primitive for a function "
              "with a rule, called as twin(ctx, *args, **kwargs): a reverse-mode call on float64 "
              "arrays and floats computed and recorded in C, every other call by fallback.",
    .tp_basicsize = sizeof(RuleTwinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(RuleTwinObject, vectorcall),
    .tp_call = rule_twin_call,
    .tp_new = rule_twin_new,
    .tp_dealloc = (destructor)rule_twin_dealloc,
    .tp_traverse = (traverseproc)rule_twin_traverse,
    .tp_clear = (inquiry)rule_twin_clear,
    .tp_members = rule_twin_members,
};

static PyObject *
setup_calls(PyObject *module, PyObject *args)
{
    PyObject *cls, *partials, *vjp, *only_first, *refused, *getitem, *dtype, *ufunc, *computed, *strip;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!OOOOO:setup_calls", &PyType_Type, &cls, &PyDict_Type, &partials,
                          &PyDict_Type, &vjp, &only_first, &PyTuple_Type, &refused, &getitem, &dtype, &ufunc,
                          &computed, &strip)) {
        return NULL;
    }
    Py_XSETREF(rev_calls.ctx_type, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(rev_calls.partials, Py_NewRef(partials));
    Py_XSETREF(rev_calls.vjp, Py_NewRef(vjp));
    Py_XSETREF(rev_calls.only_first, Py_NewRef(only_first));
    Py_XSETREF(rev_calls.refused, Py_NewRef(refused));
    Py_XSETREF(rev_calls.getitem, Py_NewRef(getitem));
    Py_XSETREF(rev_calls.double_dtype, Py_NewRef(dtype));
    Py_XSETREF(rev_calls.ufunc_type, Py_NewRef(ufunc));
    Py_XSETREF(rev_calls.computed, Py_NewRef(computed));
    Py_XSETREF(rev_calls.strip, Py_NewRef(strip));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"reverse_entry", (PyCFunction)(void (*)(void))reverse_entry, METH_FASTCALL,
     "reverse_entry(cls, f, x): capstan.gradient(f, x) for a float x and a Python function f "
     "(see capstan/reverse.py _gradient_at_float, its reference)."},
    {"setup_reverse", setup_reverse, METH_VARARGS,
     "setup_reverse(backward, rest, like, input_record): what reverse_entry calls."},
    {"forward_entry", (PyCFunction)(void (*)(void))forward_entry, METH_FASTCALL,
     "forward_entry(cls, f, x): capstan.D(f, x) for a float x and a Python function f (see "
     "capstan/forward.py, its reference)."},
    {"setup_entry", setup_entry, METH_VARARGS,
     "setup_entry(seed, overdub, check_finished, NOT_RUN): what forward_entry calls."},
    {"setup_pool", setup_pool, METH_VARARGS,
     "setup_pool(failed, keep, quiet_resets, renew_tags): what Loan reads (see capstan/pool.py)."},
    {"thread_state", thread_state, METH_NOARGS,
     "thread_state(): this thread's capstan state (pools, contexts, level; see capstan/threadstate.py)."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL,
     "record(ctx, kind, f, ans, vals, kwargs, parents, foreign): ReverseCtx.record (the node)."},
    {"record_array", (PyCFunction)(void (*)(void))record_array, METH_FASTCALL,
     "record_array(ctx, f, ans, vals, kwargs, parents, foreign): the RULE record of a float64 "
     "array result, its Tagged result (returned) and ReverseCtx._track's note of it."},
    {"setup_calls", setup_calls, METH_VARARGS,
     "setup_calls(ReverseCtx, PARTIALS, VJP, ONLY_FIRST, refused, operator.getitem, "
     "dtype(float64), ufunc, ReverseCtx._computed, drop_own_frames): what reverse_call reads."},
    {"setup_records", setup_records, METH_VARARGS,
     "setup_records(Record, ndarray, RULE[, HELD_ZERO, HELD_NEG_ZERO]): the record class (a subclass "
     "of RecordBase), numpy.ndarray, Kind.RULE and fastpaths' held zeros."},
    {"sweep", (PyCFunction)(void (*)(void))sweep, METH_FASTCALL,
     "sweep(tape, cts, i, reads[, met]): the backward pass over inline float records from node i "
     "down; returns the first node left to the Python loop, or -1 (True appended to the list met "
     "where an element's zero cotangent won over a non-finite partial)."},
    {"mask_table", mask_table, METH_O,
     "mask_table(masks): the distinct masks (by identity) of a list of non-negative ints or "
     "tuples of them, as CSR (indptr, indices), and each int's distinct mask (ids); "
     "bytearrays of native int64."},
    {"setup", setup, METH_VARARGS,
     "setup(Tagged, float64): the tagged-value class the kernels build (it must have "
     "_overdub_native.TaggedBase's layout) and NumPy's float64 type."},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_capstan_native",
    .m_doc = "capstan's scalar arithmetic in C (see capstan/fastpaths.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__capstan_native(void)
{
    str_tagkey = PyUnicode_InternFromString("_tagkey");
    str_tape = PyUnicode_InternFromString("tape");
    str_readers = PyUnicode_InternFromString("readers");
    str_holders = PyUnicode_InternFromString("holders");
    str_views = PyUnicode_InternFromString("views");
    str_base = PyUnicode_InternFromString("base");
    str_shadows = PyUnicode_InternFromString("shadows");
    str_nin = PyUnicode_InternFromString("nin");
    str_dtype = PyUnicode_InternFromString("dtype");
    str_kind = PyUnicode_InternFromString("kind");
    str_result = PyUnicode_InternFromString("_result");
    if (str_shadows == NULL || str_nin == NULL || str_dtype == NULL || str_kind == NULL || str_result == NULL
        || PyType_Ready(&RuleTwin_Type) < 0) {
        return NULL;
    }
    if (str_readers == NULL || str_holders == NULL || str_views == NULL || str_base == NULL
        || PyType_Ready(&RecordBase_Type) < 0) {
        return NULL;
    }
    str_equalities = PyUnicode_InternFromString("equalities");
    str_second = PyUnicode_InternFromString("second");
    str_scalar_pairs = PyUnicode_InternFromString("scalar_pairs");
    state_key = PyUnicode_InternFromString("capstan._capstan_native.thread_state");
    if (state_key == NULL || PyType_Ready(&ThreadState_Type) < 0) {
        return NULL;
    }
    str_runtime = PyUnicode_InternFromString("_runtime");
    str_input = PyUnicode_InternFromString("input");
    str_meta = PyUnicode_InternFromString("_meta");
    if (str_input == NULL || str_meta == NULL) {
        return NULL;
    }
    str_run = PyUnicode_InternFromString("run");
    str_losses = PyUnicode_InternFromString("losses");
    str_output_tangent = PyUnicode_InternFromString("output_tangent");
    str_D = PyUnicode_InternFromString("D");
    str_has_tags = PyUnicode_InternFromString("_has_tags");
    if (str_runtime == NULL || str_run == NULL || str_losses == NULL || str_output_tangent == NULL
        || str_D == NULL || str_has_tags == NULL) {
        return NULL;
    }
    str_outside = PyUnicode_InternFromString("outside");
    str_reset = PyUnicode_InternFromString("reset");
    str_renew_tags = PyUnicode_InternFromString("renew_tags");
    if (str_outside == NULL
        || str_reset == NULL || str_renew_tags == NULL || PyType_Ready(&Loan_Type) < 0) {
        return NULL;
    }
    small_zero = PyLong_FromLong(0);
    one = PyFloat_FromDouble(1.0);
    long_one = PyLong_FromLong(1);
    if (long_one == NULL) {
        return NULL;
    }
    minus_one = PyFloat_FromDouble(-1.0);
    if (str_tagkey == NULL || str_tape == NULL || str_equalities == NULL || str_second == NULL || str_scalar_pairs == NULL
        || small_zero == NULL || one == NULL || minus_one == NULL
        || PyType_Ready(&Kernel_Type) < 0 || PyType_Ready(&PatternKernel_Type) < 0
        || PyType_Ready(&ScalarRecord_Type) < 0) {
        return NULL;
    }
    for (int i = 0; i <= K_NEG; i++) {
        forward_op[i].op = i;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&Kernel_Type);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&Kernel_Type) < 0) {
        Py_DECREF(&Kernel_Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PatternKernel_Type);
    if (PyModule_AddObject(m, "PatternKernel", (PyObject *)&PatternKernel_Type) < 0) {
        Py_DECREF(&PatternKernel_Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&RuleTwin_Type);
    if (PyModule_AddObject(m, "RuleTwin", (PyObject *)&RuleTwin_Type) < 0) {
        Py_DECREF(&RuleTwin_Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&RecordBase_Type);
    if (PyModule_AddObject(m, "RecordBase", (PyObject *)&RecordBase_Type) < 0) {
        Py_DECREF(&RecordBase_Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ScalarRecord_Type);
    if (PyModule_AddObject(m, "ScalarRecord", (PyObject *)&ScalarRecord_Type) < 0) {
        Py_DECREF(&ScalarRecord_Type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&Loan_Type);
    if (PyModule_AddObject(m, "Loan", (PyObject *)&Loan_Type) < 0) {
        Py_DECREF(&Loan_Type);
        Py_DECREF(m);
        return NULL;
    }
    const char *names[] = {"ADD", "SUB", "MUL", "DIV", "POW", "NEG", "MATH"};
    for (int i = 0; i <= K_MATH; i++) {
        if (PyModule_AddIntConstant(m, names[i], i) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(m, "PAIR_00", P_00) < 0 || PyModule_AddIntConstant(m, "PAIR_01", P_01) < 0
        || PyModule_AddIntConstant(m, "PAIR_11", P_11) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    const char *fns[] = {"sin", "cos", "tan", "exp", "sqrt", "tanh", "atan", "sinh", "cosh",
                         "log1p", "expm1"};
    PyObject *table = PyDict_New();
    if (table == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i <= M_EXPM1; i++) {
        PyObject *v = PyLong_FromLong(i);
        if (v == NULL || PyDict_SetItemString(table, fns[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(table);
            Py_DECREF(m);
            return NULL;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(m, "MATH_FUNCTIONS", table) < 0
        || PyModule_AddIntConstant(m, "ABI", OVERDUB_NATIVE_ABI) < 0) {
        Py_DECREF(table);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
