// dist::sync_batch_norm and convert_sync_batchnorm under `mpirun -np 2|4` (tests/CMakeLists.txt):
// each rank holds a contiguous slice of one global batch (uneven, one rank possibly empty) and
// must get what batch_norm gives on the whole batch in one process: the output rows, the running
// statistics, the input gradient of its rows and (summed over the ranks) the weight and bias
// gradients; and a gradient check across ranks (finite differences of the loss summed over every
// rank, each element perturbed on the rank that holds it). The first failure names the rank and
// ends the job.
#include <cmath>
#include <cstdio>
#include <string>

#include "normnet/normnet.hpp"

using namespace normnet;

namespace {

int g_rank = 0, g_world = 1;

void require(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "sync_batchnorm_test: rank %d: FAILED: %s\n", g_rank, what.c_str());
    dist::abort_job(1);
}

void require_close(const std::vector<float>& a, const std::vector<float>& e, float tol, const std::string& what) {
    require(a.size() == e.size(), what + ": sizes differ");
    for (size_t j = 0; j < a.size(); ++j) {
        require(std::abs(a[j] - e[j]) <= tol * (1.0f + std::abs(e[j])),
                what + " element " + std::to_string(j) + ": " + std::to_string(a[j]) + " vs " + std::to_string(e[j]));
    }
}

// This rank's rows [begin, begin + count) of a global batch of n: ceil(n / world) per rank.
std::pair<int64_t, int64_t> my_rows(int64_t n) {
    const int64_t per = (n + g_world - 1) / g_world;
    const int64_t begin = std::min<int64_t>(n, g_rank * per), end = std::min<int64_t>(n, begin + per);
    return {begin, end - begin};
}

double global_sum(double v) {
    dist::all_reduce(&v, 1);
    return v;
}

// sync_batch_norm on the slices against batch_norm on the whole batch x: [n, C, *].
// sparse: as after a ReLU, channel 0 is all zeros and channel 1 zero but for one value.
void check_against_single(const Shape& shape, const std::string& label, bool sparse = false) {
    Generator gen(7);
    Tensor x = randn(shape, gen) * 3.0f + 1.5f;
    const Tensor G = randn(shape, gen);
    if (sparse) {
        x = relu(x - 1.5f).contiguous();
        float* d = x.data();
        for (int64_t n = 0; n < shape[0]; ++n) d[n * shape[1]] = 0.0f, d[n * shape[1] + 1] = n == 1 ? 0.7f : 0.0f;
    }
    const int64_t C = shape[1];
    const Tensor w = randn({C}, gen), b = randn({C}, gen);
    const auto [begin, rows] = my_rows(shape[0]);

    Tensor xs = x.narrow(0, begin, rows).contiguous().detach().requires_grad_(true);
    Tensor ws = w.detach().requires_grad_(true), bs = b.detach().requires_grad_(true);
    Tensor rm = zeros({C}), rv = ones({C});
    const Tensor out = dist::sync_batch_norm(xs, rm, rv, ws, bs, 0.1, 1e-5);
    (out * G.narrow(0, begin, rows).contiguous()).sum().backward();

    Tensor x1 = x.detach().requires_grad_(true), w1 = w.detach().requires_grad_(true), b1 = b.detach().requires_grad_(true);
    Tensor rm1 = zeros({C}), rv1 = ones({C});
    const Tensor out1 = batch_norm(x1, rm1, rv1, w1, b1, true, 0.1, 1e-5);
    (out1 * G).sum().backward();

    require_close(out.detach().to_vector(), out1.detach().narrow(0, begin, rows).contiguous().to_vector(), 1e-5f, label + " output");
    require_close(rm.to_vector(), rm1.to_vector(), 1e-5f, label + " running_mean");
    require_close(rv.to_vector(), rv1.to_vector(), 1e-5f, label + " running_var");
    if (rows > 0) {
        require_close(xs.grad().to_vector(), x1.grad().narrow(0, begin, rows).contiguous().to_vector(), 1e-4f,
                      label + " input gradient");
    }
    Tensor dw = ws.grad().contiguous().clone(), db = bs.grad().contiguous().clone();
    dist::all_reduce(dw);
    dist::all_reduce(db);
    require_close(dw.to_vector(), w1.grad().to_vector(), 1e-4f, label + " weight gradient (summed)");
    require_close(db.to_vector(), b1.grad().to_vector(), 1e-4f, label + " bias gradient (summed)");
}

// Central differences of the loss summed over all ranks, for every element of the global input,
// against the analytic input gradient on the rank holding the element.
void gradcheck_across_ranks(const Shape& shape, const std::string& label) {
    Generator gen(11);
    const Tensor x = randn(shape, gen), G = randn(shape, gen);
    const int64_t C = shape[1];
    const Tensor w = randn({C}, gen) + 2.0f, b = randn({C}, gen);
    const auto [begin, rows] = my_rows(shape[0]);
    const Tensor g_local = G.narrow(0, begin, rows).contiguous();
    Tensor xs = x.narrow(0, begin, rows).contiguous().detach().requires_grad_(true);
    (dist::sync_batch_norm(xs, {}, {}, w, b) * g_local).sum().backward();
    const Tensor dx = rows > 0 ? xs.grad() : Tensor();
    const auto loss = [&](const Tensor& mine) {
        NoGradGuard no_grad;
        return global_sum((dist::sync_batch_norm(mine, {}, {}, w, b) * g_local).sum().item());
    };
    const int64_t per_row = x.numel() / shape[0];
    const float h = 1e-2f;
    for (int64_t j = 0; j < x.numel(); ++j) {
        const int64_t row = j / per_row;
        const bool mine = row >= begin && row < begin + rows;
        Tensor plus = xs.detach().clone(), minus = xs.detach().clone();
        if (mine) {
            plus.data()[j - begin * per_row] += h;
            minus.data()[j - begin * per_row] -= h;
        }
        const double numeric = (loss(plus) - loss(minus)) / (2.0 * h);
        if (mine) {
            const double analytic = dx.data()[j - begin * per_row];
            require(std::abs(numeric - analytic) <= 2e-2 * (1.0 + std::abs(analytic)),
                    label + " gradcheck element " + std::to_string(j) + ": numeric " + std::to_string(numeric) +
                        " vs analytic " + std::to_string(analytic));
        }
    }
}

}  // namespace

void run();

int main() {
    try {
        run();
    } catch (const std::exception& e) {
        require(false, std::string("exception: ") + e.what());
    }
    return 0;
}

void run() {
    dist::init_process_group();
    g_rank = dist::get_rank();
    g_world = dist::get_world_size();
    require(g_world >= 2, "run under mpirun with at least 2 processes");

    check_against_single({4 * g_world + 3, 5}, "[N, C]");
    check_against_single({2 * g_world + 1, 3, 2, 3}, "[N, C, H, W]");
    check_against_single({64 * g_world, 300}, "[N, 300] after a ReLU", true);  // with 4 ranks, rank 3 has no rows
    gradcheck_across_ranks({g_world + 3, 2}, "[N, C]");
    gradcheck_across_ranks({g_world + 1, 2, 2, 2}, "[N, C, H, W]");

    // The batch-1 rule on the global count: one sample over all ranks is refused on every rank.
    {
        const Tensor x = g_rank == 0 ? randn({1, 3}) : empty({0, 3});
        bool refused = false;
        try {
            dist::sync_batch_norm(x, {}, {}, {}, {});
        } catch (const Error& e) {
            refused = std::string(e.what()).find("Expected more than 1 value per channel") != std::string::npos;
        }
        require(refused, "one sample over all ranks must be refused");
        const Tensor two = g_rank <= 1 ? randn({1, 3}) : empty({0, 3});  // one sample on each of two ranks: fine
        dist::sync_batch_norm(two, {}, {}, {}, {});
    }

    // convert_sync_batchnorm: BatchNorm1d and BatchNorm2d layers switch to global statistics in
    // training (their state_dict stays BatchNorm's), not in eval.
    {
        manual_seed(3);
        Sequential model{Linear(4, 6), BatchNorm1d(6)};
        Sequential image{BatchNorm2d(3)};
        require(dist::convert_sync_batchnorm(model) == 1 && dist::convert_sync_batchnorm(image) == 1, "converted layers");
        Generator gen(5);
        const Tensor x = randn({2 * g_world, 4}, gen);
        const auto [begin, rows] = my_rows(x.size(0));
        const Tensor mine = model(x.narrow(0, begin, rows).contiguous());
        const Tensor h = model.at<Linear>(0)->forward(x);
        const Tensor whole = batch_norm(h, {}, {}, {}, {}, true);
        require_close(mine.detach().to_vector(), whole.detach().narrow(0, begin, rows).contiguous().to_vector(), 1e-5f, "converted BatchNorm1d");
        const NamedTensors state = image.state_dict();
        require(state.size() == 5 && state[2].first == "0.running_mean", "converted BatchNorm2d keeps its state_dict");
    }
    if (g_rank == 0) std::printf("sync_batchnorm_test: %d ranks: sync_batch_norm matches batch_norm, gradcheck across ranks ok\n", g_world);
}
