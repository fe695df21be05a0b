/* The State type: the state of materialize without a key (a multiset) or with --dedup, of inspect
 * and of replay, applied from parse_records' records. Where the general state decides from
 * Python values, a State decides from canonical texts (values.c) and, where those do not tell,
 * asks Python through its handle (H_* codes); keyed changes follow the upsert rule of table.c.
 */
#include "kernel.h"

enum { CMD_MULTISET = 0, CMD_KEYED = 1, CMD_REPLAY = 2 };
#define F_DEDUP 1        /* materialize --dedup */
#define F_KEEP 2         /* keyed: keep deleted keys (inspect counts the distinct keys ever seen) */
#define F_TIME 4         /* inspect: extra 0 is the time column's value */
#define F_ORDER 8        /* replay: extra 0 is the --order-by column's value */
#define F_WINDOW 16      /* replay: the last extra is the time column's value */
#define F_SINCE 32       /* ... with --since */
#define F_UNTIL 64       /* ... with --until */
#define F_NET 128        /* replay --net */
#define F_RETRACT 256    /* replay --emit retract */
#define F_KEEP_NOOP 512  /* replay --keep-noop */
#define F_INT_BOUNDS 1024 /* --since/--until are integers: compared in C with plain integer values */
#define F_ALL 2047

/* Counters, in the order counters() gives them. */
enum {
    C_PLUS_I, C_MINUS_U, C_PLUS_U, C_MINUS_D, /* changes read, by kind */
    C_RETRACT, C_UPSERT,                       /* messages as retract / upsert (materialize, inspect) */
    C_DUPLICATES, C_CHANGES, C_TIME_MISSING,
    C_READ, C_WRITTEN, C_NOOPS, C_LATE, C_BEFORE, C_AFTER, C_IGNORED, C_OUT_RETRACT, C_OUT_UPSERT, /* replay */
    C_OUT_I, C_OUT_MU, C_OUT_U, C_OUT_D, /* rows written, by kind */
    N_COUNTERS
};
_Static_assert(C_UPSERT == C_RETRACT + 1, "upsert_apply counts messages in two counters side by side");

typedef struct {
    int set, is_int;
    int64_t i;
    PyObject *text; /* bytes, when not an integer */
} TimeEnd;

typedef struct {
    PyObject_HEAD
    int command, flags, n_extras, busy;
    Tab tab, at_since; /* at_since: replay --net's table at --since */
    int64_t since, until;
    char *first[4];
    Py_ssize_t first_len[4];
    Py_ssize_t c[N_COUNTERS];
    int prev_kind; /* multiset --dedup: the previous change (-1: none) */
    Out prev_key, prev_row;
    TimeEnd tmin, tmax; /* inspect: the time range */
    Scratch *scratch;
} State;

/* State(command, flags, n_extras, firsts, since, until) */
static PyObject *state_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"command", "flags", "n_extras", "firsts", "since", "until", NULL};
    int command, flags, n_extras;
    PyObject *firsts;
    long long since = 0, until = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiiO!|LL:State", names, &command, &flags, &n_extras, &PyTuple_Type,
                                     &firsts, &since, &until))
        return NULL;
    if (command < CMD_MULTISET || command > CMD_REPLAY || flags < 0 || flags > F_ALL || n_extras < 0 ||
        n_extras > MAX_EXTRAS) {
        PyErr_SetString(PyExc_ValueError, "State: command 0 to 2, flags 0 to 2047, n_extras 0 to 16");
        return NULL;
    }
    if (PyTuple_GET_SIZE(firsts) != 4) {
        PyErr_SetString(PyExc_ValueError, "State: four first members expected");
        return NULL;
    }
    for (int i = 0; i < 4; i++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(firsts, i))) {
            PyErr_SetString(PyExc_TypeError, "State: first members: bytes expected");
            return NULL;
        }
    /* The extras a command reads must be there: time (1), order (1) and the window's time (last). */
    int needed = ((flags & F_TIME) || (flags & F_ORDER)) + ((flags & F_WINDOW) ? 1 : 0);
    if (n_extras < needed) {
        PyErr_SetString(PyExc_ValueError, "State: fewer extra columns than its flags read");
        return NULL;
    }
    State *st = (State *)type->tp_alloc(type, 0);
    if (!st) return NULL;
    st->command = command, st->flags = flags, st->n_extras = n_extras;
    st->since = since, st->until = until, st->prev_kind = -1;
    for (int i = 0; i < 4; i++) {
        PyObject *b = PyTuple_GET_ITEM(firsts, i);
        Py_ssize_t n = PyBytes_GET_SIZE(b);
        st->first[i] = PyMem_Malloc((size_t)n + 1);
        if (!st->first[i]) {
            Py_DECREF(st);
            return PyErr_NoMemory();
        }
        memcpy(st->first[i], PyBytes_AS_STRING(b), (size_t)n);
        st->first_len[i] = n;
    }
    st->scratch = PyMem_RawCalloc(1, sizeof(Scratch));
    if (!st->scratch) {
        Py_DECREF(st);
        return PyErr_NoMemory();
    }
    if (tab_init(&st->tab) < 0 || ((flags & F_NET) && tab_init(&st->at_since) < 0)) {
        Py_DECREF(st);
        return NULL;
    }
    return (PyObject *)st;
}

static void state_dealloc(State *st) {
    tab_free(&st->tab);
    tab_free(&st->at_since);
    for (int i = 0; i < 4; i++) PyMem_Free(st->first[i]);
    PyMem_RawFree(st->prev_key.buf);
    PyMem_RawFree(st->prev_row.buf);
    Py_XDECREF(st->tmin.text);
    Py_XDECREF(st->tmax.text);
    scratch_free(st->scratch);
    Py_TYPE(st)->tp_free((PyObject *)st);
}

/* Methods refuse a State that is applying (its handle may run any Python code). */
static int state_free_to_use(State *st) {
    if (st->busy) {
        PyErr_SetString(PyExc_RuntimeError, "State: in use (called from its own handle)");
        return 0;
    }
    return 1;
}

/* handle(code, line, offset, kind, a, b) -> its int; -1 with an exception. a, b: bytes or None. */
long ask(PyObject *handle, int code, const Rec *r, const char *a, Py_ssize_t alen, const char *b,
                Py_ssize_t blen) {
    PyObject *ao = a ? PyBytes_FromStringAndSize(a, alen) : Py_NewRef(Py_None);
    PyObject *bo = b ? PyBytes_FromStringAndSize(b, blen) : Py_NewRef(Py_None);
    PyObject *got = NULL;
    if (ao && bo)
        got = PyObject_CallFunction(handle, "iIIiOO", code, (unsigned int)r->line, (unsigned int)r->offset, r->kind, ao,
                                    bo);
    Py_XDECREF(ao);
    Py_XDECREF(bo);
    if (!got) return -1;
    long value = PyLong_Check(got) ? PyLong_AsLong(got) : -1;
    Py_DECREF(got);
    if (value == -1 && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "State: the handle must return an int >= 0");
    if (value < -1) {
        PyErr_SetString(PyExc_ValueError, "State: the handle must return an int >= 0");
        value = -1;
    }
    return value;
}

/* Whether two rows are equal dicts, asking Python where the texts do not tell: 1, 0, -1. */
static int state_rows_equal(State *st, PyObject *handle, const Rec *r, PyObject *a, const char *b, Py_ssize_t blen) {
    int eq = rows_equal(st->scratch, PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a), b, blen);
    if (eq < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (eq != 2) return eq;
    long got = ask(handle, H_EQUAL, r, PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a), b, blen);
    return got < 0 ? -1 : got != 0;
}

/* The entry of a record's key: live (row set, in a keeping table perhaps DELETED), or NULL. */
static Entry *state_find(Tab *t, const Rec *r) { return table_find(t, r->key, r->key_len, r->hash); }

/* Put the row of r for its key (table_put). */
static int state_put(Tab *t, Entry *e, const Rec *r) {
    return table_put(t, e, r->key, r->key_len, r->hash, r->row, r->row_len);
}

/* A multiset change; 0, or -1 with an exception. */
static int apply_multiset(State *st, const Rec *r, PyObject *handle) {
    Tab *t = &st->tab;
    if (st->flags & F_DEDUP) {
        if (st->prev_kind == r->kind && st->prev_key.len == r->key_len &&
            !memcmp(st->prev_key.buf, r->key, (size_t)r->key_len)) {
            st->c[C_DUPLICATES]++;
            return 0;
        }
        st->prev_kind = r->kind;
        st->prev_key.len = st->prev_row.len = 0;
        if (out_put(&st->prev_key, r->key, r->key_len) < 0 || out_put(&st->prev_row, r->row, r->row_len) < 0) {
            st->prev_kind = -1;
            return -1;
        }
    }
    Entry *e = state_find(t, r);
    if (r->kind == 0 || r->kind == 2) {
        if (e) {
            e->aux++;
        } else {
            if (state_put(t, NULL, r) < 0) return -1;
            t->entries[t->n_entries - 1].aux = 1;
        }
        st->c[C_RETRACT]++, st->c[C_UPSERT]++;
        return 0;
    }
    if (!e) return ask(handle, H_ABSENT, r, NULL, 0, r->row, r->row_len) < 0 ? -1 : 0;
    if (--e->aux == 0) table_delete(t, e, 0);
    st->c[C_RETRACT]++;
    if (r->kind == 3) st->c[C_UPSERT]++;
    return 0;
}

/* A keyed change (materialize --dedup, inspect); 0 or -1. */
static int apply_keyed(State *st, const Rec *r, PyObject *handle) {
    Tab *t = &st->tab;
    Entry *e = state_find(t, r);
    int live = e && !(e->flags & DELETED), stored = live && !(e->flags & RETRACTED);
    if (st->flags & F_DEDUP) { /* Flink's ChangelogNormalize: no finding, duplicates dropped */
        if (r->kind == 1 || (r->kind == 3 && !stored)) {
            if (!stored) st->c[C_DUPLICATES]++;
            return 0;
        }
        if (r->kind == 3) {
            table_delete(t, e, 0);
            st->c[C_RETRACT]++, st->c[C_UPSERT]++;
            return 0;
        }
        if (stored) {
            int eq = state_rows_equal(st, handle, r, e->row, r->row, r->row_len);
            if (eq < 0) return -1;
            if (eq) {
                st->c[C_DUPLICATES]++;
                return 0;
            }
            st->c[C_RETRACT] += 2, st->c[C_UPSERT]++;
        } else {
            st->c[C_RETRACT]++, st->c[C_UPSERT]++;
        }
        return state_put(t, e, r);
    }
    switch (upsert_finding(live ? e : NULL, r->kind, r->row, r->row_len)) {
    case UPSERT_EXISTS: {
        long go = ask(handle, H_EXISTS, r, PyBytes_AS_STRING(e->row), PyBytes_GET_SIZE(e->row), r->row, r->row_len);
        if (go <= 0) return (int)go;
        break;
    }
    case UPSERT_ABSENT:
        if (ask(handle, H_ABSENT, r, NULL, 0, r->row, r->row_len) < 0) return -1;
        if ((st->flags & F_KEEP) && !e) { /* a key seen (inspect counts it), deleted at once */
            if (state_put(t, NULL, r) < 0) return -1;
            table_delete(t, &t->entries[t->n_entries - 1], 1);
        }
        return 0;
    case UPSERT_DIFFERS: {
        long go = ask(handle, H_DIFFERS, r, PyBytes_AS_STRING(e->row), PyBytes_GET_SIZE(e->row), r->row, r->row_len);
        if (go <= 0) return (int)go;
        break;
    }
    default: break;
    }
    return upsert_apply(t, e, r->kind, r->key, r->key_len, r->hash, r->row, r->row_len, (st->flags & F_KEEP) != 0,
                        &st->c[C_RETRACT]);
}

/* inspect's time range: a value against the current end (1: it replaces it). */
static int time_beats(const TimeEnd *end, int is_int, int64_t i, const char *v, Py_ssize_t len, int lower,
                      PyObject *handle, const Rec *r) {
    if (!end->set) return 1;
    if (is_int && end->is_int) return lower ? i < end->i : i > end->i;
    char buf[24];
    const char *other = NULL;
    Py_ssize_t other_len = 0;
    if (end->is_int) {
        other_len = snprintf(buf, sizeof buf, "%lld", (long long)end->i);
        other = buf;
    } else {
        other = PyBytes_AS_STRING(end->text), other_len = PyBytes_GET_SIZE(end->text);
    }
    /* lower: v sorts before the minimum; else the maximum sorts before v */
    long got = lower ? ask(handle, H_TIME_LESS, r, v, len, other, other_len)
                     : ask(handle, H_TIME_LESS, r, other, other_len, v, len);
    return got < 0 ? -1 : got != 0;
}

static int time_take(TimeEnd *end, int is_int, int64_t i, const char *v, Py_ssize_t len) {
    PyObject *text = NULL;
    if (!is_int && !(text = PyBytes_FromStringAndSize(v, len))) return -1;
    Py_XSETREF(end->text, text);
    end->set = 1, end->is_int = is_int, end->i = i;
    return 0;
}

static int inspect_time(State *st, const Rec *r, PyObject *handle) {
    const char *v = r->extra[0];
    Py_ssize_t len = r->extra_len[0];
    if (len < 0) return ask(handle, H_NO_TIME, r, NULL, 0, r->row, r->row_len) < 0 ? -1 : 0;
    if (len == 4 && !memcmp(v, "null", 4)) {
        st->c[C_TIME_MISSING]++;
        return 0;
    }
    int64_t i = 0;
    int is_int = plain_int(v, len, &i);
    int beats = time_beats(&st->tmin, is_int, i, v, len, 1, handle, r);
    if (beats < 0 || (beats && time_take(&st->tmin, is_int, i, v, len) < 0)) return -1;
    beats = time_beats(&st->tmax, is_int, i, v, len, 0, handle, r);
    if (beats < 0 || (beats && time_take(&st->tmax, is_int, i, v, len) < 0)) return -1;
    return 0;
}

/* replay: one row written, "{" + kind member + the row's members + "}\n". */
static int emit_row(State *st, Out *out, int kind, const char *row, Py_ssize_t len) {
    if (out_put(out, "{", 1) < 0 || out_put(out, st->first[kind], st->first_len[kind]) < 0) return -1;
    if (len > 2 && out_put(out, ",", 1) < 0) return -1;
    if (len > 2 && out_put(out, row + 1, len - 2) < 0) return -1;
    if (out_put(out, "}\n", 2) < 0) return -1;
    st->c[C_OUT_I + kind]++;
    st->c[C_WRITTEN]++;
    st->c[C_OUT_RETRACT]++;
    if (kind != 1) st->c[C_OUT_UPSERT]++;
    return 0;
}

/* KeyedReplay.apply on a table; 0, 1 (the record rejected), -1. counted: the main state (--net's
 * state at --since keeps counts of its own, which nothing reads). */
static int replay_apply(State *st, Tab *t, const Rec *r, int emit, int counted, PyObject *handle, Out *out) {
    Entry *e = state_find(t, r);
    int64_t order = 0;
    int order_int = 0;
    if (st->flags & F_ORDER) {
        const char *v = r->extra[0];
        Py_ssize_t len = r->extra_len[0];
        if (len < 0) {
            long got = ask(handle, H_NO_ORDER, r, NULL, 0, r->row, r->row_len);
            return got < 0 ? -1 : 1;
        }
        order_int = plain_int(v, len, &order);
        if (e && (e->flags & HAS_ORDER)) {
            int late;
            if (order_int && (e->flags & ORDER_INT)) {
                late = order < e->aux;
            } else {
                char buf[24];
                const char *seen = buf;
                Py_ssize_t seen_len;
                if (e->flags & ORDER_INT) seen_len = snprintf(buf, sizeof buf, "%lld", (long long)e->aux);
                else seen = PyBytes_AS_STRING(e->order), seen_len = PyBytes_GET_SIZE(e->order);
                long got = ask(handle, H_LATE, r, seen, seen_len, v, len);
                if (got < 0) return -1;
                late = got != 0;
            }
            if (late) {
                st->c[C_LATE] += counted;
                return 0;
            }
        }
    }
    if (r->kind == 1) {
        st->c[C_IGNORED] += counted;
        return 0;
    }
    if (r->kind == 3) {
        if (!e) {
            st->c[C_IGNORED] += counted;
            return 0;
        }
        if (emit && emit_row(st, out, 3, PyBytes_AS_STRING(e->row), PyBytes_GET_SIZE(e->row)) < 0) return -1;
        table_delete(t, e, 0);
        return 0;
    }
    PyObject *stored = e ? Py_NewRef(e->row) : NULL;
    int result = -1;
    if (state_put(t, e, r) < 0) goto done;
    e = state_find(t, r);
    if (!e) { /* it was just put */
        PyErr_SetString(PyExc_SystemError, "State: a row put is not found");
        goto done;
    }
    if (st->flags & F_ORDER) { /* a null order value is as none (Python: _order.get is None) */
        int null = r->extra_len[0] == 4 && !memcmp(r->extra[0], "null", 4);
        PyObject *text = NULL;
        if (!order_int && !null && !(text = PyBytes_FromStringAndSize(r->extra[0], r->extra_len[0]))) goto done;
        Py_XSETREF(e->order, text);
        e->aux = order;
        e->flags = (e->flags & ~(ORDER_INT | HAS_ORDER)) | (null ? 0 : HAS_ORDER) | (order_int ? ORDER_INT : 0);
    }
    if (!stored) {
        result = emit && emit_row(st, out, 0, r->row, r->row_len) < 0 ? -1 : 0;
        goto done;
    }
    if (!(st->flags & F_KEEP_NOOP)) {
        int eq = state_rows_equal(st, handle, r, stored, r->row, r->row_len);
        if (eq < 0) goto done;
        if (eq) {
            st->c[C_NOOPS] += counted;
            result = 0;
            goto done;
        }
    }
    if (!emit) {
        result = 0;
        goto done;
    }
    if (st->flags & F_RETRACT) {
        if (emit_row(st, out, 1, PyBytes_AS_STRING(stored), PyBytes_GET_SIZE(stored)) < 0 ||
            emit_row(st, out, 2, r->row, r->row_len) < 0)
            goto done;
    } else {
        if (emit_row(st, out, 2, r->row, r->row_len) < 0) goto done;
        st->c[C_OUT_RETRACT]++; /* the -U a retract encoding would add */
    }
    result = 0;
done:
    Py_XDECREF(stored);
    return result;
}

/* Replayer.step: the window, then the state(s); 0 or -1. */
static int apply_replay(State *st, const Rec *r, PyObject *handle, Out *out) {
    st->c[C_READ]++;
    int emit = 1;
    if (st->flags & F_WINDOW) {
        int w = st->n_extras - 1;
        const char *v = r->extra[w];
        Py_ssize_t len = r->extra_len[w];
        if (len < 0) return ask(handle, H_NO_WINDOW, r, NULL, 0, r->row, r->row_len) < 0 ? -1 : 0;
        int64_t t = 0;
        long bits;
        if ((st->flags & F_INT_BOUNDS) && plain_int(v, len, &t)) {
            bits = (((st->flags & F_UNTIL) && t > st->until) ? 1 : 0) | (((st->flags & F_SINCE) && t <= st->since) ? 2 : 0);
        } else if ((bits = ask(handle, H_WINDOW, r, NULL, 0, v, len)) < 0) {
            return -1;
        }
        if ((bits & 1) && (st->flags & F_UNTIL)) {
            st->c[C_AFTER]++;
            return 0;
        }
        if ((bits & 2) && (st->flags & F_SINCE)) {
            if (st->flags & F_NET) {
                int got = replay_apply(st, &st->at_since, r, 0, 0, handle, out);
                if (got) return got < 0 ? -1 : 0;
            } else {
                st->c[C_BEFORE]++;
            }
            emit = 0;
        }
    }
    if (st->flags & F_NET) emit = 0;
    return replay_apply(st, &st->tab, r, emit, 1, handle, out) < 0 ? -1 : 0;
}

/* apply(records, start, handle) -> output (replay's rows; b"" otherwise)
 * The records (parse_records' buffer; read-only) from byte start on, applied in order; handle is
 * asked what the texts do not tell (H_* codes). The whole buffer is checked first: a ValueError
 * leaves the state as it was. On an exception from the handle the state holds the records
 * before that one. */
static PyObject *state_apply(State *st, PyObject *args) {
    Py_buffer packed;
    Py_ssize_t start, n_at = 0;
    PyObject *handle, *result_obj = NULL;
    RecAt *at = NULL;
    Out out = {0};
    if (!PyArg_ParseTuple(args, "y*nO", &packed, &start, &handle)) return NULL;
    if (!state_free_to_use(st)) goto done;
    if (!packed.readonly) {
        PyErr_SetString(PyExc_TypeError, "State.apply: the records must be read-only (bytes)");
        goto done;
    }
    if (!PyCallable_Check(handle)) {
        PyErr_SetString(PyExc_TypeError, "State.apply: handle must be callable");
        goto done;
    }
    const char *base = packed.buf, *end = base + packed.len;
    if (start < 0 || start > packed.len) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside the records (0 to %zd)", start, packed.len);
        goto done;
    }
    if (check_records(base, end, start, st->n_extras, &at, &n_at) < 0) goto done;
    st->busy = 1;
    Rec r;
    int failed = 0;
    Tab *t = &st->tab;
    for (Py_ssize_t i = 0; i < n_at && !failed; i++) {
        /* The table's memory is far and the keys ahead are known: their index slots are fetched
         * ahead, then their entries, then their rows (the table is read again each time: an
         * append may have rebuilt it; a stale guess only costs a useless fetch). */
        if (i + 12 < n_at) PREFETCH(&t->index[(Py_ssize_t)(at[i + 12].hash & (uint64_t)t->mask)]);
        if (i + 6 < n_at) {
            int32_t ahead = t->index[(Py_ssize_t)(at[i + 6].hash & (uint64_t)t->mask)];
            if (ahead >= 0) PREFETCH(&t->entries[ahead]);
        }
        if (i + 2 < n_at) { /* its row, and its key where it is not kept in the entry */
            int32_t ahead = t->index[(Py_ssize_t)(at[i + 2].hash & (uint64_t)t->mask)];
            if (ahead >= 0 && t->entries[ahead].row) PREFETCH(t->entries[ahead].row);
            if (ahead >= 0 && t->entries[ahead].key_len > INLINE_KEY) PREFETCH(t->entries[ahead].key.heap);
        }
        if (!read_rec(at[i].p, end, st->n_extras, &r)) { /* checked: never */
            PyErr_SetString(PyExc_SystemError, "State.apply: a record changed");
            failed = 1;
            break;
        }
        r.hash = at[i].hash;
        if (st->command != CMD_REPLAY) {
            st->c[C_PLUS_I + r.kind]++;
            st->c[C_CHANGES]++;
        }
        if (st->command == CMD_MULTISET) failed = apply_multiset(st, &r, handle) < 0;
        else if (st->command == CMD_KEYED) failed = apply_keyed(st, &r, handle) < 0;
        else failed = apply_replay(st, &r, handle, &out) < 0;
        if (!failed && (st->flags & F_TIME) && st->command != CMD_REPLAY) failed = inspect_time(st, &r, handle) < 0;
    }
    st->busy = 0;
    if (!failed) result_obj = PyBytes_FromStringAndSize(out.buf ? out.buf : "", out.len);
done:
    PyMem_RawFree(at);
    PyMem_RawFree(out.buf);
    PyBuffer_Release(&packed);
    return result_obj;
}

/* net(handle) -> output: replay --net's change from the table at --since to the table now. */
static PyObject *state_net(State *st, PyObject *handle) {
    if (!state_free_to_use(st)) return NULL;
    if (st->command != CMD_REPLAY || !(st->flags & F_NET)) {
        PyErr_SetString(PyExc_ValueError, "State.net: a replay --net state only");
        return NULL;
    }
    if (!PyCallable_Check(handle)) {
        PyErr_SetString(PyExc_TypeError, "State.net: handle must be callable");
        return NULL;
    }
    Out out = {0};
    Rec r;
    memset(&r, 0, sizeof r);
    int failed = 0, retract = (st->flags & F_RETRACT) != 0;
    Py_ssize_t updates = 0;
    st->busy = 1;
    for (Py_ssize_t i = 0; i < st->at_since.n_entries && !failed; i++) {
        Entry *old = &st->at_since.entries[i];
        if (!old->row) continue;
        Entry *now = table_find(&st->tab, entry_key(old), (Py_ssize_t)old->key_len, old->hash);
        if (!now) {
            failed = emit_row(st, &out, 3, PyBytes_AS_STRING(old->row), PyBytes_GET_SIZE(old->row)) < 0;
            continue;
        }
        int eq = state_rows_equal(st, handle, &r, old->row, PyBytes_AS_STRING(now->row), PyBytes_GET_SIZE(now->row));
        if (eq < 0) {
            failed = 1;
        } else if (!eq) {
            if (retract)
                failed = emit_row(st, &out, 1, PyBytes_AS_STRING(old->row), PyBytes_GET_SIZE(old->row)) < 0;
            if (!failed) failed = emit_row(st, &out, 2, PyBytes_AS_STRING(now->row), PyBytes_GET_SIZE(now->row)) < 0;
            updates++;
        }
    }
    for (Py_ssize_t i = 0; i < st->tab.n_entries && !failed; i++) {
        Entry *now = &st->tab.entries[i];
        if (!now->row || table_find(&st->at_since, entry_key(now), (Py_ssize_t)now->key_len, now->hash)) continue;
        failed = emit_row(st, &out, 0, PyBytes_AS_STRING(now->row), PyBytes_GET_SIZE(now->row)) < 0;
    }
    st->busy = 0;
    if (!retract) st->c[C_OUT_RETRACT] += updates; /* no -U in the output: each +U would add one */
    PyObject *result_obj = failed ? NULL : PyBytes_FromStringAndSize(out.buf ? out.buf : "", out.len);
    PyMem_RawFree(out.buf);
    return result_obj;
}

/* texts() -> the rows in first-insertion order: each multiset row as often as it counts; keyed
 * rows not retracted (nor deleted). */
static PyObject *state_texts(State *st, PyObject *unused) {
    UNUSED(unused);
    if (!state_free_to_use(st)) return NULL;
    PyObject *out = PyList_New(0);
    Tab *t = &st->tab;
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        Entry *e = &t->entries[i];
        if (!e->row || (e->flags & (RETRACTED | DELETED))) continue;
        int64_t times = st->command == CMD_MULTISET ? e->aux : 1;
        for (int64_t k = 0; out && k < times; k++)
            if (PyList_Append(out, e->row) < 0) Py_CLEAR(out);
    }
    return out;
}

/* items(which=0) -> [(key, row, flags, count or order)] of every entry with a row, in order;
 * which 1: replay --net's table at --since. order: the order value (an int, or its text). */
static PyObject *state_items(State *st, PyObject *args) {
    int which = 0;
    if (!PyArg_ParseTuple(args, "|i", &which)) return NULL;
    if (!state_free_to_use(st)) return NULL;
    if (which != 0 && !(which == 1 && (st->flags & F_NET))) {
        PyErr_SetString(PyExc_ValueError, "State.items: 0, or 1 for --net's table at --since");
        return NULL;
    }
    Tab *t = which ? &st->at_since : &st->tab;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t->n_entries; i++) {
        const Entry *e = &t->entries[i];
        if (!e->row) continue;
        PyObject *extra;
        if (st->command == CMD_REPLAY)
            extra = !(e->flags & HAS_ORDER) ? Py_NewRef(Py_None)
                    : (e->flags & ORDER_INT) ? PyLong_FromLongLong(e->aux) : Py_NewRef(e->order);
        else
            extra = PyLong_FromLongLong(e->aux);
        PyObject *key = PyBytes_FromStringAndSize(entry_key(e), (Py_ssize_t)e->key_len);
        PyObject *item = key && extra ? Py_BuildValue("(OOIO)", key, e->row, (unsigned int)e->flags, extra) : NULL;
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
        Py_XDECREF(key);
        Py_XDECREF(extra);
    }
    return out;
}

/* counters() -> the N_COUNTERS counts, in the order of the C_* names. */
static PyObject *state_counters(State *st, PyObject *unused) {
    UNUSED(unused);
    PyObject *out = PyTuple_New(N_COUNTERS);
    for (int i = 0; out && i < N_COUNTERS; i++) {
        PyObject *n = PyLong_FromSsize_t(st->c[i]);
        if (!n) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, n);
    }
    return out;
}

/* previous() -> (kind, row) of the last change a multiset --dedup saw, or None. */
static PyObject *state_previous(State *st, PyObject *unused) {
    UNUSED(unused);
    if (st->prev_kind < 0) Py_RETURN_NONE;
    return Py_BuildValue("(iy#)", st->prev_kind, st->prev_row.buf ? st->prev_row.buf : "", st->prev_row.len);
}

static PyObject *time_end(const TimeEnd *end) {
    if (!end->set) Py_RETURN_NONE;
    return end->is_int ? PyLong_FromLongLong(end->i) : Py_NewRef(end->text);
}

/* time_range() -> (min, max): each None, an int, or a value's JSON text (bytes). */
static PyObject *state_time_range(State *st, PyObject *unused) {
    UNUSED(unused);
    PyObject *lo = time_end(&st->tmin), *hi = lo ? time_end(&st->tmax) : NULL;
    PyObject *out = hi ? PyTuple_Pack(2, lo, hi) : NULL;
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    return out;
}

/* (entries, live): the keys with an entry (a keeping table: every key ever seen) and the live rows. */
static PyObject *state_sizes(State *st, PyObject *unused) {
    UNUSED(unused);
    Py_ssize_t rows = 0;
    if (st->command == CMD_MULTISET) {
        for (Py_ssize_t i = 0; i < st->tab.n_entries; i++)
            if (st->tab.entries[i].row) rows += (Py_ssize_t)st->tab.entries[i].aux;
    } else {
        for (Py_ssize_t i = 0; i < st->tab.n_entries; i++) {
            const Entry *e = &st->tab.entries[i];
            rows += e->row && !(e->flags & (RETRACTED | DELETED));
        }
    }
    Py_ssize_t keys = 0;
    for (Py_ssize_t i = 0; i < st->tab.n_entries; i++) keys += st->tab.entries[i].row != NULL;
    return Py_BuildValue("(nn)", keys, rows);
}

static PyMethodDef state_methods[] = {
    {"apply", (PyCFunction)state_apply, METH_VARARGS, "Apply parse_records' records from a byte offset on."},
    {"net", (PyCFunction)state_net, METH_O, "replay --net: the rows from the table at --since to now."},
    {"texts", (PyCFunction)state_texts, METH_NOARGS, "The rows, in first-insertion order."},
    {"items", (PyCFunction)state_items, METH_VARARGS, "(key, row, flags, count or order) of each entry."},
    {"counters", (PyCFunction)state_counters, METH_NOARGS, "The counts, in the order of the C_* names."},
    {"previous", (PyCFunction)state_previous, METH_NOARGS, "multiset --dedup: the last change seen."},
    {"time_range", (PyCFunction)state_time_range, METH_NOARGS, "inspect: the time range (min, max)."},
    {"sizes", (PyCFunction)state_sizes, METH_NOARGS, "(keys with an entry, live rows)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.State",
    .tp_doc = "The state of materialize (multiset, --dedup), inspect or replay, applied from records.",
    .tp_basicsize = sizeof(State),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = state_new,
    .tp_dealloc = (destructor)state_dealloc,
    .tp_methods = state_methods,
};
