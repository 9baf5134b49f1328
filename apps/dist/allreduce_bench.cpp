// The cost of normnet::dist::all_reduce on this machine, for the README's cost model: the time
// of one in-place sum of P floats across the ranks, for P from 1 to 4M, fitted to
// t(P) = alpha + beta * P (least squares over the sizes). Run it under mpirun, once per transport:
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader build/apps/dist/allreduce_bench
//   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo build/apps/dist/allreduce_bench
// Each size is timed 200 times (20 for the largest) after 5 warm-up calls; the table shows the
// median of the slowest rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "normnet/normnet.hpp"

using namespace normnet;

int main() {
    dist::init_process_group();
    const int rank = dist::get_rank();
    std::vector<double> sizes, times;
    if (rank == 0) std::printf("%12s %14s %12s\n", "floats", "median us", "GB/s");
    for (int64_t p = 1; p <= (int64_t{1} << 22); p *= 4) {
        Tensor t = ones({p});
        const int repeats = p >= (1 << 20) ? 20 : 200;
        std::vector<double> runs;
        for (int r = 0; r < repeats + 5; ++r) {
            dist::barrier();
            const auto start = std::chrono::steady_clock::now();
            dist::all_reduce(t);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (r >= 5) runs.push_back(s);  // the first few warm the connections up
        }
        std::sort(runs.begin(), runs.end());
        // The slowest rank decides when a step can go on.
        double median = runs[runs.size() / 2];
        dist::all_reduce(&median, 1, dist::ReduceOp::max);
        sizes.push_back(static_cast<double>(p));
        times.push_back(median);
        if (rank == 0) std::printf("%12lld %14.1f %12.2f\n", static_cast<long long>(p), median * 1e6, 4.0 * p / median / 1e9);
    }
    // Least squares of t = alpha + beta * P in relative error (weights 1 / t^2), so the small
    // sizes set alpha and the large ones beta, and one slow large size cannot swamp the fit.
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        const double w = 1.0 / (times[i] * times[i]);
        sw += w, sx += w * sizes[i], sy += w * times[i], sxx += w * sizes[i] * sizes[i], sxy += w * sizes[i] * times[i];
    }
    const double beta = (sw * sxy - sx * sy) / (sw * sxx - sx * sx), alpha = (sy - beta * sx) / sw;
    if (rank == 0) {
        std::printf("fit over %d ranks: alpha = %.2f us, beta = %.3f ns per float (%.2f GB/s)\n", dist::get_world_size(),
                    alpha * 1e6, beta * 1e9, 4.0 / beta / 1e9);
    }
    return 0;
}
