/* Portable elementwise kernels and the run-time choice of ISA table. */
#define EW_TABLE_FN em_ew_table_generic
#include "ew_impl.h"

const em_ew_table *em_ew_get(void) {
    static const em_ew_table *chosen = NULL;
    if (!chosen) {
        int isa = ember_cpu_isa();
        const em_ew_table *t = isa == 2 ? em_ew_table_avx512() : isa == 1 ? em_ew_table_avx2()
                                                                       : em_ew_table_generic();
        em_ew_add_complex((em_ew_table *)t);
        chosen = t;
    }
    return chosen;
}
