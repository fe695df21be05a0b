/* cdc.formats._kernel: the JSON-lines conversions that move one column, line by line in C.
 *
 * Each line is validated as strict JSON (RFC 8259 grammar, strict UTF-8, paired surrogate
 * escapes) while it is walked. A line this code is not sure of — invalid or merely unusual: a
 * blank line, an escaped key, an unknown code, a placeholder — is declined: the call returns,
 * and Python converts that one line the general way (orjson), which decides what it means or
 * how it is wrong. So anything accepted here is JSON orjson accepts, and a line's output does
 * not depend on its neighbours. Values are copied as written; whitespace between tokens is
 * dropped.
 *
 * Both entry points take (chunk, start, ...) and return
 *     (output bytes, next position, lines done, counts per kind, rows dropped)
 * stopping before the first declined line (next position < len(chunk)) or at the end.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef const unsigned char *ptr;

#define MAX_DEPTH 64
#define MAX_MEMBERS 512
#define MAX_FLOAT_CHARS 64

/* ---------------------------------------------------------------- output buffer -------- */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

/* Appends without touching Python state (safe without the GIL); -1 when out of memory. */
static int out_put_raw(Out *o, const void *src, Py_ssize_t n) {
    if (o->len + n > o->cap) {
        Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
        while (cap < o->len + n) cap *= 2;
        char *grown = PyMem_RawRealloc(o->buf, (size_t)cap);
        if (!grown) return -1;
        o->buf = grown;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, src, (size_t)n);
    o->len += n;
    return 0;
}

static int out_put(Out *o, const void *src, Py_ssize_t n) {
    if (out_put_raw(o, src, n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- strict JSON ---------- */

static ptr ws(ptr p, ptr end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static int hex4(ptr p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Length of the UTF-8 sequence at p (Unicode table 3-7: no overlongs, no surrogates), or 0. */
static int utf8_len(ptr p, ptr end) {
    unsigned char c = p[0], c1;
    if (c >= 0xC2 && c <= 0xDF) return (end - p >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3) return 0;
        c1 = p[1];
        if (c == 0xE0 ? (c1 < 0xA0 || c1 > 0xBF) : c == 0xED ? (c1 < 0x80 || c1 > 0x9F) : (c1 & 0xC0) != 0x80)
            return 0;
        return (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4) return 0;
        c1 = p[1];
        if (c == 0xF0 ? (c1 < 0x90 || c1 > 0xBF) : c == 0xF4 ? (c1 < 0x80 || c1 > 0x8F) : (c1 & 0xC0) != 0x80)
            return 0;
        return ((p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) ? 4 : 0;
    }
    return 0;
}

/* p at an opening quote: the position after the closing quote, or NULL. */
static ptr scan_string(ptr p, ptr end, int *escaped) {
    p++;
    while (p < end) {
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) return NULL;
            unsigned char e = p[1];
            if (e == 'u') {
                unsigned cp, lo;
                if (end - p < 6 || !hex4(p + 2, &cp)) return NULL;
                p += 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return NULL;
                    p += 6;
                }
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            return NULL;
        }
        if (c < 0x20) return NULL;
        if (c < 0x80) {
            p++;
            continue;
        }
        int n = utf8_len(p, end);
        if (!n) return NULL;
        p += n;
    }
    return NULL;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* A number; integers of any length (exact on the general path too), floats up to 64 characters
 * and exponents of at most two digits (beyond that a double overflows, which orjson refuses). */
static ptr scan_number(ptr p, ptr end) {
    ptr start = p;
    int is_float = 0;
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9')
        while (p < end && is_digit(*p)) p++;
    else return NULL;
    if (p < end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= end || !is_digit(*p)) return NULL;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        ptr digits = p;
        if (p >= end || !is_digit(*p)) return NULL;
        while (p < end && is_digit(*p)) p++;
        if (p - digits > 2) return NULL;
    }
    if (is_float && p - start > MAX_FLOAT_CHARS) return NULL;
    return p;
}

static ptr skip_value(ptr p, ptr end, int depth);

static ptr skip_object(ptr p, ptr end, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        int esc = 0;
        if (p >= end || *p != '"' || !(p = scan_string(p, end, &esc))) return NULL;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        if (!(p = skip_value(ws(p + 1, end), end, depth))) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

static ptr skip_array(ptr p, ptr end, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (!(p = skip_value(p, end, depth))) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

static ptr skip_value(ptr p, ptr end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '"': {
        int esc = 0;
        return scan_string(p, end, &esc);
    }
    case '{': return skip_object(p, end, depth + 1);
    case '[': return skip_array(p, end, depth + 1);
    case 't': return (end - p >= 4 && !memcmp(p, "true", 4)) ? p + 4 : NULL;
    case 'f': return (end - p >= 5 && !memcmp(p, "false", 5)) ? p + 5 : NULL;
    case 'n': return (end - p >= 4 && !memcmp(p, "null", 4)) ? p + 4 : NULL;
    default: return scan_number(p, end);
    }
}

/* ---------------------------------------------------------------- objects ------------- */

typedef struct {
    ptr key, key_end; /* the key with its quotes */
    ptr val, val_end;
    int key_escaped, val_escaped;
} Member;

typedef struct {
    Member m[MAX_MEMBERS];
    int n;
} Members;

/* The members of the object at p ('{'); returns the position after it, or NULL (invalid, or
 * more members than kept). */
static ptr members_of(ptr p, ptr end, Members *out) {
    out->n = 0;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        if (out->n == MAX_MEMBERS) return NULL;
        Member *m = &out->m[out->n++];
        m->key_escaped = m->val_escaped = 0;
        if (p >= end || *p != '"') return NULL;
        m->key = p;
        if (!(p = scan_string(p, end, &m->key_escaped))) return NULL;
        m->key_end = p;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = ws(p + 1, end);
        m->val = p;
        if (p < end && *p == '"') p = scan_string(p, end, &m->val_escaped);
        else p = skip_value(p, end, 1);
        if (!p) return NULL;
        m->val_end = p;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

/* Spans compared are keys and codes, a few bytes that differ early: a loop beats a memcmp call
 * (which was a sixth of the time spent parsing a changelog line). */
static int span_is(ptr s, ptr e, const char *text, Py_ssize_t n) {
    if (e - s != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] != (unsigned char)text[i]) return 0;
    return 1;
}

/* Copy a validated value without the whitespace between its tokens (safe without the GIL). */
static int put_compact_raw(Out *o, ptr p, ptr end) {
    ptr run = p;
    int in_string = 0;
    while (p < end) {
        unsigned char c = *p;
        if (in_string) {
            if (c == '\\') p++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            if (out_put_raw(o, run, p - run) < 0) return -1;
            run = p + 1;
        }
        p++;
    }
    return out_put_raw(o, run, end - run);
}

static int put_compact(Out *o, ptr p, ptr end) {
    if (put_compact_raw(o, p, end) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* "{" + first member + the object's other members (all but index skip) + "}\n". */
static int put_row(Out *o, const char *first, Py_ssize_t first_len, const Members *ms, int skip) {
    if (out_put(o, "{", 1) < 0 || out_put(o, first, first_len) < 0) return -1;
    for (int i = 0; i < ms->n; i++) {
        const Member *m = &ms->m[i];
        if (i == skip) continue;
        if (out_put(o, ",", 1) < 0 || out_put(o, m->key, m->key_end - m->key) < 0 || out_put(o, ":", 1) < 0)
            return -1;
        if (m->val_end - m->val > 0 && (*m->val == '{' || *m->val == '[')) {
            if (put_compact(o, m->val, m->val_end) < 0) return -1;
        } else if (out_put(o, m->val, m->val_end - m->val) < 0) {
            return -1;
        }
    }
    return out_put(o, "}\n", 2);
}

/* A whole line as one object: its members, or 0 when the line is to be declined. */
static int line_object(ptr p, ptr end, Members *ms) {
    p = ws(p, end);
    if (p >= end || *p != '{') return 0;
    if (!(p = members_of(p, end, ms))) return 0;
    return ws(p, end) == end;
}

/* orjson keeps the last of repeated keys; such a row goes the general way. */
static int has_repeated_keys(const Members *ms) {
    if (ms->n <= 32) {
        for (int i = 1; i < ms->n; i++)
            for (int j = 0; j < i; j++)
                if (span_is(ms->m[i].key, ms->m[i].key_end, (const char *)ms->m[j].key, ms->m[j].key_end - ms->m[j].key))
                    return 1;
        return 0;
    }
    short slot[2048]; /* open addressing over member indexes + 1; MAX_MEMBERS < 2048 / 2 */
    memset(slot, 0, sizeof(slot));
    for (int i = 0; i < ms->n; i++) {
        const Member *m = &ms->m[i];
        unsigned h = 2166136261u;
        for (ptr c = m->key; c < m->key_end; c++) h = (h ^ *c) * 16777619u;
        for (unsigned k = h & 2047;; k = (k + 1) & 2047) {
            if (!slot[k]) {
                slot[k] = (short)(i + 1);
                break;
            }
            const Member *o = &ms->m[slot[k] - 1];
            if (span_is(m->key, m->key_end, (const char *)o->key, o->key_end - o->key)) return 1;
        }
    }
    return 0;
}

static int any_key_escaped(const Members *ms) {
    for (int i = 0; i < ms->n; i++)
        if (ms->m[i].key_escaped) return 1;
    return 0;
}

/* The index of the member whose key is `key` (quotes included), -1 if none, -2 if several. */
static int find_key(const Members *ms, const char *key, Py_ssize_t n) {
    int found = -1;
    for (int i = 0; i < ms->n; i++)
        if (span_is(ms->m[i].key, ms->m[i].key_end, key, n)) {
            if (found >= 0) return -2;
            found = i;
        }
    return found;
}

static PyObject *result(Out *o, Py_ssize_t pos, Py_ssize_t lines, const Py_ssize_t *counts, int n_counts,
                        Py_ssize_t dropped) {
    PyObject *data = PyBytes_FromStringAndSize(o->buf ? o->buf : "", o->len);
    PyMem_RawFree(o->buf);
    if (!data) return NULL;
    PyObject *kinds = PyTuple_New(n_counts);
    if (!kinds) {
        Py_DECREF(data);
        return NULL;
    }
    for (int i = 0; i < n_counts; i++) PyTuple_SET_ITEM(kinds, i, PyLong_FromSsize_t(counts[i]));
    return Py_BuildValue("(NnnNn)", data, pos, lines, kinds, dropped);
}

/* ---------------------------------------------------------------- one column ---------- */

#define MAX_CODES 64

/* columns(chunk, start, column_key, name_key, codes)
 *   column_key, name_key: JSON strings with quotes (name_key b"" when the same column)
 *   codes: tuple of (code as JSON string, kind index, first member or None when dropped)
 * counts are per kind index. */
static PyObject *columns(PyObject *self, PyObject *args) {
    Py_buffer chunk, column, name;
    Py_ssize_t start;
    PyObject *codes;
    if (!PyArg_ParseTuple(args, "y*ny*y*O!", &chunk, &start, &column, &name, &PyTuple_Type, &codes)) return NULL;
    Py_ssize_t n_codes = PyTuple_GET_SIZE(codes);
    const char *code_text[MAX_CODES], *member[MAX_CODES];
    Py_ssize_t code_len[MAX_CODES], member_len[MAX_CODES], counts[MAX_CODES] = {0};
    long kind[MAX_CODES];
    PyObject *result_obj = NULL;
    Out o = {0};
    if (n_codes > MAX_CODES) {
        PyErr_SetString(PyExc_ValueError, "too many codes");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_codes; i++) {
        PyObject *entry = PyTuple_GET_ITEM(codes, i), *m;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(entry, 0))) {
            PyErr_SetString(PyExc_TypeError, "codes: (bytes, int, bytes | None) expected");
            goto done;
        }
        code_text[i] = PyBytes_AS_STRING(PyTuple_GET_ITEM(entry, 0));
        code_len[i] = PyBytes_GET_SIZE(PyTuple_GET_ITEM(entry, 0));
        kind[i] = PyLong_AsLong(PyTuple_GET_ITEM(entry, 1));
        if (kind[i] < 0 || kind[i] >= 4) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "kind index out of range");
            goto done;
        }
        m = PyTuple_GET_ITEM(entry, 2);
        member[i] = m == Py_None ? NULL : PyBytes_AsString(m);
        member_len[i] = m == Py_None ? 0 : PyBytes_GET_SIZE(m);
        if (m != Py_None && !member[i]) goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + (start < 0 ? 0 : start);
        Py_ssize_t lines = 0, dropped = 0;
        Members *ms = PyMem_Malloc(sizeof(Members));
        if (!ms) {
            PyErr_NoMemory();
            goto done;
        }
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            ptr line_end = nl ? nl : end;
            if (!line_object(p, line_end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) break;
            int at = find_key(ms, column.buf, column.len);
            if (at < 0) break;
            if (name.len && find_key(ms, name.buf, name.len) != -1) break;
            const Member *op = &ms->m[at];
            if (op->val_escaped || *op->val != '"') break;
            Py_ssize_t c = 0;
            while (c < n_codes && !span_is(op->val, op->val_end, code_text[c], code_len[c])) c++;
            if (c == n_codes) break;
            if (member[c] == NULL) {
                dropped++;
            } else {
                if (ms->n == 1) { /* nothing but the op column: the first member closes the row */
                    if (out_put(&o, "{", 1) < 0 || out_put(&o, member[c], member_len[c]) < 0 || out_put(&o, "}\n", 2) < 0)
                        break;
                } else if (put_row(&o, member[c], member_len[c], ms, at) < 0) {
                    break;
                }
                counts[kind[c]]++;
            }
            lines++;
            p = nl ? nl + 1 : end;
        }
        PyMem_Free(ms);
        if (PyErr_Occurred()) goto done;
        result_obj = result(&o, p - base, lines, counts, 4, dropped);
        o.buf = NULL;
    }
done:
    PyMem_RawFree(o.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&column);
    PyBuffer_Release(&name);
    return result_obj;
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

/* Every key of `after` is a key of `before` (a complete before image). */
static int covers(const Members *before, const Members *after) {
    for (int i = 0; i < after->n; i++) {
        const Member *a = &after->m[i];
        int found = 0;
        for (int j = 0; j < before->n && !found; j++) {
            int k = (i + j) % before->n; /* same column order: found at once */
            found = span_is(before->m[k].key, before->m[k].key_end, (const char *)a->key, a->key_end - a->key);
        }
        if (!found) return 0;
    }
    return 1;
}

/* debezium(chunk, start, kind_key, firsts, envelopes, plain_schemas)
 *   kind_key: the kind column as a JSON string; firsts: the 4 first members, e.g. b'"op":"+I"';
 *   envelopes: whether {"schema", "payload"} events are read as envelopes (schema-include auto);
 *   plain_schemas: the schemas (their JSON text) known to need no value conversion.
 * Returns (output, position, lines, counts (+I, -U, +U, -D), 0, schema): schema is the JSON text
 * of an envelope's schema not known yet when the call stopped there (else None), for Python to
 * decide whether it is plain. */
static PyObject *debezium(PyObject *self, PyObject *args) {
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    const char *first[4];
    Py_ssize_t first_len[4];
    int envelopes;
    PyObject *firsts, *plain_schemas, *unknown = NULL, *result_obj = NULL;
    Out o = {0};
    Members *event = NULL, *payload = NULL, *before = NULL, *after = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!pO!", &chunk, &start, &kind_key, &PyTuple_Type, &firsts, &envelopes,
                          &PySet_Type, &plain_schemas))
        return NULL;
    if (PyTuple_GET_SIZE(firsts) != 4) {
        PyErr_SetString(PyExc_ValueError, "four first members expected");
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *m = PyTuple_GET_ITEM(firsts, i);
        if (!(first[i] = PyBytes_AsString(m))) goto done;
        first_len[i] = PyBytes_GET_SIZE(m);
    }
    event = PyMem_Malloc(sizeof(Members));
    payload = PyMem_Malloc(sizeof(Members));
    before = PyMem_Malloc(sizeof(Members));
    after = PyMem_Malloc(sizeof(Members));
    if (!event || !payload || !before || !after) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + (start < 0 ? 0 : start);
        Py_ssize_t lines = 0, counts[4] = {0};
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            ptr line_end = nl ? nl : end;
            if (!line_object(p, line_end, event) || any_key_escaped(event) || has_repeated_keys(event)) break;
            const Members *ev = event;
            int at_payload = find_key(event, "\"payload\"", 9);
            if (at_payload != -1) { /* an envelope: plain only with a schema that converts nothing */
                int at_schema = find_key(event, "\"schema\"", 8);
                if (!envelopes || at_payload < 0 || at_schema == -2 || find_key(event, "\"op\"", 4) != -1) break;
                const Member *pl = &event->m[at_payload];
                if (*pl->val != '{') break; /* a null payload is a tombstone */
                const Member *sc = at_schema >= 0 ? &event->m[at_schema] : NULL;
                if (sc && !span_is(sc->val, sc->val_end, "null", 4)) {
                    PyObject *text = PyBytes_FromStringAndSize((const char *)sc->val, sc->val_end - sc->val);
                    int known = text ? PySet_Contains(plain_schemas, text) : -1;
                    if (known <= 0) {
                        if (known == 0) unknown = text;
                        else Py_XDECREF(text);
                        break;
                    }
                    Py_DECREF(text);
                }
                if (!members_of(pl->val, pl->val_end, payload) || any_key_escaped(payload) || has_repeated_keys(payload))
                    break;
                ev = payload;
            }
            int at_op = find_key(ev, "\"op\"", 4), at_before = find_key(ev, "\"before\"", 8),
                at_after = find_key(ev, "\"after\"", 7);
            if (at_op < 0 || at_before == -2 || at_after == -2) break;
            const Member *op = &ev->m[at_op];
            if (op->val_end - op->val != 3 || op->val[0] != '"') break;
            char code = (char)op->val[1];
            ptr bv = at_before >= 0 ? ev->m[at_before].val : NULL;
            ptr bv_end = at_before >= 0 ? ev->m[at_before].val_end : NULL;
            ptr av = at_after >= 0 ? ev->m[at_after].val : NULL;
            ptr av_end = at_after >= 0 ? ev->m[at_after].val_end : NULL;
            /* an image given as JSON text is MongoDB's: the general way says why not */
            if ((bv && *bv == '"') || (av && *av == '"')) break;
            int ok = 1;
            if (code == 'c' || code == 'r') {
                ok = av && *av == '{' && members_of(av, av_end, after) && plain_image(after, kind_key.buf, kind_key.len) &&
                     put_row(&o, first[0], first_len[0], after, -1) == 0;
                if (ok) counts[0]++;
            } else if (code == 'u') {
                ok = bv && *bv == '{' && av && *av == '{' && members_of(bv, bv_end, before) &&
                     members_of(av, av_end, after) && plain_image(before, kind_key.buf, kind_key.len) &&
                     plain_image(after, kind_key.buf, kind_key.len) && covers(before, after) &&
                     put_row(&o, first[1], first_len[1], before, -1) == 0 &&
                     put_row(&o, first[2], first_len[2], after, -1) == 0;
                if (ok) counts[1]++, counts[2]++;
            } else if (code == 'd') {
                ok = bv && *bv == '{' && members_of(bv, bv_end, before) && plain_image(before, kind_key.buf, kind_key.len) &&
                     put_row(&o, first[3], first_len[3], before, -1) == 0;
                if (ok) counts[3]++;
            } else {
                ok = 0; /* t, m or unknown */
            }
            if (!ok || PyErr_Occurred()) break;
            lines++;
            p = nl ? nl + 1 : end;
        }
        if (PyErr_Occurred()) goto done;
        PyObject *out = result(&o, p - base, lines, counts, 4, 0);
        o.buf = NULL;
        if (out) { /* (output, position, lines, counts, dropped) + (schema,) */
            PyObject *tail = PyTuple_Pack(1, unknown ? unknown : Py_None);
            if (tail) {
                result_obj = PySequence_Concat(out, tail);
                Py_DECREF(tail);
            }
            Py_DECREF(out);
        }
    }
done:
    Py_XDECREF(unknown);
    PyMem_Free(event);
    PyMem_Free(payload);
    PyMem_Free(before);
    PyMem_Free(after);
    PyMem_RawFree(o.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
}


/* ---------------------------------------------------------------- keyed state --------- */

/* A key value the splice can compare as bytes: an unescaped string or an integer (JSON has no
 * other spelling of the same value). Floats, booleans, null and nested values go the general way. */
static int plain_key_value(const Member *m) {
    ptr v = m->val;
    if (*v == '"') return !m->val_escaped;
    if (*v != '-' && !is_digit(*v)) return 0;
    if (span_is(v, m->val_end, "-0", 2)) return 0;
    for (ptr c = v; c < m->val_end; c++)
        if (*c == '.' || *c == 'e' || *c == 'E') return 0;
    return 1;
}

#define MAX_SPELLINGS 16
#define MAX_KEYS 16

typedef struct {
    const char *kind_key;
    Py_ssize_t kind_len;
    const char *spelling[MAX_SPELLINGS];
    Py_ssize_t spelling_len[MAX_SPELLINGS];
    int spelling_kind[MAX_SPELLINGS];
    int n_spellings;
    const char *key[MAX_KEYS];
    Py_ssize_t key_len[MAX_KEYS];
    int n_keys;
} ChangeSpec;

/* (kind_key, spellings, key_keys) → a ChangeSpec pointing into those bytes (kept alive by the caller). */
static int change_spec(ChangeSpec *cs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys) {
    cs->kind_key = kind_key->buf;
    cs->kind_len = kind_key->len;
    cs->n_spellings = (int)PyTuple_GET_SIZE(spellings);
    cs->n_keys = (int)PyTuple_GET_SIZE(key_keys);
    if (cs->n_spellings > MAX_SPELLINGS || cs->n_keys < 1 || cs->n_keys > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "too many spellings or key columns");
        return -1;
    }
    for (int i = 0; i < cs->n_spellings; i++) {
        PyObject *e = PyTuple_GET_ITEM(spellings, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(e, 0))) {
            PyErr_SetString(PyExc_TypeError, "spellings: (bytes, int) expected");
            return -1;
        }
        cs->spelling[i] = PyBytes_AS_STRING(PyTuple_GET_ITEM(e, 0));
        cs->spelling_len[i] = PyBytes_GET_SIZE(PyTuple_GET_ITEM(e, 0));
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
        if (kind < 0 || kind > 3) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "kind index out of range");
            return -1;
        }
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

/* One line → its kind (0..3), key (values joined by ',') and row without the kind column, compact.
 * 1: a plain change; 0: declined; -1: out of memory. Touches no Python object (no GIL needed). */
/* A plain change: ms holds its members, *kind its kind, at[] where its kind and key members
 * are. 0: declined (not an object, an escaped or repeated key, an unknown kind, a key that is
 * not an integer or a plain string). */
typedef struct {
    int kind, at_kind, at_key[MAX_KEYS];
} Change;

static int read_change(ptr p, ptr line_end, const ChangeSpec *cs, Members *ms, Change *c) {
    if (!line_object(p, line_end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    c->at_kind = find_key(ms, cs->kind_key, cs->kind_len);
    if (c->at_kind < 0 || ms->m[c->at_kind].val_escaped) return 0;
    c->kind = -1;
    for (int i = 0; i < cs->n_spellings && c->kind < 0; i++)
        if (span_is(ms->m[c->at_kind].val, ms->m[c->at_kind].val_end, cs->spelling[i], cs->spelling_len[i]))
            c->kind = cs->spelling_kind[i];
    if (c->kind < 0) return 0;
    for (int i = 0; i < cs->n_keys; i++) {
        c->at_key[i] = find_key(ms, cs->key[i], cs->key_len[i]);
        if (c->at_key[i] < 0 || !plain_key_value(&ms->m[c->at_key[i]])) return 0;
    }
    return 1;
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
static int put_image(Out *o, const Members *ms, int at_kind) {
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

/* One line as a change: 1 with *kind, the key and the image written; 0: declined; -1: out of
 * memory. */
static int parse_change(ptr p, ptr line_end, const ChangeSpec *cs, Members *ms, int *kind, Out *key, Out *image) {
    Change c;
    if (!read_change(p, line_end, cs, ms, &c)) return 0;
    *kind = c.kind;
    key->len = image->len = 0;
    if (put_key(key, cs, ms, &c) < 0 || put_image(image, ms, c.at_kind) < 0) return -1;
    return 1;
}

typedef struct {
    Py_ssize_t counts[4], retract, upsert;
} Applied;

/* ---------------------------------------------------------------- the table ----------- */

/* An upsert table: key bytes → row bytes, in first-insertion order, where a -U marks a row
 * retracted (its slot stays for the +U to come). Like a dict of bytes plus a set, but a lookup
 * touches one index slot and one entry holding the key itself: the dict also touched the key
 * object and hashed a fresh one per change, and with 100k keys those cache misses were most of
 * the time spent applying changes. Entries of deleted rows stay (row NULL, key kept) until the
 * entries are rebuilt, so a key's index slot never moves and the index needs no tombstones. */

#define INLINE_KEY 24

typedef struct {
    uint64_t hash;
    PyObject *row; /* owned bytes; NULL: deleted */
    uint32_t key_len;
    uint32_t retracted;
    union {
        char bytes[INLINE_KEY];
        char *heap;
    } key;
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *entries;
    Py_ssize_t n_entries, cap, live;
    int32_t *index; /* -1 empty, else an entry; size 4 * cap, a power of two */
    Py_ssize_t mask;
} Table;

static PyTypeObject TableType;

static const char *entry_key(const Entry *e) { return e->key_len <= INLINE_KEY ? e->key.bytes : e->key.heap; }

static uint64_t key_hash(const char *key, Py_ssize_t len) {
#if PY_VERSION_HEX >= 0x030E0000
    return (uint64_t)Py_HashBuffer(key, len); /* keyed SipHash: no crafted collisions */
#else
    return (uint64_t)_Py_HashBytes(key, len);
#endif
}

/* The index slot for this key: empty (-1), or holding the entry with this key (live or not). */
static Py_ssize_t table_slot(const Table *t, const char *key, Py_ssize_t len, uint64_t hash) {
    Py_ssize_t s = (Py_ssize_t)(hash & (uint64_t)t->mask);
    for (;;) {
        int32_t at = t->index[s];
        if (at < 0) return s;
        const Entry *e = &t->entries[at];
        if (e->hash == hash && e->key_len == (uint32_t)len && !memcmp(entry_key(e), key, (size_t)len)) return s;
        s = (s + 1) & t->mask;
    }
}

static void entry_clear(Entry *e) {
    Py_CLEAR(e->row);
    if (e->key_len > INLINE_KEY) PyMem_RawFree(e->key.heap);
    e->key_len = 0;
}

/* Room for one more entry: drop deleted entries, or double; the index is rebuilt. */
static int table_make_room(Table *t) {
    if (t->n_entries < t->cap) return 0;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < t->n_entries; i++) {
        if (t->entries[i].row) t->entries[kept++] = t->entries[i];
        else entry_clear(&t->entries[i]);
    }
    t->n_entries = kept;
    Py_ssize_t cap = kept * 2 > t->cap ? t->cap * 2 : t->cap;
    if (cap < 1024) cap = 1024;
    if (cap != t->cap) {
        Entry *grown = PyMem_RawRealloc(t->entries, (size_t)cap * sizeof(Entry));
        int32_t *index = PyMem_RawRealloc(t->index, (size_t)cap * 4 * sizeof(int32_t));
        if (grown) t->entries = grown;
        if (index) t->index = index;
        if (!grown || !index || cap >= ((Py_ssize_t)1 << 29)) {
            PyErr_NoMemory();
            return -1;
        }
        t->cap = cap;
        t->mask = cap * 4 - 1;
    }
    memset(t->index, 0xff, (size_t)(t->mask + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < t->n_entries; i++) {
        Py_ssize_t s = (Py_ssize_t)(t->entries[i].hash & (uint64_t)t->mask);
        while (t->index[s] >= 0) s = (s + 1) & t->mask;
        t->index[s] = (int32_t)i;
    }
    return 0;
}

/* Put a new entry at the end (the key absent or deleted): its slot comes from table_slot. */
static int table_append(Table *t, const char *key, Py_ssize_t len, uint64_t hash, PyObject *row) {
    if (t->n_entries >= t->cap) {
        if (table_make_room(t) < 0) return -1;
    }
    Py_ssize_t s = table_slot(t, key, len, hash); /* again: the index may have been rebuilt */
    Entry *e = &t->entries[t->n_entries];
    e->hash = hash;
    e->row = row;
    e->retracted = 0;
    e->key_len = (uint32_t)len;
    if (len <= INLINE_KEY) {
        memcpy(e->key.bytes, key, (size_t)len);
    } else if (!(e->key.heap = PyMem_RawMalloc((size_t)len))) {
        e->key_len = 0;
        PyErr_NoMemory();
        return -1;
    } else {
        memcpy(e->key.heap, key, (size_t)len);
    }
    if (t->index[s] >= 0) { /* the key's deleted entry: its slot now points here */
        Entry *old = &t->entries[t->index[s]];
        if (old->key_len > INLINE_KEY) PyMem_RawFree(old->key.heap);
        old->key_len = 0;
        old->hash = 0;
    }
    t->index[s] = (int32_t)t->n_entries++;
    t->live++;
    return 0;
}

/* The live entry for a key (retracted or not), or NULL. */
static Entry *table_find(Table *t, const char *key, Py_ssize_t len, uint64_t hash) {
    int32_t at = t->index[table_slot(t, key, len, hash)];
    if (at < 0 || !t->entries[at].row) return NULL;
    return &t->entries[at];
}

static int same_row(PyObject *row, const char *image, Py_ssize_t len) {
    return PyBytes_GET_SIZE(row) == len && !memcmp(PyBytes_AS_STRING(row), image, (size_t)len);
}

/* Apply one change like an upsert table. 1: applied; 0: declined (it would raise a finding: an
 * insert of a stored key, a retraction of an absent row, a -U unlike the stored row); -1: a
 * Python error. A retracted row counts as absent, except that a +I/+U puts the row back in its
 * slot. */
static int apply_change(Table *t, int kind, const char *key, Py_ssize_t key_len, const char *image,
                        Py_ssize_t image_len, Applied *a) {
    uint64_t hash = key_hash(key, key_len);
    Entry *e = table_find(t, key, key_len, hash);
    int stored = e && !e->retracted;
    if (kind == 0 || kind == 2) { /* +I, +U */
        if (stored && kind == 0) return 0;
        PyObject *row = PyBytes_FromStringAndSize(image, image_len);
        if (!row) return -1;
        if (e) {
            Py_SETREF(e->row, row);
            e->retracted = 0;
        } else if (table_append(t, key, key_len, hash, row) < 0) {
            Py_DECREF(row);
            return -1;
        }
        a->retract += stored ? 2 : 1, a->upsert += 1;
    } else if (!stored) {
        return 0;
    } else if (kind == 1) { /* -U: the stored row must be the one retracted */
        if (!same_row(e->row, image, image_len)) return 0;
        e->retracted = 1;
        a->retract += 1;
    } else { /* -D */
        Py_CLEAR(e->row);
        t->live--;
        a->retract += 1, a->upsert += 1;
    }
    a->counts[kind]++;
    return 1;
}

/* A -U and the +U right after it for the same key: the stored row replaced in its slot, as the
 * two applied one by one would leave it (half of a changelog's records are such pairs).
 * 1: applied; 0: declined (apply_change then takes the -U alone); -1: a Python error. */
static int apply_update(Table *t, const char *key, Py_ssize_t key_len, const char *before, Py_ssize_t before_len,
                        const char *after, Py_ssize_t after_len, Applied *a) {
    Entry *e = table_find(t, key, key_len, key_hash(key, key_len));
    if (!e || e->retracted || !same_row(e->row, before, before_len)) return 0;
    PyObject *row = PyBytes_FromStringAndSize(after, after_len);
    if (!row) return -1;
    Py_SETREF(e->row, row);
    a->counts[1]++, a->counts[2]++, a->retract += 2, a->upsert += 1;
    return 1;
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *no_keywords[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":Table", no_keywords)) return NULL;
    Table *t = (Table *)type->tp_alloc(type, 0);
    if (!t) return NULL;
    if (table_make_room(t) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void table_dealloc(Table *t) {
    for (Py_ssize_t i = 0; i < t->n_entries; i++) entry_clear(&t->entries[i]);
    PyMem_RawFree(t->entries);
    PyMem_RawFree(t->index);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* texts() -> the rows not retracted, in first-insertion order. */
static PyObject *table_texts(Table *t, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        const Entry *e = &t->entries[i];
        if (e->row && !e->retracted && PyList_Append(out, e->row) < 0) Py_CLEAR(out);
    }
    return out;
}

/* items() -> [(key, row, retracted)] of the live rows, in first-insertion order. */
static PyObject *table_items(Table *t, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        const Entry *e = &t->entries[i];
        if (!e->row) continue;
        PyObject *item = Py_BuildValue("(y#OO)", entry_key(e), (Py_ssize_t)e->key_len, e->row,
                                       e->retracted ? Py_True : Py_False);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

static Py_ssize_t table_len(Table *t) { return t->live; }

static PyMethodDef table_methods[] = {
    {"texts", (PyCFunction)table_texts, METH_NOARGS, "The rows not retracted, in first-insertion order."},
    {"items", (PyCFunction)table_items, METH_NOARGS, "(key, row, retracted) of each live row, in order."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_as_sequence = {.sq_length = (lenfunc)table_len};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.formats._kernel.Table",
    .tp_doc = "An upsert table of row bytes by key bytes, in first-insertion order.",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_as_sequence,
};

static PyObject *applied_tuple(Py_ssize_t position, Py_ssize_t lines, const Applied *a) {
    return Py_BuildValue("(nn(nnnn)nn)", position, lines, a->counts[0], a->counts[1], a->counts[2], a->counts[3],
                         a->retract, a->upsert);
}

/* keyed(chunk, start, kind_key, spellings, key_keys, table)
 *   spellings: tuple of (kind spelled as a JSON string, kind index); key_keys: the key columns
 *   as JSON strings. table: a Table of key bytes → compact row bytes (without the kind column).
 * Parses and applies lines until one is declined (not plain, or a finding).
 * Returns (position, lines, counts per kind, retract messages, upsert messages). */
static PyObject *keyed(PyObject *self, PyObject *args) {
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    PyObject *spellings, *key_keys, *result_obj = NULL;
    Table *table;
    Out image = {0}, key = {0};
    Members *ms = NULL;
    ChangeSpec cs;
    Applied a = {{0}, 0, 0};
    if (!PyArg_ParseTuple(args, "y*ny*O!O!O!", &chunk, &start, &kind_key, &PyTuple_Type, &spellings, &PyTuple_Type,
                          &key_keys, &TableType, &table))
        return NULL;
    if (change_spec(&cs, &kind_key, spellings, key_keys) < 0) goto done;
    if (!(ms = PyMem_RawMalloc(sizeof(Members)))) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + (start < 0 ? 0 : start);
        Py_ssize_t lines = 0;
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            int kind, got = parse_change(p, nl ? nl : end, &cs, ms, &kind, &key, &image);
            if (got < 0) {
                PyErr_NoMemory();
                goto done;
            }
            if (!got) break;
            got = apply_change(table, kind, key.buf, key.len, image.buf, image.len, &a);
            if (got < 0) goto done;
            if (!got) break;
            lines++;
            p = nl ? nl + 1 : end;
        }
        result_obj = applied_tuple(p - base, lines, &a);
    }
done:
    PyMem_RawFree(ms);
    PyMem_RawFree(image.buf);
    PyMem_RawFree(key.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
}

/* parse_changes(chunk, start, kind_key, spellings, key_keys) -> (changes, position, lines)
 * The parsing half of keyed, without the GIL (another thread can apply the chunk before):
 * plain lines from start until a declined one, packed as records
 *     [kind u8][line offset u32][key length u32][key][row length u32][row]. */
static PyObject *parse_changes(PyObject *self, PyObject *args) {
    Py_buffer chunk, kind_key;
    Py_ssize_t start, lines = 0, position = 0;
    PyObject *spellings, *key_keys, *result_obj = NULL;
    Out packed = {0};
    Members *ms = NULL;
    ChangeSpec cs;
    int failed = 0;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!", &chunk, &start, &kind_key, &PyTuple_Type, &spellings, &PyTuple_Type,
                          &key_keys))
        return NULL;
    if (chunk.len >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "chunk too large");
        goto done;
    }
    if (change_spec(&cs, &kind_key, spellings, key_keys) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS;
    ptr base = chunk.buf, end = base + chunk.len, p = base + (start < 0 ? 0 : start);
    ms = PyMem_RawMalloc(sizeof(Members));
    failed = !ms;
    while (!failed && p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        Change c;
        if (!read_change(p, nl ? nl : end, &cs, ms, &c)) break;
        /* written in place: [kind][offset][key length][key][row length][row], lengths after */
        unsigned char k = (unsigned char)c.kind;
        uint32_t offset = (uint32_t)(p - base), size = 0;
        Py_ssize_t at_size;
        failed = out_put_raw(&packed, &k, 1) < 0 || out_put_raw(&packed, &offset, 4) < 0;
        if (!failed) {
            at_size = packed.len;
            failed = out_put_raw(&packed, &size, 4) < 0 || put_key(&packed, &cs, ms, &c) < 0;
        }
        if (!failed) {
            size = (uint32_t)(packed.len - at_size - 4);
            memcpy(packed.buf + at_size, &size, 4);
            at_size = packed.len;
            failed = out_put_raw(&packed, &size, 4) < 0 || put_image(&packed, ms, c.at_kind) < 0;
        }
        if (failed) break;
        size = (uint32_t)(packed.len - at_size - 4);
        memcpy(packed.buf + at_size, &size, 4);
        lines++;
        p = nl ? nl + 1 : end;
    }
    position = p - base;
    Py_END_ALLOW_THREADS;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    {
        PyObject *data = PyBytes_FromStringAndSize(packed.buf ? packed.buf : "", packed.len);
        if (data) result_obj = Py_BuildValue("(Nnn)", data, position, lines);
    }
done:
    PyMem_RawFree(ms);
    PyMem_RawFree(packed.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
}

/* apply_changes(changes, table) -> (stop, records, counts per kind, retract, upsert)
 * The applying half: records from parse_changes until one is declined (a finding); stop is
 * that record's line offset in the chunk, or -1 when all were applied. */
static PyObject *apply_changes(PyObject *self, PyObject *args) {
    Py_buffer packed;
    PyObject *result_obj = NULL;
    Table *table;
    Applied a = {{0}, 0, 0};
    if (!PyArg_ParseTuple(args, "y*O!", &packed, &TableType, &table)) return NULL;
    {
        const char *p = packed.buf, *end = p + packed.len;
        Py_ssize_t records = 0, stop = -1;
        while (end - p >= 13) {
            uint32_t offset, klen, ilen;
            int kind = (unsigned char)p[0];
            memcpy(&offset, p + 1, 4);
            memcpy(&klen, p + 5, 4);
            if (end - (p + 9) < (Py_ssize_t)klen + 4) break;
            const char *key = p + 9;
            memcpy(&ilen, key + klen, 4);
            const char *image = key + klen + 4;
            if (end - image < (Py_ssize_t)ilen) break;
            const char *next = image + ilen;
            if (kind == 1 && end - next >= 13 && next[0] == 2) { /* -U, then a +U: for the same key? */
                uint32_t nklen, nilen;
                memcpy(&nklen, next + 5, 4);
                const char *nkey = next + 9;
                if (nklen == klen && end - nkey >= (Py_ssize_t)nklen + 4 && !memcmp(nkey, key, klen)) {
                    memcpy(&nilen, nkey + nklen, 4);
                    const char *nimage = nkey + nklen + 4;
                    if (end - nimage >= (Py_ssize_t)nilen) {
                        int got = apply_update(table, key, klen, image, ilen, nimage, nilen, &a);
                        if (got < 0) goto done;
                        if (got) {
                            records += 2;
                            p = nimage + nilen;
                            continue;
                        }
                    }
                }
            }
            int got = apply_change(table, kind, key, klen, image, ilen, &a);
            if (got < 0) goto done;
            if (!got) {
                stop = offset;
                break;
            }
            records++;
            p = next;
        }
        result_obj = applied_tuple(stop, records, &a);
    }
done:
    PyBuffer_Release(&packed);
    return result_obj;
}

/* count_lines(chunk) -> the number of "\n" bytes, eight at a time (bytes.count looks at one
 * byte per step: most of the time the reading thread of materialize spent on a chunk). */
static PyObject *count_lines(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = b.buf;
    Py_ssize_t n = b.len, i = 0, count = 0;
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, newlines = 0x0a0a0a0a0a0a0a0aULL, ones = 0x0101010101010101ULL;
    for (; i + 8 <= n; i += 8) {
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

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_O, "The number of newline bytes in a buffer."},
    {"columns", columns, METH_VARARGS, "Move one column of each JSON line to the front, mapped."},
    {"debezium", debezium, METH_VARARGS, "Debezium change events → changelog rows."},
    {"keyed", keyed, METH_VARARGS, "Apply changelog lines to an upsert table of row bytes."},
    {"parse_changes", parse_changes, METH_VARARGS, "The parsing half of keyed, without the GIL."},
    {"apply_changes", apply_changes, METH_VARARGS, "The applying half of keyed."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) {
    if (PyType_Ready(&TableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0) Py_CLEAR(m);
    return m;
}
