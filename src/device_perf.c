/* SPDX-License-Identifier: BSD-3-Clause */
/* device_perf.c: the performance of a node seen from any initiator, and the kind
 * of memory it is.  The platform often reports a memory-only node only for
 * its nearest initiator; from farther initiators the value is estimated by
 * scaling with the ratio of NUMA distances (bandwidth down, latency up). */
#include <string.h>

#include "devices.h"

static uint64_t scale(uint64_t value, unsigned num, unsigned den) {
  return den == 0 ? 0 : (value * num + den / 2) / den;
}

sc_perf_cell sc_perf_seen_from(const sc_topo *topo, unsigned initiator, unsigned target) {
  sc_perf_cell seen = *sc_topo_perf(topo, initiator, target);
  int nearest = sc_topo_nearest_initiator(topo, target);
  if (nearest < 0 || (unsigned)nearest == initiator)
    return seen;
  const sc_perf_cell *ref = sc_topo_perf(topo, (unsigned)nearest, target);
  unsigned d_ref = sc_topo_distance(topo, (unsigned)nearest, target);
  unsigned d_seen = sc_topo_distance(topo, initiator, target);
  int estimated = 0;
#define SICM_ESTIMATE(field, num, den)                 \
  if (seen.field == 0 && ref->field != 0) {            \
    seen.field = scale(ref->field, num, den);          \
    estimated = 1;                                     \
  }
  SICM_ESTIMATE(read_bandwidth, d_ref, d_seen)
  SICM_ESTIMATE(write_bandwidth, d_ref, d_seen)
  SICM_ESTIMATE(read_latency, d_seen, d_ref)
  SICM_ESTIMATE(write_latency, d_seen, d_ref)
#undef SICM_ESTIMATE
  if (estimated)
    seen.source = SICM_SOURCE_ESTIMATE;
  return seen;
}

/* Mean of the known values of a pair; 0 when neither is known. */
static uint64_t mean_known(uint64_t a, uint64_t b) {
  if (a && b)
    return (a + b) / 2;
  return a ? a : b;
}

uint64_t sc_perf_bandwidth(const sc_perf_cell *cell) {
  return mean_known(cell->read_bandwidth, cell->write_bandwidth);
}

uint64_t sc_perf_latency(const sc_perf_cell *cell) {
  return mean_known(cell->read_latency, cell->write_latency);
}

/* What hwloc's subtype (or a DAX device behind the node) says.  Subtypes
 * as hwloc documents them for NUMA nodes ("Normal attributes"): DRAM, HBM,
 * SPM, NVM, MCDRAM (Knights Landing), GPUMemory (POWER9 and Grace Hopper),
 * CXL-DRAM, CXL-NVM.  SPM ("specific-purpose") says nothing of speed. */
static sicm_device_kind kind_of_subtype(const sc_node *node) {
  static const struct { const char *subtype; sicm_device_kind kind; } kinds[] = {
      {"HBM", SICM_KIND_HBM},       {"MCDRAM", SICM_KIND_HBM},    {"GPUMemory", SICM_KIND_HBM},
      {"NVM", SICM_KIND_CAPACITY},  {"CXL-DRAM", SICM_KIND_CAPACITY},
      {"CXL-NVM", SICM_KIND_CAPACITY}, {"DRAM", SICM_KIND_DRAM}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(node->subtype, kinds[i].subtype) == 0)
      return kinds[i].kind;
  /* kmem DAX memory is persistent or CXL memory unless hwloc says more. */
  return node->dax && node->subtype[0] == '\0' ? SICM_KIND_CAPACITY : SICM_KIND_UNKNOWN;
}

/* A node with CPUs is DRAM.  A memory-only node is compared with the DRAM
 * of its nearest initiator: more bandwidth makes HBM, less makes capacity
 * memory; at equal bandwidth, higher latency makes capacity memory.
 * Without those values, hwloc's subtype of the node decides, then the
 * Linux memory tier of the node against its initiator's. */
sicm_device_kind sc_classify(const sc_topo *topo, unsigned target, sicm_source *source) {
  *source = SICM_SOURCE_TOPOLOGY;
  if (topo->nodes[target].has_cpus)
    return SICM_KIND_DRAM;
  int init = sc_topo_nearest_initiator(topo, target);
  if (init >= 0) {
    const sc_perf_cell *far = sc_topo_perf(topo, (unsigned)init, target);
    const sc_perf_cell *local = sc_topo_perf(topo, (unsigned)init, (unsigned)init);
    uint64_t bw_far = sc_perf_bandwidth(far), bw_local = sc_perf_bandwidth(local);
    uint64_t lat_far = sc_perf_latency(far), lat_local = sc_perf_latency(local);
    sicm_source src = far->source == SICM_SOURCE_CONFIG || local->source == SICM_SOURCE_CONFIG
                          ? SICM_SOURCE_CONFIG : SICM_SOURCE_FIRMWARE;
    if (bw_far && bw_local && bw_far != bw_local) {
      *source = src;
      return bw_far > bw_local ? SICM_KIND_HBM : SICM_KIND_CAPACITY;
    }
    if (lat_far && lat_local) {
      *source = src;
      return lat_far > lat_local ? SICM_KIND_CAPACITY : SICM_KIND_DRAM;
    }
  }
  sicm_device_kind kind = kind_of_subtype(&topo->nodes[target]);
  if (kind != SICM_KIND_UNKNOWN) {
    *source = SICM_SOURCE_SUBTYPE;
    return kind;
  }
  int tier = topo->nodes[target].memory_tier;
  int init_tier = init >= 0 ? topo->nodes[init].memory_tier : -1;
  if (tier >= 0 && init_tier >= 0 && tier != init_tier) {
    *source = SICM_SOURCE_MEMORY_TIER;
    return tier > init_tier ? SICM_KIND_CAPACITY : SICM_KIND_HBM;
  }
  return SICM_KIND_UNKNOWN;
}
