/* The scaffold of the entry points over a chunk of JSON lines, written once: the arguments every
 * one checks (the start position, small ints, the four first members), the scratch objects, the
 * walk over the lines with a callback per line, and the usual result
 *     (output, position, lines done, counts per kind, rows dropped[, extra])
 * where position is where the walk stopped: before the first declined line, or at the end.
 */
#include "kernel.h"

/* The chunk of an entry point and where to start in it: 0 <= start <= len(chunk). */
int check_start(Py_ssize_t start, const Py_buffer *chunk) {
    if (start < 0 || start > chunk->len) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside the chunk (0 to %zd)", start, chunk->len);
        return -1;
    }
    return 0;
}

/* A small int of a tuple: an int (no __index__: no Python code runs), lo <= value <= hi. */
int small_int(PyObject *o, long lo, long hi, long *out) {
    int overflow = 0;
    if (!PyLong_Check(o)) return 0;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* The 4 first members (bytes, e.g. b'"op":"+I"') of the rows an entry point writes, checked. */
int firsts_of(PyObject *firsts, const char *first[4], Py_ssize_t first_len[4]) {
    if (PyTuple_GET_SIZE(firsts) != 4) {
        PyErr_SetString(PyExc_ValueError, "four first members expected");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *m = PyTuple_GET_ITEM(firsts, i);
        if (!PyBytes_Check(m)) {
            PyErr_SetString(PyExc_TypeError, "first members: bytes expected");
            return -1;
        }
        first[i] = PyBytes_AS_STRING(m);
        first_len[i] = PyBytes_GET_SIZE(m);
    }
    return 0;
}

int lines_open(Lines *run, int n_members) {
    if (check_start(run->start, &run->chunk) < 0) return -1;
    if (n_members < 0 || n_members > (int)(sizeof run->ms / sizeof run->ms[0])) {
        PyErr_SetString(PyExc_SystemError, "kernel: too many scratch objects");
        return -1;
    }
    for (int i = 0; i < n_members; i++)
        if (!(run->ms[i] = PyMem_RawMalloc(sizeof(Members)))) {
            PyErr_NoMemory();
            return -1;
        }
    run->position = run->start;
    return 0;
}

int lines_walk(Lines *run, LineFn take, void *ctx) {
    ptr base = run->chunk.buf, end = base + run->chunk.len, p = base + run->start;
    run->ctx = ctx;
    while (p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        int got = take(run, p, nl ? nl : end);
        if (got < 0) run->failed = 1;
        if (got <= 0) break;
        run->lines++;
        p = nl ? nl + 1 : end;
    }
    run->position = p - base;
    return run->failed ? -1 : 0;
}

int lines_failed(Lines *run) {
    if (run->failed && !PyErr_Occurred()) PyErr_NoMemory();
    return run->failed;
}

PyObject *lines_result(Lines *run, PyObject *extra) {
    PyObject *data = lines_failed(run) ? NULL : PyBytes_FromStringAndSize(run->out.buf ? run->out.buf : "", run->out.len);
    const Py_ssize_t *c = run->counts;
    if (!data) {
        Py_XDECREF(extra);
        return NULL;
    }
    if (!extra)
        return Py_BuildValue("(Nnn(nnnn)n)", data, run->position, run->lines, c[0], c[1], c[2], c[3], run->dropped);
    return Py_BuildValue("(Nnn(nnnn)nN)", data, run->position, run->lines, c[0], c[1], c[2], c[3], run->dropped, extra);
}

PyObject *lines_close(Lines *run, PyObject *result) {
    for (int i = 0; i < (int)(sizeof run->ms / sizeof run->ms[0]); i++) PyMem_RawFree(run->ms[i]);
    PyMem_RawFree(run->out.buf);
    PyBuffer_Release(&run->chunk);
    PyBuffer_Release(&run->kind_key);
    return result;
}
