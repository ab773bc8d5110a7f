/* 64-byte-aligned allocator with a cache of large blocks.  Freeing a 64 MiB
   buffer and faulting in a new one costs more than the op that fills it, so
   blocks >= 64 KiB are kept (bounded by EMBER_CACHE_MB, default 1024) and
   handed back for requests of the same size class. */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"

#define LARGE (1u << 16)
/* Blocks from 2 MiB are 2 MiB-aligned and asked to be backed by transparent
   huge pages: streaming kernels then miss the TLB far less (16M-float sum:
   3.0 -> 2.1 ms on this machine). */
#define HUGE_PAGE ((size_t)1 << 21)
#define MAX_BLOCKS 64

typedef struct { void *p; size_t size; } block;
static block cache[MAX_BLOCKS];
static int ncached = 0;
static size_t cached_bytes = 0, cache_limit = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t size_class(size_t n) {
    if (n < LARGE) return (n + 63) & ~(size_t)63;
    /* round to 1/8 of the next power of two: bounded waste, good reuse */
    size_t p = 1; while (p < n) p <<= 1;
    size_t step = p >> 3;
    if (n >= HUGE_PAGE && step < HUGE_PAGE) step = HUGE_PAGE;
    return (n + step - 1) / step * step;
}

void *em_alloc(size_t n) {
    size_t sz = size_class(n ? n : 1);
    if (sz >= LARGE) {
        pthread_mutex_lock(&lock);
        for (int i = ncached - 1; i >= 0; i--) {
            if (cache[i].size == sz) {
                void *p = cache[i].p;
                cache[i] = cache[--ncached];
                cached_bytes -= sz;
                pthread_mutex_unlock(&lock);
                return p;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    if (sz >= HUGE_PAGE) {
        void *p = aligned_alloc(HUGE_PAGE, sz);
#ifdef MADV_HUGEPAGE
        if (p) madvise(p, sz, MADV_HUGEPAGE);
#endif
        return p;
    }
    return aligned_alloc(64, sz);
}

void em_free(void *p, size_t n) {
    if (!p) return;
    size_t sz = size_class(n ? n : 1);
    if (sz >= LARGE) {
        pthread_mutex_lock(&lock);
        if (!cache_limit) {
            const char *e = getenv("EMBER_CACHE_MB");
            cache_limit = (size_t)(e ? atol(e) : 1024) << 20;
        }
        while (ncached > 0 && (ncached == MAX_BLOCKS || cached_bytes + sz > cache_limit)) {
            free(cache[0].p); cached_bytes -= cache[0].size;
            cache[0] = cache[--ncached];
        }
        if (sz <= cache_limit) {
            cache[ncached].p = p; cache[ncached].size = sz; ncached++; cached_bytes += sz;
            pthread_mutex_unlock(&lock);
            return;
        }
        pthread_mutex_unlock(&lock);
    }
    free(p);
}

void em_alloc_stats(int64_t *bytes, int64_t *blocks) {
    pthread_mutex_lock(&lock);
    *bytes = (int64_t)cached_bytes; *blocks = ncached;
    pthread_mutex_unlock(&lock);
}

void em_alloc_empty_cache(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ncached; i++) free(cache[i].p);
    ncached = 0; cached_bytes = 0;
    pthread_mutex_unlock(&lock);
}
