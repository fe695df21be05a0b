/* cdc.engine.paths.native._kernel: the JSON-lines conversions that move one column, line by line in C.
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
 *
 * A trust boundary: the chunks are untrusted bytes, and every argument (tuples, the packed buffer
 * of apply_changes) crosses from Python, where any caller can forge it. So every type is checked
 * before use, every length, index and position is bounded before it is used to address memory,
 * every allocation and C-API result is checked, and no input can pick a slow path: member names
 * are indexed with a keyed hash (SipHash-1-3, a random key per process) and a bounded fallback.
 * scripts/kernel-sanitize.sh and scripts/kernel-fuzz.py hold it to that.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef const unsigned char *ptr;

#define MAX_DEPTH 64
#define MAX_MEMBERS 512
#define MAX_FLOAT_CHARS 64
/* The longest key (the key columns' values as written, joined by ',') the keyed table takes; a
 * line with a longer key is declined (the general way has no limit). Keys are counted in 32 bits. */
#define MAX_KEY_BYTES ((Py_ssize_t)1 << 20)

#define UNUSED(x) (void)(x)

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* The chunk of an entry point and where to start in it: 0 <= start <= len(chunk). */
static int check_start(Py_ssize_t start, const Py_buffer *chunk) {
    if (start < 0 || start > chunk->len) {
        PyErr_Format(PyExc_ValueError, "start %zd is outside the chunk (0 to %zd)", start, chunk->len);
        return -1;
    }
    return 0;
}

/* A small int of a tuple: an int (no __index__: no Python code runs), lo <= value <= hi. */
static int small_int(PyObject *o, long lo, long hi, long *out) {
    int overflow = 0;
    if (!PyLong_Check(o)) return 0;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* ---------------------------------------------------------------- keyed hash ---------- */

/* SipHash-1-3 (as CPython hashes str and bytes) under a key drawn from os.urandom when the module
 * is loaded: an input cannot be crafted to collide. Words are read in the machine's byte order:
 * the hash is only compared within this process. */
static uint64_t hash_key[2];

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                       \
    do {                                                                                                               \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                                                      \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                                                         \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                                                         \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                                                      \
    } while (0)

/* The last 0 to 7 bytes as one word, little-endian (a memcpy of a variable length is a call). */
static uint64_t tail_bytes(const unsigned char *p, size_t len) {
    uint64_t t = 0;
    switch (len) {
    case 7: t |= (uint64_t)p[6] << 48; /* fall through */
    case 6: t |= (uint64_t)p[5] << 40; /* fall through */
    case 5: t |= (uint64_t)p[4] << 32; /* fall through */
    case 4: t |= (uint64_t)p[3] << 24; /* fall through */
    case 3: t |= (uint64_t)p[2] << 16; /* fall through */
    case 2: t |= (uint64_t)p[1] << 8; /* fall through */
    case 1: t |= (uint64_t)p[0]; /* fall through */
    default: break;
    }
    return t;
}

static uint64_t siphash13(const void *data, size_t len) {
    uint64_t v0 = hash_key[0] ^ 0x736f6d6570736575ULL, v1 = hash_key[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = hash_key[0] ^ 0x6c7967656e657261ULL, v3 = hash_key[1] ^ 0x7465646279746573ULL;
    const unsigned char *p = data;
    uint64_t last = (uint64_t)len << 56, m;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&m, p, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    last |= tail_bytes(p, len);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Member names are hashed often (each object of more than a few members) and are short: a
 * seeded multiply-fold hash (wyhash's step), several times faster than SipHash there. It need not
 * be a PRF: where probing takes too long, the name index sorts instead (NameIndex). */
static uint64_t fold(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t r = a * (b | 1);
    return r ^ (r >> 29) ^ (b >> 31);
#endif
}

static uint64_t name_hash(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = hash_key[0] ^ len, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = fold(h ^ w, hash_key[1] ^ 0x9e3779b97f4a7c15ULL);
    }
    return fold(h ^ tail_bytes(p, len), hash_key[1] ^ 0xe7037ed1a0b428dbULL);
}

/* ---------------------------------------------------------------- output buffer -------- */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

/* Appends without touching Python state (safe without the GIL); -1 when out of memory. */
static int out_put_raw(Out *o, const void *src, Py_ssize_t n) {
    if (n >= o->cap - o->len) { /* >=: an empty buffer gets its memory even for 0 bytes (no memcpy to NULL) */
        if (n > PY_SSIZE_T_MAX - o->len) return -1;
        Py_ssize_t need = o->len + n, cap = o->cap ? o->cap : 1 << 16;
        while (cap < need) cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
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

/* A member name of a nested object, as written (quotes included). */
typedef struct {
    ptr name;
    size_t length;
} Span;

/* Names compared in pairs as they come; past this many they are sorted once the object ends. */
#define NESTED_NAMES 16

static int span_order(const void *a, const void *b) {
    const Span *x = (const Span *)a, *y = (const Span *)b;
    size_t shorter = x->length < y->length ? x->length : y->length;
    int c = memcmp(x->name, y->name, shorter);
    if (c != 0) return c;
    return (x->length > y->length) - (x->length < y->length);
}

/* Whether sorted names hold one twice. */
static int spans_repeat(Span *spans, size_t n) {
    qsort(spans, n, sizeof(Span), span_order);
    for (size_t i = 1; i < n; i++)
        if (spans[i].length == spans[i - 1].length && memcmp(spans[i].name, spans[i - 1].name, spans[i].length) == 0)
            return 1;
    return 0;
}

/* A repeated name keeps its last value (Jackson's rule, and the general way's); the kernel copies
 * a nested object as it stands, so one that repeats a name -- or whose names it cannot compare as
 * bytes, escaped ones -- is declined (NULL), and the general way writes it. Runs without the GIL:
 * plain malloc for objects with many names, freed on every way out. */
static ptr skip_object(ptr p, ptr end, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == '}') return p + 1;
    Span local[NESTED_NAMES];
    Span *spans = local;
    size_t n = 0, room = NESTED_NAMES;
    ptr result = NULL;
    for (;;) {
        int esc = 0;
        ptr name = p;
        if (p >= end || *p != '"' || !(p = scan_string(p, end, &esc)) || esc) goto done;
        size_t length = (size_t)(p - name);
        if (n < NESTED_NAMES) {
            for (size_t i = 0; i < n; i++)
                if (spans[i].length == length && memcmp(spans[i].name, name, length) == 0) goto done;
        } else if (n == room) {
            if (room > (size_t)PY_SSIZE_T_MAX / (2 * sizeof(Span))) goto done;
            Span *grown = malloc(2 * room * sizeof(Span));
            if (grown == NULL) goto done; /* declined: the general way has the memory it needs */
            memcpy(grown, spans, n * sizeof(Span));
            if (spans != local) free(spans);
            spans = grown;
            room *= 2;
        }
        spans[n].name = name;
        spans[n].length = length;
        n++;
        p = ws(p, end);
        if (p >= end || *p != ':') goto done;
        if (!(p = skip_value(ws(p + 1, end), end, depth))) goto done;
        p = ws(p, end);
        if (p >= end) goto done;
        if (*p == '}') {
            if (n <= NESTED_NAMES || !spans_repeat(spans, n)) result = p + 1;
            goto done;
        }
        if (*p != ',') goto done;
        p = ws(p + 1, end);
    }
done:
    if (spans != local) free(spans);
    return result;
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

/* ---------------------------------------------------------------- member names -------- */

/* Two names (with their quotes) are the same: short ones compared in a loop (a memcmp call was a
 * sixth of the time spent parsing a changelog line), long ones with memcmp. */
static int same_name(const Member *a, const Member *b) {
    Py_ssize_t n = a->key_end - a->key;
    if (b->key_end - b->key != n) return 0;
    if (n > 16) return !memcmp(a->key, b->key, (size_t)n);
    for (Py_ssize_t i = 0; i < n; i++)
        if (a->key[i] != b->key[i]) return 0;
    return 1;
}

/* A total order of names (length, then bytes) for the sorted fallback. */
static int name_order(const void *x, const void *y) {
    const Member *a = *(const Member *const *)x, *b = *(const Member *const *)y;
    Py_ssize_t na = a->key_end - a->key, nb = b->key_end - b->key;
    if (na != nb) return na < nb ? -1 : 1;
    return memcmp(a->key, b->key, (size_t)na);
}

#define NAME_SLOTS 2048 /* a power of two >= 4 * MAX_MEMBERS: the index is at most a quarter full */

/* The probes allowed per name beyond the first (then the index is sorted instead); -1: the
 * default. Set only by _set_probe_budget, for tests. */
static Py_ssize_t probe_budget_override = -1;

/* An index of an object's member names: open addressing on the keyed hash while probing stays
 * short; past a budget of probes (an input cannot make that happen without the key, but nothing
 * may rest on that), the names sorted, so finding one is O(log n) compares whatever the names. */
typedef struct {
    const Members *ms;
    Py_ssize_t mask, probes, budget;
    int sorted;
    int16_t slot[NAME_SLOTS]; /* member index + 1; 0: empty */
    const Member *by_name[MAX_MEMBERS];
} NameIndex;

/* The index sorted; 1 if a name is repeated. */
static int index_sort(NameIndex *ix) {
    const Members *ms = ix->ms;
    ix->sorted = 1;
    for (int i = 0; i < ms->n; i++) ix->by_name[i] = &ms->m[i];
    qsort(ix->by_name, (size_t)ms->n, sizeof(ix->by_name[0]), name_order);
    for (int i = 1; i < ms->n; i++)
        if (same_name(ix->by_name[i - 1], ix->by_name[i])) return 1;
    return 0;
}

/* Index the names of ms; 1 if a name is repeated, else 0. */
static int index_names(NameIndex *ix, const Members *ms) {
    Py_ssize_t slots = 64;
    while (slots < 4 * (Py_ssize_t)ms->n) slots *= 2;
    ix->ms = ms;
    ix->mask = slots - 1;
    ix->sorted = 0;
    ix->probes = 0;
    ix->budget = probe_budget_override >= 0 ? probe_budget_override : 2 * (Py_ssize_t)ms->n + 32;
    memset(ix->slot, 0, (size_t)slots * sizeof(ix->slot[0]));
    for (int i = 0; i < ms->n; i++) {
        const Member *m = &ms->m[i];
        for (Py_ssize_t k = (Py_ssize_t)(name_hash(m->key, (size_t)(m->key_end - m->key)) & (uint64_t)ix->mask);;
             k = (k + 1) & ix->mask) {
            if (!ix->slot[k]) {
                ix->slot[k] = (int16_t)(i + 1);
                break;
            }
            if (++ix->probes > ix->budget) return index_sort(ix);
            if (same_name(m, &ms->m[ix->slot[k] - 1])) return 1;
        }
    }
    return 0;
}

/* Whether the index holds a member named as `name` (distinct names indexed). */
static int index_has(NameIndex *ix, const Member *name) {
    if (!ix->sorted) {
        for (Py_ssize_t k = (Py_ssize_t)(name_hash(name->key, (size_t)(name->key_end - name->key)) & (uint64_t)ix->mask);;
             k = (k + 1) & ix->mask) {
            if (!ix->slot[k]) return 0;
            if (same_name(name, &ix->ms->m[ix->slot[k] - 1])) return 1;
            if (++ix->probes > ix->budget) break;
        }
        ix->budget = PY_SSIZE_T_MAX; /* the lookups took too many probes: sorted from here on */
        index_sort(ix);
    }
    const Member *const *found =
        bsearch(&name, ix->by_name, (size_t)ix->ms->n, sizeof(ix->by_name[0]), name_order);
    return found != NULL;
}

/* Whether names repeat, found with an index (out of line: its frame is large). */
static Py_NO_INLINE int has_repeated_names_indexed(const Members *ms) {
    NameIndex ix;
    return index_names(&ix, ms);
}

/* orjson keeps the last of repeated keys; such a row goes the general way. Up to 8 names are
 * compared pair by pair (fastest for the usual row: at most 3.5 comparisons per name, whatever
 * the names); more are indexed, so the time stays linear in the names' bytes. */
static int has_repeated_keys(const Members *ms) {
    if (ms->n <= 8) {
        for (int i = 1; i < ms->n; i++)
            for (int j = 0; j < i; j++)
                if (span_is(ms->m[i].key, ms->m[i].key_end, (const char *)ms->m[j].key, ms->m[j].key_end - ms->m[j].key))
                    return 1;
        return 0;
    }
    return has_repeated_names_indexed(ms);
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

/* (output, position, lines, counts per kind, dropped); frees the output buffer. */
static PyObject *result(Out *o, Py_ssize_t pos, Py_ssize_t lines, const Py_ssize_t counts[4], Py_ssize_t dropped) {
    PyObject *data = PyBytes_FromStringAndSize(o->buf ? o->buf : "", o->len);
    PyMem_RawFree(o->buf);
    o->buf = NULL;
    if (!data) return NULL;
    return Py_BuildValue("(Nnn(nnnn)n)", data, pos, lines, counts[0], counts[1], counts[2], counts[3], dropped);
}

/* ---------------------------------------------------------------- one column ---------- */

#define MAX_CODES 64

/* columns(chunk, start, column_key, name_key, codes)
 *   column_key, name_key: JSON strings with quotes (name_key b"" when the same column)
 *   codes: tuple of (code as JSON string, kind index, first member or None when dropped)
 * counts are per kind index. */
static PyObject *columns(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, column, name;
    Py_ssize_t start;
    PyObject *codes;
    if (!PyArg_ParseTuple(args, "y*ny*y*O!", &chunk, &start, &column, &name, &PyTuple_Type, &codes)) return NULL;
    Py_ssize_t n_codes = PyTuple_GET_SIZE(codes);
    const char *code_text[MAX_CODES], *member[MAX_CODES];
    Py_ssize_t code_len[MAX_CODES], member_len[MAX_CODES], counts[4] = {0};
    long kind[MAX_CODES];
    PyObject *result_obj = NULL;
    Members *ms = NULL;
    Out o = {0};
    if (check_start(start, &chunk) < 0) goto done;
    if (n_codes > MAX_CODES) {
        PyErr_SetString(PyExc_ValueError, "too many codes");
        goto done;
    }
    /* Every entry is checked before anything of it is read: (bytes, int 0..3, bytes or None).
     * The pointers stay valid: codes (a tuple of tuples) holds its bytes for the whole call. */
    for (Py_ssize_t i = 0; i < n_codes; i++) {
        PyObject *entry = PyTuple_GET_ITEM(codes, i), *code, *m;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyBytes_Check(code = PyTuple_GET_ITEM(entry, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(entry, 1)) || ((m = PyTuple_GET_ITEM(entry, 2)) != Py_None && !PyBytes_Check(m))) {
            PyErr_SetString(PyExc_TypeError, "codes: (bytes, int, bytes | None) expected");
            goto done;
        }
        if (!small_int(PyTuple_GET_ITEM(entry, 1), 0, 3, &kind[i])) {
            PyErr_SetString(PyExc_ValueError, "codes: kind index out of range (0 to 3)");
            goto done;
        }
        code_text[i] = PyBytes_AS_STRING(code);
        code_len[i] = PyBytes_GET_SIZE(code);
        member[i] = m == Py_None ? NULL : PyBytes_AS_STRING(m);
        member_len[i] = m == Py_None ? 0 : PyBytes_GET_SIZE(m);
    }
    if (!(ms = PyMem_Malloc(sizeof(Members)))) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
        Py_ssize_t lines = 0, dropped = 0;
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
        if (!PyErr_Occurred()) result_obj = result(&o, p - base, lines, counts, dropped);
    }
done:
    PyMem_Free(ms);
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

/* Every key of `after` is a key of `before` (a complete before image); both hold distinct names.
 * In the same column order each is found at once; otherwise before's names are indexed. */
static int covers(const Members *before, const Members *after) {
    NameIndex ix;
    int indexed = 0;
    for (int i = 0; i < after->n; i++) {
        if (i < before->n && same_name(&before->m[i], &after->m[i])) continue;
        if (!indexed) {
            if (index_names(&ix, before)) return 0; /* repeated names: not a plain image (checked before) */
            indexed = 1;
        }
        if (!index_has(&ix, &after->m[i])) return 0;
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
    UNUSED(self);
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
    if (check_start(start, &chunk) < 0) goto done;
    if (PyTuple_GET_SIZE(firsts) != 4) {
        PyErr_SetString(PyExc_ValueError, "four first members expected");
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        PyObject *m = PyTuple_GET_ITEM(firsts, i);
        if (!PyBytes_Check(m)) {
            PyErr_SetString(PyExc_TypeError, "first members: bytes expected");
            goto done;
        }
        first[i] = PyBytes_AS_STRING(m);
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
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
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
                    /* PySet_Contains may run Python code (__eq__ of a member of a set subclass
                     * or of another type): nothing below relies on state it could change
                     * (the chunk is held as a buffer; a bytearray cannot be resized meanwhile). */
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
        PyObject *data = PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len);
        if (data) /* (output, position, lines, counts, dropped, schema) */
            result_obj = Py_BuildValue("(Nnn(nnnn)iO)", data, p - base, lines, counts[0], counts[1], counts[2],
                                       counts[3], 0, unknown ? unknown : Py_None);
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


/* ================================================================ Canal, Maxwell, OGG ====== */

/* Each reads a line as CoreDecoder (core/envelopes) reads its event and writes the changelog rows
 * it makes, values as written (Canal's converted as its sqlType says); a line it is not sure of
 * is declined, as debezium() does: a tombstone, a message that is not a row change (DDL, markers,
 * truncates), an image that is not a plain object, a value it does not convert exactly. All
 * return (output, position, lines, counts per kind, 0) and, ogg, the shapes it learnt. */

/* An image the rows can be written from as they are: distinct unescaped names, no kind column. */
static int plain_row(const Members *ms, const char *kind_key, Py_ssize_t kind_len) {
    if (any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    return find_key(ms, kind_key, kind_len) == -1;
}

/* The 4 first members (bytes) of an envelope entry point, checked. */
static int firsts_of(PyObject *firsts, const char *first[4], Py_ssize_t first_len[4]) {
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

/* The value of a member that is an unescaped string equal to text (a type, an op code). */
static int member_is(const Members *ms, int at, const char *text, Py_ssize_t n) {
    return at >= 0 && !ms->m[at].val_escaped && span_is(ms->m[at].val, ms->m[at].val_end, text, n);
}

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

/* maxwell(chunk, start, kind_key, firsts, bootstrap_insert) -- MaxwellDecoder without state,
 * metadata or filters: insert +I(data), update -U(data over old) +U(data), delete -D(data),
 * bootstrap-insert +I(data) when bootstrap_insert. */
static PyObject *maxwell(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    int bootstrap;
    const char *first[4];
    Py_ssize_t first_len[4];
    PyObject *firsts, *result_obj = NULL;
    Out o = {0};
    Members *event = NULL, *data = NULL, *old = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!p", &chunk, &start, &kind_key, &PyTuple_Type, &firsts, &bootstrap)) return NULL;
    if (check_start(start, &chunk) < 0 || firsts_of(firsts, first, first_len) < 0) goto done;
    event = PyMem_Malloc(sizeof(Members));
    data = PyMem_Malloc(sizeof(Members));
    old = PyMem_Malloc(sizeof(Members));
    if (!event || !data || !old) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
        Py_ssize_t lines = 0, counts[4] = {0};
        const char *kk = kind_key.buf;
        Py_ssize_t kl = kind_key.len;
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            if (!line_object(p, nl ? nl : end, event) || any_key_escaped(event) || has_repeated_keys(event)) break;
            int at_type = find_key(event, "\"type\"", 6), at_data = find_key(event, "\"data\"", 6);
            if (at_data < 0 || *event->m[at_data].val != '{') break;
            const Member *d = &event->m[at_data];
            if (!members_of(d->val, d->val_end, data) || !plain_row(data, kk, kl)) break;
            int insert = member_is(event, at_type, "\"insert\"", 8) ||
                         (bootstrap && member_is(event, at_type, "\"bootstrap-insert\"", 18));
            if (insert) {
                if (put_row(&o, first[0], first_len[0], data, -1) < 0) goto done;
                counts[0]++;
            } else if (member_is(event, at_type, "\"delete\"", 8)) {
                if (put_row(&o, first[3], first_len[3], data, -1) < 0) goto done;
                counts[3]++;
            } else if (member_is(event, at_type, "\"update\"", 8)) {
                int at_old = find_key(event, "\"old\"", 5);
                const Members *before = data;
                if (at_old >= 0 && !span_is(event->m[at_old].val, event->m[at_old].val_end, "null", 4)) {
                    const Member *ov = &event->m[at_old];
                    /* old's names must be data's: an old-only column would come last (general way) */
                    if (*ov->val != '{' || !members_of(ov->val, ov->val_end, old) || any_key_escaped(old) ||
                        has_repeated_keys(old) || !covers(data, old))
                        break;
                    before = old;
                }
                if ((before == data ? put_row(&o, first[1], first_len[1], data, -1)
                                    : put_merged(&o, first[1], first_len[1], data, before)) < 0 ||
                    put_row(&o, first[2], first_len[2], data, -1) < 0)
                    goto done;
                counts[1]++, counts[2]++;
            } else {
                break; /* bootstrap markers, DDL, unknown types: the general way counts or fails them */
            }
            lines++;
            p = nl ? nl + 1 : end;
        }
        result_obj = result(&o, p - base, lines, counts, 0);
    }
done:
    PyMem_Free(event);
    PyMem_Free(data);
    PyMem_Free(old);
    PyMem_RawFree(o.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
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

/* ogg(chunk, start, kind_key, firsts, shapes, complete)
 *   -> (output, position, lines, counts, 0, learnt: ((table text, after text), ...))
 * OggDecoder without state, metadata or filters: I +I(after); U -U(before) +U(after) with a
 * whole before image (every name of after, and of the table's last insert); D -D(before), whole
 * as well. shapes: the tables' last inserts' names Python knows (complete: all of them); an
 * insert this call reads is reported in learnt, for Python's _shapes. A compressed update (after
 * lacks names of before), a partial before image, T and other op types go the general way. */
static PyObject *ogg(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    int complete;
    const char *first[4];
    Py_ssize_t first_len[4];
    PyObject *firsts, *given, *result_obj = NULL, *learnt = NULL;
    Out o = {0};
    Shapes sh;
    sh.n = 0;
    Members *event = NULL, *before = NULL, *after = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!p", &chunk, &start, &kind_key, &PyTuple_Type, &firsts, &PyTuple_Type, &given,
                          &complete))
        return NULL;
    if (check_start(start, &chunk) < 0 || firsts_of(firsts, first, first_len) < 0 || shapes_of(given, complete, &sh) < 0)
        goto done;
    event = PyMem_Malloc(sizeof(Members));
    before = PyMem_Malloc(sizeof(Members));
    after = PyMem_Malloc(sizeof(Members));
    if (!event || !before || !after) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
        Py_ssize_t lines = 0, counts[4] = {0};
        const char *kk = kind_key.buf;
        Py_ssize_t kl = kind_key.len;
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            if (!line_object(p, nl ? nl : end, event) || any_key_escaped(event) || has_repeated_keys(event)) break;
            int at_op = find_key(event, "\"op_type\"", 9), at_before = find_key(event, "\"before\"", 8),
                at_after = find_key(event, "\"after\"", 7), unknown = 0;
            int insert = member_is(event, at_op, "\"I\"", 3), update = member_is(event, at_op, "\"U\"", 3),
                delete = member_is(event, at_op, "\"D\"", 3);
            if (!insert && !update && !delete) break;
            Shape *shape = shape_for(&sh, event, &unknown);
            if (!shape) break;
            int ok = 1;
            const Member *bv = at_before >= 0 ? &event->m[at_before] : NULL;
            const Member *av = at_after >= 0 ? &event->m[at_after] : NULL;
            if (insert || update)
                ok = av && *av->val == '{' && members_of(av->val, av->val_end, after) && plain_row(after, kk, kl);
            if (ok && (update || delete))
                ok = bv && *bv->val == '{' && members_of(bv->val, bv->val_end, before) && before->n > 0 &&
                     plain_row(before, kk, kl) && (!shape->has_shape || has_shape_names(before, shape));
            /* an update whose after image names fewer columns is compressed: merged the general way */
            if (ok && update) ok = after->n == before->n && covers(before, after);
            if (!ok) {
                if (unknown) sh.n--;
                break;
            }
            if (insert) {
                if (put_row(&o, first[0], first_len[0], after, -1) < 0) goto done;
                counts[0]++;
                if (shape_room(shape, after->n) < 0) goto done;
                for (int j = 0; j < after->n; j++) {
                    shape->name[j] = (const char *)after->m[j].key;
                    shape->name_len[j] = after->m[j].key_end - after->m[j].key;
                }
                shape->n_names = after->n;
                shape->has_shape = shape->learnt = 1;
                shape->after = av->val, shape->after_end = av->val_end;
            } else if (update) {
                if (put_row(&o, first[1], first_len[1], before, -1) < 0 ||
                    put_row(&o, first[2], first_len[2], after, -1) < 0)
                    goto done;
                counts[1]++, counts[2]++;
            } else {
                if (put_row(&o, first[3], first_len[3], before, -1) < 0) goto done;
                counts[3]++;
            }
            lines++;
            p = nl ? nl + 1 : end;
        }
        learnt = PyList_New(0);
        for (int i = 0; learnt && i < sh.n; i++) {
            if (!sh.t[i].learnt) continue;
            PyObject *item = Py_BuildValue("(y#y#)", sh.t[i].table, sh.t[i].table_len, sh.t[i].after,
                                           (Py_ssize_t)(sh.t[i].after_end - sh.t[i].after));
            if (!item || PyList_Append(learnt, item) < 0) Py_CLEAR(learnt);
            Py_XDECREF(item);
        }
        if (!learnt) goto done;
        PyObject *data = PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len);
        if (data)
            result_obj = Py_BuildValue("(Nnn(nnnn)iN)", data, p - base, lines, counts[0], counts[1], counts[2],
                                       counts[3], 0, learnt);
        else
            Py_DECREF(learnt);
        learnt = NULL;
    }
done:
    shapes_free(&sh);
    PyMem_Free(event);
    PyMem_Free(before);
    PyMem_Free(after);
    PyMem_RawFree(o.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
}

/* ---------------------------------------------------------------- Canal ----------------- */

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

/* canal(chunk, start, kind_key, firsts, raw_values)
 *     -> (output, position, lines, counts, 0, sqlTypes: the texts of the sqlType objects of the
 *         lines taken, each once in the order first seen, then the last one)
 * CanalDecoder without state, metadata or filters: INSERT +I and DELETE -D per row of data;
 * UPDATE -U(data[i] with old[i]'s values) and +U(data[i]) per row, old null or as long as data.
 * Values converted by sqlType (integers, decimals, floats, booleans as text; unless raw_values),
 * where this code converts them exactly. The decoder caches converters by sqlType: Python
 * replays the sqlTypes reported, so that its cache is the one the row path would have; a line
 * whose sqlType has a code that is not written as an integer goes the general way. */
static PyObject *canal(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, kind_key;
    Py_ssize_t start;
    int raw_values, nomemory = 0, n_seen = 0;
    const char *first[4], *seen[MAX_SEEN], *last = NULL;
    Py_ssize_t first_len[4], seen_len[MAX_SEEN], last_len = 0;
    PyObject *firsts, *result_obj = NULL;
    Out o = {0};
    CanalEvent ce;
    memset(&ce, 0, sizeof ce);
    if (!PyArg_ParseTuple(args, "y*ny*O!p", &chunk, &start, &kind_key, &PyTuple_Type, &firsts, &raw_values)) return NULL;
    if (check_start(start, &chunk) < 0 || firsts_of(firsts, first, first_len) < 0) goto done;
    ce.event = PyMem_Malloc(sizeof(Members));
    ce.types = PyMem_Malloc(sizeof(Members));
    if (!ce.event || !ce.types) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
        Py_ssize_t lines = 0, counts[4] = {0};
        const char *kk = kind_key.buf;
        Py_ssize_t kl = kind_key.len;
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            const Members *event = ce.event;
            if (!canal_event(p, nl ? nl : end, &ce, &nomemory) || any_key_escaped(event) || has_repeated_keys(event))
                break;
            int at_type = find_key(event, "\"type\"", 6);
            int kind = member_is(event, at_type, "\"INSERT\"", 8)   ? 0
                       : member_is(event, at_type, "\"UPDATE\"", 8) ? 1
                       : member_is(event, at_type, "\"DELETE\"", 8) ? 3
                                                                   : -1;
            if (kind < 0 || !ce.has_data) break;
            /* the column types: sqlType, an object of distinct plain names (else no conversion) */
            int n_types = 0, at_types = -1;
            if (ce.has_types && !raw_values) {
                if (any_key_escaped(ce.types) || has_repeated_keys(ce.types) || float_code(ce.types)) break;
                n_types = ce.types->n;
                at_types = find_key(event, "\"sqlType\"", 9);
                if (at_types < 0) break; /* never: has_types says it was read */
                const Member *tm = &event->m[at_types];
                int known = 0;
                for (int i = 0; i < n_seen && !known; i++)
                    known = span_is(tm->val, tm->val_end, seen[i], seen_len[i]);
                if (!known && n_seen == MAX_SEEN) break;
            }
            /* old: null or absent, else an array of objects as long as data (an UPDATE's) */
            int with_old = 0;
            if (kind == 1) {
                int at_old = find_key(event, "\"old\"", 5);
                if (at_old >= 0 && !span_is(event->m[at_old].val, event->m[at_old].val_end, "null", 4)) {
                    if (!ce.has_old || ce.old.n != ce.data.n) break;
                    with_old = 1;
                }
            }
            Py_ssize_t line_start = o.len;
            int ok = 1;
            for (int i = 0; i < ce.data.n && ok; i++) {
                const Members *row = ce.data.row[i], *old = with_old ? ce.old.row[i] : NULL;
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
                    got = put_canal_row(&o, first[1], first_len[1], row, old, ce.types, n_types);
                    if (got > 0) got = put_canal_row(&o, first[2], first_len[2], row, NULL, ce.types, n_types);
                } else {
                    got = put_canal_row(&o, first[kind], first_len[kind], row, NULL, ce.types, n_types);
                }
                if (got < 0) nomemory = 1;
                if (got <= 0) ok = 0;
            }
            if (nomemory) break;
            if (!ok) {
                o.len = line_start; /* what this line wrote goes: the general way writes it */
                break;
            }
            if (kind == 1) counts[1] += ce.data.n, counts[2] += ce.data.n;
            else counts[kind] += ce.data.n;
            if (at_types >= 0) { /* a sqlType the decoder sees: reported */
                const Member *tm = &event->m[at_types];
                int known = 0;
                for (int i = 0; i < n_seen && !known; i++)
                    known = span_is(tm->val, tm->val_end, seen[i], seen_len[i]);
                if (!known) {
                    seen[n_seen] = (const char *)tm->val;
                    seen_len[n_seen++] = tm->val_end - tm->val;
                }
                last = (const char *)tm->val, last_len = tm->val_end - tm->val;
            }
            lines++;
            p = nl ? nl + 1 : end;
        }
        if (nomemory) {
            PyErr_NoMemory();
            goto done;
        }
        PyObject *types = PyList_New(0);
        for (int i = 0; types && i <= n_seen; i++) {
            const char *text = i < n_seen ? seen[i] : last;
            Py_ssize_t len = i < n_seen ? seen_len[i] : last_len;
            if (!text) break;
            PyObject *item = PyBytes_FromStringAndSize(text, len);
            if (!item || PyList_Append(types, item) < 0) Py_CLEAR(types);
            Py_XDECREF(item);
        }
        PyObject *data = types ? PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len) : NULL;
        if (data)
            result_obj = Py_BuildValue("(Nnn(nnnn)iN)", data, p - base, lines, counts[0], counts[1], counts[2],
                                       counts[3], 0, types);
        else
            Py_XDECREF(types);
    }
done:
    PyMem_Free(ce.event);
    PyMem_Free(ce.types);
    rows_free(&ce.data);
    rows_free(&ce.old);
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

/* (kind_key, spellings, key_keys) → a ChangeSpec pointing into those bytes (kept alive by the caller:
 * tuples hold their items). Every item is checked before anything of it is read. */
static int change_spec(ChangeSpec *cs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys) {
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

static int read_change(ptr p, ptr line_end, const ChangeSpec *cs, Members *ms, Change *c) {
    if (!line_object(p, line_end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    c->at_kind = find_key(ms, cs->kind_key, cs->kind_len);
    if (c->at_kind < 0 || ms->m[c->at_kind].val_escaped) return 0;
    c->kind = -1;
    for (int i = 0; i < cs->n_spellings && c->kind < 0; i++)
        if (span_is(ms->m[c->at_kind].val, ms->m[c->at_kind].val_end, cs->spelling[i], cs->spelling_len[i]))
            c->kind = cs->spelling_kind[i];
    if (c->kind < 0) return 0;
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

/* The entries and their index: the Table type's, and each State's. */
typedef struct {
    Entry *entries;
    Py_ssize_t n_entries, cap, live;
    int32_t *index; /* -1 empty, else an entry; size 4 * cap, a power of two */
    Py_ssize_t mask;
} Tab;

typedef struct {
    PyObject_HEAD
    Tab tab;
} Table;

static PyTypeObject TableType;

static const char *entry_key(const Entry *e) { return e->key_len <= INLINE_KEY ? e->key.bytes : e->key.heap; }

/* The table's hash: the keyed SipHash of this module (CPython's _Py_HashBytes is private API). */
static uint64_t key_hash(const char *key, Py_ssize_t len) { return siphash13(key, (size_t)len); }

/* The index slot for this key: empty (-1), or holding the entry with this key (live or not). */
static Py_ssize_t table_slot(const Tab *t, const char *key, Py_ssize_t len, uint64_t hash) {
    Py_ssize_t s = (Py_ssize_t)(hash & (uint64_t)t->mask);
    for (;;) {
        int32_t at = t->index[s];
        if (at < 0) return s;
        const Entry *e = &t->entries[at];
        if (e->hash == hash && e->key_len == (uint64_t)len && !memcmp(entry_key(e), key, (size_t)len)) return s;
        s = (s + 1) & t->mask;
    }
}

static void entry_clear(Entry *e) {
    Py_CLEAR(e->row);
    Py_CLEAR(e->order);
    if (e->key_len > INLINE_KEY) PyMem_RawFree(e->key.heap);
    e->key_len = 0;
}

/* Room for one more entry: drop deleted entries, or double; the index is rebuilt. Whatever can
 * fail (the allocations) comes first: on a MemoryError the table is as it was. */
static int table_make_room(Tab *t) {
    if (t->n_entries < t->cap) return 0;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < t->n_entries; i++) kept += t->entries[i].row != NULL;
    Py_ssize_t cap = kept * 2 > t->cap ? t->cap * 2 : t->cap;
    if (cap < 1024) cap = 1024;
    if (cap != t->cap) {
        if (cap > MAX_ENTRIES) {
            PyErr_SetString(PyExc_MemoryError, "table: too many keys");
            return -1;
        }
        int32_t *index = PyMem_RawMalloc((size_t)cap * 4 * sizeof(int32_t));
        if (!index) {
            PyErr_NoMemory();
            return -1;
        }
        Entry *grown = PyMem_RawRealloc(t->entries, (size_t)cap * sizeof(Entry));
        if (!grown) { /* the entries are where they were: the old index still holds */
            PyMem_RawFree(index);
            PyErr_NoMemory();
            return -1;
        }
        t->entries = grown; /* same entries, same numbers: the old index still holds */
        PyMem_RawFree(t->index);
        t->index = index;
        t->cap = cap;
        t->mask = cap * 4 - 1;
    }
    /* nothing fails from here on */
    kept = 0;
    for (Py_ssize_t i = 0; i < t->n_entries; i++) {
        if (t->entries[i].row) t->entries[kept++] = t->entries[i];
        else entry_clear(&t->entries[i]);
    }
    t->n_entries = kept;
    memset(t->index, 0xff, (size_t)(t->mask + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < t->n_entries; i++) {
        Py_ssize_t s = (Py_ssize_t)(t->entries[i].hash & (uint64_t)t->mask);
        while (t->index[s] >= 0) s = (s + 1) & t->mask;
        t->index[s] = (int32_t)i;
    }
    return 0;
}

/* Put a new entry at the end (the key absent or deleted), taking the reference to row. Whatever
 * can fail comes first: on an error the table is unchanged and row still the caller's. */
static int table_append(Tab *t, const char *key, Py_ssize_t len, uint64_t hash, PyObject *row) {
    if (len < 0 || len > MAX_KEY_BYTES) {
        PyErr_SetString(PyExc_ValueError, "table: key too long");
        return -1;
    }
    if (table_make_room(t) < 0) return -1;
    char *heap = NULL;
    if (len > INLINE_KEY && !(heap = PyMem_RawMalloc((size_t)len))) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t s = table_slot(t, key, len, hash); /* again: the index may have been rebuilt */
    Entry *e = &t->entries[t->n_entries];
    e->hash = hash;
    e->row = row;
    e->order = NULL;
    e->aux = 0;
    e->flags = 0;
    e->key_len = (uint32_t)len;
    if (heap) {
        memcpy(heap, key, (size_t)len);
        e->key.heap = heap;
    } else if (len) {
        memcpy(e->key.bytes, key, (size_t)len);
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
static Entry *table_find(Tab *t, const char *key, Py_ssize_t len, uint64_t hash) {
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
static int apply_change(Tab *t, int kind, const char *key, Py_ssize_t key_len, const char *image,
                        Py_ssize_t image_len, Applied *a) {
    if (kind < 0 || kind > 3) { /* the callers check: never reached */
        PyErr_SetString(PyExc_SystemError, "kernel: kind index out of range");
        return -1;
    }
    uint64_t hash = key_hash(key, key_len);
    Entry *e = table_find(t, key, key_len, hash);
    int stored = e && !(e->flags & RETRACTED);
    if (kind == 0 || kind == 2) { /* +I, +U */
        if (stored && kind == 0) return 0;
        PyObject *row = PyBytes_FromStringAndSize(image, image_len);
        if (!row) return -1;
        if (e) {
            Py_SETREF(e->row, row);
            e->flags &= ~RETRACTED;
        } else if (table_append(t, key, key_len, hash, row) < 0) {
            Py_DECREF(row);
            return -1;
        }
        a->retract += stored ? 2 : 1, a->upsert += 1;
    } else if (!stored) {
        return 0;
    } else if (kind == 1) { /* -U: the stored row must be the one retracted */
        if (!same_row(e->row, image, image_len)) return 0;
        e->flags |= RETRACTED;
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
static int apply_update(Tab *t, const char *key, Py_ssize_t key_len, const char *before, Py_ssize_t before_len,
                        const char *after, Py_ssize_t after_len, Applied *a) {
    Entry *e = table_find(t, key, key_len, key_hash(key, key_len));
    if (!e || (e->flags & RETRACTED) || !same_row(e->row, before, before_len)) return 0;
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
    if (table_make_room(&t->tab) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void tab_free(Tab *t) {
    for (Py_ssize_t i = 0; i < t->n_entries; i++) entry_clear(&t->entries[i]);
    PyMem_RawFree(t->entries);
    PyMem_RawFree(t->index);
    t->entries = NULL;
    t->index = NULL;
    t->n_entries = t->cap = t->live = 0;
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

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.Table",
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
    UNUSED(self);
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
    if (check_start(start, &chunk) < 0 || change_spec(&cs, &kind_key, spellings, key_keys) < 0) goto done;
    if (!(ms = PyMem_RawMalloc(sizeof(Members)))) {
        PyErr_NoMemory();
        goto done;
    }
    {
        ptr base = chunk.buf, end = base + chunk.len, p = base + start;
        Py_ssize_t lines = 0;
        while (p < end) {
            ptr nl = memchr(p, '\n', (size_t)(end - p));
            int kind, got = parse_change(p, nl ? nl : end, &cs, ms, &kind, &key, &image);
            if (got < 0) {
                PyErr_NoMemory();
                goto done;
            }
            if (!got) break;
            got = apply_change(&table->tab, kind, key.buf, key.len, image.buf, image.len, &a);
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
 *     [kind u8][line offset u32][key length u32][key][row length u32][row]
 * in the machine's byte order. The chunk must be read-only (bytes): nothing may change it while
 * it is read without the GIL. Lengths fit: the chunk is under 2 GiB and a key at most
 * MAX_KEY_BYTES. */
static PyObject *parse_changes(PyObject *self, PyObject *args) {
    UNUSED(self);
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
    if (!chunk.readonly) {
        PyErr_SetString(PyExc_TypeError, "parse_changes: the chunk must be read-only (bytes): it is read without the GIL");
        goto done;
    }
    if (chunk.len >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "chunk too large");
        goto done;
    }
    if (check_start(start, &chunk) < 0 || change_spec(&cs, &kind_key, spellings, key_keys) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS;
    ptr base = chunk.buf, end = base + chunk.len, p = base + start;
    ms = PyMem_RawMalloc(sizeof(Members));
    failed = !ms;
    while (!failed && p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        Change c;
        if (!read_change(p, nl ? nl : end, &cs, ms, &c)) break;
        /* written in place: [kind][offset][key length][key][row length][row], lengths after */
        unsigned char k = (unsigned char)c.kind;
        uint32_t offset = (uint32_t)(p - base), size = 0;
        Py_ssize_t at_size = 0;
        failed = out_put_raw(&packed, &k, 1) < 0 || out_put_raw(&packed, &offset, 4) < 0;
        if (!failed) {
            at_size = packed.len;
            failed = out_put_raw(&packed, &size, 4) < 0 || put_key(&packed, &cs, ms, &c) < 0;
        }
        if (!failed) {
            size = (uint32_t)(packed.len - at_size - 4); /* <= MAX_KEY_BYTES (read_change) */
            memcpy(packed.buf + at_size, &size, 4);
            at_size = packed.len;
            failed = out_put_raw(&packed, &size, 4) < 0 || put_image(&packed, ms, c.at_kind) < 0;
        }
        if (failed) break;
        size = (uint32_t)(packed.len - at_size - 4); /* the row: at most the line, under 2 GiB */
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
static PyObject *apply_changes(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer packed;
    PyObject *result_obj = NULL;
    Table *table;
    Applied a = {{0}, 0, 0};
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

/* ================================================================ the state engine ========= */

/* materialize without a key or with --dedup, inspect, replay: changes parsed without the GIL
 * (parse_records, on a thread) into records that a State applies (with the GIL), and
 * debezium-encode in one pass (encode). What the general state decides from Python values is
 * decided here from canonical texts: two scalar JSON values have the same canonical text exactly
 * when Python finds them equal (1 == 1.0 == true, "é" == "\u00e9"), and two rows have the same
 * canonical text exactly when they are equal dicts. Where that cannot be told from the text (a
 * nested value, a float of more than 15 significant digits or past 1e15), a State asks Python
 * (its handle), and parse_records declines a line whose key depends on it. */

/* ---------------------------------------------------------------- canonical values ----- */

/* A string with escapes, decoded: '"', its UTF-8 text with '"' and '\' escaped, '"'. The string
 * was validated (scan_string): its escapes are whole. 1, or -1 when out of memory. */
static int canon_escaped_string(Out *o, ptr p, ptr end) {
    if (out_put_raw(o, "\"", 1) < 0) return -1;
    p++;
    end--;
    ptr run = p;
    while (p < end) {
        if (*p != '\\') {
            p++;
            continue;
        }
        if (out_put_raw(o, run, p - run) < 0 || end - p < 2) return -1;
        unsigned char e = p[1], buf[4];
        Py_ssize_t n = 1;
        if (e == 'u') {
            unsigned cp = 0, lo = 0;
            if (end - p < 6 || !hex4(p + 2, &cp)) return -1;
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 6 || !hex4(p + 2, &lo)) return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (cp == '"' || cp == '\\') {
                buf[0] = '\\', buf[1] = (unsigned char)cp, n = 2;
            } else if (cp < 0x80) {
                buf[0] = (unsigned char)cp;
            } else if (cp < 0x800) {
                buf[0] = (unsigned char)(0xC0 | (cp >> 6)), buf[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
            } else if (cp < 0x10000) {
                buf[0] = (unsigned char)(0xE0 | (cp >> 12)), buf[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                buf[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
            } else {
                buf[0] = (unsigned char)(0xF0 | (cp >> 18)), buf[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                buf[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), buf[3] = (unsigned char)(0x80 | (cp & 0x3F)), n = 4;
            }
        } else {
            unsigned char c = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
            if (c == '"' || c == '\\') buf[0] = '\\', buf[1] = c, n = 2;
            else buf[0] = c;
            p += 2;
        }
        if (out_put_raw(o, buf, n) < 0) return -1;
        run = p;
    }
    if (out_put_raw(o, run, end - run) < 0 || out_put_raw(o, "\"", 1) < 0) return -1;
    return 1;
}

#define CANON_DIGITS 15 /* a decimal of at most 15 significant digits is one double, and no other's */

/* A validated JSON number: an integer as its digits (any length: Python's ints are exact; "-0"
 * is 0); a float of at most 15 significant digits below 1e15 (and above 1e-290) as the integer it
 * equals, or else 'f', its sign, digits and exponent. 1; 0: undecided (other floats); -1. */
static int canon_number(Out *o, ptr v, ptr end) {
    int neg = *v == '-';
    ptr p = v + neg, int_start = p;
    while (p < end && is_digit(*p)) p++;
    ptr int_end = p, frac = p, frac_end = p;
    int exp = 0, exp_neg = 0, has_exp = 0;
    if (p < end && *p == '.') {
        frac = ++p;
        while (p < end && is_digit(*p)) p++;
        frac_end = p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        has_exp = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) exp_neg = *p++ == '-';
        while (p < end && is_digit(*p) && exp < 1000) exp = exp * 10 + (*p++ - '0');
        if (exp_neg) exp = -exp;
    }
    if (p != end || int_end == int_start) return 0; /* not what scan_number accepts */
    if (frac == frac_end && !has_exp) {              /* an integer */
        if (int_end - int_start == 1 && *int_start == '0') return out_put_raw(o, "0", 1) < 0 ? -1 : 1;
        if (neg && out_put_raw(o, "-", 1) < 0) return -1;
        return out_put_raw(o, int_start, int_end - int_start) < 0 ? -1 : 1;
    }
    /* the digits of int and fraction as one integer D, the value D * 10^e10 */
    unsigned char digits[CANON_DIGITS];
    int nd = 0, e10 = exp - (int)(frac_end - frac), zeros = 0; /* zeros: trailing ones not yet kept */
    for (int part = 0; part < 2; part++) {
        ptr s = part ? frac : int_start, se = part ? frac_end : int_end;
        for (; s < se; s++) {
            if (*s == '0') {
                if (nd) zeros++;
                continue;
            }
            if (nd + zeros + 1 > CANON_DIGITS) return 0;
            while (zeros) digits[nd++] = '0', zeros--;
            digits[nd++] = *s;
        }
    }
    if (nd == 0) return out_put_raw(o, "0", 1) < 0 ? -1 : 1; /* 0.0, -0e5 */
    e10 += zeros;                                         /* D's trailing zeros dropped */
    int adjusted = e10 + nd - 1;                          /* |value| in [10^adjusted, 10^(adjusted+1)) */
    if (adjusted >= 15 || adjusted < -290) return 0;
    if (neg && out_put_raw(o, "-", 1) < 0) return -1;
    if (e10 >= 0) { /* an integer: its digits (at most 15) */
        if (out_put_raw(o, digits, nd) < 0) return -1;
        for (int i = 0; i < e10; i++)
            if (out_put_raw(o, "0", 1) < 0) return -1;
        return 1;
    }
    char tail[8]; /* "e-" and at most 4 digits: -290 <= e10 < 0 here */
    int n = 0, x = -e10;
    tail[n++] = 'e', tail[n++] = '-';
    if (x >= 100) tail[n++] = (char)('0' + x / 100);
    if (x >= 10) tail[n++] = (char)('0' + x / 10 % 10);
    tail[n++] = (char)('0' + x % 10);
    if (out_put_raw(o, "f", 1) < 0 || out_put_raw(o, digits, nd) < 0 || out_put_raw(o, tail, n) < 0) return -1;
    return 1;
}

/* The canonical text of a member's value: 1, 0 (undecided: nested, or a float canon_number
 * cannot place), -1 (out of memory). true and false are 1 and 0, as in Python; null is n. */
static int canon_value(Out *o, const Member *m) {
    ptr v = m->val, end = m->val_end;
    if (end <= v) return 0;
    switch (*v) {
    case '"': return m->val_escaped ? canon_escaped_string(o, v, end) : (out_put_raw(o, v, end - v) < 0 ? -1 : 1);
    case 't': return out_put_raw(o, "1", 1) < 0 ? -1 : 1;
    case 'f': return out_put_raw(o, "0", 1) < 0 ? -1 : 1;
    case 'n': return out_put_raw(o, "n", 1) < 0 ? -1 : 1;
    case '{':
    case '[': return 0;
    default: return canon_number(o, v, end);
    }
}

/* Member order by name, as written with its quotes: a total order of distinct names (all the
 * identity needs). Names are short: a loop, not a memcmp call. */
static int member_name_order(const void *x, const void *y) {
    const Member *a = *(const Member *const *)x, *b = *(const Member *const *)y;
    Py_ssize_t na = a->key_end - a->key, nb = b->key_end - b->key, n = na < nb ? na : nb;
    for (Py_ssize_t i = 0; i < n; i++)
        if (a->key[i] != b->key[i]) return a->key[i] < b->key[i] ? -1 : 1;
    return (na > nb) - (na < nb);
}

/* The sorted order of the last row's names: rows of a changelog mostly share their columns, in
 * the same order, and then share the order of their names too (no sort). */
typedef struct {
    int n, skip; /* the members of the last row sorted (n: -1 none), and its kind member */
    int16_t perm[MAX_MEMBERS];
    Members last;
} OrderCache;

static int same_names(const Members *a, const Members *b) {
    for (int i = 0; i < a->n; i++) {
        const Member *x = &a->m[i], *y = &b->m[i];
        Py_ssize_t n = x->key_end - x->key;
        if (y->key_end - y->key != n) return 0;
        for (Py_ssize_t k = 0; k < n; k++)
            if (x->key[k] != y->key[k]) return 0;
    }
    return 1;
}

/* A row's canonical text: its members (but skip) sorted by name, name:value, each followed by ','.
 * The names are distinct and unescaped (checked before). 1, 0 (undecided), -1. cache: NULL, or
 * the order of the row before (whose names must still be readable: the same chunk). */
static int canon_members(Out *o, const Members *ms, int skip, const Member **order, OrderCache *cache) {
    int n = 0;
    if (cache && cache->n == ms->n && cache->skip == skip && same_names(ms, &cache->last)) {
        for (int i = 0; i < cache->n - (skip >= 0); i++) order[n++] = &ms->m[cache->perm[i]];
    } else {
        for (int i = 0; i < ms->n; i++)
            if (i != skip) order[n++] = &ms->m[i];
        if (n <= 12) {
            for (int i = 1; i < n; i++) { /* insertion sort: rows are short */
                const Member *x = order[i];
                int j = i;
                while (j > 0 && member_name_order(&order[j - 1], &x) > 0) {
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = x;
            }
        } else {
            qsort((void *)order, (size_t)n, sizeof(order[0]), member_name_order);
        }
        if (cache) {
            cache->n = ms->n, cache->skip = skip;
            for (int i = 0; i < n; i++) cache->perm[i] = (int16_t)(order[i] - ms->m);
            for (int i = 0; i < ms->n; i++) { /* the names only: the cache reads no value */
                cache->last.m[i].key = ms->m[i].key;
                cache->last.m[i].key_end = ms->m[i].key_end;
            }
            cache->last.n = ms->n;
        }
    }
    for (int i = 0; i < n; i++) {
        const Member *m = order[i];
        if (out_put_raw(o, m->key, m->key_end - m->key) < 0 || out_put_raw(o, ":", 1) < 0) return -1;
        int got = canon_value(o, m);
        if (got <= 0) return got;
        if (out_put_raw(o, ",", 1) < 0) return -1;
    }
    return 1;
}

/* Scratch memory of the comparisons of rows: parsed members and canonical texts. */
typedef struct {
    Members a, b;
    const Member *order[MAX_MEMBERS];
    Out ca, cb;
} Scratch;

static void scratch_free(Scratch *sc) {
    if (!sc) return;
    PyMem_RawFree(sc->ca.buf);
    PyMem_RawFree(sc->cb.buf);
    PyMem_RawFree(sc);
}

/* The canonical text of a row given as its JSON text (written by parse_records, or forged: it is
 * parsed and validated again). 1, 0 (undecided, or not a plain object), -1. */
static int canon_row(Out *o, const char *row, Py_ssize_t len, Members *ms, const Member **order) {
    ptr p = (ptr)row, end = p + len;
    o->len = 0;
    if (!line_object(p, end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    return canon_members(o, ms, -1, order, NULL);
}

/* A value whose text is the only spelling of its value: an unescaped string, an integer written
 * without fraction or exponent (not -0), null. Two such texts that differ are unequal values. */
static int sole_spelling(const Member *m) {
    ptr v = m->val, e = m->val_end;
    if (v >= e) return 0;
    if (*v == '"') return !m->val_escaped;
    if (*v == 'n') return 1;
    if (*v != '-' && !is_digit(*v)) return 0;
    if (e - v == 2 && v[0] == '-' && v[1] == '0') return 0;
    for (ptr c = v; c < e; c++)
        if (*c == '.' || *c == 'e' || *c == 'E') return 0;
    return 1;
}

/* Rows with the same names in the same order whose values at one name are unequal for sure. */
static int surely_differ(const Members *a, const Members *b) {
    if (a->n != b->n || !same_names(a, b)) return 0;
    for (int i = 0; i < a->n; i++) {
        const Member *x = &a->m[i], *y = &b->m[i];
        Py_ssize_t n = x->val_end - x->val;
        if (n == y->val_end - y->val && !memcmp(x->val, y->val, (size_t)n)) continue;
        if (sole_spelling(x) && sole_spelling(y)) return 1;
    }
    return 0;
}

/* Whether two rows (JSON texts) are equal dicts: 1, 0, 2 (undecided: ask Python), -1 (no memory). */
static int rows_equal(Scratch *sc, const char *a, Py_ssize_t alen, const char *b, Py_ssize_t blen) {
    if (alen == blen && !memcmp(a, b, (size_t)alen)) return 1;
    /* an update mostly changes a value that has one spelling: then they differ, no sort needed */
    ptr pa = (ptr)a, pb = (ptr)b;
    if (line_object(pa, pa + alen, &sc->a) && line_object(pb, pb + blen, &sc->b) && !any_key_escaped(&sc->a) &&
        !any_key_escaped(&sc->b) && !has_repeated_keys(&sc->a) && !has_repeated_keys(&sc->b) &&
        surely_differ(&sc->a, &sc->b))
        return 0;
    int got = canon_row(&sc->ca, a, alen, &sc->a, sc->order);
    if (got <= 0) return got < 0 ? -1 : 2;
    got = canon_row(&sc->cb, b, blen, &sc->b, sc->order);
    if (got <= 0) return got < 0 ? -1 : 2;
    return sc->ca.len == sc->cb.len && !memcmp(sc->ca.buf, sc->cb.buf, (size_t)sc->ca.len);
}

/* A plain integer the state compares in C: a JSON integer of at most 18 digits (not "-0"). */
static int plain_int(const char *v, Py_ssize_t len, int64_t *out) {
    Py_ssize_t i = 0;
    int neg = len > 0 && v[0] == '-';
    i = neg;
    if (len - i < 1 || len - i > 18) return 0;
    if (v[i] == '0' && len - i > 1) return 0;
    int64_t x = 0;
    for (; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') return 0;
        x = x * 10 + (v[i] - '0');
    }
    if (neg && x == 0) return 0;
    *out = neg ? -x : x;
    return 1;
}

/* ---------------------------------------------------------------- records --------------- */

#define MAX_EXTRAS 16
#define MISSING 0xFFFFFFFFu /* an extra value's length when the row lacks the column */

#define R_NO_KEY 1  /* records without a key (an aggregate reads its group and arguments as extras) */
#define R_NO_KIND 2 /* rows without a kind column, each an insert (aggregate --input-mode append) */
#define R_MISSING_NULL 4 /* a key column a row lacks is null (an aggregate's group: row.get) */

typedef struct {
    ChangeSpec cs;
    const char *extra[MAX_EXTRAS];
    Py_ssize_t extra_len[MAX_EXTRAS];
    int n_extras, flags;
} RecordSpec;

/* (kind_key, spellings, key_keys, extra_keys) checked into a RecordSpec; key_keys may be empty. */
static int record_spec(RecordSpec *rs, Py_buffer *kind_key, PyObject *spellings, PyObject *key_keys,
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
    if (!line_object(p, line_end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) return 0;
    int at_kind = -1, kind = 0;
    if (!(rs->flags & R_NO_KIND)) {
        at_kind = find_key(ms, cs->kind_key, cs->kind_len), kind = -1;
        if (at_kind < 0 || ms->m[at_kind].val_escaped) return 0;
        for (int i = 0; i < cs->n_spellings && kind < 0; i++)
            if (span_is(ms->m[at_kind].val, ms->m[at_kind].val_end, cs->spelling[i], cs->spelling_len[i]))
                kind = cs->spelling_kind[i];
        if (kind < 0) return 0;
    }
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
static PyObject *parse_records(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, kind_key;
    Py_ssize_t start, lines = 0, position = 0;
    PyObject *spellings, *key_keys, *extra_keys, *result_obj = NULL;
    Out packed = {0};
    Members *ms = NULL;
    const Member **order = NULL;
    OrderCache *cache = NULL;
    RecordSpec rs;
    int failed = 0;
    int flags = 0;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!O!|i", &chunk, &start, &kind_key, &PyTuple_Type, &spellings, &PyTuple_Type,
                          &key_keys, &PyTuple_Type, &extra_keys, &flags))
        return NULL;
    if (!chunk.readonly) {
        PyErr_SetString(PyExc_TypeError, "parse_records: the chunk must be read-only (bytes): it is read without the GIL");
        goto done;
    }
    if (flags < 0 || flags > (R_NO_KEY | R_NO_KIND | R_MISSING_NULL)) {
        PyErr_SetString(PyExc_ValueError, "parse_records: flags 0 to 7");
        goto done;
    }
    if (chunk.len >= ((Py_ssize_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "chunk too large");
        goto done;
    }
    if (check_start(start, &chunk) < 0 || record_spec(&rs, &kind_key, spellings, key_keys, extra_keys) < 0) goto done;
    rs.flags = flags;
    Py_BEGIN_ALLOW_THREADS;
    ptr base = chunk.buf, end = base + chunk.len, p = base + start;
    ms = PyMem_RawMalloc(sizeof(Members));
    order = PyMem_RawMalloc(MAX_MEMBERS * sizeof(order[0]));
    cache = PyMem_RawMalloc(sizeof(OrderCache));
    failed = !ms || !order || !cache;
    if (cache) cache->n = -1;
    while (!failed && p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        int got = parse_record(base, p, nl ? nl : end, (uint32_t)lines, &rs, ms, order, cache, &packed);
        if (got < 0) failed = 1;
        if (got <= 0) break;
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
    PyMem_RawFree((void *)order);
    PyMem_RawFree(cache);
    PyMem_RawFree(packed.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    return result_obj;
}

/* One record of parse_records' buffer. */
typedef struct {
    int kind;
    uint32_t line, offset;
    const char *key, *row, *extra[MAX_EXTRAS], *next;
    Py_ssize_t key_len, row_len, extra_len[MAX_EXTRAS]; /* extra_len -1: missing */
    uint64_t hash;                                      /* of the key (key_hash) */
} Rec;

#define REC_HEADER 13 /* kind, line, offset, key length */

/* The record at p, within end, with n_extras extra values: 1, or 0 when it does not hold (its
 * kind past 3, a key longer than MAX_KEY_BYTES, a length past the end). */
static int read_rec(const char *p, const char *end, int n_extras, Rec *r) {
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

/* Where a record starts, and its key's hash. */
typedef struct {
    const char *p;
    uint64_t hash;
} RecAt;

/* Whether a buffer is whole records from its start (lines and offsets increasing) and start is
 * where one begins; -1 with a ValueError naming the first fault (or a MemoryError). *at gets the
 * records from start on (PyMem_RawMalloc'd, for the caller to free), *n_at their number. */
static int check_records(const char *base, const char *end, Py_ssize_t start, int n_extras, RecAt **at,
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

/* ---------------------------------------------------------------- the State type ------- */

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

/* What a State asks its handle(code, line, offset, kind, a, b) -> int. */
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

/* Counters, in the order counters() gives them. */
enum {
    C_PLUS_I, C_MINUS_U, C_PLUS_U, C_MINUS_D, /* changes read, by kind */
    C_RETRACT, C_UPSERT,                       /* messages as retract / upsert (materialize, inspect) */
    C_DUPLICATES, C_CHANGES, C_TIME_MISSING,
    C_READ, C_WRITTEN, C_NOOPS, C_LATE, C_BEFORE, C_AFTER, C_IGNORED, C_OUT_RETRACT, C_OUT_UPSERT, /* replay */
    C_OUT_I, C_OUT_MU, C_OUT_U, C_OUT_D, /* rows written, by kind */
    N_COUNTERS
};

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

static PyTypeObject StateType;

static int tab_init(Tab *t) {
    memset(t, 0, sizeof *t);
    return table_make_room(t);
}

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
static long ask(PyObject *handle, int code, const Rec *r, const char *a, Py_ssize_t alen, const char *b,
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

/* Put the row of r for its key: in place when the key has an entry, else appended. 0 or -1. */
static int state_put(Tab *t, Entry *e, const Rec *r) {
    PyObject *row = PyBytes_FromStringAndSize(r->row, r->row_len);
    if (!row) return -1;
    if (e) {
        if (e->flags & DELETED) t->live++;
        Py_SETREF(e->row, row);
        e->flags &= ~(RETRACTED | DELETED);
        return 0;
    }
    if (table_append(t, r->key, r->key_len, r->hash, row) < 0) {
        Py_DECREF(row);
        return -1;
    }
    return 0;
}

/* Delete a key's row: its entry dropped at the next rebuild, or, in a keeping table, marked. */
static void state_delete(Tab *t, Entry *e, int keep) {
    t->live--;
    Py_CLEAR(e->order);
    e->flags &= ~(RETRACTED | HAS_ORDER | ORDER_INT);
    if (keep) e->flags |= DELETED;
    else Py_CLEAR(e->row);
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
    if (--e->aux == 0) state_delete(t, e, 0);
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
            state_delete(t, e, 0);
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
    if (r->kind == 0 || r->kind == 2) {
        if (stored && r->kind == 0) {
            long go = ask(handle, H_EXISTS, r, PyBytes_AS_STRING(e->row), PyBytes_GET_SIZE(e->row), r->row, r->row_len);
            if (go <= 0) return (int)go;
        }
        st->c[C_RETRACT] += stored ? 2 : 1, st->c[C_UPSERT]++;
        return state_put(t, e, r);
    }
    if (!stored) {
        if (ask(handle, H_ABSENT, r, NULL, 0, r->row, r->row_len) < 0) return -1;
        if ((st->flags & F_KEEP) && !e) { /* a key seen (inspect counts it), deleted at once */
            if (state_put(t, NULL, r) < 0) return -1;
            state_delete(t, &t->entries[t->n_entries - 1], 1);
        }
        return 0;
    }
    if (r->kind == 1) {
        if (!same_row(e->row, r->row, r->row_len)) {
            long go = ask(handle, H_DIFFERS, r, PyBytes_AS_STRING(e->row), PyBytes_GET_SIZE(e->row), r->row, r->row_len);
            if (go <= 0) return (int)go;
        }
        e->flags |= RETRACTED;
        st->c[C_RETRACT]++;
        return 0;
    }
    state_delete(t, e, (st->flags & F_KEEP) != 0);
    st->c[C_RETRACT]++, st->c[C_UPSERT]++;
    return 0;
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
        state_delete(t, e, 0);
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

static PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.State",
    .tp_doc = "The state of materialize (multiset, --dedup), inspect or replay, applied from records.",
    .tp_basicsize = sizeof(State),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = state_new,
    .tp_dealloc = (destructor)state_dealloc,
    .tp_methods = state_methods,
};

/* ---------------------------------------------------------------- aggregate ------------- */

/* GroupAggregate (core/aggregate.py) over records, for COUNT(*), COUNT, SUM, AVG, MIN and MAX of
 * columns whose values are plain integers (or null): Flink's update log written as bytes, the
 * state the generated code keeps kept alike (a record count, a running sum with its count, MIN
 * and MAX with a map value -> count, the operands' multiset that tells a retraction of a row
 * never accumulated). A record this code cannot take as the generated code would (a value not an
 * integer, a group value the texts cannot compare) stops the call: Python takes the state over
 * (items()) and that record on. Sums are 128-bit: no sum of 64-bit values overflows them. */

#if defined(__SIZEOF_INT128__)
#define HAVE_AGGREGATE 1
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

static PyTypeObject AggregateType;

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

static PyTypeObject AggregateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdc.engine.paths.native._kernel.Aggregate",
    .tp_doc = "Flink's group aggregate (COUNT, SUM, AVG, MIN, MAX of integers) applied from records.",
    .tp_basicsize = sizeof(Aggregate),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = aggregate_new,
    .tp_dealloc = (destructor)aggregate_dealloc,
    .tp_methods = aggregate_methods,
};
#else
#define HAVE_AGGREGATE 0
#endif

/* ---------------------------------------------------------------- debezium-encode ------- */

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

/* encode(chunk, start, kind_key, spellings, key_keys, time_key, source, now, split, pending)
 *     -> (output, position, lines, counts per kind, events (c, u, d), pending)
 * DebeziumEncoder.step over the lines from start until one it declines: a -U waits for the next
 * line; a -U then a +U (with --key: of equal key values) is one u event, unless split. time_key:
 * the time column as a JSON string (b"": none; ts_ms is now, the text of an integer); source: the
 * event's ',"source":{...}' or b"". pending (a -U's row, compact JSON text, or None) comes from
 * the call before and goes to the next. Declined: what parse_changes declines, and a line whose
 * event needs a time value that is not a plain integer, or key values the texts cannot compare. */
static PyObject *encode(PyObject *self, PyObject *args) {
    UNUSED(self);
    Py_buffer chunk, kind_key, time_key, source, now;
    Py_ssize_t start;
    int split;
    PyObject *spellings, *key_keys, *pending_in, *result_obj = NULL;
    Out out = {0}, image = {0}, key = {0}, ts = {0};
    Pending pend;
    memset(&pend, 0, sizeof pend);
    Members *ms = NULL;
    RecordSpec rs;
    if (!PyArg_ParseTuple(args, "y*ny*O!O!y*y*y*pO", &chunk, &start, &kind_key, &PyTuple_Type, &spellings,
                          &PyTuple_Type, &key_keys, &time_key, &source, &now, &split, &pending_in))
        return NULL;
    PyObject *no_extras = PyTuple_New(0);
    if (!no_extras) goto done;
    int spec_ok = record_spec(&rs, &kind_key, spellings, key_keys, no_extras) == 0;
    Py_DECREF(no_extras);
    if (!spec_ok || check_start(start, &chunk) < 0) goto done;
    int64_t unused_now;
    if (!plain_int(now.buf, now.len, &unused_now)) {
        PyErr_SetString(PyExc_ValueError, "encode: now must be the text of an integer");
        goto done;
    }
    if (!(ms = PyMem_RawMalloc(sizeof(Members)))) {
        PyErr_NoMemory();
        goto done;
    }
    const ChangeSpec *cs = &rs.cs;
    if (pending_in != Py_None) { /* the -U left by the call before: its key and time read again */
        if (!PyBytes_Check(pending_in)) {
            PyErr_SetString(PyExc_TypeError, "encode: pending must be bytes or None");
            goto done;
        }
        ptr pp = (ptr)PyBytes_AS_STRING(pending_in), pe = pp + PyBytes_GET_SIZE(pending_in);
        if (!line_object(pp, pe, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) {
            /* not a row this code reads: the next line that needs its key or time is declined,
             * and a d event of it is written as the text it is (a JSON object, from Python) */
            pend.set = 2, pend.ts_state = 2;
            if (out_put(&pend.row, pp, pe - pp) < 0) goto done;
        } else {
            int got = encode_key(&pend.key, cs, ms);
            if (got < 0 || (time_key.len && (pend.ts_state = encode_ts(&pend.ts, ms, time_key.buf, time_key.len)) < 0)) {
                PyErr_NoMemory();
                goto done;
            }
            if (put_compact(&pend.row, pp, pe) < 0) goto done;
            pend.set = got > 0 ? 1 : 2; /* 2: key values the texts cannot compare */
        }
    }
    Py_ssize_t lines = 0, counts[4] = {0}, events[3] = {0};
    ptr base = chunk.buf, end = base + chunk.len, p = base + start;
    while (p < end) {
        ptr nl = memchr(p, '\n', (size_t)(end - p));
        ptr line_end = nl ? nl : end;
        if (!line_object(p, line_end, ms) || any_key_escaped(ms) || has_repeated_keys(ms)) break;
        int at_kind = find_key(ms, cs->kind_key, cs->kind_len), kind = -1;
        if (at_kind < 0 || ms->m[at_kind].val_escaped) break;
        for (int i = 0; i < cs->n_spellings && kind < 0; i++)
            if (span_is(ms->m[at_kind].val, ms->m[at_kind].val_end, cs->spelling[i], cs->spelling_len[i]))
                kind = cs->spelling_kind[i];
        if (kind < 0) break;
        /* the row's time value, where an event of this line needs it */
        int ts_state = 1;
        const char *ts_text = now.buf;
        Py_ssize_t ts_len = now.len;
        if (time_key.len) {
            if (find_key(ms, time_key.buf, time_key.len) == at_kind) break;
            ts_state = encode_ts(&ts, ms, time_key.buf, time_key.len);
            if (ts_state < 0) goto nomemory;
            ts_text = ts.buf, ts_len = ts.len;
        }
        int line_needs_ts = !(kind == 1 && !split); /* a -U that waits makes no event yet */
        int merge = 0;
        if (pend.set && kind == 2 && !split) {
            int got = encode_key(&key, cs, ms);
            if (got < 0) goto nomemory;
            if (got == 0 || pend.set == 2) break; /* key values the texts cannot compare */
            merge = key.len == pend.key.len && (!key.len || !memcmp(key.buf, pend.key.buf, (size_t)key.len));
        }
        if ((line_needs_ts || merge) && ts_state != 1) break;
        if (pend.set && !merge && time_key.len && pend.ts_state != 1) break; /* the pending d's time */
        image.len = 0;
        if (put_image(&image, ms, at_kind) < 0) goto nomemory;
        if (pend.set) {
            if (merge) {
                if (put_event(&out, 'u', pend.row.buf, pend.row.len, image.buf, image.len, source.buf, source.len,
                              ts_text, ts_len) < 0)
                    goto done;
                events[1]++;
            } else {
                const char *pts = time_key.len ? pend.ts.buf : now.buf;
                Py_ssize_t pts_len = time_key.len ? pend.ts.len : now.len;
                if (put_event(&out, 'd', pend.row.buf, pend.row.len, NULL, 0, source.buf, source.len, pts, pts_len) < 0)
                    goto done;
                events[2]++;
            }
            pend.set = 0;
        }
        counts[kind]++;
        if (!merge) {
            int failed = 0;
            if (kind == 0) {
                failed = put_event(&out, 'c', NULL, 0, image.buf, image.len, source.buf, source.len, ts_text, ts_len);
                events[0]++;
            } else if (kind == 1 && split) {
                failed = put_event(&out, 'd', image.buf, image.len, NULL, 0, source.buf, source.len, ts_text, ts_len);
                events[2]++;
            } else if (kind == 1) { /* waits for its +U */
                int got = encode_key(&pend.key, cs, ms);
                if (got < 0 || (time_key.len && (pend.ts_state = encode_ts(&pend.ts, ms, time_key.buf, time_key.len)) < 0))
                    goto nomemory;
                pend.row.len = 0;
                if (out_put_raw(&pend.row, image.buf, image.len) < 0) goto nomemory;
                pend.set = got > 0 ? 1 : 2;
            } else if (kind == 2) {
                failed = put_event(&out, split ? 'c' : 'u', NULL, 0, image.buf, image.len, source.buf, source.len,
                                   ts_text, ts_len);
                events[split ? 0 : 1]++;
            } else {
                failed = put_event(&out, 'd', image.buf, image.len, NULL, 0, source.buf, source.len, ts_text, ts_len);
                events[2]++;
            }
            if (failed) goto done;
        }
        lines++;
        p = nl ? nl + 1 : end;
    }
    {
        PyObject *data = PyBytes_FromStringAndSize(out.buf ? out.buf : "", out.len);
        PyObject *left = !data         ? NULL
                         : pend.set    ? PyBytes_FromStringAndSize(pend.row.buf ? pend.row.buf : "", pend.row.len)
                                       : Py_NewRef(Py_None);
        if (data && left)
            result_obj = Py_BuildValue("(Onn(nnnn)(nnn)O)", data, p - base, lines, counts[0], counts[1], counts[2],
                                       counts[3], events[0], events[1], events[2], left);
        Py_XDECREF(data);
        Py_XDECREF(left);
    }
    goto done;
nomemory:
    PyErr_NoMemory();
done:
    PyMem_RawFree(ms);
    PyMem_RawFree(out.buf);
    PyMem_RawFree(image.buf);
    PyMem_RawFree(key.buf);
    PyMem_RawFree(ts.buf);
    PyMem_RawFree(pend.row.buf);
    PyMem_RawFree(pend.key.buf);
    PyMem_RawFree(pend.ts.buf);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&kind_key);
    PyBuffer_Release(&time_key);
    PyBuffer_Release(&source);
    PyBuffer_Release(&now);
    return result_obj;
}

/* count_lines(chunk) -> the number of "\n" bytes, eight at a time (bytes.count looks at one
 * byte per step: most of the time the reading thread of materialize spent on a chunk). */
static PyObject *count_lines(PyObject *self, PyObject *arg) {
    UNUSED(self);
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = b.buf;
    Py_ssize_t n = b.len, i = 0, count = 0;
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, newlines = 0x0a0a0a0a0a0a0a0aULL, ones = 0x0101010101010101ULL;
    for (; n - i >= 8; i += 8) {
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

/* _set_probe_budget(n) -> the previous budget: the probes a name index may take before it is
 * sorted instead (-1: the default, 2 per name + 32). For tests of the fallback; not thread-safe. */
static PyObject *set_probe_budget(PyObject *self, PyObject *arg) {
    UNUSED(self);
    Py_ssize_t budget = PyLong_AsSsize_t(arg);
    if (budget == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t previous = probe_budget_override;
    probe_budget_override = budget < 0 ? -1 : budget;
    return PyLong_FromSsize_t(previous);
}

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_O, "The number of newline bytes in a buffer."},
    {"columns", columns, METH_VARARGS, "Move one column of each JSON line to the front, mapped."},
    {"debezium", debezium, METH_VARARGS, "Debezium change events → changelog rows."},
    {"keyed", keyed, METH_VARARGS, "Apply changelog lines to an upsert table of row bytes."},
    {"parse_changes", parse_changes, METH_VARARGS, "The parsing half of keyed, without the GIL."},
    {"apply_changes", apply_changes, METH_VARARGS, "The applying half of keyed."},
    {"parse_records", parse_records, METH_VARARGS, "Changes parsed into records for a State, without the GIL."},
    {"encode", encode, METH_VARARGS, "Changelog lines to Debezium events (debezium-encode)."},
    {"maxwell", maxwell, METH_VARARGS, "Maxwell change events → changelog rows."},
    {"ogg", ogg, METH_VARARGS, "Oracle GoldenGate change records → changelog rows."},
    {"canal", canal, METH_VARARGS, "Canal flat messages → changelog rows."},
    {"_set_probe_budget", set_probe_budget, METH_O, "Tests only: the probes allowed before names are sorted."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, methods, NULL, NULL, NULL, NULL};

/* The hash key: 16 bytes of os.urandom, drawn once per process. */
static int seed_hash(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (!os) return -1;
    PyObject *bytes = PyObject_CallMethod(os, "urandom", "i", (int)sizeof(hash_key));
    Py_DECREF(os);
    if (!bytes) return -1;
    int ok = PyBytes_Check(bytes) && PyBytes_GET_SIZE(bytes) == (Py_ssize_t)sizeof(hash_key);
    if (ok) memcpy(hash_key, PyBytes_AS_STRING(bytes), sizeof(hash_key));
    else PyErr_SetString(PyExc_SystemError, "os.urandom gave no 16 bytes");
    Py_DECREF(bytes);
    return ok ? 0 : -1;
}

PyMODINIT_FUNC PyInit__kernel(void) {
    if (seed_hash() < 0) { /* an ImportError: the Python side then runs without the kernel */
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError, "cdc kernel: os.urandom gave no hash key");
        return NULL;
    }
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&StateType) < 0) return NULL;
#if HAVE_AGGREGATE
    if (PyType_Ready(&AggregateType) < 0) return NULL;
#endif
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 ||
              PyModule_AddObjectRef(m, "State", (PyObject *)&StateType) < 0 ||
#if HAVE_AGGREGATE
              PyModule_AddObjectRef(m, "Aggregate", (PyObject *)&AggregateType) < 0 ||
#endif
              PyModule_AddIntConstant(m, "MAX_KEY_BYTES", (long)MAX_KEY_BYTES) < 0))
        Py_CLEAR(m);
    return m;
}
