/* The module cdc.engine.paths.native._kernel: count_lines, the table of its functions and types,
 * and its start: the hash key drawn from os.urandom. The parts are declared in kernel.h.
 */
#include "kernel.h"

/* count_lines(chunk) -> the number of "\n" bytes, eight at a time (bytes.count looks at one
 * byte per step: most of the time the reading thread of materialize spent on a chunk). */
static PyObject *count_lines(PyObject *self, PyObject *arg) {
    UNUSED(self);
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = b.buf;
    Py_ssize_t n = b.len, i = 0, count = 0;
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, newlines = 0x0a0a0a0a0a0a0a0aULL, ones = 0x0101010101010101ULL;
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        w ^= newlines;                                /* a newline byte is now 0 */
        w = ~(((w & low7) + low7) | w | low7);        /* 0x80 in each byte that was 0, else 0 */
        count += (Py_ssize_t)(((w >> 7) * ones) >> 56); /* the sum of those bits */
    }
    for (; i < n; i++) count += p[i] == '\n';
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(count);
}

/* _set_probe_budget(n) -> the previous budget: the probes a name index may take before it is
 * sorted instead (-1: the default, 2 per name + 32). For tests of the fallback; not thread-safe. */
static PyObject *set_probe_budget(PyObject *self, PyObject *arg) {
    UNUSED(self);
    Py_ssize_t budget = PyLong_AsSsize_t(arg);
    if (budget == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t previous = probe_budget_override;
    probe_budget_override = budget < 0 ? -1 : budget;
    return PyLong_FromSsize_t(previous);
}

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_O, "The number of newline bytes in a buffer."},
    {"columns", columns, METH_VARARGS, "Move one column of each JSON line to the front, mapped."},
    {"debezium", debezium, METH_VARARGS, "Debezium change events → changelog rows."},
    {"keyed", keyed, METH_VARARGS, "Apply changelog lines to an upsert table of row bytes."},
    {"parse_changes", parse_changes, METH_VARARGS, "The parsing half of keyed, without the GIL."},
    {"apply_changes", apply_changes, METH_VARARGS, "The applying half of keyed."},
    {"parse_records", parse_records, METH_VARARGS, "Changes parsed into records for a State, without the GIL."},
    {"encode", encode, METH_VARARGS, "Changelog lines to Debezium events (debezium-encode)."},
    {"maxwell", maxwell, METH_VARARGS, "Maxwell change events → changelog rows."},
    {"ogg", ogg, METH_VARARGS, "Oracle GoldenGate change records → changelog rows."},
    {"canal", canal, METH_VARARGS, "Canal flat messages → changelog rows."},
    {"_set_probe_budget", set_probe_budget, METH_O, "Tests only: the probes allowed before names are sorted."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, methods, NULL, NULL, NULL, NULL};

/* The hash key: 16 bytes of os.urandom, drawn once per process. */
static int seed_hash(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (!os) return -1;
    PyObject *bytes = PyObject_CallMethod(os, "urandom", "i", (int)sizeof(hash_key));
    Py_DECREF(os);
    if (!bytes) return -1;
    int ok = PyBytes_Check(bytes) && PyBytes_GET_SIZE(bytes) == (Py_ssize_t)sizeof(hash_key);
    if (ok) memcpy(hash_key, PyBytes_AS_STRING(bytes), sizeof(hash_key));
    else PyErr_SetString(PyExc_SystemError, "os.urandom gave no 16 bytes");
    Py_DECREF(bytes);
    return ok ? 0 : -1;
}

PyMODINIT_FUNC PyInit__kernel(void); /* the one name the extension exports */

PyMODINIT_FUNC PyInit__kernel(void) {
    if (seed_hash() < 0) { /* an ImportError: the Python side then runs without the kernel */
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError, "cdc kernel: os.urandom gave no hash key");
        return NULL;
    }
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&StateType) < 0) return NULL;
#if HAVE_AGGREGATE
    if (PyType_Ready(&AggregateType) < 0) return NULL;
#endif
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 ||
              PyModule_AddObjectRef(m, "State", (PyObject *)&StateType) < 0 ||
#if HAVE_AGGREGATE
              PyModule_AddObjectRef(m, "Aggregate", (PyObject *)&AggregateType) < 0 ||
#endif
              PyModule_AddIntConstant(m, "MAX_KEY_BYTES", (long)MAX_KEY_BYTES) < 0))
        Py_CLEAR(m);
    return m;
}
