/* The device caching allocator: pool.c's bookkeeping over cudaMalloc/cudaFree.
   One pool per device, made on first use. */
#include <pthread.h>
#include "common.cuh"
#include "ember_cuda_pool.h"

#define EMC_MAX_DEVICES 64

static emc_pool *pools[EMC_MAX_DEVICES];
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

static void *dev_alloc(size_t n, void *ctx) {
    (void)ctx;
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        cudaGetLastError();   /* clear the sticky-free OOM error */
        return NULL;
    }
    return p;
}

static void dev_free(void *p, size_t n, void *ctx) {
    (void)n;
    (void)ctx;
    cudaFree(p);
}

static int pool_of(int dev, emc_pool **out) {
    if (dev < 0 || dev >= EMC_MAX_DEVICES) return emc_set_error(EMC_E_ARG, "emc_malloc");
    pthread_mutex_lock(&pools_mu);
    if (!pools[dev]) pools[dev] = emc_pool_create(dev_alloc, dev_free, NULL);
    *out = pools[dev];
    pthread_mutex_unlock(&pools_mu);
    return *out ? 0 : emc_set_error(EMC_E_NOMEM, "emc_malloc");
}

EMC_API int emc_malloc(void **ptr, size_t nbytes, void *stream) {
    int dev = 0;
    EMC_CHECK(cudaGetDevice(&dev), "emc_malloc");
    emc_pool *p;
    int rc = pool_of(dev, &p);
    if (rc) return rc;
    rc = emc_pool_malloc(p, nbytes, (uint64_t)(uintptr_t)stream, ptr);
    return rc ? emc_set_error((int)cudaErrorMemoryAllocation, "emc_malloc") : 0;
}

/* the pointer may belong to any device's pool */
EMC_API int emc_free(void *ptr) {
    if (!ptr) return 0;
    for (int d = 0; d < EMC_MAX_DEVICES; d++) {
        emc_pool *p = pools[d];
        if (p && emc_pool_block_size(p, ptr)) return emc_pool_free(p, ptr);
    }
    return emc_set_error(EMC_E_ARG, "emc_free (pointer not from ember's allocator)");
}

EMC_API void emc_memory_stats(int64_t stats[8]) {
    int dev = 0;
    for (int i = 0; i < EMC_ST_N; i++) stats[i] = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= EMC_MAX_DEVICES) {
        cudaGetLastError();
        return;
    }
    if (pools[dev]) emc_pool_stats(pools[dev], stats);
}

EMC_API void emc_reset_peak_memory_stats(void) {
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < EMC_MAX_DEVICES && pools[dev])
        emc_pool_reset_peak(pools[dev]);
}

EMC_API int emc_empty_cache(void) {
    int dev = 0;
    EMC_CHECK(cudaGetDevice(&dev), "emc_empty_cache");
    /* blocks freed on a stream may still be read by queued kernels */
    EMC_CHECK(cudaDeviceSynchronize(), "emc_empty_cache");
    if (dev >= 0 && dev < EMC_MAX_DEVICES && pools[dev]) emc_pool_empty_cache(pools[dev]);
    return 0;
}
