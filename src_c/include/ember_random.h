/* ember's random-number kernels: counter-based Philox4x32-10.

   Every value is a pure function of (seed, offset, element index): a call
   draws from the counter space {block index (64 bits), offset (64 bits)} under
   the key `seed`, and each call advances the generator's offset by one, so
   successive calls never share counters.  Threads split the index range in
   whole batches, so the numbers are the same on any thread count and with
   any kernel ISA (no FMA contraction: -std=c11 keeps -ffp-contract=off).

   Element -> counter mapping: elements are grouped in batches of
   EM_PHILOX_BATCH consecutive blocks; within a batch, lane L (0..3) of block
   b feeds element L*EM_PHILOX_BATCH + b (one 32-bit word per element), or
   word pair (2P, 2P+1) of block b feeds element P*EM_PHILOX_BATCH + b (64-bit
   consumers).  That layout keeps every store contiguous, so the loops
   vectorize.  Nothing here knows about Python. */
#ifndef EMBER_RANDOM_H
#define EMBER_RANDOM_H
#include <stdint.h>
#include "ember.h"

#define EM_PHILOX_BATCH 16

/* distributions of em_rand_float (a, b are the distribution's parameters) */
enum {
    EM_RD_UNIFORM = 0,     /* [a, b) */
    EM_RD_NORMAL,          /* mean a, std b (Box-Muller) */
    EM_RD_LOGNORMAL,       /* exp(N(a, b)) */
    EM_RD_EXPONENTIAL,     /* rate a */
    EM_RD_CAUCHY,          /* median a, scale b */
    EM_RD_GEOMETRIC        /* success probability a: values 1, 2, ... */
};

/* One Philox4x32-10 block (reference implementation, for known-answer tests). */
void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Fill n contiguous elements of `dtype` (any dtype; integer outputs take the
   value converted as C does) with draws from distribution `kind`.  Floating
   outputs of float32/float16/bfloat16 are computed in float32 from one 32-bit
   word per element (uniform uses the destination's mantissa width), float64
   and integer outputs in float64 from 64 bits per element. */
void em_rand_float(int kind, int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                   double a, double b, int nthreads);

/* out[i] = lo + uniform integer in [0, range); range == 0 means 2^64.
   Ranges up to 2^32 use one 32-bit word per element (Lemire's multiply),
   larger ones 64 bits and a modulo.  Any output dtype (C conversion). */
void em_rand_int(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset, int64_t lo,
                 uint64_t range, int nthreads);

/* out[i] = 1 with probability p (0 <= p <= 1), else 0; any output dtype. */
void em_rand_bernoulli(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset, double p,
                       int nthreads);

/* In place: p[i] (a probability) becomes 1.0 with probability p[i], else 0.0.
   Returns the number of entries outside [0, 1] (nothing is drawn then). */
int64_t em_rand_bernoulli_p(double *p, int64_t n, uint64_t seed, uint64_t offset, int nthreads);

/* Dropout in one pass over contiguous x (float32/float64/float16/bfloat16):
   mask[i] = keep with probability 1 - p, out[i] = keep ? x[i] / (1 - p) : 0. */
void em_dropout(int dtype, const void *x, void *out, uint8_t *mask, int64_t n, double p,
                uint64_t seed, uint64_t offset, int nthreads);

/* A uniformly random permutation of 0..n-1 (Fisher-Yates), serial. */
void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset);

/* Multinomial sampling from `rows` contiguous rows of ncat non-negative
   weights (float64): nsamp indices per row into out (int64).  Returns 0, or
   1 when a weight is negative / not finite, 2 when a row sums to <= 0,
   3 when a row has fewer than nsamp non-zero weights (replacement == 0). */
int em_multinomial(const double *p, int64_t rows, int64_t ncat, int64_t nsamp, int replacement,
                   int64_t *out, uint64_t seed, uint64_t offset, int nthreads);

/* The inner loop of normal(mean_tensor, std_tensor): ptrs = (out, z, mean, std),
   out = mean + std * z, in float32 or float64 (NULL for other dtypes). */
em_loop em_normal_affine_loop(int dtype);

/* The Philox blocks (blk0 + b, offset) under key `seed` for b < EM_PHILOX_BATCH,
   word m of block b in w[m][b]; blk0 must be a multiple of EM_PHILOX_BATCH. */
void em_philox_blocks(uint32_t w[4][EM_PHILOX_BATCH], uint64_t blk0, uint64_t offset,
                      uint64_t seed);

/* Rejection samplers (src_c/samplers.c): one draw per element from contiguous
   parameters of `dtype` (EM_F32 or EM_F64) into contiguous out of the same dtype;
   element i draws from its own stream, so the result is the same on any thread
   count.  Gamma(alpha, 1) (alpha == 0 gives 0, alpha < 0 or NaN gives NaN; then
   every draw below `tiny` becomes `tiny`); Poisson(rate) (returns the number of
   negative or NaN rates, drawing nothing when there are any); Binomial(count, prob)
   (0 for count <= 0 or prob <= 0, count for prob >= 1, NaN for NaN). */
void em_sample_gamma(int dtype, const void *alpha, void *out, int64_t n, uint64_t seed,
                     uint64_t offset, double tiny, int nthreads);
int64_t em_sample_poisson(int dtype, const void *rate, void *out, int64_t n, uint64_t seed,
                          uint64_t offset, int nthreads);
void em_sample_binomial(int dtype, const void *count, const void *prob, void *out, int64_t n,
                        uint64_t seed, uint64_t offset, int nthreads);
/* out = dx/dalpha of Gamma(alpha, 1) draws x (implicit reparameterisation) */
void em_standard_gamma_grad(const double *alpha, const double *x, double *out, int64_t n,
                            int nthreads);

/* The ISA the random kernels run with (0 generic, 1 AVX2+FMA, 2 AVX-512). */
int em_random_isa(void);
#endif
