/* SPDX-License-Identifier: BSD-3-Clause */
/* module.c: the module sicm._sicm — library start-up, its types'
 * registration, device discovery and ranking, page residency of any address range,
 * weighted interleave's weights, and the automatic placer's start and stop.  The Python layer (sicm/__init__.py)
 * gives these their documented names. */
#define SICM_PY_MODULE_C
#include "sicm_py.h"

#include <errno.h>
#include <numaif.h>
#include <string.h>
#include <unistd.h>

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

/* ---- weighted interleave ---- */

static PyObject *py_interleave_weights(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *devices;
  int from_bandwidth = 0;
  if (!PyArg_ParseTuple(args, "O|p:interleave_weights", &devices, &from_bandwidth))
    return NULL;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  unsigned weights[SICM_ARENA_DEVICES_MAX];
  unsigned n = sicm_py_devices_arg(devices, "devices", devs);
  if (n == 0)
    return NULL;
  int rc = from_bandwidth ? sicm_interleave_weights_from_bandwidth(devs, n, weights)
                          : sicm_interleave_weights(devs, n, weights);
  if (rc < 0)
    return sicm_py_oserror(from_bandwidth ? "sicm_interleave_weights_from_bandwidth"
                                          : "sicm_interleave_weights");
  PyObject *out = PyList_New(n);
  for (unsigned i = 0; out && i < n; i++) {
    PyObject *w = PyLong_FromUnsignedLong(weights[i]);
    if (!w) {
      Py_CLEAR(out);
      break;
    }
    PyList_SET_ITEM(out, i, w);
  }
  return out;
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
    {"interleave_weights", py_interleave_weights, METH_VARARGS, NULL},
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
