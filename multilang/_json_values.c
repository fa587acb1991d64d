/* Part of the optional C extension multilang._speedups: a tuple's values as JSON bytes, for the
   emits a Python component writes (multilang/client.py `_emit_frame`) and the tuples the Spark
   engine writes to a bolt (host/spark/component_process.py `_fill`): once per emit, the hottest
   encoding of a Python component.

   json_values(values) -> bytes | None
     values  a list (exactly) of str, int, bool and None only; anything else, an int beyond 64
             bits signed, or a str that is not valid UTF-8 (a lone surrogate) -> None, and the
             caller takes the general path (ujson, then the stdlib), which decides what to write
             or which error to raise.
   What it writes is byte for byte what `multilang.codec.dumps(values).encode()` writes for the
   same values: compact, non-ASCII as UTF-8, '/' as is, the control characters below 0x20 as
   ujson escapes them (\b \f \n \r \t, else \u00XX). tests/unit/test_json_values.py checks it
   against ujson on random values. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    char *data;
    Py_ssize_t len, cap;
    char local[512]; /* most tuples fit: no allocation */
} Out;

static int
out_reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2;
    while (cap < o->len + more)
        cap *= 2;
    char *grown;
    if (o->data == o->local) {
        grown = PyMem_Malloc((size_t)cap);
        if (grown != NULL)
            memcpy(grown, o->local, (size_t)o->len);
    } else {
        grown = PyMem_Realloc(o->data, (size_t)cap);
    }
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = grown;
    o->cap = cap;
    return 0;
}

static int
out_put(Out *o, const char *text, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return -1;
    memcpy(o->data + o->len, text, (size_t)n);
    o->len += n;
    return 0;
}

static const char HEX[] = "0123456789abcdef";

/* A UTF-8 string as a JSON string. Worst case 6 bytes out per byte in (\u00XX). */
static int
out_string(Out *o, const char *s, Py_ssize_t n)
{
    if (out_reserve(o, 6 * n + 2) < 0)
        return -1;
    char *w = o->data + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        default:
            *w++ = 'u';
            *w++ = '0';
            *w++ = '0';
            *w++ = HEX[c >> 4];
            *w++ = HEX[c & 0xf];
        }
    }
    *w++ = '"';
    o->len = w - o->data;
    return 0;
}

/* 1 written, 0 not ours (the caller returns None), -1 error. */
static int
out_value(Out *o, PyObject *v)
{
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                return -1;
            PyErr_Clear(); /* a lone surrogate: the general path decides */
            return 0;
        }
        return out_string(o, s, n) < 0 ? -1 : 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return 0;
        if (x == -1 && PyErr_Occurred())
            return -1;
        char digits[24];
        int n = snprintf(digits, sizeof digits, "%lld", x);
        return out_put(o, digits, n) < 0 ? -1 : 1;
    }
    if (v == Py_True)
        return out_put(o, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False)
        return out_put(o, "false", 5) < 0 ? -1 : 1;
    if (v == Py_None)
        return out_put(o, "null", 4) < 0 ? -1 : 1;
    return 0;
}

PyObject *
json_values(PyObject *module, PyObject *values)
{
    (void)module;
    if (!PyList_CheckExact(values))
        Py_RETURN_NONE;
    Out o;
    o.data = o.local;
    o.len = 0;
    o.cap = (Py_ssize_t)sizeof o.local;
    PyObject *result = NULL;
    int ours = 1;
    o.data[o.len++] = '[';
    /* the list cannot change under us: nothing here runs Python code */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values); i++) {
        if (i > 0 && out_put(&o, ",", 1) < 0)
            goto done;
        ours = out_value(&o, PyList_GET_ITEM(values, i));
        if (ours <= 0)
            break;
    }
    if (ours < 0)
        goto done;
    if (ours == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (out_put(&o, "]", 1) < 0)
        goto done;
    result = PyBytes_FromStringAndSize(o.data, o.len);
done:
    if (o.data != o.local)
        PyMem_Free(o.data);
    return result;
}
