// The thread count of normnet's compute: OpenBLAS's matrix products and normnet's own loops.
#pragma once

#include "normnet/export.hpp"

namespace normnet {

/// Sets the threads used by matrix products and parallel loops (default: the number of cores).
/// Results do not depend on it beyond floating-point summation order.
NORMNET_API void set_num_threads(int threads);
/// The current thread count.
NORMNET_API int get_num_threads();

}  // namespace normnet
