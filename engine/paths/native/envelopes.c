/* The stateless conversions of lines into changelog rows: columns (from-changelog and
 * to-changelog: one column moved to the front, its code mapped), debezium, maxwell and ogg. Each
 * reads a line as the Python decoder (core/envelopes) reads its event and writes the rows it
 * makes, values as written and whitespace between tokens dropped; a line it is not sure of is
 * declined (a tombstone, a message that is not a row change, an image that is not a plain
 * object, a Debezium placeholder): Python converts that one line the general way. Canal, whose
 * values are converted, is canal.c.
 */
#include "kernel.h"

/* An image the rows can be written from as they are: distinct unescaped names, no kind column. */
int plain_row(const Members *ms, const char *kind_key, Py_ssize_t kind_len) {
    if (any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    return find_key(ms, kind_key, kind_len) == -1;
}

/* ---------------------------------------------------------------- one column ---------- */

#define MAX_CODES 64

typedef struct {
    Py_buffer name;
    Py_ssize_t n_codes;
    const char *code_text[MAX_CODES], *member[MAX_CODES];
    Py_ssize_t code_len[MAX_CODES], member_len[MAX_CODES];
    long kind[MAX_CODES];
} Codes;

static int columns_line(Lines *run, ptr p, ptr line_end) {
    const Codes *cx = run->ctx;
    Members *ms = run->ms[0];
    Out *o = &run->out;
    if (!plain_line(p, line_end, ms)) return 0;
    int at = find_key(ms, run->kind_key.buf, run->kind_key.len);
    if (at < 0) return 0;
    if (cx->name.len && find_key(ms, cx->name.buf, cx->name.len) != -1) return 0;
    const Member *op = &ms->m[at];
    if (op->val_escaped || *op->val != '"') return 0;
    Py_ssize_t c = 0;
    while (c < cx->n_codes && !span_is(op->val, op->val_end, cx->code_text[c], cx->code_len[c])) c++;
    if (c == cx->n_codes) return 0;
    if (cx->member[c] == NULL) {
        run->dropped++;
        return 1;
    }
    if (ms->n == 1) { /* nothing but the op column: the first member closes the row */
        if (out_put(o, "{", 1) < 0 || out_put(o, cx->member[c], cx->member_len[c]) < 0 || out_put(o, "}\n", 2) < 0)
            return -1;
    } else if (put_row(o, cx->member[c], cx->member_len[c], ms, at) < 0) {
        return -1;
    }
    run->counts[cx->kind[c]]++;
    return 1;
}

/* columns(chunk, start, column_key, name_key, codes)
 *   column_key, name_key: JSON strings with quotes (name_key b"" when the same column)
 *   codes: tuple of (code as JSON string, kind index, first member or None when dropped)
 * counts are per kind index. */
PyObject *columns(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Codes cx;
    PyObject *codes, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*y*O!", LINES_ARGS(&run), &cx.name, &PyTuple_Type, &codes)) return NULL;
    cx.n_codes = PyTuple_GET_SIZE(codes);
    if (lines_open(&run, 1) < 0) goto done;
    if (cx.n_codes > MAX_CODES) {
        PyErr_SetString(PyExc_ValueError, "too many codes");
        goto done;
    }
    /* Every entry is checked before anything of it is read: (bytes, int 0..3, bytes or None).
     * The pointers stay valid: codes (a tuple of tuples) holds its bytes for the whole call. */
    for (Py_ssize_t i = 0; i < cx.n_codes; i++) {
        PyObject *entry = PyTuple_GET_ITEM(codes, i), *code, *m;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyBytes_Check(code = PyTuple_GET_ITEM(entry, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(entry, 1)) || ((m = PyTuple_GET_ITEM(entry, 2)) != Py_None && !PyBytes_Check(m))) {
            PyErr_SetString(PyExc_TypeError, "codes: (bytes, int, bytes | None) expected");
            goto done;
        }
        if (!small_int(PyTuple_GET_ITEM(entry, 1), 0, 3, &cx.kind[i])) {
            PyErr_SetString(PyExc_ValueError, "codes: kind index out of range (0 to 3)");
            goto done;
        }
        cx.code_text[i] = PyBytes_AS_STRING(code);
        cx.code_len[i] = PyBytes_GET_SIZE(code);
        cx.member[i] = m == Py_None ? NULL : PyBytes_AS_STRING(m);
        cx.member_len[i] = m == Py_None ? 0 : PyBytes_GET_SIZE(m);
    }
    lines_walk(&run, columns_line, &cx);
    result = lines_result(&run, NULL);
done:
    PyBuffer_Release(&cx.name);
    return lines_close(&run, result);
}

/* ---------------------------------------------------------------- debezium ------------ */

static const char PLACEHOLDER[] = "\"__debezium_unavailable_value\"";
#define PLACEHOLDER_LEN ((Py_ssize_t)sizeof(PLACEHOLDER) - 1)

/* An image the splice can write as it is: an object with members, no kind column among them, no
 * Debezium placeholder among its values, no escaped key. */
static int plain_image(const Members *ms, const char *kind_key, Py_ssize_t kind_len) {
    if (ms->n == 0 || has_repeated_keys(ms)) return 0;
    for (int i = 0; i < ms->n; i++) {
        const Member *m = &ms->m[i];
        if (m->key_escaped || span_is(m->key, m->key_end, kind_key, kind_len)) return 0;
        if (span_is(m->val, m->val_end, PLACEHOLDER, PLACEHOLDER_LEN)) return 0;
        /* an escaped string short enough to spell the placeholder */
        if (m->val_escaped && m->val_end - m->val <= 6 * (PLACEHOLDER_LEN - 2) + 2) return 0;
    }
    return 1;
}

typedef struct {
    const char *first[4];
    Py_ssize_t first_len[4];
    int envelopes;
    PyObject *plain_schemas, *unknown;
} Debezium;

static int debezium_line(Lines *run, ptr p, ptr line_end) {
    Debezium *dx = run->ctx;
    Members *event = run->ms[0], *payload = run->ms[1], *before = run->ms[2], *after = run->ms[3];
    const char *kk = run->kind_key.buf, *const *first = dx->first;
    Py_ssize_t kl = run->kind_key.len, *first_len = dx->first_len;
    Out *o = &run->out;
    if (!plain_line(p, line_end, event)) return 0;
    const Members *ev = event;
    int at_payload = find_key(event, "\"payload\"", 9);
    if (at_payload != -1) { /* an envelope: plain only with a schema that converts nothing */
        int at_schema = find_key(event, "\"schema\"", 8);
        if (!dx->envelopes || at_payload < 0 || at_schema == -2 || find_key(event, "\"op\"", 4) != -1) return 0;
        const Member *pl = &event->m[at_payload];
        if (*pl->val != '{') return 0; /* a null payload is a tombstone */
        const Member *sc = at_schema >= 0 ? &event->m[at_schema] : NULL;
        if (sc && !span_is(sc->val, sc->val_end, "null", 4)) {
            /* PySet_Contains may run Python code (__eq__ of a member of a set subclass or of
             * another type): nothing below relies on state it could change (the chunk is held
             * as a buffer; a bytearray cannot be resized meanwhile). */
            PyObject *text = PyBytes_FromStringAndSize((const char *)sc->val, sc->val_end - sc->val);
            int known = text ? PySet_Contains(dx->plain_schemas, text) : -1;
            if (known <= 0) {
                if (known == 0) dx->unknown = text;
                else Py_XDECREF(text);
                return known;
            }
            Py_DECREF(text);
        }
        if (!members_of(pl->val, pl->val_end, payload) || any_key_escaped(payload) || has_repeated_keys(payload))
            return 0;
        ev = payload;
    }
    int at_op = find_key(ev, "\"op\"", 4), at_before = find_key(ev, "\"before\"", 8),
        at_after = find_key(ev, "\"after\"", 7);
    if (at_op < 0 || at_before == -2 || at_after == -2) return 0;
    const Member *op = &ev->m[at_op];
    if (op->val_end - op->val != 3 || op->val[0] != '"') return 0;
    char code = (char)op->val[1];
    ptr bv = at_before >= 0 ? ev->m[at_before].val : NULL;
    ptr bv_end = at_before >= 0 ? ev->m[at_before].val_end : NULL;
    ptr av = at_after >= 0 ? ev->m[at_after].val : NULL;
    ptr av_end = at_after >= 0 ? ev->m[at_after].val_end : NULL;
    /* an image given as JSON text is MongoDB's: the general way says why not */
    if ((bv && *bv == '"') || (av && *av == '"')) return 0;
    int ok = 1;
    if (code == 'c' || code == 'r') {
        ok = av && *av == '{' && members_of(av, av_end, after) && plain_image(after, kk, kl) &&
             put_row(o, first[0], first_len[0], after, -1) == 0;
        if (ok) run->counts[0]++;
    } else if (code == 'u') {
        ok = bv && *bv == '{' && av && *av == '{' && members_of(bv, bv_end, before) && members_of(av, av_end, after) &&
             plain_image(before, kk, kl) && plain_image(after, kk, kl) && covers(before, after) &&
             put_row(o, first[1], first_len[1], before, -1) == 0 && put_row(o, first[2], first_len[2], after, -1) == 0;
        if (ok) run->counts[1]++, run->counts[2]++;
    } else if (code == 'd') {
        ok = bv && *bv == '{' && members_of(bv, bv_end, before) && plain_image(before, kk, kl) &&
             put_row(o, first[3], first_len[3], before, -1) == 0;
        if (ok) run->counts[3]++;
    } else {
        ok = 0; /* t, m or unknown */
    }
    if (PyErr_Occurred()) return -1;
    return ok;
}

/* debezium(chunk, start, kind_key, firsts, envelopes, plain_schemas)
 *   kind_key: the kind column as a JSON string; firsts: the 4 first members, e.g. b'"op":"+I"';
 *   envelopes: whether {"schema", "payload"} events are read as envelopes (schema-include auto);
 *   plain_schemas: the schemas (their JSON text) known to need no value conversion.
 * Returns (output, position, lines, counts (+I, -U, +U, -D), 0, schema): schema is the JSON text
 * of an envelope's schema not known yet when the call stopped there (else None), for Python to
 * decide whether it is plain. */
PyObject *debezium(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Debezium dx = {.unknown = NULL};
    PyObject *firsts, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!pO!", LINES_ARGS(&run), &PyTuple_Type, &firsts, &dx.envelopes, &PySet_Type,
                          &dx.plain_schemas))
        return NULL;
    if (lines_open(&run, 4) == 0 && firsts_of(firsts, dx.first, dx.first_len) == 0) {
        lines_walk(&run, debezium_line, &dx);
        result = lines_result(&run, dx.unknown ? dx.unknown : Py_NewRef(Py_None));
        dx.unknown = NULL;
    }
    Py_XDECREF(dx.unknown);
    return lines_close(&run, result);
}

/* ---------------------------------------------------------------- Maxwell --------------- */

/* "{" + first + the members of after, each value taken from before where before names it (an
 * update's before image: after's columns in after's order) + "}\n". before's names are among
 * after's (checked by the caller). */
static int put_merged(Out *o, const char *first, Py_ssize_t first_len, const Members *after, const Members *before) {
    if (out_put(o, "{", 1) < 0 || out_put(o, first, first_len) < 0) return -1;
    for (int i = 0; i < after->n; i++) {
        const Member *m = &after->m[i];
        int at = find_key(before, (const char *)m->key, m->key_end - m->key);
        const Member *v = at >= 0 ? &before->m[at] : m;
        if (out_put(o, ",", 1) < 0 || out_put(o, m->key, m->key_end - m->key) < 0 || out_put(o, ":", 1) < 0) return -1;
        if (*v->val == '{' || *v->val == '[' ? put_compact(o, v->val, v->val_end) < 0
                                              : out_put(o, v->val, v->val_end - v->val) < 0)
            return -1;
    }
    return out_put(o, "}\n", 2);
}

typedef struct {
    const char *first[4];
    Py_ssize_t first_len[4];
    int bootstrap;
} Maxwell;

static int maxwell_line(Lines *run, ptr p, ptr line_end) {
    const Maxwell *mx = run->ctx;
    Members *event = run->ms[0], *data = run->ms[1], *old = run->ms[2];
    const char *const *first = mx->first;
    const Py_ssize_t *first_len = mx->first_len;
    Out *o = &run->out;
    if (!plain_line(p, line_end, event)) return 0;
    int at_type = find_key(event, "\"type\"", 6), at_data = find_key(event, "\"data\"", 6);
    if (at_data < 0 || *event->m[at_data].val != '{') return 0;
    const Member *d = &event->m[at_data];
    if (!members_of(d->val, d->val_end, data) || !plain_row(data, run->kind_key.buf, run->kind_key.len)) return 0;
    int insert = member_is(event, at_type, "\"insert\"", 8) ||
                 (mx->bootstrap && member_is(event, at_type, "\"bootstrap-insert\"", 18));
    if (insert) {
        if (put_row(o, first[0], first_len[0], data, -1) < 0) return -1;
        run->counts[0]++;
    } else if (member_is(event, at_type, "\"delete\"", 8)) {
        if (put_row(o, first[3], first_len[3], data, -1) < 0) return -1;
        run->counts[3]++;
    } else if (member_is(event, at_type, "\"update\"", 8)) {
        int at_old = find_key(event, "\"old\"", 5);
        const Members *before = data;
        if (at_old >= 0 && !span_is(event->m[at_old].val, event->m[at_old].val_end, "null", 4)) {
            const Member *ov = &event->m[at_old];
            /* old's names must be data's: an old-only column would come last (general way) */
            if (*ov->val != '{' || !members_of(ov->val, ov->val_end, old) || any_key_escaped(old) ||
                has_repeated_keys(old) || !covers(data, old))
                return 0;
            before = old;
        }
        if ((before == data ? put_row(o, first[1], first_len[1], data, -1)
                            : put_merged(o, first[1], first_len[1], data, before)) < 0 ||
            put_row(o, first[2], first_len[2], data, -1) < 0)
            return -1;
        run->counts[1]++, run->counts[2]++;
    } else {
        return 0; /* bootstrap markers, DDL, unknown types: the general way counts or fails them */
    }
    return 1;
}

/* maxwell(chunk, start, kind_key, firsts, bootstrap_insert) -- MaxwellDecoder without state,
 * metadata or filters: insert +I(data), update -U(data over old) +U(data), delete -D(data),
 * bootstrap-insert +I(data) when bootstrap_insert. */
PyObject *maxwell(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Maxwell mx;
    PyObject *firsts, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!p", LINES_ARGS(&run), &PyTuple_Type, &firsts, &mx.bootstrap)) return NULL;
    if (lines_open(&run, 3) == 0 && firsts_of(firsts, mx.first, mx.first_len) == 0) {
        lines_walk(&run, maxwell_line, &mx);
        result = lines_result(&run, NULL);
    }
    return lines_close(&run, result);
}

/* ---------------------------------------------------------------- OGG ------------------- */

#define MAX_TABLES 16

/* A table's shape: the names of its last insert's after image (OggDecoder._shapes), as spans
 * into the bytes that hold them (Python's tuple, or the chunk). */
typedef struct {
    const char *table; /* the table's value as written: an unescaped string, or null */
    Py_ssize_t table_len;
    int n_names, room, has_shape;
    const char **name;
    Py_ssize_t *name_len;
    int learnt; /* an insert of this call set it: reported back */
    ptr after, after_end;
} Shape;

typedef struct {
    Shape t[MAX_TABLES];
    int n, complete; /* complete: every table Python knows a shape of is here */
} Shapes;

static void shapes_free(Shapes *sh) {
    for (int i = 0; i < sh->n; i++) {
        PyMem_Free((void *)sh->t[i].name);
        PyMem_Free(sh->t[i].name_len);
    }
}

/* Room for n names in a shape (kept across inserts). */
static int shape_room(Shape *s, int n) {
    s->n_names = 0;
    if (s->name && n <= s->room) return 0;
    PyMem_Free((void *)s->name);
    PyMem_Free(s->name_len);
    s->room = n < 16 ? 16 : n;
    s->name = PyMem_Malloc((size_t)s->room * sizeof(s->name[0]));
    s->name_len = PyMem_Malloc((size_t)s->room * sizeof(s->name_len[0]));
    if (!s->name || !s->name_len) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The shapes Python passes: ((table as JSON text, (name as JSON string, ...)), ...). */
static int shapes_of(PyObject *given, int complete, Shapes *sh) {
    Py_ssize_t n = PyTuple_GET_SIZE(given);
    sh->n = 0;
    sh->complete = complete;
    if (n > MAX_TABLES) {
        PyErr_SetString(PyExc_ValueError, "shapes: at most 16 tables");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyTuple_GET_ITEM(given, i), *names;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(e, 0)) ||
            !PyTuple_Check(names = PyTuple_GET_ITEM(e, 1))) {
            PyErr_SetString(PyExc_TypeError, "shapes: (bytes, tuple of bytes) expected");
            return -1;
        }
        Shape *s = &sh->t[sh->n];
        memset(s, 0, sizeof *s);
        sh->n++;
        s->table = PyBytes_AS_STRING(PyTuple_GET_ITEM(e, 0));
        s->table_len = PyBytes_GET_SIZE(PyTuple_GET_ITEM(e, 0));
        Py_ssize_t k = PyTuple_GET_SIZE(names);
        if (k > MAX_MEMBERS) {
            PyErr_SetString(PyExc_ValueError, "shapes: too many names");
            return -1;
        }
        if (shape_room(s, (int)k) < 0) return -1;
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *name = PyTuple_GET_ITEM(names, j);
            if (!PyBytes_Check(name)) {
                PyErr_SetString(PyExc_TypeError, "shapes: names: bytes expected");
                return -1;
            }
            s->name[j] = PyBytes_AS_STRING(name);
            s->name_len[j] = PyBytes_GET_SIZE(name);
        }
        s->n_names = (int)k;
        s->has_shape = 1;
    }
    return 0;
}

/* The shape entry of an event's table (its value as written: an unescaped string or null; a
 * missing table is null, as event.get sees it); NULL: another table this code cannot place. */
static Shape *shape_for(Shapes *sh, const Members *event, int *unknown) {
    int at = find_key(event, "\"table\"", 7);
    const char *text = "null";
    Py_ssize_t len = 4;
    *unknown = 0;
    if (at >= 0) {
        const Member *m = &event->m[at];
        if (m->val_escaped || (*m->val != '"' && !span_is(m->val, m->val_end, "null", 4))) return NULL;
        text = (const char *)m->val, len = m->val_end - m->val;
    }
    for (int i = 0; i < sh->n; i++)
        if (sh->t[i].table_len == len && !memcmp(sh->t[i].table, text, (size_t)len)) return &sh->t[i];
    if (!sh->complete || sh->n == MAX_TABLES) return NULL; /* perhaps a shape Python knows */
    Shape *s = &sh->t[sh->n++];                            /* a table without a shape yet */
    memset(s, 0, sizeof *s);
    s->table = text, s->table_len = len;
    *unknown = 1;
    return s;
}

/* Every name of the shape is a name of image: at once where image starts with them, in order. */
static int has_shape_names(const Members *image, const Shape *s) {
    int j = 0;
    for (; j < s->n_names && j < image->n; j++)
        if (!span_is(image->m[j].key, image->m[j].key_end, s->name[j], s->name_len[j])) break;
    for (; j < s->n_names; j++)
        if (find_key(image, s->name[j], s->name_len[j]) < 0) return 0;
    return 1;
}


typedef struct {
    const char *first[4];
    Py_ssize_t first_len[4];
    Shapes sh;
} Ogg;

static int ogg_line(Lines *run, ptr p, ptr line_end) {
    Ogg *gx = run->ctx;
    Members *event = run->ms[0], *before = run->ms[1], *after = run->ms[2];
    const char *kk = run->kind_key.buf, *const *first = gx->first;
    const Py_ssize_t kl = run->kind_key.len, *first_len = gx->first_len;
    Out *o = &run->out;
    if (!plain_line(p, line_end, event)) return 0;
    int at_op = find_key(event, "\"op_type\"", 9), at_before = find_key(event, "\"before\"", 8),
        at_after = find_key(event, "\"after\"", 7), unknown = 0;
    int insert = member_is(event, at_op, "\"I\"", 3), update = member_is(event, at_op, "\"U\"", 3),
        delete = member_is(event, at_op, "\"D\"", 3);
    if (!insert && !update && !delete) return 0;
    Shape *shape = shape_for(&gx->sh, event, &unknown);
    if (!shape) return 0;
    int ok = 1;
    const Member *bv = at_before >= 0 ? &event->m[at_before] : NULL;
    const Member *av = at_after >= 0 ? &event->m[at_after] : NULL;
    if (insert || update) ok = av && *av->val == '{' && members_of(av->val, av->val_end, after) && plain_row(after, kk, kl);
    if (ok && (update || delete))
        ok = bv && *bv->val == '{' && members_of(bv->val, bv->val_end, before) && before->n > 0 &&
             plain_row(before, kk, kl) && (!shape->has_shape || has_shape_names(before, shape));
    /* an update whose after image names fewer columns is compressed: merged the general way */
    if (ok && update) ok = after->n == before->n && covers(before, after);
    if (!ok) {
        if (unknown) gx->sh.n--;
        return 0;
    }
    if (insert) {
        if (put_row(o, first[0], first_len[0], after, -1) < 0) return -1;
        run->counts[0]++;
        if (shape_room(shape, after->n) < 0) return -1;
        for (int j = 0; j < after->n; j++) {
            shape->name[j] = (const char *)after->m[j].key;
            shape->name_len[j] = after->m[j].key_end - after->m[j].key;
        }
        shape->n_names = after->n;
        shape->has_shape = shape->learnt = 1;
        shape->after = av->val, shape->after_end = av->val_end;
    } else if (update) {
        if (put_row(o, first[1], first_len[1], before, -1) < 0 || put_row(o, first[2], first_len[2], after, -1) < 0)
            return -1;
        run->counts[1]++, run->counts[2]++;
    } else {
        if (put_row(o, first[3], first_len[3], before, -1) < 0) return -1;
        run->counts[3]++;
    }
    return 1;
}

/* ogg(chunk, start, kind_key, firsts, shapes, complete)
 *   -> (output, position, lines, counts, 0, learnt: ((table text, after text), ...))
 * OggDecoder without state, metadata or filters: I +I(after); U -U(before) +U(after) with a
 * whole before image (every name of after, and of the table's last insert); D -D(before), whole
 * as well. shapes: the tables' last inserts' names Python knows (complete: all of them); an
 * insert this call reads is reported in learnt, for Python's _shapes. A compressed update (after
 * lacks names of before), a partial before image, T and other op types go the general way. */
PyObject *ogg(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Ogg gx;
    int complete;
    PyObject *firsts, *given, *result = NULL;
    gx.sh.n = 0;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!p", LINES_ARGS(&run), &PyTuple_Type, &firsts, &PyTuple_Type, &given,
                          &complete))
        return NULL;
    if (lines_open(&run, 3) == 0 && firsts_of(firsts, gx.first, gx.first_len) == 0 &&
        shapes_of(given, complete, &gx.sh) == 0 && lines_walk(&run, ogg_line, &gx) == 0) {
        PyObject *learnt = PyList_New(0);
        for (int i = 0; learnt && i < gx.sh.n; i++) {
            const Shape *s = &gx.sh.t[i];
            if (!s->learnt) continue;
            PyObject *item =
                Py_BuildValue("(y#y#)", s->table, s->table_len, s->after, (Py_ssize_t)(s->after_end - s->after));
            if (!item || PyList_Append(learnt, item) < 0) Py_CLEAR(learnt);
            Py_XDECREF(item);
        }
        if (learnt) result = lines_result(&run, learnt);
    }
    lines_failed(&run);
    shapes_free(&gx.sh);
    return lines_close(&run, result);
}
