/* Elementwise op codes and the per-ISA kernel table, generated from the op
   lists of ember_ew_ops.h (one line per op). */
#ifndef EMBER_EW_H
#define EMBER_EW_H
#include "ember.h"

#include "ember_ew_ops.h"

/* the op codes, one enum per list of ember_ew_ops.h */
#define EW_CODE_(C, ...) EW_##C,
enum { EW_BINARY_OPS(EW_CODE_) EW_NBIN };      /* binary, out dtype == in dtype */
enum { EW_COMPARE_OPS(EW_CODE_) EW_NCMP };     /* binary, bool out */
enum { EW_UNARY_OPS(EW_CODE_) EW_NUN };        /* unary, out dtype == in dtype */
enum { EW_PREDICATE_OPS(EW_CODE_) EW_NPRED };  /* unary, bool out */
#undef EW_CODE_

/* result-dtype kinds (the lists' `kind` column; elementwise.pyx's K_*) */
enum { EW_K_ARITH, EW_K_DIV, EW_K_CMP, EW_K_INT, EW_K_FLOAT };
enum { EW_G_BIN, EW_G_CMP, EW_G_UN, EW_G_PRED };   /* the four lists */

/* The public name ("" when bound by hand) and kind of op `op` of list `group`,
   for the bindings generated at import. */
#define EW_NAME_(C, k, pub, ...) pub,
#define EW_KIND_(C, k, pub, kind, ...) EW_K_##kind,
static inline const char *em_ew_op_name(int group, int op) {
    static const char *const bin[] = {EW_BINARY_OPS(EW_NAME_) ""};
    static const char *const cmp[] = {EW_COMPARE_OPS(EW_NAME_) ""};
    static const char *const un[] = {EW_UNARY_OPS(EW_NAME_) ""};
    static const char *const pred[] = {EW_PREDICATE_OPS(EW_NAME_) ""};
    return group == EW_G_BIN ? bin[op] : group == EW_G_CMP ? cmp[op] :
           group == EW_G_UN ? un[op] : pred[op];
}
static inline int em_ew_op_kind(int group, int op) {
    static const int bin[] = {EW_BINARY_OPS(EW_KIND_) 0};
    static const int un[] = {EW_UNARY_OPS(EW_KIND_) 0};
    return group == EW_G_BIN ? bin[op] : group == EW_G_UN ? un[op] : EW_K_CMP;
}
#undef EW_NAME_
#undef EW_KIND_

typedef struct {
    em_loop bin[EW_NBIN][EM_NDTYPES];
    em_loop cmp[EW_NCMP][EM_NDTYPES];
    em_loop un[EW_NUN][EM_NDTYPES];
    em_loop pred[EW_NPRED][EM_NDTYPES];
    em_loop where[EM_NDTYPES]; /* ptrs: out, cond(bool), a, b */
    em_loop lerp[EM_NDTYPES];  /* ptrs: out, a, b, w */
    em_loop glu_bw[EM_NDTYPES];  /* ptrs: grad of a, grad of b, grad, a, b */
    em_loop addcmul[EM_NDTYPES];   /* ptrs: out, a, b, c: a + v * b * c, v in aux (a T) */
    em_loop addcdiv[EM_NDTYPES];   /* a + v * b / c */
    em_loop clamp3[EM_NDTYPES];    /* ptrs: out, x, lo, hi: minimum(maximum(x, lo), hi) */
} em_ew_table;

/* aux blocks: integer division writes 1 to *(int *)aux on a zero divisor;
   clamp reads {T lo; pad; T hi; pad; int flags} as 8-byte slots; parametric
   float ops read doubles. */
const em_ew_table *em_ew_get(void);
const em_ew_table *em_ew_table_generic(void);
const em_ew_table *em_ew_table_avx2(void);
const em_ew_table *em_ew_table_avx512(void);
/* fill the complex64/complex128 slots of a table (src_c/complex.c) */
void em_ew_add_complex(em_ew_table *t);
#endif
