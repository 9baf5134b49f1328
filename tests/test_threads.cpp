// The thread count changes only the order of some sums: products split between threads,
// per-chunk weight/bias gradient partials, BatchNorm channel ranges. Results must agree to
// rounding, and the elementwise optimizer passes must agree bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "parallel.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using test::bit_equal;
using test::ThreadsGuard;

namespace {

Sequential seed_model(const std::string& norm) {
    manual_seed(3);
    if (norm == "batch") {
        return Sequential{Linear(784, 300), ReLU(), BatchNorm1d(300), Linear(300, 100), ReLU(), BatchNorm1d(100),
                          Linear(100, 10)};
    }
    return Sequential{Linear(784, 300), ReLU(), LayerNorm({300}), Linear(300, 100), ReLU(), LayerNorm({100}),
                      Linear(100, 10)};
}

// Synthetic MNIST-shaped data, the same for every thread count.
struct Data {
    Tensor x;
    std::vector<int64_t> y;
};
Data synthetic(int64_t n) {
    Generator gen(17);
    Data d{rand({n, 784}, gen), {}};
    for (int64_t i = 0; i < n; ++i) d.y.push_back((i * 7 + 3) % 10);
    return d;
}

float max_abs(const std::vector<float>& v) {
    float m = 0.0f;
    for (float x : v) m = std::max(m, std::abs(x));
    return m;
}

// Every element of a within rel * max|b| of b.
void check_close(const Tensor& a, const Tensor& b, float rel, const std::string& what) {
    const auto va = a.to_vector(), vb = b.to_vector();
    REQUIRE(va.size() == vb.size());
    const float tol = rel * std::max(max_abs(vb), 1e-30f);
    float worst = 0.0f;
    for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
    INFO(what << ": largest difference " << worst << ", tolerance " << tol);
    CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("threads: the seed model's loss and gradients agree across thread counts to rounding", "[threads]") {
    ThreadsGuard guard;
    const Data data = synthetic(128);
    for (const std::string norm : {"layer", "batch"}) {
        INFO("norm " << norm);
        std::vector<float> losses;
        std::vector<NamedTensors> grads;
        for (int threads : {1, 2, 3}) {
            set_num_threads(threads);
            Sequential model = seed_model(norm);
            const Tensor loss = cross_entropy(model(data.x), test::labels_of(data.y));
            loss.backward();
            losses.push_back(loss.item());
            NamedTensors g;
            for (const auto& [name, p] : model.named_parameters()) g.emplace_back(name, p.grad().clone());
            grads.push_back(g);
        }
        for (size_t t = 1; t < grads.size(); ++t) {
            CHECK(std::abs(losses[t] - losses[0]) <= 1e-6f * std::abs(losses[0]));
            for (size_t i = 0; i < grads[0].size(); ++i) {
                check_close(grads[t][i].second, grads[0][i].second, 1e-5f,
                            grads[0][i].first + " with " + std::to_string(t + 1) + " threads");
            }
        }
    }
}

TEST_CASE("threads: SGD training stays within rounding of the one-thread run", "[threads]") {
    ThreadsGuard guard;
    const Data data = synthetic(256);
    std::vector<NamedTensors> finals;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        Sequential model = seed_model("layer");
        SGD optimizer(model.named_parameters(), {.lr = 0.05, .momentum = 0.9});
        for (int step = 0; step < 8; ++step) {
            const int64_t b = (step % 2) * 128;
            const Tensor labels = test::labels_of(std::vector<int64_t>(data.y.begin() + b, data.y.begin() + b + 128));
            optimizer.zero_grad();
            cross_entropy(model(data.x.narrow(0, b, 128)), labels).backward();
            optimizer.step();
        }
        NamedTensors p;
        for (const auto& [name, t] : model.named_parameters()) p.emplace_back(name, t.clone());
        finals.push_back(p);
    }
    for (size_t i = 0; i < finals[0].size(); ++i) {
        check_close(finals[1][i].second, finals[0][i].second, 1e-5f, finals[0][i].first);
    }
}

TEST_CASE("threads: Adam's update is bit-identical for any thread count", "[threads]") {
    ThreadsGuard guard;
    std::vector<Tensor> results;
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        Generator gen(5);
        Tensor w = randn({300, 784}, gen).requires_grad_();  // big enough to be split between threads
        w.set_grad(randn({300, 784}, gen));
        AdamW optimizer({w}, {.lr = 1e-3, .weight_decay = 0.1});
        for (int step = 0; step < 3; ++step) optimizer.step();
        results.push_back(w.detach().clone());
    }
    for (size_t t = 1; t < results.size(); ++t) CHECK(bit_equal(results[t], results[0]));
}

TEST_CASE("threads: parallel_for_chunks splits at multiples of its alignment", "[threads]") {
    ThreadsGuard threads_guard;
    set_num_threads(3);
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    detail::parallel_for_chunks(
        1000, 1,
        [&](int, int64_t begin, int64_t end) {
            const std::lock_guard lock(mutex);
            ranges.emplace_back(begin, end);
        },
        64);
    std::sort(ranges.begin(), ranges.end());
    REQUIRE(ranges.size() == 3);
    int64_t covered = 0;
    for (const auto& [begin, end] : ranges) {
        CHECK(begin == covered);  // contiguous, in order
        CHECK(begin % 64 == 0);
        covered = end;
    }
    CHECK(covered == 1000);
}
