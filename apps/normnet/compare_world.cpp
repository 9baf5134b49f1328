// compare --world / --bn-sync: the data-parallel runs as mpirun children, and their report.
#include "compare_world.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <type_traits>
#include <variant>

#include "commands.hpp"
#include "metrics_csv.hpp"
#include "model_spec.hpp"
#include "models.hpp"
#include "norms.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string pct(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", 100 * v);
    return buf;
}

// The `normnet train` arguments of one run of the grid: every run option of the config table and
// the model's own options, so that the child trains exactly `c`.
std::vector<std::string> train_arguments(const RunConfig& c, const std::string& out) {
    std::vector<std::string> args{"train", "--model", c.model.type, "--norm", c.model.norm.name()};
    for (const ModelOption& o : c.model.kind().options) {
        if (o.dropout) {
            args.insert(args.end(), {o.flag, num(c.model.dropout)});
            continue;
        }
        std::string sizes;
        for (int64_t v : c.model.size(o.key)) sizes += (sizes.empty() ? "" : ",") + std::to_string(v);
        args.insert(args.end(), {o.flag, o.choices.empty() ? sizes : choice_of(c.model, o).name});
    }
    for (const ConfigField& f : config_fields()) {
        if (f.flag.empty() || !(f.tasks & c.task_bits())) continue;
        std::string value;
        std::visit(
            [&](auto member) {
                using T = std::remove_cvref_t<decltype(c.*member)>;
                if constexpr (std::is_same_v<T, std::string>) {
                    value = c.*member;
                } else if constexpr (std::is_floating_point_v<T>) {
                    value = num(c.*member);
                } else {
                    value = std::to_string(c.*member);
                }
            },
            f.member);
        if (f.key == "data_dir") value = c.resolved_data_dir();
        args.insert(args.end(), {f.flag, value});
    }
    args.insert(args.end(), {"--quiet", "--overwrite", "--out", out});
    return args;
}

// Runs argv with stdout and stderr into `log`; returns the exit status (128 + signal if killed).
int run_child(const std::vector<std::string>& argv, const std::string& log) {
    const pid_t pid = fork();
    NORMNET_CHECK(pid >= 0, "compare --world: cannot start ", argv[0]);
    if (pid == 0) {
        const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "normnet: error: compare --world: cannot run %s\n", args[0]);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string last_line(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return "";
    std::string line, last;
    char buf[1024];
    while (std::fgets(buf, sizeof buf, f)) {
        line = buf;
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
        if (!line.empty()) last = line;
    }
    std::fclose(f);
    return last;
}

std::string mode_label(const WorldRun& r) {
    if (!r.config.model.norm.batch_statistics()) return "—";
    return r.config.bn_sync;
}

}  // namespace

std::vector<int> parse_world_list(const std::string& text) {
    std::vector<int> worlds;
    for (int64_t w : parse_size_list(text, "--world")) {
        NORMNET_CHECK(w <= 1024, "--world: at most 1024 processes, got ", w);
        worlds.push_back(static_cast<int>(w));
    }
    return worlds;
}

std::vector<std::string> parse_bn_sync_list(const std::string& text) {
    std::vector<std::string> modes;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        NORMNET_CHECK(item == "local" || item == "sync", "--bn-sync: unknown '", item, "' (expected local and/or sync)");
        for (const std::string& m : modes) NORMNET_CHECK(m != item, "--bn-sync: '", item, "' given twice");
        modes.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return modes;
}

std::vector<WorldRun> run_world_cell(const RunConfig& cell, const std::vector<int>& worlds,
                                     const std::vector<std::string>& modes, const std::string& dir,
                                     const std::function<bool()>& stop) {
    const char* mpirun = std::getenv("NORMNET_MPIRUN");
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    std::vector<WorldRun> runs;
    for (int world : worlds) {
        if (world == 1 || cell.batch_size % world != 0) continue;  // world 1: the grid's own run
        const bool batch_stats = cell.model.norm.batch_statistics();
        const std::vector<std::string> cell_modes = batch_stats ? modes : std::vector<std::string>{"local"};
        for (const std::string& mode : cell_modes) {
            if (stop && stop()) return runs;
            WorldRun r;
            r.config = cell;
            r.config.bn_sync = mode;
            r.world = world;
            // Each rank gets its share of the cores.
            r.config.threads = std::max(1, cell.threads / world);
            const std::string name = cell.model.norm.name() + "_b" + std::to_string(cell.batch_size) + "_s" +
                                     std::to_string(cell.seed) + "_w" + std::to_string(world) +
                                     (batch_stats ? "_" + mode : "");
            const std::string out = (fs::path(dir) / "world" / name).string();
            fs::create_directories(out);
            // Shared memory between the ranks of this machine (no network).
            std::vector<std::string> argv{mpirun ? mpirun : "mpirun", "--oversubscribe", "--mca", "btl", "self,vader",
                                          "-np", std::to_string(world)};
            if (geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
            argv.push_back(self);
            for (const std::string& a : train_arguments(r.config, out)) argv.push_back(a);
            const auto start = std::chrono::steady_clock::now();
            const std::string log = out + ".log";
            const int status = run_child(argv, log);
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            for (const auto& [epoch, m] : read_metrics_csv((fs::path(out) / kMetricsFile).string())) r.curve.push_back(m);
            if (status != 0 || static_cast<int64_t>(r.curve.size()) != cell.epochs) {
                r.failure = "exit " + std::to_string(status) + ": " + last_line(log);
            }
            runs.push_back(r);
        }
    }
    return runs;
}

std::string world_csv(const std::vector<WorldRun>& runs) {
    std::string csv = "norm,batch_size,per_rank_batch,world,bn_sync,seed,final_test_acc,final_test_loss,final_train_loss,wall_seconds,failure\n";
    for (const WorldRun& r : runs) {
        const EpochMetrics last = r.curve.empty() ? EpochMetrics{} : r.curve.back();
        char row[512];
        std::snprintf(row, sizeof row, "%s,%lld,%lld,%d,%s,%llu,%.6f,%.6f,%.6f,%.2f,%s\n", r.config.model.norm.name().c_str(),
                      static_cast<long long>(r.config.batch_size), static_cast<long long>(r.config.batch_size / r.world),
                      r.world, mode_label(r).c_str(), static_cast<unsigned long long>(r.config.seed), last.test_acc,
                      last.test_loss, last.train_loss, r.seconds, r.failure.empty() ? "" : "\"failed\"");
        csv += row;
    }
    return csv;
}

std::string world_report_md(const std::vector<WorldRun>& runs, const SingleAccuracy& single) {
    std::string md = "## Data parallelism: world size and BatchNorm mode\n\n";
    md += "Each run again as `mpirun -np W normnet train` with the same seed and the same global batch (each rank "
          "takes batch / W of it). `local`: each rank's BatchNorm normalises over its own batch / W samples (as "
          "PyTorch's DDP); `sync`: over all ranks' samples, i.e. the global batch. World 1 is the single-process run "
          "above. Final test accuracy (%):\n\n";
    md += "| normalisation | BatchNorm mode | batch | per-rank batch | world | test acc % | single process at the "
          "global batch | single process at the per-rank batch | wall s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    const auto cell = [&](const std::string& norm, int64_t batch, uint64_t seed) {
        const auto acc = single(norm, batch, seed);
        return acc ? pct(*acc) : std::string("—");
    };
    std::string findings;
    int closer_local = 0, local_compared = 0, sync_equal = 0, sync_compared = 0, other_equal = 0, other_compared = 0;
    for (const WorldRun& r : runs) {
        const int64_t per_rank = r.config.batch_size / r.world;
        const std::string label = r.config.model.norm.label();
        if (!r.failure.empty()) {
            md += "| " + label + " | " + mode_label(r) + " | " + std::to_string(r.config.batch_size) + " | " +
                  std::to_string(per_rank) + " | " + std::to_string(r.world) + " | failed (" + r.failure + ") | | | |\n";
            continue;
        }
        const double acc = r.curve.back().test_acc;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.1f", r.seconds);
        md += "| " + label + " | " + mode_label(r) + " | " + std::to_string(r.config.batch_size) + " | " +
              std::to_string(per_rank) + " | " + std::to_string(r.world) + " | " + pct(acc) + " | " +
              cell(r.config.model.norm.name(), r.config.batch_size, r.config.seed) + " | " +
              cell(r.config.model.norm.name(), per_rank, r.config.seed) + " | " + secs + " |\n";
        const auto global = single(r.config.model.norm.name(), r.config.batch_size, r.config.seed);
        const auto local = single(r.config.model.norm.name(), per_rank, r.config.seed);
        if (r.config.model.norm.batch_statistics() && r.config.bn_sync == "sync" && global) {
            ++sync_compared;
            sync_equal += std::abs(acc - *global) <= 0.002;
        }
        if (!r.config.model.norm.batch_statistics() && global) {
            ++other_compared;
            other_equal += std::abs(acc - *global) <= 0.002;
        }
        if (r.config.model.norm.batch_statistics() && r.config.bn_sync == "local" && global && local && *global != *local) {
            ++local_compared;
            closer_local += std::abs(acc - *local) < std::abs(acc - *global);
        }
    }
    md += "\n**What this run shows.** ";
    if (sync_compared > 0) {
        findings += "Synchronised BatchNorm matched single-process BatchNorm at the global batch (within 0.2 points) in " +
                    std::to_string(sync_equal) + " of " + std::to_string(sync_compared) +
                    " runs (the equivalence tests show it is the same computation to rounding). ";
    }
    if (local_compared > 0) {
        findings += "Local BatchNorm was closer to single-process BatchNorm at the per-rank batch than at the global "
                    "batch in " + std::to_string(closer_local) + " of " + std::to_string(local_compared) +
                    " runs where the grid had both batch sizes with different results. ";
    } else {
        findings += "For local BatchNorm, add the per-rank batch sizes to --batch-sizes (e.g. 16 for batch 64 over 4 "
                    "processes) to compare it with one process at the per-rank batch. ";
    }
    if (other_compared > 0) {
        findings += "Without BatchNorm, " + std::to_string(other_equal) + " of " + std::to_string(other_compared) +
                    " data-parallel runs matched the single-process run within 0.2 points (they compute the same "
                    "step up to the summation order).";
    }
    findings += "\n\n";
    return md + findings;
}

}  // namespace normnet::cli
