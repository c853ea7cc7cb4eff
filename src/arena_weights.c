/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_weights.c: weighted interleave (SICM_ARENA_WEIGHTED): whether the
 * kernel has it, the system's weights per node, and weights derived from
 * the devices' bandwidth for an administrator to set. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "base.h"
#include "devices.h"
#include "sicm.h"

#define WEIGHTS_DIR "/sys/kernel/mm/mempolicy/weighted_interleave"

/* 0: not probed yet; 1: the kernel has MPOL_WEIGHTED_INTERLEAVE; -1: not. */
static int weighted_support; /* atomic */

/* Probes with a policy-only mbind of a page of our own: a kernel without
 * the policy refuses it with EINVAL.  The nodes are a binding's, so valid. */
static int weighted_supported(const sc_nodemask *nodes) {
  int known = __atomic_load_n(&weighted_support, __ATOMIC_RELAXED);
  if (known != 0)
    return known > 0;
  void *page = mmap(NULL, sc_page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (page == MAP_FAILED)
    return 0; /* unknown: even interleave this time, ask again next time */
  int rc = mbind(page, sc_page_size(), MPOL_WEIGHTED_INTERLEAVE, nodes->bits, SC_NODES_MAX, 0);
  int err = errno;
  munmap(page, sc_page_size());
  if (rc != 0 && err != EINVAL)
    return 0;
  __atomic_store_n(&weighted_support, rc == 0 ? 1 : -1, __ATOMIC_RELAXED);
  return rc == 0;
}

int sc_weighted_policy(const sc_nodemask *nodes) {
  return weighted_supported(nodes) ? MPOL_WEIGHTED_INTERLEAVE : MPOL_INTERLEAVE;
}

/* Checks the arguments every weights call takes; 0, or -1 with EINVAL. */
static int weights_args(sicm_device *const *devs, unsigned ndevs, const unsigned *weights,
                        sc_nodemask *nodes) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  if (devs == NULL || weights == NULL || ndevs == 0 || ndevs > SICM_ARENA_DEVICES_MAX)
    return sc_fail(EINVAL, "weights need 1 to %d devices and room for their weights",
                   SICM_ARENA_DEVICES_MAX);
  *nodes = (sc_nodemask){{0}};
  for (unsigned i = 0; i < ndevs; i++) {
    if (!sc_device_is_known(s, devs[i]))
      return sc_fail(EINVAL, "device %u is not from sicm_devices()", i);
    if (devs[i]->node >= SC_NODES_MAX)
      return sc_fail(EINVAL, "node %d is beyond the %d nodes arenas support", devs[i]->node,
                     SC_NODES_MAX);
    sc_nodemask_add(nodes, devs[i]->node);
  }
  return 0;
}

/* The system's weight of one node (1 to 255); 0, or -1 with errno. */
static int node_weight(int node, unsigned *weight) {
  char path[96], text[16];
  snprintf(path, sizeof path, WEIGHTS_DIR "/node%d", node);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return sc_fail(errno, "%s: %s", path, strerror(errno));
  ssize_t n = read(fd, text, sizeof text - 1);
  int err = errno;
  close(fd);
  if (n <= 0)
    return sc_fail(n < 0 ? err : EIO, "%s: cannot read it", path);
  text[n] = '\0';
  char *end;
  unsigned long w = strtoul(text, &end, 10);
  if (end == text || w == 0 || w > 255)
    return sc_fail(EIO, "%s: '%s' is no weight", path, text);
  *weight = (unsigned)w;
  return 0;
}

int sicm_interleave_weights(sicm_device *const *devs, unsigned ndevs, unsigned *weights) {
  sc_nodemask nodes;
  if (weights_args(devs, ndevs, weights, &nodes) != 0)
    return -1;
  if (!weighted_supported(&nodes)) {
    for (unsigned i = 0; i < ndevs; i++)
      weights[i] = 1;
    return 1;
  }
  for (unsigned i = 0; i < ndevs; i++)
    if (node_weight(devs[i]->node, &weights[i]) != 0)
      return -1;
  return 0;
}

static uint64_t gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* A device's bandwidth: the mean of read and write where both are known. */
static uint64_t device_bandwidth(const sicm_device *d) {
  uint64_t r = d->perf.read_bandwidth, w = d->perf.write_bandwidth;
  return r && w ? (r + w) / 2 : r ? r : w;
}

int sicm_interleave_weights_from_bandwidth(sicm_device *const *devs, unsigned ndevs,
                                           unsigned *weights) {
  sc_nodemask nodes;
  if (weights_args(devs, ndevs, weights, &nodes) != 0)
    return -1;
  uint64_t least = UINT64_MAX;
  for (unsigned i = 0; i < ndevs; i++) {
    uint64_t bw = device_bandwidth(devs[i]);
    if (bw == 0)
      return sc_fail(ENODATA, "device %u (node %d) has no known bandwidth", i, devs[i]->node);
    least = bw < least ? bw : least;
  }
  /* Tenths of the slowest device's bandwidth, in lowest terms: 1.5 times
   * as fast weighs 3 against 2. */
  uint64_t common = 0;
  for (unsigned i = 0; i < ndevs; i++) {
    uint64_t tenths = (device_bandwidth(devs[i]) * 10 + least / 2) / least;
    weights[i] = (unsigned)(tenths > 2550 ? 2550 : tenths);
    common = gcd(common, weights[i]);
  }
  unsigned most = 0;
  for (unsigned i = 0; i < ndevs; i++) {
    weights[i] /= (unsigned)common;
    most = weights[i] > most ? weights[i] : most;
  }
  /* Beyond the kernel's 255, scale down, keeping every weight at least 1. */
  for (unsigned i = 0; most > 255 && i < ndevs; i++) {
    unsigned w = (unsigned)(((uint64_t)weights[i] * 255 + most / 2) / most);
    weights[i] = w ? w : 1;
  }
  return 0;
}
