/* materialize with a key, on the kernel: each line read as a change (its kind, its key: the key
 * columns' values as written, and its row without the kind column) and applied to a Table by the
 * upsert rule (table.c). keyed does both per line; parse_changes (without the GIL, on a thread)
 * and apply_changes are its two halves. A line whose key is not plain (an integer or an unescaped
 * string: one spelling per value), or whose change would raise a finding, is declined.
 */
#include "kernel.h"

/* A key value the splice can compare as bytes: an unescaped string or an integer (JSON has no
 * other spelling of the same value). Floats, booleans, null and nested values go the general way. */
static int plain_key_value(const Member *m) { return *m->val != 'n' && sole_spelling(m); }

/* (kind_key, spellings, key_keys) → a ChangeSpec pointing into those bytes (kept alive by the caller:
 * tuples hold their items). Every item is checked before anything of it is read. */
int change_spec(ChangeSpec *cs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys) {
    Py_ssize_t n_spellings = PyTuple_GET_SIZE(spellings), n_keys = PyTuple_GET_SIZE(key_keys);
    if (n_spellings > MAX_SPELLINGS) {
        PyErr_SetString(PyExc_ValueError, "spellings: at most 16");
        return -1;
    }
    if (n_keys < 1 || n_keys > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "key columns: 1 to 16 expected");
        return -1;
    }
    cs->kind_key = kind_key->buf;
    cs->kind_len = kind_key->len;
    cs->n_spellings = (int)n_spellings;
    cs->n_keys = (int)n_keys;
    for (int i = 0; i < cs->n_spellings; i++) {
        PyObject *e = PyTuple_GET_ITEM(spellings, i);
        long kind;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(e, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(e, 1))) {
            PyErr_SetString(PyExc_TypeError, "spellings: (bytes, int) expected");
            return -1;
        }
        if (!small_int(PyTuple_GET_ITEM(e, 1), 0, 3, &kind)) {
            PyErr_SetString(PyExc_ValueError, "spellings: kind index out of range (0 to 3)");
            return -1;
        }
        cs->spelling[i] = PyBytes_AS_STRING(PyTuple_GET_ITEM(e, 0));
        cs->spelling_len[i] = PyBytes_GET_SIZE(PyTuple_GET_ITEM(e, 0));
        cs->spelling_kind[i] = (int)kind;
    }
    for (int i = 0; i < cs->n_keys; i++) {
        PyObject *k = PyTuple_GET_ITEM(key_keys, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "key columns: bytes expected");
            return -1;
        }
        cs->key[i] = PyBytes_AS_STRING(k);
        cs->key_len[i] = PyBytes_GET_SIZE(k);
    }
    return 0;
}

/* A plain change: ms holds its members, c->kind its kind, c->at_* where its kind and key members
 * are. 0: declined (not an object, an escaped or repeated key, an unknown kind, a key that is
 * not an integer or a plain string, or longer than MAX_KEY_BYTES). Touches no Python object
 * (no GIL needed). */
typedef struct {
    int kind, at_kind, at_key[MAX_KEYS];
} Change;

/* The kind of a change (0 to 3) and where its kind member is; -1: no such member, or a kind
 * spelled otherwise. */
int kind_of(const ChangeSpec *cs, const Members *ms, int *at_kind) {
    int at = *at_kind = find_key(ms, cs->kind_key, cs->kind_len);
    if (at < 0 || ms->m[at].val_escaped) return -1;
    for (int i = 0; i < cs->n_spellings; i++)
        if (span_is(ms->m[at].val, ms->m[at].val_end, cs->spelling[i], cs->spelling_len[i])) return cs->spelling_kind[i];
    return -1;
}

static int read_change(ptr p, ptr line_end, const ChangeSpec *cs, Members *ms, Change *c) {
    if (!plain_line(p, line_end, ms) || (c->kind = kind_of(cs, ms, &c->at_kind)) < 0) return 0;
    Py_ssize_t key_len = cs->n_keys - 1; /* the commas */
    for (int i = 0; i < cs->n_keys; i++) {
        c->at_key[i] = find_key(ms, cs->key[i], cs->key_len[i]);
        if (c->at_key[i] < 0 || !plain_key_value(&ms->m[c->at_key[i]])) return 0;
        key_len += ms->m[c->at_key[i]].val_end - ms->m[c->at_key[i]].val; /* each < the chunk: no overflow */
    }
    return key_len <= MAX_KEY_BYTES;
}

/* The key: its members' values as written, joined by ','. */
static int put_key(Out *o, const ChangeSpec *cs, const Members *ms, const Change *c) {
    for (int i = 0; i < cs->n_keys; i++) {
        const Member *m = &ms->m[c->at_key[i]];
        if ((i && out_put_raw(o, ",", 1) < 0) || out_put_raw(o, m->val, m->val_end - m->val) < 0) return -1;
    }
    return 0;
}

/* The row without the kind member, compact. Members already written compactly one after the
 * other (the usual line) are copied as one run. */
int put_image(Out *o, const Members *ms, int at_kind) {
    if (out_put_raw(o, "{", 1) < 0) return -1;
    int first = 1;
    for (int i = 0; i < ms->n;) {
        const Member *m = &ms->m[i];
        if (i == at_kind) {
            i++;
            continue;
        }
        if (!first && out_put_raw(o, ",", 1) < 0) return -1;
        first = 0;
        /* key_end + 1 and val_end + 1 stay within the line: a value and a '}' follow them */
        if (m->val == m->key_end + 1 && *m->val != '{' && *m->val != '[') { /* "key":value */
            int j = i;
            while (j + 1 < ms->n && j + 1 != at_kind) { /* and ,"key":value right after it */
                const Member *next = &ms->m[j + 1];
                if (next->key != ms->m[j].val_end + 1 || next->val != next->key_end + 1 || *next->val == '{' ||
                    *next->val == '[')
                    break;
                j++;
            }
            if (out_put_raw(o, m->key, ms->m[j].val_end - m->key) < 0) return -1;
            i = j + 1;
            continue;
        }
        if (out_put_raw(o, m->key, m->key_end - m->key) < 0 || out_put_raw(o, ":", 1) < 0) return -1;
        if (*m->val == '{' || *m->val == '[' ? put_compact_raw(o, m->val, m->val_end) < 0
                                              : out_put_raw(o, m->val, m->val_end - m->val) < 0)
            return -1;
        i++;
    }
    return out_put_raw(o, "}", 1);
}

/* ---------------------------------------------------------------- applied to a Table ---- */

typedef struct {
    Py_ssize_t counts[4], messages[2]; /* messages: as retract, as upsert */
} Applied;

/* Apply one change by the upsert rule. 1: applied; 0: declined (it would raise a finding: an
 * insert of a stored key, a retraction of an absent row, a -U unlike the stored row); -1: a
 * Python error. */
static int apply_change(Tab *t, int kind, const char *key, Py_ssize_t key_len, const char *image,
                        Py_ssize_t image_len, Applied *a) {
    if (kind < 0 || kind > 3) { /* the callers check: never reached */
        PyErr_SetString(PyExc_SystemError, "kernel: kind index out of range");
        return -1;
    }
    uint64_t hash = key_hash(key, key_len);
    Entry *e = table_find(t, key, key_len, hash);
    if (upsert_finding(e, kind, image, image_len) != UPSERT_OK) return 0;
    if (upsert_apply(t, e, kind, key, key_len, hash, image, image_len, 0, a->messages) < 0) return -1;
    a->counts[kind]++;
    return 1;
}

/* A -U and the +U right after it for the same key, applied as one (half of a changelog's
 * records are such pairs): one lookup. 1: applied; 0: declined (apply_change then takes the -U
 * alone); -1: a Python error. */
static int apply_update(Tab *t, const char *key, Py_ssize_t key_len, const char *before, Py_ssize_t before_len,
                        const char *after, Py_ssize_t after_len, Applied *a) {
    uint64_t hash = key_hash(key, key_len);
    Entry *e = table_find(t, key, key_len, hash);
    if (upsert_finding(e, 1, before, before_len) != UPSERT_OK) return 0;
    if (upsert_apply(t, e, 1, key, key_len, hash, before, before_len, 0, a->messages) < 0 ||
        upsert_apply(t, e, 2, key, key_len, hash, after, after_len, 0, a->messages) < 0)
        return -1;
    a->counts[1]++, a->counts[2]++;
    return 1;
}

static PyObject *applied_tuple(Py_ssize_t position, Py_ssize_t lines, const Applied *a) {
    return Py_BuildValue("(nn(nnnn)nn)", position, lines, a->counts[0], a->counts[1], a->counts[2], a->counts[3],
                         a->messages[0], a->messages[1]);
}

/* ---------------------------------------------------------------- the Table type -------- */

typedef struct {
    PyObject_HEAD
    Tab tab;
} Table;

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *no_keywords[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":Table", no_keywords)) return NULL;
    Table *t = (Table *)type->tp_alloc(type, 0);
    if (!t) return NULL;
    if (tab_init(&t->tab) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void table_dealloc(Table *t) {
    tab_free(&t->tab);
    Py_TYPE(t)->tp_free((PyObject *)t);
}
/* texts() -> the rows not retracted, in first-insertion order. */
static PyObject *table_texts(Table *self, PyObject *unused) {
    UNUSED(unused);
    Tab *t = &self->tab;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        const Entry *e = &t->entries[i];
        if (e->row && !(e->flags & RETRACTED) && PyList_Append(out, e->row) < 0) Py_CLEAR(out);
    }
    return out;
}

/* items() -> [(key, row, retracted)] of the live rows, in first-insertion order. Each entry is
 * read before anything that could run Python code (a tuple's allocation may start a garbage
 * collection, whose finalizers could change this table): no pointer into it is kept across. */
static PyObject *table_items(Table *self, PyObject *unused) {
    UNUSED(unused);
    Tab *t = &self->tab;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        const Entry *e = &t->entries[i];
        if (!e->row) continue;
        PyObject *row = Py_NewRef(e->row), *flag = (e->flags & RETRACTED) ? Py_True : Py_False;
        PyObject *key = PyBytes_FromStringAndSize(entry_key(e), (Py_ssize_t)e->key_len);
        PyObject *item = key ? PyTuple_Pack(3, key, row, flag) : NULL;
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
        Py_XDECREF(key);
        Py_DECREF(row);
    }
    return out;
}

static Py_ssize_t table_len(Table *t) { return t->tab.live; }

static PyMethodDef table_methods[] = {
    {"texts", (PyCFunction)table_texts, METH_NOARGS, "The rows not retracted, in first-insertion order."},
    {"items", (PyCFunction)table_items, METH_NOARGS, "(key, row, retracted) of each live row, in order."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_as_sequence = {.sq_length = (lenfunc)table_len};

PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.Table",
    .tp_doc = "An upsert table of row bytes by key bytes, in first-insertion order.",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_as_sequence,
};

/* ---------------------------------------------------------------- the entry points ------ */

typedef struct {
    ChangeSpec cs;
    Table *table;
    Out key, image;
    Applied a;
} Keyed;

static int keyed_line(Lines *run, ptr p, ptr line_end) {
    Keyed *kx = run->ctx;
    Members *ms = run->ms[0];
    Change c;
    if (!read_change(p, line_end, &kx->cs, ms, &c)) return 0;
    kx->key.len = kx->image.len = 0;
    if (put_key(&kx->key, &kx->cs, ms, &c) < 0 || put_image(&kx->image, ms, c.at_kind) < 0) return -1;
    return apply_change(&kx->table->tab, c.kind, kx->key.buf, kx->key.len, kx->image.buf, kx->image.len, &kx->a);
}

/* keyed(chunk, start, kind_key, spellings, key_keys, table)
 *   spellings: tuple of (kind spelled as a JSON string, kind index); key_keys: the key columns
 *   as JSON strings. table: a Table of key bytes → compact row bytes (without the kind column).
 * Parses and applies lines until one is declined (not plain, or a finding).
 * Returns (position, lines, counts per kind, retract messages, upsert messages). */
PyObject *keyed(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Keyed kx;
    PyObject *spellings, *key_keys, *result = NULL;
    memset(&kx, 0, sizeof kx);
    if (!PyArg_ParseTuple(args, "y*ny*O!O!O!", LINES_ARGS(&run), &PyTuple_Type, &spellings, &PyTuple_Type, &key_keys,
                          &TableType, &kx.table))
        return NULL;
    if (lines_open(&run, 1) == 0 && change_spec(&kx.cs, &run.kind_key, spellings, key_keys) == 0 &&
        lines_walk(&run, keyed_line, &kx) == 0)
        result = applied_tuple(run.position, run.lines, &kx.a);
    lines_failed(&run);
    PyMem_RawFree(kx.key.buf);
    PyMem_RawFree(kx.image.buf);
    return lines_close(&run, result);
}

/* parse_changes' record: [kind u8][line offset u32][key length u32][key][row length u32][row]. */
static int packed_line(Lines *run, ptr p, ptr line_end) {
    const ChangeSpec *cs = run->ctx;
    Members *ms = run->ms[0];
    Out *packed = &run->out;
    Change c;
    if (!read_change(p, line_end, cs, ms, &c)) return 0;
    /* written in place, lengths after */
    unsigned char k = (unsigned char)c.kind;
    uint32_t offset = (uint32_t)(p - (ptr)run->chunk.buf), size = 0;
    if (out_put_raw(packed, &k, 1) < 0 || out_put_raw(packed, &offset, 4) < 0) return -1;
    Py_ssize_t at_size = packed->len;
    if (out_put_raw(packed, &size, 4) < 0 || put_key(packed, cs, ms, &c) < 0) return -1;
    size = (uint32_t)(packed->len - at_size - 4); /* <= MAX_KEY_BYTES (read_change) */
    memcpy(packed->buf + at_size, &size, 4);
    at_size = packed->len;
    if (out_put_raw(packed, &size, 4) < 0 || put_image(packed, ms, c.at_kind) < 0) return -1;
    size = (uint32_t)(packed->len - at_size - 4); /* the row: at most the line, under 2 GiB */
    memcpy(packed->buf + at_size, &size, 4);
    return 1;
}

/* parse_changes(chunk, start, kind_key, spellings, key_keys) -> (changes, position, lines)
 * The parsing half of keyed, without the GIL (another thread can apply the chunk before):
 * plain lines from start until a declined one, packed as records
 *     [kind u8][line offset u32][key length u32][key][row length u32][row]
 * in the machine's byte order. The chunk must be read-only (bytes): nothing may change it while
 * it is read without the GIL. Lengths fit: the chunk is under 2 GiB and a key at most
 * MAX_KEY_BYTES. */
PyObject *parse_changes(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    ChangeSpec cs;
    PyObject *spellings, *key_keys, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!", LINES_ARGS(&run), &PyTuple_Type, &spellings, &PyTuple_Type, &key_keys))
        return NULL;
    if (!run.chunk.readonly)
        PyErr_SetString(PyExc_TypeError, "parse_changes: the chunk must be read-only (bytes): it is read without the GIL");
    else if (run.chunk.len >= ((Py_ssize_t)1 << 31))
        PyErr_SetString(PyExc_ValueError, "chunk too large");
    else if (check_start(run.start, &run.chunk) == 0 && change_spec(&cs, &run.kind_key, spellings, key_keys) == 0 &&
             lines_open(&run, 1) == 0) {
        Py_BEGIN_ALLOW_THREADS;
        lines_walk(&run, packed_line, &cs);
        Py_END_ALLOW_THREADS;
        if (!lines_failed(&run))
            result = Py_BuildValue("(y#nn)", run.out.buf ? run.out.buf : "", run.out.len, run.position, run.lines);
    }
    return lines_close(&run, result);
}

/* One record of a packed buffer. */
typedef struct {
    int kind;
    uint32_t offset;
    const char *key, *row, *next;
    Py_ssize_t key_len, row_len;
} Record;

#define RECORD_HEADER 13 /* kind, offset, key length, row length */

/* The record at p: only once the buffer is checked (check_changes). */
static void take_record(const char *p, Record *r) {
    uint32_t key_len, row_len;
    r->kind = (unsigned char)p[0];
    memcpy(&r->offset, p + 1, 4);
    memcpy(&key_len, p + 5, 4);
    r->key = p + 9;
    r->key_len = key_len;
    memcpy(&row_len, r->key + key_len, 4);
    r->row = r->key + key_len + 4;
    r->row_len = row_len;
    r->next = r->row + row_len;
}

/* Whether the packed buffer is whole: each record's kind 0 to 3, its key at most MAX_KEY_BYTES,
 * its lengths within the buffer, line offsets increasing, nothing after the last record. -1 with
 * a ValueError naming the first fault. */
static int check_changes(const char *base, const char *end) {
    const char *p = base;
    int64_t last = -1;
    while (end - p >= RECORD_HEADER) {
        uint32_t offset, key_len, row_len;
        memcpy(&offset, p + 1, 4);
        memcpy(&key_len, p + 5, 4);
        if ((unsigned char)p[0] > 3 || key_len > MAX_KEY_BYTES || (int64_t)offset <= last ||
            (Py_ssize_t)key_len > end - p - RECORD_HEADER)
            break;
        memcpy(&row_len, p + 9 + key_len, 4);
        if ((Py_ssize_t)row_len > end - p - RECORD_HEADER - (Py_ssize_t)key_len) break;
        last = offset;
        p += RECORD_HEADER + key_len + row_len;
    }
    if (p == end) return 0;
    Py_ssize_t at = p - base;
    uint32_t offset = 0, key_len = 0;
    if (end - p >= RECORD_HEADER) {
        memcpy(&offset, p + 1, 4);
        memcpy(&key_len, p + 5, 4);
    }
    if (end - p < RECORD_HEADER || (key_len <= MAX_KEY_BYTES && (int64_t)offset > last && (unsigned char)p[0] <= 3))
        PyErr_Format(PyExc_ValueError, "changes: the record at byte %zd is cut short", at);
    else if ((unsigned char)p[0] > 3)
        PyErr_Format(PyExc_ValueError, "changes: the record at byte %zd has kind %d (0 to 3 expected)", at,
                     (int)(unsigned char)p[0]);
    else if (key_len > MAX_KEY_BYTES)
        PyErr_Format(PyExc_ValueError, "changes: the record at byte %zd has a key of %lu bytes (at most %zd)", at,
                     (unsigned long)key_len, MAX_KEY_BYTES);
    else
        PyErr_Format(PyExc_ValueError, "changes: the record at byte %zd has line offset %lu, not past %lld", at,
                     (unsigned long)offset, (long long)last);
    return -1;
}

/* apply_changes(changes, table) -> (stop, records, counts per kind, retract, upsert)
 * The applying half: records from parse_changes until one is declined (a finding); stop is
 * that record's line offset in the chunk, or -1 when all were applied. The buffer crosses from
 * Python: all of it is checked first (check_changes); a ValueError leaves the table as it was. */
PyObject *apply_changes(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer packed;
    PyObject *result_obj = NULL;
    Table *table;
    Applied a = {{0}, {0}};
    Record r, n;
    if (!PyArg_ParseTuple(args, "y*O!", &packed, &TableType, &table)) return NULL;
    const char *base = packed.buf, *end = base + packed.len;
    if (check_changes(base, end) < 0) goto done;
    {
        Py_ssize_t records = 0, stop = -1;
        for (const char *p = base; p < end; p = r.next) {
            take_record(p, &r);
            if (r.kind == 1 && r.next < end) { /* -U, then a +U: for the same key? */
                take_record(r.next, &n);
                if (n.kind == 2 && n.key_len == r.key_len && !memcmp(n.key, r.key, (size_t)r.key_len)) {
                    int got = apply_update(&table->tab, r.key, r.key_len, r.row, r.row_len, n.row, n.row_len, &a);
                    if (got < 0) goto done;
                    if (got) {
                        records += 2;
                        r.next = n.next;
                        continue;
                    }
                }
            }
            int got = apply_change(&table->tab, r.kind, r.key, r.key_len, r.row, r.row_len, &a);
            if (got < 0) goto done;
            if (!got) {
                stop = r.offset;
                break;
            }
            records++;
        }
        result_obj = applied_tuple(stop, records, &a);
    }
done:
    PyBuffer_Release(&packed);
    return result_obj;
}
