/* Value and row equality as Python decides it, told from the JSON text: canonical texts. Two
 * scalar JSON values have the same canonical text exactly when Python finds them equal (1 == 1.0
 * == true, "é" == "\u00e9"), and two rows have the same canonical text exactly when they are
 * equal dicts. Where that cannot be told from the text (a nested value, a float of more than 15
 * significant digits or past 1e15) the functions say so (0, or 2 for rows_equal): the State asks
 * Python, parse_records declines the line. The definition they are held to is the row path's:
 * Python's == on the values formats/jsonl.loads reads (tests/test_value_semantics.py).
 */
#include "kernel.h"

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
int canon_value(Out *o, const Member *m) {
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
int canon_members(Out *o, const Members *ms, int skip, const Member **order, OrderCache *cache) {
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
void scratch_free(Scratch *sc) {
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
    if (!plain_line(p, end, ms)) return 0;
    return canon_members(o, ms, -1, order, NULL);
}

/* A value whose text is the only spelling of its value: an unescaped string, an integer written
 * without fraction or exponent (not -0), null. Two such texts that differ are unequal values. */
int sole_spelling(const Member *m) {
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
int rows_equal(Scratch *sc, const char *a, Py_ssize_t alen, const char *b, Py_ssize_t blen) {
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
int plain_int(const char *v, Py_ssize_t len, int64_t *out) {
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
