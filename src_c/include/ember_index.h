/* Indexing kernels: advanced-index gather/put/accumulate, gather/scatter along a
   dim, masked ops, nonzero, contiguous concatenation and triangle masks.
   Indices are int64 and were bounds-checked by the caller (except in the
   em_ix_offsets / em_check_bounds helpers, which do the checking). */
#ifndef EMBER_INDEX_H
#define EMBER_INDEX_H
#include <stdint.h>
#include "ember.h"

#define EM_IX_MAXDIMS 16

enum { EM_IX_GET = 0, EM_IX_PUT = 1, EM_IX_ACC = 2 };

/* Iteration [pre..., B, post...]: `a` is the indexed tensor (source for GET,
   destination for PUT/ACC), reached at off[j] bytes along B; `b` is the dense
   operand (the output for GET, the values for PUT/ACC) with stride sb_b
   along the flattened B.  Strides in bytes; both operands have dtype `dtype`. */
typedef struct {
    int op, dtype;
    char *a;
    char *b;
    int npre, npost;
    int64_t pre_shape[EM_IX_MAXDIMS], pre_sa[EM_IX_MAXDIMS], pre_sb[EM_IX_MAXDIMS];
    int64_t post_shape[EM_IX_MAXDIMS], post_sa[EM_IX_MAXDIMS], post_sb[EM_IX_MAXDIMS];
    int64_t nb;
    const int64_t *off;
    int64_t sb_b;
} em_ix_plan;

/* off[j] = sum_k wrap(idx[k][j]) * strides[k] for n positions (idx contiguous
   int64); negative indices wrap.  Returns -1, or the k of the first index out
   of range (its value stored in *bad). */
int em_ix_offsets(int k, const int64_t *const *idx, const int64_t *sizes,
                  const int64_t *strides, int64_t n, int64_t *off, int64_t *bad);
/* first i with idx[i] outside [lo, size) (idx contiguous), or -1 */
int64_t em_check_bounds(const int64_t *idx, int64_t n, int64_t lo, int64_t size);
void em_ix_run(const em_ix_plan *p, int nthreads);

/* em_loop-style loops (driven by em_run_nd):
   gather:  ptrs [out, src(dim stride 0), index]        aux = em_dim_aux
   scatter: ptrs [dst(dim stride 0), src, index]         aux = em_dim_aux (op: EM_RED_*)
   masked fill: ptrs [dst, mask(bool)]                   aux = em_fill_aux */
enum { EM_RED_SET = 0, EM_RED_ADD, EM_RED_MUL, EM_RED_MAX, EM_RED_MIN };
typedef struct { int dtype, op; int64_t dim_stride; } em_dim_aux;
typedef struct { int itemsize; uint64_t value; uint64_t value_hi; } em_fill_aux; /* value_hi: 16-byte items */
void em_gather_loop(char **p, const int64_t *st, int64_t n, const void *aux);
void em_scatter_loop(char **p, const int64_t *st, int64_t n, const void *aux);
void em_masked_fill_loop(char **p, const int64_t *st, int64_t n, const void *aux);

/* contiguous bool/uint8 data */
int64_t em_count_nonzero(const uint8_t *m, int64_t n, int nthreads);
/* coordinates of the non-zeros: out[k * ndim + d] */
void em_nonzero(const uint8_t *m, int ndim, const int64_t *shape, int64_t n, int64_t *out);
/* out <- src[m != 0] (contiguous, itemsize isz) */
void em_masked_select(char *out, const char *src, const uint8_t *m, int64_t n, int isz);
/* dst[m != 0] <- consecutive elements of src (contiguous) */
void em_masked_scatter(char *dst, const char *src, const uint8_t *m, int64_t n, int isz);

/* Concatenate contiguous pieces: for each of `outer` rows, piece p contributes
   row_bytes[p] bytes at column col_bytes[p] of the out row (out_row bytes). */
void em_cat_rows(char *out, int64_t outer, int64_t out_row, int npieces, char *const *src,
                 const int64_t *row_bytes, const int64_t *col_bytes, int nthreads);

/* Zero the part of each rows x cols matrix (contiguous, batch of them) outside
   the triangle: lower keeps j - i <= k, upper keeps j - i >= k. */
void em_tri(char *data, int64_t batch, int64_t rows, int64_t cols, int64_t k, int upper,
            int isz, int nthreads);
#endif
