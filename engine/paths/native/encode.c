/* encode: changelog lines → Debezium change events (debezium-encode) in one pass, as
 * DebeziumEncoder.step writes them: a -U waits for the next line, and a -U then a +U (of equal key
 * values) is one u event. Key values are compared by their canonical texts (values.c).
 */
#include "kernel.h"

/* The pending -U of encode: its row, the canonical text of its key values, its time value. */
typedef struct {
    int set, ts_state; /* ts_state: 0 missing, 1 a plain integer (in ts), 2 other */
    Out row, key, ts;
} Pending;

/* The canonical key values of a row (missing columns as null, as dict.get sees them): 1, 0, -1. */
static int encode_key(Out *o, const ChangeSpec *cs, const Members *ms) {
    o->len = 0;
    for (int i = 0; i < cs->n_keys; i++) {
        int at = find_key(ms, cs->key[i], cs->key_len[i]);
        if (i && out_put_raw(o, ",", 1) < 0) return -1;
        if (at < 0) {
            if (out_put_raw(o, "n", 1) < 0) return -1;
            continue;
        }
        int got = canon_value(o, &ms->m[at]);
        if (got <= 0) return got;
    }
    return 1;
}

/* The time value of a row: 0 missing, 1 a plain integer (copied), 2 other; -1. */
static int encode_ts(Out *o, const Members *ms, const char *time_key, Py_ssize_t time_len) {
    o->len = 0;
    int at = find_key(ms, time_key, time_len);
    if (at < 0) return 0;
    const Member *m = &ms->m[at];
    int64_t unused;
    if (!plain_int((const char *)m->val, m->val_end - m->val, &unused)) return 2;
    return out_put_raw(o, m->val, m->val_end - m->val) < 0 ? -1 : 1;
}

/* One event: {"before":B,"after":A<source>,"op":"X","ts_ms":T,"transaction":null}\n */
static int put_event(Out *o, char op, const char *before, Py_ssize_t blen, const char *after, Py_ssize_t alen,
                     const char *source, Py_ssize_t slen, const char *ts, Py_ssize_t tlen) {
    char tail[] = ",\"op\":\"c\",\"ts_ms\":";
    tail[7] = op;
    if (out_put(o, "{\"before\":", 10) < 0 || (before ? out_put(o, before, blen) : out_put(o, "null", 4)) < 0 ||
        out_put(o, ",\"after\":", 9) < 0 || (after ? out_put(o, after, alen) : out_put(o, "null", 4)) < 0 ||
        out_put(o, source, slen) < 0 || out_put(o, tail, (Py_ssize_t)sizeof tail - 1) < 0 || out_put(o, ts, tlen) < 0 ||
        out_put(o, ",\"transaction\":null}\n", 21) < 0)
        return -1;
    return 0;
}

typedef struct {
    RecordSpec rs;
    Py_buffer time_key, source, now;
    int split;
    Out image, key, ts;
    Pending pend;
    Py_ssize_t events[3]; /* c, u, d */
} Encode;

static int encode_line(Lines *run, ptr p, ptr line_end) {
    Encode *ex = run->ctx;
    const ChangeSpec *cs = &ex->rs.cs;
    Members *ms = run->ms[0];
    Pending *pend = &ex->pend;
    Out *out = &run->out, *image = &ex->image;
    const Py_buffer *time_key = &ex->time_key, *source = &ex->source, *now = &ex->now;
    int split = ex->split, at_kind, kind;
    if (!plain_line(p, line_end, ms) || (kind = kind_of(cs, ms, &at_kind)) < 0) return 0;
    /* the row's time value, where an event of this line needs it */
    int ts_state = 1;
    const char *ts_text = now->buf;
    Py_ssize_t ts_len = now->len;
    if (time_key->len) {
        if (find_key(ms, time_key->buf, time_key->len) == at_kind) return 0;
        ts_state = encode_ts(&ex->ts, ms, time_key->buf, time_key->len);
        if (ts_state < 0) return -1;
        ts_text = ex->ts.buf, ts_len = ex->ts.len;
    }
    int line_needs_ts = !(kind == 1 && !split); /* a -U that waits makes no event yet */
    int merge = 0;
    if (pend->set && kind == 2 && !split) {
        int got = encode_key(&ex->key, cs, ms);
        if (got < 0) return -1;
        if (got == 0 || pend->set == 2) return 0; /* key values the texts cannot compare */
        merge = ex->key.len == pend->key.len && (!ex->key.len || !memcmp(ex->key.buf, pend->key.buf, (size_t)ex->key.len));
    }
    if ((line_needs_ts || merge) && ts_state != 1) return 0;
    if (pend->set && !merge && time_key->len && pend->ts_state != 1) return 0; /* the pending d's time */
    image->len = 0;
    if (put_image(image, ms, at_kind) < 0) return -1;
    if (pend->set) {
        if (merge) {
            if (put_event(out, 'u', pend->row.buf, pend->row.len, image->buf, image->len, source->buf, source->len,
                          ts_text, ts_len) < 0)
                return -1;
            ex->events[1]++;
        } else {
            const char *pts = time_key->len ? pend->ts.buf : now->buf;
            Py_ssize_t pts_len = time_key->len ? pend->ts.len : now->len;
            if (put_event(out, 'd', pend->row.buf, pend->row.len, NULL, 0, source->buf, source->len, pts, pts_len) < 0)
                return -1;
            ex->events[2]++;
        }
        pend->set = 0;
    }
    run->counts[kind]++;
    if (merge) return 1;
    int failed = 0;
    if (kind == 0) {
        failed = put_event(out, 'c', NULL, 0, image->buf, image->len, source->buf, source->len, ts_text, ts_len);
        ex->events[0]++;
    } else if (kind == 1 && split) {
        failed = put_event(out, 'd', image->buf, image->len, NULL, 0, source->buf, source->len, ts_text, ts_len);
        ex->events[2]++;
    } else if (kind == 1) { /* waits for its +U */
        int got = encode_key(&pend->key, cs, ms);
        if (got < 0 || (time_key->len && (pend->ts_state = encode_ts(&pend->ts, ms, time_key->buf, time_key->len)) < 0))
            return -1;
        pend->row.len = 0;
        if (out_put_raw(&pend->row, image->buf, image->len) < 0) return -1;
        pend->set = got > 0 ? 1 : 2;
    } else if (kind == 2) {
        failed = put_event(out, split ? 'c' : 'u', NULL, 0, image->buf, image->len, source->buf, source->len, ts_text,
                           ts_len);
        ex->events[split ? 0 : 1]++;
    } else {
        failed = put_event(out, 'd', image->buf, image->len, NULL, 0, source->buf, source->len, ts_text, ts_len);
        ex->events[2]++;
    }
    return failed ? -1 : 1;
}

/* The -U left by the call before (a row's compact JSON text): its key and time read again. */
static int pending_of(Encode *ex, PyObject *pending, Members *ms) {
    Pending *pend = &ex->pend;
    if (!PyBytes_Check(pending)) {
        PyErr_SetString(PyExc_TypeError, "encode: pending must be bytes or None");
        return -1;
    }
    ptr pp = (ptr)PyBytes_AS_STRING(pending), pe = pp + PyBytes_GET_SIZE(pending);
    if (!plain_line(pp, pe, ms)) {
        /* not a row this code reads: the next line that needs its key or time is declined, and
         * a d event of it is written as the text it is (a JSON object, from Python) */
        pend->set = 2, pend->ts_state = 2;
        return out_put(&pend->row, pp, pe - pp);
    }
    int got = encode_key(&pend->key, &ex->rs.cs, ms);
    if (got < 0 || (ex->time_key.len &&
                    (pend->ts_state = encode_ts(&pend->ts, ms, ex->time_key.buf, ex->time_key.len)) < 0)) {
        PyErr_NoMemory();
        return -1;
    }
    if (put_compact(&pend->row, pp, pe) < 0) return -1;
    pend->set = got > 0 ? 1 : 2; /* 2: key values the texts cannot compare */
    return 0;
}

/* encode(chunk, start, kind_key, spellings, key_keys, time_key, source, now, split, pending)
 *     -> (output, position, lines, counts per kind, events (c, u, d), pending)
 * DebeziumEncoder.step over the lines from start until one it declines: a -U waits for the next
 * line; a -U then a +U (with --key: of equal key values) is one u event, unless split. time_key:
 * the time column as a JSON string (b"": none; ts_ms is now, the text of an integer); source: the
 * event's ',"source":{...}' or b"". pending (a -U's row, compact JSON text, or None) comes from
 * the call before and goes to the next. Declined: what parse_changes declines, and a line whose
 * event needs a time value that is not a plain integer, or key values the texts cannot compare. */
PyObject *encode(PyObject *self, PyObject *args) {
    UNUSED(self);
    Lines run = {0};
    Encode ex;
    PyObject *spellings, *key_keys, *pending_in, *no_extras, *result = NULL;
    memset(&ex, 0, sizeof ex);
    if (!PyArg_ParseTuple(args, "y*ny*O!O!y*y*y*pO", LINES_ARGS(&run), &PyTuple_Type, &spellings, &PyTuple_Type,
                          &key_keys, &ex.time_key, &ex.source, &ex.now, &ex.split, &pending_in))
        return NULL;
    int64_t unused_now;
    if (!(no_extras = PyTuple_New(0))) goto done;
    int spec_ok = record_spec(&ex.rs, &run.kind_key, spellings, key_keys, no_extras) == 0;
    Py_DECREF(no_extras);
    if (!spec_ok || lines_open(&run, 1) < 0) goto done;
    if (!plain_int(ex.now.buf, ex.now.len, &unused_now)) {
        PyErr_SetString(PyExc_ValueError, "encode: now must be the text of an integer");
        goto done;
    }
    if (pending_in != Py_None && pending_of(&ex, pending_in, run.ms[0]) < 0) goto done;
    if (lines_walk(&run, encode_line, &ex) == 0) {
        const Pending *pend = &ex.pend;
        const Py_ssize_t *c = run.counts, *ev = ex.events;
        PyObject *left = pend->set ? PyBytes_FromStringAndSize(pend->row.buf ? pend->row.buf : "", pend->row.len)
                                   : Py_NewRef(Py_None);
        if (left)
            result = Py_BuildValue("(y#nn(nnnn)(nnn)N)", run.out.buf ? run.out.buf : "", run.out.len, run.position,
                                   run.lines, c[0], c[1], c[2], c[3], ev[0], ev[1], ev[2], left);
    }
    lines_failed(&run);
done:
    PyMem_RawFree(ex.image.buf);
    PyMem_RawFree(ex.key.buf);
    PyMem_RawFree(ex.ts.buf);
    PyMem_RawFree(ex.pend.row.buf);
    PyMem_RawFree(ex.pend.key.buf);
    PyMem_RawFree(ex.pend.ts.buf);
    PyBuffer_Release(&ex.time_key);
    PyBuffer_Release(&ex.source);
    PyBuffer_Release(&ex.now);
    return lines_close(&run, result);
}
