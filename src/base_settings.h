/* SPDX-License-Identifier: BSD-3-Clause */
/* base_settings.h: the one grammar of every setting libsicm reads from the
 * environment (SICM_AUTOPLACE, SICM_PRELOAD, SICM_CHECK, ...), sicm(7)
 * "SETTINGS":
 *   TEXT  := WORD | ITEM[,ITEM]...     WORD: on, 1, off or 0
 *   ITEM  := KEY=VALUE                 spaces around KEY and VALUE ignored
 *   lists inside a VALUE               A+B+C
 *   SIZE  := NUMBER[K|M|G|T][iB|B]     powers of 1024: 4096, 64K, 1.5G, 2GiB
 *   TIME  := NUMBER(ms|s)              or a NUMBER alone in the key's unit
 *   SHARE := NUMBER% | NUMBER          0.5% or 0.005
 *   NUMBER := DIGITS[.DIGITS]
 * A key given twice, an empty item and an unknown key are errors.  The
 * separator of the preload's first releases, ';', is still read, with a
 * one-line notice.
 *
 * It depends on libc alone: libsicm-preload, libmemkind and libsicm-mpi
 * compile it in beside libsicm, so that each reads the grammar the same
 * way. */
#ifndef SC_BASE_SETTINGS_H
#define SC_BASE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

/* Each library that compiles this in keeps it to itself. */
#pragma GCC visibility push(hidden)

/* One key of a variable: its name, what its value must be (for the
 * message), and how to take it.  set returns 0, or -1 when the value is
 * bad, optionally with its own words in why (why_len bytes). */
typedef struct sc_setting {
  const char *key;
  const char *syntax;
  int (*set)(void *ctx, const char *value, char *why, size_t why_len);
} sc_setting;

#define SC_SETTINGS_TEXT_MAX 1024 /* longest text a variable may hold */
#define SC_SETTINGS_WHY_MAX 256   /* room a caller gives the message */

/* Reads `text`, the value of `variable`, against the table (n keys),
 * calling each key's set with ctx.  Returns 0, or -1 with the fault in
 * words in why (one line; the caller names the variable).  `who` and
 * `variable` begin the notice about the old separator on stderr. */
int sc_settings_parse(const char *who, const char *variable, const char *text,
                      const sc_setting *keys, size_t n, void *ctx, char *why, size_t why_len);

/* The values, each 0 or -1 (the whole string must be the value): */
int sc_setting_size(const char *s, size_t *out);
/* A TIME in nanoseconds; a number alone is in unit_ns. */
int sc_setting_time_ns(const char *s, uint64_t unit_ns, uint64_t *out);
/* A SHARE above 0, at most 1. */
int sc_setting_share(const char *s, double *out);
/* DIGITS from min to max. */
int sc_setting_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);
/* on or 1: 1; off or 0: 0. */
int sc_setting_bool(const char *s, int *out);

#pragma GCC visibility pop

#endif /* SC_BASE_SETTINGS_H */
