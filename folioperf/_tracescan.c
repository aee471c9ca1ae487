/* folioperf._tracescan: what a --trace run does for every API call, in C. folioperf.trace_reader.scan_in_python
 * is the same in Python: where no C compiler was at hand, and the reference the tests hold this to.
 *
 * scan(groups, names, base, transaction, rows, heads, learn_row, learn_head) reads groups of calls (each a list
 * of folioperf.okapi_trace.Traced: (request type, name, response ms, trace field: a list of (name, line) pairs)),
 * the calls numbered from `base` on, into eight packed arrays:
 *   rows    int64 per call: rows[type][name], or learn_row(type, name) for a row not numbered yet
 *   ms      float64 per call: its response ms
 *   counts  int64 per call: its number of lines
 *   codes   int64 per line: heads[head], or learn_head(head) for a head not seen yet; a line's head is the
 *           line without the run of `0123456789us` that ends it (str.rstrip's rule)
 *   us      int64 per line: that run as "<digits>us", below MAX_US; -1 for anything else
 *   and per group whose name (names[g]) is not None, a transaction of all its calls: its row
 *   (rows[transaction][name]), and its first call's number and the one after its last.
 * Per line that is one short string made and hashed, and no Python call: the loops the interpreter would
 * run per call and per line are the cost --trace must keep small. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MAX_US ((int64_t)1 << 40)
#define OUTPUTS 8

static int time_char(Py_UCS4 c) { return (c >= '0' && c <= '9') || c == 'u' || c == 's'; }

/* The µs of a line's last `len` characters from `start`, if they are "<digits>us" below MAX_US; else -1. */
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

/* A number a dict holds for `key`, or what `learn(*args)` gives; -1 with an exception set on failure. */
static int64_t numbered(PyObject *dict, PyObject *key, PyObject *learn, PyObject *arg0, PyObject *arg1) {
    PyObject *found = dict != NULL ? PyDict_GetItemWithError(dict, key) : NULL;  /* borrowed */
    if (found != NULL)
        return PyLong_AsLongLong(found);
    if (PyErr_Occurred())
        return -1;
    PyObject *got = arg1 != NULL ? PyObject_CallFunctionObjArgs(learn, arg0, arg1, NULL)
                                 : PyObject_CallOneArg(learn, arg0);
    if (got == NULL)
        return -1;
    int64_t number = PyLong_AsLongLong(got);
    Py_DECREF(got);
    return number;
}

/* A call's row, ms and lines into the outputs at call index i and line index *at. */
static int scan_call(PyObject *call, Py_ssize_t i, Py_ssize_t *at, Py_ssize_t lines, PyObject *rows, PyObject *heads,
                     PyObject *learn_row, PyObject *learn_head, int64_t *row, double *ms, int64_t *count, int64_t *code,
                     int64_t *us) {
    PyObject *type = PyTuple_GET_ITEM(call, 0), *name = PyTuple_GET_ITEM(call, 1);
    PyObject *of_type = PyDict_GetItemWithError(rows, type);  /* borrowed */
    if (of_type == NULL && PyErr_Occurred())
        return -1;
    if ((row[i] = numbered(of_type, name, learn_row, type, name)) == -1 && PyErr_Occurred())
        return -1;
    if ((ms[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(call, 2))) == -1.0 && PyErr_Occurred())
        return -1;
    PyObject *field = PyTuple_GET_ITEM(call, 3);
    Py_ssize_t m = PyList_GET_SIZE(field);
    if (*at + m > lines) {  /* a learn_* call grew a field under us */
        PyErr_SetString(PyExc_RuntimeError, "a traced call's field changed while it was read");
        return -1;
    }
    count[i] = m;
    for (Py_ssize_t j = 0; j < m; j++, (*at)++) {
        PyObject *pair = PyList_GET_ITEM(field, j);
        PyObject *line = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 1) : NULL;
        if (line == NULL || !PyUnicode_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "a trace field holds (name, line) pairs of str");
            return -1;
        }
        int kind = PyUnicode_KIND(line);
        const void *data = PyUnicode_DATA(line);
        Py_ssize_t end = PyUnicode_GET_LENGTH(line), k = end;
        while (k > 0 && time_char(PyUnicode_READ(kind, data, k - 1)))
            k--;
        us[*at] = micros(kind, data, k, end);
        PyObject *head = PyUnicode_Substring(line, 0, k);
        if (head == NULL)
            return -1;
        code[*at] = numbered(heads, head, learn_head, head, NULL);
        Py_DECREF(head);
        if (code[*at] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
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
    Py_ssize_t sizes[OUTPUTS] = {n, n, n, lines, lines, named, named, named};
    PyObject *out[OUTPUTS] = {NULL};
    for (int k = 0; k < OUTPUTS; k++)
        if ((out[k] = PyBytes_FromStringAndSize(NULL, sizes[k] * 8)) == NULL)
            goto failed;
    int64_t *row = (int64_t *)PyBytes_AS_STRING(out[0]), *count = (int64_t *)PyBytes_AS_STRING(out[2]);
    double *ms = (double *)PyBytes_AS_STRING(out[1]);
    int64_t *code = (int64_t *)PyBytes_AS_STRING(out[3]), *us = (int64_t *)PyBytes_AS_STRING(out[4]);
    int64_t *t_row = (int64_t *)PyBytes_AS_STRING(out[5]), *t_first = (int64_t *)PyBytes_AS_STRING(out[6]);
    int64_t *t_end = (int64_t *)PyBytes_AS_STRING(out[7]);
    Py_ssize_t i = 0, at = 0, t = 0;
    PyObject *of_transaction = NULL;  /* borrowed: rows[transaction], once it is there */
    for (Py_ssize_t g = 0; g < n_groups && t < named; g++) {  /* the transactions' rows first, as scan_in_python */
        PyObject *name = PyList_GET_ITEM(names, g);
        if (name == Py_None)
            continue;
        if (of_transaction == NULL && (of_transaction = PyDict_GetItemWithError(rows, transaction)) == NULL
                && PyErr_Occurred())
            goto failed;
        if ((t_row[t++] = numbered(of_transaction, name, learn_row, transaction, name)) == -1 && PyErr_Occurred())
            goto failed;
    }
    t = 0;
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        PyObject *calls = PyList_GET_ITEM(groups, g), *name = PyList_GET_ITEM(names, g);
        Py_ssize_t first = i, m = PyList_GET_SIZE(calls);
        if (i + m > n) {
            PyErr_SetString(PyExc_RuntimeError, "a group changed while it was read");
            goto failed;
        }
        for (Py_ssize_t c = 0; c < m; c++, i++)
            if (scan_call(PyList_GET_ITEM(calls, c), i, &at, lines, rows, heads, learn_row, learn_head, row, ms, count,
                          code, us) < 0)
                goto failed;
        if (name != Py_None && t < named) {
            t_first[t] = base + first;
            t_end[t++] = base + i;
        }
    }
    if (i != n || at != lines || t != named) {
        PyErr_SetString(PyExc_RuntimeError, "the calls changed while they were read");
        goto failed;
    }
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
     "(rows, ms, counts, codes, us, transaction rows, firsts, ends)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef tracescan = {
    PyModuleDef_HEAD_INIT, .m_name = "folioperf._tracescan", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__tracescan(void) { return PyModule_Create(&tracescan); }
