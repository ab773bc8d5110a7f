/* The bookkeeping of ember's CUDA caching allocator, as plain host C over a
   backing allocator given as two function pointers (cudaMalloc/cudaFree in
   libember_cuda.so, a fake one in the CPU tests).

   Sizes round up to 512 bytes.  Requests up to 1 MiB come from 2 MiB "small"
   segments, larger ones from "large" segments (20 MiB below 10 MiB, else the
   size rounded up to 2 MiB).  A free block is reused only by requests on the
   stream it was allocated on (so no event is needed before reuse), best fit
   first; a block larger than the request is split (small: when 512 bytes or
   more remain, large: when more than 1 MiB remains) and freed neighbours in a
   segment merge back.  When the backing allocator fails, cached segments that
   are wholly free are released and the request retried once. */
#ifndef EMBER_CUDA_POOL_H
#define EMBER_CUDA_POOL_H
#include <stddef.h>
#include <stdint.h>
#include "ember_cuda.h"

typedef void *(*emc_backing_alloc)(size_t nbytes, void *ctx);   /* NULL when out of memory */
typedef void (*emc_backing_free)(void *ptr, size_t nbytes, void *ctx);

typedef struct emc_pool emc_pool;

enum {  /* emc_pool_stats() slots */
    EMC_ST_ALLOCATED, EMC_ST_MAX_ALLOCATED, EMC_ST_RESERVED, EMC_ST_MAX_RESERVED,
    EMC_ST_SEGMENTS, EMC_ST_BLOCKS, EMC_ST_ALLOCS, EMC_ST_CACHE_HITS, EMC_ST_N
};

EMC_API emc_pool *emc_pool_create(emc_backing_alloc alloc, emc_backing_free release, void *ctx);
/* releases every segment, in use or not */
EMC_API void emc_pool_destroy(emc_pool *p);
/* 0, or EMC_E_NOMEM when the backing allocator has no memory even after the
   cache was released.  nbytes == 0 gives NULL. */
EMC_API int emc_pool_malloc(emc_pool *p, size_t nbytes, uint64_t stream, void **out);
/* 0, or EMC_E_ARG for a pointer the pool did not hand out (or freed twice) */
EMC_API int emc_pool_free(emc_pool *p, void *ptr);
/* the rounded size of a live block, 0 if ptr is not one */
EMC_API size_t emc_pool_block_size(emc_pool *p, const void *ptr);
EMC_API void emc_pool_stats(emc_pool *p, int64_t stats[EMC_ST_N]);
EMC_API void emc_pool_reset_peak(emc_pool *p);
/* releases wholly free segments; returns how many */
EMC_API int emc_pool_empty_cache(emc_pool *p);
#endif
