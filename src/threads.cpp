// Thread control: one setting for OpenBLAS and normnet's OpenMP loops, so the two never
// oversubscribe the cores.
#include "normnet/threads.hpp"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <mutex>

#include "normnet/error.hpp"

// Exported by OpenBLAS's pthread build (declared weak: other builds may lack it).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace normnet {
namespace detail {

void configure_blas_threads() {
    static std::once_flag once;
    std::call_once(once, [] {
        // After each threaded call OpenBLAS's idle workers busy-wait for 2^28 cycles (about 0.1 s)
        // before sleeping. Training alternates matrix products with other work many times a
        // second, so the workers would spin all the time and take the core from the main thread.
        // Make them sleep at once: their timeout is read when the pool starts, so restart it.
        // A user's own OPENBLAS_THREAD_TIMEOUT is respected.
        if (std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr && blas_thread_shutdown_ != nullptr) {
            setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
            blas_thread_shutdown_();  // the pool restarts lazily with the new timeout
        }
    });
}

}  // namespace detail

void set_num_threads(int threads) {
    check(threads > 0, "set_num_threads: the thread count must be positive, got ", threads);
    detail::configure_blas_threads();
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
}

int get_num_threads() { return openblas_get_num_threads(); }

}  // namespace normnet
