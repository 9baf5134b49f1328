// The process group one run of the command line belongs to under `mpirun -np N normnet ...`:
// this process's rank and the world size, and what data parallelism adds to a run (the Trainer
// takes one of these; a world of one adds nothing, not even a branch per step).
#pragma once

#include <cstdint>
#include <string>

namespace normnet {
class Module;
}

namespace normnet::cli {

struct Replicas {
    int rank = 0;
    int world = 1;
    int local_size = 1;           // processes of this job on this machine (for --threads)
    int64_t check_every = 0;      // --check-replicas K: compare the parameters' hashes every K steps (0: off)

    bool parallel() const { return world > 1; }
    /// Rank 0 prints, writes metrics and checkpoints.
    bool leader() const { return rank == 0; }

    /// The group of the launcher that started this process (mpirun, srun or another PMIx
    /// launcher: MPI is initialised only then, so a plain `normnet train` never touches MPI),
    /// else a world of one.
    static Replicas from_environment();
    /// The world that the last from_environment() found (a world of one before).
    static const Replicas& current();
};

/// The threads of one rank: `requested`, else the count the environment asks for
/// (NORMNET_NUM_THREADS, OMP_NUM_THREADS: per process, as OpenMP's), else the CPUs this process
/// may use shared among the job's processes on this machine (a launcher that binds each rank to
/// its own cores leaves each one those).
int threads_per_rank(int requested, const Replicas& replicas);

/// Each rank's share of a global batch of `batch_size` (--batch-size): batch_size / world; throws
/// UsageError unless it divides, so that every rank takes an equal slice of every batch.
int64_t per_rank_batch(int64_t batch_size, const Replicas& replicas);

/// --bn-sync local: every BatchNorm's running statistics become their mean over the ranks
/// (num_batches_tracked their maximum: a rank may have sat out a batch), the same on every rank
/// afterwards; for evaluation and checkpoints. Every rank must call it.
void average_running_stats(Module& model, const Replicas& replicas);

/// "normnet: error: " for one process; "normnet: error: rank 1 of 2: " in a group, so that
/// the failing rank is named.
std::string error_prefix();

/// Exits a failed run with `status`: in a group through MPI_Abort, so that the other ranks stop
/// within seconds instead of waiting in a collective for this one; else returns `status`.
int failed(int status);

}  // namespace normnet::cli
