// The process group behind normnet::dist: MPI's world communicator when normnet is built with
// MPI (NORMNET_WITH_MPI), else a group of one process. Only the main thread calls MPI (it is
// initialised with MPI_THREAD_FUNNELED); normnet's worker threads never do.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "../tensor_impl.hpp"
#include "normnet/autograd.hpp"
#include "normnet/dist.hpp"
#include "normnet/nn/norm.hpp"

#ifdef NORMNET_WITH_MPI
#include <mpi.h>
#endif

namespace normnet::dist {
namespace {

bool g_initialized = false;
int g_rank = 0, g_size = 1;

void check_contiguous(const Tensor& t, const char* op) {
    NORMNET_CHECK(t.defined() && t.is_contiguous(), op, ": expected a defined, contiguous tensor");
    NORMNET_CHECK(t.dtype() == kFloat32 || t.dtype() == kInt64, op, ": expected a float32 or int64 tensor, got ",
                  t.dtype());
}

#ifdef NORMNET_WITH_MPI
MPI_Datatype mpi_type(Dtype d) { return d == kInt64 ? MPI_INT64_T : MPI_FLOAT; }
MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::max ? MPI_MAX : op == ReduceOp::min ? MPI_MIN : MPI_SUM; }

// MPI counts are ints: large buffers go in pieces.
constexpr int64_t kMaxCount = int64_t{1} << 30;

void finalize_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}
#endif

}  // namespace

bool is_available() {
#ifdef NORMNET_WITH_MPI
    return true;
#else
    return false;
#endif
}

void init_process_group() {
    if (g_initialized) return;
#ifdef NORMNET_WITH_MPI
    int already = 0;
    MPI_Initialized(&already);
    if (!already) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        std::atexit(finalize_at_exit);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#endif
    g_initialized = true;
}

bool is_initialized() { return g_initialized; }
int get_rank() { return g_rank; }
int get_world_size() { return g_size; }

void barrier() {
#ifdef NORMNET_WITH_MPI
    if (g_initialized && g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void all_reduce(Tensor& t, ReduceOp op) {
    check_contiguous(t, "all_reduce");
#ifdef NORMNET_WITH_MPI
    if (g_size > 1) {
        char* p = t.impl().bytes();
        const int64_t elem = element_size(t.dtype());
        for (int64_t done = 0; done < t.numel(); done += kMaxCount) {
            const int count = static_cast<int>(std::min(kMaxCount, t.numel() - done));
            MPI_Allreduce(MPI_IN_PLACE, p + done * elem, count, mpi_type(t.dtype()), mpi_op(op), MPI_COMM_WORLD);
        }
    }
#else
    (void)op;
#endif
    t.bump_version();
}

void all_reduce(double* values, int64_t n, ReduceOp op) {
#ifdef NORMNET_WITH_MPI
    if (g_size > 1 && n > 0) {
        MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(n), MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD);
    }
#else
    (void)values, (void)n, (void)op;
#endif
}

void broadcast(Tensor& t, int src) {
    check_contiguous(t, "broadcast");
    NORMNET_CHECK(src >= 0 && src < g_size, "broadcast: source rank ", src, " is not in a group of ", g_size);
#ifdef NORMNET_WITH_MPI
    if (g_size > 1) {
        char* p = t.impl().bytes();
        const int64_t elem = element_size(t.dtype());
        for (int64_t done = 0; done < t.numel(); done += kMaxCount) {
            const int count = static_cast<int>(std::min(kMaxCount, t.numel() - done));
            MPI_Bcast(p + done * elem, count, mpi_type(t.dtype()), src, MPI_COMM_WORLD);
        }
    }
#endif
    t.bump_version();
}

Tensor all_gather(const Tensor& t_in) {
    const Tensor t = t_in.contiguous();
    check_contiguous(t, "all_gather");
    Shape shape{g_size};
    for (int64_t s : t.shape()) shape.push_back(s);
    Tensor out = empty(shape, t.dtype());
#ifdef NORMNET_WITH_MPI
    if (g_size > 1) {
        NORMNET_CHECK(t.numel() <= kMaxCount, "all_gather: ", t.numel(), " elements per rank are too many");
        MPI_Allgather(t.impl().bytes(), static_cast<int>(t.numel()), mpi_type(t.dtype()), out.impl().bytes(),
                      static_cast<int>(t.numel()), mpi_type(t.dtype()), MPI_COMM_WORLD);
        return out;
    }
#endif
    std::memcpy(out.impl().bytes(), t.impl().bytes(), static_cast<size_t>(t.numel() * element_size(t.dtype())));
    return out;
}

void all_gather(const double* values, int64_t n, double* out) {
#ifdef NORMNET_WITH_MPI
    if (g_size > 1) {
        NORMNET_CHECK(n <= kMaxCount, "all_gather: ", n, " values per rank are too many");
        MPI_Allgather(values, static_cast<int>(n), MPI_DOUBLE, out, static_cast<int>(n), MPI_DOUBLE, MPI_COMM_WORLD);
        return;
    }
#endif
    std::copy_n(values, n, out);
}

int64_t convert_sync_batchnorm(Module& module, bool sync) {
    int64_t converted = 0;
    module.apply([&](Module& m) {
        if (auto* bn = dynamic_cast<BatchNormBase*>(&m)) {
            bn->set_sync_stats(sync);
            ++converted;
        }
    });
    return converted;
}

void broadcast_module(const Module& module, int src) {
    NoGradGuard no_grad;
    for (const auto& [name, t] : module.state_dict()) {
        NORMNET_CHECK(t.is_contiguous(), "broadcast_module: ", name, " is not contiguous");
        Tensor shared = t.detach();  // the same data: broadcasting into it updates the module
        broadcast(shared, src);
    }
}

GradientAllReduce::GradientAllReduce(std::vector<Tensor> params, int64_t metrics)
    : params_(std::move(params)), metrics_(metrics) {
    NORMNET_CHECK(metrics >= 0, "GradientAllReduce: metrics must be >= 0, got ", metrics);
    int64_t total = metrics;
    for (const Tensor& p : params_) {
        NORMNET_CHECK(p.defined() && p.dtype() == kFloat32, "GradientAllReduce: parameters must be float32 tensors");
        total += p.numel();
    }
    flat_ = empty({total});
}

void GradientAllReduce::all_reduce(float scale) {
    NORMNET_CHECK(metrics_ == 0, "GradientAllReduce::all_reduce: pass the ", metrics_, " metric values this reduction was made for");
    all_reduce(scale, {});
}

void GradientAllReduce::all_reduce(float scale, std::span<float> values) {
    NORMNET_CHECK(static_cast<int64_t>(values.size()) == metrics_, "GradientAllReduce::all_reduce: expected ", metrics_,
                  " metric values, got ", values.size());
    pack(scale, values);
    const auto start = std::chrono::steady_clock::now();
    dist::all_reduce(flat_);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bind_gradients();
    std::copy_n(flat_.data() + (flat_.numel() - metrics_), metrics_, values.begin());
}

void GradientAllReduce::pack(float scale, std::span<const float> values) {
    // After the first call every parameter's .grad is a view of its slot in the flat buffer (as
    // DDP's gradient_as_bucket_view), so backward accumulates straight into the buffer and a
    // step copies nothing; a gradient that is not (the first step, one set to none by
    // zero_grad(), one replaced by the caller) is copied in once and the view bound again.
    float* flat = flat_.data();
    int64_t at = 0;
    for (const Tensor& p : params_) {
        const Tensor g = p.grad();
        const int64_t n = p.numel();
        float* slot = flat + at;
        if (g.defined() && g.is_contiguous() && g.data() == slot) {
            if (scale != 1.0f) {
                for (int64_t i = 0; i < n; ++i) slot[i] *= scale;
            }
        } else if (g.defined()) {
            const Tensor c = g.contiguous();
            const float* src = c.data();
            for (int64_t i = 0; i < n; ++i) slot[i] = src[i] * scale;
        } else {
            std::fill_n(slot, n, 0.0f);
        }
        at += n;
    }
    std::copy(values.begin(), values.end(), flat + at);  // the metrics ride at the end
}

void GradientAllReduce::bind_gradients() {
    int64_t at = 0;
    for (const Tensor& p : params_) {
        const int64_t n = p.numel();
        const Tensor g = p.grad();
        if (!(g.defined() && g.is_contiguous() && g.data() == flat_.data() + at)) {
            p.set_grad(flat_.narrow(0, at, n).view(p.shape()));
        }
        at += n;
    }
}

void abort_job(int code) {
#ifdef NORMNET_WITH_MPI
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::exit(code);
}

}  // namespace normnet::dist
