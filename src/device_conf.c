/* SPDX-License-Identifier: BSD-3-Clause */
/* device_conf.c: the administrator configuration file that sets or overrides, per
 * NUMA node, the kind and the performance the firmware reports (or omits).
 *
 * Format, one node per line ('#' starts a comment):
 *   node <id> [kind=dram|hbm|capacity] [bandwidth=MB/s] [latency=ns]
 *             [read_bandwidth=MB/s] [write_bandwidth=MB/s]
 *             [read_latency=ns] [write_latency=ns]
 * Performance values are those seen from the node's nearest initiator.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices.h"

/* Bounds of the file: it describes at most a few hundred nodes. */
#define SC_CONF_BYTES_MAX (1 << 20)
#define SC_CONF_LINES_MAX 65536
#define SC_CONF_LINE_MAX 1022

static int conf_parse_kind(const char *s, sicm_device_kind *kind) {
  static const sicm_device_kind kinds[] = {SICM_KIND_DRAM, SICM_KIND_HBM, SICM_KIND_CAPACITY};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(s, sicm_device_kind_name(kinds[i])) == 0) {
      *kind = kinds[i];
      return 0;
    }
  return -1;
}

static int conf_parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (!isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0)
    return -1;
  *out = v;
  return 0;
}

/* Applies one key=value to entry; returns -1 with a description on error. */
static int conf_parse_setting(const char *path, unsigned line, char *word, sc_conf_node *entry) {
  char *eq = strchr(word, '=');
  if (eq == NULL)
    return sc_fail(EINVAL, "%s:%u: expected key=value, got '%s'", path, line, word);
  *eq = '\0';
  const char *key = word, *value = eq + 1;
  if (strcmp(key, "kind") == 0) {
    if (conf_parse_kind(value, &entry->kind) != 0)
      return sc_fail(EINVAL, "%s:%u: kind must be dram, hbm or capacity, not '%s'", path,
                       line, value);
    return 0;
  }
  static const struct { const char *key; size_t off1, off2; } perf_keys[] = {
      {"bandwidth", offsetof(sc_perf_cell, read_bandwidth), offsetof(sc_perf_cell, write_bandwidth)},
      {"latency", offsetof(sc_perf_cell, read_latency), offsetof(sc_perf_cell, write_latency)},
      {"read_bandwidth", offsetof(sc_perf_cell, read_bandwidth), offsetof(sc_perf_cell, read_bandwidth)},
      {"write_bandwidth", offsetof(sc_perf_cell, write_bandwidth), offsetof(sc_perf_cell, write_bandwidth)},
      {"read_latency", offsetof(sc_perf_cell, read_latency), offsetof(sc_perf_cell, read_latency)},
      {"write_latency", offsetof(sc_perf_cell, write_latency), offsetof(sc_perf_cell, write_latency)},
  };
  for (size_t i = 0; i < sizeof perf_keys / sizeof perf_keys[0]; i++) {
    if (strcmp(key, perf_keys[i].key) != 0)
      continue;
    uint64_t v;
    if (conf_parse_u64(value, &v) != 0)
      return sc_fail(EINVAL, "%s:%u: %s must be a positive integer, not '%s'", path, line,
                       key, value);
    *(uint64_t *)((char *)&entry->perf + perf_keys[i].off1) = v;
    *(uint64_t *)((char *)&entry->perf + perf_keys[i].off2) = v;
    entry->perf.source = SICM_SOURCE_CONFIG;
    return 0;
  }
  return sc_fail(EINVAL, "%s:%u: unknown key '%s'", path, line, key);
}

/* Parses one non-empty line "node <id> key=value..." into a new entry. */
static int conf_parse_line(const char *path, unsigned line, char *text, const sc_topo *topo,
                           sc_conf *conf) {
  char *save = NULL;
  char *word = strtok_r(text, " \t", &save);
  if (strcmp(word, "node") != 0)
    return sc_fail(EINVAL, "%s:%u: expected 'node <id> key=value...', got '%s'", path, line,
                     word);
  char *id_text = strtok_r(NULL, " \t", &save);
  uint64_t id = 0;
  if (id_text == NULL || (strcmp(id_text, "0") != 0 && conf_parse_u64(id_text, &id) != 0) ||
      id > INT32_MAX)
    return sc_fail(EINVAL, "%s:%u: 'node' needs a node number", path, line);
  if (sc_topo_index(topo, (int)id) < 0)
    return sc_fail(EINVAL, "%s:%u: node %d does not exist on this machine", path, line,
                     (int)id);
  for (unsigned i = 0; i < conf->count; i++)
    if (conf->nodes[i].node == (int)id)
      return sc_fail(EINVAL, "%s:%u: node %d is configured twice", path, line, (int)id);
  sc_conf_node entry = {.node = (int)id};
  int settings = 0;
  while ((word = strtok_r(NULL, " \t", &save)) != NULL) {
    if (conf_parse_setting(path, line, word, &entry) != 0)
      return -1;
    settings++;
  }
  if (settings == 0)
    return sc_fail(EINVAL, "%s:%u: node %d has no settings", path, line, (int)id);
  sc_conf_node *grown = realloc(conf->nodes, (conf->count + 1) * sizeof *grown);
  if (grown == NULL)
    return sc_fail(ENOMEM, "%s:%u: out of memory", path, line);
  conf->nodes = grown;
  conf->nodes[conf->count++] = entry;
  return 0;
}

/* The whole file, NUL-terminated, in a buffer to free (/dev/null reads
 * as empty); NULL after sc_fail
 * when it cannot be read, is not a regular file (a FIFO, socket or device
 * is refused, never waited on or read for ever: opened O_NONBLOCK, then
 * judged by its type) or passes SC_CONF_BYTES_MAX. */
static char *conf_read(const char *path, size_t *length) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st;
  if (fd < 0) {
    int err = errno;
    return sc_fail_null(err, "%s: cannot open: %s", path, strerror(err));
  }
  if (fstat(fd, &st) == 0 && sc_stat_is_null_device(&st)) { /* no configuration */
    close(fd);
    *length = 0;
    return calloc(1, 1);
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return sc_fail_null(EINVAL, "%s: not a regular file", path);
  }
  FILE *f = fdopen(fd, "r");
  if (f == NULL) {
    close(fd);
    return sc_fail_null(ENOMEM, "%s: out of memory", path);
  }
  char *text = malloc(SC_CONF_BYTES_MAX + 1);
  size_t n = text ? fread(text, 1, SC_CONF_BYTES_MAX + 1, f) : 0;
  int failed = text == NULL ? ENOMEM : ferror(f) ? EIO : n > SC_CONF_BYTES_MAX ? EFBIG : 0;
  fclose(f);
  free(failed != 0 ? text : NULL);
  if (failed == EFBIG)
    return sc_fail_null(EFBIG, "%s: longer than %d bytes", path, SC_CONF_BYTES_MAX);
  if (failed != 0)
    return sc_fail_null(failed, "%s: %s", path, failed == EIO ? "read error" : "out of memory");
  text[n] = '\0';
  *length = n;
  return text;
}

int sc_conf_parse(const char *path, const sc_topo *topo, sc_conf *conf) {
  memset(conf, 0, sizeof *conf);
  size_t length = 0;
  char *text = conf_read(path, &length);
  if (text == NULL)
    return -1;
  unsigned line = 0;
  int rc = 0;
  for (char *start = text; rc == 0 && start < text + length; line++) {
    char *end = memchr(start, '\n', (size_t)(text + length - start));
    if (end == NULL)
      end = text + length;
    size_t len = (size_t)(end - start);
    *end = '\0';
    if (line + 1 > SC_CONF_LINES_MAX)
      rc = sc_fail(EINVAL, "%s:%u: more than %d lines", path, line + 1, SC_CONF_LINES_MAX);
    else if (strlen(start) != len)
      rc = sc_fail(EINVAL, "%s:%u: a NUL byte in the line", path, line + 1);
    else if (len > SC_CONF_LINE_MAX)
      rc = sc_fail(EINVAL, "%s:%u: line longer than %d characters", path, line + 1,
                   SC_CONF_LINE_MAX);
    if (rc != 0)
      break;
    char *hash = strchr(start, '#');
    if (hash != NULL)
      *hash = '\0';
    start[strcspn(start, "\r")] = '\0';
    if (start[strspn(start, " \t")] != '\0')
      rc = conf_parse_line(path, line + 1, start, topo, conf);
    start = end + 1;
  }
  free(text);
  if (rc != 0)
    sc_conf_release(conf);
  return rc;
}

/* Configured values replace the firmware's for every initiator: they are
 * stored as seen from the node's nearest initiator, and other initiators
 * get estimates from them. */
void sc_conf_apply(const sc_conf *conf, sc_topo *topo) {
  for (unsigned c = 0; c < conf->count; c++) {
    const sc_perf_cell *set = &conf->nodes[c].perf;
    unsigned target = (unsigned)sc_topo_index(topo, conf->nodes[c].node);
    int nearest = sc_topo_nearest_initiator(topo, target);
    if (set->source != SICM_SOURCE_CONFIG || nearest < 0)
      continue;
    for (unsigned i = 0; i < topo->nnodes; i++) {
      sc_perf_cell *cell = sc_topo_perf(topo, i, target);
      int own = i == (unsigned)nearest;
      if (set->read_bandwidth) cell->read_bandwidth = own ? set->read_bandwidth : 0;
      if (set->write_bandwidth) cell->write_bandwidth = own ? set->write_bandwidth : 0;
      if (set->read_latency) cell->read_latency = own ? set->read_latency : 0;
      if (set->write_latency) cell->write_latency = own ? set->write_latency : 0;
      if (own)
        cell->source = SICM_SOURCE_CONFIG;
    }
  }
}

void sc_conf_release(sc_conf *conf) {
  free(conf->nodes);
  memset(conf, 0, sizeof *conf);
}
