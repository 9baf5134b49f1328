// Thread control. normnet runs one pool of threads (parallel.cpp) for its row loops and splits
// each large matrix product into per-thread OpenBLAS calls, so OpenBLAS itself runs on one
// thread: two pools on the same cores would take turns spinning and waking each other.
#include "normnet/threads.hpp"

#include <cblas.h>

#include <mutex>

#include "normnet/error.hpp"
#include "ops/gemm.hpp"
#include "parallel.hpp"

namespace normnet {
namespace detail {

void use_single_threaded_blas() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

}  // namespace detail

void set_num_threads(int threads) {
    NORMNET_CHECK(threads > 0, "set_num_threads: the thread count must be positive, got ", threads);
    detail::use_single_threaded_blas();
    detail::set_pool_threads(threads);
}

int get_num_threads() { return detail::pool_threads(); }

}  // namespace normnet
