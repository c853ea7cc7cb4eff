/* SPDX-License-Identifier: BSD-3-Clause */
/* sites.c: the SiteArenas type — a NEP 49 handler that puts every array of
 * at least `threshold` bytes in one arena per Python source line that made
 * it (the innermost frame outside numpy and sicm), so that the placer moves
 * one line's arrays without the others'.  Smaller arrays, and any made
 * without the GIL, go to numpy's default handler. */
#include "sicm_py.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* Entries keyed by (code object, key): the arena of an instruction
 * (KEY_INSTR: what a lookup finds without computing the line, which costs
 * a walk of the code's line table), and whether the code's frames are
 * skipped (numpy's own Python code, or a `skip` prefix) or kept, so that a
 * file name is compared once.  The table holds a reference to each code
 * object, so an address is never reused by another code object while it
 * is a key.  The arena of a line is found by (file name, line) in a dict:
 * every code object of that line shares it. */
#define KEY_INSTR(offset) (2 * (long long)(offset))
#define KEY_SKIPPED LLONG_MIN
#define KEY_KEPT (LLONG_MIN + 1)
typedef struct {
  PyObject *code;
  long long key;
  ArenaObject *arena;
} site_slot;

typedef struct {
  PyObject_HEAD
  sicm_device *dev;
  size_t threshold;
  PyObject *skip;     /* tuple of path prefixes */
  site_slot *slots;   /* open addressing, capacity a power of two */
  size_t cap, used;
  PyObject *arenas;   /* list: the per-line arenas, oldest first */
  PyObject *lines;    /* dict: (file name, line) -> its arena */
  atomic_long unplaced; /* large blocks no arena could take (given to numpy's default) */
} SitesObject;

static PyDataMemAllocator numpy_default; /* numpy's own handler: small blocks */

static size_t slot_hash(PyObject *code, long long key, size_t cap) {
  uint64_t h = ((uint64_t)(uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull ^ (uint64_t)key * 0xC2B2AE3D27D4EB4Full;
  return (size_t)(h >> 17) & (cap - 1);
}

static site_slot *slot_find(SitesObject *s, PyObject *code, long long key) {
  for (size_t i = slot_hash(code, key, s->cap);; i = (i + 1) & (s->cap - 1)) {
    site_slot *e = &s->slots[i];
    if (!e->code || (e->code == code && e->key == key))
      return e;
  }
}

static int slots_grow(SitesObject *s) {
  size_t cap = s->cap ? s->cap * 2 : 64;
  site_slot *old = s->slots, *slots = PyMem_Calloc(cap, sizeof *slots);
  if (!slots)
    return -1;
  size_t old_cap = s->cap;
  s->slots = slots, s->cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].code)
      *slot_find(s, old[i].code, old[i].key) = old[i];
  PyMem_Free(old);
  return 0;
}

/* Adds an entry (the table takes a reference to code and arena). */
static int slot_add(SitesObject *s, PyObject *code, long long key, ArenaObject *arena) {
  if ((s->used + 1) * 2 > s->cap && slots_grow(s) != 0)
    return -1;
  site_slot *e = slot_find(s, code, key);
  if (e->code)
    return 0;
  *e = (site_slot){Py_NewRef(code), key, arena};
  Py_XINCREF(arena);
  s->used++;
  return 0;
}

static int code_skipped(SitesObject *s, PyCodeObject *code) {
  if (slot_find(s, (PyObject *)code, KEY_KEPT)->code)
    return 0;
  if (slot_find(s, (PyObject *)code, KEY_SKIPPED)->code)
    return 1;
  int skipped = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s->skip) && !skipped; i++)
    skipped = PyUnicode_Tailmatch(code->co_filename, PyTuple_GET_ITEM(s->skip, i), 0, PY_SSIZE_T_MAX, -1) == 1;
  slot_add(s, (PyObject *)code, skipped ? KEY_SKIPPED : KEY_KEPT, NULL);
  return skipped;
}

/* "site:<file>:<line>", the file name cut from the left to fit. */
static void site_name(PyCodeObject *code, int line, char *out, size_t size) {
  const char *path = PyUnicode_AsUTF8(code->co_filename);
  if (!path) {
    PyErr_Clear();
    path = "?";
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char tail[16];
  int tail_len = snprintf(tail, sizeof tail, ":%d", line);
  size_t room = size - 1 - strlen("site:") - (size_t)tail_len, len = strlen(base);
  if (len > room)
    base += len - room;
  int n = snprintf(out, size, "site:%s%s", base, tail);
  for (int i = 0; i < n && i < (int)size; i++) /* the library's names are printable ASCII */
    if (out[i] < 0x20 || out[i] > 0x7e || out[i] == '"' || out[i] == '\\')
      out[i] = '?';
}

static ArenaObject *site_make(SitesObject *s, PyCodeObject *code, int line) {
  char name[SICM_ARENA_NAME_MAX];
  site_name(code, line, name, sizeof name);
  ArenaObject *a = sicm_py_arena_new(&s->dev, 1, 0, 0, name);
  if (!a)
    return NULL;
  a->owner = (PyObject *)s; /* borrowed: the SiteArenas outlives its arenas' use */
  /* Making the object may have run the garbage collector and, through a
   * finalizer, this handler: look again before adding. */
  PyObject *key = Py_BuildValue("(Oi)", code->co_filename, line);
  ArenaObject *made = key ? (ArenaObject *)PyDict_GetItemWithError(s->lines, key) : NULL;
  if (made != NULL || key == NULL) {
    a->owner = NULL;
    Py_DECREF(a);
    Py_XDECREF(key);
    return made;
  }
  if (PyList_Append(s->arenas, (PyObject *)a) < 0 || PyDict_SetItem(s->lines, key, (PyObject *)a) < 0) {
    Py_DECREF(key);
    Py_DECREF(a);
    return NULL;
  }
  Py_DECREF(key);
  Py_DECREF(a); /* the list and the dict hold it */
  return a;
}

/* The arena of a source line made already, or NULL. */
static ArenaObject *site_line(SitesObject *s, PyCodeObject *code, int line) {
  PyObject *key = Py_BuildValue("(Oi)", code->co_filename, line);
  ArenaObject *a = key ? (ArenaObject *)PyDict_GetItemWithError(s->lines, key) : NULL;
  Py_XDECREF(key);
  return a;
}

/* Code compiled from a string (eval, exec, compile: "<string>" and the
 * like) is made anew at each call: caching by code object would keep each
 * one alive, so its lines are found by file name and line alone. */
static int code_transient(PyCodeObject *code) {
  return PyUnicode_GET_LENGTH(code->co_filename) > 0 && PyUnicode_READ_CHAR(code->co_filename, 0) == '<';
}

/* The arena of the line that is allocating; NULL: none (no Python frame
 * outside the skipped files, or an arena could not be made).  The common
 * case is one lookup: the innermost frame's instruction, seen before. */
static ArenaObject *site_arena(SitesObject *s) {
  ArenaObject *arena = NULL;
  PyFrameObject *f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f) {
    PyCodeObject *code = PyFrame_GetCode(f);
    long long instr = KEY_INSTR(PyFrame_GetLasti(f));
    int transient = code_transient(code);
    site_slot *e = transient ? NULL : slot_find(s, (PyObject *)code, instr);
    if (e != NULL && e->code) {
      arena = e->arena;
      Py_DECREF(code);
      break;
    }
    if (transient || !code_skipped(s, code)) {
      int line = PyFrame_GetLineNumber(f);
      /* An arena that cannot be made: the block goes elsewhere. */
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      arena = site_line(s, code, line);
      if (arena == NULL)
        arena = site_make(s, code, line);
      PyErr_Clear();
      PyErr_Restore(type, value, tb);
      if (arena && !transient)
        slot_add(s, (PyObject *)code, instr, arena);
      Py_DECREF(code);
      break;
    }
    Py_DECREF(code);
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return arena;
}

static void *sites_malloc(void *ctx, size_t size) {
  SitesObject *s = ctx;
  if (size >= s->threshold && PyGILState_Check()) {
    ArenaObject *a = site_arena(s);
    if (a)
      return sicm_arena_alloc(a->arena, size);
    atomic_fetch_add_explicit(&s->unplaced, 1, memory_order_relaxed);
  }
  return numpy_default.malloc(numpy_default.ctx, size);
}

static void *sites_calloc(void *ctx, size_t nelem, size_t elsize) {
  SitesObject *s = ctx;
  size_t size;
  if (!__builtin_mul_overflow(nelem, elsize, &size) && size >= s->threshold && PyGILState_Check()) {
    ArenaObject *a = site_arena(s);
    if (a)
      return sicm_arena_calloc(a->arena, nelem, elsize);
    atomic_fetch_add_explicit(&s->unplaced, 1, memory_order_relaxed);
  }
  return numpy_default.calloc(numpy_default.ctx, nelem, elsize);
}

/* A block stays with the allocator that made it. */
static void *sites_realloc(void *ctx, void *ptr, size_t size) {
  if (!ptr)
    return sites_malloc(ctx, size);
  if (sicm_arena_lookup(ptr))
    return sicm_realloc(ptr, size ? size : 1);
  return numpy_default.realloc(numpy_default.ctx, ptr, size);
}

static void sites_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  if (ptr && sicm_arena_lookup(ptr))
    sicm_free(ptr);
  else
    numpy_default.free(numpy_default.ctx, ptr, size);
}

PyObject *sicm_py_sites_capsule(PyObject *sites) {
  SitesObject *s = (SitesObject *)sites;
  if (!numpy_default.malloc) {
    PyDataMem_Handler *def = PyCapsule_GetPointer(PyDataMem_DefaultHandler, "mem_handler");
    if (!def)
      return NULL;
    numpy_default = def->allocator;
  }
  return sicm_py_capsule("sicm_sites", (PyDataMemAllocator){s, sites_malloc, sites_calloc, sites_realloc, sites_free},
                         NULL);
}

/* ---- the SiteArenas type ---- */

static PyObject *sites_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *names[] = {"device", "threshold", "skip", NULL};
  PyObject *device, *skip;
  Py_ssize_t threshold;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OnO!:SiteArenas", names, &device, &threshold, &PyTuple_Type, &skip))
    return NULL;
  sicm_device *dev = sicm_py_device_arg(device, "device");
  if (!dev)
    return NULL;
  if (threshold < 1) {
    PyErr_SetString(PyExc_ValueError, "threshold must be at least 1 byte");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(skip); i++)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(skip, i))) {
      PyErr_SetString(PyExc_TypeError, "skip must hold path prefixes (str)");
      return NULL;
    }
  SitesObject *s = (SitesObject *)type->tp_alloc(type, 0);
  if (!s)
    return NULL;
  s->dev = dev;
  s->threshold = (size_t)threshold;
  s->skip = Py_NewRef(skip);
  s->arenas = PyList_New(0);
  s->lines = PyDict_New();
  if (!s->arenas || !s->lines || slots_grow(s) != 0) {
    Py_DECREF(s);
    return NULL;
  }
  return (PyObject *)s;
}

static void sites_dealloc(SitesObject *s) {
  for (size_t i = 0; i < s->cap; i++) {
    Py_XDECREF(s->slots[i].code);
    Py_XDECREF(s->slots[i].arena);
  }
  PyMem_Free(s->slots);
  if (s->arenas)
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(s->arenas); i++)
      ((ArenaObject *)PyList_GET_ITEM(s->arenas, i))->owner = NULL;
  Py_XDECREF(s->arenas);
  Py_XDECREF(s->lines);
  Py_XDECREF(s->skip);
  Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *sites_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  return sicm_py_enter(self, sicm_py_sites_capsule(self));
}

static PyObject *sites_get_arenas(SitesObject *s, void *unused) {
  (void)unused;
  return PyList_GetSlice(s->arenas, 0, PY_SSIZE_T_MAX);
}

static PyObject *sites_get_threshold(SitesObject *s, void *unused) {
  (void)unused;
  return PyLong_FromSize_t(s->threshold);
}

static PyObject *sites_get_unplaced(SitesObject *s, void *unused) {
  (void)unused;
  return PyLong_FromLong(atomic_load(&s->unplaced));
}

static PyObject *sites_get_device(SitesObject *s, void *unused) {
  (void)unused;
  return sicm_py_device_new(s->dev);
}

static PyMethodDef sites_methods[] = {{"__enter__", sites_enter, METH_NOARGS, NULL},
                                      {"__exit__", sicm_py_exit, METH_VARARGS, NULL},
                                      {NULL}};

static PyGetSetDef sites_getset[] = {
    {"arenas", (getter)sites_get_arenas, NULL, "the per-line arenas made so far, oldest first", NULL},
    {"threshold", (getter)sites_get_threshold, NULL, "smallest array (bytes) put in a per-line arena", NULL},
    {"unplaced", (getter)sites_get_unplaced, NULL,
     "arrays above the threshold that no per-line arena could take (numpy's default allocator got them)", NULL},
    {"device", (getter)sites_get_device, NULL, "the device new per-line arenas are bound to", NULL},
    {NULL}};

PyTypeObject sicm_py_SiteArenasType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sicm.SiteArenas",
    .tp_basicsize = sizeof(SitesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Per-line arenas (made by sicm.site_arenas()).",
    .tp_new = sites_tp_new,
    .tp_dealloc = (destructor)sites_dealloc,
    .tp_methods = sites_methods,
    .tp_getset = sites_getset,
};
