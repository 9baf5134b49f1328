#include "compare_grid.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "progress.hpp"
#include "run_folder.hpp"
#include "signals.hpp"

namespace normnet::cli {

double GridRun::seconds() const {
    double s = 0;
    for (const EpochMetrics& m : curve) s += m.seconds;
    return s;
}

double run_grid(const GridPlan& plan) {
    // Schedules that do not fit their batches, BatchNorm at batch 1, a corpus too short: found
    // now, before the folder is touched, not after hours of runs.
    int64_t units_per_run = 0;
    for (const GridRow& row : plan.rows) {
        for (int64_t batch : plan.batches) {
            const RunConfig c = plan.config(row, batch, 0);
            const Trainer trainer(c, make_task(c, *plan.data, {}));
            units_per_run = c.counts_steps() ? c.steps : c.epochs;
        }
    }
    const StopOnSignal signals;
    std::unique_ptr<FolderLock> lock;  // held until the grid ends
    prepare_output_folder(plan.out, "--out", plan.files, plan.files, plan.overwrite, false, lock);
    std::printf("%s\n", plan.header.c_str());
    std::fflush(stdout);

    ProgressBar bar(plan.name, plan.total_runs() * units_per_run, plan.samples_per_unit, stdout_is_terminal());
    const auto start = std::chrono::steady_clock::now();
    const auto stop = [] { return StopOnSignal::requested() != 0; };
    int64_t finished = 0, units_done = 0;
    for (int s = 0; s < plan.seeds && !stop(); ++s) {
        for (int64_t batch : plan.batches) {
            for (const GridRow& row : plan.rows) {
                if (stop()) break;
                const RunConfig c = plan.config(row, batch, s);
                Trainer trainer(c, make_task(c, *plan.data, {}));
                GridRun run{row.key, c.batch_size, c.seed, c.lr, {}, ""};
                const int64_t base = units_done;
                const auto on_step = [&](int64_t, int64_t, double) {
                    if (c.counts_steps()) bar.update(base + trainer.step(), row.label);
                };
                try {
                    while (!trainer.finished() && !stop()) {
                        const auto m = trainer.run_epoch(on_step, StopOnSignal::stop_after_step);
                        if (!m) break;
                        run.curve.push_back(*m);
                        if (!c.counts_steps()) bar.update(base + static_cast<int64_t>(run.curve.size()), row.label);
                    }
                } catch (const NonFinite& e) {
                    if (!plan.diverged_is_result) throw;
                    run.diverged = e.what();
                }
                units_done = base + units_per_run;
                if (stop()) break;  // an unfinished run is left out of the results
                ++finished;
                plan.done(trainer, std::move(run));
            }
        }
    }
    bar.finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (const int signal = StopOnSignal::requested()) {
        const std::string runs = std::to_string(finished) + " of " + plural(plan.total_runs(), "run");
        plan.write(seconds, str("stopped by ", StopOnSignal::name(signal), " after ", runs, "; the runs that did not finish are left out."));
        throw Interrupted(signal, str("normnet: compare stopped by ", StopOnSignal::name(signal), " after ", runs,
                                      "; their results are in ", plan.out,
                                      "/ (report.md marked incomplete); run it again with --overwrite to redo the grid"));
    }
    plan.write(seconds, "");
    return seconds;
}

CellStat stat_of(const std::vector<double>& v) {
    CellStat s;
    s.n = static_cast<int>(v.size());
    if (v.empty()) return s;
    s.mean = 0;
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    for (double x : v) s.std += (x - s.mean) * (x - s.mean);
    s.std = v.size() > 1 ? std::sqrt(s.std / static_cast<double>(v.size() - 1)) : 0.0;  // sample std
    return s;
}

std::vector<double> finite(const std::vector<double>& values) {
    std::vector<double> v;
    for (double x : values) {
        if (std::isfinite(x)) v.push_back(x);
    }
    return v;
}

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

}  // namespace normnet::cli
