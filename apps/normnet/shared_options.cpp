// Options that several subcommands share, declared once so that their names, checks and help
// stay the same in train, compare and bench.
#include "commands.hpp"
#include "run_config.hpp"

namespace normnet::cli {

void add_data_options(CLI::App& cmd, RunConfig& c) {
    cmd.add_option("--dataset", c.dataset, "mnist or fashion-mnist")
        ->check(CLI::IsMember({"mnist", "fashion-mnist"}))
        ->capture_default_str();
    cmd.add_option("--data", c.data_dir, "Dataset folder (default: data/mnist, or /usr/share/datasets/fashion-mnist)");
    cmd.add_option("--limit", c.limit, "Use only the first N images of each split (0: all), for quick runs");
    cmd.add_option("--threads", c.threads, "Threads (default: the number of cores)")->check(kThreadsRange);
}

void add_optimizer_options(CLI::App& cmd, RunConfig& c) {
    cmd.add_option("--optimizer", c.optimizer, "sgd, adam or adamw")
        ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
        ->capture_default_str();
    cmd.add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
    cmd.add_option("--weight-decay", c.weight_decay, "Weight decay (decoupled for adamw, L2 otherwise)")
        ->capture_default_str();
    cmd.add_option("--schedule", c.schedule, "Learning-rate schedule per batch: constant, step or cosine")
        ->check(CLI::IsMember({"constant", "step", "cosine"}))
        ->capture_default_str();
    cmd.add_option("--warmup", c.warmup, "Linear warm-up, in batches")->capture_default_str();
    cmd.add_option("--clip", c.clip, "Clip the gradient norm to this value (0: off)")->capture_default_str();
}

}  // namespace normnet::cli
