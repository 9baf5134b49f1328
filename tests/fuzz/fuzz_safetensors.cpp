// libFuzzer target: the safetensors reader, and loading what it read into a model (a BatchNorm
// MLP, so int64 buffers and 0-dim tensors are involved), into its optimizer (the "optimizer."
// tensors of a training state, as `normnet train --resume` loads them) and into a scheduler (the
// "scheduler." tensors: a SequentialLR of LinearLR and StepLR, composite and plain states). Any
// input must give a result or a normnet::Error, a failed load must leave what it was loading into
// unchanged, and a scheduler that loaded must be able to step.
#include <cstdlib>
#include <cstring>

#include "fuzz_input.hpp"
#include "normnet/normnet.hpp"

namespace {

// Linear(4, 3) -> ReLU -> BatchNorm1d(3) -> Linear(3, 2): state_dict names 0.weight ... 3.bias.
normnet::Sequential& model() {
    static normnet::Sequential m{normnet::Linear(4, 3), normnet::ReLU(), normnet::BatchNorm1d(3), normnet::Linear(3, 2)};
    return m;
}

normnet::AdamW& optimizer() {
    static normnet::AdamW opt(model().named_parameters(), {.lr = 1e-3});
    return opt;
}

// Each tensor's values as doubles (exact for float32 and for the int64 counters), compared by
// bits below so that a NaN equals itself.
struct Schedulers {
    normnet::LinearLR warmup{optimizer(), {.total_iters = 3}};
    normnet::StepLR decay{optimizer(), {.step_size = 2, .gamma = 0.5}};
    normnet::SequentialLR sequence{optimizer(), {warmup, decay}, {3}};
};
normnet::SequentialLR& scheduler() {
    static Schedulers s;
    return s.sequence;
}

// The tensors named prefix + name, as name.
normnet::NamedTensors with_prefix(const normnet::NamedTensors& tensors, const std::string& prefix) {
    normnet::NamedTensors out;
    for (const auto& [name, t] : tensors) {
        if (name.rfind(prefix, 0) == 0) out.emplace_back(name.substr(prefix.size()), t);
    }
    return out;
}

std::vector<std::vector<double>> values(const normnet::NamedTensors& state) {
    std::vector<std::vector<double>> out;
    for (const auto& [name, t] : state) out.push_back(t.to_vector<double>());
    return out;
}

void trap_unless_same(const std::vector<std::vector<double>>& before, const std::vector<std::vector<double>>& after) {
    if (before.size() != after.size()) __builtin_trap();
    for (size_t i = 0; i < before.size(); ++i) {
        if (before[i].size() != after[i].size() ||
            std::memcmp(before[i].data(), after[i].data(), before[i].size() * sizeof(double)) != 0) {
            __builtin_trap();  // a failed load changed what it was loading into
        }
    }
}

}  // namespace

// NORMNET_FUZZ_WRITE_SEED=FILE: writes a seed that loads whole (the model's, the optimizer's and
// the scheduler's states after one step, under their prefixes) and exits; make_seeds.py runs it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* path = std::getenv("NORMNET_FUZZ_WRITE_SEED");
    if (path == nullptr) return 0;
    normnet::manual_seed(0);
    normnet::sum(model()(normnet::rand({4, 4}))).backward();
    optimizer().step();
    scheduler().step();
    normnet::NamedTensors all = model().state_dict();
    for (const auto& [name, t] : optimizer().state_dict()) all.emplace_back("optimizer." + name, t);
    for (const auto& [name, t] : scheduler().state_dict()) all.emplace_back("scheduler." + name, t);
    normnet::save_safetensors(path, all, {{"format", "pt"}});
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = normnet::fuzz::as_file(data, size);
    normnet::SafetensorsData loaded;
    try {
        loaded = normnet::load_safetensors(path);
    } catch (const normnet::Error&) {
        return 0;
    }
    const auto before = values(model().state_dict());
    try {
        normnet::load(model(), loaded);
    } catch (const normnet::Error&) {
        trap_unless_same(before, values(model().state_dict()));
    }
    const auto optimizer_before = values(optimizer().state_dict());
    try {
        optimizer().load_state_dict(with_prefix(loaded.tensors, "optimizer."));
    } catch (const normnet::Error&) {
        trap_unless_same(optimizer_before, values(optimizer().state_dict()));
    }
    const auto scheduler_before = values(scheduler().state_dict());
    bool scheduler_loaded = false;
    try {
        scheduler().load_state_dict(with_prefix(loaded.tensors, "scheduler."));
        scheduler_loaded = true;
    } catch (const normnet::Error&) {
        trap_unless_same(scheduler_before, values(scheduler().state_dict()));
    }
    if (scheduler_loaded) {
        try {
            scheduler().step();  // a schedule that cannot go on says so (normnet::Error), nothing worse
        } catch (const normnet::Error&) {
        }
    }
    return 0;
}
