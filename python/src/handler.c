/* SPDX-License-Identifier: BSD-3-Clause */
/* handler.c: numpy's allocator handlers (NEP 49) as the Arena and
 * SiteArenas types install them — a capsule that keeps its allocator alive
 * and counted, the per-context stack of handlers that `with` blocks push
 * and pop, and __enter__/__exit__ over it. */
#include "sicm_py.h"

#include <stdio.h>

/* ---- the handler stack: one per context (thread, asyncio task) ---- */

static PyObject *saved_handlers; /* ContextVar: tuple of the handlers replaced */

int sicm_py_handler_init(PyObject *module) {
  (void)module;
  saved_handlers = PyContextVar_New("sicm._saved_handlers", NULL);
  return saved_handlers ? 0 : -1;
}

static PyObject *saved_stack(void) {
  PyObject *stack;
  if (PyContextVar_Get(saved_handlers, NULL, &stack) < 0)
    return NULL;
  return stack ? stack : PyTuple_New(0);
}

static int saved_stack_set(PyObject *stack) {
  PyObject *token = PyContextVar_Set(saved_handlers, stack);
  Py_XDECREF(token);
  return token ? 0 : -1;
}

int sicm_py_handler_push(PyObject *capsule) {
  PyObject *stack = saved_stack();
  if (!stack)
    return -1;
  PyObject *old = PyDataMem_SetHandler(capsule);
  if (!old) {
    Py_DECREF(stack);
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(stack);
  PyObject *grown = PyTuple_New(n + 1);
  int rc = -1;
  if (grown) {
    for (Py_ssize_t i = 0; i < n; i++)
      PyTuple_SET_ITEM(grown, i, Py_NewRef(PyTuple_GET_ITEM(stack, i)));
    PyTuple_SET_ITEM(grown, n, Py_NewRef(old));
    rc = saved_stack_set(grown);
    Py_DECREF(grown);
  }
  if (rc != 0)
    Py_XDECREF(PyDataMem_SetHandler(old)); /* undo */
  Py_DECREF(old);
  Py_DECREF(stack);
  return rc;
}

int sicm_py_handler_pop(void) {
  PyObject *stack = saved_stack();
  if (!stack)
    return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(stack);
  if (n == 0) {
    Py_DECREF(stack);
    PyErr_SetString(PyExc_RuntimeError, "no sicm allocator to leave in this context "
                                        "(a `with` block entered in another thread or task?)");
    return -1;
  }
  PyObject *ours = PyDataMem_SetHandler(PyTuple_GET_ITEM(stack, n - 1));
  Py_XDECREF(ours);
  PyObject *shrunk = ours ? PyTuple_GetSlice(stack, 0, n - 1) : NULL;
  int rc = shrunk ? saved_stack_set(shrunk) : -1;
  Py_XDECREF(shrunk);
  Py_DECREF(stack);
  return rc;
}

/* A handler capsule: numpy's handler, then what its destructor lets go. */
typedef struct {
  PyDataMem_Handler handler; /* first: the capsule's pointer is to it */
  PyObject *owner;           /* the allocator's ctx, referenced */
  atomic_long *handlers;     /* the owner's count of its capsules, or NULL */
} handler_capsule;

static void handler_capsule_free(PyObject *capsule) {
  handler_capsule *c = PyCapsule_GetPointer(capsule, "mem_handler");
  if (c->handlers)
    atomic_fetch_sub(c->handlers, 1);
  Py_DECREF(c->owner);
  PyMem_RawFree(c);
}

PyObject *sicm_py_capsule(const char *name, PyDataMemAllocator allocator, atomic_long *handlers) {
  handler_capsule *c = PyMem_RawCalloc(1, sizeof *c);
  if (!c)
    return PyErr_NoMemory();
  snprintf(c->handler.name, sizeof c->handler.name, "%s", name);
  c->handler.version = 1;
  c->handler.allocator = allocator;
  PyObject *capsule = PyCapsule_New(c, "mem_handler", handler_capsule_free);
  if (!capsule) {
    PyMem_RawFree(c);
    return NULL;
  }
  c->owner = Py_NewRef((PyObject *)allocator.ctx);
  c->handlers = handlers;
  if (handlers)
    atomic_fetch_add(handlers, 1);
  return capsule;
}

PyObject *sicm_py_enter(PyObject *self, PyObject *capsule) {
  if (!capsule)
    return NULL;
  int rc = sicm_py_handler_push(capsule);
  Py_DECREF(capsule);
  return rc == 0 ? Py_NewRef(self) : NULL;
}

PyObject *sicm_py_exit(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  if (sicm_py_handler_pop() != 0)
    return NULL;
  Py_RETURN_FALSE;
}
