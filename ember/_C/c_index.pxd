# ember_index.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t, uint64_t, uint8_t


cdef extern from "ember_index.h" nogil:
    enum:
        EM_IX_GET
        EM_IX_PUT
        EM_IX_ACC
        EM_RED_SET
        EM_RED_ADD
        EM_RED_MUL
        EM_RED_MAX
        EM_RED_MIN
    ctypedef struct em_ix_plan:
        int op
        int dtype
        char *a
        char *b
        int npre
        int npost
        int64_t pre_shape[16]
        int64_t pre_sa[16]
        int64_t pre_sb[16]
        int64_t post_shape[16]
        int64_t post_sa[16]
        int64_t post_sb[16]
        int64_t nb
        const int64_t *off
        int64_t sb_b
    ctypedef struct em_dim_aux:
        int dtype
        int op
        int64_t dim_stride
    ctypedef struct em_fill_aux:
        int itemsize
        uint64_t value
        uint64_t value_hi
    int em_ix_offsets(int k, const int64_t *const *idx, const int64_t *sizes,
                      const int64_t *strides, int64_t n, int64_t *off, int64_t *bad)
    int64_t em_check_bounds(const int64_t *idx, int64_t n, int64_t lo, int64_t size)
    void em_ix_run(const em_ix_plan *p, int nthreads)
    void em_gather_loop(char **p, const int64_t *st, int64_t n, const void *aux)
    void em_scatter_loop(char **p, const int64_t *st, int64_t n, const void *aux)
    void em_masked_fill_loop(char **p, const int64_t *st, int64_t n, const void *aux)
    int64_t em_count_nonzero(const uint8_t *m, int64_t n, int nthreads)
    void em_nonzero(const uint8_t *m, int ndim, const int64_t *shape, int64_t n, int64_t *out)
    void em_masked_select(char *out, const char *src, const uint8_t *m, int64_t n, int isz)
    void em_masked_scatter(char *dst, const char *src, const uint8_t *m, int64_t n, int isz)
    void em_cat_rows(char *out, int64_t outer, int64_t out_row, int npieces, char *const *src,
                     const int64_t *row_bytes, const int64_t *col_bytes, int nthreads)
    void em_tri(char *data, int64_t batch, int64_t rows, int64_t cols, int64_t k, int upper,
                int isz, int nthreads)
