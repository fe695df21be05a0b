/* parse_records: lines → packed records (without the GIL, on a thread), for a State (state.c)
 * or an Aggregate (aggregate.c) to apply with the GIL; and the reading back of those records,
 * which cross from Python and so are checked whole before any is applied.
 */
#include "kernel.h"

#define R_NO_KEY 1  /* records without a key (an aggregate reads its group and arguments as extras) */
#define R_NO_KIND 2 /* rows without a kind column, each an insert (aggregate --input-mode append) */
#define R_MISSING_NULL 4 /* a key column a row lacks is null (an aggregate's group: row.get) */

/* (kind_key, spellings, key_keys, extra_keys) checked into a RecordSpec; key_keys may be empty. */
int record_spec(RecordSpec *rs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys,
                       PyObject *extra_keys) {
    static PyObject *one_key = NULL; /* change_spec wants a key: a placeholder when there is none */
    Py_ssize_t n_keys = PyTuple_GET_SIZE(key_keys), n_extras = PyTuple_GET_SIZE(extra_keys);
    if (n_extras > MAX_EXTRAS) {
        PyErr_SetString(PyExc_ValueError, "extra columns: at most 16");
        return -1;
    }
    if (n_keys == 0) {
        if (!one_key && !(one_key = Py_BuildValue("(y)", "\"\""))) return -1;
        if (change_spec(&rs->cs, kind_key, spellings, one_key) < 0) return -1;
        rs->cs.n_keys = 0;
    } else if (change_spec(&rs->cs, kind_key, spellings, key_keys) < 0) {
        return -1;
    }
    rs->n_extras = (int)n_extras;
    rs->flags = 0;
    for (int i = 0; i < rs->n_extras; i++) {
        PyObject *k = PyTuple_GET_ITEM(extra_keys, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "extra columns: bytes expected");
            return -1;
        }
        rs->extra[i] = PyBytes_AS_STRING(k);
        rs->extra_len[i] = PyBytes_GET_SIZE(k);
    }
    return 0;
}

static int put_u32(Out *o, uint32_t v) { return out_put_raw(o, &v, 4); }

/* A length written before its bytes, once they are written: at is where the placeholder went. */
static void patch_u32(Out *o, Py_ssize_t at) {
    uint32_t v = (uint32_t)(o->len - at - 4);
    memcpy(o->buf + at, &v, 4);
}

/* One line as a record; 1 written, 0 declined, -1 out of memory. Touches no Python object. */
static int parse_record(ptr base, ptr p, ptr line_end, uint32_t line, const RecordSpec *rs, Members *ms,
                        const Member **order, OrderCache *cache, Out *packed) {
    const ChangeSpec *cs = &rs->cs;
    if (!plain_line(p, line_end, ms)) return 0;
    int at_kind = -1, kind = 0;
    if (!(rs->flags & R_NO_KIND) && (kind = kind_of(cs, ms, &at_kind)) < 0) return 0;
    Py_ssize_t start = packed->len;
    unsigned char k = (unsigned char)kind;
    uint32_t offset = (uint32_t)(p - base);
    if (out_put_raw(packed, &k, 1) < 0 || put_u32(packed, line) < 0 || put_u32(packed, offset) < 0) return -1;
    Py_ssize_t at = packed->len;
    if (put_u32(packed, 0) < 0) return -1;
    int got = 1;
    if (rs->flags & R_NO_KEY) {
        got = 1;
    } else if (cs->n_keys == 0) {
        got = canon_members(packed, ms, at_kind, order, cache);
    } else {
        for (int i = 0; i < cs->n_keys && got > 0; i++) {
            int at_key = find_key(ms, cs->key[i], cs->key_len[i]);
            if (i && out_put_raw(packed, ",", 1) < 0) got = -1;
            else if (at_key >= 0 && at_key == at_kind) got = 0; /* the kind column is not a row's */
            else if (at_key < 0 && (rs->flags & R_MISSING_NULL)) got = out_put_raw(packed, "n", 1) < 0 ? -1 : 1;
            else if (at_key < 0) got = 0; /* no key column: the general way says so */
            else got = canon_value(packed, &ms->m[at_key]);
        }
    }
    if (got > 0 && packed->len - at - 4 > MAX_KEY_BYTES) got = 0;
    if (got <= 0) {
        packed->len = start;
        return got;
    }
    patch_u32(packed, at);
    at = packed->len;
    if (put_u32(packed, 0) < 0 || put_image(packed, ms, at_kind) < 0) return -1;
    patch_u32(packed, at);
    for (int i = 0; i < rs->n_extras; i++) {
        int at_extra = find_key(ms, rs->extra[i], rs->extra_len[i]);
        if (at_extra >= 0 && at_extra == at_kind) { /* the kind column is not a row's column */
            packed->len = start;
            return 0;
        }
        if (at_extra < 0) {
            if (put_u32(packed, MISSING) < 0) return -1;
            continue;
        }
        const Member *m = &ms->m[at_extra];
        at = packed->len;
        if (put_u32(packed, 0) < 0 || put_compact_raw(packed, m->val, m->val_end) < 0) return -1;
        patch_u32(packed, at);
    }
    return 1;
}

/* parse_records(chunk, start, kind_key, spellings, key_keys, extra_keys) -> (records, position, lines)
 * Plain changes from start until a declined line, without the GIL (the chunk must be read-only),
 * packed as records in the machine's byte order:
 *     [kind u8][line u32][offset u32][key length u32][key][row length u32][row] then per extra
 *     column [length u32][value as written, compact] (length 0xFFFFFFFF: the row lacks it)
 * line is the line's index in the chunk from start, offset its byte offset in the chunk; the key
 * is the canonical text of the key columns' values joined by ',', or without key columns the
 * row's (a multiset's identity); the row is the line without the kind member, compact. Declined:
 * what parse_changes declines, and a line whose key cannot be told from its text (a nested value,
 * a float of too many digits), or longer than MAX_KEY_BYTES. */

typedef struct {
    RecordSpec rs;
    const Member **order;
    OrderCache *cache;
} Records;

static int record_line(Lines *run, ptr p, ptr line_end) {
    Records *rx = run->ctx;
    return parse_record(run->chunk.buf, p, line_end, (uint32_t)run->lines, &rx->rs, run->ms[0], rx->order, rx->cache,
                        &run->out);
}

PyObject *parse_records(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Records rx = {.order = NULL, .cache = NULL};
    PyObject *spellings, *key_keys, *extra_keys, *result = NULL;
    int flags = 0;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!O!|i", LINES_ARGS(&run), &PyTuple_Type, &spellings, &PyTuple_Type, &key_keys,
                          &PyTuple_Type, &extra_keys, &flags))
        return NULL;
    if (!run.chunk.readonly)
        PyErr_SetString(PyExc_TypeError, "parse_records: the chunk must be read-only (bytes): it is read without the GIL");
    else if (flags < 0 || flags > (R_NO_KEY | R_NO_KIND | R_MISSING_NULL))
        PyErr_SetString(PyExc_ValueError, "parse_records: flags 0 to 7");
    else if (run.chunk.len >= ((Py_ssize_t)1 << 30))
        PyErr_SetString(PyExc_ValueError, "chunk too large");
    else if (check_start(run.start, &run.chunk) == 0 &&
             record_spec(&rx.rs, &run.kind_key, spellings, key_keys, extra_keys) == 0 && lines_open(&run, 1) == 0) {
        rx.rs.flags = flags;
        rx.order = PyMem_RawMalloc(MAX_MEMBERS * sizeof(rx.order[0]));
        rx.cache = PyMem_RawMalloc(sizeof(OrderCache));
        if (!rx.order || !rx.cache) {
            PyErr_NoMemory();
        } else {
            rx.cache->n = -1;
            Py_BEGIN_ALLOW_THREADS;
            lines_walk(&run, record_line, &rx);
            Py_END_ALLOW_THREADS;
            if (!lines_failed(&run))
                result = Py_BuildValue("(y#nn)", run.out.buf ? run.out.buf : "", run.out.len, run.position, run.lines);
        }
    }
    PyMem_RawFree((void *)rx.order);
    PyMem_RawFree(rx.cache);
    return lines_close(&run, result);
}

#define REC_HEADER 13 /* kind, line, offset, key length */

/* The record at p, within end, with n_extras extra values: 1, or 0 when it does not hold (its
 * kind past 3, a key longer than MAX_KEY_BYTES, a length past the end). */
int read_rec(const char *p, const char *end, int n_extras, Rec *r) {
    uint32_t n;
    if (end - p < REC_HEADER) return 0;
    r->kind = (unsigned char)p[0];
    memcpy(&r->line, p + 1, 4);
    memcpy(&r->offset, p + 5, 4);
    memcpy(&n, p + 9, 4);
    if (r->kind > 3 || n > MAX_KEY_BYTES || (Py_ssize_t)n > end - p - REC_HEADER) return 0;
    r->key = p + REC_HEADER;
    r->key_len = n;
    p = r->key + n;
    if (end - p < 4) return 0;
    memcpy(&n, p, 4);
    if ((Py_ssize_t)n > end - p - 4) return 0;
    r->row = p + 4;
    r->row_len = n;
    p = r->row + n;
    for (int i = 0; i < n_extras; i++) {
        if (end - p < 4) return 0;
        memcpy(&n, p, 4);
        p += 4;
        if (n == MISSING) {
            r->extra[i] = NULL;
            r->extra_len[i] = -1;
            continue;
        }
        if ((Py_ssize_t)n > end - p) return 0;
        r->extra[i] = p;
        r->extra_len[i] = n;
        p += n;
    }
    r->next = p;
    return 1;
}

/* Whether a buffer is whole records from its start (lines and offsets increasing) and start is
 * where one begins; -1 with a ValueError naming the first fault (or a MemoryError). *at gets the
 * records from start on (PyMem_RawMalloc'd, for the caller to free), *n_at their number. */
int check_records(const char *base, const char *end, Py_ssize_t start, int n_extras, RecAt **at,
                         Py_ssize_t *n_at) {
    const char *p = base;
    int64_t last_line = -1, last_offset = -1;
    int at_start = start == 0;
    Py_ssize_t n = 0, room = 0;
    RecAt *list = NULL;
    Rec r;
    *at = NULL;
    *n_at = 0;
    while (p < end) {
        if (!read_rec(p, end, n_extras, &r)) {
            PyErr_Format(PyExc_ValueError, "records: the record at byte %zd does not hold", (Py_ssize_t)(p - base));
            goto fail;
        }
        if ((int64_t)r.line <= last_line || (int64_t)r.offset <= last_offset) {
            PyErr_Format(PyExc_ValueError, "records: the record at byte %zd is out of order", (Py_ssize_t)(p - base));
            goto fail;
        }
        last_line = r.line, last_offset = r.offset;
        if (p - base >= start) {
            if (n == room) {
                room = room ? 2 * room : 1024;
                RecAt *grown = PyMem_RawRealloc(list, (size_t)room * sizeof(RecAt));
                if (!grown) {
                    PyErr_NoMemory();
                    goto fail;
                }
                list = grown;
            }
            list[n].p = p;
            list[n].hash = key_hash(r.key, r.key_len);
            n++;
        }
        p = r.next;
        if (p - base == start) at_start = 1;
    }
    if (!at_start) {
        PyErr_Format(PyExc_ValueError, "records: no record starts at byte %zd", start);
        goto fail;
    }
    *at = list;
    *n_at = n;
    return 0;
fail:
    PyMem_RawFree(list);
    return -1;
}
