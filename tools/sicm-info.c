/* sicm-info: prints the memory devices libsicm sees and how they rank,
 * as a table or (--json) as JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sicm.h"

static const sicm_rank_by criteria[] = {SICM_RANK_BANDWIDTH, SICM_RANK_LATENCY,
                                         SICM_RANK_CAPACITY, SICM_RANK_NEAREST};
#define NCRITERIA (sizeof criteria / sizeof criteria[0])

/* One ranking, computed once for both output formats. */
typedef struct ranking {
  sicm_rank_entry *entries;
  int count;
  sicm_source source;
} ranking;

static int rankings_compute(ranking *out, unsigned ndevices, int initiator) {
  for (size_t c = 0; c < NCRITERIA; c++) {
    out[c].entries = calloc(ndevices, sizeof *out[c].entries);
    if (out[c].entries == NULL)
      return -1;
    out[c].count = sicm_rank(criteria[c], initiator, out[c].entries, ndevices, &out[c].source);
    if (out[c].count < 0)
      return -1;
  }
  return 0;
}

static void usage(FILE *out) {
  fprintf(out, "usage: sicm-info [--json] [--initiator NODE]\n"
               "Lists the memory devices (NUMA node x page size) and their ranking\n"
               "seen from an initiator node (default: this thread's node).\n");
}

/* Human-readable byte count into buf. */
static const char *format_bytes(char *buf, size_t len, size_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  unsigned u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

/* Free bytes, or -1 when the kernel cannot say (foreign topology). */
static long long device_free_or_unknown(const sicm_device *dev) {
  size_t free_bytes;
  return sicm_device_free(dev, &free_bytes) == 0 ? (long long)free_bytes : -1;
}

static void print_table(const sicm_device_list *list, int initiator, const ranking *ranks) {
  char cap[32], fre[32], page[32];
  printf("%-5s %-9s %11s %11s %9s %10s %10s %7s %7s %-5s %-9s %s\n", "node", "kind", "capacity",
         "free", "page", "rd MB/s", "wr MB/s", "rd ns", "wr ns", "cpus", "kind-src",
         "perf-src (from node)");
  for (unsigned i = 0; i < list->count; i++) {
    const sicm_device *d = &list->devices[i];
    long long free_bytes = device_free_or_unknown(d);
    printf("%-5d %-9s %11s %11s %9s %10llu %10llu %7llu %7llu %-5s %-9s %s (%d)\n", d->node,
           sicm_device_kind_name(d->kind), format_bytes(cap, sizeof cap, d->capacity),
           free_bytes < 0 ? "?" : format_bytes(fre, sizeof fre, (size_t)free_bytes),
           format_bytes(page, sizeof page, d->page_size),
           (unsigned long long)d->perf.read_bandwidth, (unsigned long long)d->perf.write_bandwidth,
           (unsigned long long)d->perf.read_latency, (unsigned long long)d->perf.write_latency,
           d->has_cpus ? "yes" : "no", sicm_source_name(d->kind_source),
           sicm_source_name(d->perf.source), d->perf.initiator);
  }
  printf("\nranking seen from node %d:\n", initiator);
  for (size_t c = 0; c < NCRITERIA; c++) {
    printf("  %-9s (%-8s):", sicm_rank_by_name(criteria[c]), sicm_source_name(ranks[c].source));
    for (int i = 0; i < ranks[c].count; i++)
      printf(" %d%s=%llu", ranks[c].entries[i].device->node,
             ranks[c].entries[i].device->huge ? "h" : "",
             (unsigned long long)ranks[c].entries[i].value);
    printf("\n");
  }
}

static void print_json_device(const sicm_device *d) {
  const sicm_device_list *list = sicm_devices();
  long long free_bytes = device_free_or_unknown(d);
  printf("    {\"index\": %u, \"node\": %d, \"kind\": \"%s\", \"kind_source\": \"%s\", "
         "\"page_size\": %zu, \"huge\": %s, \"capacity\": %zu, ",
         d->index, d->node, sicm_device_kind_name(d->kind), sicm_source_name(d->kind_source),
         d->page_size, d->huge ? "true" : "false", d->capacity);
  if (free_bytes < 0)
    printf("\"free\": null, ");
  else
    printf("\"free\": %lld, ", free_bytes);
  printf("\"has_cpus\": %s,\n     \"perf\": {\"initiator\": %d, \"source\": \"%s\", "
         "\"read_bandwidth\": %llu, \"write_bandwidth\": %llu, \"read_latency\": %llu, "
         "\"write_latency\": %llu},\n     \"distance\": {",
         d->has_cpus ? "true" : "false", d->perf.initiator, sicm_source_name(d->perf.source),
         (unsigned long long)d->perf.read_bandwidth, (unsigned long long)d->perf.write_bandwidth,
         (unsigned long long)d->perf.read_latency, (unsigned long long)d->perf.write_latency);
  int first = 1;
  for (unsigned j = 0; j < list->count; j++) {
    if (list->devices[j].huge)
      continue;
    printf("%s\"%d\": %d", first ? "" : ", ", list->devices[j].node,
           sicm_node_distance(d->node, list->devices[j].node));
    first = 0;
  }
  printf("}}");
}

static void print_json(const sicm_device_list *list, int initiator, const ranking *ranks) {
  printf("{\n  \"initiator\": %d,\n  \"devices\": [\n", initiator);
  for (unsigned i = 0; i < list->count; i++) {
    print_json_device(&list->devices[i]);
    printf("%s\n", i + 1 < list->count ? "," : "");
  }
  printf("  ],\n  \"rankings\": {\n");
  for (size_t c = 0; c < NCRITERIA; c++) {
    printf("    \"%s\": {\"source\": \"%s\", \"order\": [", sicm_rank_by_name(criteria[c]),
           sicm_source_name(ranks[c].source));
    for (int i = 0; i < ranks[c].count; i++) {
      const sicm_rank_entry *e = &ranks[c].entries[i];
      printf("%s{\"device\": %u, \"node\": %d, \"value\": %llu, \"source\": \"%s\"}",
             i ? ", " : "", e->device->index, e->device->node, (unsigned long long)e->value,
             sicm_source_name(e->source));
    }
    printf("]}%s\n", c + 1 < NCRITERIA ? "," : "");
  }
  printf("  }\n}\n");
}

int main(int argc, char **argv) {
  int json = 0, initiator = SICM_INITIATOR_SELF;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--initiator") == 0 && i + 1 < argc) {
      char *end;
      initiator = (int)strtol(argv[++i], &end, 10);
      if (*end != '\0') {
        usage(stderr);
        return 2;
      }
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (sicm_init() != 0) {
    fprintf(stderr, "sicm-info: %s (%s)\n", sicm_error_detail(), strerror(errno));
    return 1;
  }
  if (initiator == SICM_INITIATOR_SELF)
    initiator = sicm_node_self();
  const sicm_device_list *list = sicm_devices();
  ranking ranks[NCRITERIA] = {{0}};
  int rc = rankings_compute(ranks, list->count, initiator);
  if (rc != 0)
    fprintf(stderr, "sicm-info: %s (%s)\n", sicm_error_detail(), strerror(errno));
  else if (json)
    print_json(list, initiator, ranks);
  else
    print_table(list, initiator, ranks);
  for (size_t c = 0; c < NCRITERIA; c++)
    free(ranks[c].entries);
  sicm_fini();
  return rc == 0 ? 0 : 1;
}
