/* crbc.io.blockmatch: difflib's matching blocks for one fixed text b, in C.
 *
 * The optional compiled twin of crbc/io/similarity.py's BlockFinder and reaches(): written from
 * difflib's algorithm (SequenceMatcher(None, a, b), autojunk on), not from any other port.
 *
 *   Index(b)                       b's index: difflib's b2j (each character's positions in b),
 *                                  without the "popular" characters when len(b) >= 200 (those
 *                                  seen more than len(b) // 100 + 1 times), as set_seq2 builds it.
 *   Index.reaches(a, tau)          SequenceMatcher(None, a, b).ratio() >= tau, stopping as soon
 *                                  as the blocks found (or the windows left) decide it; the
 *                                  decisions use ratio()'s own expression 2.0 * M / (la + lb).
 *   Index.ratio(a)                 SequenceMatcher(None, a, b).ratio().
 *   Index.find_longest_match(a, alo, ahi, blo, bhi)
 *                                  SequenceMatcher(None, a, b).find_longest_match(...) as (i, j, k).
 *   Index.b2j()                    the index as difflib's dict {character: [positions]}.
 *
 * Texts are sequences of code points (any str: astral characters, NUL, lone surrogates).
 * Memory: 12 bytes per character of b and 20 per distinct character per Index; per call
 * O(len(a) + len(b)), freed before it returns (the run-length rows of a b of up to
 * SHARED_RUN_CELLS characters are one buffer shared by all calls, kept between them).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NO_CHAR ((Py_UCS4)0xFFFFFFFFu) /* an empty slot of the table (above every code point) */

/* One cell of a row of difflib's j2len: the run length k ending at (i, j), valid when its
 * generation is the one of the row read. */
typedef struct {
    uint64_t generation;
    Py_ssize_t run;
} RunCell;

typedef struct {
    PyObject_HEAD
    Py_ssize_t lb;
    Py_UCS4 *b;            /* b's code points */
    Py_ssize_t capacity;   /* slots of the open-addressing table, a power of two */
    Py_ssize_t used;       /* slots holding a character */
    Py_UCS4 *slot_char;    /* each slot's character, NO_CHAR when empty */
    Py_ssize_t *slot_start;/* where the character's positions start in `positions`; -1: popular */
    Py_ssize_t *slot_count;/* how many positions it has; 0 for a popular character */
    Py_ssize_t *positions; /* the indexed positions of b, grouped by character, ascending */
} IndexObject;

/* Two rows of run lengths (the previous i and this one), one cell per position of b, shared by
 * every call whose b has at most SHARED_RUN_CELLS characters (the GIL is held throughout a
 * call); a longer b gets its own rows for the call. A cell is valid for the row whose
 * generation it carries: one generation per row ever searched, so no row is ever cleared. */
#define SHARED_RUN_CELLS 65536
static RunCell *shared_rows[2] = {NULL, NULL};
static uint64_t run_generation = 0;

/* ------------------------------------------------------------------------------------------ */
/* the character table */

static Py_ssize_t
slot_home(const IndexObject *ix, Py_UCS4 c)
{
    return (Py_ssize_t)((((uint64_t)c + 1) * 0x9E3779B97F4A7C15ull) >> 32) & (ix->capacity - 1);
}

/* The slot holding c, or the empty slot where it would go. */
static Py_ssize_t
slot_find(const IndexObject *ix, Py_UCS4 c)
{
    Py_ssize_t s = slot_home(ix, c);
    while (ix->slot_char[s] != c && ix->slot_char[s] != NO_CHAR) {
        s = (s + 1) & (ix->capacity - 1);
    }
    return s;
}

/* The slot of an indexed character (one b2j has), else -1. */
static Py_ssize_t
indexed_slot(const IndexObject *ix, Py_UCS4 c)
{
    Py_ssize_t s = slot_find(ix, c);
    return (ix->slot_char[s] == c && ix->slot_count[s] > 0) ? s : -1;
}

static void
index_free_buffers(IndexObject *ix)
{
    PyMem_Free(ix->b);
    PyMem_Free(ix->slot_char);
    PyMem_Free(ix->slot_start);
    PyMem_Free(ix->slot_count);
    PyMem_Free(ix->positions);
    ix->b = ix->slot_char = NULL;
    ix->slot_start = ix->slot_count = ix->positions = NULL;
    ix->capacity = ix->used = 0;
}

/* An empty table of `capacity` slots (characters and counts); 0, or -1 with MemoryError set. */
static int
table_allocate(IndexObject *ix, Py_ssize_t capacity)
{
    ix->slot_char = PyMem_Malloc((size_t)capacity * sizeof(Py_UCS4));
    ix->slot_count = PyMem_Calloc((size_t)capacity, sizeof(Py_ssize_t));
    if (ix->slot_char == NULL || ix->slot_count == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(ix->slot_char, 0xFF, (size_t)capacity * sizeof(Py_UCS4));
    ix->capacity = capacity;
    return 0;
}

/* The table with twice the slots, its characters and counts moved over. */
static int
table_grow(IndexObject *ix)
{
    Py_UCS4 *old_char = ix->slot_char;
    Py_ssize_t *old_count = ix->slot_count, old_capacity = ix->capacity, s, t;
    ix->slot_char = NULL;
    ix->slot_count = NULL;
    if (table_allocate(ix, 2 * old_capacity) < 0) {
        PyMem_Free(old_char);
        PyMem_Free(old_count);
        return -1;
    }
    for (s = 0; s < old_capacity; s++) {
        if (old_char[s] != NO_CHAR) {
            t = slot_find(ix, old_char[s]);
            ix->slot_char[t] = old_char[s];
            ix->slot_count[t] = old_count[s];
        }
    }
    PyMem_Free(old_char);
    PyMem_Free(old_count);
    return 0;
}

/* Each character of b counted in the table (grown to stay at most half full). */
static int
table_count(IndexObject *ix)
{
    Py_ssize_t j, s;
    if (table_allocate(ix, 16) < 0) {
        return -1;
    }
    for (j = 0; j < ix->lb; j++) {
        s = slot_find(ix, ix->b[j]);
        if (ix->slot_char[s] == NO_CHAR) {
            if (2 * (ix->used + 1) > ix->capacity) {
                if (table_grow(ix) < 0) {
                    return -1;
                }
                s = slot_find(ix, ix->b[j]);
            }
            ix->slot_char[s] = ix->b[j];
            ix->used++;
        }
        ix->slot_count[s]++;
    }
    return 0;
}

/* difflib's b2j from the counts: drop the popular characters (slot_start -1), then list the
 * positions of the others (slot_count counts them again as they are written). */
static int
index_fill(IndexObject *ix)
{
    Py_ssize_t lb = ix->lb, j, s, next = 0;
    Py_ssize_t popular_above = lb / 100 + 1; /* __chain_b's ntest, when lb >= 200 */
    ix->slot_start = PyMem_Malloc((size_t)ix->capacity * sizeof(Py_ssize_t));
    ix->positions = PyMem_Malloc((size_t)(lb > 0 ? lb : 1) * sizeof(Py_ssize_t));
    if (ix->slot_start == NULL || ix->positions == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (s = 0; s < ix->capacity; s++) {
        if (lb >= 200 && ix->slot_count[s] > popular_above) {
            ix->slot_start[s] = -1; /* popular: autojunk removes it from b2j */
        } else {
            ix->slot_start[s] = next;
            next += ix->slot_count[s];
        }
        ix->slot_count[s] = 0;
    }
    for (j = 0; j < lb; j++) {
        s = slot_find(ix, ix->b[j]);
        if (ix->slot_start[s] >= 0) {
            ix->positions[ix->slot_start[s] + ix->slot_count[s]++] = j;
        }
    }
    return 0;
}

static int
Index_init(IndexObject *ix, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"b", NULL};
    PyObject *text;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U:Index", kwlist, &text)) {
        return -1;
    }
    index_free_buffers(ix);
    ix->lb = PyUnicode_GetLength(text);
    if (ix->lb < 0) {
        return -1;
    }
    ix->b = PyUnicode_AsUCS4Copy(text);
    if (ix->b == NULL || table_count(ix) < 0 || index_fill(ix) < 0) {
        index_free_buffers(ix);
        return -1;
    }
    return 0;
}

static void
Index_dealloc(IndexObject *ix)
{
    index_free_buffers(ix);
    Py_TYPE(ix)->tp_free((PyObject *)ix);
}

/* ------------------------------------------------------------------------------------------ */
/* one pair (a, b) */

typedef struct {
    IndexObject *ix;
    Py_UCS4 *a;
    Py_ssize_t la;
    Py_ssize_t n_seeds;
    Py_ssize_t *seed;      /* the positions of a whose character b indexes, ascending */
    Py_ssize_t *seed_slot; /* that character's slot */
    RunCell *rows[2];      /* the run-length rows: shared_rows, or the call's own */
} Pair;

static void
pair_free(Pair *p)
{
    PyMem_Free(p->a);
    PyMem_Free(p->seed);
    PyMem_Free(p->seed_slot);
    if (p->rows[0] != shared_rows[0]) {
        PyMem_Free(p->rows[0]);
        PyMem_Free(p->rows[1]);
    }
}

/* Run-length rows for a b of lb characters: the shared ones (allocated once) or, for a longer
 * b, the call's own; 0, or -1 with MemoryError set. */
static int
pair_rows(Pair *p, Py_ssize_t lb)
{
    if (lb <= SHARED_RUN_CELLS) {
        if (shared_rows[0] == NULL) {
            shared_rows[0] = PyMem_Calloc(SHARED_RUN_CELLS, sizeof(RunCell));
        }
        if (shared_rows[1] == NULL) {
            shared_rows[1] = PyMem_Calloc(SHARED_RUN_CELLS, sizeof(RunCell));
        }
        p->rows[0] = shared_rows[0];
        p->rows[1] = shared_rows[1];
    } else {
        p->rows[0] = PyMem_Calloc((size_t)lb, sizeof(RunCell));
        p->rows[1] = PyMem_Calloc((size_t)lb, sizeof(RunCell));
    }
    if (p->rows[0] == NULL || p->rows[1] == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* a's code points and its seeds; 0, or -1 with an exception set (and nothing to free). */
static int
pair_open(Pair *p, IndexObject *ix, PyObject *text)
{
    Py_ssize_t i, s;
    memset(p, 0, sizeof(*p));
    p->ix = ix;
    if (ix->slot_char == NULL) {
        PyErr_SetString(PyExc_ValueError, "Index was not initialised");
        return -1;
    }
    p->la = PyUnicode_GetLength(text);
    if (p->la < 0) {
        return -1;
    }
    p->a = PyUnicode_AsUCS4Copy(text);
    p->seed = PyMem_Malloc((size_t)(p->la > 0 ? p->la : 1) * sizeof(Py_ssize_t));
    p->seed_slot = PyMem_Malloc((size_t)(p->la > 0 ? p->la : 1) * sizeof(Py_ssize_t));
    if (p->a == NULL || p->seed == NULL || p->seed_slot == NULL || pair_rows(p, ix->lb) < 0) {
        pair_free(p);
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return -1;
    }
    for (i = 0; i < p->la; i++) {
        s = indexed_slot(ix, p->a[i]);
        if (s >= 0) {
            p->seed[p->n_seeds] = i;
            p->seed_slot[p->n_seeds++] = s;
        }
    }
    return 0;
}

/* The first index in sorted[0:n) whose value is >= x. */
static Py_ssize_t
lower_bound(const Py_ssize_t *sorted, Py_ssize_t n, Py_ssize_t x)
{
    Py_ssize_t lo = 0, hi = n, mid;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (sorted[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

typedef struct {
    Py_ssize_t i, j, k;
} Block;

/* One row of difflib's loop: a[i] against its indexed positions j in [blo, bhi), each run
 * k(i, j) = k(i - 1, j - 1) + 1 (read from the row of generation `previous`, 0 for none);
 * the first strictly longer run becomes the best. */
static void
search_row(Pair *p, Py_ssize_t i, Py_ssize_t slot, Py_ssize_t blo, Py_ssize_t bhi,
           uint64_t previous, uint64_t current, Block *best)
{
    const IndexObject *ix = p->ix;
    const Py_ssize_t *pos = ix->positions + ix->slot_start[slot];
    Py_ssize_t n = ix->slot_count[slot], t, j, k;
    RunCell *prev_row = p->rows[previous & 1], *row = p->rows[current & 1];
    for (t = lower_bound(pos, n, blo); t < n && pos[t] < bhi; t++) {
        j = pos[t];
        k = 1;
        if (previous != 0 && j > 0 && prev_row[j - 1].generation == previous) {
            k = prev_row[j - 1].run + 1;
        }
        row[j].generation = current;
        row[j].run = k;
        if (k > best->k) {
            best->i = i - k + 1;
            best->j = j - k + 1;
            best->k = k;
        }
    }
}

/* difflib's find_longest_match(alo, ahi, blo, bhi) for isjunk None: the loop over the seeds in
 * the window (the other positions of a add nothing and leave the next row without runs), then
 * the best block extended backwards and forwards over equal characters, popular ones included. */
static Block
find_longest(Pair *p, Py_ssize_t alo, Py_ssize_t ahi, Py_ssize_t blo, Py_ssize_t bhi)
{
    IndexObject *ix = p->ix;
    const Py_UCS4 *a = p->a, *b = ix->b;
    Block best = {alo, blo, 0};
    Py_ssize_t t = lower_bound(p->seed, p->n_seeds, alo), last = -2;
    uint64_t previous = 0;
    for (; t < p->n_seeds && p->seed[t] < ahi; t++) {
        Py_ssize_t i = p->seed[t];
        uint64_t current = ++run_generation;
        search_row(p, i, p->seed_slot[t], blo, bhi, i == last + 1 ? previous : 0, current, &best);
        previous = current;
        last = i;
    }
    while (best.i > alo && best.j > blo && a[best.i - 1] == b[best.j - 1]) {
        best.i--;
        best.j--;
        best.k++;
    }
    while (best.i + best.k < ahi && best.j + best.k < bhi && a[best.i + best.k] == b[best.j + best.k]) {
        best.k++;
    }
    return best;
}

typedef struct {
    Py_ssize_t alo, ahi, blo, bhi;
} Window;

static Py_ssize_t
shorter_side(Window w)
{
    Py_ssize_t na = w.ahi - w.alo, nb = w.bhi - w.blo;
    return na < nb ? na : nb;
}

/* difflib's get_matching_blocks over a stack of windows: the matched characters M, or, when
 * decide is set, stopping once found >= M's lower bound reaches tau (1) or found + the
 * windows' shorter sides falls below it (0). Returns 1/0 (decide), M (not decide), -1 on
 * MemoryError. */
static Py_ssize_t
match_windows(Pair *p, int decide, double tau)
{
    Py_ssize_t la = p->la, lb = p->ix->lb, top = 0, found = 0, pending;
    double total = (double)(la + lb);
    /* pending windows are disjoint and each but one follows a block of at least 1 character */
    Window *stack = PyMem_Malloc(((size_t)(la < lb ? la : lb) + 2) * sizeof(Window));
    if (stack == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    stack[top++] = (Window){0, la, 0, lb};
    pending = shorter_side(stack[0]);
    while (top > 0) {
        if (decide && 2.0 * (double)found / total >= tau) {
            PyMem_Free(stack);
            return 1;
        }
        if (decide && 2.0 * (double)(found + pending) / total < tau) {
            PyMem_Free(stack);
            return 0;
        }
        Window w = stack[--top];
        pending -= shorter_side(w);
        Block m = find_longest(p, w.alo, w.ahi, w.blo, w.bhi);
        if (m.k == 0) {
            continue;
        }
        found += m.k;
        if (w.alo < m.i && w.blo < m.j) {
            stack[top] = (Window){w.alo, m.i, w.blo, m.j};
            pending += shorter_side(stack[top++]);
        }
        if (m.i + m.k < w.ahi && m.j + m.k < w.bhi) {
            stack[top] = (Window){m.i + m.k, w.ahi, m.j + m.k, w.bhi};
            pending += shorter_side(stack[top++]);
        }
    }
    PyMem_Free(stack);
    return decide ? (2.0 * (double)found / total >= tau) : found;
}

/* ------------------------------------------------------------------------------------------ */
/* methods */

static PyObject *
Index_reaches(IndexObject *ix, PyObject *args)
{
    PyObject *text;
    double tau;
    Pair p;
    Py_ssize_t answer;
    if (!PyArg_ParseTuple(args, "Ud:reaches", &text, &tau)) {
        return NULL;
    }
    if (pair_open(&p, ix, text) < 0) {
        return NULL;
    }
    if (p.la + ix->lb == 0) {
        answer = 1.0 >= tau; /* difflib's ratio of two empty texts is 1.0 */
    } else {
        answer = match_windows(&p, 1, tau);
    }
    pair_free(&p);
    if (answer < 0) {
        return NULL;
    }
    return PyBool_FromLong((long)answer);
}

static PyObject *
Index_ratio(IndexObject *ix, PyObject *args)
{
    PyObject *text;
    Pair p;
    Py_ssize_t matched;
    double total;
    if (!PyArg_ParseTuple(args, "U:ratio", &text)) {
        return NULL;
    }
    if (pair_open(&p, ix, text) < 0) {
        return NULL;
    }
    total = (double)(p.la + ix->lb);
    matched = total == 0.0 ? 0 : match_windows(&p, 0, 0.0);
    pair_free(&p);
    if (matched < 0) {
        return NULL;
    }
    return PyFloat_FromDouble(total == 0.0 ? 1.0 : 2.0 * (double)matched / total);
}

static PyObject *
Index_find_longest_match(IndexObject *ix, PyObject *args)
{
    PyObject *text;
    Pair p;
    Py_ssize_t alo, ahi, blo, bhi;
    Block m;
    if (!PyArg_ParseTuple(args, "Unnnn:find_longest_match", &text, &alo, &ahi, &blo, &bhi)) {
        return NULL;
    }
    if (pair_open(&p, ix, text) < 0) {
        return NULL;
    }
    if (!(0 <= alo && alo <= ahi && ahi <= p.la && 0 <= blo && blo <= bhi && bhi <= ix->lb)) {
        pair_free(&p);
        PyErr_SetString(PyExc_ValueError, "need 0 <= alo <= ahi <= len(a) and 0 <= blo <= bhi <= len(b)");
        return NULL;
    }
    m = find_longest(&p, alo, ahi, blo, bhi);
    pair_free(&p);
    return Py_BuildValue("(nnn)", m.i, m.j, m.k);
}

/* {character: [positions]} of the indexed characters, the form of difflib's b2j. */
static PyObject *
Index_b2j(IndexObject *ix, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyDict_New(), *key = NULL, *list = NULL;
    Py_ssize_t s, t;
    if (out == NULL) {
        return NULL;
    }
    for (s = 0; s < ix->capacity; s++) {
        if (ix->slot_char[s] == NO_CHAR || ix->slot_count[s] == 0) {
            continue;
        }
        key = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, &ix->slot_char[s], 1);
        list = PyList_New(ix->slot_count[s]);
        if (key == NULL || list == NULL) {
            goto fail;
        }
        for (t = 0; t < ix->slot_count[s]; t++) {
            PyObject *j = PyLong_FromSsize_t(ix->positions[ix->slot_start[s] + t]);
            if (j == NULL) {
                goto fail;
            }
            PyList_SET_ITEM(list, t, j);
        }
        if (PyDict_SetItem(out, key, list) < 0) {
            goto fail;
        }
        Py_CLEAR(key);
        Py_CLEAR(list);
    }
    return out;
fail:
    Py_XDECREF(key);
    Py_XDECREF(list);
    Py_DECREF(out);
    return NULL;
}

static PyObject *
Index_len(IndexObject *ix, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(ix->lb);
}

static PyMethodDef Index_methods[] = {
    {"reaches", (PyCFunction)Index_reaches, METH_VARARGS,
     "reaches(a, tau) -> bool: SequenceMatcher(None, a, b).ratio() >= tau, stopping early."},
    {"ratio", (PyCFunction)Index_ratio, METH_VARARGS,
     "ratio(a) -> float: SequenceMatcher(None, a, b).ratio()."},
    {"find_longest_match", (PyCFunction)Index_find_longest_match, METH_VARARGS,
     "find_longest_match(a, alo, ahi, blo, bhi) -> (i, j, k), as SequenceMatcher(None, a, b)'s."},
    {"b2j", (PyCFunction)Index_b2j, METH_NOARGS,
     "b2j() -> dict: each indexed character's positions in b (difflib's b2j, autojunk on)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Index_getset[] = {
    {"length", (getter)Index_len, NULL, "len(b)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "crbc.io.blockmatch.Index",
    .tp_doc = PyDoc_STR("Index(b): difflib's index of b (autojunk on) and its block search against any a."),
    .tp_basicsize = sizeof(IndexObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Index_init,
    .tp_dealloc = (destructor)Index_dealloc,
    .tp_methods = Index_methods,
    .tp_getset = Index_getset,
};

static struct PyModuleDef blockmatch_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "crbc.io.blockmatch",
    .m_doc = PyDoc_STR("difflib's matching blocks for a fixed text b, in C (crbc.io.similarity's twin)."),
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit_blockmatch(void)
{
    PyObject *m;
    if (PyType_Ready(&IndexType) < 0) {
        return NULL;
    }
    m = PyModule_Create(&blockmatch_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&IndexType);
    if (PyModule_AddObject(m, "Index", (PyObject *)&IndexType) < 0) {
        Py_DECREF(&IndexType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
