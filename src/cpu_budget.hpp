// Internal: how many CPUs this process may use, from the kernel's view of it: the affinity mask
// (taskset, cpusets, a launcher's binding) and the cgroup CPU quota (a container's --cpus, a
// systemd CPUQuota); and the thread count the environment asks for. threads.cpp turns them into
// the default thread count.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace normnet::detail {

/// CPUs in the calling thread's affinity mask (sched_getaffinity); 0 when it cannot be read.
int affinity_cpus();

/// The CPU quota of the cgroups this process belongs to, in CPUs rounded up (a quota of 150 ms
/// per 100 ms period is 2): the smallest limit on the way from its cgroup up to the hierarchy's
/// root, from cgroup v2's cpu.max and v1's cpu.cfs_quota_us / cpu.cfs_period_us. 0 when there
/// is no quota or it cannot be read. Every path read is prefixed by `root` ("" for the real
/// /proc and /sys; tests point it at a directory holding a made-up tree).
int cgroup_cpu_limit(const std::string& root = "");

/// A thread count written in an environment variable: a whole number from 1 to kMaxThreads,
/// spaces around it allowed; nothing for anything else.
std::optional<int> parse_thread_count(std::string_view text);
/// The count asked for by NORMNET_NUM_THREADS's value (null or empty: unset; invalid: throws
/// normnet::Error), else by OMP_NUM_THREADS's first value (invalid: ignored), else nothing.
std::optional<int> thread_count_from(const char* normnet_value, const char* omp_value);

}  // namespace normnet::detail
