/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_py.h: what the files of the extension module sicm._sicm share: the
 * Device, Arena and SiteArenas types, the NEP 49 handler capsules, and the
 * errno-to-exception rule. */
#ifndef SICM_PY_H
#define SICM_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <sicm.h>
#include <sicm_autoplace.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL sicm_py_ARRAY_API
#ifndef SICM_PY_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

/* A device of sicm_devices(): owned by the library, valid for the life of
 * the process (the module never calls sicm_fini()). */
typedef struct {
  PyObject_HEAD
  sicm_device *dev;
} DeviceObject;

/* An arena of libsicm.  `handlers` counts the NEP 49 handler capsules that
 * name it — one per `with` block entered, each kept alive by the contexts
 * that hold it and by every array it allocated — so that the arena is never
 * destroyed while an array of it lives.  `owner` is the SiteArenas object of
 * a per-line arena (which closes it), or NULL. */
typedef struct {
  PyObject_HEAD
  sicm_arena arena; /* NULL once closed */
  atomic_long live;     /* blocks allocated through its handlers, not yet freed */
  atomic_long handlers; /* live handler capsules naming it */
  PyObject *owner;
  PyObject *weakrefs;
  unsigned placement; /* the placement flags it was made with, which moves keep */
} ArenaObject;

extern PyTypeObject sicm_py_DeviceType;
extern PyTypeObject sicm_py_ArenaType;
extern PyTypeObject sicm_py_SiteArenasType;

/* ---- device.c ---- */
/* Sets OSError(errno, "<what>: <strerror>") and returns NULL. */
PyObject *sicm_py_oserror(const char *what);
/* The device object of `dev` (a new reference). */
PyObject *sicm_py_device_new(sicm_device *dev);
/* The device behind a Device argument, or NULL with TypeError set. */
sicm_device *sicm_py_device_arg(PyObject *obj, const char *what);
/* The devices of a Device or a sequence of them, into out (room for
 * SICM_ARENA_DEVICES_MAX); their count, or 0 with TypeError or ValueError set. */
unsigned sicm_py_devices_arg(PyObject *obj, const char *what, sicm_device **out);
/* ---- arena.c ---- */
/* A new arena object on devs with the placement flags (reference), or
 * NULL with the error set. */
ArenaObject *sicm_py_arena_new(sicm_device *const *devs, unsigned ndevs, unsigned placement,
                               size_t maxsize, const char *name);

/* ---- handler.c ---- */
/* NEP 49: install `capsule` as numpy's handler of the current context,
 * remembering the one it replaces on this context's stack; restore it. */
int sicm_py_handler_push(PyObject *capsule);
int sicm_py_handler_pop(void);
int sicm_py_handler_init(PyObject *module);
/* __enter__ with a new capsule (stolen; NULL: its error), and __exit__. */
PyObject *sicm_py_enter(PyObject *self, PyObject *capsule);
PyObject *sicm_py_exit(PyObject *self, PyObject *args);

/* A NEP 49 handler capsule named `name` over `allocator`: it holds a
 * reference to allocator.ctx, and counts itself in *handlers (NULL: no
 * count) while it lives. */
PyObject *sicm_py_capsule(const char *name, PyDataMemAllocator allocator, atomic_long *handlers);
/* A handler capsule over an arena object (arena.c) / a SiteArenas object
 * (sites.c). */
PyObject *sicm_py_arena_capsule(ArenaObject *a);
PyObject *sicm_py_sites_capsule(PyObject *sites);

#endif
