/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_place.c: an OpenMP program that knows nothing of libsicm — it asks
 * LLVM's OpenMP runtime for high-bandwidth and large-capacity memory and
 * reports, with move_pages, on which nodes the pages landed.  Built with
 * clang -fopenmp; libomp finds memkind's API by loading libmemkind.so. */
#include <numaif.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { SIZE = 8 << 20 };

/* "NAME: node N" when every page is on node N, else the first two nodes. */
static void report(const char *name, char *p) {
  if (p == NULL) {
    printf("%s: null\n", name);
    return;
  }
  memset(p, 1, SIZE);
  long page = sysconf(_SC_PAGESIZE);
  int first = -2, other = -2;
  for (long off = 0; off < SIZE; off += page) {
    void *addr = p + off;
    int status = -1;
    if (move_pages(0, 1, &addr, NULL, &status, 0) != 0)
      status = -1;
    if (first == -2)
      first = status;
    else if (status != first && other == -2)
      other = status;
  }
  if (other == -2)
    printf("%s: node %d\n", name, first);
  else
    printf("%s: mixed, nodes %d and %d\n", name, first, other);
}

int main(void) {
  char *hbw = omp_alloc(SIZE, omp_high_bw_mem_alloc);
  report("omp_high_bw_mem_alloc", hbw);
  char *cap = omp_alloc(SIZE, omp_large_cap_mem_alloc);
  report("omp_large_cap_mem_alloc", cap);
  omp_alloctrait_t traits[] = {{omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t strict = omp_init_allocator(omp_high_bw_mem_space, 1, traits);
  printf("omp_init_allocator(high_bw, null_fb): %s\n",
         strict == omp_null_allocator ? "null" : "allocator");
  char *strict_p = strict == omp_null_allocator ? NULL : omp_alloc(SIZE, strict);
  report("high_bw null_fb allocator", strict_p);
  omp_free(hbw, omp_high_bw_mem_alloc);
  omp_free(cap, omp_large_cap_mem_alloc);
  if (strict_p)
    omp_free(strict_p, strict);
  return 0;
}
