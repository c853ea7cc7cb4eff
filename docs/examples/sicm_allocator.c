/* SPDX-License-Identifier: BSD-3-Clause */
/* An OpenMP-style allocator: high-bandwidth memory when the machine has
 * it, else the default memory (the fallback trait), 64-byte aligned. */
#include <stdint.h>
#include <stdio.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  sicm_alloctrait traits[] = {{SICM_ATK_ALIGNMENT, 64},
                              {SICM_ATK_FALLBACK, SICM_ATV_DEFAULT_MEM_FB}};
  sicm_allocator *hbw = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 2, traits);
  double *v = hbw ? sicm_allocator_alloc(hbw, 4096 * sizeof *v) : NULL;
  if (v == NULL) {
    fprintf(stderr, "allocator: %s\n", sicm_error_detail());
    return 1;
  }
  v[4095] = 1.0;
  printf("4096 doubles at %p (64-byte aligned: %s)\n", (void *)v,
         (uintptr_t)v % 64 == 0 ? "yes" : "no");
  sicm_allocator_free(hbw, v);
  sicm_allocator_destroy(hbw);
  return sicm_fini() == 0 ? 0 : 1;
}
