/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_conf.c: the placer's configuration — its defaults, the checks
 * every configuration passes (from sicm_autoplace_start() or from
 * SICM_AUTOPLACE), and the variable's syntax:
 *   SICM_AUTOPLACE=1 | on | KEY=VALUE[,KEY=VALUE...]
 *   fast=NODE[+NODE...]   the fast tier (default: first by bandwidth)
 *   budget=SIZE           bytes of it the placer may fill (default: all)
 *   reserve=SIZE          bytes kept free there (default 64M)
 *   interval=TIME         10ms to 1h; a number alone is milliseconds
 *   halflife=N            intervals for a rate to halve (default 1)
 *   arenas=all|flagged    which arenas take part
 *   mode=place|monitor    monitor: measure only
 *   cpu=SHARE             of one core for measuring: 0.5% or 0.005 (default 1%)
 * SIZE is digits with an optional K, M, G or T (powers of 1024). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoplace.h"

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

/* Digits with an optional K, M, G or T; 0 or -1. */
static int parse_size(const char *v, size_t len, size_t *out) {
  size_t n = 0, i = 0;
  for (; i < len && isdigit((unsigned char)v[i]); i++) {
    if (n > (SIZE_MAX - 9) / 10)
      return -1;
    n = n * 10 + (size_t)(v[i] - '0');
  }
  if (i == 0)
    return -1;
  unsigned shift = 0;
  if (i < len) {
    const char *units = "KMGT", *u = memchr(units, toupper((unsigned char)v[i]), 4);
    if (u == NULL || i + 1 != len)
      return -1;
    shift = 10 * (unsigned)(u - units + 1);
  }
  if (shift && n > (SIZE_MAX >> shift))
    return -1;
  *out = n << shift;
  return 0;
}

/* "500", "500ms", "2s"; milliseconds, 0 or -1. */
static int parse_interval(const char *v, size_t len, unsigned *out) {
  size_t digits = 0;
  unsigned long long n = 0;
  while (digits < len && isdigit((unsigned char)v[digits]) && n < 100000000ull)
    n = n * 10 + (unsigned)(v[digits++] - '0');
  if (digits == 0)
    return -1;
  const char *unit = v + digits;
  size_t ulen = len - digits;
  if (ulen == 1 && unit[0] == 's')
    n *= 1000;
  else if (!(ulen == 0 || (ulen == 2 && memcmp(unit, "ms", 2) == 0)))
    return -1;
  if (n > 3600000)
    return -1;
  *out = (unsigned)n;
  return 0;
}

/* "1%", "0.5%", "0.01": a share of one core above 0, at most all of it. */
static int parse_share(const char *v, size_t len, double *out) {
  char text[32], *end;
  if (len == 0 || len >= sizeof text || !isdigit((unsigned char)v[0]))
    return -1;
  memcpy(text, v, len);
  text[len] = '\0';
  double x = strtod(text, &end);
  if (*end == '%' && end[1] == '\0')
    x /= 100;
  else if (*end != '\0')
    return -1;
  if (!(x > 0 && x <= 1))
    return -1;
  *out = x;
  return 0;
}

static int parse_nodes(const char *v, size_t len, sicm_autoplace_config *c) {
  c->ndevices = 0;
  while (len > 0) {
    size_t i = 0;
    int node = 0;
    while (i < len && isdigit((unsigned char)v[i]) && node < 100000)
      node = node * 10 + (v[i++] - '0');
    if (i == 0 || (i < len && (v[i] != '+' || i + 1 == len)) ||
        c->ndevices == SICM_ARENA_DEVICES_MAX)
      return sc_fail(EINVAL, "fast= takes NODE[+NODE...]");
    sicm_device *d = sicm_device_of_node(node, 0);
    if (d == NULL)
      return sc_fail(EINVAL, "fast=: no device on node %d", node);
    c->devices[c->ndevices++] = d;
    v += i + (i < len);
    len -= i + (i < len);
  }
  return 0;
}

static int parse_pair(const char *key, size_t klen, const char *v, size_t vlen,
                      sicm_autoplace_config *c) {
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(key, k, klen) == 0)
#define VAL(x) (vlen == sizeof(x) - 1 && memcmp(v, x, vlen) == 0)
  size_t half = 0;
  if (KEY("fast"))
    return parse_nodes(v, vlen, c);
  if (KEY("budget"))
    return parse_size(v, vlen, &c->budget) == 0 ? 0 : sc_fail(EINVAL, "budget= takes a SIZE");
  if (KEY("reserve"))
    return parse_size(v, vlen, &c->reserve) == 0 ? 0 : sc_fail(EINVAL, "reserve= takes a SIZE");
  if (KEY("interval"))
    return parse_interval(v, vlen, &c->interval_ms) == 0
               ? 0
               : sc_fail(EINVAL, "interval= takes milliseconds, or a number with ms or s");
  if (KEY("halflife")) {
    if (parse_size(v, vlen, &half) != 0 || half > 1000 || !isdigit((unsigned char)v[vlen - 1]))
      return sc_fail(EINVAL, "halflife= takes intervals, 1 to 1000");
    c->half_life = (unsigned)half;
    return 0;
  }
  if (KEY("arenas") && (VAL("all") || VAL("flagged"))) {
    c->arenas = VAL("all") ? SICM_AUTOPLACE_ALL : SICM_AUTOPLACE_FLAGGED;
    return 0;
  }
  if (KEY("mode") && (VAL("place") || VAL("monitor"))) {
    c->monitor_only = VAL("monitor");
    return 0;
  }
  if (KEY("cpu"))
    return parse_share(v, vlen, &c->cpu_share) == 0
               ? 0
               : sc_fail(EINVAL, "cpu= takes a share of one core above 0: 1%%, 0.5%% or 0.01");
  if (KEY("arenas") || KEY("mode"))
    return sc_fail(EINVAL, "%.*s= takes %s", (int)klen, key,
                   KEY("arenas") ? "all or flagged" : "place or monitor");
  return sc_fail(EINVAL, "unknown key '%.*s' (known: fast, budget, reserve, interval, halflife, "
                         "arenas, mode, cpu)", (int)klen, key);
#undef KEY
#undef VAL
}

int sc_autoplace_config_parse(const char *text, sicm_autoplace_config *c) {
  if (sicm_autoplace_config_init(c) != 0)
    return -1;
  if (strcmp(text, "1") == 0 || strcmp(text, "on") == 0)
    return 0;
  const char *p = text;
  while (*p) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (eq == NULL || eq == p || eq + 1 == p + len)
      return sc_fail(EINVAL, "'%.*s' is not KEY=VALUE", (int)len, p);
    /* A key given twice: which one was meant cannot be told. */
    for (const char *q = text; q < p; q += strcspn(q, ",") + 1)
      if (strncmp(q, p, (size_t)(eq - p) + 1) == 0)
        return sc_fail(EINVAL, "'%.*s' is given twice", (int)(eq - p), p);
    if (parse_pair(p, (size_t)(eq - p), eq + 1, (size_t)(p + len - eq - 1), c) != 0)
      return -1;
    p += len;
    if (*p == ',' && *++p == '\0')
      return sc_fail(EINVAL, "a ',' ends the text: KEY=VALUE must follow it");
  }
  return sc_autoplace_config_check(c);
}
