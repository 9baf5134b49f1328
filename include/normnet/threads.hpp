// The thread count of normnet's compute: its parallel loops and the matrix products it splits
// between threads (OpenBLAS itself runs on one thread).
//
// The count, in order of precedence:
//   1. set_num_threads(n), as torch::set_num_threads;
//   2. NORMNET_NUM_THREADS, a whole number from 1 to kMaxThreads (anything else is an error,
//      thrown by the first call that needs the count);
//   3. OMP_NUM_THREADS, as libtorch reads it: its first value ("4" of "4,2"); a value that is not
//      a whole number from 1 to kMaxThreads is ignored, as the OpenMP runtime ignores it;
//   4. available_cpus(): the CPUs the process may run on (its affinity mask: taskset, cpusets,
//      a launcher's binding), capped by its cgroup's CPU quota (a container's --cpus).
// The environment is read once, when the count is first needed.
#pragma once

#include <optional>
#include <string>

#include "normnet/export.hpp"

namespace normnet {

/// The most threads set_num_threads and the environment may ask for.
inline constexpr int kMaxThreads = 1024;

/// Sets the threads used by parallel loops and matrix products (1 to kMaxThreads); overrides the
/// environment. More threads than available CPUs work, at about the speed of as many threads as
/// CPUs: the pool's threads then never spin waiting for each other. Results do not depend on
/// the count beyond floating-point summation order.
NORMNET_API void set_num_threads(int threads);
/// The current thread count: set_num_threads's, else default_num_threads().
NORMNET_API int get_num_threads();
/// The kernel set OpenBLAS runs in this process ("Cooperlake", "SkylakeX", "Haswell", ...): it
/// picks one by the CPU when it loads, unless OPENBLAS_CORETYPE names one. It sets the speed of
/// the matrix products and, with the block sizes (OPENBLAS_L2_SIZE), their rounding.
NORMNET_API std::string blas_kernels();
/// The count before any set_num_threads: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else
/// available_cpus() (the order above). Throws normnet::Error for a bad NORMNET_NUM_THREADS.
NORMNET_API int default_num_threads();
/// The count the environment asks for (NORMNET_NUM_THREADS, else OMP_NUM_THREADS), if any.
NORMNET_API std::optional<int> num_threads_from_environment();
/// The CPUs this process may use: the CPUs of its affinity mask, capped by its cgroup CPU quota
/// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us; a fractional quota rounds up); at least 1.
NORMNET_API int available_cpus();

}  // namespace normnet
