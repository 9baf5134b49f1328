// ops_bench: memory throughput (GB/s) of normnet's elementwise, softmax and reduction kernels
// against a plain copy loop (the memory-bandwidth reference, split over the same thread pool)
// and against libtorch on the same shapes, in one run, as one table.
//
//   ops_bench [--sizes 1M,4M,16M] [--threads T] [--rounds R] [--min-time S] [--ops add,gelu,...]
//             [--libtorch PATH | --no-libtorch] [--tsv]
//
// Cases (n floats each): copy y = x; add [n/1024, 1024] + [1024]; gelu and gelu_tanh on [n];
// softmax over the last dim of [n/1024, 1024]; sum over dim 1 and dim 0 of [n/1024, 1024].
// Bytes counted are the compulsory traffic: every input read once, every output written once.
// Each round times every case (median of repetitions, at least --min-time seconds each) in
// normnet, then runs the libtorch peer (apps/peers/libtorch_ops, built where libtorch-dev is
// installed) on the same cases; the table shows the best round of each. libtorch writes into
// preallocated outputs (add_out, gelu_out, ...) and normnet's outputs come from its caching
// allocator, so neither side pays for fresh pages.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "normnet/normnet.hpp"
#include "ops/loop.hpp"
#include "parallel.hpp"

#ifndef NORMNET_LIBTORCH_OPS
#define NORMNET_LIBTORCH_OPS ""
#endif

namespace {

using normnet::Tensor;

struct Options {
    std::vector<int64_t> sizes{int64_t{1} << 20, int64_t{1} << 22, int64_t{1} << 24};
    int threads = 0;  // 0: normnet's default (one per core)
    int rounds = 3;
    double min_time = 0.25;
    std::vector<std::string> ops{"copy", "add", "gelu", "gelu_tanh", "softmax", "sum_dim1", "sum_dim0"};
    std::string libtorch = NORMNET_LIBTORCH_OPS;
    bool tsv = false;
};

const char* kUsage =
    "usage: ops_bench [--sizes 1M,4M,16M] [--threads T] [--rounds R] [--min-time S]\n"
    "                 [--ops copy,add,gelu,gelu_tanh,softmax,sum_dim1,sum_dim0]\n"
    "                 [--libtorch PATH | --no-libtorch] [--tsv]\n";

// "4096", "64K", "1M": a number of floats, a multiple of 1024.
int64_t parse_size(const std::string& s) {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    const std::string unit = s.substr(used);
    const int64_t n = unit.empty() ? v : unit == "K" ? v << 10 : unit == "M" ? v << 20 : -1;
    if (n <= 0 || n % 1024 != 0) throw std::invalid_argument("--sizes: " + s + " is not a positive multiple of 1024");
    return n;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--sizes") {
            o.sizes.clear();
            for (const auto& s : bench::split(value())) o.sizes.push_back(parse_size(s));
        } else if (a == "--threads") {
            o.threads = std::stoi(value());
        } else if (a == "--rounds") {
            o.rounds = std::max(1, std::stoi(value()));
        } else if (a == "--min-time") {
            o.min_time = std::stod(value());
        } else if (a == "--ops") {
            o.ops = bench::split(value());
        } else if (a == "--libtorch") {
            o.libtorch = value();
        } else if (a == "--no-libtorch") {
            o.libtorch.clear();
        } else if (a == "--tsv") {
            o.tsv = true;
        } else if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else {
            throw std::invalid_argument("unknown option " + a + "\n" + kUsage);
        }
    }
    return o;
}

// The memory-bandwidth reference: y = x, split over normnet's thread pool as the ops are.
void copy_loop(float* __restrict y, const float* __restrict x, int64_t n) {
    normnet::detail::parallel_for(n, normnet::detail::kElementGrain, [&](int64_t b, int64_t e) {
        float* __restrict yb = y + b;
        const float* __restrict xb = x + b;
        for (int64_t i = 0; i < e - b; ++i) yb[i] = xb[i];
    });
}

// Bytes of compulsory traffic of case `op` on n floats.
double bytes_of(const std::string& op, int64_t n) {
    const double f = sizeof(float);
    if (op == "add") return f * (2.0 * n + 1024);
    if (op == "sum_dim1") return f * (n + n / 1024.0);
    if (op == "sum_dim0") return f * (n + 1024.0);
    return f * 2.0 * n;
}

// Times normnet (and the copy loop) on case op with n floats.
double time_normnet(const std::string& op, int64_t n, double min_time) {
    normnet::Generator gen(1);
    const int64_t rows = n / 1024;
    const Tensor x = normnet::randn({rows, 1024}, gen);
    const Tensor bias = normnet::randn({1024}, gen);
    Tensor out;  // released before each call, so the caching allocator hands the same block back
    if (op == "copy") {
        Tensor y = normnet::empty({rows, 1024});
        return bench::time_case([&] { copy_loop(y.data(), x.data(), n); }, min_time);
    }
    if (op == "add") return bench::time_case([&] { out = Tensor(), out = normnet::add(x, bias); }, min_time);
    if (op == "gelu") return bench::time_case([&] { out = Tensor(), out = normnet::gelu(x); }, min_time);
    if (op == "gelu_tanh") return bench::time_case([&] { out = Tensor(), out = normnet::gelu(x, "tanh"); }, min_time);
    if (op == "softmax") return bench::time_case([&] { out = Tensor(), out = normnet::softmax(x, -1); }, min_time);
    if (op == "sum_dim1") return bench::time_case([&] { out = Tensor(), out = normnet::sum(x, {1}); }, min_time);
    if (op == "sum_dim0") return bench::time_case([&] { out = Tensor(), out = normnet::sum(x, {0}); }, min_time);
    throw std::invalid_argument("unknown op " + op);
}

// Runs the libtorch peer once; returns seconds by "op/n" (empty if it could not run).
std::map<std::string, double> run_libtorch(const Options& o, int threads) {
    std::map<std::string, double> out;
    if (o.libtorch.empty()) return out;
    std::string sizes, ops;
    for (int64_t n : o.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(n);
    for (const auto& op : o.ops) ops += (ops.empty() ? "" : ",") + op;
    char min_time[32];
    std::snprintf(min_time, sizeof min_time, "%g", o.min_time);
    const std::string cmd = "'" + o.libtorch + "' --sizes " + sizes + " --ops " + ops + " --threads " +
                            std::to_string(threads) + " --min-time " + min_time;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return out;
    char line[256];
    while (std::fgets(line, sizeof line, pipe)) {
        char op[64];
        long long n = 0;
        double seconds = 0;
        if (std::sscanf(line, "%63s %lld %lf", op, &n, &seconds) == 3) out[std::string(op) + "/" + std::to_string(n)] = seconds;
    }
    if (pclose(pipe) != 0) std::fprintf(stderr, "ops_bench: %s failed; its column is left empty\n", o.libtorch.c_str());
    return out;
}

std::string size_label(int64_t n) {
    return n % (1 << 20) == 0 ? std::to_string(n >> 20) + "M" : std::to_string(n >> 10) + "K";
}

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse_args(argc, argv);
    if (o.threads > 0) normnet::set_num_threads(o.threads);
    const int threads = normnet::get_num_threads();
    std::map<std::string, double> best_normnet, best_torch;
    const auto keep_best = [](std::map<std::string, double>& best, const std::string& key, double s) {
        const auto it = best.find(key);
        if (it == best.end() || s < it->second) best[key] = s;
    };
    for (int r = 0; r < o.rounds; ++r) {
        for (int64_t n : o.sizes) {
            for (const auto& op : o.ops) keep_best(best_normnet, op + "/" + std::to_string(n), time_normnet(op, n, o.min_time));
        }
        for (const auto& [key, s] : run_libtorch(o, threads)) keep_best(best_torch, key, s);
    }
    const bool have_torch = !best_torch.empty();
    if (o.tsv) {
        std::printf("op\tfloats\tnormnet_s\tlibtorch_s\n");
    } else {
        std::printf("ops_bench: %d thread%s, best of %d round%s; GB/s of compulsory traffic (copy: 8 bytes per float)\n\n",
                    threads, threads == 1 ? "" : "s", o.rounds, o.rounds == 1 ? "" : "s");
        std::printf("| op | floats | normnet GB/s | copy GB/s | normnet / copy | libtorch GB/s | normnet / libtorch |\n");
        std::printf("|---|---|---|---|---|---|---|\n");
    }
    for (int64_t n : o.sizes) {
        const std::string nk = std::to_string(n);
        const auto copy = best_normnet.find("copy/" + nk);
        for (const auto& op : o.ops) {
            const double s = best_normnet.at(op + "/" + nk);
            const auto torch = best_torch.find(op + "/" + nk);
            if (o.tsv) {
                std::printf("%s\t%lld\t%.6g\t%.6g\n", op.c_str(), static_cast<long long>(n), s,
                            torch == best_torch.end() ? -1.0 : torch->second);
                continue;
            }
            const double gbs = bytes_of(op, n) / s * 1e-9;
            char copy_col[32] = "—", ratio_col[32] = "—", torch_col[32] = "—", vs_col[32] = "—";
            if (copy != best_normnet.end()) {
                const double copy_gbs = bytes_of("copy", n) / copy->second * 1e-9;
                std::snprintf(copy_col, sizeof copy_col, "%.1f", copy_gbs);
                std::snprintf(ratio_col, sizeof ratio_col, "%.2f", gbs / copy_gbs);
            }
            if (torch != best_torch.end()) {
                const double torch_gbs = bytes_of(op, n) / torch->second * 1e-9;
                std::snprintf(torch_col, sizeof torch_col, "%.1f", torch_gbs);
                std::snprintf(vs_col, sizeof vs_col, "%.2f", gbs / torch_gbs);
            }
            std::printf("| %s | %s | %.1f | %s | %s | %s | %s |\n", op.c_str(), size_label(n).c_str(), gbs, copy_col,
                        ratio_col, torch_col, vs_col);
        }
    }
    if (!o.tsv && !have_torch) {
        std::printf("\n(no libtorch column: %s)\n", o.libtorch.empty() ? "--no-libtorch or not built" : "the peer did not run");
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "ops_bench: error: %s\n", e.what());
    return 1;
}
