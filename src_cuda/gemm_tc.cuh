/* Index math of the mma.sync GEMM kernel (gemm.cu): where each 16-byte chunk of
   an operand tile lives in shared memory, and which chunk each lane hands to
   ldmatrix.  Plain integer functions, so tests/cuda/gemm_layout_sim.cpp can
   replay a warp's loads on the host and check them against a reference product.

   A block tile is TC_BM x TC_BN outputs; a K-tile is 64 bytes of K (32 halves or
   16 floats), i.e. 4 chunks.  Each operand tile is stored the way it lies in
   global memory, so cp.async moves it unchanged:
     K-contiguous  (A, or B transposed): rows are M (N) indices of 4 chunks;
     MN-contiguous (A transposed, or B): rows are K indices of w chunks.
   The chunk within a row is XOR-swizzled with the row so that the 8 row
   addresses of one ldmatrix phase (and the scalar TF32 loads) fall in 8
   different 16-byte bank groups. */
#ifndef EMC_GEMM_TC_CUH
#define EMC_GEMM_TC_CUH

#ifdef __CUDACC__
#define TC_HD __host__ __device__ __forceinline__
#else
#define TC_HD inline
#endif

#define TC_BM 128
#define TC_BN 256
#define TC_STAGES 4
#define TC_THREADS 256
#define TC_KCH 4   /* chunks of K per tile row */

/* chunk slot of (row r, chunk c) in a K-contiguous tile: a row is 64 bytes, so
   two rows share a 128-byte bank line; rows r and r+1 take its two halves and
   (r >> 1) & 3 permutes the chunks within a half */
TC_HD int tc_kc(int r, int c) { return r * TC_KCH + (c ^ ((r >> 1) & 3)); }

/* chunk slot in an MN-contiguous tile with w chunks per row (w a multiple of 8).
   ldmatrix.trans reads 8 consecutive rows at one chunk: r & 7 spreads them.
   The TF32 kernel reads 4 consecutive rows x 2 adjacent chunks with scalar
   loads: ((r & 3) << 1) spreads those. */
TC_HD int tc_mn(int r, int c, int w, bool tf32) {
    return r * w + (c ^ (tf32 ? ((r & 3) << 1) : (r & 7)));
}

/* ---- per-lane ldmatrix.x4 chunks.  s: the MMA k-step within the K-tile (each
   step covers 2 chunks: k16 halves or k8 floats). ---- */

/* A, K-contiguous (non-transposed A), the m16 tile at row mb: matrices
   (m 0-7, k lo), (m 8-15, k lo), (m 0-7, k hi), (m 8-15, k hi) = a0..a3 */
TC_HD int tc_a_kc(int lane, int mb, int s) {
    return tc_kc(mb + (lane & 15), 2 * s + (lane >> 4));
}

/* A, MN-contiguous (transposed A), 16-bit only, loaded with .trans: matrix j
   covers k rows 8*(j>>1).. and m columns 8*(j&1).. */
TC_HD int tc_a_mn(int lane, int mb, int s, int w) {
    const int j = lane >> 3;
    return tc_mn(16 * s + (lane & 7) + (j >> 1) * 8, (mb + (j & 1) * 8) / 8, w, false);
}

/* B, K-contiguous (transposed B), the two n8 tiles at nb and nb+8: matrices
   (n 0-7, k lo), (n 0-7, k hi), (n 8-15, k lo), (n 8-15, k hi) =
   b0, b1 of tile nb, b0, b1 of tile nb+8 */
TC_HD int tc_b_kc(int lane, int nb, int s) {
    const int j = lane >> 3;
    return tc_kc(nb + (lane & 7) + (j >> 1) * 8, 2 * s + (j & 1));
}

/* B, MN-contiguous (non-transposed B), 16-bit only, loaded with .trans: matrix j
   covers k rows 8*(j&1).. and n columns 8*(j>>1).. (same register order) */
TC_HD int tc_b_mn(int lane, int nb, int s, int w) {
    const int j = lane >> 3;
    return tc_mn(16 * s + (lane & 7) + (j & 1) * 8, (nb + (j >> 1) * 8) / 8, w, false);
}

/* float index of element (k row, column x) in an MN-contiguous TF32 tile */
TC_HD int tc_mn_f32(int k, int x, int w) { return tc_mn(k, x >> 2, w, true) * 4 + (x & 3); }

/* ---- the Hopper kernel's tiles (gemm_ws): where TMA's 128-byte swizzle puts each
   16-byte chunk (chunk c of 128-byte line L at c ^ (L & 7), 1024-byte aligned 8-line
   atoms), which are the canonical layouts wgmma's descriptors read. */
#define WG_BK 64   /* K rows of an MN-major (16-bit) tile */
/* byte offset of chunk c (16 bytes of K) of row r (an M or N index) in a
   K-major tile: rows of 128 bytes, 8-row groups 1024 bytes apart (SBO) */
TC_HD int wg_kmaj(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }
/* byte offset of chunk cn (8 elements of M or N) of K row k in an MN-major tile:
   atoms of 64 columns x 8 k rows; k groups 1024 bytes apart (SBO), column blocks
   of 64 WG_MN_LBO bytes apart (LBO) */
#define WG_MN_LBO (WG_BK * 128)
TC_HD int wg_mnmaj(int k, int cn) {
    return (cn >> 3) * WG_MN_LBO + k * 128 + (((cn & 7) ^ (k & 7)) << 4);
}

#endif
