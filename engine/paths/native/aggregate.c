/* The Aggregate type: GroupAggregate (core/aggregate.py) over parse_records' records, for
 * COUNT(*), COUNT, SUM, AVG, MIN and MAX of columns whose values are plain integers (or null):
 * Flink's update log written as bytes, the state the generated code keeps kept alike (a record
 * count, a running sum with its count, MIN and MAX with a map value -> count, the operands'
 * multiset that tells a retraction of a row never accumulated). A record this code cannot take
 * as the generated code would (a value not an integer, a group value the texts cannot compare)
 * stops the call: Python takes the state over (items()) and that record on. Sums are 128-bit:
 * no sum of 64-bit values overflows them.
 */
#include "kernel.h"

#if HAVE_AGGREGATE
typedef __int128_t wide;

enum { AG_COUNT_STAR = 0, AG_COUNT, AG_SUM, AG_AVG, AG_MIN, AG_MAX };
#define AG_RETRACTING 1 /* the input can retract: the retracting functions (and MIN/MAX maps) */
#define AG_TRACK 2      /* keep the operands' multiset (findings of unmatched retractions) */
#define AG_EMIT_RETRACT 4
#define AG_ALL 7
#define MAX_AGGS 64

/* A map value -> count (int64 keys), open addressing with backward-shift deletion; a key and its
 * count side by side (one cache line). */
typedef struct {
    int64_t key, count; /* count 0: an empty slot */
} Pair;

typedef struct {
    Pair *pair;
    uint32_t room, used; /* room: 0 or a power of two */
} Counts64;

static uint64_t int_hash(int64_t k) { return fold((uint64_t)k ^ hash_key[0], hash_key[1] ^ 0x9e3779b97f4a7c15ULL); }

static void c64_free(Counts64 *m) {
    PyMem_Free(m->pair);
    m->pair = NULL;
    m->room = m->used = 0;
}

static void c64_clear(Counts64 *m) {
    if (m->room) memset(m->pair, 0, (size_t)m->room * sizeof(Pair));
    m->used = 0;
}

static int c64_grow(Counts64 *m) {
    uint32_t room = m->room ? 2 * m->room : 8;
    if (room > (1u << 30)) return -1;
    Pair *pair = PyMem_Calloc(room, sizeof(Pair));
    if (!pair) return -1;
    for (uint32_t i = 0; i < m->room; i++) {
        if (!m->pair[i].count) continue;
        uint32_t s = (uint32_t)(int_hash(m->pair[i].key) & (room - 1));
        while (pair[s].count) s = (s + 1) & (room - 1);
        pair[s] = m->pair[i];
    }
    PyMem_Free(m->pair);
    m->pair = pair, m->room = room;
    return 0;
}

/* The slot of k: its own, or the empty one where it would go. */
static uint32_t c64_slot(const Counts64 *m, int64_t k) {
    uint32_t s = (uint32_t)(int_hash(k) & (m->room - 1));
    while (m->pair[s].count && m->pair[s].key != k) s = (s + 1) & (m->room - 1);
    return s;
}

static int64_t c64_get(const Counts64 *m, int64_t k) { return m->room ? m->pair[c64_slot(m, k)].count : 0; }

/* Set k's count (0 deletes it). 0, or -1 when out of memory (the map as it was). */
static int c64_set(Counts64 *m, int64_t k, int64_t count) {
    if (count == 0) {
        if (!m->room) return 0;
        uint32_t s = c64_slot(m, k);
        if (!m->pair[s].count) return 0;
        m->pair[s].count = 0;
        m->used--;
        for (uint32_t j = (s + 1) & (m->room - 1); m->pair[j].count; j = (j + 1) & (m->room - 1)) {
            uint32_t home = (uint32_t)(int_hash(m->pair[j].key) & (m->room - 1));
            /* move j back to the hole when its home is not in (s, j] */
            if (((j - home) & (m->room - 1)) >= ((j - s) & (m->room - 1))) {
                m->pair[s] = m->pair[j];
                m->pair[j].count = 0;
                s = j;
            }
        }
        return 0;
    }
    if ((m->used + 1) * 2 > m->room && c64_grow(m) < 0) return -1;
    uint32_t s = c64_slot(m, k);
    if (!m->pair[s].count) m->used++;
    m->pair[s].key = k, m->pair[s].count = count;
    return 0;
}

/* min or max of the keys (Python's min(m) / max(m)); the map is not empty. */
static int64_t c64_pick(const Counts64 *m, int lowest) {
    int found = 0;
    int64_t best = 0;
    for (uint32_t i = 0; i < m->room; i++)
        if (m->pair[i].count && (!found || (lowest ? m->pair[i].key < best : m->pair[i].key > best)))
            best = m->pair[i].key, found = 1;
    return best;
}

/* One aggregate's state (the generated code's slots). */
typedef struct {
    wide sum;
    int64_t cnt, s, size;
    int null; /* SUM: no value yet (None); MIN/MAX: s is None */
} AggSlot;

/* A group. Its maps value -> count are per column: the generated code keeps one per MIN/MAX and
 * one for the operands (the tracker), but each sees the same values added and removed in the
 * same order (the one column's), so they are one map here, given to each when taken over. */
typedef struct {
    int64_t count;          /* the record count (COUNT(*)) */
    PyObject *values;       /* the group's values as first read: a JSON array's text */
    PyObject *prefix;       /* ... and as the output's first members: "g1":v1,"g2":v2 */
    int64_t null_operands;  /* the tracker's count of null operands (the map holds the others) */
    wide *old;              /* the result last emitted, per aggregate */
    unsigned char *old_null;
    Counts64 *maps;         /* per map column, after the slots */
    AggSlot slot[];
} Group;

typedef struct {
    PyObject_HEAD
    int flags, n_group, n_aggs, n_extras, track_arg, checked, busy, has_count_star;
    int func[MAX_AGGS], arg[MAX_AGGS];
    int n_maps, map_col[MAX_EXTRAS], map_of[MAX_AGGS], track_map; /* maps: per column, -1 none */
    char *name[MAX_AGGS];
    Py_ssize_t name_len[MAX_AGGS];
    char *group_name[MAX_EXTRAS];
    Py_ssize_t group_name_len[MAX_EXTRAS];
    char *first[4];
    Py_ssize_t first_len[4];
    Tab tab;           /* group key -> entry; aux: the group's index */
    Group **groups;
    Py_ssize_t n_groups, room;
    Py_ssize_t *free_list, n_free;
    Group *pool[64]; /* groups deleted, kept for the next ones (an update of a group by its key
                        deletes it and makes it again: no allocation) */
    int n_pool;
    Out values, prefix; /* scratch */
    Py_ssize_t c[6]; /* inserted, updated, deleted, unchanged, filtered, skipped (the generated code's C) */
} Aggregate;

static void group_free(Aggregate *ag, Group *g) {
    if (!g) return;
    Py_XDECREF(g->values);
    Py_XDECREF(g->prefix);
    for (int i = 0; i < ag->n_maps; i++) c64_free(&g->maps[i]);
    PyMem_Free(g->old);
    PyMem_Free(g->old_null);
    PyMem_Free(g);
}

static char *copy_bytes(PyObject *b, Py_ssize_t *len) {
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    char *out = PyMem_Malloc((size_t)n + 1);
    if (!out) return NULL;
    memcpy(out, PyBytes_AS_STRING(b), (size_t)n);
    *len = n;
    return out;
}

/* Aggregate(flags, n_group, group_names, funcs, args, names, track_arg, firsts)
 *   the records' extras are the group-by columns (n_group, first) then the argument columns;
 *   funcs: AG_* per aggregate in output order; args: each one's extra (-1: COUNT(*)); names:
 *   the output names of the group-by columns then of the aggregates, as JSON strings;
 *   track_arg: the extra of the one operand the tracker counts (-1: none). */
static PyObject *aggregate_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    UNUSED(kwargs);
    int flags, n_group, track_arg;
    PyObject *group_names, *funcs, *fargs, *names, *firsts;
    if (!PyArg_ParseTuple(args, "iiO!O!O!O!iO!:Aggregate", &flags, &n_group, &PyTuple_Type, &group_names, &PyTuple_Type,
                          &funcs, &PyTuple_Type, &fargs, &PyTuple_Type, &names, &track_arg, &PyTuple_Type, &firsts))
        return NULL;
    Py_ssize_t n_aggs = PyTuple_GET_SIZE(funcs);
    if (flags < 0 || flags > AG_ALL || n_group < 0 || n_group > MAX_EXTRAS || PyTuple_GET_SIZE(group_names) != n_group ||
        n_aggs > MAX_AGGS || PyTuple_GET_SIZE(fargs) != n_aggs || PyTuple_GET_SIZE(names) != n_aggs ||
        PyTuple_GET_SIZE(firsts) != 4 || (n_aggs == 0 && n_group == 0)) {
        PyErr_SetString(PyExc_ValueError, "Aggregate: flags 0 to 7, group-by columns 0 to 16, names, funcs and args alike");
        return NULL;
    }
    Aggregate *ag = (Aggregate *)type->tp_alloc(type, 0);
    if (!ag) return NULL;
    ag->flags = flags, ag->n_group = n_group, ag->n_aggs = (int)n_aggs, ag->track_arg = track_arg;
    int n_extras = n_group;
    for (Py_ssize_t i = 0; i < n_aggs; i++) {
        long f, a;
        if (!small_int(PyTuple_GET_ITEM(funcs, i), AG_COUNT_STAR, AG_MAX, &f) ||
            !small_int(PyTuple_GET_ITEM(fargs, i), -1, MAX_EXTRAS - 1, &a) || (f == AG_COUNT_STAR) != (a == -1) ||
            (a >= 0 && a < n_group) || !PyBytes_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_ValueError, "Aggregate: an aggregate of an unknown function or argument");
            goto fail;
        }
        ag->func[i] = (int)f, ag->arg[i] = (int)a;
        if (f == AG_COUNT_STAR) ag->has_count_star = 1;
        if (a + 1 > n_extras) n_extras = (int)a + 1;
        if (!(ag->name[i] = copy_bytes(PyTuple_GET_ITEM(names, i), &ag->name_len[i]))) goto nomemory;
    }
    if (track_arg < -1 || track_arg >= MAX_EXTRAS || (track_arg >= 0 && track_arg < n_group) ||
        ((flags & AG_TRACK) != 0) != (track_arg >= 0)) {
        PyErr_SetString(PyExc_ValueError, "Aggregate: the tracked operand must be an argument (with AG_TRACK)");
        goto fail;
    }
    if (track_arg + 1 > n_extras) n_extras = track_arg + 1;
    ag->n_extras = n_extras;
    ag->track_map = -1;
    for (int i = 0; i <= ag->n_aggs; i++) { /* a map per column: MIN/MAX's (retracting), the tracker's */
        int col = i < ag->n_aggs ? ((ag->func[i] == AG_MIN || ag->func[i] == AG_MAX) && (flags & AG_RETRACTING)
                                        ? ag->arg[i]
                                        : -1)
                                 : track_arg;
        int m = -1;
        if (col >= 0) {
            for (int k = 0; k < ag->n_maps && m < 0; k++)
                if (ag->map_col[k] == col) m = k;
            if (m < 0) ag->map_col[m = ag->n_maps++] = col;
        }
        if (i < ag->n_aggs) ag->map_of[i] = m;
        else ag->track_map = m;
    }
    for (int i = 0; i < n_group; i++) {
        PyObject *b = PyTuple_GET_ITEM(group_names, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "Aggregate: group names: bytes expected");
            goto fail;
        }
        if (!(ag->group_name[i] = copy_bytes(b, &ag->group_name_len[i]))) goto nomemory;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *b = PyTuple_GET_ITEM(firsts, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "Aggregate: first members: bytes expected");
            goto fail;
        }
        if (!(ag->first[i] = copy_bytes(b, &ag->first_len[i]))) goto nomemory;
    }
    if (tab_init(&ag->tab) < 0) goto fail;
    return (PyObject *)ag;
nomemory:
    PyErr_NoMemory();
fail:
    Py_DECREF(ag);
    return NULL;
}

static void aggregate_dealloc(Aggregate *ag) {
    tab_free(&ag->tab);
    for (Py_ssize_t i = 0; i < ag->n_groups; i++) group_free(ag, ag->groups[i]);
    for (int i = 0; i < ag->n_pool; i++) group_free(ag, ag->pool[i]);
    PyMem_RawFree(ag->values.buf);
    PyMem_RawFree(ag->prefix.buf);
    PyMem_Free(ag->groups);
    PyMem_Free(ag->free_list);
    for (int i = 0; i < MAX_AGGS; i++) PyMem_Free(ag->name[i]);
    for (int i = 0; i < MAX_EXTRAS; i++) PyMem_Free(ag->group_name[i]);
    for (int i = 0; i < 4; i++) PyMem_Free(ag->first[i]);
    Py_TYPE(ag)->tp_free((PyObject *)ag);
}

/* A value of a record: absent or null (1 with *null), a plain integer (1), else 0. */
static int int_value(const Rec *r, int i, int64_t *v, int *null) {
    const char *t = r->extra[i];
    Py_ssize_t n = r->extra_len[i];
    *null = n < 0 || (n == 4 && !memcmp(t, "null", 4));
    return *null || plain_int(t, n, v);
}

static int put_wide(Out *o, wide v) {
    char buf[48];
    size_t n = 0;
    int neg = v < 0;
    __uint128_t u = neg ? (__uint128_t)0 - (__uint128_t)v : (__uint128_t)v;
    while (u > UINT64_MAX) { /* 128-bit division only for the digits beyond 64 bits */
        buf[sizeof buf - 1 - n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    }
    uint64_t w = (uint64_t)u;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + (int)(w % 10));
        w /= 10;
    } while (w);
    if (neg) buf[sizeof buf - 1 - n++] = '-';
    return out_put(o, buf + sizeof buf - n, (Py_ssize_t)n);
}

/* The aggregates' values now (the generated code's a_i); null[i] for None. */
static void agg_values(const Aggregate *ag, const Group *g, wide *v, unsigned char *null) {
    for (int i = 0; i < ag->n_aggs; i++) {
        const AggSlot *a = &g->slot[i];
        null[i] = 0;
        switch (ag->func[i]) {
        case AG_COUNT_STAR: v[i] = g->count; break;
        case AG_COUNT: v[i] = a->cnt; break;
        case AG_SUM:
            if (ag->flags & AG_RETRACTING) null[i] = a->cnt == 0;
            else null[i] = (unsigned char)a->null;
            v[i] = a->sum;
            break;
        case AG_AVG:
            null[i] = a->cnt == 0;
            if (!null[i]) { /* Java's long division: truncated toward zero */
                wide q = (a->sum < 0 ? -a->sum : a->sum) / (a->cnt < 0 ? -(wide)a->cnt : (wide)a->cnt);
                v[i] = (a->sum >= 0) == (a->cnt > 0) ? q : -q;
            }
            break;
        default: /* MIN, MAX */
            if (ag->flags & AG_RETRACTING) null[i] = a->size <= 0;
            else null[i] = (unsigned char)a->null;
            v[i] = a->s;
            break;
        }
    }
}

/* One output row: {kind, group members, aggregates}. */
static int put_result(Aggregate *ag, Out *o, int kind, const Group *g, const wide *v, const unsigned char *null) {
    Py_ssize_t plen = PyBytes_GET_SIZE(g->prefix);
    if (out_put(o, "{", 1) < 0 || out_put(o, ag->first[kind], ag->first_len[kind]) < 0) return -1;
    if (plen && (out_put(o, ",", 1) < 0 || out_put(o, PyBytes_AS_STRING(g->prefix), plen) < 0)) return -1;
    for (int i = 0; i < ag->n_aggs; i++) {
        if (out_put(o, ",", 1) < 0 || out_put(o, ag->name[i], ag->name_len[i]) < 0 || out_put(o, ":", 1) < 0) return -1;
        if (null[i] ? out_put(o, "null", 4) < 0 : put_wide(o, v[i]) < 0) return -1;
    }
    return out_put(o, "}\n", 2);
}

/* The operands of a record as the generated code reads them: -1 (not plain: stop), or 0. */
typedef struct {
    int64_t v[MAX_EXTRAS];
    int null[MAX_EXTRAS], is_int[MAX_EXTRAS];
    int64_t c[MAX_EXTRAS]; /* per map: the value's count once this record is applied */
} Operands;

static int operands_of(const Aggregate *ag, const Rec *r, Operands *op) {
    for (int i = ag->n_group; i < ag->n_extras; i++) {
        op->is_int[i] = int_value(r, i, &op->v[i], &op->null[i]);
        if (!op->is_int[i]) op->null[i] = r->extra_len[i] == 4 && !memcmp(r->extra[i], "null", 4);
    }
    for (int i = 0; i < ag->n_aggs; i++) /* what SUM, AVG, MIN, MAX read: integers (or null) */
        if (ag->func[i] >= AG_SUM && !op->is_int[ag->arg[i]]) return -1;
    for (int m = 0; m < ag->n_maps; m++) /* and the maps' keys */
        if (!op->is_int[ag->map_col[m]]) return -1;
    return 0;
}

/* The maps (and the tracker's null count) with this record's operands added (delta 1) or
 * removed (-1); op->c gets each map's count of its value. */
static int maps_update(const Aggregate *ag, Group *g, Operands *op, int delta) {
    for (int m = 0; m < ag->n_maps; m++) {
        int col = ag->map_col[m];
        if (op->null[col]) continue;
        int64_t c = c64_get(&g->maps[m], op->v[col]) + delta;
        if (c64_set(&g->maps[m], op->v[col], c) < 0) return -1;
        op->c[m] = c;
    }
    if (ag->track_arg >= 0 && op->null[ag->track_arg]) g->null_operands += delta;
    return 0;
}

static void agg_accumulate(const Aggregate *ag, Group *g, const Operands *op) {
    int retracting = (ag->flags & AG_RETRACTING) != 0;
    for (int i = 0; i < ag->n_aggs; i++) {
        AggSlot *a = &g->slot[i];
        int col = ag->arg[i];
        if (col < 0 || op->null[col]) continue;
        int64_t v = op->v[col];
        switch (ag->func[i]) {
        case AG_COUNT: a->cnt++; break;
        case AG_SUM:
            a->sum = a->null ? v : a->sum + v;
            a->null = 0;
            a->cnt++;
            break;
        case AG_AVG:
            a->sum += v;
            a->cnt++;
            break;
        default: {
            int lowest = ag->func[i] == AG_MIN;
            if (!retracting) {
                if (a->null || (lowest ? v < a->s : v > a->s)) a->s = v, a->null = 0;
                break;
            }
            if (a->size == 0 || (lowest ? v < a->s : v > a->s)) a->s = v;
            if (op->c[ag->map_of[i]] == 1) a->size++;
        }
        }
    }
}

static void agg_retract(const Aggregate *ag, Group *g, const Operands *op) {
    for (int i = 0; i < ag->n_aggs; i++) {
        AggSlot *a = &g->slot[i];
        int col = ag->arg[i];
        if (col < 0 || op->null[col]) continue;
        int64_t v = op->v[col];
        switch (ag->func[i]) {
        case AG_COUNT: a->cnt--; break;
        case AG_SUM:
            a->sum = a->null ? -(wide)v : a->sum - v;
            a->null = 0;
            a->cnt--;
            break;
        case AG_AVG:
            a->sum -= v;
            a->cnt--;
            break;
        default:
            if (op->c[ag->map_of[i]] == 0) {
                const Counts64 *map = &g->maps[ag->map_of[i]];
                a->size--;
                if (a->size == 0) a->s = 0; /* None: size says so */
                else if (v == a->s) {
                    if (map->used) a->s = c64_pick(map, ag->func[i] == AG_MIN);
                    else a->size = 0;
                }
            }
        }
    }
}

/* A group deleted: to the pool (cleared when taken), or freed. */
static void group_release(Aggregate *ag, Group *g) {
    if (ag->n_pool < (int)(sizeof ag->pool / sizeof ag->pool[0])) ag->pool[ag->n_pool++] = g;
    else group_free(ag, g);
}

/* The bytes for text: the one given when it holds that text already, else new ones. */
static int same_or_new(PyObject **held, const Out *text) {
    const char *t = text->buf ? text->buf : "";
    if (*held && PyBytes_GET_SIZE(*held) == text->len && !memcmp(PyBytes_AS_STRING(*held), t, (size_t)text->len))
        return 0;
    PyObject *b = PyBytes_FromStringAndSize(t, text->len);
    if (!b) return -1;
    Py_XSETREF(*held, b);
    return 0;
}

/* A new group for the record's values (extras 0..n_group-1, absent as null). */
static Group *group_new(Aggregate *ag, const Rec *r) {
    Out *values = &ag->values, *prefix = &ag->prefix;
    values->len = prefix->len = 0;
    int failed = out_put_raw(values, "[", 1) < 0;
    for (int i = 0; i < ag->n_group && !failed; i++) {
        const char *t = r->extra_len[i] < 0 ? "null" : r->extra[i];
        Py_ssize_t n = r->extra_len[i] < 0 ? 4 : r->extra_len[i];
        failed = (i && (out_put_raw(values, ",", 1) < 0 || out_put_raw(prefix, ",", 1) < 0)) ||
                 out_put_raw(values, t, n) < 0 || out_put_raw(prefix, ag->group_name[i], ag->group_name_len[i]) < 0 ||
                 out_put_raw(prefix, ":", 1) < 0 || out_put_raw(prefix, t, n) < 0;
    }
    if (failed || out_put_raw(values, "]", 1) < 0) {
        PyErr_NoMemory();
        return NULL;
    }
    Group *g;
    if (ag->n_pool) {
        g = ag->pool[--ag->n_pool];
        g->count = g->null_operands = 0;
        for (int i = 0; i < ag->n_maps; i++) c64_clear(&g->maps[i]);
        for (int i = 0; i < ag->n_aggs; i++) {
            AggSlot *a = &g->slot[i];
            a->sum = 0, a->cnt = a->s = a->size = 0, a->null = 1;
        }
        memset(g->old, 0, (size_t)ag->n_aggs * sizeof(wide));
        memset(g->old_null, 0, (size_t)ag->n_aggs);
    } else {
        size_t slots = (size_t)ag->n_aggs * sizeof(AggSlot);
        g = PyMem_Calloc(1, sizeof(Group) + slots + (size_t)ag->n_maps * sizeof(Counts64));
        if (!g) {
            PyErr_NoMemory();
            return NULL;
        }
        g->maps = (Counts64 *)(void *)((char *)g->slot + slots);
        for (int i = 0; i < ag->n_aggs; i++) g->slot[i].null = 1;
        g->old = PyMem_Calloc((size_t)(ag->n_aggs ? ag->n_aggs : 1), sizeof(wide));
        g->old_null = PyMem_Calloc((size_t)(ag->n_aggs ? ag->n_aggs : 1), 1);
        if (!g->old || !g->old_null) {
            group_free(ag, g);
            PyErr_NoMemory();
            return NULL;
        }
    }
    if (same_or_new(&g->values, values) < 0 || same_or_new(&g->prefix, prefix) < 0) {
        group_release(ag, g);
        return NULL;
    }
    return g;
}

/* Keep g; its index. */
static Py_ssize_t group_keep(Aggregate *ag, Group *g) {
    if (ag->n_free) {
        Py_ssize_t at = ag->free_list[--ag->n_free];
        ag->groups[at] = g;
        return at;
    }
    if (ag->n_groups == ag->room) {
        Py_ssize_t room = ag->room ? 2 * ag->room : 1024;
        Group **grown = PyMem_Realloc(ag->groups, (size_t)room * sizeof(Group *));
        Py_ssize_t *free_grown = grown ? PyMem_Realloc(ag->free_list, (size_t)room * sizeof(Py_ssize_t)) : NULL;
        if (grown) ag->groups = grown;
        if (!grown || !free_grown) {
            PyErr_NoMemory();
            return -1;
        }
        ag->free_list = free_grown;
        ag->room = room;
    }
    ag->groups[ag->n_groups] = g;
    return ag->n_groups++;
}

/* One record: 0 applied (or skipped), 1 stopped (Python takes it), -1 error. */
static int aggregate_record(Aggregate *ag, const Rec *r, PyObject *handle, Out *out) {
    Operands op;
    /* the group key: the record's (parse_records wrote the group values' canonical texts) */
    if (operands_of(ag, r, &op) < 0) return 1;
    if (!ag->checked) { /* the first row checks the columns: an absent one is the row's error */
        int absent = 0;
        for (int i = 0; i < ag->n_extras; i++) absent |= r->extra_len[i] < 0;
        if (absent) return ask(handle, H_COLUMNS, r, NULL, 0, r->row, r->row_len) < 0 ? -1 : 0;
        ag->checked = 1;
    }
    Entry *e = table_find(&ag->tab, r->key, r->key_len, r->hash);
    Group *g = e ? ag->groups[e->aux] : NULL;
    int tracking = (ag->flags & AG_TRACK) != 0;
    wide v[MAX_AGGS];
    unsigned char null[MAX_AGGS];
    if (r->kind == 0 || r->kind == 2) {
        if (!g) {
            if (!(g = group_new(ag, r))) return -1;
            Py_ssize_t at = group_keep(ag, g);
            PyObject *row = at >= 0 ? Py_NewRef(Py_True) : NULL; /* the entry is live; its group holds the values */
            if (at < 0 || table_append(&ag->tab, r->key, r->key_len, r->hash, row) < 0) {
                Py_XDECREF(row);
                if (at >= 0) ag->groups[at] = NULL, ag->free_list[ag->n_free++] = at;
                group_release(ag, g);
                return -1;
            }
            ag->tab.entries[ag->tab.n_entries - 1].aux = at;
            g->count = 1;
            if (maps_update(ag, g, &op, 1) < 0) return PyErr_NoMemory(), -1;
            agg_accumulate(ag, g, &op);
            agg_values(ag, g, v, null);
            if (put_result(ag, out, 0, g, v, null) < 0) return -1;
            memcpy(g->old, v, (size_t)ag->n_aggs * sizeof(wide));
            memcpy(g->old_null, null, (size_t)ag->n_aggs);
            ag->c[0]++;
            return 0;
        }
        g->count++;
        if (maps_update(ag, g, &op, 1) < 0) return PyErr_NoMemory(), -1;
        agg_accumulate(ag, g, &op);
    } else {
        if (!g) {
            ag->c[5]++;
            return ask(handle, H_ABSENT, r, NULL, 0, r->row, r->row_len) < 0 ? -1 : 0;
        }
        if (tracking) {
            int t = ag->track_arg;
            int64_t c = (op.null[t] ? g->null_operands : c64_get(&g->maps[ag->track_map], op.v[t])) - 1;
            if (c < 0) {
                long go = ask(handle, H_UNMATCHED, r, NULL, 0, r->row, r->row_len);
                if (go <= 0) return go < 0 ? -1 : 0; /* --strict, set aside: the record changes nothing */
            }
        }
        if (maps_update(ag, g, &op, -1) < 0) return PyErr_NoMemory(), -1;
        g->count--;
        agg_retract(ag, g, &op);
        if (g->count == 0) {
            if (put_result(ag, out, 3, g, g->old, g->old_null) < 0) return -1;
            Py_ssize_t at = e->aux;
            Py_CLEAR(e->row);
            ag->tab.live--;
            group_release(ag, g);
            ag->groups[at] = NULL;
            ag->free_list[ag->n_free++] = at;
            ag->c[2]++;
            return 0;
        }
    }
    agg_values(ag, g, v, null);
    if (!ag->has_count_star) {
        int same = 1;
        for (int i = 0; i < ag->n_aggs && same; i++)
            same = g->old_null[i] == null[i] && (null[i] || g->old[i] == v[i]);
        if (same) {
            ag->c[3]++;
            return 0;
        }
    }
    if ((ag->flags & AG_EMIT_RETRACT) && put_result(ag, out, 1, g, g->old, g->old_null) < 0) return -1;
    if (put_result(ag, out, 2, g, v, null) < 0) return -1;
    memcpy(g->old, v, (size_t)ag->n_aggs * sizeof(wide));
    memcpy(g->old_null, null, (size_t)ag->n_aggs);
    ag->c[1]++;
    return 0;
}

static int aggregate_free_to_use(Aggregate *ag) {
    if (ag->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Aggregate: in use (called from its own handle)");
        return 0;
    }
    return 1;
}

/* apply(records, start, handle) -> (output, stop): the records (parse_records' with the extras
 * of the constructor; read-only) from byte start on; stop: the byte offset of the record the
 * call stopped at (Python takes the state over from there), or -1. */
static PyObject *aggregate_apply(Aggregate *ag, PyObject *args) {
    Py_buffer packed;
    Py_ssize_t start, n_at = 0, stop = -1;
    PyObject *handle, *result_obj = NULL;
    RecAt *at = NULL;
    Out out = {0};
    if (!PyArg_ParseTuple(args, "y*nO", &packed, &start, &handle)) return NULL;
    if (!aggregate_free_to_use(ag)) goto done;
    if (!packed.readonly) {
        PyErr_SetString(PyExc_TypeError, "Aggregate.apply: the records must be read-only (bytes)");
        goto done;
    }
    if (!PyCallable_Check(handle)) {
        PyErr_SetString(PyExc_TypeError, "Aggregate.apply: handle must be callable");
        goto done;
    }
    if (start < 0 || start > packed.len) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside the records (0 to %zd)", start, packed.len);
        goto done;
    }
    const char *base = packed.buf, *end = base + packed.len;
    if (check_records(base, end, start, ag->n_extras, &at, &n_at) < 0) goto done;
    ag->busy = 1;
    int failed = 0;
    Rec r;
    Tab *t = &ag->tab;
    for (Py_ssize_t i = 0; i < n_at && !failed; i++) {
        if (i + 12 < n_at) PREFETCH(&t->index[(Py_ssize_t)(at[i + 12].hash & (uint64_t)t->mask)]);
        if (i + 6 < n_at) {
            int32_t ahead = t->index[(Py_ssize_t)(at[i + 6].hash & (uint64_t)t->mask)];
            if (ahead >= 0) PREFETCH(&t->entries[ahead]);
        }
        if (i + 3 < n_at) {
            int32_t ahead = t->index[(Py_ssize_t)(at[i + 3].hash & (uint64_t)t->mask)];
            if (ahead >= 0 && t->entries[ahead].row) PREFETCH(ag->groups[t->entries[ahead].aux]);
        }
        if (i + 1 < n_at && ag->n_maps) { /* and the slot of its value in its group's map */
            int32_t ahead = t->index[(Py_ssize_t)(at[i + 1].hash & (uint64_t)t->mask)];
            Rec next;
            int64_t v;
            int null;
            if (ahead >= 0 && t->entries[ahead].row && read_rec(at[i + 1].p, end, ag->n_extras, &next) &&
                int_value(&next, ag->map_col[0], &v, &null) && !null) {
                const Counts64 *m = &ag->groups[t->entries[ahead].aux]->maps[0];
                if (m->room) PREFETCH(&m->pair[int_hash(v) & (m->room - 1)]);
            }
        }
        if (!read_rec(at[i].p, end, ag->n_extras, &r)) {
            PyErr_SetString(PyExc_SystemError, "Aggregate.apply: a record changed");
            failed = 1;
            break;
        }
        r.hash = at[i].hash;
        int got = aggregate_record(ag, &r, handle, &out);
        if (got < 0) failed = 1;
        if (got == 1) {
            stop = at[i].p - base;
            break;
        }
    }
    ag->busy = 0;
    if (!failed) {
        PyObject *data = PyBytes_FromStringAndSize(out.buf ? out.buf : "", out.len);
        if (data) result_obj = Py_BuildValue("(Nn)", data, stop);
    }
done:
    PyMem_RawFree(at);
    PyMem_RawFree(out.buf);
    PyBuffer_Release(&packed);
    return result_obj;
}

static PyObject *wide_object(wide v) {
    if (v >= INT64_MIN && v <= INT64_MAX) return PyLong_FromLongLong((long long)v);
    Out o = {0};
    if (put_wide(&o, v) < 0) return NULL;
    PyObject *text = PyUnicode_FromStringAndSize(o.buf, o.len);
    PyMem_RawFree(o.buf);
    if (!text) return NULL;
    PyObject *n = PyLong_FromUnicodeObject(text, 10);
    Py_DECREF(text);
    return n;
}

static PyObject *counts_items(const Counts64 *m) {
    PyObject *out = PyList_New(0);
    for (uint32_t i = 0; out && i < m->room; i++) {
        if (!m->pair[i].count) continue;
        PyObject *item = Py_BuildValue("(LL)", (long long)m->pair[i].key, (long long)m->pair[i].count);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

/* One aggregate's slots as Python's generated code holds them. */
static PyObject *slot_object(const Aggregate *ag, int i, const Group *g) {
    const AggSlot *a = &g->slot[i];
    int retracting = (ag->flags & AG_RETRACTING) != 0;
    PyObject *sum, *map;
    switch (ag->func[i]) {
    case AG_COUNT_STAR: return PyTuple_New(0);
    case AG_COUNT: return Py_BuildValue("(L)", (long long)a->cnt);
    case AG_SUM:
        sum = a->null ? Py_NewRef(Py_None) : wide_object(a->sum);
        if (!sum) return NULL;
        return retracting ? Py_BuildValue("(NL)", sum, (long long)a->cnt) : Py_BuildValue("(N)", sum);
    case AG_AVG:
        sum = wide_object(a->sum);
        return sum ? Py_BuildValue("(NL)", sum, (long long)a->cnt) : NULL;
    default:
        if (!retracting) return a->null ? Py_BuildValue("(O)", Py_None) : Py_BuildValue("(L)", (long long)a->s);
        map = counts_items(&g->maps[ag->map_of[i]]);
        if (!map) return NULL;
        if (a->size == 0) return Py_BuildValue("(OLN)", Py_None, (long long)a->size, map);
        return Py_BuildValue("(LLN)", (long long)a->s, (long long)a->size, map);
    }
}

/* items() -> [(values, count, slots, old, tracker)] of every group, in first-insertion order:
 * values: the group's values as first read (a JSON array's text); slots: per aggregate, its
 * slots as the generated code holds them (MIN/MAX maps as (value, count) pairs); old: the
 * result last emitted, per aggregate (None for null); tracker: (pairs, nulls) or None. */
static PyObject *aggregate_items(Aggregate *ag, PyObject *unused) {
    UNUSED(unused);
    if (!aggregate_free_to_use(ag)) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t k = 0; out && k < ag->tab.n_entries; k++) {
        const Entry *e = &ag->tab.entries[k];
        if (!e->row) continue;
        const Group *g = ag->groups[e->aux];
        PyObject *slots = PyTuple_New(ag->n_aggs), *old = PyTuple_New(ag->n_aggs), *tracker = NULL, *item = NULL;
        int failed = !slots || !old;
        for (int i = 0; !failed && i < ag->n_aggs; i++) {
            PyObject *s = slot_object(ag, i, g);
            PyObject *o = g->old_null[i] ? Py_NewRef(Py_None) : wide_object(g->old[i]);
            if (s) PyTuple_SET_ITEM(slots, i, s);
            if (o) PyTuple_SET_ITEM(old, i, o);
            failed = !s || !o;
        }
        if (!failed && (ag->flags & AG_TRACK)) {
            PyObject *pairs = counts_items(&g->maps[ag->track_map]);
            tracker = pairs ? Py_BuildValue("(NL)", pairs, (long long)g->null_operands) : NULL;
            failed = !tracker;
        } else if (!failed) {
            tracker = Py_NewRef(Py_None);
        }
        if (!failed) item = Py_BuildValue("(OLOOO)", g->values, (long long)g->count, slots, old, tracker);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
        Py_XDECREF(slots);
        Py_XDECREF(old);
        Py_XDECREF(tracker);
    }
    return out;
}

/* counters() -> (inserted, updated, deleted, unchanged, filtered, skipped, groups, checked). */
static PyObject *aggregate_counters(Aggregate *ag, PyObject *unused) {
    UNUSED(unused);
    return Py_BuildValue("(nnnnnnni)", ag->c[0], ag->c[1], ag->c[2], ag->c[3], ag->c[4], ag->c[5], ag->tab.live,
                         ag->checked);
}

static PyMethodDef aggregate_methods[] = {
    {"apply", (PyCFunction)aggregate_apply, METH_VARARGS, "Apply parse_records' records: (output, stop)."},
    {"items", (PyCFunction)aggregate_items, METH_NOARGS, "Every group's state, in order (to take it over)."},
    {"counters", (PyCFunction)aggregate_counters, METH_NOARGS, "The generated code's counters, groups, checked."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject AggregateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.Aggregate",
    .tp_doc = "Flink's group aggregate (COUNT, SUM, AVG, MIN, MAX of integers) applied from records.",
    .tp_basicsize = sizeof(Aggregate),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = aggregate_new,
    .tp_dealloc = (destructor)aggregate_dealloc,
    .tp_methods = aggregate_methods,
};
#endif
