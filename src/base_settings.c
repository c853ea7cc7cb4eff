/* SPDX-License-Identifier: BSD-3-Clause */
/* base_settings.c: the grammar of every setting (base_settings.h) — the
 * items of a variable, each checked against its key's entry in one table,
 * and the syntax of sizes, times, shares, counts and switches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base_settings.h"

/* DIGITS[.DIGITS] at s: the whole part, the fraction as digits over
 * 10^*scale, and the length; 0 when s does not start with one. */
static size_t number_parse(const char *s, unsigned long long *whole, unsigned long long *fraction,
                           unsigned long long *scale) {
  size_t n = 0;
  *whole = *fraction = 0;
  *scale = 1;
  for (; s[n] >= '0' && s[n] <= '9'; n++) {
    unsigned digit = (unsigned)(s[n] - '0');
    if (*whole > (~0ull - digit) / 10)
      return 0;
    *whole = *whole * 10 + digit;
  }
  if (n == 0 || s[n] != '.')
    return n;
  size_t f = n + 1;
  for (; s[f] >= '0' && s[f] <= '9'; f++) {
    if (*scale > 100000000000000000ull)
      continue; /* digits past the 18th change nothing a setting can hold */
    *fraction = *fraction * 10 + (unsigned)(s[f] - '0');
    *scale *= 10;
  }
  return f > n + 1 ? f : 0;
}

/* whole + fraction / scale, times unit; 0 or -1 when it passes 2^64. */
static int number_times(unsigned long long whole, unsigned long long fraction,
                        unsigned long long scale, unsigned long long unit, uint64_t *out) {
  unsigned __int128 v = (unsigned __int128)whole * unit +
                        (unsigned __int128)fraction * unit / scale;
  if (v > (unsigned __int128)UINT64_MAX)
    return -1;
  *out = (uint64_t)v;
  return 0;
}

int sc_setting_size(const char *s, size_t *out) {
  unsigned long long whole, fraction, scale, unit = 1;
  size_t n = number_parse(s, &whole, &fraction, &scale);
  if (n == 0)
    return -1;
  const char *end = s + n, *units = "KMGT";
  const char *u = *end ? memchr(units, *end & ~0x20, 4) : NULL;
  if (u != NULL) {
    unit <<= 10 * (u - units + 1);
    end++;
    if (strcasecmp(end, "iB") == 0)
      end += 2;
  }
  if (strcasecmp(end, "B") == 0)
    end++;
  uint64_t v;
  if (*end != '\0' || number_times(whole, fraction, scale, unit, &v) != 0 || v > SIZE_MAX)
    return -1;
  *out = (size_t)v;
  return 0;
}

int sc_setting_time_ns(const char *s, uint64_t unit_ns, uint64_t *out) {
  unsigned long long whole, fraction, scale;
  size_t n = number_parse(s, &whole, &fraction, &scale);
  if (n == 0)
    return -1;
  const char *end = s + n;
  if (strcmp(end, "ms") == 0)
    unit_ns = 1000000;
  else if (strcmp(end, "s") == 0)
    unit_ns = 1000000000;
  else if (*end != '\0')
    return -1;
  return number_times(whole, fraction, scale, unit_ns, out);
}

int sc_setting_share(const char *s, double *out) {
  unsigned long long whole, fraction, scale;
  size_t n = number_parse(s, &whole, &fraction, &scale);
  if (n == 0 || (s[n] != '\0' && strcmp(s + n, "%") != 0))
    return -1;
  double x = (double)whole + (double)fraction / (double)scale;
  if (s[n] == '%')
    x /= 100;
  if (!(x > 0 && x <= 1))
    return -1;
  *out = x;
  return 0;
}

int sc_setting_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out) {
  unsigned long long whole, fraction, scale;
  size_t n = number_parse(s, &whole, &fraction, &scale);
  if (n == 0 || s[n] != '\0' || scale != 1 || whole < min || whole > max)
    return -1;
  *out = (unsigned long)whole;
  return 0;
}

int sc_setting_bool(const char *s, int *out) {
  if (strcmp(s, "on") == 0 || strcmp(s, "1") == 0)
    *out = 1;
  else if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0)
    *out = 0;
  else
    return -1;
  return 0;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

static const sc_setting *key_find(const sc_setting *keys, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(keys[i].key, key) == 0)
      return &keys[i];
  return NULL;
}

static void unknown_key(const char *key, const sc_setting *keys, size_t n,
                        char *why, size_t why_len) {
  int at = snprintf(why, why_len, "unknown key '%s' (known:", key);
  for (size_t i = 0; i < n && at >= 0 && (size_t)at < why_len; i++)
    at += snprintf(why + at, why_len - (size_t)at, "%s %s", i ? "," : "", keys[i].key);
  if (at >= 0 && (size_t)at < why_len)
    snprintf(why + at, why_len - (size_t)at, ")");
}

/* One item, KEY=VALUE, in place; `given` marks the keys already read. */
static int item_parse(char *item, const sc_setting *keys, size_t n,
                      unsigned char *given, void *ctx, char *why, size_t why_len) {
  char *eq = strchr(item, '=');
  if (eq == NULL) {
    snprintf(why, why_len, "expected key=value, got '%s' (a list inside a value takes '+')", item);
    return -1;
  }
  *eq = '\0';
  char *key = trim(item), *value = trim(eq + 1);
  const sc_setting *k = key_find(keys, n, key);
  if (k == NULL) {
    unknown_key(key, keys, n, why, why_len);
    return -1;
  }
  if (given[k - keys]++) {
    snprintf(why, why_len, "'%s' is given twice: which one is meant cannot be told", key);
    return -1;
  }
  char own[SC_SETTINGS_WHY_MAX] = "";
  if (*value != '\0' && k->set(ctx, value, own, sizeof own) == 0)
    return 0;
  snprintf(why, why_len, "bad value %s=%s: %s", key, value, own[0] ? own : k->syntax);
  return -1;
}

int sc_settings_parse(const char *who, const char *variable, const char *text,
                      const sc_setting *keys, size_t n, void *ctx, char *why, size_t why_len) {
  char copy[SC_SETTINGS_TEXT_MAX];
  unsigned char given[64] = {0};
  if (n > sizeof given || strlen(text) >= sizeof copy) {
    snprintf(why, why_len, "longer than %d characters", SC_SETTINGS_TEXT_MAX - 1);
    return -1;
  }
  strcpy(copy, text);
  /* The old separator: ';' between items, ',' between a list's parts. */
  char separator = ',';
  if (strchr(copy, ';') != NULL) {
    separator = ';';
    for (char *c = copy; *c; c++)
      *c = *c == ',' ? '+' : *c;
    fprintf(stderr, "%s: %s: ';' between settings is deprecated and will be refused; "
                    "write ',' between settings and '+' inside a list\n", who, variable);
  }
  for (char *item = copy, *next; item != NULL; item = next) {
    next = strchr(item, separator);
    if (next != NULL)
      *next++ = '\0';
    item = trim(item);
    if (*item == '\0' && separator == ';')
      continue; /* the old grammar skipped empty items */
    if (*item == '\0') {
      snprintf(why, why_len, "an empty setting (a '%c' too many)", separator);
      return -1;
    }
    if (item_parse(item, keys, n, given, ctx, why, why_len) != 0)
      return -1;
  }
  return 0;
}
