/* cdc.engine.paths.native._kernel: what crosses its source files.
 *
 * The kernel reads JSON lines in C and either writes what the Python paths would write for them
 * or declines the line (Python then takes it the general way). Its files, by concern:
 *
 *     scanner.c    strict JSON: scanning, validating, an object's members, their names; hashes
 *     lines.c      the entry scaffold: arguments, scratch objects, the walk over the lines
 *     envelopes.c  columns, debezium, maxwell, ogg: stateless lines → changelog rows
 *     canal.c      canal: Canal flat messages → changelog rows (values converted by sqlType)
 *     table.c      the keyed table (key bytes → row bytes) and the upsert rule, written once
 *     keyed.c      keyed, parse_changes, apply_changes and the Table type (materialize with a key)
 *     values.c     canonical texts: value and row equality as Python decides it
 *     records.c    parse_records: lines → packed records for a State or an Aggregate
 *     state.c      the State type (materialize multiset/--dedup, inspect, replay)
 *     aggregate.c  the Aggregate type (Flink's group aggregate of integers)
 *     encode.c     encode (debezium-encode)
 *     module.c     count_lines and the module's table of functions and types
 *
 * A trust boundary: the chunks are untrusted bytes, and every argument crosses from Python,
 * where any caller can forge it. Every type is checked before use, every length, index and
 * position bounded before it addresses memory, every allocation and C-API result checked, and no
 * input can pick a slow path (names and keys are hashed under a random key per process).
 * scripts/kernel-sanitize.sh and scripts/kernel-fuzz.py hold it to that.
 */
#ifndef CDC_KERNEL_H
#define CDC_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Nothing here is exported from the extension but PyInit__kernel (PyMODINIT_FUNC says so): the
 * names below stay the module's own, whatever else the process has loaded. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)
#endif

typedef const unsigned char *ptr;

#define MAX_DEPTH 64
#define MAX_MEMBERS 512
#define MAX_FLOAT_CHARS 64
/* The longest key (the key columns' values as written, joined by ',') the keyed table takes; a
 * line with a longer key is declined (the general way has no limit). Keys are counted in 32 bits. */
#define MAX_KEY_BYTES ((Py_ssize_t)1 << 20)
#define MAX_SPELLINGS 16
#define MAX_KEYS 16
#define MAX_EXTRAS 16

#define UNUSED(x) (void)(x)

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

#if defined(__SIZEOF_INT128__)
#define HAVE_AGGREGATE 1 /* its sums are 128-bit */
#else
#define HAVE_AGGREGATE 0
#endif

/* ---------------------------------------------------------------- hashes (scanner.c) --- */

/* 16 bytes of os.urandom, drawn when the module is loaded (module.c). */
extern uint64_t hash_key[2];
uint64_t siphash13(const void *data, size_t len);
uint64_t name_hash(const void *data, size_t len);

/* One multiply-fold step (wyhash's). */
static inline uint64_t fold(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t r = a * (b | 1);
    return r ^ (r >> 29) ^ (b >> 31);
#endif
}

/* ---------------------------------------------------------------- output buffer -------- */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

/* Room for n more bytes (scanner.c); -1 when out of memory. Touches no Python state. */
int out_grow(Out *o, Py_ssize_t n);

/* Appends without touching Python state (safe without the GIL); -1 when out of memory. */
static inline int out_put_raw(Out *o, const void *src, Py_ssize_t n) {
    /* >=: an empty buffer gets its memory even for 0 bytes (no memcpy to NULL) */
    if (n >= o->cap - o->len && out_grow(o, n) < 0) return -1;
    memcpy(o->buf + o->len, src, (size_t)n);
    o->len += n;
    return 0;
}

/* out_put_raw, with a MemoryError. */
static inline int out_put(Out *o, const void *src, Py_ssize_t n) {
    if (out_put_raw(o, src, n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- strict JSON (scanner.c) */

static inline ptr ws(ptr p, ptr end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static inline int hex4(ptr p, unsigned *out) {
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

/* Spans compared are keys and codes, a few bytes that differ early: a loop beats a memcmp call
 * (which was a sixth of the time spent parsing a changelog line). */
static inline int span_is(ptr s, ptr e, const char *text, Py_ssize_t n) {
    if (e - s != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] != (unsigned char)text[i]) return 0;
    return 1;
}

typedef struct {
    ptr key, key_end; /* the key with its quotes */
    ptr val, val_end;
    int key_escaped, val_escaped;
} Member;

typedef struct {
    Member m[MAX_MEMBERS];
    int n;
} Members;

/* Two names (with their quotes) are the same: short ones compared in a loop, long ones with memcmp. */
static inline int same_name(const Member *a, const Member *b) {
    Py_ssize_t n = a->key_end - a->key;
    if (b->key_end - b->key != n) return 0;
    if (n > 16) return !memcmp(a->key, b->key, (size_t)n);
    for (Py_ssize_t i = 0; i < n; i++)
        if (a->key[i] != b->key[i]) return 0;
    return 1;
}

static inline int any_key_escaped(const Members *ms) {
    for (int i = 0; i < ms->n; i++)
        if (ms->m[i].key_escaped) return 1;
    return 0;
}

/* The value of a member that is an unescaped string equal to text (a type, an op code). */
static inline int member_is(const Members *ms, int at, const char *text, Py_ssize_t n) {
    return at >= 0 && !ms->m[at].val_escaped && span_is(ms->m[at].val, ms->m[at].val_end, text, n);
}

ptr scan_string(ptr p, ptr end, int *escaped);
ptr skip_value(ptr p, ptr end, int depth);
ptr members_of(ptr p, ptr end, Members *out);
int has_repeated_names_indexed(const Members *ms);

/* The small helpers every line calls, inline (as they were when the kernel was one file). */

/* A whole line as one object: its members, or 0 when the line is to be declined. */
static inline int line_object(ptr p, ptr end, Members *ms) {
    p = ws(p, end);
    if (p >= end || *p != '{') return 0;
    if (!(p = members_of(p, end, ms))) return 0;
    return ws(p, end) == end;
}

/* orjson keeps the last of repeated keys; such a row goes the general way. Up to 8 names are
 * compared pair by pair (fastest for the usual row: at most 3.5 comparisons per name, whatever
 * the names); more are indexed, so the time stays linear in the names' bytes. */
static inline int has_repeated_keys(const Members *ms) {
    if (ms->n <= 8) {
        for (int i = 1; i < ms->n; i++)
            for (int j = 0; j < i; j++)
                if (span_is(ms->m[i].key, ms->m[i].key_end, (const char *)ms->m[j].key, ms->m[j].key_end - ms->m[j].key))
                    return 1;
        return 0;
    }
    return has_repeated_names_indexed(ms);
}

/* A whole line as one object of distinct unescaped names (what every entry point reads): its
 * members, or 0 when the line is to be declined. */
static inline int plain_line(ptr p, ptr end, Members *ms) {
    return line_object(p, end, ms) && !any_key_escaped(ms) && !has_repeated_keys(ms);
}

/* The index of the member whose key is `key` (quotes included), -1 if none, -2 if several. */
static inline int find_key(const Members *ms, const char *key, Py_ssize_t n) {
    int found = -1;
    for (int i = 0; i < ms->n; i++)
        if (span_is(ms->m[i].key, ms->m[i].key_end, key, n)) {
            if (found >= 0) return -2;
            found = i;
        }
    return found;
}

int covers(const Members *before, const Members *after);
int put_compact_raw(Out *o, ptr p, ptr end);
int put_compact(Out *o, ptr p, ptr end);
int put_row(Out *o, const char *first, Py_ssize_t first_len, const Members *ms, int skip);
/* The probes a name index may take before it sorts instead (-1: the default); tests set it. */
extern Py_ssize_t probe_budget_override;

/* ---------------------------------------------------------------- the entry scaffold (lines.c) */

/* Every entry point over a chunk of JSON lines takes (chunk, start, kind_key, ...). Lines holds
 * those three (LINES_ARGS, for PyArg_ParseTuple), the scratch objects, the output and the tally;
 * lines_walk gives each line from start to a callback until one is declined. */
typedef struct Lines Lines;
/* A line [p, line_end): 1 taken, 0 declined (the walk stops before it), -1 failed (an exception
 * set; or, run without the GIL, out of memory with none set: lines_failed sets it). */
typedef int (*LineFn)(Lines *run, ptr p, ptr line_end);
struct Lines {
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    Members *ms[4];   /* lines_open's scratch objects */
    Out out;          /* the output */
    Py_ssize_t position, lines, counts[4], dropped;
    int failed;
    void *ctx;        /* the entry's own state, for its callback */
};
#define LINES_ARGS(run) &(run)->chunk, &(run)->start, &(run)->kind_key

int check_start(Py_ssize_t start, const Py_buffer *chunk);
int small_int(PyObject *o, long lo, long hi, long *out);
int firsts_of(PyObject *firsts, const char *first[4], Py_ssize_t first_len[4]);
/* After PyArg_ParseTuple(…, LINES_ARGS(run), …) succeeded: start checked, n scratch objects. */
int lines_open(Lines *run, int n_members);
/* The walk (no Python API: may run without the GIL); 0, or -1 when a line failed. */
int lines_walk(Lines *run, LineFn take, void *ctx);
/* Whether the walk failed; then an exception is set (a MemoryError if none was). */
int lines_failed(Lines *run);
/* (output, position, lines, counts per kind, dropped[, extra]); steals extra (NULL: none). */
PyObject *lines_result(Lines *run, PyObject *extra);
/* Frees what lines_open took, releases the buffers; returns result. */
PyObject *lines_close(Lines *run, PyObject *result);

/* ---------------------------------------------------------------- changes (keyed.c) ---- */

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

int change_spec(ChangeSpec *cs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys);
int kind_of(const ChangeSpec *cs, const Members *ms, int *at_kind);
int put_image(Out *o, const Members *ms, int at_kind);

/* ---------------------------------------------------------------- the keyed table (table.c) */

#define INLINE_KEY 24
#define MAX_ENTRIES ((Py_ssize_t)1 << 28) /* the index (4 slots per entry) holds int32 entry numbers */

#define RETRACTED 1u /* a -U took the row; its slot waits for the +U */
#define DELETED 2u   /* a table that keeps deleted keys (inspect): the key was deleted, its row kept */
#define HAS_ORDER 4u /* replay --order-by: the stored version's order value is known ... */
#define ORDER_INT 8u /* ... as the integer in aux (else as its text in order) */

typedef struct {
    uint64_t hash;
    PyObject *row;   /* owned bytes; NULL: deleted */
    PyObject *order; /* owned bytes or NULL: replay's order value, when it is not a plain integer */
    int64_t aux;     /* a multiset's count of the row; replay's order value as an integer */
    uint32_t key_len; /* <= MAX_KEY_BYTES */
    uint32_t flags;   /* RETRACTED, DELETED, HAS_ORDER, ORDER_INT */
    union {
        char bytes[INLINE_KEY];
        char *heap;
    } key;
} Entry;

/* The entries and their index: the Table type's, each State's, each Aggregate's. */
typedef struct {
    Entry *entries;
    Py_ssize_t n_entries, cap, live;
    int32_t *index; /* -1 empty, else an entry; size 4 * cap, a power of two */
    Py_ssize_t mask;
} Tab;

static inline const char *entry_key(const Entry *e) {
    return e->key_len <= INLINE_KEY ? e->key.bytes : e->key.heap;
}

/* The table's hash: the keyed SipHash of this module (CPython's _Py_HashBytes is private API). */
static inline uint64_t key_hash(const char *key, Py_ssize_t len) { return siphash13(key, (size_t)len); }

/* The index slot for this key: empty (-1), or holding the entry with this key (live or not). */
static inline Py_ssize_t table_slot(const Tab *t, const char *key, Py_ssize_t len, uint64_t hash) {
    Py_ssize_t s = (Py_ssize_t)(hash & (uint64_t)t->mask);
    for (;;) {
        int32_t at = t->index[s];
        if (at < 0) return s;
        const Entry *e = &t->entries[at];
        if (e->hash == hash && e->key_len == (uint64_t)len && !memcmp(entry_key(e), key, (size_t)len)) return s;
        s = (s + 1) & t->mask;
    }
}

/* The live entry for a key (retracted or not; in a keeping table perhaps DELETED), or NULL. */
static inline Entry *table_find(Tab *t, const char *key, Py_ssize_t len, uint64_t hash) {
    int32_t at = t->index[table_slot(t, key, len, hash)];
    if (at < 0 || !t->entries[at].row) return NULL;
    return &t->entries[at];
}

static inline int same_row(PyObject *row, const char *image, Py_ssize_t len) {
    return PyBytes_GET_SIZE(row) == len && !memcmp(PyBytes_AS_STRING(row), image, (size_t)len);
}

int tab_init(Tab *t);
void tab_free(Tab *t);
int table_append(Tab *t, const char *key, Py_ssize_t len, uint64_t hash, PyObject *row);
int table_put(Tab *t, Entry *e, const char *key, Py_ssize_t key_len, uint64_t hash, const char *row, Py_ssize_t len);
void table_delete(Tab *t, Entry *e, int keep);

/* The upsert rule, once for the Table (keyed.c) and the State (state.c): what a change finds. */
enum { UPSERT_OK = 0, UPSERT_EXISTS, UPSERT_ABSENT, UPSERT_DIFFERS };
int upsert_finding(const Entry *e, int kind, const char *image, Py_ssize_t len);
int upsert_apply(Tab *t, Entry *e, int kind, const char *key, Py_ssize_t key_len, uint64_t hash, const char *image,
                 Py_ssize_t len, int keep, Py_ssize_t messages[2]);

/* ---------------------------------------------------------------- canonical values (values.c) */

/* The sorted order of the last row's names (rows of a changelog mostly share their columns). */
typedef struct {
    int n, skip; /* the members of the last row sorted (n: -1 none), and its kind member */
    int16_t perm[MAX_MEMBERS];
    Members last;
} OrderCache;

/* Scratch memory of the comparisons of rows: parsed members and canonical texts. */
typedef struct {
    Members a, b;
    const Member *order[MAX_MEMBERS];
    Out ca, cb;
} Scratch;

int plain_int(const char *v, Py_ssize_t len, int64_t *out);
int sole_spelling(const Member *m);
int canon_value(Out *o, const Member *m);
int canon_members(Out *o, const Members *ms, int skip, const Member **order, OrderCache *cache);
int rows_equal(Scratch *sc, const char *a, Py_ssize_t alen, const char *b, Py_ssize_t blen);
void scratch_free(Scratch *sc);

/* ---------------------------------------------------------------- records (records.c) -- */

#define MISSING 0xFFFFFFFFu /* an extra value's length when the row lacks the column */

typedef struct {
    ChangeSpec cs;
    const char *extra[MAX_EXTRAS];
    Py_ssize_t extra_len[MAX_EXTRAS];
    int n_extras, flags;
} RecordSpec;

/* One record of parse_records' buffer. */
typedef struct {
    int kind;
    uint32_t line, offset;
    const char *key, *row, *extra[MAX_EXTRAS], *next;
    Py_ssize_t key_len, row_len, extra_len[MAX_EXTRAS]; /* extra_len -1: missing */
    uint64_t hash;                                      /* of the key (key_hash) */
} Rec;

/* Where a record starts, and its key's hash. */
typedef struct {
    const char *p;
    uint64_t hash;
} RecAt;

int record_spec(RecordSpec *rs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys, PyObject *extra_keys);
int read_rec(const char *p, const char *end, int n_extras, Rec *r);
int check_records(const char *base, const char *end, Py_ssize_t start, int n_extras, RecAt **at, Py_ssize_t *n_at);

/* What a State or an Aggregate asks its handle(code, line, offset, kind, a, b) -> int. */
enum {
    H_EQUAL = 1,     /* a, b: rows whose equality the texts do not tell: 1 equal, 0 not */
    H_EXISTS = 2,    /* +I of a key that is stored (a: the stored row, b: the image): 1 go on, 0 rejected */
    H_ABSENT = 3,    /* a retraction of a row or key not in the table (b: the image) */
    H_DIFFERS = 4,   /* -U unlike the stored row (a, b): 1 go on (a finding, or equal after all), 0 rejected */
    H_NO_TIME = 5,   /* inspect: the row lacks the time column (b: the image) */
    H_TIME_LESS = 6, /* a, b: time values: 1 when a sorts before b */
    H_LATE = 7,      /* replay: a: the stored version's order value, b: the change's: 1 when b is older */
    H_WINDOW = 8,    /* replay: b: a time value: bit 1 later than --until, bit 2 at or before --since */
    H_NO_ORDER = 9,  /* replay: the row lacks the --order-by column (b: the image) */
    H_NO_WINDOW = 10, /* replay: the row lacks the time column (b: the image) */
    H_COLUMNS = 11,   /* aggregate: the first row lacks a column the query reads (b: the image) */
    H_UNMATCHED = 12  /* aggregate: a retraction of a row its group never accumulated (b: the image) */
};

long ask(PyObject *handle, int code, const Rec *r, const char *a, Py_ssize_t alen, const char *b, Py_ssize_t blen);

/* ---------------------------------------------------------------- the module's parts --- */

extern PyTypeObject TableType, StateType;
#if HAVE_AGGREGATE
extern PyTypeObject AggregateType;
#endif

int plain_row(const Members *ms, const char *kind_key, Py_ssize_t kind_len); /* envelopes.c */
PyObject *columns(PyObject *self, PyObject *args);
PyObject *debezium(PyObject *self, PyObject *args);
PyObject *maxwell(PyObject *self, PyObject *args);
PyObject *ogg(PyObject *self, PyObject *args);
PyObject *canal(PyObject *self, PyObject *args);
PyObject *keyed(PyObject *self, PyObject *args);
PyObject *parse_changes(PyObject *self, PyObject *args);
PyObject *apply_changes(PyObject *self, PyObject *args);
PyObject *parse_records(PyObject *self, PyObject *args);
PyObject *encode(PyObject *self, PyObject *args);

#endif
