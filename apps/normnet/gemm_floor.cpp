// The GEMM floor's passes: the products through detail::gemm, split as the layers split them.
#include "gemm_floor.hpp"

#include <algorithm>
#include <chrono>

#include "models.hpp"
#include "ops/gemm.hpp"
#include "parallel.hpp"
#include "normnet/threads.hpp"

namespace normnet::cli {

namespace {

// The products' operands. Their values do not matter, only their shapes and memory traffic, so
// every product of every pass reads the same two sources (A and B, each sized to the largest
// product's, so each operand is as large as the layer's own) and thread t writes its products
// into one output source: a floor holds a few MB instead of a copy of every operand per product
// and thread (12-16 MB for the CNN at batch 128, which `normnet bench` counted in its peak RSS
// next to training's). The sources only grow, in constructors; run() reads their addresses.
std::vector<float>& source(size_t which) {
    static std::vector<std::vector<float>> sources(2);
    if (sources.size() <= which) sources.resize(which + 1);
    return sources[which];
}
void grow_source(size_t which, int64_t floats, float value) {
    std::vector<float>& s = source(which);
    if (static_cast<int64_t>(s.size()) < floats) s.assign(static_cast<size_t>(floats), value);
}

}  // namespace

FloorPass::FloorPass(std::vector<Product> products, int64_t images) : products_(std::move(products)), images_(images) {
    threads_ = images_ > 0 ? std::max(1, get_num_threads()) : 1;
    for (const Product& p : products_) {
        grow_source(0, p.M * p.K, 0.5f);
        grow_source(1, p.K * p.N, 0.25f);
        for (int t = 0; t < threads_; ++t) grow_source(2 + static_cast<size_t>(t), p.M * p.N, 0.0f);
    }
}

void FloorPass::run() {
    const auto one = [this](int thread) {
        const float* a = source(0).data();
        const float* b = source(1).data();
        float* c = source(2 + static_cast<size_t>(thread)).data();
        for (const Product& p : products_) {
            detail::gemm(p.ta, p.tb, p.M, p.N, p.K, 1.0f, a, p.ta ? p.M : p.K, b, p.tb ? p.K : p.N, 0.0f, c, p.N);
        }
    };
    if (images_ == 0) {
        one(0);
        return;
    }
    detail::parallel_for_chunks(images_, 1, [&](int chunk, int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) one(chunk);
    });
}

FloorLayer attention_products(const std::string& name, int64_t slices, int64_t L, int64_t S, int64_t E) {
    return FloorLayer{name,
                      {{false, true, L, S, E}, {false, false, L, E, S}},
                      {{true, false, S, E, L}, {false, true, L, S, E}, {false, false, L, E, S}, {true, false, S, E, L}},
                      slices};
}

void add_encoder_layer_products(std::vector<FloorLayer>& layers, int64_t sequences, int64_t T, int64_t d_model,
                                int64_t heads, int64_t dim_feedforward) {
    const int64_t rows = sequences * T;
    add_linear_products(layers, d_model, {3 * d_model}, rows, true);  // in_proj
    layers.push_back(attention_products("attention", sequences * heads, T, T, d_model / heads));
    add_linear_products(layers, d_model, {d_model}, rows, true);                    // out_proj
    add_linear_products(layers, d_model, {dim_feedforward, d_model}, rows, true);  // linear1, linear2
}

StepFloor::StepFloor(const std::vector<FloorLayer>& layers) {
    for (const FloorLayer& l : layers) {
        if (!l.forward.empty()) passes_.emplace_back(l.forward, l.images);
        if (!l.backward.empty()) passes_.emplace_back(l.backward, l.images);
    }
}

void StepFloor::run() {
    for (FloorPass& p : passes_) p.run();
}

double StepFloor::seconds(double budget) {
    using Clock = std::chrono::steady_clock;
    run();  // warm-up
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < budget && times.size() < 10000)) {
        const auto t = Clock::now();
        run();
        times.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace normnet::cli
