// libFuzzer target: the safetensors reader, and loading what it read into a model (a BatchNorm
// MLP, so int64 buffers and 0-dim tensors are involved). Any input must give a result or a
// normnet::Error, and a failed load must leave the model unchanged.
#include <cstring>

#include "fuzz_input.hpp"
#include "normnet/normnet.hpp"

namespace {

// Linear(4, 3) -> ReLU -> BatchNorm1d(3) -> Linear(3, 2): state_dict names 0.weight ... 3.bias.
normnet::Sequential& model() {
    static normnet::Sequential m{normnet::Linear(4, 3), normnet::ReLU(), normnet::BatchNorm1d(3), normnet::Linear(3, 2)};
    return m;
}

std::vector<std::vector<float>> values(const normnet::Module& m) {
    std::vector<std::vector<float>> out;
    for (const auto& [name, t] : m.state_dict()) out.push_back(t.to_vector());
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = normnet::fuzz::as_file(data, size);
    normnet::SafetensorsData loaded;
    try {
        loaded = normnet::load_safetensors(path);
    } catch (const normnet::Error&) {
        return 0;
    }
    const auto before = values(model());
    try {
        normnet::load(model(), loaded);
    } catch (const normnet::Error&) {
        const auto after = values(model());
        for (size_t i = 0; i < before.size(); ++i) {
            if (before[i].size() != after[i].size() ||
                std::memcmp(before[i].data(), after[i].data(), before[i].size() * sizeof(float)) != 0) {
                __builtin_trap();  // a failed load changed the model
            }
        }
    }
    return 0;
}
