/* The caching allocator's bookkeeping (see ember_cuda_pool.h).  Host C only:
   it never touches device memory, so the CPU tests drive it with a fake
   backing allocator. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ember_cuda_pool.h"

#define ROUND 512u
#define SMALL_MAX (1u << 20)
#define SMALL_SEG (2u << 20)
#define LARGE_MIN_SEG (20u << 20)
#define LARGE_ROUND_FROM (10u << 20)
#define LARGE_ROUND (2u << 20)
#define NBUCKETS 4096

typedef struct block {
    uintptr_t addr;
    size_t size;
    uint64_t stream;
    int used, large;
    struct block *prev, *next;   /* neighbours in the segment, by address */
    struct block *hnext;         /* live-block hash chain */
} block;

typedef struct {                 /* free blocks sorted by (stream, size, addr) */
    block **v;
    size_t n, cap;
} freelist;

struct emc_pool {
    emc_backing_alloc alloc;
    emc_backing_free release;
    void *ctx;
    pthread_mutex_t mu;
    freelist fl[2];              /* small, large */
    block *live[NBUCKETS];
    int64_t st[EMC_ST_N];
};

static size_t hash_addr(uintptr_t a) { return (size_t)((a >> 9) * 0x9E3779B97F4A7C15ull >> 52) % NBUCKETS; }

static int key_less(const block *b, uint64_t stream, size_t size, uintptr_t addr) {
    if (b->stream != stream) return b->stream < stream;
    if (b->size != size) return b->size < size;
    return b->addr < addr;
}

/* first index whose block is not less than (stream, size, addr) */
static size_t fl_lower(const freelist *f, uint64_t stream, size_t size, uintptr_t addr) {
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_less(f->v[mid], stream, size, addr)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static int fl_insert(freelist *f, block *b) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        block **v = (block **)realloc(f->v, cap * sizeof(block *));
        if (!v) return -1;
        f->v = v;
        f->cap = cap;
    }
    size_t i = fl_lower(f, b->stream, b->size, b->addr);
    memmove(f->v + i + 1, f->v + i, (f->n - i) * sizeof(block *));
    f->v[i] = b;
    f->n++;
    return 0;
}

static void fl_remove(freelist *f, block *b) {
    size_t i = fl_lower(f, b->stream, b->size, b->addr);
    if (i < f->n && f->v[i] == b) {
        memmove(f->v + i, f->v + i + 1, (f->n - i - 1) * sizeof(block *));
        f->n--;
    }
}

static void live_add(emc_pool *p, block *b) {
    size_t h = hash_addr(b->addr);
    b->hnext = p->live[h];
    p->live[h] = b;
}

static block *live_find(emc_pool *p, uintptr_t addr, int unlink) {
    block **pp = &p->live[hash_addr(addr)];
    for (; *pp; pp = &(*pp)->hnext)
        if ((*pp)->addr == addr) {
            block *b = *pp;
            if (unlink) *pp = b->hnext;
            return b;
        }
    return NULL;
}

emc_pool *emc_pool_create(emc_backing_alloc alloc, emc_backing_free release, void *ctx) {
    emc_pool *p = (emc_pool *)calloc(1, sizeof(emc_pool));
    if (!p) return NULL;
    p->alloc = alloc;
    p->release = release;
    p->ctx = ctx;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void release_segment(emc_pool *p, block *b) {
    p->release((void *)b->addr, b->size, p->ctx);
    p->st[EMC_ST_RESERVED] -= (int64_t)b->size;
    p->st[EMC_ST_SEGMENTS]--;
    free(b);
}

/* release wholly free segments (caller holds the lock) */
static int release_cached(emc_pool *p) {
    int n = 0;
    for (int k = 0; k < 2; k++) {
        freelist *f = &p->fl[k];
        size_t w = 0;
        for (size_t i = 0; i < f->n; i++) {
            block *b = f->v[i];
            if (!b->prev && !b->next) {
                release_segment(p, b);
                p->st[EMC_ST_BLOCKS]--;
                n++;
            } else {
                f->v[w++] = b;
            }
        }
        f->n = w;
    }
    return n;
}

void emc_pool_destroy(emc_pool *p) {
    if (!p) return;
    for (int h = 0; h < NBUCKETS; h++)
        while (p->live[h]) {
            block *b = p->live[h];
            p->live[h] = b->hnext;
            b->used = 0;
            /* hand used blocks back to the free lists so whole segments can go */
            fl_insert(&p->fl[b->large], b);
        }
    for (int k = 0; k < 2; k++) {
        /* free blocks of one segment: release the segment once, from its head */
        freelist *f = &p->fl[k];
        for (size_t i = 0; i < f->n; i++) {
            block *b = f->v[i];
            if (!b->prev) {
                size_t total = 0;
                for (block *c = b; c; c = c->next) total += c->size;
                p->release((void *)b->addr, total, p->ctx);
            }
        }
        for (size_t i = 0; i < f->n; i++) free(f->v[i]);
        free(f->v);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static size_t round_size(size_t n) { return n < ROUND ? ROUND : (n + ROUND - 1) / ROUND * ROUND; }

static size_t segment_size(size_t n) {
    if (n <= SMALL_MAX) return SMALL_SEG;
    if (n < LARGE_ROUND_FROM) return LARGE_MIN_SEG;
    return (n + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
}

static void note_alloc(emc_pool *p, size_t n) {
    p->st[EMC_ST_ALLOCATED] += (int64_t)n;
    if (p->st[EMC_ST_ALLOCATED] > p->st[EMC_ST_MAX_ALLOCATED])
        p->st[EMC_ST_MAX_ALLOCATED] = p->st[EMC_ST_ALLOCATED];
    p->st[EMC_ST_ALLOCS]++;
}

int emc_pool_malloc(emc_pool *p, size_t nbytes, uint64_t stream, void **out) {
    *out = NULL;
    if (nbytes == 0) return 0;
    size_t size = round_size(nbytes);
    int large = size > SMALL_MAX;
    pthread_mutex_lock(&p->mu);
    freelist *f = &p->fl[large];
    block *b = NULL;
    size_t i = fl_lower(f, stream, size, 0);
    if (i < f->n && f->v[i]->stream == stream) {
        b = f->v[i];
        memmove(f->v + i, f->v + i + 1, (f->n - i - 1) * sizeof(block *));
        f->n--;
        p->st[EMC_ST_CACHE_HITS]++;
    } else {
        size_t seg = segment_size(size);
        void *mem = p->alloc(seg, p->ctx);
        if (!mem && release_cached(p) > 0) mem = p->alloc(seg, p->ctx);
        if (!mem) {
            pthread_mutex_unlock(&p->mu);
            return EMC_E_NOMEM;
        }
        b = (block *)calloc(1, sizeof(block));
        if (!b) {
            p->release(mem, seg, p->ctx);
            pthread_mutex_unlock(&p->mu);
            return EMC_E_NOMEM;
        }
        b->addr = (uintptr_t)mem;
        b->size = seg;
        b->stream = stream;
        b->large = large;
        p->st[EMC_ST_RESERVED] += (int64_t)seg;
        if (p->st[EMC_ST_RESERVED] > p->st[EMC_ST_MAX_RESERVED])
            p->st[EMC_ST_MAX_RESERVED] = p->st[EMC_ST_RESERVED];
        p->st[EMC_ST_SEGMENTS]++;
        p->st[EMC_ST_BLOCKS]++;
    }
    size_t rest = b->size - size;
    if (large ? rest > SMALL_MAX : rest >= ROUND) {
        block *r = (block *)calloc(1, sizeof(block));
        if (r) {
            r->addr = b->addr + size;
            r->size = rest;
            r->stream = stream;
            r->large = large;
            r->prev = b;
            r->next = b->next;
            if (b->next) b->next->prev = r;
            b->next = r;
            b->size = size;
            if (fl_insert(f, r) == 0) {
                p->st[EMC_ST_BLOCKS]++;
            } else {           /* no room to track the remainder: keep the block whole */
                b->next = r->next;
                if (r->next) r->next->prev = b;
                b->size += rest;
                free(r);
            }
        }
    }
    b->used = 1;
    live_add(p, b);
    note_alloc(p, b->size);
    *out = (void *)b->addr;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int emc_pool_free(emc_pool *p, void *ptr) {
    if (!ptr) return 0;
    pthread_mutex_lock(&p->mu);
    block *b = live_find(p, (uintptr_t)ptr, 1);
    if (!b) {
        pthread_mutex_unlock(&p->mu);
        return EMC_E_ARG;
    }
    b->used = 0;
    p->st[EMC_ST_ALLOCATED] -= (int64_t)b->size;
    freelist *f = &p->fl[b->large];
    /* merge with free neighbours of the same segment */
    block *n = b->next;
    if (n && !n->used) {
        fl_remove(f, n);
        b->size += n->size;
        b->next = n->next;
        if (n->next) n->next->prev = b;
        free(n);
        p->st[EMC_ST_BLOCKS]--;
    }
    block *pv = b->prev;
    if (pv && !pv->used) {
        fl_remove(f, pv);
        pv->size += b->size;
        pv->next = b->next;
        if (b->next) b->next->prev = pv;
        free(b);
        p->st[EMC_ST_BLOCKS]--;
        b = pv;
    }
    fl_insert(f, b);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

size_t emc_pool_block_size(emc_pool *p, const void *ptr) {
    pthread_mutex_lock(&p->mu);
    block *b = live_find(p, (uintptr_t)ptr, 0);
    size_t n = b ? b->size : 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void emc_pool_stats(emc_pool *p, int64_t stats[EMC_ST_N]) {
    pthread_mutex_lock(&p->mu);
    memcpy(stats, p->st, sizeof(p->st));
    pthread_mutex_unlock(&p->mu);
}

void emc_pool_reset_peak(emc_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->st[EMC_ST_MAX_ALLOCATED] = p->st[EMC_ST_ALLOCATED];
    p->st[EMC_ST_MAX_RESERVED] = p->st[EMC_ST_RESERVED];
    pthread_mutex_unlock(&p->mu);
}

int emc_pool_empty_cache(emc_pool *p) {
    pthread_mutex_lock(&p->mu);
    int n = release_cached(p);
    pthread_mutex_unlock(&p->mu);
    return n;
}
