// bf16_gemm_bench: what bfloat16 can gain on this CPU, on the models' own shapes. For each
// model's default spec, every matrix product of one training step (its registry row's GEMM floor:
// forward, weight and input gradients; a convolution's per-image products once per image) is
// timed on one thread as OpenBLAS's float32 sgemm, as oneDNN's float32 matmul, and as oneDNN's
// matmul on bfloat16 operands with float32 results (plain row-major operands, as a training step hands them over), and the
// float32 -> bfloat16 conversion of both operands that a step would add, also by oneDNN; and
// normnet's own product under AutocastGuard (the same, with its plan lookup). A
// benchmark program for a quiet machine, not a test.
//
//   bf16_gemm_bench [--models mlp,cnn,vit,lm] [--batch 128] [--lm-batch 32] [--seconds 0.2]
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "models.hpp"
#include "normnet/autocast.hpp"
#include "normnet/gemm_floor.hpp"
#include "ops/gemm.hpp"

namespace {

using dt = dnnl::memory::data_type;

// An M x K operand (transposed: stored K x M) as oneDNN's row-major memory of `type`.
dnnl::memory::desc operand(int64_t rows, int64_t cols, bool transposed, dt type) {
    return transposed ? dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{1, rows})
                      : dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{cols, 1});
}

struct Times {
    double f32 = 0, dnnl_f32 = 0, bf16 = 0, convert = 0, autocast = 0;
};

// One product C[M, N] = op(A)[M, K] op(B)[K, N], in both precisions.
Times time_product(const normnet::bench::Product& p, const dnnl::engine& eng, dnnl::stream& s, double budget) {
    const int64_t M = p.M, N = p.N, K = p.K;
    std::vector<float> a(static_cast<size_t>(M * K), 0.5f), b(static_cast<size_t>(K * N), 0.25f), c(static_cast<size_t>(M * N));
    Times t;
    t.f32 = bench::time_case(
        [&] {
            cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
                        static_cast<int>(N), static_cast<int>(K), 1.0f, a.data(), static_cast<int>(p.ta ? M : K), b.data(),
                        static_cast<int>(p.tb ? K : N), 0.0f, c.data(), static_cast<int>(N));
        },
        budget);
    const auto a16 = operand(M, K, p.ta, dt::bf16), b16 = operand(K, N, p.tb, dt::bf16);
    const auto a32 = operand(M, K, p.ta, dt::f32), b32 = operand(K, N, p.tb, dt::f32);
    const dnnl::memory::desc c_md({M, N}, dt::f32, dnnl::memory::dims{N, 1});
    // oneDNN's own float32 matmul: how much of the gain is its kernels rather than bfloat16.
    const dnnl::matmul mm32(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a32, b32, c_md), eng));
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a16, b16, c_md), eng);
    const dnnl::matmul mm(pd);
    dnnl::memory A16(a16, eng), B16(b16, eng), A32(a32, eng, a.data()), B32(b32, eng, b.data()), C(c_md, eng, c.data());
    const dnnl::reorder to_a(A32, A16), to_b(B32, B16);
    to_a.execute(s, A32, A16);
    to_b.execute(s, B32, B16);
    s.wait();
    t.dnnl_f32 = bench::time_case(
        [&] {
            mm32.execute(s, {{DNNL_ARG_SRC, A32}, {DNNL_ARG_WEIGHTS, B32}, {DNNL_ARG_DST, C}});
            s.wait();
        },
        budget);
    t.bf16 = bench::time_case(
        [&] {
            mm.execute(s, {{DNNL_ARG_SRC, A16}, {DNNL_ARG_WEIGHTS, B16}, {DNNL_ARG_DST, C}});
            s.wait();
        },
        budget);
    // normnet's own product under AutocastGuard: conversions, plan lookup and all.
    {
        normnet::AutocastGuard bf16;
        t.autocast = bench::time_case(
            [&] {
                normnet::detail::gemm(p.ta, p.tb, M, N, K, 1.0f, a.data(), p.ta ? M : K, b.data(), p.tb ? K : N, 0.0f, c.data(),
                                      N);
            },
            budget);
    }
    t.convert = bench::time_case(
        [&] {
            to_a.execute(s, A32, A16);
            to_b.execute(s, B32, B16);
            s.wait();
        },
        budget);
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::string models = "mlp,cnn,vit,lm";
    int64_t batch = 128, lm_batch = 32;
    double budget = 0.2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--models") models = value;
        else if (flag == "--batch") batch = std::stoll(value);
        else if (flag == "--lm-batch") lm_batch = std::stoll(value);
        else if (flag == "--seconds") budget = std::stod(value);
        else {
            std::fprintf(stderr, "bf16_gemm_bench: unknown option %s\n", flag.c_str());
            return 2;
        }
    }
    openblas_set_num_threads(1);
    setenv("OMP_NUM_THREADS", "1", 1);  // before oneDNN's first parallel region
    const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    std::printf("One training step's matrix products, one thread: OpenBLAS sgemm (%s kernels) against oneDNN %d.%d bf16 matmul\n\n",
                openblas_get_corename(), dnnl_version()->major, dnnl_version()->minor);
    std::printf("| model | batch | products | OpenBLAS float32 ms | oneDNN float32 ms | oneDNN bf16 ms | bf16 + conversions ms "
                "| normnet under AutocastGuard ms | OpenBLAS f32 / bf16 | oneDNN f32 / bf16 | OpenBLAS f32 / AutocastGuard |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    std::map<std::string, Times> cache;  // by shape: the step repeats its shapes
    for (const std::string& type : bench::split(models)) {
        normnet::cli::ModelSpec spec = normnet::cli::ModelSpec::defaults(type);
        if (spec.inputs == 0) spec.inputs = spec.classes = 96;  // the LM: a corpus's vocabulary
        const int64_t b = type == "lm" ? lm_batch : batch;
        Times step;
        int64_t count = 0;
        for (const normnet::bench::FloorLayer& layer : spec.kind().gemm_products(spec, b)) {
            const double repeat = layer.images > 0 ? static_cast<double>(layer.images) : 1.0;
            for (const auto* list : {&layer.forward, &layer.backward}) {
                for (const normnet::bench::Product& p : *list) {
                    const std::string key = std::to_string(p.M) + "x" + std::to_string(p.N) + "x" + std::to_string(p.K) +
                                            (p.ta ? "t" : "n") + (p.tb ? "t" : "n");
                    if (cache.count(key) == 0) cache[key] = time_product(p, eng, s, budget);
                    const Times& t = cache[key];
                    step.f32 += repeat * t.f32;
                    step.dnnl_f32 += repeat * t.dnnl_f32;
                    step.bf16 += repeat * t.bf16;
                    step.convert += repeat * t.convert;
                    step.autocast += repeat * t.autocast;
                    count += static_cast<int64_t>(repeat);
                }
            }
        }
        std::printf("| %s | %lld | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.2fx |\n", type.c_str(),
                    static_cast<long long>(b), static_cast<long long>(count), 1e3 * step.f32, 1e3 * step.dnnl_f32, 1e3 * step.bf16,
                    1e3 * (step.bf16 + step.convert), 1e3 * step.autocast, step.f32 / step.bf16, step.dnnl_f32 / step.bf16,
                    step.f32 / step.autocast);
        std::fflush(stdout);
    }
    return 0;
}
