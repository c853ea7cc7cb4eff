/* SPDX-License-Identifier: BSD-3-Clause */
/* One heap for the processes of a node.  This program creates it and
 * allocates a block in it; a second process (the same program, given the
 * arena's name and the block's address) attaches the arena by name and
 * writes into the block: addresses are the same in every process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sicm.h>

static int attach_and_write(const char *name, const char *address) {
  sicm_arena heap = sicm_init() == 0 ? sicm_arena_attach(name) : NULL;
  char *block = (char *)strtoull(address, NULL, 16);
  if (heap == NULL || sicm_arena_lookup(block) != heap)
    return 1;
  strcpy(block, "written by the second process");
  return sicm_arena_detach(heap) == 0 && sicm_fini() == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 3)
    return attach_and_write(argv[1], argv[2]);
  if (sicm_init() != 0)
    return 1;
  char name[64], address[32];
  snprintf(name, sizeof name, "/sicm-example-%d", (int)getpid());
  sicm_arena heap = sicm_arena_create_shared(name, 1 << 20,
                                             sicm_device_of_node(sicm_node_self(), 0), 0600);
  char *block = heap ? sicm_arena_alloc(heap, 64) : NULL;
  if (block == NULL) {
    fprintf(stderr, "shared arena: %s\n", sicm_error_detail());
    return 1;
  }
  snprintf(address, sizeof address, "%llx", (unsigned long long)(uintptr_t)block);
  pid_t child = fork();
  if (child == 0) {
    execl("/proc/self/exe", argv[0], name, address, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("%s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? block : "(child failed)");
  sicm_arena_unlink(name);
  sicm_arena_detach(heap);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && sicm_fini() == 0 ? 0 : 1;
}
