// The thread count of normnet's compute: OpenBLAS's matrix products and normnet's own loops.
#pragma once

namespace normnet {

/// Sets the threads used by matrix products and parallel loops (default: the number of cores).
/// Results do not depend on it beyond floating-point summation order.
void set_num_threads(int threads);
/// The current thread count.
int get_num_threads();

}  // namespace normnet
