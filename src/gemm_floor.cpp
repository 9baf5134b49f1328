// The GEMM floor's passes: the products through detail::gemm, split as the layers split them.
#include "normnet/gemm_floor.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "ops/gemm.hpp"
#include "parallel.hpp"
#include "normnet/error.hpp"
#include "normnet/threads.hpp"

namespace normnet::bench {

FloorOperands::FloorOperands(const std::vector<Product>& whole_batch, const std::vector<Product>& per_image, int threads) {
    size_t a = 0, b = 0, c_whole = 0, c_image = 0;
    const auto room = [&](const std::vector<Product>& products, size_t& c) {
        for (const Product& p : products) {
            a = std::max(a, static_cast<size_t>(p.M * p.K));
            b = std::max(b, static_cast<size_t>(p.K * p.N));
            c = std::max(c, static_cast<size_t>(p.M * p.N));
        }
    };
    room(whole_batch, c_whole);
    room(per_image, c_image);
    a_size_ = a, b_size_ = b, c_whole_ = c_whole, c_image_ = c_image, threads_ = threads;
    acquire();
}

MappedFloats::MappedFloats(size_t n, float value) : bytes_(std::max<size_t>(n, 1) * sizeof(float)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    NORMNET_CHECK(p != MAP_FAILED, "GEMM floor: cannot map ", bytes_, " bytes for its operands");
    data_ = static_cast<float*>(p);
    std::fill_n(data_, n, value);
}

MappedFloats::~MappedFloats() {
    if (data_) munmap(data_, bytes_);
}

MappedFloats::MappedFloats(MappedFloats&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MappedFloats& MappedFloats::operator=(MappedFloats&& other) noexcept {
    if (this != &other) {
        if (data_) munmap(data_, bytes_);
        data_ = std::exchange(other.data_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void FloorOperands::acquire() {
    if (a_.data()) return;
    a_ = MappedFloats(a_size_, 0.5f);
    b_ = MappedFloats(b_size_, 0.25f);
    // Whole-batch products run on thread 0's output only; the others take per-image ones.
    c_.clear();
    c_.emplace_back(std::max(c_whole_, c_image_), 0.0f);
    for (int t = 1; t < threads_; ++t) c_.emplace_back(c_image_, 0.0f);
}

void FloorOperands::release() {
    a_ = MappedFloats();
    b_ = MappedFloats();
    c_.clear();
}

int FloorPass::threads_for(int64_t images) { return images > 0 ? std::max(1, get_num_threads()) : 1; }

FloorPass::FloorPass(std::vector<Product> products, int64_t images)
    : FloorPass(products, images,
                std::make_shared<FloorOperands>(images > 0 ? std::vector<Product>{} : products,
                                                images > 0 ? products : std::vector<Product>{}, threads_for(images))) {}

FloorPass::FloorPass(std::vector<Product> products, int64_t images, std::shared_ptr<FloorOperands> operands)
    : products_(std::move(products)), images_(images), operands_(std::move(operands)) {}

void FloorPass::run() {
    const auto one = [this](int thread) {
        const float* a = operands_->a();
        const float* b = operands_->b();
        float* c = operands_->c(thread);
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

// y = x W^T forward; dW = dy^T x and dx = dy W backward, as linear() calls sgemm.
FloorLayer linear_products(const std::string& name, int64_t in, int64_t out, int64_t rows, bool input_needs_grad) {
    FloorLayer f{name, {{false, true, rows, out, in}}, {{true, false, out, in, rows}}, 0};
    if (input_needs_grad) f.backward.push_back({false, false, rows, in, out});
    return f;
}

void add_linear_products(std::vector<FloorLayer>& layers, int64_t in, const std::vector<int64_t>& widths, int64_t batch,
                         bool input_needs_grad) {
    for (size_t l = 0; l < widths.size(); ++l) {
        layers.push_back(linear_products("fc" + std::to_string(l + 1), in, widths[l], batch, l > 0 || input_needs_grad));
        in = widths[l];
    }
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
    std::vector<Product> whole_batch, per_image;
    int threads = 1;
    for (const FloorLayer& l : layers) {
        std::vector<Product>& to = l.images > 0 ? per_image : whole_batch;
        to.insert(to.end(), l.forward.begin(), l.forward.end());
        to.insert(to.end(), l.backward.begin(), l.backward.end());
        threads = std::max(threads, FloorPass::threads_for(l.images));
    }
    operands_ = std::make_shared<FloorOperands>(whole_batch, per_image, threads);
    for (const FloorLayer& l : layers) {
        if (!l.forward.empty()) passes_.emplace_back(l.forward, l.images, operands_);
        if (!l.backward.empty()) passes_.emplace_back(l.backward, l.images, operands_);
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

}  // namespace normnet::bench
