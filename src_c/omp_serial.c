/* One-thread OpenMP regions, run directly.
 *
 * libgomp ends every parallel region with a team barrier whose wake-up is a
 * futex syscall, even for a team of one (an `if (nt > 1)` clause that is
 * false, or num_threads(1)).  That is ~0.4 us per region, on every small op
 * that has a threaded path.  The build links each module with
 * `-Wl,--wrap=GOMP_parallel`, so GCC's calls land here; a one-thread region
 * outside any multi-thread one calls its body directly, where omp for /
 * barrier / reduction constructs are orphaned and run serially at no cost,
 * with thread number 0 of 1.  Inside a multi-thread region it must stay a real
 * (nested) team: an orphaned `omp for` would bind to the enclosing team. */
#ifdef _OPENMP
#include <omp.h>
#define EM_HIDDEN __attribute__((visibility("hidden")))

void __real_GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);

EM_HIDDEN void __wrap_GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads,
                                    unsigned flags) {
    if (nthreads == 1 && !omp_in_parallel()) {
        fn(data);
        return;
    }
    __real_GOMP_parallel(fn, data, nthreads, flags);
}
#endif
