// bfloat16 matrix products for autocast (normnet/autocast.hpp), through oneDNN's matmul: op(A)
// and op(B) are rounded to bfloat16 by oneDNN reorders (round to nearest even, as torch rounds),
// the products are summed in float32 and C = alpha * op(A) @ op(B) + beta * C is written in
// float32. apps/microbench/bf16_gemm_bench measured this path at about twice OpenBLAS's float32
// speed on the models' products. gemm.cpp splits large products over normnet's threads exactly
// as it does OpenBLAS's, so oneDNN runs on the calling thread alone.
#ifdef NORMNET_WITH_DNNL

#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "gemm.hpp"

namespace normnet::detail {
namespace {

using dt = dnnl::memory::data_type;

struct Key {
    int64_t M, N, K, lda, ldb, ldc;
    bool trans_a, trans_b;
    float alpha, beta;
    bool operator==(const Key&) const = default;
};

struct KeyHash {
    size_t operator()(const Key& k) const {
        size_t h = std::hash<float>{}(k.alpha) ^ (std::hash<float>{}(k.beta) << 1);
        for (int64_t v : {k.M, k.N, k.K, k.lda, k.ldb, k.ldc, int64_t{k.trans_a} * 2 + int64_t{k.trans_b}}) {
            h = h * 1000003u ^ std::hash<int64_t>{}(v);
        }
        return h;
    }
};

// op(X) [rows, cols] of a row-major X with row stride ld (transposed: X is stored [cols, rows]).
dnnl::memory::desc strided(int64_t rows, int64_t cols, bool transposed, int64_t ld, dt type) {
    return {{rows, cols}, type, transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1}};
}

// One shape's primitives and memories, made once on each thread; the float32 memories point at
// each call's operands.
struct Plan {
    dnnl::memory a32, b32, a16, b16, c;
    dnnl::reorder to_a, to_b;
    dnnl::matmul product;
};

Plan make_plan(const Key& k, const dnnl::engine& cpu) {
    const dnnl::memory::desc a16({k.M, k.K}, dt::bf16, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc b16({k.K, k.N}, dt::bf16, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc c({k.M, k.N}, dt::f32, dnnl::memory::dims{k.ldc, 1});
    dnnl::primitive_attr attr;
    if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
    if (k.beta != 0.0f) {
        dnnl::post_ops ops;
        ops.append_sum(k.beta);  // C = (alpha * op(A) @ op(B)) + beta * C
        attr.set_post_ops(ops);
    }
    Plan p;
    p.a32 = dnnl::memory(strided(k.M, k.K, k.trans_a, k.lda, dt::f32), cpu, DNNL_MEMORY_NONE);
    p.b32 = dnnl::memory(strided(k.K, k.N, k.trans_b, k.ldb, dt::f32), cpu, DNNL_MEMORY_NONE);
    p.a16 = dnnl::memory(a16, cpu);
    p.b16 = dnnl::memory(b16, cpu);
    p.c = dnnl::memory(c, cpu, DNNL_MEMORY_NONE);
    p.to_a = dnnl::reorder(p.a32, p.a16);
    p.to_b = dnnl::reorder(p.b32, p.b16);
    p.product = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a16, b16, c), attr, cpu));
    return p;
}

// Each thread's engine, stream and plans (a training step repeats a few shapes thousands of times).
struct ThreadState {
    dnnl::engine cpu{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{cpu};
    std::unordered_map<Key, Plan, KeyHash> plans;
    // This thread's products are its share of gemm's split: oneDNN's OpenMP runtime (loaded with
    // it, found by name so that no OpenMP flag reaches normnet's build) gets one thread here.
    ThreadState() {
        using SetThreads = void (*)(int);
        if (const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
    }
};

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    thread_local ThreadState state;
    const Key key{M, N, K, lda, ldb, ldc, trans_a, trans_b, alpha, beta};
    auto it = state.plans.find(key);
    if (it == state.plans.end()) {
        if (state.plans.size() >= 4096) state.plans.clear();  // a bound for programs of ever new shapes
        it = state.plans.emplace(key, make_plan(key, state.cpu)).first;
    }
    Plan& p = it->second;
    p.a32.set_data_handle(const_cast<float*>(A));
    p.b32.set_data_handle(const_cast<float*>(B));
    p.c.set_data_handle(C);
    p.to_a.execute(state.stream, p.a32, p.a16);
    p.to_b.execute(state.stream, p.b32, p.b16);
    p.product.execute(state.stream, {{DNNL_ARG_SRC, p.a16}, {DNNL_ARG_WEIGHTS, p.b16}, {DNNL_ARG_DST, p.c}});
    state.stream.wait();
}

}  // namespace normnet::detail

#endif  // NORMNET_WITH_DNNL
