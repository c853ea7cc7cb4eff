/* SPDX-License-Identifier: BSD-3-Clause */
/* device.c: the Device type — a memory device of sicm_devices() as a
 * Python object — and the errno-to-OSError rule every file uses. */
#include "sicm_py.h"

#include <errno.h>
#include <string.h>

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

unsigned sicm_py_devices_arg(PyObject *obj, const char *what, sicm_device **out) {
  if (PyObject_TypeCheck(obj, &sicm_py_DeviceType)) {
    out[0] = ((DeviceObject *)obj)->dev;
    return 1;
  }
  PyObject *seq = PySequence_Check(obj) ? PySequence_Fast(obj, what) : NULL;
  if (!seq) {
    PyErr_Format(PyExc_TypeError, "%s must be a sicm.Device or a sequence of them, not %.100s", what,
                 Py_TYPE(obj)->tp_name);
    return 0;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n < 1 || n > SICM_ARENA_DEVICES_MAX) {
    PyErr_Format(PyExc_ValueError, "%s: 1 to %d devices, not %zd", what, SICM_ARENA_DEVICES_MAX, n);
    Py_DECREF(seq);
    return 0;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    out[i] = sicm_py_device_arg(PySequence_Fast_GET_ITEM(seq, i), what);
    if (!out[i]) {
      Py_DECREF(seq);
      return 0;
    }
  }
  Py_DECREF(seq);
  return (unsigned)n;
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
