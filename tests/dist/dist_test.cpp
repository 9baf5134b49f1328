// The collectives of normnet::dist and a data-parallel step, run by ctest under
// `mpirun -np 2|4` (tests/CMakeLists.txt): every rank runs the same checks; the first failure
// prints the rank and ends the job with a non-zero status.
#include <cmath>
#include <cstdio>
#include <string>

#include "normnet/normnet.hpp"

using namespace normnet;

namespace {

int g_rank = 0;

void require(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "dist_test: rank %d: FAILED: %s\n", g_rank, what.c_str());
    dist::abort_job(1);
}

// The seed-like model every rank builds from the same seed.
Sequential make_model(uint64_t seed) {
    manual_seed(seed);
    return Sequential{Linear(8, 16), ReLU(), LayerNorm({16}), Linear(16, 3)};
}

// Inputs and labels of a global batch of n rows, the same on every rank.
std::pair<Tensor, Tensor> global_batch(int64_t n) {
    Generator gen(42);
    Tensor x = randn({n, 8}, gen);
    Tensor y = empty({n}, kInt64);
    for (int64_t i = 0; i < n; ++i) y.data_ptr<int64_t>()[i] = static_cast<int64_t>(gen.below(3));
    return {x, y};
}

}  // namespace

int main() {
    dist::init_process_group();
    g_rank = dist::get_rank();
    const int world = dist::get_world_size();
    require(dist::is_available(), "built with MPI");
    require(world >= 2, "run under mpirun with at least 2 processes");

    // all_reduce: float32 and int64, sum/max/min.
    Tensor f = full({5}, static_cast<double>(g_rank + 1));
    dist::all_reduce(f);
    require(f.to_vector() == std::vector<float>(5, static_cast<float>(world * (world + 1) / 2)), "all_reduce sum");
    Tensor i = full({3}, static_cast<double>(g_rank), kInt64);
    dist::all_reduce(i, dist::ReduceOp::max);
    require(i.to_vector<int64_t>() == std::vector<int64_t>(3, world - 1), "all_reduce max of int64");
    double d[2] = {1.0, static_cast<double>(g_rank)};
    dist::all_reduce(d, 2, dist::ReduceOp::min);
    require(d[0] == 1.0 && d[1] == 0.0, "all_reduce min of doubles");
    // broadcast and all_gather.
    Tensor b = full({2, 2}, static_cast<double>(g_rank == 1 ? 7 : -1));
    dist::broadcast(b, 1);
    require(b.to_vector() == std::vector<float>(4, 7.0f), "broadcast from rank 1");
    const Tensor g = dist::all_gather(full({2}, static_cast<double>(g_rank)));
    require(g.shape() == Shape{world, 2}, "all_gather shape");
    for (int r = 0; r < world; ++r) require(g.at({r, 1}) == static_cast<float>(r), "all_gather row " + std::to_string(r));
    dist::barrier();

    // broadcast_module: ranks seeded differently end with rank 0's weights.
    Sequential model = make_model(100 + static_cast<uint64_t>(g_rank));
    dist::broadcast_module(model);
    const Sequential reference = make_model(100);
    const NamedTensors mine = model.state_dict(), theirs = reference.state_dict();
    for (size_t k = 0; k < mine.size(); ++k) require(mine[k].second.to_vector() == theirs[k].second.to_vector(), mine[k].first);

    // One data-parallel step equals the single-process step on the whole batch (to rounding):
    // rank r takes its contiguous slice of the global batch, scales by its share, all-reduces.
    const int64_t global = 4 * world + 3;  // not divisible: ranks get different shares
    const auto [x, y] = global_batch(global);
    const int64_t per = (global + world - 1) / world;
    const int64_t begin = std::min<int64_t>(global, g_rank * per), end = std::min<int64_t>(global, begin + per);
    dist::GradientAllReduce reduce(model.parameters());
    model.zero_grad();
    if (end > begin) cross_entropy(model(x.narrow(0, begin, end - begin)), y.narrow(0, begin, end - begin)).backward();
    reduce.all_reduce(static_cast<float>(end - begin) / static_cast<float>(global));
    Sequential single = make_model(100);
    cross_entropy(single(x), y).backward();
    const NamedTensors p = model.named_parameters(), q = single.named_parameters();
    for (size_t k = 0; k < p.size(); ++k) {
        const std::vector<float> a = p[k].second.grad().to_vector(), e = q[k].second.grad().to_vector();
        for (size_t j = 0; j < a.size(); ++j) {
            require(std::abs(a[j] - e[j]) <= 1e-6f + 1e-5f * std::abs(e[j]),
                    "gradient of " + p[k].first + " element " + std::to_string(j) + ": " + std::to_string(a[j]) +
                        " vs " + std::to_string(e[j]));
        }
    }
    // A second step through the same reduction: the gradients are now views of its buffer, so
    // backward accumulates into the buffer (nothing copied), with the same result; the metric
    // slots come back summed, unscaled.
    dist::GradientAllReduce with_metrics(model.parameters(), 2);
    model.zero_grad();  // set to none: the first call copies and binds the views
    for (int step = 0; step < 2; ++step) {
        if (step == 1) {
            for (const Tensor& t : model.parameters()) t.grad().zero_();  // as step_and_zero_grad does
        }
        if (end > begin) cross_entropy(model(x.narrow(0, begin, end - begin)), y.narrow(0, begin, end - begin)).backward();
        float values[2] = {1.0f, static_cast<float>(end - begin)};
        const float* before = model.parameters()[0].grad().data();
        with_metrics.all_reduce(static_cast<float>(end - begin) / static_cast<float>(global), values);
        require(values[0] == static_cast<float>(world) && values[1] == static_cast<float>(global), "metric slots summed");
        require(step == 0 || model.parameters()[0].grad().data() == before, "a bound gradient stays the buffer's view");
        for (size_t k = 0; k < p.size(); ++k) {
            const std::vector<float> a = p[k].second.grad().to_vector(), e = q[k].second.grad().to_vector();
            for (size_t j = 0; j < a.size(); ++j) {
                require(std::abs(a[j] - e[j]) <= 1e-6f + 1e-5f * std::abs(e[j]),
                        "step " + std::to_string(step) + ", gradient of " + p[k].first + " through the views");
            }
        }
    }
    // The sharded step (ranks on one node: here always) gives the parameters and optimizer state of
    // the allreduce and a whole step on every rank: bit for bit with 2 ranks (a + b either way), to
    // rounding with 4 (MPI's allreduce may sum in another order); and the ranks stay identical.
    Sequential whole = make_model(100), split = make_model(100);
    Adam adam_whole(whole.named_parameters()), adam_split(split.named_parameters());
    dist::GradientAllReduce reduce_whole(whole.parameters(), 1), reduce_split(split.parameters(), 1);
    require(reduce_split.shard_optimizer(adam_split) && reduce_split.sharded(), "shard_optimizer on one node");
    const auto [first, last] = adam_split.shard();
    int64_t total = 0;
    for (const Tensor& t : split.parameters()) total += t.numel();
    int64_t owned = last - first;
    Tensor owned_sum = full({1}, static_cast<double>(owned), kInt64);
    dist::all_reduce(owned_sum);
    require(first < last && last <= total && owned_sum.to_vector<int64_t>()[0] == total, "the shards cover the parameters");
    for (int step = 0; step < 3; ++step) {
        const float share = static_cast<float>(end - begin) / static_cast<float>(global);
        float value_whole[1] = {1.0f}, value_split[1] = {1.0f};
        if (end > begin) {
            cross_entropy(whole(x.narrow(0, begin, end - begin)), y.narrow(0, begin, end - begin)).backward();
            cross_entropy(split(x.narrow(0, begin, end - begin)), y.narrow(0, begin, end - begin)).backward();
        }
        reduce_whole.all_reduce(share, value_whole);
        reduce_split.reduce_shard(share, value_split);
        require(value_split[0] == static_cast<float>(world), "reduce_shard sums the metric slots");
        adam_whole.step_and_zero_grad();
        adam_split.step_and_zero_grad();
        reduce_split.gather_parameters();
    }
    reduce_split.gather_optimizer_state(adam_split);
    const auto agree = [&](const NamedTensors& a, const NamedTensors& e, const std::string& what) {
        for (size_t k = 0; k < a.size(); ++k) {
            const std::vector<float> u = a[k].second.to_vector(), v = e[k].second.to_vector();
            for (size_t j = 0; j < u.size(); ++j) {
                require(world == 2 ? u[j] == v[j] : std::abs(u[j] - v[j]) <= 1e-6f + 1e-5f * std::abs(v[j]),
                        what + " " + a[k].first + " element " + std::to_string(j) + ": " + std::to_string(u[j]) +
                            " sharded vs " + std::to_string(v[j]));
            }
        }
    };
    agree(split.named_parameters(), whole.named_parameters(), "sharded step: parameter");
    NamedTensors state_split, state_whole;
    for (const auto& kv : adam_split.state_dict()) {
        if (kv.first.rfind("exp_avg", 0) == 0) state_split.push_back(kv);
    }
    for (const auto& kv : adam_whole.state_dict()) {
        if (kv.first.rfind("exp_avg", 0) == 0) state_whole.push_back(kv);
    }
    require(state_split.size() == 2 * p.size(), "Adam's moments in the state");
    agree(state_split, state_whole, "sharded step, after gather_optimizer_state: state");
    for (const Tensor& t : split.parameters()) {
        const Tensor all = dist::all_gather(t);
        for (int r = 1; r < world; ++r) {
            require(all.select(0, r).to_vector() == all.select(0, 0).to_vector(), "sharded step: ranks identical");
        }
    }
    if (g_rank == 0) std::printf("dist_test: %d ranks: collectives, broadcast_module and a data-parallel step ok\n", world);
    return 0;
}
