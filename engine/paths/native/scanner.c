/* Strict JSON (RFC 8259 grammar, strict UTF-8, paired surrogate escapes), validated while it is
 * walked: strings, numbers, nested values skipped over, an object's members and their names (a
 * keyed index, so that no input can make finding them slow), and the compact copy of values. A
 * value this code is not sure of is not accepted: the caller declines the line. Also the hashes
 * (SipHash-1-3 for keys, a multiply-fold for names, both under the module's random key) and the
 * output buffer's growth. Nothing here needs the GIL.
 */
#include "kernel.h"

/* ---------------------------------------------------------------- keyed hash ---------- */

/* SipHash-1-3 (as CPython hashes str and bytes) under a key drawn from os.urandom when the module
 * is loaded: an input cannot be crafted to collide. Words are read in the machine's byte order:
 * the hash is only compared within this process. */
uint64_t hash_key[2];

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

uint64_t siphash13(const void *data, size_t len) {
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
uint64_t name_hash(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = hash_key[0] ^ len, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = fold(h ^ w, hash_key[1] ^ 0x9e3779b97f4a7c15ULL);
    }
    return fold(h ^ tail_bytes(p, len), hash_key[1] ^ 0xe7037ed1a0b428dbULL);
}

/* ---------------------------------------------------------------- output buffer -------- */

int out_grow(Out *o, Py_ssize_t n) {
    if (n > PY_SSIZE_T_MAX - o->len) return -1;
    Py_ssize_t need = o->len + n, cap = o->cap ? o->cap : 1 << 16;
    while (cap < need) cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    char *grown = PyMem_RawRealloc(o->buf, (size_t)cap);
    if (!grown) return -1;
    o->buf = grown;
    o->cap = cap;
    return 0;
}

/* ---------------------------------------------------------------- strict JSON ---------- */

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
ptr scan_string(ptr p, ptr end, int *escaped) {
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

ptr skip_value(ptr p, ptr end, int depth) {
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

/* The members of the object at p ('{'); returns the position after it, or NULL (invalid, or
 * more members than kept). */
ptr members_of(ptr p, ptr end, Members *out) {
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

/* Copy a validated value without the whitespace between its tokens (safe without the GIL). */
int put_compact_raw(Out *o, ptr p, ptr end) {
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

int put_compact(Out *o, ptr p, ptr end) {
    if (put_compact_raw(o, p, end) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* "{" + first member + the object's other members (all but index skip) + "}\n". */
int put_row(Out *o, const char *first, Py_ssize_t first_len, const Members *ms, int skip) {
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

/* ---------------------------------------------------------------- member names -------- */

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
Py_ssize_t probe_budget_override = -1;

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
int has_repeated_names_indexed(const Members *ms) {
    NameIndex ix;
    return index_names(&ix, ms);
}


/* Every key of `after` is a key of `before` (a complete before image); both hold distinct names.
 * In the same column order each is found at once; otherwise before's names are indexed. */
int covers(const Members *before, const Members *after) {
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
