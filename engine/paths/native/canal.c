/* canal: Canal flat messages → changelog rows, as CanalDecoder (core/envelopes) makes them, with
 * the values of text columns converted as the message's sqlType says (integers, decimals, floats,
 * booleans) where this code converts them exactly; a value it does not is declined with its line.
 */
#include "kernel.h"

enum { TO_NONE = 0, TO_INT, TO_FLOAT, TO_DECIMAL, TO_BOOL };

/* A sqlType code as written → what Canal's decoder makes of a text value of that column. */
static int sql_type(const Member *code) {
    ptr v = code->val;
    Py_ssize_t n = code->val_end - v;
    if (n == 1) { /* 2 3 4 5 6 7 8 */
        switch (v[0]) {
        case '4':
        case '5': return TO_INT;
        case '6':
        case '7':
        case '8': return TO_FLOAT;
        case '2':
        case '3': return TO_DECIMAL;
        default: return TO_NONE;
        }
    }
    if (n == 2) { /* -6 -5 16 */
        if (v[0] == '-' && (v[1] == '6' || v[1] == '5')) return TO_INT;
        if (v[0] == '1' && v[1] == '6') return TO_BOOL;
    }
    return TO_NONE; /* another integer, a float, a string...: no conversion (Python: type(code) is int) */
}

/* A decimal number text: -?(0|[1-9][0-9]*)(.[0-9]+)? -- 1 with its parts, or 0. */
static int decimal_text(ptr s, ptr e, ptr *int_start, ptr *int_end, ptr *frac, ptr *frac_end) {
    ptr p = s;
    if (p < e && *p == '-') p++;
    *int_start = p;
    if (p >= e) return 0;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9')
        while (p < e && is_digit(*p)) p++;
    else return 0;
    *int_end = p;
    *frac = *frac_end = p;
    if (p < e && *p == '.') {
        *frac = ++p;
        while (p < e && is_digit(*p)) p++;
        *frac_end = p;
        if (*frac == *frac_end) return 0;
    }
    return p == e;
}

/* One value of a Canal row, converted as CanalDecoder._convert_rows does it, written to o. 1, 0
 * (declined: a value this code does not convert exactly; the general way decides), -1. */
static int put_canal_value(Out *o, const Member *m, int to) {
    ptr v = m->val, e = m->val_end;
    if (to == TO_NONE || *v != '"') /* no conversion, or not text (null, a number): as it is */
        return (*v == '{' || *v == '[') ? (put_compact_raw(o, v, e) < 0 ? -1 : 1) : (out_put_raw(o, v, e - v) < 0 ? -1 : 1);
    if (m->val_escaped) return 0;
    ptr s = v + 1, t = e - 1, is, ie, fs, fe;
    if (to == TO_BOOL) {
        if (span_is(s, t, "1", 1) || span_is(s, t, "true", 4)) return out_put_raw(o, "true", 4) < 0 ? -1 : 1;
        if (span_is(s, t, "0", 1) || span_is(s, t, "false", 5)) return out_put_raw(o, "false", 5) < 0 ? -1 : 1;
        return 0;
    }
    if (!decimal_text(s, t, &is, &ie, &fs, &fe)) return 0;
    int neg = *s == '-';
    if (to == TO_INT) { /* int(text): the digits, at most 18 (beyond, the general way) */
        if (fs != fe || ie - is > 18 || (neg && ie - is == 1 && *is == '0')) return 0;
        return out_put_raw(o, s, t - s) < 0 ? -1 : 1;
    }
    /* the coefficient's digits (leading zeros dropped) and the exponent: str(Decimal) and float */
    Py_ssize_t digits = 0, lead = 1;
    for (ptr c = is; c < fe; c++) {
        if (c == ie) continue; /* the point */
        if (lead && *c == '0') continue;
        lead = 0;
        digits++;
    }
    Py_ssize_t frac_digits = fe > fs ? fe - fs : 0;
    if (to == TO_DECIMAL) { /* str(Decimal(text)) is text, unless the number is below 1E-6 */
        Py_ssize_t coeff = digits ? digits : 1;
        if (-frac_digits + coeff - 1 < -6) return 0;
        return out_put_raw(o, s, t - s) < 0 ? -1 : 1;
    }
    /* TO_FLOAT: float(text) as orjson writes it -- the same digits where they are at most 15, the
     * number between 1e-4 and 1e15, and the fraction ends in no 0 (but "x.0"); an integer gets ".0" */
    if (neg && digits == 0) return 0; /* -0 */
    if (digits > 15) return 0;
    if (frac_digits > 1 && fe[-1] == '0') return 0;
    if (ie - is > 15) return 0;
    if (digits) { /* the magnitude: the first non-zero digit's place */
        Py_ssize_t place = 0;
        if (!(ie - is == 1 && *is == '0')) place = ie - is - 1;
        else {
            ptr c = fs;
            while (c < fe && *c == '0') c++;
            place = -(c - fs) - 1;
        }
        if (place < -4 || place >= 15) return 0;
    }
    if (out_put_raw(o, s, t - s) < 0) return -1;
    if (fs == fe && out_put_raw(o, ".0", 2) < 0) return -1;
    return 1;
}

/* The conversion of a row member's column: its sqlType code's. */
static int canal_type(const Members *types, int n_types, const Member *m, int guess) {
    if (n_types <= 0) return TO_NONE;
    if (guess < types->n && same_name(&types->m[guess], m)) return sql_type(&types->m[guess]);
    int at = find_key(types, (const char *)m->key, m->key_end - m->key);
    return at >= 0 ? sql_type(&types->m[at]) : TO_NONE;
}

/* "{" + first + the members of row (values converted; where old names a column, old's) + "}\n".
 * 1, 0 (a value declined), -1. */
static int put_canal_row(Out *o, const char *first, Py_ssize_t first_len, const Members *row, const Members *old,
                         const Members *types, int n_types) {
    if (out_put_raw(o, "{", 1) < 0 || out_put_raw(o, first, first_len) < 0) return -1;
    for (int i = 0; i < row->n; i++) {
        const Member *m = &row->m[i];
        int at = old ? find_key(old, (const char *)m->key, m->key_end - m->key) : -1;
        const Member *v = at >= 0 ? &old->m[at] : m;
        if (out_put_raw(o, ",", 1) < 0 || out_put_raw(o, m->key, m->key_end - m->key) < 0 || out_put_raw(o, ":", 1) < 0)
            return -1;
        int got = put_canal_value(o, v, canal_type(types, n_types, m, i));
        if (got <= 0) return got;
    }
    return out_put_raw(o, "}\n", 2) < 0 ? -1 : 1;
}

#define MAX_ROWS 256 /* rows of one Canal message the kernel takes (more: the general way) */

/* The rows of a Canal message's data or old array, parsed once. */
typedef struct {
    Members **row;
    int n, room;
} Rows;

static void rows_free(Rows *r) {
    for (int i = 0; i < r->room; i++) PyMem_Free(r->row[i]);
    PyMem_Free(r->row);
}

/* An array of objects at p ('['), each parsed (and validated) into r; the position after it, or
 * NULL: invalid, an element that is not an object, more than MAX_ROWS (declined), or out of
 * memory (*nomemory set). */
static ptr parse_rows(ptr p, ptr end, Rows *r, int *nomemory) {
    r->n = 0;
    p = ws(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (p >= end || *p != '{' || r->n == MAX_ROWS) return NULL;
        if (r->n == r->room) {
            Members **grown = PyMem_Realloc(r->row, (size_t)(r->room + 1) * sizeof(r->row[0]));
            if (!grown) {
                *nomemory = 1;
                return NULL;
            }
            r->row = grown;
            if (!(r->row[r->room] = PyMem_Malloc(sizeof(Members)))) {
                *nomemory = 1;
                return NULL;
            }
            r->room++;
        }
        if (!(p = members_of(p, end, r->row[r->n]))) return NULL;
        r->n++;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
}

/* A Canal message: its members, with data, old and sqlType parsed as they are read (one pass:
 * those are most of its bytes). 1, or 0 (declined: not a plain message this code takes). */
typedef struct {
    Members *event, *types;
    Rows data, old;
    int has_data, has_old, has_types;
} CanalEvent;

static int canal_event(ptr p, ptr end, CanalEvent *ce, int *nomemory) {
    Members *out = ce->event;
    ce->has_data = ce->has_old = ce->has_types = 0;
    out->n = 0;
    p = ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return ws(p + 1, end) == end;
    for (;;) {
        if (out->n == MAX_MEMBERS) return 0;
        Member *m = &out->m[out->n++];
        m->key_escaped = m->val_escaped = 0;
        if (p >= end || *p != '"') return 0;
        m->key = p;
        if (!(p = scan_string(p, end, &m->key_escaped))) return 0;
        m->key_end = p;
        p = ws(p, end);
        if (p >= end || *p != ':') return 0;
        p = ws(p + 1, end);
        m->val = p;
        if (p >= end) return 0;
        if (*p == '[' && span_is(m->key, m->key_end, "\"data\"", 6)) {
            p = parse_rows(p, end, &ce->data, nomemory);
            ce->has_data = 1;
        } else if (*p == '[' && span_is(m->key, m->key_end, "\"old\"", 5)) {
            p = parse_rows(p, end, &ce->old, nomemory);
            ce->has_old = 1;
        } else if (*p == '{' && span_is(m->key, m->key_end, "\"sqlType\"", 9)) {
            p = members_of(p, end, ce->types);
            ce->has_types = 1;
        } else if (*p == '"') {
            p = scan_string(p, end, &m->val_escaped);
        } else {
            p = skip_value(p, end, 1);
        }
        if (!p) return 0;
        m->val_end = p;
        p = ws(p, end);
        if (p >= end) return 0;
        if (*p == '}') return ws(p + 1, end) == end;
        if (*p != ',') return 0;
        p = ws(p + 1, end);
    }
}

/* A sqlType with a code that is a number written with a fraction or an exponent: 4.0 == 4 to
 * Python, whose decoder caches converters by the sqlType dict (the first of equal ones decides). */
static int float_code(const Members *types) {
    for (int i = 0; i < types->n; i++) {
        const Member *m = &types->m[i];
        if (*m->val != '-' && !is_digit(*m->val)) continue;
        for (ptr c = m->val; c < m->val_end; c++)
            if (*c == '.' || *c == 'e' || *c == 'E') return 1;
    }
    return 0;
}

#define MAX_SEEN 8 /* distinct sqlTypes reported per call */

typedef struct {
    const char *first[4];
    Py_ssize_t first_len[4];
    int raw_values, nomemory, n_seen;
    const char *seen[MAX_SEEN], *last;
    Py_ssize_t seen_len[MAX_SEEN], last_len;
    CanalEvent ce;
} Canal;

/* Whether the sqlType at tm was reported already. */
static int seen_before(const Canal *cx, const Member *tm) {
    for (int i = 0; i < cx->n_seen; i++)
        if (span_is(tm->val, tm->val_end, cx->seen[i], cx->seen_len[i])) return 1;
    return 0;
}

static int canal_line(Lines *run, ptr p, ptr line_end) {
    Canal *cx = run->ctx;
    CanalEvent *ce = &cx->ce;
    const Members *event = ce->event;
    const char *kk = run->kind_key.buf;
    Py_ssize_t kl = run->kind_key.len;
    Out *o = &run->out;
    if (!canal_event(p, line_end, ce, &cx->nomemory) || any_key_escaped(event) || has_repeated_keys(event))
        return cx->nomemory ? -1 : 0;
    int at_type = find_key(event, "\"type\"", 6);
    int kind = member_is(event, at_type, "\"INSERT\"", 8)   ? 0
               : member_is(event, at_type, "\"UPDATE\"", 8) ? 1
               : member_is(event, at_type, "\"DELETE\"", 8) ? 3
                                                           : -1;
    if (kind < 0 || !ce->has_data) return 0;
    /* the column types: sqlType, an object of distinct plain names (else no conversion) */
    int n_types = 0, at_types = -1;
    if (ce->has_types && !cx->raw_values) {
        if (any_key_escaped(ce->types) || has_repeated_keys(ce->types) || float_code(ce->types)) return 0;
        n_types = ce->types->n;
        at_types = find_key(event, "\"sqlType\"", 9);
        if (at_types < 0) return 0; /* never: has_types says it was read */
        if (!seen_before(cx, &event->m[at_types]) && cx->n_seen == MAX_SEEN) return 0;
    }
    /* old: null or absent, else an array of objects as long as data (an UPDATE's) */
    int with_old = 0;
    if (kind == 1) {
        int at_old = find_key(event, "\"old\"", 5);
        if (at_old >= 0 && !span_is(event->m[at_old].val, event->m[at_old].val_end, "null", 4)) {
            if (!ce->has_old || ce->old.n != ce->data.n) return 0;
            with_old = 1;
        }
    }
    Py_ssize_t line_start = o->len;
    int ok = 1;
    for (int i = 0; i < ce->data.n && ok; i++) {
        const Members *row = ce->data.row[i], *old = with_old ? ce->old.row[i] : NULL;
        if (!plain_row(row, kk, kl)) {
            ok = 0;
            break;
        }
        if (old && old->n == 0) old = NULL; /* an empty old[i]: nothing changed */
        if (old && (any_key_escaped(old) || has_repeated_keys(old) || !covers(row, old))) {
            ok = 0;
            break;
        }
        int got;
        if (kind == 1) {
            got = put_canal_row(o, cx->first[1], cx->first_len[1], row, old, ce->types, n_types);
            if (got > 0) got = put_canal_row(o, cx->first[2], cx->first_len[2], row, NULL, ce->types, n_types);
        } else {
            got = put_canal_row(o, cx->first[kind], cx->first_len[kind], row, NULL, ce->types, n_types);
        }
        if (got < 0) cx->nomemory = 1;
        if (got <= 0) ok = 0;
    }
    if (cx->nomemory) return -1;
    if (!ok) {
        o->len = line_start; /* what this line wrote goes: the general way writes it */
        return 0;
    }
    if (kind == 1) run->counts[1] += ce->data.n, run->counts[2] += ce->data.n;
    else run->counts[kind] += ce->data.n;
    if (at_types >= 0) { /* a sqlType the decoder sees: reported */
        const Member *tm = &event->m[at_types];
        if (!seen_before(cx, tm)) {
            cx->seen[cx->n_seen] = (const char *)tm->val;
            cx->seen_len[cx->n_seen++] = tm->val_end - tm->val;
        }
        cx->last = (const char *)tm->val, cx->last_len = tm->val_end - tm->val;
    }
    return 1;
}

/* canal(chunk, start, kind_key, firsts, raw_values)
 *     -> (output, position, lines, counts, 0, sqlTypes: the texts of the sqlType objects of the
 *         lines taken, each once in the order first seen, then the last one)
 * CanalDecoder without state, metadata or filters: INSERT +I and DELETE -D per row of data;
 * UPDATE -U(data[i] with old[i]'s values) and +U(data[i]) per row, old null or as long as data.
 * Values converted by sqlType (integers, decimals, floats, booleans as text; unless raw_values),
 * where this code converts them exactly. The decoder caches converters by sqlType: Python
 * replays the sqlTypes reported, so that its cache is the one the row path would have; a line
 * whose sqlType has a code that is not written as an integer goes the general way. */
PyObject *canal(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Canal cx;
    PyObject *firsts, *result = NULL;
    memset(&cx, 0, sizeof cx);
    if (!PyArg_ParseTuple(args, "y*ny*O!p", LINES_ARGS(&run), &PyTuple_Type, &firsts, &cx.raw_values)) return NULL;
    if (lines_open(&run, 2) == 0 && firsts_of(firsts, cx.first, cx.first_len) == 0) {
        cx.ce.event = run.ms[0];
        cx.ce.types = run.ms[1];
        if (lines_walk(&run, canal_line, &cx) == 0) {
            PyObject *types = PyList_New(0);
            for (int i = 0; types && i <= cx.n_seen; i++) {
                const char *text = i < cx.n_seen ? cx.seen[i] : cx.last;
                Py_ssize_t len = i < cx.n_seen ? cx.seen_len[i] : cx.last_len;
                if (!text) break;
                PyObject *item = PyBytes_FromStringAndSize(text, len);
                if (!item || PyList_Append(types, item) < 0) Py_CLEAR(types);
                Py_XDECREF(item);
            }
            if (types) result = lines_result(&run, types);
        }
        lines_failed(&run);
    }
    rows_free(&cx.ce.data);
    rows_free(&cx.ce.old);
    return lines_close(&run, result);
}
