/* folioperf._tracescan: what a --trace run does for every API call, in C. folioperf.trace_reader.scan_in_python
 * is the same in Python: where no C compiler was at hand, and the reference the tests hold this to.
 *
 * scan(groups, names, base, transaction, rows, heads, learn_row, learn_head) reads groups of calls (each a list
 * of folioperf.okapi_trace.Traced: (request type, name, response ms, trace field: a list of (name, line) pairs)),
 * the calls numbered from `base` on, into nine packed arrays:
 *   rows      int64 per call: rows[type][name], or learn_row(type, name) for a row not numbered yet
 *   parts     int64 call, module, µs, hops per (call, module) with a part, by call then module: each module's
 *             part of the call by folioperf.okapi_trace's rules, module 0 the gateway's (its hops 0)
 *   traced    one byte per call: 1 if any of its lines could be read
 *   and per group whose name (names[g]) is not None, a transaction of all its calls: its row
 *   (rows[transaction][name]), and its first call's number and the one after its last.
 * A line's head is the line without the run of `0123456789us` that ends it (str.rstrip's rule); heads[head]
 * (or learn_head(head)) is its (module, path's hash), module -1 for a line that is not Okapi's; the run is its
 * µs if it is "<digits>us" below MAX_US. A line with both counts. Per line that is one short string made and
 * looked up, and no Python call: the loops the interpreter would run per call and per line are the cost
 * --trace must keep small. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MAX_US ((int64_t)1 << 40)
#define OUTPUTS 9

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

/* The row of (type, name): of_type[name] (of_type = rows[type], NULL when rows has none), or what
 * learn_row(type, name) numbers it; -1 with an exception set on failure. */
static int64_t row_of(PyObject *of_type, PyObject *type, PyObject *name, PyObject *learn_row) {
    PyObject *found = of_type != NULL ? PyDict_GetItemWithError(of_type, name) : NULL;  /* borrowed */
    if (found != NULL)
        return PyLong_AsLongLong(found);
    if (PyErr_Occurred())
        return -1;
    PyObject *got = PyObject_CallFunctionObjArgs(learn_row, type, name, NULL);
    if (got == NULL)
        return -1;
    int64_t row = PyLong_AsLongLong(got);
    Py_DECREF(got);
    return row;
}

/* The parts of the calls scanned so far: one entry per (call, module) that has one. */
typedef struct {
    int64_t *call, *module, *us, *hops;
    Py_ssize_t n;
} Parts;

/* Module `module`'s part of the call whose entries begin at `first` grows by `us` in `hops` hops. */
static void add_part(Parts *parts, Py_ssize_t first, int64_t call, int64_t module, int64_t us, int64_t hops) {
    for (Py_ssize_t k = first; k < parts->n; k++)
        if (parts->module[k] == module) {
            parts->us[k] += us;
            parts->hops[k] += hops;
            return;
        }
    Py_ssize_t k = parts->n++;
    parts->call[k] = call, parts->module[k] = module, parts->us[k] = us, parts->hops[k] = hops;
}

/* A head's (module, path) as TraceReader._learn gives them: heads[head], or learn_head(head). */
static int head_of(PyObject *heads, PyObject *learn_head, PyObject *head, int64_t *module, int64_t *path) {
    PyObject *found = PyDict_GetItemWithError(heads, head), *got = NULL;  /* borrowed, or new */
    if (found == NULL) {
        if (PyErr_Occurred() || (got = found = PyObject_CallOneArg(learn_head, head)) == NULL)
            return -1;
    }
    int ok = PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 2;
    if (ok) {
        *module = PyLong_AsLongLong(PyTuple_GET_ITEM(found, 0));
        *path = PyLong_AsLongLong(PyTuple_GET_ITEM(found, 1));
    } else
        PyErr_SetString(PyExc_TypeError, "a head is numbered (module, path)");
    Py_XDECREF(got);
    return ok && !PyErr_Occurred() ? 0 : -1;
}

/* Call number `index`'s row, and its parts by folioperf.okapi_trace's rules: its readable lines' hops (the
 * last one's less the calls made, on other paths than its, never below 0), the gateway's rest. */
static int scan_call(PyObject *call, int64_t index, PyObject *rows, PyObject *heads, PyObject *learn_row,
                     PyObject *learn_head, int64_t *row, char *traced, Parts *parts) {
    PyObject *type = PyTuple_GET_ITEM(call, 0), *name = PyTuple_GET_ITEM(call, 1);
    PyObject *of_type = PyDict_GetItemWithError(rows, type);  /* borrowed */
    if (of_type == NULL && PyErr_Occurred())
        return -1;
    if ((*row = row_of(of_type, type, name, learn_row)) == -1 && PyErr_Occurred())
        return -1;
    double ms = PyFloat_AsDouble(PyTuple_GET_ITEM(call, 2));
    if (ms == -1.0 && PyErr_Occurred())
        return -1;
    int64_t response_us = (int64_t)(ms * 1000.0 + 0.5);
    PyObject *field = PyTuple_GET_ITEM(call, 3);
    Py_ssize_t m = PyList_GET_SIZE(field), readable = 0;
    int64_t small[3 * 32], *hop = m <= 32 ? small : PyMem_Malloc(3 * m * sizeof(int64_t));  /* module, path, µs */
    if (hop == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int failed = 0;
    for (Py_ssize_t j = 0; j < m && j < PyList_GET_SIZE(field) && !failed; j++) {
        PyObject *pair = PyList_GET_ITEM(field, j);
        PyObject *line = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 1) : NULL;
        if (line == NULL || !PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "a trace field holds (name, line) pairs of str");
            failed = 1;
            break;
        }
        int kind = PyUnicode_KIND(line);
        const void *data = PyUnicode_DATA(line);
        Py_ssize_t end = PyUnicode_GET_LENGTH(line), k = end;
        while (k > 0 && time_char(PyUnicode_READ(kind, data, k - 1)))
            k--;
        int64_t us = micros(kind, data, k, end), module, path;
        PyObject *head = PyUnicode_Substring(line, 0, k);
        if (head == NULL || head_of(heads, learn_head, head, &module, &path) < 0)
            failed = 1;
        Py_XDECREF(head);
        if (!failed && us >= 0 && module >= 0) {
            int64_t *h = hop + 3 * readable++;
            h[0] = module, h[1] = path, h[2] = us;
        }
    }
    *traced = readable > 0;
    if (!failed && readable) {
        int64_t chain = hop[3 * (readable - 1) + 1], own = 0, made = 0;
        for (Py_ssize_t k = 0; k < readable; k++)
            *(hop[3 * k + 1] == chain ? &own : &made) += hop[3 * k + 2];
        Py_ssize_t first = parts->n;
        for (Py_ssize_t k = 0; k < readable; k++) {
            int64_t us = hop[3 * k + 2];
            if (k == readable - 1)
                us = us > made ? us - made : 0;
            add_part(parts, first, index, hop[3 * k], us, 1);
        }
        if (response_us - own > 0)
            add_part(parts, first, index, 0, response_us - own, 0);  /* the gateway is module 0 */
        for (Py_ssize_t k = first + 1; k < parts->n; k++)  /* by module, as numpy's unique sorts them */
            for (Py_ssize_t j = k; j > first && parts->module[j - 1] > parts->module[j]; j--) {
                int64_t t;
                t = parts->module[j], parts->module[j] = parts->module[j - 1], parts->module[j - 1] = t;
                t = parts->us[j], parts->us[j] = parts->us[j - 1], parts->us[j - 1] = t;
                t = parts->hops[j], parts->hops[j] = parts->hops[j - 1], parts->hops[j - 1] = t;
            }
    }
    if (hop != small)
        PyMem_Free(hop);
    return failed ? -1 : 0;
}

static PyObject *scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 8 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])
            || !PyDict_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "scan(groups: list, names: list, base: int, transaction: str, rows: dict, heads: dict, "
                        "learn_row, learn_head)");
        return NULL;
    }
    PyObject *groups = args[0], *names = args[1], *transaction = args[3], *rows = args[4], *heads = args[5];
    PyObject *learn_row = args[6], *learn_head = args[7];
    int64_t base = PyLong_AsLongLong(args[2]);
    if (base == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n_groups = PyList_GET_SIZE(groups), n = 0, lines = 0, named = 0;
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        PyObject *calls = PyList_GET_ITEM(groups, g);
        if (!PyList_Check(calls)) {
            PyErr_SetString(PyExc_TypeError, "a group is a list of traced calls");
            return NULL;
        }
        named += PyList_GET_ITEM(names, g) != Py_None;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls); i++, n++) {
            PyObject *call = PyList_GET_ITEM(calls, i);
            if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) != 4 || !PyList_Check(PyTuple_GET_ITEM(call, 3))) {
                PyErr_SetString(PyExc_TypeError, "a traced call is (type, name, ms, [(name, line), ...])");
                return NULL;
            }
            lines += PyList_GET_SIZE(PyTuple_GET_ITEM(call, 3));
        }
    }
    /* rows, part call, module, µs, hops, traced, transaction rows, firsts, ends */
    Py_ssize_t sizes[OUTPUTS] = {8 * n, 8 * (lines + n), 8 * (lines + n), 8 * (lines + n), 8 * (lines + n), n,
                                 8 * named, 8 * named, 8 * named};
    PyObject *out[OUTPUTS] = {NULL};
    for (int k = 0; k < OUTPUTS; k++)
        if ((out[k] = PyBytes_FromStringAndSize(NULL, sizes[k])) == NULL)
            goto failed;
    int64_t *row = (int64_t *)PyBytes_AS_STRING(out[0]);
    Parts parts = {(int64_t *)PyBytes_AS_STRING(out[1]), (int64_t *)PyBytes_AS_STRING(out[2]),
                   (int64_t *)PyBytes_AS_STRING(out[3]), (int64_t *)PyBytes_AS_STRING(out[4]), 0};
    char *traced = PyBytes_AS_STRING(out[5]);
    int64_t *t_row = (int64_t *)PyBytes_AS_STRING(out[6]), *t_first = (int64_t *)PyBytes_AS_STRING(out[7]);
    int64_t *t_end = (int64_t *)PyBytes_AS_STRING(out[8]);
    Py_ssize_t i = 0, t = 0;
    PyObject *of_transaction = NULL;  /* borrowed: rows[transaction], once it is there */
    for (Py_ssize_t g = 0; g < n_groups && t < named; g++) {  /* the transactions' rows first, as scan_in_python */
        PyObject *name = PyList_GET_ITEM(names, g);
        if (name == Py_None)
            continue;
        if (of_transaction == NULL && (of_transaction = PyDict_GetItemWithError(rows, transaction)) == NULL
                && PyErr_Occurred())
            goto failed;
        if ((t_row[t++] = row_of(of_transaction, transaction, name, learn_row)) == -1 && PyErr_Occurred())
            goto failed;
    }
    t = 0;
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        PyObject *calls = PyList_GET_ITEM(groups, g), *name = PyList_GET_ITEM(names, g);
        Py_ssize_t first = i, m = PyList_GET_SIZE(calls);
        if (i + m > n) {
            PyErr_SetString(PyExc_RuntimeError, "the calls changed while they were read");
            goto failed;
        }
        for (Py_ssize_t c = 0; c < m; c++, i++) {
            PyObject *call = PyList_GET_ITEM(calls, c);
            if (parts.n + PyList_GET_SIZE(PyTuple_GET_ITEM(call, 3)) + 1 > lines + n) {
                PyErr_SetString(PyExc_RuntimeError, "a traced call's field changed while it was read");
                goto failed;
            }
            Py_INCREF(call);  /* held while learn_* run Python code */
            int scanned = scan_call(call, base + i, rows, heads, learn_row, learn_head, row + i, traced + i, &parts);
            Py_DECREF(call);
            if (scanned < 0)
                goto failed;
        }
        if (name != Py_None && t < named) {
            t_first[t] = base + first;
            t_end[t++] = base + i;
        }
    }
    if (i != n || t != named) {
        PyErr_SetString(PyExc_RuntimeError, "the calls changed while they were read");
        goto failed;
    }
    for (int k = 1; k <= 4; k++)
        if (_PyBytes_Resize(&out[k], 8 * parts.n) < 0)
            goto failed;
    PyObject *result = PyTuple_New(OUTPUTS);
    if (result == NULL)
        goto failed;
    for (int k = 0; k < OUTPUTS; k++)
        PyTuple_SET_ITEM(result, k, out[k]);
    return result;
failed:
    for (int k = 0; k < OUTPUTS; k++)
        Py_XDECREF(out[k]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(groups, names, base, transaction, rows, heads, learn_row, learn_head) -> packed arrays "
     "(rows, part calls, modules, us, hops, traced, transaction rows, firsts, ends)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef tracescan = {
    PyModuleDef_HEAD_INIT, .m_name = "folioperf._tracescan", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__tracescan(void) { return PyModule_Create(&tracescan); }
