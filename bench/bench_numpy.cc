// SPDX-License-Identifier: BSD-3-Clause
// bench_numpy.cc: what numpy arrays cost in libsicm arenas.  An embedded
// Python interpreter (Debian's, with numpy) runs `for _ in range(100):
// np.empty(n)` (or np.zeros) per iteration — the allocation and free of 100
// arrays of n bytes, as a Python program does them — under numpy's own
// handler (the peer), inside `with sicm.Arena(dev)`, and inside
// `with sicm.site_arenas()` (per-line arenas above 64 KiB; below it the
// handler passes blocks to numpy's default: the cost of the handler outside
// any arena).  bench/numpy_ratios.py turns the medians into ratios to the
// peer.  PYTHONPATH must reach the built package (make bench-numpy).
#include <Python.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

namespace {

PyObject *loop_fn;    // loop(n, zeros): 100 arrays of n bytes made and freed
PyObject *contexts[3]; // None, an Arena, a SiteArenas

enum Mode { NUMPY = 0, ARENA = 1, SITES = 2 };

void die(const char *what) {
  PyErr_Print();
  std::fprintf(stderr, "bench_numpy: %s\n", what);
  std::exit(1);
}

void call(PyObject *obj, const char *method) {
  PyObject *r = PyObject_CallMethod(obj, method, method[2] == 'e' && method[3] == 'x' ? "OOO" : nullptr, Py_None,
                                    Py_None, Py_None);
  if (!r)
    die(method);
  Py_DECREF(r);
}

void BM_arrays(benchmark::State &state, Mode mode, bool zeros) {
  PyObject *args = Py_BuildValue("(nO)", (Py_ssize_t)state.range(0), zeros ? Py_True : Py_False);
  if (mode != NUMPY)
    call(contexts[mode], "__enter__");
  for (auto _ : state) {
    PyObject *r = PyObject_Call(loop_fn, args, nullptr);
    if (!r)
      die("loop");
    Py_DECREF(r);
  }
  if (mode != NUMPY)
    call(contexts[mode], "__exit__");
  Py_DECREF(args);
  state.SetItemsProcessed(state.iterations() * 100);
}

const char *setup = R"(
import numpy as np, sicm
def loop(n, zeros):
    f = np.zeros if zeros else np.empty
    for _ in range(100):
        f(n, dtype=np.uint8)
contexts = (None, sicm.Arena(sicm.best("nearest"), name="bench"), sicm.site_arenas(threshold=64 << 10))
)";

}  // namespace

int main(int argc, char **argv) {
  Py_Initialize();
  PyObject *globals = PyModule_GetDict(PyImport_AddModule("__main__"));
  PyObject *r = PyRun_String(setup, Py_file_input, globals, globals);
  if (!r)
    die("setup (is PYTHONPATH set to the built package?)");
  Py_DECREF(r);
  loop_fn = PyDict_GetItemString(globals, "loop");
  PyObject *ctx = PyDict_GetItemString(globals, "contexts");
  for (int i = 0; i < 3; i++)
    contexts[i] = PyTuple_GetItem(ctx, i);
  const char *modes[] = {"numpy", "arena", "sites"};
  for (int zeros = 0; zeros < 2; zeros++)
    for (int m = 0; m < 3; m++) {
      std::string name = std::string("BM_") + (zeros ? "zeros_" : "empty_") + modes[m];
      benchmark::RegisterBenchmark(name.c_str(), BM_arrays, Mode(m), zeros != 0)
          ->RangeMultiplier(16)
          ->Range(64, 64 << 20);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
