/* The keyed table: key bytes → row bytes, in first-insertion order, where a -U marks a row
 * retracted (its slot stays for the +U to come); the Table type's (keyed.c), each State's and
 * each Aggregate's. And the upsert rule over it, written once: what a change finds (an insert of
 * a stored key, a retraction of a row not stored, a -U unlike the stored row) and how it is
 * applied. The Table declines a change that finds something; a State asks Python.
 *
 * Like a dict of bytes plus a set, but a lookup touches one index slot and one entry holding the
 * key itself: the dict also touched the key object and hashed a fresh one per change, and with
 * 100k keys those cache misses were most of the time spent applying changes. Entries of deleted
 * rows stay (row NULL, key kept) until the entries are rebuilt, so a key's index slot never moves
 * and the index needs no tombstones.
 */
#include "kernel.h"

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
int table_append(Tab *t, const char *key, Py_ssize_t len, uint64_t hash, PyObject *row) {
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


int tab_init(Tab *t) {
    memset(t, 0, sizeof *t);
    return table_make_room(t);
}

void tab_free(Tab *t) {
    for (Py_ssize_t i = 0; i < t->n_entries; i++) entry_clear(&t->entries[i]);
    PyMem_RawFree(t->entries);
    PyMem_RawFree(t->index);
    t->entries = NULL;
    t->index = NULL;
    t->n_entries = t->cap = t->live = 0;
}

/* Put a row (its text) for a key: in place when the key has an entry e (table_find's: retracted
 * or deleted, it is live again), else appended. 0, or -1 with an exception (the table unchanged). */
int table_put(Tab *t, Entry *e, const char *key, Py_ssize_t key_len, uint64_t hash, const char *row, Py_ssize_t len) {
    PyObject *text = PyBytes_FromStringAndSize(row, len);
    if (!text) return -1;
    if (e) {
        if (e->flags & DELETED) t->live++;
        Py_SETREF(e->row, text);
        e->flags &= ~(RETRACTED | DELETED);
        return 0;
    }
    if (table_append(t, key, key_len, hash, text) < 0) {
        Py_DECREF(text);
        return -1;
    }
    return 0;
}

/* Delete a key's row: its entry dropped at the next rebuild, or, in a keeping table, marked. */
void table_delete(Tab *t, Entry *e, int keep) {
    t->live--;
    Py_CLEAR(e->order);
    e->flags &= ~(RETRACTED | HAS_ORDER | ORDER_INT);
    if (keep) e->flags |= DELETED;
    else Py_CLEAR(e->row);
}

/* ---------------------------------------------------------------- the upsert rule -------- */

/* What a change of kind with row image finds at its key's entry e (table_find's, or NULL): a row
 * is stored when its entry is neither retracted nor deleted. +I of a stored key: UPSERT_EXISTS;
 * a -U or -D of a row not stored: UPSERT_ABSENT; a -U unlike the stored row (as bytes: the
 * caller decides whether unlike texts are equal rows): UPSERT_DIFFERS; else UPSERT_OK. */
int upsert_finding(const Entry *e, int kind, const char *image, Py_ssize_t len) {
    int stored = e && !(e->flags & (RETRACTED | DELETED));
    if (kind == 0 || kind == 2) return stored && kind == 0 ? UPSERT_EXISTS : UPSERT_OK;
    if (!stored) return UPSERT_ABSENT;
    if (kind == 1 && !same_row(e->row, image, len)) return UPSERT_DIFFERS;
    return UPSERT_OK;
}

/* Apply a change whose finding was UPSERT_OK, or accepted (not UPSERT_ABSENT: there is nothing to
 * apply): +I and +U put the row (a stored one replaced), -U retracts the stored row (its slot
 * waits for the +U), -D deletes it (kept marked in a keeping table). messages[0] and [1] count
 * the messages it makes as a retract and as an upsert stream. 0, or -1 with an exception. */
int upsert_apply(Tab *t, Entry *e, int kind, const char *key, Py_ssize_t key_len, uint64_t hash, const char *image,
                 Py_ssize_t len, int keep, Py_ssize_t messages[2]) {
    int stored = e && !(e->flags & (RETRACTED | DELETED));
    if (kind == 0 || kind == 2) {
        if (table_put(t, e, key, key_len, hash, image, len) < 0) return -1;
        messages[0] += stored ? 2 : 1, messages[1] += 1;
    } else if (!e) { /* UPSERT_ABSENT: the callers do not apply it */
        PyErr_SetString(PyExc_SystemError, "kernel: a retraction of a row not stored applied");
        return -1;
    } else if (kind == 1) {
        e->flags |= RETRACTED;
        messages[0] += 1;
    } else {
        table_delete(t, e, keep);
        messages[0] += 1, messages[1] += 1;
    }
    return 0;
}
