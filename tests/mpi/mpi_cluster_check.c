/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_cluster_check.c: libsicm-mpi in a job that spans nodes (run by
 * tests/mpi/cluster.sh in the cluster of tests/guest/sicm-cluster: 2 nodes
 * of the 4-node guest, 2 ranks each).  Every check moves data between the
 * nodes and looks at where each rank's pages are (move_pages):
 *  - MPI_Alloc_mem with sicm_memory=hbm: each rank's block on its own
 *    node's HBM; a halo exchange with a rank of the other node;
 *  - one topology discovery per node: one rank published, one adopted;
 *  - MPI_Win_allocate with sicm_memory=hbm: the window on HBM, MPI_Put,
 *    MPI_Get and MPI_Accumulate from the other node land and read back;
 *  - MPI_Win_allocate_shared on each node's communicator: one segment per
 *    node, on that node's HBM, holding that node's values only;
 *  - an arena named with sicm_arena under a window, moved to DRAM and back
 *    between epochs while the other node's ranks put into it; every
 *    epoch's data intact after each move.
 * Each rank then prints one line "figures {...}" (its host, rank, its
 * "halo" arena's held bytes and the migrations it made) for cluster.sh to
 * compare with sicm-stats's report of the job; the halo block stays live
 * until exit so that the report lists it.
 * Prints "ok: ..." or "FAILED: ..." per check; exit 0 if all passed. */
#include <mpi.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "sicm.h"

static int rank, size, failures;
static char host[64];

static void check(int ok, const char *what) {
  if (!ok)
    failures++;
  printf("rank %d (%s) %s: %s\n", rank, host, ok ? "ok" : "FAILED", what);
  fflush(stdout);
}

static int node_of_kind(sicm_device_kind kind) {
  const sicm_device_list *all = sicm_devices();
  for (unsigned i = 0; all != NULL && i < all->count; i++)
    if (all->devices[i].kind == kind && !all->devices[i].huge)
      return all->devices[i].node;
  return -1;
}

static void placed_check(const void *p, size_t len, int node, const char *what) {
  char text[160];
  size_t off = pages_off(p, len, node);
  snprintf(text, sizeof text, "%s: on node %d (%zu pages off)", what, node, off);
  check(off == 0, text);
}

static unsigned char pattern(int from, size_t i) {
  return (unsigned char)(from * 37 + i % 251);
}

/* The halo: 2 MiB of HBM per rank, its first MiB sent to the partner on
 * the other node, whose first MiB lands in our second. */
static char *halo_exchange(int partner, int hbm) {
  const size_t mib = 1 << 20;
  char *halo = NULL;
  MPI_Info info = info_of("sicm_memory", "hbm", "sicm_arena", "halo");
  int rc = MPI_Alloc_mem(2 * mib, info, &halo);
  MPI_Info_free(&info);
  check(rc == MPI_SUCCESS && halo && sicm_arena_lookup(halo) != NULL,
        "MPI_Alloc_mem(sicm_memory=hbm, sicm_arena=halo): arena memory");
  if (rc != MPI_SUCCESS)
    return NULL;
  for (size_t i = 0; i < mib; i++)
    halo[i] = (char)pattern(rank, i);
  MPI_Sendrecv(halo, (int)mib, MPI_BYTE, partner, 1, halo + mib, (int)mib, MPI_BYTE, partner, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int ok = 1;
  for (size_t i = 0; i < mib; i++)
    ok &= (unsigned char)halo[mib + i] == pattern(partner, i);
  check(ok, "halo exchange with the other node: every byte as sent");
  placed_check(halo, 2 * mib, hbm, "the halo");
  return halo;
}

static void topology_per_node(MPI_Comm node_comm) {
  int source = sicm_init_topology_source(), counts[3] = {0, 0, 0}, all[3];
  if (source >= 0 && source <= 2)
    counts[source] = 1;
  MPI_Allreduce(counts, all, 3, MPI_INT, MPI_SUM, node_comm);
  check(all[SICM_TOPOLOGY_PUBLISHED] == 1 && all[SICM_TOPOLOGY_ADOPTED] == 1,
        "one topology discovery on this node: one rank published, the other adopted");
}

static void window_across(int partner, int hbm) {
  const int n = 1 << 17; /* longs: 1 MiB */
  long *base = NULL;
  MPI_Win win;
  int before = sicm_arenas_list(NULL, 0);
  MPI_Info info = info_of("sicm_memory", "hbm", NULL, NULL);
  int rc = MPI_Win_allocate((MPI_Aint)n * sizeof(long), sizeof(long), info, MPI_COMM_WORLD, &base, &win);
  MPI_Info_free(&info);
  check(rc == MPI_SUCCESS && base && part_arena(base, (size_t)n * sizeof(long), 1) != NULL,
        "MPI_Win_allocate(sicm_memory=hbm): the MPI library's window, this rank's part an arena");
  if (rc != MPI_SUCCESS)
    return;
  for (int i = 0; i < n; i++)
    base[i] = rank * 1000000L + i;
  placed_check(base, (size_t)n * sizeof(long), hbm, "the window's memory");
  long put[256], got[256], add[64];
  for (int i = 0; i < 256; i++)
    put[i] = -(rank * 1000L + i);
  for (int i = 0; i < 64; i++)
    add[i] = rank + 1;
  MPI_Win_fence(0, win);
  MPI_Put(put, 256, MPI_LONG, partner, 1000, 256, MPI_LONG, win);
  MPI_Get(got, 256, MPI_LONG, partner, 50000, 256, MPI_LONG, win);
  MPI_Accumulate(add, 64, MPI_LONG, partner, 90000, 64, MPI_LONG, MPI_SUM, win);
  MPI_Win_fence(0, win);
  int ok_put = 1, ok_get = 1, ok_acc = 1;
  for (int i = 0; i < 256; i++) {
    ok_put &= base[1000 + i] == -(partner * 1000L + i);
    ok_get &= got[i] == partner * 1000000L + 50000 + i;
  }
  ok_put &= base[999] == rank * 1000000L + 999 && base[1256] == rank * 1000000L + 1256;
  for (int i = 0; i < 64; i++)
    ok_acc &= base[90000 + i] == rank * 1000000L + 90000 + i + partner + 1;
  check(ok_put, "MPI_Put from the other node lands in the window, exactly");
  check(ok_get, "MPI_Get reads the other node's window");
  check(ok_acc, "MPI_Accumulate from the other node adds into the window");
  check(MPI_Win_free(&win) == MPI_SUCCESS && sicm_arenas_list(NULL, 0) == before,
        "MPI_Win_free gives the window's memory back");
}

static void shared_per_node(MPI_Comm node_comm, int node_index, int hbm) {
  int node_rank, node_size;
  MPI_Comm_rank(node_comm, &node_rank);
  MPI_Comm_size(node_comm, &node_size);
  const MPI_Aint part = (1 << 20) + 100;
  unsigned char *mine = NULL;
  MPI_Win win;
  MPI_Info info = info_of("sicm_memory", "hbm", NULL, NULL);
  int rc = MPI_Win_allocate_shared(part, 1, info, node_comm, &mine, &win);
  MPI_Info_free(&info);
  check(rc == MPI_SUCCESS, "MPI_Win_allocate_shared(sicm_memory=hbm) on the node's communicator");
  if (rc != MPI_SUCCESS)
    return;
  memset(mine, 0x40 + node_index * 0x10 + node_rank, (size_t)part);
  MPI_Barrier(MPI_COMM_WORLD); /* every node has written its own values */
  int ok = 1;
  for (int r = 0; r < node_size; r++) {
    MPI_Aint len;
    int unit;
    unsigned char *base;
    MPI_Win_shared_query(win, r, &len, &unit, &base);
    unsigned char want = (unsigned char)(0x40 + node_index * 0x10 + r);
    for (MPI_Aint i = 0; i < len; i += 4093)
      ok &= base[i] == want;
    ok &= len == part && base[len - 1] == want;
    char what[96];
    snprintf(what, sizeof what, "node rank %d's part of this node's segment", r);
    placed_check(base, (size_t)part, hbm, what);
  }
  check(ok, "the node's segment holds this node's values only, from both of its ranks");
  MPI_Win_free(&win);
}

/* A named arena under a window, moved between epochs while the other
 * node puts into it: 4 epochs, each writing its own slice. */
static int moving_arena(int partner, int hbm, int dram) {
  const int slice = 4096, epochs = 4;
  unsigned char *base = NULL;
  MPI_Win win;
  MPI_Info info = info_of("sicm_memory", "hbm", "sicm_arena", "moving");
  int rc = MPI_Win_allocate(slice * epochs, 1, info, MPI_COMM_WORLD, &base, &win);
  MPI_Info_free(&info);
  sicm_arena arena = rc == MPI_SUCCESS ? sicm_arena_lookup(base) : NULL;
  check(arena != NULL, "MPI_Win_allocate(sicm_arena=moving): the named arena's memory");
  if (rc != MPI_SUCCESS)
    return 0;
  memset(base, 0, (size_t)slice * epochs);
  int moves = 0;
  unsigned char data[4096];
  sicm_device *to_dram = sicm_device_of_node(dram, 0), *to_hbm = sicm_device_of_node(hbm, 0);
  for (int e = 0; e < epochs; e++) {
    for (int i = 0; i < slice; i++)
      data[i] = (unsigned char)(e * 31 + rank * 7 + i % 13);
    MPI_Win_fence(0, win);
    MPI_Put(data, slice, MPI_BYTE, partner, e * slice, slice, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    /* Between epochs: the arena moves while no access is in flight. */
    int to = e % 2 == 0 ? dram : hbm;
    int moved = arena && sicm_arena_set_device(arena, e % 2 == 0 ? to_dram : to_hbm) == 0;
    moves += moved;
    int ok = moved;
    for (int k = 0; k <= e; k++)
      for (int i = 0; i < slice; i++)
        ok &= base[k * slice + i] == (unsigned char)(k * 31 + partner * 7 + i % 13);
    char what[128];
    snprintf(what, sizeof what, "epoch %d: moved to node %d, the other node's puts of epochs 0-%d intact",
             e, to, e);
    check(ok, what);
    placed_check(base, (size_t)slice * epochs, to, "the moving arena after its move");
  }
  MPI_Win_free(&win);
  return moves;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  gethostname(host, sizeof host - 1);
  MPI_Comm node_comm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
  int node_size, node_rank;
  MPI_Comm_size(node_comm, &node_size);
  MPI_Comm_rank(node_comm, &node_rank);
  /* Node index: the world rank of the node's first rank, over 2. */
  int leader = rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, node_comm);
  int node_index = leader / 2;
  char hosts[4][64];
  MPI_Allgather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, MPI_COMM_WORLD);
  int layout = size == 4 && node_size == 2 && strcmp(hosts[0], hosts[1]) == 0 &&
               strcmp(hosts[2], hosts[3]) == 0 && strcmp(hosts[0], hosts[2]) != 0 &&
               strcmp(hosts[rank], host) == 0;
  check(layout, "4 ranks, 2 on each of 2 nodes of different host names");
  if (!layout) {
    MPI_Finalize();
    return 1;
  }
  int partner = (rank + 2) % 4;
  char *halo = halo_exchange(partner, 2); /* starts libsicm: then the devices are known */
  int hbm = node_of_kind(SICM_KIND_HBM), dram = sicm_node_self();
  check(hbm == 2 && dram >= 0 && dram <= 1, "this node's HBM is node 2, its rank on a DRAM node");
  topology_per_node(node_comm);
  window_across(partner, hbm);
  shared_per_node(node_comm, node_index, hbm);
  int moves = moving_arena(partner, hbm, dram);
  sicm_arena halo_arena = halo ? sicm_arena_lookup(halo) : NULL;
  printf("figures {\"host\": \"%s\", \"rank\": %d, \"halo_held\": %zu, \"migrations\": %d}\n",
         host, rank, halo_arena ? sicm_arena_size(halo_arena) : 0, moves);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_cluster_check: %d failed\n", all);
  MPI_Comm_free(&node_comm);
  MPI_Finalize();
  return all ? 1 : 0; /* the halo stays live: the report at exit lists it */
}
