// Replicas: finding the launcher's process group, and ending it when one rank fails.
#include "replicas.hpp"

#include <algorithm>
#include <cstdlib>

#include "commands.hpp"
#include "normnet/autograd.hpp"
#include "normnet/dist.hpp"
#include "normnet/module.hpp"
#include "normnet/threads.hpp"

namespace normnet::cli {
namespace {

Replicas g_current;

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

// Set by Open MPI's mpirun, by PMIx launchers (srun --mpi=pmix) and by PMI-1/2 launchers.
bool launched() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
        if (std::getenv(name)) return true;
    }
    return false;
}

}  // namespace

Replicas Replicas::from_environment() {
    Replicas r;
    if (launched() && dist::is_available()) {
        dist::init_process_group();
        r.rank = dist::get_rank();
        r.world = dist::get_world_size();
        r.local_size = std::max(1, env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", 1)));
    }
    g_current = r;
    return r;
}

const Replicas& Replicas::current() { return g_current; }

int threads_per_rank(int requested, const Replicas& replicas) {
    if (requested > 0) return requested;
    if (const auto from_environment = num_threads_from_environment()) return *from_environment;
    return std::max(1, available_cpus() / replicas.local_size);
}

int64_t per_rank_batch(int64_t batch_size, const Replicas& r) {
    if (batch_size % r.world != 0) {
        throw UsageError(str("--batch-size ", batch_size, ": the global batch must divide by the ", r.world,
                             " processes of this run (each rank takes an equal slice of every batch)"));
    }
    return batch_size / r.world;
}

void average_running_stats(Module& model, const Replicas& r) {
    if (!r.parallel()) return;
    NoGradGuard no_grad;
    const float inv_world = 1.0f / static_cast<float>(r.world);
    for (auto& [name, t] : model.named_buffers()) {
        Tensor b = t.detach();
        if (b.dtype() == kFloat32) {
            dist::all_reduce(b);
            float* d = b.data();
            for (int64_t i = 0; i < b.numel(); ++i) d[i] *= inv_world;
        } else {
            dist::all_reduce(b, dist::ReduceOp::max);
        }
    }
}

std::string error_prefix() {
    const Replicas& r = Replicas::current();
    if (!r.parallel()) return "normnet: error: ";
    return "normnet: error: rank " + std::to_string(r.rank) + " of " + std::to_string(r.world) + ": ";
}

int failed(int status) {
    if (Replicas::current().parallel()) dist::abort_job(status);
    return status;
}

}  // namespace normnet::cli
