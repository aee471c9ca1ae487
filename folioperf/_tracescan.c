/* folioperf._tracescan: what a --trace run does for every API call, in C. folioperf.trace_reader.TalliesInPython
 * is the same in Python: where no C compiler was at hand, and the reference the tests hold this to.
 *
 * Tallies(sub_bucket_bits) keeps, per key `row << 16 | module`, each module's figures in the responses of a row
 * (an API's or a transaction's): samples, hops, sum, min and max µs, and the histogram folioperf.metrics.Tally
 * keeps (a value cut to sub_bucket_bits significant bits: its bucket), in two hash tables of plain integers.
 *
 * Tallies.scan(groups, ended, counted, transaction, rows, module_ids, learn_row, learn_module) -> (traced, untraced)
 * reads groups of calls, each a list of folioperf.okapi_trace.Traced: (request type, name, response ms, trace
 * field: a list of (name, line) pairs, one pair, or None). A call's parts by folioperf.okapi_trace's rules (its
 * readable lines' hops, the serving module's less the calls it made, the gateway's rest as module 0 with no
 * hop; one part per module) are one sample each of its row, rows[type][name] (or learn_row(type, name)), when
 * `counted`; ended[g] names the transactions that ended in group g: None, a name (one transaction of all its
 * calls) or a list of (name, first, end), calls[first:end] each; a transaction's parts, its calls' summed per
 * module, are one sample each of its row rows[transaction][name]. A group's transaction rows are numbered before
 * its calls'. traced/untraced count the counted calls with and without a readable line.
 * A line's head is the line without the run of `0123456789us` that ends it (str.rstrip's rule); the run is its
 * µs if it is "<digits>us" below MAX_US, and the head, if it is Okapi's `<METHOD> <module id> <URL> : <status> `,
 * gives its module (module_ids[module id], or learn_module(module id) for one not numbered yet) and its URL's
 * path. A line with both counts. Each line is read afresh, in place: a cache of lines would grow with every id
 * in a path (GET /inventory/instances/{id}), and costs about what reading does.
 *
 * Tallies.drain() -> [(key, samples, hops, sum, min, max, {bucket: count}), ...] gives what was kept, and
 * forgets it. Per line a --trace call costs one short string (its module id) made and looked up, and no Python
 * call. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_US ((int64_t)1 << 40)
#define MODULE_BITS 16

static int time_char(Py_UCS4 c) { return (c >= '0' && c <= '9') || c == 'u' || c == 's'; }

/* The µs of a line's characters from `start` to `end`, if they are "<digits>us" below MAX_US; else -1. */
static int64_t micros(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    if (end - start < 3 || PyUnicode_READ(kind, data, end - 1) != 's' || PyUnicode_READ(kind, data, end - 2) != 'u')
        return -1;
    int64_t value = 0;
    for (Py_ssize_t i = start; i < end - 2; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < '0' || c > '9')
            return -1;
        value = value * 10 + (c - '0');
        if (value >= MAX_US)
            return -1;
    }
    return value;
}

static int bit_length(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return x ? 64 - __builtin_clzll(x) : 0;
#else
    int n = 0;
    for (; x; x >>= 1)
        n++;
    return n;
#endif
}

static uint64_t mix(uint64_t x) {  /* splitmix64's finaliser: keys that differ in a few bits spread */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* -- the tables: open addressing, linear probing, at most half full ------------------------------------ */

typedef struct { int64_t key, samples, hops, sum, min, max; } Figures;  /* key -1: an empty slot */
typedef struct { int64_t key, bucket, count; } Bucket;

typedef struct {
    PyObject_HEAD
    int sub_bucket_bits;
    Figures *figures;
    Bucket *buckets;
    size_t figures_size, figures_used, buckets_size, buckets_used;  /* sizes: powers of 2 */
} Tallies;

static Figures *new_figures(size_t size) {
    Figures *table = PyMem_Malloc(size * sizeof(Figures));
    for (size_t k = 0; table != NULL && k < size; k++)
        table[k].key = -1;
    return table;
}

static Bucket *new_buckets(size_t size) {
    Bucket *table = PyMem_Malloc(size * sizeof(Bucket));
    for (size_t k = 0; table != NULL && k < size; k++)
        table[k].key = -1;
    return table;
}

static Figures *figures_slot(Figures *table, size_t size, int64_t key) {
    size_t k = mix((uint64_t)key) & (size - 1);
    while (table[k].key != -1 && table[k].key != key)
        k = (k + 1) & (size - 1);
    return &table[k];
}

static Bucket *bucket_slot(Bucket *table, size_t size, int64_t key, int64_t bucket) {
    size_t k = mix((uint64_t)key ^ mix((uint64_t)bucket)) & (size - 1);
    while (table[k].key != -1 && (table[k].key != key || table[k].bucket != bucket))
        k = (k + 1) & (size - 1);
    return &table[k];
}

static int grow_figures(Tallies *self) {
    size_t size = self->figures_size * 2;
    Figures *table = new_figures(size);
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < self->figures_size; k++)
        if (self->figures[k].key != -1)
            *figures_slot(table, size, self->figures[k].key) = self->figures[k];
    PyMem_Free(self->figures);
    self->figures = table, self->figures_size = size;
    return 0;
}

static int grow_buckets(Tallies *self) {
    size_t size = self->buckets_size * 2;
    Bucket *table = new_buckets(size);
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < self->buckets_size; k++)
        if (self->buckets[k].key != -1)
            *bucket_slot(table, size, self->buckets[k].key, self->buckets[k].bucket) = self->buckets[k];
    PyMem_Free(self->buckets);
    self->buckets = table, self->buckets_size = size;
    return 0;
}

/* One sample of `us` in `hops` hops under `key`, as folioperf.metrics.Tally.time takes it (count + 1). */
static int tally(Tallies *self, int64_t key, int64_t us, int64_t hops) {
    if ((self->figures_used + 1) * 2 > self->figures_size && grow_figures(self) < 0)
        return -1;
    if ((self->buckets_used + 1) * 2 > self->buckets_size && grow_buckets(self) < 0)
        return -1;
    if (us < 0)
        us = 0;
    Figures *f = figures_slot(self->figures, self->figures_size, key);
    if (f->key == -1) {
        *f = (Figures){key, 0, 0, 0, us, us};
        self->figures_used++;
    }
    f->samples++, f->hops += hops, f->sum += us;
    if (us < f->min)
        f->min = us;
    if (us > f->max)
        f->max = us;
    int shift = bit_length((uint64_t)us) - self->sub_bucket_bits;
    int64_t bucket = shift > 0 ? us >> shift << shift : us;
    Bucket *b = bucket_slot(self->buckets, self->buckets_size, key, bucket);
    if (b->key == -1) {
        *b = (Bucket){key, bucket, 0};
        self->buckets_used++;
    }
    b->count++;
    return 0;
}

/* -- reading calls -------------------------------------------------------------------------------------- */

/* The row of (type, name): rows[type][name], or what learn_row(type, name) numbers it; -1 with an exception set
 * on failure. */
static int64_t row_of(PyObject *rows, PyObject *type, PyObject *name, PyObject *learn_row) {
    PyObject *of_type = PyDict_GetItemWithError(rows, type);  /* borrowed */
    PyObject *found = of_type != NULL ? PyDict_GetItemWithError(of_type, name) : NULL;  /* borrowed */
    int64_t row;
    if (found != NULL)
        row = PyLong_AsLongLong(found);
    else if (PyErr_Occurred())
        return -1;
    else {
        PyObject *got = PyObject_CallFunctionObjArgs(learn_row, type, name, NULL);
        if (got == NULL)
            return -1;
        row = PyLong_AsLongLong(got);
        Py_DECREF(got);
    }
    if (row == -1 && PyErr_Occurred())
        return -1;
    if (row < 0 || row >= ((int64_t)1 << (62 - MODULE_BITS))) {
        PyErr_SetString(PyExc_ValueError, "a row is numbered from 0 to 2**46");
        return -1;
    }
    return row;
}

/* What one scan reads with (its arguments) and into. */
typedef struct {
    PyObject *transaction, *rows, *module_ids, *learn_row, *learn_module;
    int counted;
    Py_ssize_t traced[2];  /* counted calls with a readable line, and without */
} Scan;

/* The module of a module id: module_ids[id], or learn_module(id); -1 with an exception set on failure. */
static int64_t module_of(Scan *scan, PyObject *id) {
    PyObject *found = PyDict_GetItemWithError(scan->module_ids, id), *got = NULL;  /* borrowed, or new */
    if (found == NULL && (PyErr_Occurred() || (got = found = PyObject_CallOneArg(scan->learn_module, id)) == NULL))
        return -1;
    int64_t module = PyLong_AsLongLong(found);
    Py_XDECREF(got);
    if (module == -1 && PyErr_Occurred())
        return -1;
    if (module < 0 || module >= ((int64_t)1 << MODULE_BITS)) {
        PyErr_SetString(PyExc_ValueError, "a module is numbered from 0 to 2**16");
        return -1;
    }
    return module;
}

/* A readable line's hop: its module, µs, and its URL's path, characters [start, end) of data. */
typedef struct {
    int64_t module, us;
    int kind;
    const void *data;
    Py_ssize_t start, end;
} Hop;

static const Py_UCS1 slash = '/';  /* the path of a URL with none */

/* The module and path of a line whose head (all before its time) is line[0:k], if the head is Okapi's
 * `<METHOD> <module id> <URL> : <status> `: 1; 0 if it is not; -1 with an exception set on failure. The
 * path is the URL's after "//" and the host, Okapi's ".." for a cut query string dropped (trace_reader._path). */
static int read_head(Scan *scan, PyObject *line, Py_ssize_t k, Hop *hop) {
    int kind = PyUnicode_KIND(line);
    const void *data = PyUnicode_DATA(line);
    Py_ssize_t from[5], to[5], words = 0, start = 0;
    if (k == 0 || PyUnicode_READ(kind, data, k - 1) != ' ')
        return 0;
    for (Py_ssize_t i = 0; i < k && words <= 5; i++)  /* words of line[0:k-1], split at each space */
        if (i == k - 1 || PyUnicode_READ(kind, data, i) == ' ') {
            if (words < 5)
                from[words] = start, to[words] = i;
            words++, start = i + 1;
        }
    if (words != 5 || to[3] - from[3] != 1 || PyUnicode_READ(kind, data, from[3]) != ':')
        return 0;
    PyObject *id = PyUnicode_Substring(line, from[1], to[1]);
    if (id == NULL)
        return -1;
    hop->module = module_of(scan, id);
    Py_DECREF(id);
    if (hop->module < 0)
        return -1;
    Py_ssize_t url = from[2], end = to[2], at = -1;
    for (Py_ssize_t i = url; i + 1 < end && at < 0; i++)
        if (PyUnicode_READ(kind, data, i) == '/' && PyUnicode_READ(kind, data, i + 1) == '/')
            at = i + 2;
    if (at >= 0) {
        while (at < end && PyUnicode_READ(kind, data, at) != '/')
            at++;
        url = at;
    }
    if (at >= 0 && url == end)  /* a host and no path */
        hop->kind = PyUnicode_1BYTE_KIND, hop->data = &slash, hop->start = 0, hop->end = 1;
    else {
        if (end - url >= 2 && PyUnicode_READ(kind, data, end - 1) == '.' && PyUnicode_READ(kind, data, end - 2) == '.')
            end -= 2;
        hop->kind = kind, hop->data = data, hop->start = url, hop->end = end;
    }
    return 1;
}

static int same_path(const Hop *a, const Hop *b) {
    Py_ssize_t n = a->end - a->start;
    if (n != b->end - b->start)
        return 0;
    if (a->kind == b->kind)
        return memcmp((const char *)a->data + a->start * a->kind, (const char *)b->data + b->start * b->kind,
                      n * a->kind) == 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(a->kind, a->data, a->start + i) != PyUnicode_READ(b->kind, b->data, b->start + i))
            return 0;
    return 1;
}

/* Parts of the calls of one group: module, µs, hops each; a call's are one per module. */
typedef struct {
    int64_t *module, *us, *hops;
    Py_ssize_t n, size;
} Parts;

static int room(Parts *parts, Py_ssize_t more) {
    if (parts->n + more <= parts->size)
        return 0;
    Py_ssize_t size = (parts->n + more) * 2;
    int64_t *grown[3] = {PyMem_Realloc(parts->module, size * sizeof(int64_t)),
                         PyMem_Realloc(parts->us, size * sizeof(int64_t)),
                         PyMem_Realloc(parts->hops, size * sizeof(int64_t))};
    if (grown[0] != NULL)
        parts->module = grown[0];
    if (grown[1] != NULL)
        parts->us = grown[1];
    if (grown[2] != NULL)
        parts->hops = grown[2];
    if (grown[0] == NULL || grown[1] == NULL || grown[2] == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    parts->size = size;
    return 0;
}

/* Module `module`'s part among the parts from `first` on grows by `us` in `hops` hops (room made already). */
static void add_part(Parts *parts, Py_ssize_t first, int64_t module, int64_t us, int64_t hops) {
    for (Py_ssize_t k = first; k < parts->n; k++)
        if (parts->module[k] == module) {
            parts->us[k] += us;
            parts->hops[k] += hops;
            return;
        }
    Py_ssize_t k = parts->n++;
    parts->module[k] = module, parts->us[k] = us, parts->hops[k] = hops;
}

/* A call's parts appended to `parts`; *traced if any of its lines could be read. */
static int scan_call(Scan *scan, PyObject *call, Parts *parts, int *traced) {
    double ms = PyFloat_AsDouble(PyTuple_GET_ITEM(call, 2));
    if (ms == -1.0 && PyErr_Occurred())
        return -1;
    int64_t response_us = (int64_t)(ms * 1000.0 + 0.5);
    PyObject *field = PyTuple_GET_ITEM(call, 3);
    int one = PyTuple_Check(field);  /* geventhttpclient keeps a field of one line as its (name, line) pair */
    Py_ssize_t m = one ? 1 : field == Py_None ? 0 : PyList_GET_SIZE(field), readable = 0, held = 0;
    if (room(parts, m + 1) < 0)
        return -1;
    Hop small_hops[16], *hop = m <= 16 ? small_hops : PyMem_Malloc(m * sizeof(Hop));
    PyObject *small_lines[16], **lines = m <= 16 ? small_lines : PyMem_Malloc(m * sizeof(PyObject *));
    int failed = hop == NULL || lines == NULL;
    if (failed)
        PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < m && !failed && (one || j < PyList_GET_SIZE(field)); j++) {
        PyObject *pair = one ? field : PyList_GET_ITEM(field, j);
        PyObject *line = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 1) : NULL;
        if (line == NULL || !PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "a trace field holds (name, line) pairs of str");
            failed = 1;
            break;
        }
        lines[held++] = Py_NewRef(line);  /* its characters are read until the call's parts are made */
        int kind = PyUnicode_KIND(line);
        const void *data = PyUnicode_DATA(line);
        Py_ssize_t end = PyUnicode_GET_LENGTH(line), k = end;
        while (k > 0 && time_char(PyUnicode_READ(kind, data, k - 1)))
            k--;
        int64_t us = micros(kind, data, k, end);
        int okapis = us >= 0 ? read_head(scan, line, k, hop + readable) : 0;
        failed = okapis < 0;
        if (okapis > 0)
            hop[readable++].us = us;
    }
    *traced = readable > 0;
    if (!failed && readable) {
        const Hop *chain = &hop[readable - 1];  /* the serving module's line comes last */
        int64_t own = 0, made = 0;
        for (Py_ssize_t k = 0; k < readable; k++)
            *(same_path(&hop[k], chain) ? &own : &made) += hop[k].us;
        Py_ssize_t first = parts->n;
        for (Py_ssize_t k = 0; k < readable; k++) {
            int64_t us = hop[k].us;
            if (k == readable - 1)
                us = us > made ? us - made : 0;
            add_part(parts, first, hop[k].module, us, 1);
        }
        if (response_us - own > 0)
            add_part(parts, first, 0, response_us - own, 0);  /* the gateway is module 0 */
    }
    while (held > 0)
        Py_DECREF(lines[--held]);
    if (hop != small_hops)
        PyMem_Free(hop);
    if (lines != small_lines)
        PyMem_Free(lines);
    return failed ? -1 : 0;
}

/* A transaction of the calls whose parts are parts[from:to]: each module's summed, one sample each. */
static int tally_transaction(Tallies *self, int64_t row, Parts *parts, Py_ssize_t from, Py_ssize_t to) {
    if (room(parts, to - from) < 0)
        return -1;
    Py_ssize_t first = parts->n;  /* summed in the room after the group's parts */
    for (Py_ssize_t k = from; k < to; k++)
        add_part(parts, first, parts->module[k], parts->us[k], parts->hops[k]);
    int failed = 0;
    for (Py_ssize_t k = first; k < parts->n && !failed; k++)
        failed = tally(self, row << MODULE_BITS | parts->module[k], parts->us[k], parts->hops[k]) < 0;
    parts->n = first;
    return failed ? -1 : 0;
}

static int check_call(PyObject *call) {
    PyObject *field = PyTuple_Check(call) && PyTuple_GET_SIZE(call) == 4 ? PyTuple_GET_ITEM(call, 3) : NULL;
    if (field != NULL && (PyList_Check(field) || PyTuple_Check(field) || field == Py_None))
        return 0;
    PyErr_SetString(PyExc_TypeError, "a traced call is (type, name, ms, [(name, line), ...] or (name, line) or None)");
    return -1;
}

/* A group: its transactions' rows, then its calls', each call's parts and its transactions'. */
static int scan_group(Tallies *self, Scan *scan, PyObject *calls, PyObject *ended, Parts *parts) {
    Py_ssize_t m = PyList_GET_SIZE(calls), n_ended = PyList_Check(ended) ? PyList_GET_SIZE(ended) : ended != Py_None;
    Py_ssize_t *starts = PyMem_Malloc((m + 1 + 3 * n_ended) * sizeof(Py_ssize_t));  /* each call's first part */
    if (starts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *spans = starts + m + 1;  /* each transaction's row, first call and end */
    int failed = 0;
    for (Py_ssize_t t = 0; t < n_ended && !failed; t++) {
        PyObject *name = ended, *entry = PyList_Check(ended) ? PyList_GET_ITEM(ended, t) : NULL;
        Py_ssize_t first = 0, end = m;
        if (entry != NULL) {
            if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
                PyErr_SetString(PyExc_TypeError, "an ended transaction is (name, first, end)");
                failed = 1;
                break;
            }
            name = PyTuple_GET_ITEM(entry, 0);
            first = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
            end = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 2));
            if (PyErr_Occurred() || first < 0 || first > end || end > m) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "an ended transaction's calls are calls[first:end] of its group");
                failed = 1;
                break;
            }
        }
        int64_t row = row_of(scan->rows, scan->transaction, name, scan->learn_row);
        failed = row < 0;
        spans[3 * t] = (Py_ssize_t)row, spans[3 * t + 1] = first, spans[3 * t + 2] = end;
    }
    parts->n = 0;
    for (Py_ssize_t c = 0; c < m && !failed; c++) {
        if (c >= PyList_GET_SIZE(calls)) {
            PyErr_SetString(PyExc_RuntimeError, "the calls changed while they were read");
            failed = 1;
            break;
        }
        PyObject *call = PyList_GET_ITEM(calls, c);
        Py_INCREF(call);  /* held while learn_* run Python code */
        int64_t row = 0;
        int has_lines = 0;
        starts[c] = parts->n;
        failed = check_call(call) < 0
            || (scan->counted
                && (row = row_of(scan->rows, PyTuple_GET_ITEM(call, 0), PyTuple_GET_ITEM(call, 1), scan->learn_row)) < 0)
            || scan_call(scan, call, parts, &has_lines) < 0;
        Py_DECREF(call);
        if (!failed && scan->counted) {
            scan->traced[!has_lines]++;
            for (Py_ssize_t k = starts[c]; k < parts->n && !failed; k++)
                failed = tally(self, row << MODULE_BITS | parts->module[k], parts->us[k], parts->hops[k]) < 0;
        }
    }
    starts[m] = parts->n;
    for (Py_ssize_t t = 0; t < n_ended && !failed; t++)
        failed = tally_transaction(self, spans[3 * t], parts, starts[spans[3 * t + 1]], starts[spans[3 * t + 2]]) < 0;
    PyMem_Free(starts);
    return failed ? -1 : 0;
}

static PyObject *Tallies_scan(Tallies *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])
            || !PyDict_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "scan(groups: list, ended: list, counted: bool, transaction: str, rows: dict, "
                                         "module_ids: dict, learn_row, learn_module)");
        return NULL;
    }
    if (self->figures == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tallies.__init__ was not called");
        return NULL;
    }
    PyObject *groups = args[0], *ended = args[1];
    Scan scan = {args[3], args[4], args[5], args[6], args[7], PyObject_IsTrue(args[2]), {0, 0}};
    if (scan.counted < 0)
        return NULL;
    Parts parts = {NULL, NULL, NULL, 0, 0};
    int failed = 0;
    Py_INCREF(groups);
    Py_INCREF(ended);
    for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups) && g < PyList_GET_SIZE(ended) && !failed; g++) {
        PyObject *calls = PyList_GET_ITEM(groups, g), *its = PyList_GET_ITEM(ended, g);
        if (!PyList_Check(calls) || !(its == Py_None || PyUnicode_Check(its) || PyList_Check(its))) {
            PyErr_SetString(PyExc_TypeError, "a group is a list of traced calls, ended with None, a name or a list");
            failed = 1;
            break;
        }
        Py_INCREF(calls);
        Py_INCREF(its);
        failed = scan_group(self, &scan, calls, its, &parts) < 0;
        Py_DECREF(calls);
        Py_DECREF(its);
    }
    Py_DECREF(groups);
    Py_DECREF(ended);
    PyMem_Free(parts.module);
    PyMem_Free(parts.us);
    PyMem_Free(parts.hops);
    return failed ? NULL : Py_BuildValue("nn", scan.traced[0], scan.traced[1]);
}

/* -- handing over -------------------------------------------------------------------------------------- */

static int clear(Tallies *self) {
    Figures *figures = new_figures(8);
    Bucket *buckets = new_buckets(64);
    if (figures == NULL || buckets == NULL) {
        PyMem_Free(figures);
        PyMem_Free(buckets);
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(self->figures);
    PyMem_Free(self->buckets);
    self->figures = figures, self->buckets = buckets;
    self->figures_size = 8, self->buckets_size = 64, self->figures_used = self->buckets_used = 0;
    return 0;
}

static PyObject *Tallies_drain(Tallies *self, PyObject *Py_UNUSED(ignored)) {
    if (self->figures == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tallies.__init__ was not called");
        return NULL;
    }
    PyObject *result = PyList_New(0), **dicts = PyMem_Calloc(self->figures_size, sizeof(PyObject *));
    if (result == NULL || dicts == NULL)
        goto failed;
    for (size_t k = 0; k < self->figures_size; k++) {
        Figures *f = &self->figures[k];
        if (f->key == -1)
            continue;
        if ((dicts[k] = PyDict_New()) == NULL)
            goto failed;
        PyObject *item = Py_BuildValue("LLLLLLO", f->key, f->samples, f->hops, f->sum, f->min, f->max, dicts[k]);
        if (item == NULL || PyList_Append(result, item) < 0) {
            Py_XDECREF(item);
            goto failed;
        }
        Py_DECREF(item);
    }
    for (size_t k = 0; k < self->buckets_size; k++) {
        Bucket *b = &self->buckets[k];
        if (b->key == -1)
            continue;
        PyObject *dict = dicts[figures_slot(self->figures, self->figures_size, b->key) - self->figures];
        PyObject *bucket = PyLong_FromLongLong(b->bucket), *count = PyLong_FromLongLong(b->count);
        int set = bucket != NULL && count != NULL ? PyDict_SetItem(dict, bucket, count) : -1;
        Py_XDECREF(bucket);
        Py_XDECREF(count);
        if (set < 0)
            goto failed;
    }
    for (size_t k = 0; k < self->figures_size; k++)
        Py_XDECREF(dicts[k]);
    PyMem_Free(dicts);
    if (clear(self) < 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
failed:
    for (size_t k = 0; dicts != NULL && k < self->figures_size; k++)
        Py_XDECREF(dicts[k]);
    PyMem_Free(dicts);
    Py_XDECREF(result);
    return dicts == NULL ? PyErr_NoMemory() : NULL;
}

static int Tallies_init(Tallies *self, PyObject *args, PyObject *kwargs) {
    if (!PyArg_ParseTuple(args, "i:Tallies", &self->sub_bucket_bits) || (kwargs != NULL && PyDict_GET_SIZE(kwargs))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Tallies(sub_bucket_bits)");
        return -1;
    }
    if (self->sub_bucket_bits < 1 || self->sub_bucket_bits > 62) {
        PyErr_SetString(PyExc_ValueError, "sub_bucket_bits is from 1 to 62");
        return -1;
    }
    return clear(self);
}

static void Tallies_dealloc(Tallies *self) {
    PyMem_Free(self->figures);
    PyMem_Free(self->buckets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Tallies_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Tallies_scan, METH_FASTCALL,
     "scan(groups, ended, counted, transaction, rows, module_ids, learn_row, learn_module) -> (traced, untraced)"},
    {"drain", (PyCFunction)Tallies_drain, METH_NOARGS,
     "drain() -> [(key, samples, hops, sum, min, max, {bucket: count}), ...], forgotten here"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject TalliesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "folioperf._tracescan.Tallies",
    .tp_basicsize = sizeof(Tallies),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Each module's figures per row of --trace calls scanned; see the module's comment.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Tallies_init,
    .tp_dealloc = (destructor)Tallies_dealloc,
    .tp_methods = Tallies_methods,
};

static struct PyModuleDef tracescan = {PyModuleDef_HEAD_INIT, .m_name = "folioperf._tracescan", .m_size = -1};

PyMODINIT_FUNC PyInit__tracescan(void) {
    if (PyType_Ready(&TalliesType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&tracescan);
    if (module != NULL && PyModule_AddObjectRef(module, "Tallies", (PyObject *)&TalliesType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
