/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_conf.c: the placer's configuration — its defaults, the checks
 * every configuration passes (from sicm_autoplace_start() or from
 * SICM_AUTOPLACE), and the table of SICM_AUTOPLACE's keys, read in the
 * grammar of every setting (base_settings.h; sicm(7) documents both). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoplace.h"
#include "base_settings.h"

int sicm_autoplace_config_init(sicm_autoplace_config *c) {
  if (c == NULL)
    return sc_fail(EINVAL, "sicm_autoplace_config_init: c is NULL");
  if (sc_state_get() == NULL)
    return -1;
  memset(c, 0, sizeof *c);
  sicm_device *fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF);
  if (fast == NULL)
    return sc_fail(ENODEV, "no device to be the fast tier");
  c->ndevices = 1;
  c->devices[0] = fast;
  c->reserve = (size_t)64 << 20;
  c->interval_ms = 1000;
  c->half_life = 1;
  c->arenas = SICM_AUTOPLACE_ALL;
  c->cpu_share = SC_AUTOPLACE_CPU_DEFAULT;
  return 0;
}

int sc_autoplace_config_check(const sicm_autoplace_config *c) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  if (c == NULL)
    return sc_fail(EINVAL, "sicm_autoplace_start: the configuration is NULL");
  if (c->ndevices > SICM_ARENA_DEVICES_MAX)
    return sc_fail(EINVAL, "the fast tier has 1 to %d devices, not %u", SICM_ARENA_DEVICES_MAX,
                   c->ndevices);
  /* No device: the placer takes the default fast tier, so the checks
   * (the budget's among them) are made against it. */
  sicm_device *best = NULL, *const *devices = c->devices;
  unsigned ndevices = c->ndevices;
  if (ndevices == 0) {
    if ((best = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF)) == NULL)
      return sc_fail(ENODEV, "no device to be the fast tier");
    devices = &best;
    ndevices = 1;
  }
  size_t capacity = 0;
  for (unsigned i = 0; i < ndevices; i++) {
    if (!sc_device_is_known(s, devices[i]))
      return sc_fail(EINVAL, "fast device %u is not from sicm_devices()", i);
    if (devices[i]->huge)
      return sc_fail(EINVAL, "fast device %u (node %d) has huge pages; the placer moves arenas of "
                             "base pages", i, devices[i]->node);
    for (unsigned j = 0; j < i; j++)
      if (devices[j] == devices[i])
        return sc_fail(EINVAL, "fast device %u is listed twice", i);
    capacity += devices[i]->capacity;
  }
  if (c->interval_ms < 10 || c->interval_ms > 3600000)
    return sc_fail(EINVAL, "the interval is 10 ms to 1 h, not %u ms", c->interval_ms);
  if (c->half_life == 0 || c->half_life > 1000)
    return sc_fail(EINVAL, "the half-life is 1 to 1000 intervals, not %u", c->half_life);
  if (c->arenas != SICM_AUTOPLACE_ALL && c->arenas != SICM_AUTOPLACE_FLAGGED)
    return sc_fail(EINVAL, "arenas is SICM_AUTOPLACE_ALL or _FLAGGED, not %u", c->arenas);
  if (!(c->cpu_share >= 0 && c->cpu_share <= 1)) /* NaN too */
    return sc_fail(EINVAL, "cpu_share is a share of one core, 0 to 1, not %g", c->cpu_share);
  if (c->monitor_only != 0 && c->monitor_only != 1)
    return sc_fail(EINVAL, "monitor_only is 0 or 1, not %d", c->monitor_only);
  if (c->reserve > capacity)
    return sc_fail(EINVAL, "a reserve of %zu bytes is more than the fast tier's %zu: nothing would "
                           "ever move", c->reserve, capacity);
  if (c->budget > capacity)
    return sc_fail(EINVAL, "a budget of %zu bytes is more than the fast tier's %zu", c->budget,
                   capacity);
  return 0;
}

int sc_autoplace_config_complete(const sicm_autoplace_config *c, sicm_autoplace_config *out) {
  *out = *c;
  if (out->ndevices == 0) {
    if (sicm_autoplace_config_init(out) != 0)
      return -1;
    out->budget = c->budget;
    out->reserve = c->reserve;
    out->interval_ms = c->interval_ms;
    out->half_life = c->half_life;
    out->arenas = c->arenas;
    out->monitor_only = c->monitor_only;
    out->cpu_share = c->cpu_share;
  }
  if (out->cpu_share == 0) /* 0: the default */
    out->cpu_share = SC_AUTOPLACE_CPU_DEFAULT;
  return 0;
}

static int set_fast(void *ctx, const char *v, char *why, size_t len) {
  sicm_autoplace_config *c = ctx;
  char list[SC_SETTINGS_TEXT_MAX];
  snprintf(list, sizeof list, "%s", v);
  c->ndevices = 0;
  for (char *part = list, *next; part != NULL; part = next) {
    next = strchr(part, '+');
    if (next != NULL)
      *next++ = '\0';
    unsigned long node;
    if (sc_setting_uint(part, 0, SC_NODES_MAX - 1, &node) != 0 ||
        c->ndevices == SICM_ARENA_DEVICES_MAX)
      return -1;
    sicm_device *d = sicm_device_of_node((int)node, 0);
    if (d == NULL) {
      snprintf(why, len, "no device on node %lu", node);
      return -1;
    }
    c->devices[c->ndevices++] = d;
  }
  return 0;
}

static int set_budget(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  return sc_setting_size(v, &((sicm_autoplace_config *)ctx)->budget);
}

static int set_reserve(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  return sc_setting_size(v, &((sicm_autoplace_config *)ctx)->reserve);
}

static int set_interval(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  uint64_t ns;
  if (sc_setting_time_ns(v, 1000000, &ns) != 0 || ns % 1000000 != 0 || ns < 10000000ull ||
      ns > 3600000000000ull)
    return -1;
  ((sicm_autoplace_config *)ctx)->interval_ms = (unsigned)(ns / 1000000);
  return 0;
}

static int set_halflife(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  unsigned long n;
  if (sc_setting_uint(v, 1, 1000, &n) != 0)
    return -1;
  ((sicm_autoplace_config *)ctx)->half_life = (unsigned)n;
  return 0;
}

static int set_arenas(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  unsigned *arenas = &((sicm_autoplace_config *)ctx)->arenas;
  if (strcmp(v, "all") == 0)
    *arenas = SICM_AUTOPLACE_ALL;
  else if (strcmp(v, "flagged") == 0)
    *arenas = SICM_AUTOPLACE_FLAGGED;
  else
    return -1;
  return 0;
}

static int set_mode(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  int *monitor_only = &((sicm_autoplace_config *)ctx)->monitor_only;
  if (strcmp(v, "place") != 0 && strcmp(v, "monitor") != 0)
    return -1;
  *monitor_only = strcmp(v, "monitor") == 0;
  return 0;
}

static int set_cpu(void *ctx, const char *v, char *why, size_t len) {
  (void)why, (void)len;
  return sc_setting_share(v, &((sicm_autoplace_config *)ctx)->cpu_share);
}

/* SICM_AUTOPLACE's keys, in the order sicm(7) gives them. */
static const sc_setting autoplace_keys[] = {
    {"fast", "NODE[+NODE...], nodes with devices of base pages", set_fast},
    {"budget", "a SIZE such as 2G", set_budget},
    {"reserve", "a SIZE such as 64M", set_reserve},
    {"interval", "a TIME from 10ms to 3600s in whole ms; a number alone is ms", set_interval},
    {"halflife", "intervals, 1 to 1000", set_halflife},
    {"arenas", "all or flagged", set_arenas},
    {"mode", "place or monitor", set_mode},
    {"cpu", "a share of one core above 0: 1%, 0.5% or 0.01", set_cpu},
};

int sicm_autoplace_config_parse(sicm_autoplace_config *c, const char *text) {
  if (c == NULL || text == NULL)
    return sc_fail(EINVAL, "sicm_autoplace_config_parse: %s is NULL", c ? "text" : "c");
  /* Into a copy: a refused text leaves *c as it was. */
  sicm_autoplace_config parsed;
  if (sicm_autoplace_config_init(&parsed) != 0)
    return -1;
  int on;
  char why[SC_SETTINGS_WHY_MAX];
  if (!(sc_setting_bool(text, &on) == 0 && on) &&
      sc_settings_parse("libsicm", "SICM_AUTOPLACE", text, autoplace_keys,
                        sizeof autoplace_keys / sizeof autoplace_keys[0], &parsed, why,
                        sizeof why) != 0)
    return sc_fail(EINVAL, "%s", why);
  if (sc_autoplace_config_check(&parsed) != 0)
    return -1;
  *c = parsed;
  return 0;
}
