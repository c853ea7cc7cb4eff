/* SPDX-License-Identifier: BSD-3-Clause */
/* report.h: the report of sicm_stats_print and SICM_STATS (report.c),
 * above every layer it reads: arenas, migration, the placer. */
#ifndef SC_REPORT_H
#define SC_REPORT_H

#include "autoplace.h"

/* Reads SICM_STATS; when set, the report is written at exit (once). */
void sc_report_setup(void);
/* The last sicm_fini: write the report now, while the arenas exist. */
void sc_report_before_fini(void);

#endif /* SC_REPORT_H */
