/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm-info: prints the memory devices libsicm sees, how they rank, and
 * what decides how fast pages migrate on this machine, as a table or
 * (--json) as JSON. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/utsname.h>

#include "config.h"
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

/* ---- what decides migration speed here (README, "Migration speed") ---- */

typedef struct migration_factors {
  char thp_enabled[32], thp_defrag[32]; /* the selected words; "" when unknown */
  int init_on_alloc;                    /* 1, 0, or -1: unknown */
  char init_on_alloc_source[128];       /* where that was read */
  int cap_sys_nice;                     /* 1, 0, or -1: unknown */
} migration_factors;

/* The selected word of a sysfs choice ("always [madvise] never"). */
static void sysfs_choice(const char *path, char *out, size_t len) {
  char line[256];
  out[0] = '\0';
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return;
  if (fgets(line, sizeof line, f) != NULL) {
    char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
    if (close != NULL)
      snprintf(out, len, "%.*s", (int)(close - open - 1), open + 1);
  }
  fclose(f);
}

/* As the kernel's kstrtobool reads a boot option's value. */
static int boolean_word(const char *v) {
  return v[0] == '1' || v[0] == 'y' || v[0] == 'Y' || strncmp(v, "on", 2) == 0;
}

/* What the running kernel logged at boot ("mem auto-init: stack:off, heap
 * alloc:on, ..."), when this process may read the kernel log; 1, 0 or -1. */
static int init_on_alloc_logged(void) {
  int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
  char *log = size > 0 ? malloc((size_t)size + 1) : NULL;
  int n = log ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, size) : -1, found = -1;
  if (n > 0) {
    log[n] = '\0';
    const char *line = strstr(log, "mem auto-init:"), *alloc;
    if (line != NULL && (alloc = strstr(line, "heap alloc:")) != NULL)
      found = strncmp(alloc + strlen("heap alloc:"), "on", 2) == 0;
  }
  free(log);
  return found;
}

/* The command line wins (its last init_on_alloc=, as the kernel parses it);
 * then what the kernel logged at boot; then the built-in default in the
 * kernel's config file. */
static void init_on_alloc_read(migration_factors *m) {
  char buf[4096];
  m->init_on_alloc = -1;
  snprintf(m->init_on_alloc_source, sizeof m->init_on_alloc_source, "unknown");
  FILE *f = fopen("/proc/cmdline", "re");
  if (f != NULL) {
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (char *p = buf; (p = strstr(p, "init_on_alloc=")) != NULL; p++)
      if (p == buf || p[-1] == ' ') {
        m->init_on_alloc = boolean_word(p + strlen("init_on_alloc="));
        snprintf(m->init_on_alloc_source, sizeof m->init_on_alloc_source, "kernel command line");
      }
    if (m->init_on_alloc >= 0)
      return;
  }
  if ((m->init_on_alloc = init_on_alloc_logged()) >= 0) {
    snprintf(m->init_on_alloc_source, sizeof m->init_on_alloc_source, "kernel log at boot");
    return;
  }
  struct utsname u;
  char path[sizeof u.release + 16];
  if (uname(&u) != 0)
    return;
  snprintf(path, sizeof path, "/boot/config-%s", u.release);
  if ((f = fopen(path, "re")) == NULL)
    return;
  while (m->init_on_alloc < 0 && fgets(buf, sizeof buf, f) != NULL) {
    if (strncmp(buf, "CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y", 33) == 0)
      m->init_on_alloc = 1;
    else if (strncmp(buf, "# CONFIG_INIT_ON_ALLOC_DEFAULT_ON is not set", 44) == 0)
      m->init_on_alloc = 0;
  }
  fclose(f);
  if (m->init_on_alloc >= 0)
    snprintf(m->init_on_alloc_source, sizeof m->init_on_alloc_source, "kernel default (%s)", path);
}

/* Bit 23 of the effective capabilities: moving pages other processes map
 * too (MPOL_MF_MOVE_ALL, shared arenas) needs it. */
static int cap_sys_nice_read(void) {
  char line[256];
  unsigned long long caps;
  int found = -1;
  FILE *f = fopen("/proc/self/status", "re");
  if (f == NULL)
    return -1;
  while (found < 0 && fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "CapEff: %llx", &caps) == 1)
      found = (int)((caps >> 23) & 1);
  fclose(f);
  return found;
}

static void migration_factors_read(migration_factors *m) {
  sysfs_choice("/sys/kernel/mm/transparent_hugepage/enabled", m->thp_enabled,
               sizeof m->thp_enabled);
  sysfs_choice("/sys/kernel/mm/transparent_hugepage/defrag", m->thp_defrag, sizeof m->thp_defrag);
  init_on_alloc_read(m);
  m->cap_sys_nice = cap_sys_nice_read();
}

static const char *tristate(int v, const char *yes, const char *no) {
  return v < 0 ? "unknown" : v ? yes : no;
}

/* The jemalloc libsicm carries, and what it means for loading libsicm. */
static const char *jemalloc_words(const char **version) {
  return sicm_jemalloc_info(version) ? "libsicm's own build: libsicm loads with dlopen"
                                     : "the system's: libsicm cannot be loaded with dlopen";
}

static void print_migration_table(const migration_factors *m) {
  printf("\nmigration on this machine:\n");
  printf("  transparent huge pages: enabled [%s], defrag [%s]\n",
         m->thp_enabled[0] ? m->thp_enabled : "unknown",
         m->thp_defrag[0] ? m->thp_defrag : "unknown");
  printf("  init_on_alloc: %s (%s)%s\n", tristate(m->init_on_alloc, "on", "off"),
         m->init_on_alloc_source,
         m->init_on_alloc > 0 ? ": each page a migration allocates is zeroed first" : "");
  printf("  CAP_SYS_NICE: %s\n",
         tristate(m->cap_sys_nice, "yes: may move the pages of shared arenas",
                  "no: moving a shared arena fails with EPERM"));
}

static void usage(FILE *out) {
  fprintf(out, "usage: sicm-info [--json] [--initiator NODE] | --version | --help\n"
               "Lists the memory devices (NUMA node x page size) and their ranking\n"
               "seen from an initiator node (default: this thread's node), and what\n"
               "decides migration speed here: transparent huge pages, init_on_alloc,\n"
               "CAP_SYS_NICE.\n");
}

/* One device field's value.  Signed and unsigned numbers stay apart so that
 * both print exactly, whatever their range. */
typedef struct field_value {
  enum { VALUE_NULL, VALUE_BOOL, VALUE_INT, VALUE_UINT, VALUE_STRING } type;
  union {
    int b;
    long long i;
    unsigned long long u;
    const char *s;
  };
} field_value;

static field_value value_bool(int b) { return (field_value){.type = VALUE_BOOL, .b = b}; }
static field_value value_int(long long i) { return (field_value){.type = VALUE_INT, .i = i}; }
static field_value value_uint(unsigned long long u) {
  return (field_value){.type = VALUE_UINT, .u = u};
}
static field_value value_string(const char *s) {
  return (field_value){.type = VALUE_STRING, .s = s};
}

static field_value get_index(const sicm_device *d) { return value_uint(d->index); }
static field_value get_node(const sicm_device *d) { return value_int(d->node); }
static field_value get_kind(const sicm_device *d) {
  return value_string(sicm_device_kind_name(d->kind));
}
static field_value get_kind_source(const sicm_device *d) {
  return value_string(sicm_source_name(d->kind_source));
}
static field_value get_page_size(const sicm_device *d) { return value_uint(d->page_size); }
static field_value get_huge(const sicm_device *d) { return value_bool(d->huge); }
static field_value get_capacity(const sicm_device *d) { return value_uint(d->capacity); }
/* Null when the kernel cannot say (foreign topology). */
static field_value get_free(const sicm_device *d) {
  size_t free_bytes;
  if (sicm_device_get_free_bytes(d, &free_bytes) != 0)
    return (field_value){.type = VALUE_NULL};
  return value_uint(free_bytes);
}
static field_value get_has_cpus(const sicm_device *d) { return value_bool(d->has_cpus); }
static field_value get_perf_initiator(const sicm_device *d) { return value_int(d->perf.initiator); }
static field_value get_perf_source(const sicm_device *d) {
  return value_string(sicm_source_name(d->perf.source));
}
/* A performance figure; 0 means unknown (sicm.h), shown as null / "-". */
static field_value value_perf(uint64_t v) {
  return v ? value_uint(v) : (field_value){.type = VALUE_NULL};
}
static field_value get_read_bandwidth(const sicm_device *d) {
  return value_perf(d->perf.read_bandwidth);
}
static field_value get_write_bandwidth(const sicm_device *d) {
  return value_perf(d->perf.write_bandwidth);
}
static field_value get_read_latency(const sicm_device *d) {
  return value_perf(d->perf.read_latency);
}
static field_value get_write_latency(const sicm_device *d) {
  return value_perf(d->perf.write_latency);
}

/* How a number reads in the table; JSON always gets the raw number. */
typedef enum cell_style { CELL_PLAIN, CELL_BYTES, CELL_PARENS } cell_style;

/* JSON object a field sits in; each nested one starts a new line. */
typedef enum json_group { GROUP_DEVICE, GROUP_PERF } json_group;
static const char *const group_keys[] = {[GROUP_DEVICE] = NULL, [GROUP_PERF] = "perf"};

/* Every per-device field, in JSON order.  The table shows them in another
 * order (that of the columns people are used to), hence `column`. */
typedef struct device_field {
  unsigned column; /* 1-based table column, numbered without gaps; 0: JSON only */
  const char *header;
  int width; /* printf width of the column: negative left-aligns, 0 unpadded */
  cell_style style;
  json_group group;
  const char *key;
  field_value (*get)(const sicm_device *);
} device_field;

static const device_field device_fields[] = {
    {0, NULL, 0, CELL_PLAIN, GROUP_DEVICE, "index", get_index},
    {1, "node", -5, CELL_PLAIN, GROUP_DEVICE, "node", get_node},
    {2, "kind", -9, CELL_PLAIN, GROUP_DEVICE, "kind", get_kind},
    {11, "kind-src", -9, CELL_PLAIN, GROUP_DEVICE, "kind_source", get_kind_source},
    {5, "page", 9, CELL_BYTES, GROUP_DEVICE, "page_size", get_page_size},
    {0, NULL, 0, CELL_PLAIN, GROUP_DEVICE, "huge", get_huge},
    {3, "capacity", 11, CELL_BYTES, GROUP_DEVICE, "capacity", get_capacity},
    {4, "free", 11, CELL_BYTES, GROUP_DEVICE, "free", get_free},
    {10, "cpus", -5, CELL_PLAIN, GROUP_DEVICE, "has_cpus", get_has_cpus},
    {13, "(from node)", 0, CELL_PARENS, GROUP_PERF, "initiator", get_perf_initiator},
    {12, "perf-src", 0, CELL_PLAIN, GROUP_PERF, "source", get_perf_source},
    {6, "rd MB/s", 10, CELL_PLAIN, GROUP_PERF, "read_bandwidth", get_read_bandwidth},
    {7, "wr MB/s", 10, CELL_PLAIN, GROUP_PERF, "write_bandwidth", get_write_bandwidth},
    {8, "rd ns", 7, CELL_PLAIN, GROUP_PERF, "read_latency", get_read_latency},
    {9, "wr ns", 7, CELL_PLAIN, GROUP_PERF, "write_latency", get_write_latency},
};
#define NFIELDS (sizeof device_fields / sizeof device_fields[0])

/* Human-readable byte count into buf. */
static const char *format_bytes(char *buf, size_t len, unsigned long long bytes) {
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

/* The text of a table cell, in buf unless it is a constant. */
static const char *cell_text(char *buf, size_t len, field_value v, cell_style style) {
  switch (v.type) {
  case VALUE_NULL:
    return "-";
  case VALUE_BOOL:
    return v.b ? "yes" : "no";
  case VALUE_STRING:
    return v.s;
  case VALUE_INT:
    snprintf(buf, len, style == CELL_PARENS ? "(%lld)" : "%lld", v.i);
    return buf;
  case VALUE_UINT:
    if (style == CELL_BYTES)
      return format_bytes(buf, len, v.u);
    snprintf(buf, len, style == CELL_PARENS ? "(%llu)" : "%llu", v.u);
    return buf;
  }
  return "-";
}

/* What a ranking's values are and where they came from: a ranking by
 * bandwidth or latency that some device has no figure for falls back to
 * NUMA distance (sicm_rank(3)), and says so. */
static const char *rank_unit(sicm_rank_by by, sicm_source source) {
  static char text[96];
  if (by == SICM_RANK_NEAREST || (source == SICM_SOURCE_TOPOLOGY && by != SICM_RANK_CAPACITY))
    snprintf(text, sizeof text, "(NUMA distance, lower first%s)",
             by == SICM_RANK_NEAREST ? "" : "; no figure for every device");
  else
    snprintf(text, sizeof text, "(%s, from %s)",
             by == SICM_RANK_BANDWIDTH ? "MB/s, higher first"
             : by == SICM_RANK_LATENCY ? "ns, lower first"
                                       : "bytes, larger first",
             sicm_source_name(source));
  return text;
}

/* The unit of a ranking's values, for JSON. */
static const char *rank_json_unit(sicm_rank_by by, sicm_source source) {
  if (by == SICM_RANK_CAPACITY)
    return "bytes";
  if (by == SICM_RANK_NEAREST || source == SICM_SOURCE_TOPOLOGY)
    return "distance";
  return by == SICM_RANK_BANDWIDTH ? "MB/s" : "ns";
}

/* Fills cols with the table's fields in column order; returns how many. */
static size_t table_columns(const device_field **cols) {
  size_t n = 0;
  for (size_t f = 0; f < NFIELDS; f++)
    if (device_fields[f].column > 0) {
      cols[device_fields[f].column - 1] = &device_fields[f];
      n++;
    }
  return n;
}

static void print_cell(size_t col, size_t ncols, int width, const char *text) {
  printf("%s%*s%s", col > 0 ? " " : "", width, text, col + 1 == ncols ? "\n" : "");
}

static void print_table(const sicm_device_list *list, int initiator, const ranking *ranks,
                        const migration_factors *m) {
  const device_field *cols[NFIELDS];
  size_t ncols = table_columns(cols);
  for (size_t c = 0; c < ncols; c++)
    print_cell(c, ncols, cols[c]->width, cols[c]->header);
  for (unsigned i = 0; i < list->count; i++) {
    for (size_t c = 0; c < ncols; c++) {
      char buf[32];
      field_value v = cols[c]->get(&list->devices[i]);
      print_cell(c, ncols, cols[c]->width, cell_text(buf, sizeof buf, v, cols[c]->style));
    }
  }
  printf("\nranking seen from node %d, best first (node=value; h: huge pages):\n", initiator);
  for (size_t c = 0; c < NCRITERIA; c++) {
    printf("  %-9s %s:", sicm_rank_by_name(criteria[c]), rank_unit(criteria[c], ranks[c].source));
    for (int i = 0; i < ranks[c].count; i++) {
      char buf[32];
      const sicm_rank_entry *e = &ranks[c].entries[i];
      printf(" %d%s=%s", e->device->node, e->device->huge ? "h" : "",
             criteria[c] == SICM_RANK_CAPACITY
                 ? format_bytes(buf, sizeof buf, e->value)
                 : (snprintf(buf, sizeof buf, "%llu", (unsigned long long)e->value), buf));
    }
    printf("\n");
  }
  print_migration_table(m);
  const char *version;
  const char *words = jemalloc_words(&version);
  printf("\nlibsicm %s, jemalloc %s (%s)\n", PACKAGE_VERSION, version, words);
}

/* Every string in the JSON goes through here.  No device field can hold a
 * quote or a control character today (kinds and sources are fixed names),
 * but one source of truth keeps the output valid if that ever changes. */
static void json_string(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p < 0x20)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

static void json_key(const char *key) {
  json_string(key);
  printf(": ");
}

/* A nested object of a device starts on its own line. */
static void json_open_nested(const char *key) {
  printf(",\n     ");
  json_key(key);
  putchar('{');
}

static void json_value(field_value v) {
  switch (v.type) {
  case VALUE_NULL:
    printf("null");
    break;
  case VALUE_BOOL:
    printf("%s", v.b ? "true" : "false");
    break;
  case VALUE_INT:
    printf("%lld", v.i);
    break;
  case VALUE_UINT:
    printf("%llu", v.u);
    break;
  case VALUE_STRING:
    json_string(v.s);
    break;
  }
}

static void print_json_device(const sicm_device_list *list, const sicm_device *d) {
  json_group group = GROUP_DEVICE;
  printf("    {");
  for (size_t f = 0; f < NFIELDS; f++) {
    const device_field *field = &device_fields[f];
    if (field->group != group) {
      if (group != GROUP_DEVICE)
        putchar('}');
      if (field->group != GROUP_DEVICE)
        json_open_nested(group_keys[field->group]);
      else
        printf(", ");
      group = field->group;
    } else if (f > 0) {
      printf(", ");
    }
    json_key(field->key);
    json_value(field->get(d));
  }
  if (group != GROUP_DEVICE)
    putchar('}');
  /* Distances are between nodes, so huge-page devices would repeat them. */
  json_open_nested("distance");
  int first = 1;
  for (unsigned j = 0; j < list->count; j++) {
    if (list->devices[j].huge)
      continue;
    char node[16];
    snprintf(node, sizeof node, "%d", list->devices[j].node);
    printf("%s", first ? "" : ", ");
    json_key(node);
    printf("%d", sicm_node_distance(d->node, list->devices[j].node));
    first = 0;
  }
  printf("}}");
}


static void json_tristate(int v) { printf("%s", v < 0 ? "null" : v ? "true" : "false"); }

static void print_json_migration(const migration_factors *m) {
  printf("  \"migration\": {\"thp_enabled\": ");
  m->thp_enabled[0] ? json_string(m->thp_enabled) : (void)printf("null");
  printf(", \"thp_defrag\": ");
  m->thp_defrag[0] ? json_string(m->thp_defrag) : (void)printf("null");
  printf(", \"init_on_alloc\": ");
  json_tristate(m->init_on_alloc);
  printf(", \"init_on_alloc_source\": ");
  json_string(m->init_on_alloc_source);
  printf(", \"cap_sys_nice\": ");
  json_tristate(m->cap_sys_nice);
  printf("}\n");
}

static void print_json(const sicm_device_list *list, int initiator, const ranking *ranks,
                       const migration_factors *m) {
  printf("{\n  \"initiator\": %d,\n  \"devices\": [\n", initiator);
  for (unsigned i = 0; i < list->count; i++) {
    print_json_device(list, &list->devices[i]);
    printf("%s\n", i + 1 < list->count ? "," : "");
  }
  printf("  ],\n  \"rankings\": {\n");
  for (size_t c = 0; c < NCRITERIA; c++) {
    printf("    ");
    json_key(sicm_rank_by_name(criteria[c]));
    printf("{\"source\": ");
    json_string(sicm_source_name(ranks[c].source));
    printf(", \"unit\": ");
    json_string(rank_json_unit(criteria[c], ranks[c].source));
    printf(", \"order\": [");
    for (int i = 0; i < ranks[c].count; i++) {
      const sicm_rank_entry *e = &ranks[c].entries[i];
      printf("%s{\"device\": %u, \"node\": %d, \"value\": %llu, \"source\": ", i ? ", " : "",
             e->device->index, e->device->node, (unsigned long long)e->value);
      json_string(sicm_source_name(e->source));
      putchar('}');
    }
    printf("]}%s\n", c + 1 < NCRITERIA ? "," : "");
  }
  printf("  },\n");
  const char *version;
  int own = sicm_jemalloc_info(&version);
  printf("  \"library\": {\"version\": ");
  json_string(PACKAGE_VERSION);
  printf(", \"jemalloc\": ");
  json_string(version);
  printf(", \"jemalloc_private\": %s, \"dlopen_safe\": %s},\n", own ? "true" : "false",
         own ? "true" : "false");
  print_json_migration(m);
  printf("}\n");
}

int main(int argc, char **argv) {
  int json = 0, initiator = SICM_INITIATOR_SELF;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--initiator") == 0 && i + 1 < argc) {
      /* A whole number in int's range: "" or "4294967296" is no node. */
      char *end;
      const char *arg = argv[++i];
      errno = 0;
      long node = strtol(arg, &end, 10);
      initiator = (int)node;
      if (end == arg || *end != '\0' || errno != 0 || node < INT_MIN || node > INT_MAX) {
        usage(stderr);
        return 2;
      }
    } else if (strcmp(argv[i], "--version") == 0) {
      const char *version;
      const char *words = jemalloc_words(&version);
      printf("sicm-info (libsicm) %s\njemalloc %s (%s)\n", PACKAGE_VERSION, version, words);
      return 0;
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
  migration_factors factors;
  migration_factors_read(&factors);
  if (rc != 0)
    fprintf(stderr, "sicm-info: %s (%s)\n", sicm_error_detail(), strerror(errno));
  else if (json)
    print_json(list, initiator, ranks, &factors);
  else
    print_table(list, initiator, ranks, &factors);
  for (size_t c = 0; c < NCRITERIA; c++)
    free(ranks[c].entries);
  sicm_fini();
  return rc == 0 ? 0 : 1;
}
