// libFuzzer target: reading back a run folder's metrics.csv, which `normnet train --resume`
// merges into the checkpoint's history (the seconds of each epoch; the rows themselves for a
// checkpoint without history). Any file must be read without a crash, a damaged row left out, and
// the merged history must still hold epochs 1..n once each.
#include "fuzz_input.hpp"
#include "metrics_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace normnet::cli;
    const std::string path = normnet::fuzz::as_file(data, size);
    read_metrics_csv(path);
    for (const bool has_history : {false, true}) {
        std::vector<EpochMetrics> history;
        for (int64_t e = 1; e <= 3; ++e) history.push_back({.epoch = e});
        complete_history(history, has_history, 3, path);
        if (history.size() != 3) __builtin_trap();
        for (int64_t e = 1; e <= 3; ++e) {
            if (history[static_cast<size_t>(e - 1)].epoch != e) __builtin_trap();
        }
    }
    return 0;
}
