/* Optional C version of the host's hottest loop: parsed component messages -> typed messages.

   multilang/codec.py has the reference version (ComponentDecoder._messages_py and _emit); this
   one must behave exactly like it, and tests/unit/test_codec.py checks that it does, on fixed
   cases and on random values. It handles the data path's two messages, `emit` and `ack`, and
   hands every other value to a Python callback. When the extension cannot be built or loaded,
   the host uses the Python version; nothing else changes.

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

static PyMethodDef methods[] = {
    {"component_messages", (PyCFunction)(void (*)(void))component_messages, METH_FASTCALL,
     "component_messages(values, Emit, Ack, other) -> list | None\n\n"
     "Parsed component messages -> typed messages; see multilang/codec.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "multilang._speedups",
    .m_doc = "C version of multilang.codec's component message decoding (optional).",
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
