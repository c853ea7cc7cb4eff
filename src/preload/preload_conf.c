/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_conf.c: SICM_PRELOAD, the one variable that configures
 * libsicm-preload.so, read into pl_conf: the threshold, the chain of
 * devices (the chosen one, then where to spill), the budget, the reserve
 * and the statistics.  Grammar (README, "Unmodified programs"):
 *   key=value[;key=value]...   keys: min device spill budget reserve sites small stats
 *                              signal
 * Any error is reported once on stderr and leaves the preload inactive. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "preload.h"

pl_config pl_conf;

#define PL_DEFAULT_MIN ((size_t)1 << 20)
#define PL_DEFAULT_RESERVE ((size_t)32 << 20)

/* A size with an optional binary suffix: 4096, 64K, 1M, 1.5G, 2GiB.  The
 * number is digits with at most one decimal point between digits: strtod
 * alone would take "nan", "inf", hexadecimal and exponents. */
static int parse_size(const char *s, size_t *out) {
  size_t number = strspn(s, "0123456789");
  if (number > 0 && s[number] == '.') {
    size_t fraction = strspn(s + number + 1, "0123456789");
    number = fraction > 0 ? number + 1 + fraction : 0;
  }
  char *end;
  errno = 0;
  double v = number > 0 ? strtod(s, &end) : 0;
  if (number == 0 || errno != 0 || end != s + number)
    return -1;
  double scale = 1;
  switch (*end) {
  case 'k': case 'K': scale = 1024.0; end++; break;
  case 'm': case 'M': scale = 1024.0 * 1024; end++; break;
  case 'g': case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
  case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: break;
  }
  if (scale > 1 && strcasecmp(end, "iB") == 0)
    end += 2;
  else if (strcasecmp(end, "B") == 0)
    end++;
  if (*end != '\0' || v * scale >= 18446744073709551615.0)
    return -1;
  *out = (size_t)(v * scale);
  return 0;
}

/* What a device name asks for, and the ranking its default spill follows. */
typedef struct device_spec {
  const char *name;
  sicm_device_kind kind;  /* SICM_KIND_UNKNOWN: any kind, first of the ranking */
  sicm_rank_by rank;
} device_spec;

static const device_spec specs[] = {
    {"hbm", SICM_KIND_HBM, SICM_RANK_BANDWIDTH},
    {"dram", SICM_KIND_DRAM, SICM_RANK_NEAREST},
    {"capacity", SICM_KIND_CAPACITY, SICM_RANK_NEAREST},
    {"high_bw", SICM_KIND_UNKNOWN, SICM_RANK_BANDWIDTH},
    {"low_lat", SICM_KIND_UNKNOWN, SICM_RANK_LATENCY},
    {"large_cap", SICM_KIND_UNKNOWN, SICM_RANK_CAPACITY},
};

/* The base-page device `name` names (see specs, or node:N); its ranking
 * in *rank.  NULL after a message. */
static sicm_device *device_resolve(const char *name, sicm_rank_by *rank) {
  if (strncmp(name, "node:", 5) == 0) {
    char *end;
    errno = 0;
    long node = strtol(name + 5, &end, 10);
    sicm_device *dev = NULL;
    if (end != name + 5 && *end == '\0' && errno == 0 && node >= 0 && node < 1 << 20)
      dev = sicm_device_of_node((int)node, 0);
    if (dev == NULL)
      pl_warn("no such device (sicm-info lists the nodes): ", name);
    *rank = SICM_RANK_BANDWIDTH;
    return dev;
  }
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    if (strcmp(name, specs[i].name) != 0)
      continue;
    *rank = specs[i].rank;
    sicm_rank_entry order[64];
    int n = sicm_rank(specs[i].rank, SICM_INITIATOR_SELF, order, 64, NULL);
    for (int k = 0; k < n && k < 64; k++) {
      sicm_device *dev = order[k].device;
      if (!dev->huge && (specs[i].kind == SICM_KIND_UNKNOWN || dev->kind == specs[i].kind))
        return dev;
    }
    pl_warn("this machine has no device of that kind (sicm-info lists them): ", name);
    return NULL;
  }
  pl_warn("unknown device (hbm, dram, capacity, high_bw, low_lat, large_cap or node:N): ",
          name);
  return NULL;
}

static int tier_add(sicm_device *dev) {
  for (unsigned i = 0; i < pl_conf.ntiers; i++)
    if (pl_conf.tiers[i].device == dev)
      return 0; /* listed twice, or the ranking reached the first device again */
  if (pl_conf.ntiers == PL_TIERS_MAX) {
    pl_warn("spill: too many devices (at most 8 in the chain)", "");
    return -1;
  }
  pl_tier *t = &pl_conf.tiers[pl_conf.ntiers++];
  memset(t, 0, sizeof *t);
  t->device = dev;
  t->budget = SIZE_MAX;
  return 0;
}

static int spill_load(const char *spill, sicm_rank_by rank) {
  if (strcmp(spill, "none") == 0)
    return 0;
  if (strcmp(spill, "rank") == 0) {
    sicm_rank_entry order[64];
    int n = sicm_rank(rank, SICM_INITIATOR_SELF, order, 64, NULL);
    for (int k = 0; k < n && k < 64 && pl_conf.ntiers < PL_TIERS_MAX; k++)
      if (!order[k].device->huge && tier_add(order[k].device) != 0)
        return -1;
    return 0;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", spill);
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
    sicm_rank_by unused;
    sicm_device *dev = device_resolve(name, &unused);
    if (dev == NULL || tier_add(dev) != 0)
      return -1;
  }
  return 0;
}

static int signal_parse(const char *s) {
  static const struct { const char *name; int sig; } names[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"PROF", SIGPROF}};
  if (strncasecmp(s, "SIG", 3) == 0)
    s += 3;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0)
      return names[i].sig;
  char *end;
  long v = strtol(s, &end, 10);
  if (end != s && *end == '\0' && v >= SIGRTMIN && v <= SIGRTMAX)
    return (int)v;
  return -1;
}

/* Trim spaces at both ends, in place. */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

int pl_config_load(const char *text) {
  memset(&pl_conf, 0, sizeof pl_conf);
  pl_conf.min = PL_DEFAULT_MIN;
  pl_conf.reserve = PL_DEFAULT_RESERVE;
  char device[64] = "high_bw", spill[256] = "rank";
  size_t budget = SIZE_MAX;
  char copy[1024];
  if (text == NULL)
    text = "";
  if (strlen(text) >= sizeof copy) {
    pl_warn("SICM_PRELOAD is longer than 1023 characters", "");
    return -1;
  }
  strcpy(copy, text);
  char *save = NULL;
  for (char *item = strtok_r(copy, ";", &save); item != NULL; item = strtok_r(NULL, ";", &save)) {
    item = trim(item);
    if (*item == '\0')
      continue;
    char *eq = strchr(item, '=');
    if (eq == NULL) {
      pl_warn("SICM_PRELOAD: expected key=value, got: ", item);
      return -1;
    }
    *eq = '\0';
    char *key = trim(item), *value = trim(eq + 1);
    int bad = 0;
    if (strcmp(key, "min") == 0)
      bad = parse_size(value, &pl_conf.min) != 0 || pl_conf.min == 0;
    else if (strcmp(key, "budget") == 0)
      bad = parse_size(value, &budget) != 0;
    else if (strcmp(key, "reserve") == 0)
      bad = parse_size(value, &pl_conf.reserve) != 0;
    else if (strcmp(key, "device") == 0)
      bad = snprintf(device, sizeof device, "%s", value) >= (int)sizeof device || !*value;
    else if (strcmp(key, "spill") == 0)
      bad = snprintf(spill, sizeof spill, "%s", value) >= (int)sizeof spill || !*value;
    else if (strcmp(key, "stats") == 0) {
      pl_conf.stats = strcmp(value, "0") != 0;
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0 && strcmp(value, "stderr") != 0)
        bad = snprintf(pl_conf.stats_path, sizeof pl_conf.stats_path, "%s", value) >=
              (int)sizeof pl_conf.stats_path;
    } else if (strcmp(key, "sites") == 0) {
      char *end;
      long depth = strtol(value, &end, 10);
      bad = !*value || *end || depth < 0 || depth > PL_SITE_DEPTH_MAX;
      pl_conf.site_depth = bad ? 0 : (unsigned)depth;
    } else if (strcmp(key, "small") == 0) {
      pl_conf.small_process = strcmp(value, "process") == 0;
      bad = !pl_conf.small_process && strcmp(value, "sicm") != 0;
    } else if (strcmp(key, "signal") == 0) {
      pl_conf.stats_signal = signal_parse(value);
      bad = pl_conf.stats_signal < 0;
    } else {
      pl_warn("SICM_PRELOAD: unknown key (min, device, spill, budget, reserve, sites, small, "
              "stats, signal): ",
              key);
      return -1;
    }
    if (bad) {
      char what[160];
      snprintf(what, sizeof what, "%s=%s", key, value);
      pl_warn("SICM_PRELOAD: bad value (sizes are like 4096, 64K, 1M, 2G; sites is 0 to 16; "
              "small is sicm or process): ",
              what);
      return -1;
    }
  }
  snprintf(pl_conf.device_spec, sizeof pl_conf.device_spec, "%s", device);
  sicm_rank_by rank;
  sicm_device *first = device_resolve(device, &rank);
  if (first == NULL || tier_add(first) != 0 || spill_load(spill, rank) != 0)
    return -1;
  pl_conf.tiers[0].budget = budget;
  return 0;
}
