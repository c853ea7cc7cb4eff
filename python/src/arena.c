/* SPDX-License-Identifier: BSD-3-Clause */
/* arena.c: the Arena type — a libsicm arena as a Python object and a
 * context manager that makes it the allocator of numpy array data (NEP 49)
 * in the current context, through a handler of handler.c. */
#include "sicm_py.h"

#include <errno.h>
#include <numa.h>
#include <string.h>

/* ---- the handler of one arena ---- */

static void *arena_malloc(void *ctx, size_t size) {
  ArenaObject *a = ctx;
  void *p = sicm_arena_alloc(a->arena, size ? size : 1);
  if (p)
    atomic_fetch_add_explicit(&a->live, 1, memory_order_relaxed);
  return p;
}

static void *arena_calloc(void *ctx, size_t nelem, size_t elsize) {
  ArenaObject *a = ctx;
  void *p = nelem && elsize ? sicm_arena_calloc(a->arena, nelem, elsize) : sicm_arena_calloc(a->arena, 1, 1);
  if (p)
    atomic_fetch_add_explicit(&a->live, 1, memory_order_relaxed);
  return p;
}

static void *arena_realloc(void *ctx, void *ptr, size_t size) {
  if (!ptr)
    return arena_malloc(ctx, size);
  return sicm_realloc(ptr, size ? size : 1); /* the block stays in its arena */
}

static void arena_free(void *ctx, void *ptr, size_t size) {
  (void)size;
  ArenaObject *a = ctx;
  if (!ptr)
    return;
  sicm_free(ptr);
  atomic_fetch_sub_explicit(&a->live, 1, memory_order_relaxed);
}

PyObject *sicm_py_arena_capsule(ArenaObject *a) {
  char arena_name[SICM_ARENA_NAME_MAX] = "", name[sizeof "sicm_arena:" + SICM_ARENA_NAME_MAX];
  sicm_arena_get_name(a->arena, arena_name, sizeof arena_name);
  snprintf(name, sizeof name, "sicm_arena:%s", arena_name);
  return sicm_py_capsule(name, (PyDataMemAllocator){a, arena_malloc, arena_calloc, arena_realloc, arena_free},
                         &a->handlers);
}

/* ---- the Arena type ---- */

static int arena_open(ArenaObject *self) {
  if (self->arena)
    return 0;
  errno = ESTALE;
  PyErr_SetString(PyExc_ValueError, "the arena is closed");
  return -1;
}

ArenaObject *sicm_py_arena_new(sicm_device *const *devs, unsigned ndevs, unsigned placement,
                               size_t maxsize, const char *name) {
  ArenaObject *a = (ArenaObject *)sicm_py_ArenaType.tp_alloc(&sicm_py_ArenaType, 0);
  if (!a)
    return NULL;
  a->placement = placement;
  a->arena = sicm_arena_create_devices(maxsize, devs, ndevs, placement);
  if (!a->arena) {
    Py_DECREF(a);
    return (ArenaObject *)sicm_py_oserror("sicm_arena_create_devices");
  }
  if (name && sicm_arena_set_name(a->arena, name) != 0) {
    Py_DECREF(a);
    PyErr_Format(PyExc_ValueError, "arena name '%s': printable ASCII without '\"' or '\\', at most %d characters",
                 name, SICM_ARENA_NAME_MAX - 1);
    return NULL;
  }
  return a;
}

/* The placement flags a placement name stands for; 0 with ValueError set
 * for an unknown name ("bind" is 0 too, and sets nothing). */
static int placement_arg(const char *text, unsigned *flags) {
  static const struct {
    const char *name;
    unsigned flags;
  } names[] = {{"bind", 0},
               {"interleave", SICM_ARENA_INTERLEAVE},
               {"weighted", SICM_ARENA_WEIGHTED},
               {"preferred", SICM_ARENA_PREFERRED}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(text, names[i].name) == 0) {
      *flags = names[i].flags;
      return 0;
    }
  PyErr_Format(PyExc_ValueError, "placement must be 'bind', 'interleave', 'weighted' or 'preferred', not '%s'",
               text);
  return -1;
}

static PyObject *arena_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)type;
  static char *names[] = {"device", "maxsize", "name", "placement", NULL};
  PyObject *device;
  Py_ssize_t maxsize = 0;
  const char *name = NULL, *placement = "bind";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|nzs:Arena", names, &device, &maxsize, &name, &placement))
    return NULL;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  unsigned ndevs = sicm_py_devices_arg(device, "device", devs), flags;
  if (ndevs == 0 || placement_arg(placement, &flags) != 0)
    return NULL;
  if (maxsize < 0) {
    PyErr_SetString(PyExc_ValueError, "maxsize must not be negative (0: unlimited)");
    return NULL;
  }
  return (PyObject *)sicm_py_arena_new(devs, ndevs, flags, (size_t)maxsize, name);
}

static void arena_dealloc(ArenaObject *self) {
  if (self->weakrefs)
    PyObject_ClearWeakRefs((PyObject *)self);
  /* At interpreter exit an arena is left to the process's exit, as a C
   * program leaves it: libsicm's exit report (SICM_STATS) then still shows
   * it, with its name and figures. */
  if (self->arena && !_Py_IsFinalizing())
    sicm_arena_destroy(self->arena);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *arena_close(ArenaObject *self, PyObject *unused) {
  (void)unused;
  if (!self->arena)
    Py_RETURN_NONE;
  long handlers = atomic_load(&self->handlers), live = atomic_load(&self->live);
  if (self->owner || handlers) {
    PyObject *msg = self->owner ? PyUnicode_FromString("a per-line arena is closed with its SiteArenas")
                                : PyUnicode_FromFormat("the arena still holds %ld arrays, or a context still "
                                                       "allocates from it: close it once they are gone",
                                                       live);
    PyObject *v = msg ? Py_BuildValue("(iN)", EBUSY, msg) : NULL;
    if (v) {
      PyErr_SetObject(PyExc_OSError, v);
      Py_DECREF(v);
    }
    return NULL;
  }
  if (sicm_arena_destroy(self->arena) != 0)
    return sicm_py_oserror("sicm_arena_destroy");
  self->arena = NULL;
  Py_RETURN_NONE;
}

static PyObject *arena_move(ArenaObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"device", "placement", NULL};
  PyObject *device;
  const char *placement = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z:move", names, &device, &placement))
    return NULL;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  unsigned ndevs = sicm_py_devices_arg(device, "device", devs), flags = self->placement;
  if (ndevs == 0 || (placement && placement_arg(placement, &flags) != 0) || arena_open(self) != 0)
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = sicm_arena_set_devices(self->arena, devs, ndevs, flags);
  Py_END_ALLOW_THREADS;
  if (rc != 0)
    return sicm_py_oserror("sicm_arena_set_devices");
  self->placement = flags;
  Py_RETURN_NONE;
}

static PyObject *arena_residency(ArenaObject *self, PyObject *unused) {
  (void)unused;
  if (arena_open(self) != 0)
    return NULL;
  size_t nnodes = (size_t)numa_max_node() + 1;
  size_t *bytes = PyMem_Calloc(nnodes, sizeof *bytes);
  if (!bytes)
    return PyErr_NoMemory();
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = sicm_arena_residency(self->arena, bytes, nnodes);
  Py_END_ALLOW_THREADS;
  PyObject *out = rc == 0 ? PyDict_New() : sicm_py_oserror("sicm_arena_residency");
  for (size_t n = 0; out && n < nnodes; n++) {
    if (!bytes[n])
      continue;
    PyObject *k = PyLong_FromSize_t(n), *v = PyLong_FromSize_t(bytes[n]);
    if (!k || !v || PyDict_SetItem(out, k, v) < 0)
      Py_CLEAR(out);
    Py_XDECREF(k), Py_XDECREF(v);
  }
  PyMem_Free(bytes);
  return out;
}

static PyObject *arena_stats(ArenaObject *self, PyObject *unused) {
  (void)unused;
  if (arena_open(self) != 0)
    return NULL;
  sicm_arena_stats s;
  sicm_arena_rates r;
  if (sicm_arena_get_stats(self->arena, &s) != 0)
    return sicm_py_oserror("sicm_arena_get_stats");
  if (sicm_arena_get_rates(self->arena, &r) != 0)
    return sicm_py_oserror("sicm_arena_get_rates");
  return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:l,s:K,s:d,s:d,s:K,s:K,s:O}", "allocated", (Py_ssize_t)s.allocated,
                       "active", (Py_ssize_t)s.active, "resident", (Py_ssize_t)s.resident, "mapped",
                       (Py_ssize_t)s.mapped, "held", (Py_ssize_t)s.held, "maxsize", (Py_ssize_t)s.maxsize,
                       "arrays", atomic_load(&self->live), "intervals", (unsigned long long)r.intervals,
                       "referenced_per_second", r.referenced_per_second, "density", r.density, "moves_in",
                       (unsigned long long)r.moves_in, "moves_out", (unsigned long long)r.moves_out, "on_fast",
                       r.on_fast ? Py_True : Py_False);
}

static PyObject *arena_enter(ArenaObject *self, PyObject *unused) {
  (void)unused;
  if (arena_open(self) != 0)
    return NULL;
  return sicm_py_enter((PyObject *)self, sicm_py_arena_capsule(self));
}

static PyObject *arena_get_name(ArenaObject *self, void *unused) {
  (void)unused;
  char name[SICM_ARENA_NAME_MAX] = "";
  if (self->arena && sicm_arena_get_name(self->arena, name, sizeof name) < 0)
    return sicm_py_oserror("sicm_arena_get_name");
  return PyUnicode_FromString(name);
}

static PyObject *arena_get_device(ArenaObject *self, void *unused) {
  (void)unused;
  if (arena_open(self) != 0)
    return NULL;
  sicm_device *dev = sicm_arena_get_device(self->arena);
  return dev ? sicm_py_device_new(dev) : sicm_py_oserror("sicm_arena_get_device");
}

static PyObject *arena_get_closed(ArenaObject *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(self->arena == NULL);
}

static PyObject *arena_get_arrays(ArenaObject *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(atomic_load(&self->live));
}

static PyObject *arena_repr(ArenaObject *self) {
  PyObject *name = arena_get_name(self, NULL);
  PyObject *r = name ? PyUnicode_FromFormat("<sicm.Arena %R%s>", name, self->arena ? "" : " closed") : NULL;
  Py_XDECREF(name);
  return r;
}

static PyMethodDef arena_methods[] = {
    {"close", (PyCFunction)arena_close, METH_NOARGS,
     "close()\n\nDestroy the arena now.  OSError EBUSY while an array of it lives or a context still "
     "allocates from it; closing a closed arena does nothing.  Without close(), the arena is destroyed "
     "when the last reference to it goes (arrays hold one)."},
    {"move", (PyCFunction)(void (*)(void))arena_move, METH_VARARGS | METH_KEYWORDS,
     "move(device, placement=None)\n\nMove every page of the arena to `device` (a Device, or a "
     "sequence of them) and place it there as `placement` says (None: as the arena was placed so far; "
     "see Arena); every array stays where it is in the address space.  OSError with the library's errno "
     "on failure (the arena stays where it was)."},
    {"residency", (PyCFunction)arena_residency, METH_NOARGS,
     "residency() -> {node: bytes}\n\nBytes of the arena's resident pages per NUMA node."},
    {"stats", (PyCFunction)arena_stats, METH_NOARGS,
     "stats() -> dict\n\nThe arena's statistics (bytes allocated, active, resident, mapped, held; "
     "maxsize; live arrays) and what the placer measured of it."},
    {"__enter__", (PyCFunction)arena_enter, METH_NOARGS, NULL},
    {"__exit__", sicm_py_exit, METH_VARARGS, NULL},
    {NULL}};

static PyGetSetDef arena_getset[] = {
    {"name", (getter)arena_get_name, NULL, "the arena's name ('' when it has none)", NULL},
    {"device", (getter)arena_get_device, NULL, "the device the arena is bound to", NULL},
    {"closed", (getter)arena_get_closed, NULL, "True once closed", NULL},
    {"arrays", (getter)arena_get_arrays, NULL, "blocks allocated through the arena's contexts, not yet freed",
     NULL},
    {NULL}};

PyTypeObject sicm_py_ArenaType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sicm.Arena",
    .tp_basicsize = sizeof(ArenaObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Arena(device, maxsize=0, name=None, placement='bind')\n\n"
              "An arena of libsicm bound to `device` (strictly: every page on it), or to a sequence "
              "of devices placed as `placement` says: 'bind' (every page on one of them), "
              "'interleave' (pages spread evenly), 'weighted' (spread in proportion to the "
              "system's weights, interleave_weights(); evenly on Linux before 6.9) or "
              "'preferred' (on them while they have room), holding at most "
              "`maxsize` bytes (0: no bound).  In `with arena:`, every numpy array created in the "
              "current context (thread, asyncio task) puts its data in the arena; an array keeps "
              "the arena alive, and frees its data there whenever it dies.",
    .tp_new = arena_tp_new,
    .tp_dealloc = (destructor)arena_dealloc,
    .tp_methods = arena_methods,
    .tp_getset = arena_getset,
    .tp_repr = (reprfunc)arena_repr,
    .tp_weaklistoffset = offsetof(ArenaObject, weakrefs),
};
