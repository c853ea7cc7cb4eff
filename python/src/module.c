/* SPDX-License-Identifier: BSD-3-Clause */
/* module.c: the module sicm._sicm — library start-up, the Device type,
 * device discovery and ranking, page residency of any address range, and
 * the automatic placer's start and stop.  The Python layer (sicm/__init__.py)
 * gives these their documented names. */
#define SICM_PY_MODULE_C
#include "sicm_py.h"

#include <errno.h>
#include <numaif.h>
#include <string.h>
#include <unistd.h>

PyObject *sicm_py_oserror(const char *what) {
  int err = errno;
  PyObject *v = Py_BuildValue("(iN)", err, PyUnicode_FromFormat("%s: %s", what, strerror(err)));
  if (v) {
    PyErr_SetObject(PyExc_OSError, v);
    Py_DECREF(v);
  }
  return NULL;
}

/* ---- Device ---- */

PyObject *sicm_py_device_new(sicm_device *dev) {
  DeviceObject *d = PyObject_New(DeviceObject, &sicm_py_DeviceType);
  if (d)
    d->dev = dev;
  return (PyObject *)d;
}

sicm_device *sicm_py_device_arg(PyObject *obj, const char *what) {
  if (!PyObject_TypeCheck(obj, &sicm_py_DeviceType)) {
    PyErr_Format(PyExc_TypeError, "%s must be a sicm.Device, not %.100s", what, Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return ((DeviceObject *)obj)->dev;
}

static PyObject *device_get(DeviceObject *self, void *field) {
  const sicm_device *d = self->dev;
  const char *f = field;
  if (!strcmp(f, "index"))
    return PyLong_FromUnsignedLong(d->index);
  if (!strcmp(f, "node"))
    return PyLong_FromLong(d->node);
  if (!strcmp(f, "kind"))
    return PyUnicode_FromString(sicm_device_kind_name(d->kind));
  if (!strcmp(f, "page_size"))
    return PyLong_FromSize_t(d->page_size);
  if (!strcmp(f, "capacity"))
    return PyLong_FromSize_t(d->capacity);
  if (!strcmp(f, "has_cpus"))
    return PyBool_FromLong(d->has_cpus);
  if (!strcmp(f, "huge"))
    return PyBool_FromLong(d->huge);
  if (!strcmp(f, "read_bandwidth"))
    return PyLong_FromUnsignedLongLong(d->perf.read_bandwidth);
  if (!strcmp(f, "read_latency"))
    return PyLong_FromUnsignedLongLong(d->perf.read_latency);
  size_t free_bytes; /* "free" */
  if (sicm_device_get_free_bytes(d, &free_bytes) != 0)
    return sicm_py_oserror("sicm_device_get_free_bytes");
  return PyLong_FromSize_t(free_bytes);
}

#define DEVICE_FIELD(name, doc) {name, (getter)device_get, NULL, doc, name}
static PyGetSetDef device_getset[] = {
    DEVICE_FIELD("index", "position in sicm.devices()"),
    DEVICE_FIELD("node", "NUMA node (OS index)"),
    DEVICE_FIELD("kind", "'dram', 'hbm', 'capacity' or 'unknown'"),
    DEVICE_FIELD("page_size", "bytes per page"),
    DEVICE_FIELD("capacity", "bytes of the node (hugetlb: pages reserved x page size)"),
    DEVICE_FIELD("free", "free bytes now (a live query)"),
    DEVICE_FIELD("has_cpus", "True when the node has CPUs"),
    DEVICE_FIELD("huge", "True for a hugetlb device"),
    DEVICE_FIELD("read_bandwidth", "MB/s seen from the nearest initiator (0: unknown)"),
    DEVICE_FIELD("read_latency", "ns seen from the nearest initiator (0: unknown)"),
    {NULL}};

static PyObject *device_repr(DeviceObject *self) {
  return PyUnicode_FromFormat("sicm.Device(node=%d, kind='%s', page_size=%zu)", self->dev->node,
                              sicm_device_kind_name(self->dev->kind), self->dev->page_size);
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, &sicm_py_DeviceType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  int same = ((DeviceObject *)a)->dev == ((DeviceObject *)b)->dev;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static Py_hash_t device_hash(DeviceObject *self) { return (Py_hash_t)self->dev->index + 1; }

/* Pickled (and so sent to another process) as its node and page size: the
 * receiver gets its own device of that node, or an error if it has none. */
static PyObject *device_reduce(DeviceObject *self, PyObject *unused) {
  (void)unused;
  PyObject *mod = PyImport_ImportModule("sicm");
  if (!mod)
    return NULL;
  PyObject *fn = PyObject_GetAttrString(mod, "device");
  Py_DECREF(mod);
  if (!fn)
    return NULL;
  return Py_BuildValue("(N(in))", fn, self->dev->node, (Py_ssize_t)self->dev->page_size);
}

static PyMethodDef device_methods[] = {{"__reduce__", (PyCFunction)device_reduce, METH_NOARGS, NULL}, {NULL}};

PyTypeObject sicm_py_DeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sicm.Device",
    .tp_basicsize = sizeof(DeviceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A memory device: one NUMA node with one page size (from sicm.devices()).",
    .tp_getset = device_getset,
    .tp_methods = device_methods,
    .tp_repr = (reprfunc)device_repr,
    .tp_richcompare = device_richcompare,
    .tp_hash = (hashfunc)device_hash,
};

/* ---- discovery ---- */

static PyObject *py_devices(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  const sicm_device_list *list = sicm_devices();
  if (!list)
    return sicm_py_oserror("sicm_devices");
  PyObject *out = PyList_New(list->count);
  for (unsigned i = 0; out && i < list->count; i++) {
    PyObject *d = sicm_py_device_new(&list->devices[i]);
    if (!d) {
      Py_CLEAR(out);
      break;
    }
    PyList_SET_ITEM(out, i, d);
  }
  return out;
}

static PyObject *py_device(PyObject *m, PyObject *args) {
  (void)m;
  int node;
  Py_ssize_t page_size = 0;
  if (!PyArg_ParseTuple(args, "i|n:device", &node, &page_size))
    return NULL;
  if (page_size < 0) {
    PyErr_SetString(PyExc_ValueError, "page_size must not be negative");
    return NULL;
  }
  sicm_device *dev = sicm_device_of_node(node, (size_t)page_size);
  if (!dev)
    return sicm_py_oserror("sicm_device_of_node");
  return sicm_py_device_new(dev);
}

static PyObject *py_best(PyObject *m, PyObject *args) {
  (void)m;
  int by, initiator = SICM_INITIATOR_SELF;
  if (!PyArg_ParseTuple(args, "i|i:best", &by, &initiator))
    return NULL;
  sicm_device *dev = sicm_device_best((sicm_rank_by)by, initiator);
  if (!dev)
    return sicm_py_oserror("sicm_device_best");
  return sicm_py_device_new(dev);
}

/* Pages per NUMA node of [lo, hi): {node: pages}; pages never touched (or
 * not mapped) are not counted. */
static PyObject *py_pages(PyObject *m, PyObject *args) {
  (void)m;
  unsigned long long lo, hi;
  if (!PyArg_ParseTuple(args, "KK:pages", &lo, &hi))
    return NULL;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  PyObject *out = PyDict_New();
  if (!out || hi <= lo)
    return out;
  enum { BATCH = 1024 };
  void *addr[BATCH];
  int status[BATCH];
  long counts[1024] = {0};
  uintptr_t p = (uintptr_t)lo & ~(page - 1);
  int failed = 0;
  Py_BEGIN_ALLOW_THREADS;
  while (p < hi && !failed) {
    unsigned n = 0;
    for (; n < BATCH && p < hi; n++, p += page)
      addr[n] = (void *)p;
    if (move_pages(0, n, addr, NULL, status, 0) != 0) {
      failed = errno;
      break;
    }
    for (unsigned i = 0; i < n; i++)
      if (status[i] >= 0 && status[i] < 1024)
        counts[status[i]]++;
  }
  Py_END_ALLOW_THREADS;
  if (failed) {
    Py_DECREF(out);
    errno = failed;
    return sicm_py_oserror("move_pages");
  }
  for (int node = 0; node < 1024; node++) {
    if (!counts[node])
      continue;
    PyObject *k = PyLong_FromLong(node), *v = PyLong_FromLong(counts[node]);
    if (!k || !v || PyDict_SetItem(out, k, v) < 0) {
      Py_XDECREF(k), Py_XDECREF(v), Py_DECREF(out);
      return NULL;
    }
    Py_DECREF(k), Py_DECREF(v);
  }
  return out;
}

/* ---- the placer ---- */

/* autoplace_start(text): the placer, configured by a text in
 * SICM_AUTOPLACE's grammar (sicm/__init__.py writes it from the keyword
 * arguments), so that Python reads values as the variable does. */
static PyObject *py_autoplace_start(PyObject *m, PyObject *args) {
  (void)m;
  const char *text;
  if (!PyArg_ParseTuple(args, "s:autoplace_start", &text))
    return NULL;
  sicm_autoplace_config c;
  int rc = sicm_autoplace_config_parse(&c, text);
  if (rc != 0 && errno == EINVAL) {
    PyErr_SetString(PyExc_ValueError, sicm_error_detail());
    return NULL;
  }
  if (rc == 0)
    rc = sicm_autoplace_start(&c);
  if (rc != 0) {
    int err = errno;
    const char *detail = sicm_error_detail();
    PyObject *v = Py_BuildValue("(is)", err, *detail ? detail : strerror(err));
    if (v) {
      PyErr_SetObject(PyExc_OSError, v);
      Py_DECREF(v);
    }
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *py_autoplace_stop(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = sicm_autoplace_stop();
  Py_END_ALLOW_THREADS;
  if (rc != 0)
    return sicm_py_oserror("sicm_autoplace_stop");
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"devices", py_devices, METH_NOARGS, NULL},
    {"device", py_device, METH_VARARGS, NULL},
    {"best", py_best, METH_VARARGS, NULL},
    {"pages", py_pages, METH_VARARGS, NULL},
    {"autoplace_start", py_autoplace_start, METH_VARARGS, NULL},
    {"autoplace_stop", py_autoplace_stop, METH_NOARGS, NULL},
    {"handler_pop", sicm_py_exit, METH_VARARGS, NULL},
    {NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "sicm._sicm", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__sicm(void) {
  import_array();
  if (sicm_init() != 0)
    return sicm_py_oserror("sicm_init");
  if (PyType_Ready(&sicm_py_DeviceType) < 0 || PyType_Ready(&sicm_py_ArenaType) < 0 ||
      PyType_Ready(&sicm_py_SiteArenasType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  if (PyModule_AddObjectRef(m, "Device", (PyObject *)&sicm_py_DeviceType) < 0 ||
      PyModule_AddObjectRef(m, "Arena", (PyObject *)&sicm_py_ArenaType) < 0 ||
      PyModule_AddObjectRef(m, "SiteArenas", (PyObject *)&sicm_py_SiteArenasType) < 0 ||
      PyModule_AddIntConstant(m, "RANK_BANDWIDTH", SICM_RANK_BANDWIDTH) < 0 ||
      PyModule_AddIntConstant(m, "RANK_LATENCY", SICM_RANK_LATENCY) < 0 ||
      PyModule_AddIntConstant(m, "RANK_CAPACITY", SICM_RANK_CAPACITY) < 0 ||
      PyModule_AddIntConstant(m, "RANK_NEAREST", SICM_RANK_NEAREST) < 0 || sicm_py_handler_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
