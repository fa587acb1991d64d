/* Optional C version of the host's hottest loop: parsed component messages -> typed messages.

   multilang/component_decoding.py has the reference version (ComponentDecoder._messages_py and
   _emit); this one must behave exactly like it, and tests/unit/test_codec.py checks that it does,
   on fixed cases and on random values. It handles the data path's two messages, `emit` and
   `ack`, and hands every other value to a Python callback. When the extension cannot be built or
   loaded, the host uses the Python version; nothing else changes.

   component_messages(values, Emit, Ack, other) -> list | None
     values  a list of parsed JSON values, one per message
     Emit    multilang.messages.Emit, Ack multilang.messages.Ack (tuple subclasses)
     other   called with any value that is not a valid-looking `emit` or an `ack` with an id;
             returns its message or raises (the exception propagates)
   Returns None as soon as an `emit` is malformed: the caller then decodes frame by frame,
   which names the problem. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_command, *s_emit, *s_ack, *s_tuple, *s_stream, *s_anchors, *s_task,
    *s_need_task_ids, *s_id, *s_default;

/* A tuple subclass instance (a NamedTuple) from n new references, without its __new__. */
static PyObject *
new_named(PyTypeObject *type, Py_ssize_t n, PyObject **items)
{
    PyObject *obj = type->tp_alloc(type, n);
    if (obj == NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(obj, i, items[i]);
    return obj;
}

/* 1 and *out set (a new reference) for a well-formed emit, 0 for a malformed one, -1 on error. */
static int
decode_emit(PyObject *d, PyTypeObject *emit_type, PyObject **out)
{
    PyObject *values = PyDict_GetItemWithError(d, s_tuple);
    if (values == NULL || !PyList_CheckExact(values))
        return PyErr_Occurred() ? -1 : 0;

    PyObject *stream = PyDict_GetItemWithError(d, s_stream);
    if (stream == NULL && PyErr_Occurred())
        return -1;
    if (stream == NULL || stream == Py_None)
        stream = s_default;
    else if (!PyUnicode_CheckExact(stream))
        return 0;

    PyObject *anchors = PyDict_GetItemWithError(d, s_anchors);
    PyObject *anchors_ref;  /* new reference */
    if (anchors == NULL && PyErr_Occurred())
        return -1;
    if (anchors == NULL || anchors == Py_None) {
        anchors_ref = PyTuple_New(0);
        if (anchors_ref == NULL)
            return -1;
    }
    else if (PyList_CheckExact(anchors)) {
        Py_ssize_t n = PyList_GET_SIZE(anchors);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!PyUnicode_CheckExact(PyList_GET_ITEM(anchors, i)))
                return 0;
        anchors_ref = Py_NewRef(anchors);
    }
    else if (PyUnicode_CheckExact(anchors)) {
        anchors_ref = PyTuple_Pack(1, anchors);
        if (anchors_ref == NULL)
            return -1;
    }
    else
        return 0;

    PyObject *task = PyDict_GetItemWithError(d, s_task);
    if (task == NULL && PyErr_Occurred())
        goto error;
    if (task == NULL)
        task = Py_None;
    else if (task != Py_None) {
        if (!PyLong_CheckExact(task))
            goto malformed;
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(task, &overflow);
        if (v == -1 && PyErr_Occurred())
            goto error;
        if (v == 0 && !overflow)  /* Storm: task 0 means "not direct" */
            task = Py_None;
    }

    PyObject *need = PyDict_GetItemWithError(d, s_need_task_ids);
    if (need == NULL && PyErr_Occurred())
        goto error;
    if (need == NULL || need == Py_None)
        need = Py_True;
    else if (!PyBool_Check(need))
        goto malformed;

    PyObject *id = PyDict_GetItemWithError(d, s_id);
    if (id == NULL && PyErr_Occurred())
        goto error;
    if (id == NULL)
        id = Py_None;

    PyObject *items[6] = {Py_NewRef(values), Py_NewRef(stream), anchors_ref, Py_NewRef(task),
                          Py_NewRef(need), Py_NewRef(id)};
    *out = new_named(emit_type, 6, items);
    return *out == NULL ? -1 : 1;

malformed:
    Py_DECREF(anchors_ref);
    return 0;
error:
    Py_DECREF(anchors_ref);
    return -1;
}

static PyObject *
component_messages(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "component_messages(values, Emit, Ack, other)");
        return NULL;
    }
    PyObject *values = args[0], *other = args[3];
    if (!PyList_CheckExact(values) || !PyType_Check(args[1]) || !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "component_messages: a list and two types expected");
        return NULL;
    }
    PyTypeObject *emit_type = (PyTypeObject *)args[1], *ack_type = (PyTypeObject *)args[2];
    if (!PyType_IsSubtype(emit_type, &PyTuple_Type) || !PyType_IsSubtype(ack_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "component_messages: Emit and Ack must be tuple types");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *messages = PyList_New(n);
    if (messages == NULL)
        return NULL;
    /* `values` may shrink under a callback that mutates it: index it afresh each turn */
    for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(values); i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        PyObject *msg = NULL;
        if (PyDict_CheckExact(value)) {
            PyObject *command = PyDict_GetItemWithError(value, s_command);
            if (command == NULL && PyErr_Occurred())
                goto error;
            if (command != NULL && PyUnicode_CheckExact(command)) {
                if (PyUnicode_Compare(command, s_emit) == 0) {
                    int ok = decode_emit(value, emit_type, &msg);
                    if (ok < 0)
                        goto error;
                    if (ok == 0) {
                        Py_DECREF(messages);
                        Py_RETURN_NONE;
                    }
                }
                else if (PyUnicode_Compare(command, s_ack) == 0) {
                    PyObject *id = PyDict_GetItemWithError(value, s_id);
                    if (id == NULL && PyErr_Occurred())
                        goto error;
                    if (id != NULL) {
                        PyObject *items[1] = {Py_NewRef(id)};
                        msg = new_named(ack_type, 1, items);
                        if (msg == NULL)
                            goto error;
                    }
                }
            }
        }
        if (msg == NULL) {
            Py_INCREF(value);  /* the callback may drop it from `values` */
            msg = PyObject_CallOneArg(other, value);
            Py_DECREF(value);
            if (msg == NULL)
                goto error;
        }
        PyList_SET_ITEM(messages, i, msg);
    }
    if (PyList_GET_SIZE(values) < n) {
        Py_DECREF(messages);
        PyErr_SetString(PyExc_RuntimeError, "component_messages: the list changed size");
        return NULL;
    }
    return messages;

error:
    Py_DECREF(messages);
    return NULL;
}

/* plain_frames(body) -> (values_json, anchors, ids, late, longest) | None

   The Spark component driver's fast path (host/spark/component_process.py): `body`, a str of
   complete frames, must be nothing but the two frames our client libraries write for the data
   path, exactly so:
     {"command":"emit","tuple":[...],"anchors":["<id>"],"need_task_ids":false}\nend\n
     {"command":"ack","id":"<id>"}\nend\n
   with <id> -?[0-9]+ and the tuple's text free of \r and \n; anything else: None. Returned:
   b"[" + the tuples' texts joined by "," + b"]" (UTF-8), the emits' anchors and the acks' ids in
   order, `late` (the anchors of emits that come after an ack of the same id in `body`, in order)
   and the longest tuple text in code points. multilang/component_decoding.py's plain_frames_py
   is the reference (a regular expression); tests/unit/test_speedups.py checks that they agree. */

static const char EMIT_HEAD[] = "{\"command\":\"emit\",\"tuple\":[";
static const char EMIT_MID[] = "],\"anchors\":[\"";
static const char EMIT_TAIL[] = "\"],\"need_task_ids\":false}";
static const char ACK_HEAD[] = "{\"command\":\"ack\",\"id\":\"";
static const char ACK_TAIL[] = "\"}";
#define LEN(s) ((Py_ssize_t)(sizeof(s) - 1))

typedef struct {
    Py_ssize_t tuple, tuple_len;  /* the tuple's text (emits; tuple_len 0: an ack) */
    Py_ssize_t id, id_len;        /* the anchor's or the ack's digits */
} frame_span;

static int
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* the digits -?[0-9]+ exactly filling [p, q) */
static int
is_id(const char *p, const char *q)
{
    if (p < q && *p == '-')
        p++;
    if (p >= q)
        return 0;
    for (; p < q; p++)
        if (!is_digit(*p))
            return 0;
    return 1;
}

/* One frame at `p` (its line ends at `nl`) into *span; 0 if it is neither plain frame. */
static int
scan_frame(const char *base, const char *p, const char *nl, frame_span *span)
{
    Py_ssize_t len = nl - p;
    if (len >= LEN(ACK_HEAD) + 1 + LEN(ACK_TAIL) && memcmp(p, ACK_HEAD, LEN(ACK_HEAD)) == 0) {
        const char *id = p + LEN(ACK_HEAD), *tail = nl - LEN(ACK_TAIL);
        if (memcmp(tail, ACK_TAIL, LEN(ACK_TAIL)) != 0 || !is_id(id, tail))
            return 0;
        span->tuple = span->tuple_len = 0;
        span->id = id - base;
        span->id_len = tail - id;
        return 1;
    }
    /* the head's `[` and the mid's `]` are the tuple's first and last characters */
    if (len < LEN(EMIT_HEAD) + LEN(EMIT_MID) + 1 + LEN(EMIT_TAIL)
        || memcmp(p, EMIT_HEAD, LEN(EMIT_HEAD)) != 0)
        return 0;
    const char *tail = nl - LEN(EMIT_TAIL);
    if (memcmp(tail, EMIT_TAIL, LEN(EMIT_TAIL)) != 0)
        return 0;
    const char *id = tail;
    while (id > p && is_digit(id[-1]))
        id--;
    if (id == tail)
        return 0;
    if (id[-1] == '-')
        id--;
    const char *tuple = p + LEN(EMIT_HEAD) - 1, *mid = id - LEN(EMIT_MID);
    if (mid <= tuple || memcmp(mid, EMIT_MID, LEN(EMIT_MID)) != 0)
        return 0;
    Py_ssize_t tuple_len = mid + 1 - tuple;
    if (memchr(tuple, '\r', tuple_len) != NULL)
        return 0;
    span->tuple = tuple - base;
    span->tuple_len = tuple_len;
    span->id = id - base;
    span->id_len = tail - id;
    return 1;
}

static Py_ssize_t
code_points(const char *p, Py_ssize_t n)
{
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        count += ((unsigned char)p[i] & 0xC0) != 0x80;
    return count;
}

static PyObject *
plain_frames(PyObject *module, PyObject *body)
{
    if (!PyUnicode_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "plain_frames: body must be a str");
        return NULL;
    }
    Py_ssize_t size;
    const char *base;
    int ascii = PyUnicode_IS_ASCII(body);
    if (ascii) {
        base = (const char *)PyUnicode_DATA(body);
        size = PyUnicode_GET_LENGTH(body);
    }
    else {
        base = PyUnicode_AsUTF8AndSize(body, &size);
        if (base == NULL) {  /* lone surrogates: not ours to judge */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }

    /* first pass: every frame's spans, or None */
    Py_ssize_t cap = 64, n = 0, n_emits = 0, json_size = 2;
    frame_span *spans = PyMem_Malloc(cap * sizeof(frame_span));
    if (spans == NULL)
        return PyErr_NoMemory();
    const char *p = base, *end = base + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', end - p);
        if (nl == NULL || end - nl < 5 || memcmp(nl, "\nend\n", 5) != 0)
            goto none;
        if (n == cap) {
            cap *= 2;
            frame_span *more = PyMem_Realloc(spans, cap * sizeof(frame_span));
            if (more == NULL) {
                PyMem_Free(spans);
                return PyErr_NoMemory();
            }
            spans = more;
        }
        if (!scan_frame(base, p, nl, &spans[n]))
            goto none;
        if (spans[n].tuple_len) {
            n_emits++;
            json_size += spans[n].tuple_len + 1;
        }
        n++;
        p = nl + 5;
    }

    /* second pass: the values' JSON, the anchors, the ids and the late anchors */
    PyObject *json = NULL, *anchors = NULL, *ids = NULL, *late = NULL, *acked = NULL;
    PyObject *last = NULL;  /* the last anchor made: an emit's next anchor is often the same */
    Py_ssize_t longest = 0;
    json = PyBytes_FromStringAndSize(NULL, n_emits ? json_size - 1 : 2);
    anchors = PyList_New(n_emits);
    ids = PyList_New(n - n_emits);
    late = PyList_New(0);
    acked = PySet_New(NULL);
    if (json == NULL || anchors == NULL || ids == NULL || late == NULL || acked == NULL)
        goto error;
    char *out = PyBytes_AS_STRING(json);
    *out++ = '[';
    Py_ssize_t e = 0, a = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        frame_span *s = &spans[i];
        const char *id = base + s->id;
        if (s->tuple_len) {
            if (e)
                *out++ = ',';
            memcpy(out, base + s->tuple, s->tuple_len);
            out += s->tuple_len;
            Py_ssize_t points = ascii ? s->tuple_len : code_points(base + s->tuple, s->tuple_len);
            if (points > longest)
                longest = points;
            PyObject *anchor;
            if (last != NULL && PyUnicode_GET_LENGTH(last) == s->id_len
                && memcmp(PyUnicode_DATA(last), id, s->id_len) == 0)
                anchor = Py_NewRef(last);
            else {
                anchor = PyUnicode_FromStringAndSize(id, s->id_len);
                if (anchor == NULL)
                    goto error;
                last = anchor;
            }
            PyList_SET_ITEM(anchors, e++, anchor);
            if (PySet_GET_SIZE(acked)) {
                int seen = PySet_Contains(acked, anchor);
                if (seen < 0 || (seen && PyList_Append(late, anchor) < 0))
                    goto error;
            }
        }
        else {
            PyObject *ack = PyUnicode_FromStringAndSize(id, s->id_len);
            if (ack == NULL)
                goto error;
            PyList_SET_ITEM(ids, a++, ack);
            if (n_emits && PySet_Add(acked, ack) < 0)
                goto error;
        }
    }
    *out++ = ']';
    PyMem_Free(spans);
    Py_DECREF(acked);
    return Py_BuildValue("(NNNNn)", json, anchors, ids, late, longest);

error:
    PyMem_Free(spans);
    Py_XDECREF(json);
    Py_XDECREF(anchors);
    Py_XDECREF(ids);
    Py_XDECREF(late);
    Py_XDECREF(acked);
    return NULL;

none:
    PyMem_Free(spans);
    Py_RETURN_NONE;
}

/* _json_values.c */
PyObject *json_values(PyObject *module, PyObject *values);

static PyMethodDef methods[] = {
    {"component_messages", (PyCFunction)(void (*)(void))component_messages, METH_FASTCALL,
     "component_messages(values, Emit, Ack, other) -> list | None\n\n"
     "Parsed component messages -> typed messages; see multilang/component_decoding.py."},
    {"plain_frames", (PyCFunction)plain_frames, METH_O,
     "plain_frames(body) -> (values_json, anchors, ids, late, longest) | None\n\n"
     "A body of plain emit and ack frames, scanned; see multilang/component_decoding.py."},
    {"json_values", (PyCFunction)json_values, METH_O,
     "json_values(values) -> bytes | None\n\n"
     "A tuple's values as JSON bytes, or None for the general path; see _json_values.c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "multilang._speedups",
    .m_doc = "C versions of multilang.component_decoding's component message decoding and "
              "plain_frames, and of the values' JSON of multilang.codec (optional).",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_command, "command"}, {&s_emit, "emit"}, {&s_ack, "ack"}, {&s_tuple, "tuple"},
        {&s_stream, "stream"}, {&s_anchors, "anchors"}, {&s_task, "task"},
        {&s_need_task_ids, "need_task_ids"}, {&s_id, "id"}, {&s_default, "default"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].text);
        if (*names[i].slot == NULL)
            return NULL;
    }
    return PyModule_Create(&module_def);
}
