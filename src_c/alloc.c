/* 64-byte-aligned allocator with a cache of large blocks.  Freeing a 64 MiB
   buffer and faulting in a new one costs more than the op that fills it, so
   requests from 64 KiB are served from cached segments (one aligned_alloc
   each), in the manner of torch's CUDA caching allocator and ember's own
   (src_cuda/pool.c):

   - best fit: the smallest free block at least as large as the request, of
     equal ones the last freed (its pages are likeliest still in cache);
   - a larger block is split and the rest stays cached, and a freed block
     merges with free neighbours of its segment, so memory freed at one size
     serves requests of another (a training step's backward reuses the
     forward's buffers instead of growing the process);
   - requests below 2 MiB and from 2 MiB have separate pools, so blocks from
     2 MiB stay 2 MiB-aligned multiples of 2 MiB (huge pages) and small
     tensors do not pin large segments;
   - cached bytes are bounded by EMBER_CACHE_MB (default 1024, 0 caches
     nothing): past the bound wholly free segments are released, largest
     first.  Free parts of a segment in use stay until it is wholly free.

   Smaller requests go to aligned_alloc directly: glibc's bins are fast there
   and they never fault in much memory.  One mutex guards the cache. */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"

#define LARGE ((size_t)1 << 16)
/* Segments from 2 MiB are 2 MiB-aligned and asked to be backed by transparent
   huge pages: streaming kernels then miss the TLB far less (16M-float sum:
   3.0 -> 2.1 ms on this machine). */
#define HUGE_PAGE ((size_t)1 << 21)
#define NBUCKETS 4096

typedef struct blk {
    char *p;
    size_t size;
    int used, huge;
    uint64_t seq;              /* when it was last listed free */
    struct blk *prev, *next;   /* neighbours in the segment, by address */
    struct blk *hnext;         /* live-block hash chain */
} blk;

typedef struct { blk **v; size_t n, cap; } freelist;   /* by size, then latest first */

static freelist fl[2];         /* below 2 MiB, from 2 MiB */
static blk *live[NBUCKETS];
static int64_t st[EM_ALLOC_NSTATS];
static uint64_t clock_seq = 0;
static size_t cache_limit;
static int limit_read = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t size_class(size_t n) {
    if (n < LARGE) return (n + 63) & ~(size_t)63;
    /* round to 1/8 of the next power of two: bounded waste, good reuse */
    size_t p = 1; while (p < n) p <<= 1;
    size_t step = p >> 3;
    if (n >= HUGE_PAGE && step < HUGE_PAGE) step = HUGE_PAGE;
    return (n + step - 1) / step * step;
}

static size_t hash_ptr(const char *p) {
    return (size_t)(((uintptr_t)p >> 6) * 0x9E3779B97F4A7C15ull >> 52) % NBUCKETS;
}

static int blk_less(const blk *b, size_t size, uint64_t seq) {
    return b->size != size ? b->size < size : b->seq > seq;
}

/* first index whose block is not less than (size, seq) */
static size_t fl_lower(const freelist *f, size_t size, uint64_t seq) {
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (blk_less(f->v[mid], size, seq)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static void fl_erase(freelist *f, size_t i) {
    memmove(f->v + i, f->v + i + 1, (f->n - i - 1) * sizeof(blk *));
    f->n--;
}

static void fl_remove(blk *b) {
    freelist *f = &fl[b->huge];
    size_t i = fl_lower(f, b->size, b->seq);
    if (i < f->n && f->v[i] == b) fl_erase(f, i);
}

static int fl_insert(blk *b) {
    freelist *f = &fl[b->huge];
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        blk **v = (blk **)realloc(f->v, cap * sizeof(blk *));
        if (!v) return -1;
        f->v = v; f->cap = cap;
    }
    b->seq = ++clock_seq;
    size_t i = fl_lower(f, b->size, b->seq);
    memmove(f->v + i + 1, f->v + i, (f->n - i) * sizeof(blk *));
    f->v[i] = b;
    f->n++;
    return 0;
}

static void live_add(blk *b) {
    size_t h = hash_ptr(b->p);
    b->hnext = live[h];
    live[h] = b;
}

static blk *live_take(const char *p) {
    for (blk **pp = &live[hash_ptr(p)]; *pp; pp = &(*pp)->hnext)
        if ((*pp)->p == p) {
            blk *b = *pp;
            *pp = b->hnext;
            return b;
        }
    return NULL;
}

static void release_segment(blk *b) {
    free(b->p);
    st[EM_ST_RESERVED] -= (int64_t)b->size;
    st[EM_ST_SEGMENTS]--;
    st[EM_ST_RELEASED]++;
    free(b);
}

/* release wholly free segments, largest first, while more than `keep` bytes are
   cached (keep 0: all of them); the caller holds the lock */
static void release_cached(size_t keep) {
    for (int k = 1; k >= 0; k--) {
        freelist *f = &fl[k];
        for (size_t i = f->n; i-- > 0;) {
            if ((size_t)(st[EM_ST_RESERVED] - st[EM_ST_ALLOCATED]) <= keep) return;
            blk *b = f->v[i];
            if (!b->prev && !b->next) {
                fl_erase(f, i);
                release_segment(b);
            }
        }
    }
}

static void note_peak(int what, int peak) {
    if (st[what] > st[peak]) st[peak] = st[what];
}

static char *new_segment(size_t sz, int huge) {
    char *p = (char *)aligned_alloc(huge ? HUGE_PAGE : 64, sz);
    if (!p) {            /* out of memory: give the cache back and try once more */
        release_cached(0);
        p = (char *)aligned_alloc(huge ? HUGE_PAGE : 64, sz);
    }
#ifdef MADV_HUGEPAGE
    if (p && huge) madvise(p, sz, MADV_HUGEPAGE);
#endif
    return p;
}

void *em_alloc(size_t n) {
    size_t sz = size_class(n ? n : 1);
    if (sz < LARGE) return aligned_alloc(64, sz);
    int huge = sz >= HUGE_PAGE;
    pthread_mutex_lock(&lock);
    freelist *f = &fl[huge];
    blk *b;
    size_t i = fl_lower(f, sz, UINT64_MAX);
    if (i < f->n) {
        b = f->v[i];
        fl_erase(f, i);
        st[EM_ST_HITS]++;
    } else {
        char *p = new_segment(sz, huge);
        b = p ? (blk *)calloc(1, sizeof(blk)) : NULL;
        if (!b) {
            free(p);
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        b->p = p; b->size = sz; b->huge = huge;
        st[EM_ST_RESERVED] += (int64_t)sz;
        note_peak(EM_ST_RESERVED, EM_ST_PEAK_RESERVED);
        st[EM_ST_SEGMENTS]++;
        st[EM_ST_MISSES]++;
    }
    /* split off the rest when it is a cacheable block itself (always in the
       huge pool, whose sizes are multiples of 2 MiB), so a request never holds
       more than 64 KiB beyond its size class */
    size_t rest = b->size - sz;
    if (rest >= LARGE) {
        blk *r = (blk *)calloc(1, sizeof(blk));
        if (r) {
            r->p = b->p + sz; r->size = rest; r->huge = huge;
            r->prev = b; r->next = b->next;
            if (b->next) b->next->prev = r;
            b->next = r;
            b->size = sz;
            if (fl_insert(r) == 0) {
                st[EM_ST_SPLITS]++;
            } else {           /* no room to track the rest: keep the block whole */
                b->next = r->next;
                if (r->next) r->next->prev = b;
                b->size += rest;
                free(r);
            }
        }
    }
    b->used = 1;
    live_add(b);
    st[EM_ST_ALLOCATED] += (int64_t)b->size;
    note_peak(EM_ST_ALLOCATED, EM_ST_PEAK_ALLOCATED);
    pthread_mutex_unlock(&lock);
    return b->p;
}

void em_free(void *ptr, size_t n) {
    if (!ptr) return;
    if (size_class(n ? n : 1) < LARGE) {
        free(ptr);
        return;
    }
    pthread_mutex_lock(&lock);
    blk *b = live_take((char *)ptr);
    if (!b) {                  /* not from the cache (cannot happen for em_alloc'd memory) */
        pthread_mutex_unlock(&lock);
        free(ptr);
        return;
    }
    if (!limit_read) {
        const char *e = getenv("EMBER_CACHE_MB");
        long mb = e ? atol(e) : 1024;
        cache_limit = (size_t)(mb > 0 ? mb : 0) << 20;
        limit_read = 1;
    }
    b->used = 0;
    st[EM_ST_ALLOCATED] -= (int64_t)b->size;
    blk *nx = b->next;
    if (nx && !nx->used) {
        fl_remove(nx);
        b->size += nx->size;
        b->next = nx->next;
        if (nx->next) nx->next->prev = b;
        free(nx);
    }
    blk *pv = b->prev;
    if (pv && !pv->used) {
        fl_remove(pv);
        pv->size += b->size;
        pv->next = b->next;
        if (b->next) b->next->prev = pv;
        free(b);
        b = pv;
    }
    int whole = !b->prev && !b->next;
    size_t cached = (size_t)(st[EM_ST_RESERVED] - st[EM_ST_ALLOCATED]);
    /* the cache is full (or the free list cannot grow): a wholly free segment
       goes back at once; a piece of a segment in use that cannot be listed
       stays out of reach until exit, which only a failing realloc causes */
    if (whole && cached > cache_limit)
        release_segment(b);
    else if (fl_insert(b) != 0 && whole)
        release_segment(b);
    if ((size_t)(st[EM_ST_RESERVED] - st[EM_ST_ALLOCATED]) > cache_limit)
        release_cached(cache_limit);
    pthread_mutex_unlock(&lock);
}

void em_alloc_stats(int64_t *out, int n) {
    pthread_mutex_lock(&lock);
    st[EM_ST_CACHED_BLOCKS] = (int64_t)(fl[0].n + fl[1].n);
    for (int i = 0; i < n && i < EM_ALLOC_NSTATS; i++) out[i] = st[i];
    pthread_mutex_unlock(&lock);
}

void em_alloc_reset_peak(void) {
    pthread_mutex_lock(&lock);
    st[EM_ST_PEAK_ALLOCATED] = st[EM_ST_ALLOCATED];
    st[EM_ST_PEAK_RESERVED] = st[EM_ST_RESERVED];
    pthread_mutex_unlock(&lock);
}

void em_alloc_empty_cache(void) {
    pthread_mutex_lock(&lock);
    release_cached(0);
    pthread_mutex_unlock(&lock);
}
