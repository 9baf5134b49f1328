// conv_bench: times the layers of the issue-12 CNN (conv 3x3 1->32, norm, ReLU, max-pool 2,
// conv 3x3 32->64, norm, ReLU, max-pool 2, linear 3136->128, ReLU, linear 128->10, on 28x28
// images) forward and backward, and a whole Adam training step, against the "GEMM floor": the
// same lowered products (shapes, per-thread split and threads as conv2d and linear use them)
// through OpenBLAS alone. A benchmark program, not a test: give it a quiet machine.
//
//   conv_bench [--batch 32,128] [--threads N] [--seconds S] [--norm batch|group|layer|none] [--cpu-time]
//              [--step-only]  (the whole training step alone, e.g. under perf)
//
// --seconds is the total time budget, shared by every measurement (each is the median of its
// repetitions). --cpu-time (with --threads 1) measures the thread's CPU time instead of wall
// time, for figures that other processes on a busy machine do not distort.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "models.hpp"
#include "normnet/normnet.hpp"

namespace {

using namespace normnet;
// Wall time, or with --cpu-time (one thread only) the calling thread's CPU time, which a busy
// machine's other processes do not inflate.
bool g_cpu_time = false;

struct Clock {
    using time_point = double;
    static double now() {
        if (g_cpu_time) {
            timespec ts{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
};

double seconds_since(double t) { return Clock::now() - t; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median seconds of fn() over repetitions filling `budget` seconds (at least 3).
double time_it(double budget, const std::function<void()>& fn) {
    fn();  // warm-up
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 3 || (seconds_since(start) < budget && times.size() < 10000)) {
        const auto t = Clock::now();
        fn();
        times.push_back(seconds_since(t));
    }
    return median(times);
}

// Median seconds of the two phases of fn(phase_timer): fn calls mark() between them.
std::pair<double, double> time_two(double budget, const std::function<void(const std::function<void()>&)>& fn) {
    std::vector<double> first, second;
    const auto start = Clock::now();
    for (int rep = 0; rep < 4 || (seconds_since(start) < budget && rep < 10000); ++rep) {
        auto t = Clock::now();
        double a = 0.0;
        fn([&] {
            a = seconds_since(t);
            t = Clock::now();
        });
        const double b = seconds_since(t);
        if (rep > 0) first.push_back(a), second.push_back(b);  // rep 0 warms up
    }
    return {median(first), median(second)};
}

// ---- the GEMM floor: the lowered products alone (normnet/gemm_floor.hpp, the CNN's
// products from its registry row, as `normnet bench --model cnn` times them) ----------------

using bench::FloorPass;

// ---- the model -------------------------------------------------------------------------------

AnyModule norm_layer(const std::string& norm, int64_t channels) {
    if (norm == "batch") return BatchNorm2d(channels);
    if (norm == "group") return GroupNorm(8, channels);
    if (norm == "layer") return GroupNorm(1, channels);
    return Identity();
}

struct Row {
    std::string layer;
    double forward = 0.0, backward = 0.0, floor_forward = 0.0, floor_backward = 0.0;
};

void print_rows(const std::vector<Row>& rows) {
    std::printf("  %-22s %10s %10s %10s %10s %7s\n", "layer", "fwd ms", "floor", "bwd ms", "floor", "ratio");
    for (const Row& r : rows) {
        const double floor = r.floor_forward + r.floor_backward;
        char ratio[16] = "";
        if (floor > 0.0) std::snprintf(ratio, sizeof ratio, "%.2fx", (r.forward + r.backward) / floor);
        const auto ms = [](double s, char* buf) {
            if (s > 0.0) {
                std::snprintf(buf, 16, "%.3f", s * 1e3);
            } else {
                std::snprintf(buf, 16, "-");
            }
            return buf;
        };
        char a[16], b[16], c[16], d[16];
        std::printf("  %-22s %10s %10s %10s %10s %7s\n", r.layer.c_str(), ms(r.forward, a), ms(r.floor_forward, b),
                    ms(r.backward, c), ms(r.floor_backward, d), ratio);
    }
}

// Forward and backward of one layer on random input (x a leaf needing grad when needs_dx).
Row time_layer(const std::string& name, Module& layer, const Shape& in, bool needs_dx, double budget) {
    Generator gen(1);
    const Tensor x0 = randn(in, gen);
    Tensor x = needs_dx ? x0.detach().requires_grad_() : x0;
    Tensor dy;
    {
        NoGradGuard no_grad;
        dy = randn(layer(x0).shape(), gen);
    }
    const auto [f, b] = time_two(budget, [&](const std::function<void()>& mark) {
        layer.zero_grad();
        if (needs_dx) x.set_grad({});
        Tensor y = layer(x);
        mark();
        y.backward(dy);
    });
    // backward(dy) first copies dy into a zeroed buffer for the output's gradient (a training
    // step's scalar loss has no such cost): that copy is timed alone and subtracted.
    const Tensor out = layer(x0.detach());
    const double root = time_it(budget / 4, [&] { zeros(out.shape()).add_(dy); });
    return {name, f, std::max(0.0, b - root), 0.0, 0.0};
}

// The CNN, its modules shared between the per-layer timings and the whole step.
struct Cnn {
    std::shared_ptr<Conv2d> conv1 = std::make_shared<Conv2d>(
        Conv2dOptions{.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1});
    std::shared_ptr<Conv2d> conv2 = std::make_shared<Conv2d>(
        Conv2dOptions{.in_channels = 32, .out_channels = 64, .kernel_size = 3, .padding = 1});
    AnyModule n1, n2;
    std::shared_ptr<Linear> fc1 = std::make_shared<Linear>(3136, 128), fc2 = std::make_shared<Linear>(128, 10);

    explicit Cnn(const std::string& norm) : n1(norm_layer(norm, 32)), n2(norm_layer(norm, 64)) {}
    Tensor forward(const Tensor& x) {
        // Max-pool before ReLU, as the registry's CNN (model_cnn.cpp): the same function.
        Tensor h = relu(max_pool2d((*n1.ptr())((*conv1)(x)), 2));
        h = relu(max_pool2d((*n2.ptr())((*conv2)(h)), 2));
        return (*fc2)(relu((*fc1)(h.flatten(1))));
    }
    std::vector<Tensor> parameters() const {
        std::vector<Tensor> all;
        const std::vector<const Module*> modules{conv1.get(), n1.ptr().get(), conv2.get(), n2.ptr().get(), fc1.get(),
                                                 fc2.get()};
        for (const Module* m : modules) {
            for (const Tensor& p : m->parameters()) all.push_back(p);
        }
        return all;
    }
};

// One Adam training step on a random batch of B images.
struct Step {
    Cnn& model;
    Adam adam;
    Tensor images, labels;
    Step(Cnn& m, int64_t B) : model(m), adam(m.parameters()) {
        Generator gen(2);
        images = rand({B, 1, 28, 28}, gen);
        std::vector<int64_t> l(static_cast<size_t>(B));
        for (auto& v : l) v = static_cast<int64_t>(gen.below(10));
        labels = from_vector(l, {B});
    }
    void run() {
        Tensor loss = cross_entropy(model.forward(images), labels);
        loss.backward();
        adam.step_and_zero_grad();
    }
};

void bench_batch(int64_t B, const std::string& norm, double budget, bool step_only) {
    manual_seed(0);
    Cnn cnn(norm);
    ReLU relu_layer;
    MaxPool2d pool(2);

    // The lowered products of each layer, as conv2d and linear run them (conv1's input needs
    // no gradient, so its backward is the weight product alone): the registry row's list.
    cli::ModelSpec spec = cli::ModelSpec::defaults("cnn");
    spec.norm = norm;
    std::vector<FloorPass> passes;
    for (const bench::FloorLayer& l : spec.kind().gemm_products(spec, B)) {
        passes.emplace_back(l.forward, l.images);
        passes.emplace_back(l.backward, l.images);
    }
    const double slice = budget / 14.0;  // 8 floor passes (a quarter slice each), 10 layers, the step
    std::vector<double> floor;
    for (FloorPass& p : passes) floor.push_back(time_it(slice / 4, [&p] { p.run(); }));

    Step step(cnn, B);
    if (step_only) {
        const double t_step = time_it(budget, [&] { step.run(); });
        std::printf("batch %lld, %d thread(s), norm %s: training step %.3f ms (%.0f samples/s)\n",
                    static_cast<long long>(B), get_num_threads(), norm.c_str(), t_step * 1e3,
                    static_cast<double>(B) / t_step);
        return;
    }
    std::vector<Row> rows;
    const auto layer = [&](const std::string& name, Module& m, const Shape& in, bool needs_dx, int floor_at) {
        rows.push_back(time_layer(name, m, in, needs_dx, slice));
        if (floor_at >= 0) {
            rows.back().floor_forward = floor[static_cast<size_t>(floor_at)];
            rows.back().floor_backward = floor[static_cast<size_t>(floor_at) + 1];
        }
    };
    layer("conv1 1->32 28x28", *cnn.conv1, {B, 1, 28, 28}, false, 0);
    layer("norm1 " + norm, *cnn.n1.ptr(), {B, 32, 28, 28}, true, -1);
    layer("maxpool1", pool, {B, 32, 28, 28}, true, -1);
    layer("relu1", relu_layer, {B, 32, 14, 14}, true, -1);
    layer("conv2 32->64 14x14", *cnn.conv2, {B, 32, 14, 14}, true, 2);
    layer("norm2 " + norm, *cnn.n2.ptr(), {B, 64, 14, 14}, true, -1);
    layer("maxpool2", pool, {B, 64, 14, 14}, true, -1);
    layer("relu2", relu_layer, {B, 64, 7, 7}, true, -1);
    layer("fc1 3136->128", *cnn.fc1, {B, 3136}, true, 4);
    layer("fc2 128->10", *cnn.fc2, {B, 128}, true, 6);

    const double t_step = time_it(2 * slice, [&] { step.run(); });
    double floor_total = 0.0;
    for (double f : floor) floor_total += f;
    std::printf("\nbatch %lld, %d thread(s), norm %s (medians; \"floor\" = the layer's lowered products alone)\n",
                static_cast<long long>(B), get_num_threads(), norm.c_str());
    print_rows(rows);
    std::printf("  training step (forward, loss, backward, Adam): %.3f ms; GEMM floor %.3f ms; ratio %.2fx; "
                "%.0f samples/s\n",
                t_step * 1e3, floor_total * 1e3, t_step / floor_total, static_cast<double>(B) / t_step);
}

std::vector<int64_t> parse_list(const char* s) {
    std::vector<int64_t> v;
    for (const char* p = s; *p;) {
        char* end = nullptr;
        v.push_back(std::strtoll(p, &end, 10));
        if (end == p || v.back() <= 0) {
            std::fprintf(stderr, "conv_bench: error: bad --batch list '%s'\n", s);
            std::exit(2);
        }
        p = *end == ',' ? end + 1 : end;
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int64_t> batches{32, 128};
    double seconds = 2.0;
    std::string norm = "batch";
    int threads = 0;
    bool step_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "conv_bench: error: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--batch") {
            batches = parse_list(value());
        } else if (a == "--seconds") {
            seconds = std::atof(value());
        } else if (a == "--threads") {
            threads = std::atoi(value());
        } else if (a == "--norm") {
            norm = value();
        } else if (a == "--step-only") {
            step_only = true;
        } else if (a == "--cpu-time") {
            g_cpu_time = true;
        } else {
            std::fprintf(stderr, "usage: conv_bench [--batch 32,128] [--threads N] [--seconds S] "
                                 "[--norm batch|group|layer|none] [--cpu-time] [--step-only]\n");
            return 2;
        }
    }
    if (threads > 0) set_num_threads(threads);
    if (g_cpu_time && get_num_threads() != 1) {
        std::fprintf(stderr, "conv_bench: error: --cpu-time measures one thread: give --threads 1\n");
        return 2;
    }
    for (int64_t B : batches) bench_batch(B, norm, seconds / static_cast<double>(batches.size()), step_only);
    return 0;
}
