// libFuzzer target: the run configuration and architecture JSON a checkpoint carries
// (normnet.config and normnet.architecture, the text of config.json's "config"), read by
// `normnet train --resume` and `normnet eval`. fuzz_resume covers them among the other metadata;
// here every mutation lands in the JSON. Any input must give a range-checked configuration or a
// normnet::Error, and what the trainer then computes from it (the schedule) must not overflow.
#include <string>

#include "normnet/error.hpp"
#include "normnet/optim.hpp"
#include "normnet/tensor.hpp"
#include "run_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace normnet::cli;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const ModelSpec spec = ModelSpec::from_json(text, "fuzz");
        if (!(spec.parameters() <= kMaxParameters)) __builtin_trap();  // validated before building
    } catch (const normnet::Error&) {
    }
    try {
        const RunConfig config = RunConfig::from_json(text, "fuzz");
        config.validate();
        static normnet::Tensor weight = normnet::zeros({1}).requires_grad_();
        normnet::SGD optimizer({weight}, {.lr = config.lr});
        for (const int64_t batches : {int64_t{1}, int64_t{469}, int64_t{1} << 40}) {
            // A run counted in steps has its length in --steps (or in epochs of its corpus).
            const int64_t total = config.counts_steps() && config.steps > 0 ? config.steps : config.epochs * batches;
            const normnet::LRSchedulerOptions options = schedule_options(config, total, batches);
            normnet::LRScheduler scheduler(optimizer, options);
            scheduler.set_position(options.total_steps);
            scheduler.lr_at(options.total_steps - 1);
        }
    } catch (const normnet::Error&) {
    }
    return 0;
}
