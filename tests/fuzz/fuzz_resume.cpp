// libFuzzer target: the metadata `normnet train --resume` and `normnet eval` read from a
// checkpoint pair (architecture and config JSON, epoch and batch counters, optimizer, scheduler
// position, RNG state, metrics history, progress inside an epoch). The input holds the values,
// separated by NUL bytes, in kKeys' order (tests/fuzz/make_seeds.py writes seeds that way).
// Any input must parse into a range-checked ResumePoint or give a normnet::Error.
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "trainer.hpp"

namespace {

struct Key {
    const char* name;
    bool in_model;  // else in the training state
};
constexpr Key kKeys[] = {{"normnet.architecture", true}, {"normnet.config", true},           {"normnet.epoch", true},
                         {"normnet.batch", true},        {"normnet.epoch", false},           {"normnet.optimizer", false},
                         {"normnet.scheduler_position", false}, {"normnet.rng_state", false}, {"normnet.history", false},
                         {"normnet.progress", false},           {"normnet.step", true},      {"normnet.step", false}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    normnet::cli::LoadedCheckpoint c;
    c.model.path = "model.safetensors";
    c.state.path = "training_state.safetensors";
    const std::string input(reinterpret_cast<const char*>(data), size);
    size_t start = 0;
    for (const Key& key : kKeys) {
        if (start > input.size()) break;  // fewer values: the rest of the keys are absent
        const size_t end = std::min(input.find('\0', start), input.size());
        (key.in_model ? c.model : c.state).metadata[key.name] = input.substr(start, end - start);
        start = end + 1;
    }
    try {
        const normnet::cli::ResumePoint p = normnet::cli::parse_resume_point(c);
        p.config.validate();
        normnet::cli::check_file_fits(p.spec, c.model);
    } catch (const normnet::Error&) {
    }
    return 0;
}
