// Thread control: one setting for OpenBLAS and normnet's OpenMP loops, so the two never
// oversubscribe the cores.
#include "normnet/threads.hpp"

#include <cblas.h>
#include <omp.h>

#include "normnet/error.hpp"

namespace normnet {

void set_num_threads(int threads) {
    check(threads > 0, "set_num_threads: the thread count must be positive, got ", threads);
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
}

int get_num_threads() { return openblas_get_num_threads(); }

}  // namespace normnet
