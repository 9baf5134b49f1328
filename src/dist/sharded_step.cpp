// GradientAllReduce's sharded step: for ranks on one node, the optimizer's work split over them
// through MPI-3 shared memory instead of an allreduce (see dist.hpp). Where an allreduce moves
// every gradient through MPI's buffers and every rank then updates all P parameters, here each
// rank publishes its gradients in its shared segment, sums the ranks' values of its own P / N
// elements straight from the others' segments, updates them, publishes them, and copies the
// other shards' new values: two barriers, about 2 P floats copied per rank, and P / N of the
// optimizer's pass. The profile of the seed MLP at batch 128 on 2 cores (2 x 1 thread) showed
// the allreduce (0.13 ms of a 1.02 ms step) and the unsplit Adam pass (0.11 ms, against half of
// 0.08 ms per core with one process on 2 threads) as the whole gap to one process.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "normnet/dist.hpp"

#ifdef NORMNET_WITH_MPI
#include <mpi.h>
#endif

namespace normnet::dist {

struct GradientAllReduce::Window {
#ifdef NORMNET_WITH_MPI
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Win win = MPI_WIN_NULL;
#endif
    int rank = 0, size = 1;
    int64_t total = 0;              // parameters' elements (the metrics follow them in the gradient part)
    std::vector<float*> segments;   // rank k's segment: total + metrics gradient slots, then total parameters
    std::vector<int64_t> bounds;    // rank k owns [bounds[k], bounds[k + 1]) of the concatenation
    int64_t begin() const { return bounds[static_cast<size_t>(rank)]; }
    int64_t end() const { return bounds[static_cast<size_t>(rank) + 1]; }
    void sync() const {
#ifdef NORMNET_WITH_MPI
        MPI_Win_sync(win);  // this rank's stores visible, then everyone's after the barrier
        MPI_Barrier(node);
        MPI_Win_sync(win);
#endif
    }
};

namespace {

// Calls f(data, at, n) for the pieces of params covering [begin, end) of their concatenation:
// data points at element `at` of the concatenation, n elements.
template <class F>
void for_each_piece(const std::vector<Tensor>& params, int64_t begin, int64_t end, F f) {
    int64_t offset = 0;
    for (const Tensor& p : params) {
        const int64_t n = p.numel();
        const int64_t b = std::max(begin, offset), e = std::min(end, offset + n);
        if (b < e) f(p.data() + (b - offset), b, e - b);
        offset += n;
    }
}

}  // namespace

bool GradientAllReduce::shard_optimizer(Optimizer& optimizer) {
#ifdef NORMNET_WITH_MPI
    if (window_ != nullptr) return true;
    if (!is_initialized() || get_world_size() == 1) return false;
    // The optimizer must step these very tensors in this order, so that its concatenation is
    // the flat buffer's (a split into parameter groups reorders them: then no sharding).
    const NamedTensors& named = optimizer.params();
    bool same = named.size() == params_.size();
    for (size_t i = 0; same && i < named.size(); ++i) same = named[i].second.data() == params_[i].data();
    int all_same = same ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, get_rank(), MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    int one_node = node_size == get_world_size() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_same || !one_node) {  // across nodes: the allreduce (see the README's cost model)
        MPI_Comm_free(&node);
        return false;
    }
    auto w = std::make_unique<Window>();
    w->node = node;
    MPI_Comm_rank(node, &w->rank);
    w->size = node_size;
    w->total = flat_.numel() - metrics_;
    const int64_t floats = flat_.numel() + w->total;
    float* mine = nullptr;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(floats * static_cast<int64_t>(sizeof(float))), sizeof(float),
                            MPI_INFO_NULL, node, &mine, &w->win);
    for (int k = 0; k < w->size; ++k) {
        MPI_Aint bytes = 0;
        int unit = 0;
        float* base = nullptr;
        MPI_Win_shared_query(w->win, k, &bytes, &unit, &base);
        w->segments.push_back(base);
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
    // Even shards, their boundaries on multiples of 16 elements (the optimizers' vector width).
    for (int k = 0; k <= w->size; ++k) {
        w->bounds.push_back(k == w->size ? w->total : (w->total * k / w->size) / 16 * 16);
    }
    optimizer.set_shard(w->begin(), w->end());
    window_ = w.release();
    return true;
#else
    (void)optimizer;
    return false;
#endif
}

void GradientAllReduce::reduce_shard(float scale, std::span<float> values) {
    NORMNET_CHECK(window_ != nullptr, "GradientAllReduce::reduce_shard: call shard_optimizer() first (it returned false?)");
    NORMNET_CHECK(static_cast<int64_t>(values.size()) == metrics_, "GradientAllReduce::reduce_shard: expected ",
                  metrics_, " metric values, got ", values.size());
    const Window& w = *window_;
    pack(scale, values);
    const auto start = std::chrono::steady_clock::now();
    float* flat = flat_.data();
    float* own = w.segments[static_cast<size_t>(w.rank)];
    // Publish this rank's gradients and metrics, then sum, in rank order from the segments, the
    // shard (each element by its owner alone, so the ranks cannot disagree) and the metrics (on
    // every rank, in the same order, so they agree too).
    const int64_t b = w.begin(), e = w.end(), n = flat_.numel();
    std::memcpy(own, flat, static_cast<size_t>(n) * sizeof(float));
    w.sync();
    const auto sum_into = [&](int64_t from, int64_t to) {
        const float* first = w.segments[0];
        const float* second = w.segments[1];
        for (int64_t i = from; i < to; ++i) flat[i] = first[i] + second[i];
        for (size_t k = 2; k < w.segments.size(); ++k) {
            const float* other = w.segments[k];
            for (int64_t i = from; i < to; ++i) flat[i] += other[i];
        }
    };
    sum_into(b, e);
    sum_into(w.total, n);
    std::fill(flat, flat + b, 0.0f);  // not this rank's to step: zeros, ready for the next backward
    std::fill(flat + e, flat + w.total, 0.0f);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bind_gradients();
    flat_.bump_version();
    std::copy_n(flat + w.total, metrics_, values.begin());
}

void GradientAllReduce::gather_parameters() {
    NORMNET_CHECK(window_ != nullptr, "GradientAllReduce::gather_parameters: call shard_optimizer() first");
    const Window& w = *window_;
    const auto start = std::chrono::steady_clock::now();
    const int64_t params_at = flat_.numel();  // the parameter part of a segment
    float* own = w.segments[static_cast<size_t>(w.rank)] + params_at;
    for_each_piece(params_, w.begin(), w.end(),
                   [&](const float* p, int64_t at, int64_t n) { std::memcpy(own + at, p, static_cast<size_t>(n) * sizeof(float)); });
    w.sync();
    for (int k = 0; k < w.size; ++k) {
        if (k == w.rank) continue;
        const float* theirs = w.segments[static_cast<size_t>(k)] + params_at;
        for_each_piece(params_, w.bounds[static_cast<size_t>(k)], w.bounds[static_cast<size_t>(k) + 1],
                       [&](float* p, int64_t at, int64_t n) { std::memcpy(p, theirs + at, static_cast<size_t>(n) * sizeof(float)); });
    }
    for (const Tensor& p : params_) p.bump_version();
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void GradientAllReduce::gather_optimizer_state(Optimizer& optimizer) const {
    if (window_ == nullptr) return;
    const Window& w = *window_;
    // The per-parameter state ("exp_avg.<name>", ...) has its parameter's shape: each shard's
    // piece comes from its owner, by broadcast (checkpoints only, so simple beats fast).
    NamedTensors state = optimizer.state_dict();
    const NamedTensors& params = optimizer.params();
    bool changed = false;
    for (auto& [key, t] : state) {
        int64_t offset = 0;
        for (const auto& [name, p] : params) {
            const int64_t n = p.numel();
            // "<kind>.<parameter name>": the kinds have no dot; "step.<name>" is a count, not state.
            const size_t dot = key.find('.');
            const bool ours = dot != std::string::npos && key.compare(dot + 1, std::string::npos, name) == 0 &&
                              key.compare(0, dot, "step") != 0;
            if (ours && t.dtype() == kFloat32 && t.shape() == p.shape()) {
                Tensor flat = t.contiguous().view({n});
                for (int k = 0; k < w.size; ++k) {
                    const int64_t b = std::max(offset, w.bounds[static_cast<size_t>(k)]);
                    const int64_t e = std::min(offset + n, w.bounds[static_cast<size_t>(k) + 1]);
                    if (b >= e) continue;
                    Tensor piece = flat.narrow(0, b - offset, e - b);
                    broadcast(piece, k);
                }
                t = flat.view(p.shape());
                changed = true;
                break;
            }
            offset += n;
        }
    }
    if (changed) optimizer.load_state_dict(state);
}

GradientAllReduce::~GradientAllReduce() {
#ifdef NORMNET_WITH_MPI
    // Freeing the window is collective: only on the normal path, which every rank takes at the
    // same point; a rank unwinding from an error leaves it to the process's exit (waiting here
    // for ranks that will never come would turn a failure into a hang).
    if (window_ != nullptr && std::uncaught_exceptions() == 0) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) {
            MPI_Win_unlock_all(window_->win);
            MPI_Win_free(&window_->win);
            MPI_Comm_free(&window_->node);
        }
    }
#endif
    delete window_;
}

}  // namespace normnet::dist
