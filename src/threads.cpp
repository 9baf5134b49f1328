// Thread control: the count's precedence (include/normnet/threads.hpp) and the setter. normnet
// runs one pool of threads (parallel.cpp) for its row loops and splits each large matrix product
// into per-thread OpenBLAS calls, so OpenBLAS itself runs on one thread: two pools on the same
// cores would take turns spinning and waking each other.
#include "normnet/threads.hpp"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "cpu_budget.hpp"
#include "normnet/error.hpp"
#include "ops/gemm.hpp"
#include "parallel.hpp"

namespace normnet {
namespace detail {

void use_single_threaded_blas() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

std::optional<int> parse_thread_count(std::string_view text) {
    const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    if (text.empty() || text.size() > 4) return std::nullopt;
    int value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    if (value < 1 || value > kMaxThreads) return std::nullopt;
    return value;
}

std::optional<int> thread_count_from(const char* normnet_value, const char* omp_value) {
    if (normnet_value != nullptr && *normnet_value != '\0') {
        const auto n = parse_thread_count(normnet_value);
        NORMNET_CHECK(n.has_value(), "NORMNET_NUM_THREADS='", normnet_value, "': expected a whole number of threads from 1 to ",
                      kMaxThreads, " (unset it to use every available CPU)");
        return n;
    }
    if (omp_value != nullptr) {
        // OpenMP's list form "4,2" gives the count of each nesting level; the first is ours.
        const std::string_view list(omp_value);
        return parse_thread_count(list.substr(0, list.find(',')));
    }
    return std::nullopt;
}

}  // namespace detail

std::string blas_kernels() {
    const char* name = openblas_get_corename();
    return name != nullptr ? name : "";
}

void set_num_threads(int threads) {
    NORMNET_CHECK(threads > 0 && threads <= kMaxThreads, "set_num_threads: the thread count must be from 1 to ",
                  kMaxThreads, ", got ", threads);
    detail::use_single_threaded_blas();
    detail::set_pool_threads(threads);
}

int get_num_threads() { return detail::pool_threads(); }

std::optional<int> num_threads_from_environment() {
    return detail::thread_count_from(std::getenv("NORMNET_NUM_THREADS"), std::getenv("OMP_NUM_THREADS"));
}

int available_cpus() {
    int cpus = detail::affinity_cpus();
    if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
    const int quota = detail::cgroup_cpu_limit();
    if (quota > 0) cpus = cpus > 0 ? std::min(cpus, quota) : quota;
    return std::clamp(cpus, 1, kMaxThreads);
}

int default_num_threads() {
    const auto from_environment = num_threads_from_environment();
    return from_environment ? *from_environment : available_cpus();
}

}  // namespace normnet
