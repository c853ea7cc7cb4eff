/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_conf.c: SICM_PRELOAD, the one variable that configures
 * libsicm-preload.so, read into pl_conf: the threshold, the chain of
 * tiers (the chosen device or devices, then where to spill), the budget,
 * the reserve, the page size and the statistics.  One table holds its
 * keys; the grammar is every setting's (base_settings.h, sicm(7)
 * SETTINGS), so that
 *   SICM_PRELOAD=min=1M,device=hbm,spill=dram+capacity
 * Any error is reported once on stderr and leaves the preload inactive. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base_settings.h"
#include "preload.h"

pl_config pl_conf;

#define PL_DEFAULT_MIN ((size_t)1 << 20)
#define PL_DEFAULT_RESERVE ((size_t)32 << 20)

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

sicm_device *pl_device_resolve(const char *name, sicm_rank_by *rank) {
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

/* Whether an earlier tier makes `devs` a repeat: one device that any
 * tier holds already (the ranking reached it again, or it was listed
 * twice), or several that a tier spreads over in the same way. */
static int tier_known(sicm_device *const *devs, unsigned n, unsigned flags) {
  for (unsigned i = 0; i < pl_conf.ntiers; i++) {
    const pl_tier *t = &pl_conf.tiers[i];
    if (n > 1 && t->flags == flags && t->ndevices == n &&
        memcmp(t->devices, devs, n * sizeof *devs) == 0)
      return 1;
    for (unsigned d = 0; n == 1 && d < t->ndevices; d++)
      if (t->devices[d] == devs[0])
        return 1;
  }
  return 0;
}

static int tier_add(sicm_device *const *devs, unsigned n, unsigned flags) {
  if (tier_known(devs, n, flags))
    return 0;
  if (pl_conf.ntiers == PL_TIERS_MAX) {
    pl_warn("spill: too many devices (at most 8 in the chain)", "");
    return -1;
  }
  pl_tier *t = &pl_conf.tiers[pl_conf.ntiers++];
  memset(t, 0, sizeof *t);
  memcpy(t->devices, devs, n * sizeof *devs);
  t->ndevices = n;
  t->flags = flags;
  t->budget = SIZE_MAX;
  return 0;
}

/* One tier of the chain: a device name, or weighted: or interleave:
 * followed by two or more names joined by '/' (the pages of its arenas
 * go over them in proportion to the kernel's weights, or evenly).  *rank:
 * the ranking of its first device, for spill=rank. */
static int tier_parse(const char *text, sicm_rank_by *rank) {
  static const struct { const char *prefix; unsigned flags; } spread[] = {
      {"weighted:", SICM_ARENA_WEIGHTED}, {"interleave:", SICM_ARENA_INTERLEAVE}};
  unsigned flags = SICM_ARENA_PREFERRED;
  for (size_t i = 0; i < sizeof spread / sizeof spread[0]; i++) {
    size_t len = strlen(spread[i].prefix);
    if (strncmp(text, spread[i].prefix, len) == 0) {
      flags = spread[i].flags;
      text += len;
      break;
    }
  }
  if (flags == SICM_ARENA_PREFERRED && strchr(text, '/') != NULL) {
    pl_warn("several devices make a tier only after weighted: or interleave: ", text);
    return -1;
  }
  sicm_device *devs[PL_TIER_DEVICES_MAX];
  unsigned n = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", text);
  char *save = NULL;
  for (char *name = strtok_r(list, "/", &save); name != NULL; name = strtok_r(NULL, "/", &save)) {
    sicm_rank_by name_rank;
    if (n == PL_TIER_DEVICES_MAX) {
      pl_warn("too many devices in one tier (at most 8): ", text);
      return -1;
    }
    if ((devs[n] = pl_device_resolve(name, &name_rank)) == NULL)
      return -1;
    for (unsigned i = 0; i < n; i++)
      if (devs[i] == devs[n]) {
        pl_warn("a device listed twice in one tier: ", name);
        return -1;
      }
    if (n++ == 0)
      *rank = name_rank;
  }
  if (n < (flags == SICM_ARENA_PREFERRED ? 1u : 2u)) {
    pl_warn(flags == SICM_ARENA_PREFERRED ? "no device named: "
                                          : "weighted: and interleave: take two or more "
                                            "devices joined by /: ",
            text);
    return -1;
  }
  return tier_add(devs, n, flags);
}

static int spill_load(const char *spill, sicm_rank_by rank) {
  if (strcmp(spill, "none") == 0)
    return 0;
  if (strcmp(spill, "rank") == 0) {
    sicm_rank_entry order[64];
    int n = sicm_rank(rank, SICM_INITIATOR_SELF, order, 64, NULL);
    for (int k = 0; k < n && k < 64 && pl_conf.ntiers < PL_TIERS_MAX; k++)
      if (!order[k].device->huge && tier_add(&order[k].device, 1, SICM_ARENA_PREFERRED) != 0)
        return -1;
    return 0;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", spill);
  char *save = NULL;
  for (char *name = strtok_r(list, "+", &save); name != NULL; name = strtok_r(NULL, "+", &save)) {
    sicm_rank_by unused;
    if (tier_parse(name, &unused) != 0)
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

/* What the items set, before the devices are resolved. */
typedef struct conf_text {
  char device[256], spill[256];
  size_t budget;
} conf_text;

static int set_min(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return sc_setting_size(v, &pl_conf.min) != 0 || pl_conf.min == 0 ? -1 : 0;
}

static int set_budget(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  return sc_setting_size(v, &((conf_text *)ctx)->budget);
}

static int set_reserve(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return sc_setting_size(v, &pl_conf.reserve);
}

static int set_device(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  conf_text *t = ctx;
  return snprintf(t->device, sizeof t->device, "%s", v) >= (int)sizeof t->device ? -1 : 0;
}

static int set_spill(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  conf_text *t = ctx;
  return snprintf(t->spill, sizeof t->spill, "%s", v) >= (int)sizeof t->spill ? -1 : 0;
}

static int set_stats(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  int on;
  if (sc_setting_bool(v, &on) == 0 || strcmp(v, "stderr") == 0) {
    pl_conf.stats = strcmp(v, "stderr") == 0 || on;
    return 0;
  }
  pl_conf.stats = 1;
  return snprintf(pl_conf.stats_path, sizeof pl_conf.stats_path, "%s", v) >=
                 (int)sizeof pl_conf.stats_path ? -1 : 0;
}

static int set_sites(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  unsigned long depth;
  if (sc_setting_uint(v, 0, PL_SITE_DEPTH_MAX, &depth) != 0)
    return -1;
  pl_conf.site_depth = (unsigned)depth;
  return 0;
}

static int set_small(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  pl_conf.small_process = strcmp(v, "process") == 0;
  return pl_conf.small_process || strcmp(v, "sicm") == 0 ? 0 : -1;
}

static int set_pages(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  pl_conf.page_flags = strcmp(v, "huge") == 0   ? SICM_ARENA_HUGEPAGES
                       : strcmp(v, "base") == 0 ? SICM_ARENA_NOHUGEPAGES
                                                : 0;
  return pl_conf.page_flags || strcmp(v, "system") == 0 ? 0 : -1;
}

static int set_signal(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  pl_conf.stats_signal = signal_parse(v);
  return pl_conf.stats_signal < 0 ? -1 : 0;
}

/* SICM_PRELOAD's keys, in the order sicm(7) gives them. */
static const sc_setting preload_keys[] = {
    {"min", "a SIZE above 0, such as 1M", set_min},
    {"device", "hbm, dram, capacity, high_bw, low_lat, large_cap, node:N, or weighted: or "
               "interleave: and such names joined by /", set_device},
    {"spill", "rank, none or TIER[+TIER...], each a device as device= takes", set_spill},
    {"budget", "a SIZE such as 800M", set_budget},
    {"reserve", "a SIZE such as 32M", set_reserve},
    {"sites", "0 to 16", set_sites},
    {"stats", "on, off, stderr or a path", set_stats},
    {"small", "sicm or process", set_small},
    {"pages", "huge, base or system", set_pages},
    {"signal", "USR1, USR2, HUP, PROF or a real-time signal number", set_signal},
};

int pl_config_load(const char *text) {
  memset(&pl_conf, 0, sizeof pl_conf);
  pl_conf.min = PL_DEFAULT_MIN;
  pl_conf.reserve = PL_DEFAULT_RESERVE;
  conf_text t = {.device = "high_bw", .spill = "rank", .budget = SIZE_MAX};
  int on;
  char why[SC_SETTINGS_WHY_MAX];
  if (text != NULL && *text != '\0' && sc_setting_bool(text, &on) != 0 &&
      sc_settings_parse("libsicm-preload", "SICM_PRELOAD", text, preload_keys,
                        sizeof preload_keys / sizeof preload_keys[0], &t, why, sizeof why) != 0) {
    pl_warn("SICM_PRELOAD: ", why);
    return -1;
  }
  snprintf(pl_conf.device_spec, sizeof pl_conf.device_spec, "%s", t.device);
  sicm_rank_by rank;
  if (tier_parse(t.device, &rank) != 0 || spill_load(t.spill, rank) != 0)
    return -1;
  pl_conf.tiers[0].budget = t.budget;
  return 0;
}
