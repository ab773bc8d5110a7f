/* Library identity and error reporting. */
#include <stdio.h>
#include <string.h>
#include "common.cuh"

#define EMC_ABI_VERSION 1

static __thread char last_error[512];

int emc_set_error(int code, const char *where) {
    snprintf(last_error, sizeof last_error, "%s: %s", where, emc_error_string(code));
    return code;
}

EMC_API int emc_abi_version(void) { return EMC_ABI_VERSION; }
EMC_API int emc_built_cuda_version(void) { return CUDART_VERSION; }
EMC_API const char *emc_last_error(void) { return last_error; }

EMC_API const char *emc_error_string(int code) {
    switch (code) {
    case EMC_OK: return "no error";
    case EMC_E_DTYPE: return "no kernel for this dtype";
    case EMC_E_OP: return "unknown op code";
    case EMC_E_ARG: return "invalid argument";
    case EMC_E_INDEX: return "index out of range";
    case EMC_E_NOMEM: return "out of host memory";
    default: return cudaGetErrorString((cudaError_t)code);
    }
}

static int *error_flag;

int *emc_error_flag(void) {
    /* allocated once, on the device current at first use */
    if (!error_flag) {
        int *p = NULL;
        if (cudaMalloc((void **)&p, sizeof(int)) != cudaSuccess) return NULL;
        cudaMemset(p, 0, sizeof(int));
        error_flag = p;
    }
    return error_flag;
}

EMC_API int emc_check_index_error(void *stream) {
    int *f = emc_error_flag();
    if (!f) return emc_set_error(EMC_E_NOMEM, "emc_check_index_error");
    int v = 0;
    EMC_CHECK(cudaMemcpyAsync(&v, f, sizeof(int), cudaMemcpyDeviceToHost, (cudaStream_t)stream),
              "emc_check_index_error");
    EMC_CHECK(cudaStreamSynchronize((cudaStream_t)stream), "emc_check_index_error");
    if (!v) return 0;
    EMC_CHECK(cudaMemsetAsync(f, 0, sizeof(int), (cudaStream_t)stream), "emc_check_index_error");
    return emc_set_error(EMC_E_INDEX, "index kernel");
}
