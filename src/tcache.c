/* tcache.c: one explicit jemalloc thread cache per (thread, arena).
 * jemalloc's default thread cache mixes arenas (a region freed from arena B
 * is handed out by a later allocation in arena A); an explicit cache that
 * only ever sees one arena's regions keeps them apart at tcache speed.  The
 * arena records the ids of its caches so that destroy can flush them all;
 * a thread's caches are destroyed when it exits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

SICM_TLS sicm_tcache_entry *sicm_thread_tcaches;
SICM_TLS unsigned sicm_thread_tcaches_cap;

static pthread_once_t tcache_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t tcache_key;

static void tcache_unregister(sicm_arena_rec *rec, unsigned id) {
  for (unsigned i = 0; i < rec->ntcaches; i++)
    if (rec->tcaches[i] == id) {
      rec->tcaches[i] = rec->tcaches[--rec->ntcaches];
      mallctl("tcache.destroy", NULL, NULL, &id, sizeof id);
      return;
    }
}

/* Thread exit: give back this thread's caches of arenas still alive. */
static void tcache_thread_exit(void *table) {
  sicm_tcache_entry *entries = table;
  for (unsigned slot = 0; slot < sicm_thread_tcaches_cap; slot++) {
    if (entries[slot].generation == 0 || entries[slot].flag == MALLOCX_TCACHE_NONE)
      continue;
    sicm_arena_rec *rec = __atomic_load_n(&sicm_arena_slots[slot], __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&rec->tcache_lock);
    if (__atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE) == entries[slot].generation)
      tcache_unregister(rec, (unsigned)((entries[slot].flag >> 8) - 2));
    pthread_mutex_unlock(&rec->tcache_lock);
  }
  free(entries);
  sicm_thread_tcaches = NULL;
  sicm_thread_tcaches_cap = 0;
}

static void tcache_key_create(void) { pthread_key_create(&tcache_key, tcache_thread_exit); }

/* Grows this thread's table to hold slot; 0 or -1. */
static int tcache_table_reserve(unsigned slot) {
  if (slot < sicm_thread_tcaches_cap)
    return 0;
  unsigned cap = sicm_thread_tcaches_cap ? sicm_thread_tcaches_cap : 16;
  while (cap <= slot)
    cap *= 2;
  sicm_tcache_entry *grown = realloc(sicm_thread_tcaches, cap * sizeof *grown);
  if (grown == NULL)
    return -1;
  memset(grown + sicm_thread_tcaches_cap, 0, (cap - sicm_thread_tcaches_cap) * sizeof *grown);
  sicm_thread_tcaches = grown;
  sicm_thread_tcaches_cap = cap;
  pthread_once(&tcache_key_once, tcache_key_create);
  pthread_setspecific(tcache_key, grown);
  return 0;
}

int sicm_tcache_flag_slow(sicm_arena_rec *rec, uint64_t generation) {
  /* Without a table entry every call comes here: still correct, uncached. */
  if (tcache_table_reserve(rec->slot) != 0)
    return MALLOCX_TCACHE_NONE;
  sicm_tcache_entry *entry = &sicm_thread_tcaches[rec->slot];
  int flag = MALLOCX_TCACHE_NONE;
  pthread_mutex_lock(&rec->tcache_lock);
  if (rec->ntcaches == rec->tcache_cap) {
    unsigned cap = rec->tcache_cap ? rec->tcache_cap * 2 : 8;
    unsigned *grown = realloc(rec->tcaches, cap * sizeof *grown);
    if (grown != NULL) {
      rec->tcaches = grown;
      rec->tcache_cap = cap;
    }
  }
  unsigned id;
  size_t len = sizeof id;
  /* jemalloc has about 4094 explicit caches; past that, go uncached. */
  if (rec->ntcaches < rec->tcache_cap && mallctl("tcache.create", &id, &len, NULL, 0) == 0) {
    rec->tcaches[rec->ntcaches++] = id;
    flag = MALLOCX_TCACHE(id);
  }
  pthread_mutex_unlock(&rec->tcache_lock);
  *entry = (sicm_tcache_entry){generation, flag};
  return flag;
}

void sicm_tcache_destroy_all(sicm_arena_rec *rec) {
  pthread_mutex_lock(&rec->tcache_lock);
  for (unsigned i = 0; i < rec->ntcaches; i++)
    mallctl("tcache.destroy", NULL, NULL, &rec->tcaches[i], sizeof rec->tcaches[i]);
  rec->ntcaches = 0;
  pthread_mutex_unlock(&rec->tcache_lock);
}
