/* SPDX-License-Identifier: BSD-3-Clause */
// stream.cpp: a STREAM-triad kernel whose arrays come from an OpenMP-style
// allocator: `--hot=hbm` puts the hot arrays in high-bandwidth memory
// (falling back to DRAM on machines without it), `--hot=dram` in default
// memory; without a flag it runs both, one after the other.  Prints where
// the arrays are, and exits 1 if a page is not where the choice says.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sicm.hpp"

namespace {

using hot_vector = std::vector<double, sicm::space_allocator<double>>;

// The node of every page of v, or -1 if they differ.
int node_of(const hot_vector &v) {
  const char *p = reinterpret_cast<const char *>(v.data());
  int node = sicm_node_of_ptr(p);
  for (size_t off = 0; off < v.size() * sizeof(double); off += 4096)
    if (sicm_node_of_ptr(p + off) != node) return -1;
  return node;
}

// Runs the triad with the hot arrays in `space`; 0 if they were where expected.
int run(const char *name, sicm_memspace space) {
  sicm::allocator alloc(space, {{SICM_ATK_ALIGNMENT, 64},
                                {SICM_ATK_FALLBACK, SICM_ATV_DEFAULT_MEM_FB}});
  sicm_device *expected[1] = {nullptr};
  if (sicm_memspace_devices(space, SICM_INITIATOR_SELF, expected, 1) < 1)
    expected[0] = sicm_device_of_node(sicm_node_self(), 0);  // the fallback's memory
  const size_t n = size_t(4) << 20;  // 3 arrays x 32 MiB
  sicm::space_allocator<double> a(alloc);
  hot_vector x(n, 1.0, a), y(n, 2.0, a), z(n, 0.0, a);
  auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 3; rep++)
    for (size_t i = 0; i < n; i++) z[i] = x[i] + 3.0 * y[i];
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("stream --hot=%s: expected on node %d\n", name, expected[0]->node);
  const hot_vector *arrays[] = {&x, &y, &z};
  const char *names[] = {"x", "y", "z"};
  int rc = 0;
  for (int k = 0; k < 3; k++) {
    int node = node_of(*arrays[k]);
    std::printf("  %s: %zu MiB on node %d\n", names[k], n * sizeof(double) >> 20, node);
    rc |= node != expected[0]->node;
  }
  std::printf("  triad: %.2f GB/s\n",
              3 * 3.0 * n * sizeof(double) / s / 1e9);
  return rc | (z[n - 1] != 7.0);
}

}  // namespace

int main(int argc, char **argv) {
  bool hbm = true, dram = true;
  if (argc == 2 && std::strcmp(argv[1], "--hot=hbm") == 0) {
    dram = false;
  } else if (argc == 2 && std::strcmp(argv[1], "--hot=dram") == 0) {
    hbm = false;
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: stream [--hot=hbm|--hot=dram]\n");
    return 2;
  }
  // Pinned, as an HPC rank would be: "near" then means one node.
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(sched_getcpu(), &here);
  sched_setaffinity(0, sizeof here, &here);
  if (sicm_init() != 0) {
    std::fprintf(stderr, "stream: %s\n", sicm_error_detail());
    return 1;
  }
  int rc = 0;
  try {
    if (hbm) rc |= run("hbm", SICM_MEMSPACE_HIGH_BW);
    if (dram) rc |= run("dram", SICM_MEMSPACE_DEFAULT);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "stream: %s\n", e.what());
    rc = 1;
  }
  sicm_fini();
  std::printf("stream: %s\n", rc ? "FAILED" : "ok");
  return rc;
}
