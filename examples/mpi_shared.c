/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_shared.c: the ranks of one node share one arena.  Rank 0 builds a
 * linked list in a shared arena; every rank attaches the arena by name and
 * walks the list through the very pointers rank 0 stored; each rank frees
 * the payloads of its share of the nodes, and rank 1 reuses the freed
 * memory for new payloads.  Rank 0 verifies the result and checks the heap.
 *
 *   mpirun -np 4 examples/mpi_shared */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sicm.h"

enum { NODES = 10000 };

struct node {
  struct node *next;
  unsigned index;
  unsigned payload_len;
  uint64_t checksum;       /* of the payload */
  unsigned char *payload;  /* a separate block of the arena */
};

static int rank;

static void fail(const char *what) {
  fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, sicm_error_detail());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint64_t fill(unsigned char *p, unsigned len, unsigned seed) {
  uint64_t sum = 1469598103934665603ull;
  for (unsigned i = 0; i < len; i++) {
    p[i] = (unsigned char)(seed * 31 + i);
    sum = (sum ^ p[i]) * 1099511628211ull;
  }
  return sum;
}

static uint64_t checksum(const unsigned char *p, unsigned len) {
  uint64_t sum = 1469598103934665603ull;
  for (unsigned i = 0; i < len; i++)
    sum = (sum ^ p[i]) * 1099511628211ull;
  return sum;
}

static void give_payload(sicm_arena arena, struct node *n, unsigned seed) {
  n->payload_len = 16 + (seed * 7919u) % 2000;
  n->payload = sicm_arena_alloc(arena, n->payload_len);
  if (n->payload == NULL)
    fail("sicm_arena_alloc (payload)");
  n->checksum = fill(n->payload, n->payload_len, seed);
}

/* Walks the list: every index in order, every payload intact; returns how
 * many nodes have a payload. */
static unsigned walk(const struct node *head) {
  unsigned expected = 0, with_payload = 0;
  for (const struct node *n = head; n != NULL; n = n->next, expected++) {
    if (n->index != expected)
      fail("walk (index)");
    if (n->payload != NULL) {
      if (checksum(n->payload, n->payload_len) != n->checksum)
        fail("walk (payload checksum)");
      with_payload++;
    }
  }
  if (expected != NODES)
    fail("walk (length)");
  return with_payload;
}

/* Rank 0 builds the list in a new shared arena; returns its head. */
static struct node *build(sicm_arena arena) {
  struct node *head = NULL, **tail = &head;
  for (unsigned i = 0; i < NODES; i++) {
    struct node *n = sicm_arena_alloc(arena, sizeof *n);
    if (n == NULL)
      fail("sicm_arena_alloc (node)");
    n->next = NULL;
    n->index = i;
    give_payload(arena, n, i);
    *tail = n;
    tail = &n->next;
  }
  return head;
}

/* Every rank frees the payloads of its share, blocks other ranks made;
 * then `reuser` gives new payloads to a quarter of the nodes, from memory
 * the other ranks freed. */
static void free_and_reuse(sicm_arena arena, struct node *head, int size, int reuser) {
  MPI_Barrier(MPI_COMM_WORLD);
  for (struct node *n = head; n != NULL; n = n->next)
    if (n->index % (unsigned)size == (unsigned)rank) {
      sicm_free(n->payload);
      n->payload = NULL;
    }
  MPI_Barrier(MPI_COMM_WORLD);
  sicm_heap_report after_free, after_reuse;
  if (rank == reuser) {
    if (sicm_arena_check(arena, &after_free) != 0)
      fail("sicm_arena_check (after the frees)");
    for (struct node *n = head; n != NULL; n = n->next)
      if (n->payload == NULL && n->index % 4 == 0)
        give_payload(arena, n, n->index + 1000000);
    if (sicm_arena_check(arena, &after_reuse) != 0)
      fail("sicm_arena_check (after the reuse)");
    if (after_reuse.bytes_used <= after_free.bytes_used)
      fail("reuse (bytes in use did not grow)");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0: every payload was freed by some rank; the reuser gave new ones
 * to every fourth node. */
static void verify(sicm_arena arena, const struct node *head, int size) {
  unsigned expected = (NODES + 3) / 4, got = walk(head);
  sicm_heap_report report;
  if (sicm_arena_check(arena, &report) != 0)
    fail("sicm_arena_check");
  if (got != expected)
    fail("payload count");
  printf("mpi_shared: %d ranks walked %d nodes through the same pointers; %u payloads after "
         "the frees and the reuse; heap: %zu blocks used (%zu bytes), %zu bytes free, "
         "largest free %zu\n", size, NODES, got, report.blocks_used, report.bytes_used,
         report.bytes_free, report.largest_free);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (sicm_init() != 0)
    fail("sicm_init");

  /* One name per job: rank 0's pid, known to all. */
  long job = getpid();
  MPI_Bcast(&job, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  char name[64];
  snprintf(name, sizeof name, "/sicm-mpi-%ld", job);

  sicm_arena arena = NULL;
  uint64_t head_address = 0;
  if (rank == 0) {
    sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
    arena = sicm_arena_create_shared(name, 64 << 20, dev, 0600);
    if (arena == NULL)
      fail("sicm_arena_create_shared");
    head_address = (uintptr_t)build(arena);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(&head_address, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank != 0 && (arena = sicm_arena_attach(name)) == NULL)
    fail("sicm_arena_attach");
  struct node *head = (struct node *)(uintptr_t)head_address;
  if (sicm_arena_lookup(head) != arena)
    fail("sicm_arena_lookup (the list head is not in the attached arena)");
  if (walk(head) != NODES)
    fail("walk (payloads before the frees)");

  free_and_reuse(arena, head, size, size > 1 ? 1 : 0);
  if (rank == 0)
    verify(arena, head, size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (sicm_arena_detach(arena) != 0)
    fail("sicm_arena_detach");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && sicm_arena_unlink(name) != 0)
    fail("sicm_arena_unlink");
  if (sicm_fini() != 0)
    fail("sicm_fini");
  MPI_Finalize();
  return 0;
}
