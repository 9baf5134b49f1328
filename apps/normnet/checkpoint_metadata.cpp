// Checkpoint metadata values: parsing with range checks, and their text forms.
#include "checkpoint_metadata.hpp"

#include <cmath>
#include <limits>

namespace normnet::cli {

using Json = nlohmann::json;

std::string rng_state_text(const Generator& gen) {
    std::string s;
    for (uint64_t w : gen.state()) {
        if (!s.empty()) s.push_back(' ');
        s.append(std::to_string(w));
    }
    return s;
}

std::string metadata_or_fail(const SafetensorsData& data, const std::string& key) {
    const auto it = data.metadata.find(key);
    NORMNET_CHECK(it != data.metadata.end(), data.path, ": not a normnet checkpoint (no '", key, "' in its metadata)");
    return it->second;
}

uint64_t parse_count(const std::string& text, uint64_t max, const std::string& where) {
    uint64_t v = 0;
    bool ok = !text.empty() && text.size() <= 20;
    for (char c : text) {
        ok = ok && c >= '0' && c <= '9' && v <= (max - static_cast<uint64_t>(c - '0')) / 10;
        if (ok) v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    NORMNET_CHECK(ok, where, ": malformed number '", text, "' (expected an integer in [0, ", max, "])");
    return v;
}

std::array<uint64_t, 4> parse_rng_state(const std::string& text, const std::string& where) {
    std::array<uint64_t, 4> state{};
    size_t start = 0;
    for (size_t i = 0; i < state.size(); ++i) {
        const size_t space = text.find(' ', start);
        NORMNET_CHECK((space == std::string::npos) == (i + 1 == state.size()), where, ": malformed RNG state '", text, "'");
        state[i] = parse_count(text.substr(start, space - start), std::numeric_limits<uint64_t>::max(), where);
        start = space + 1;
    }
    return state;
}

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
double number_of(const Json& v) {
    NORMNET_CHECK(v.is_number() || v.is_null(), "not a number: ", v.dump());
    return v.is_null() ? NAN : v.get<double>();
}
int64_t count_of(const Json& v, int64_t max) {
    NORMNET_CHECK(v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(max), "not an integer in [0, ", max,
          "]: ", v.dump());
    return v.get<int64_t>();
}

std::string first_non_finite(const NamedTensors& state) {
    for (const auto& [name, t] : state) {
        if (t.dtype() != kFloat32) continue;  // counts (num_batches_tracked, steps) are always finite
        const Tensor c = t.contiguous();
        const float* p = c.data();
        for (int64_t i = 0; i < c.numel(); ++i) {
            if (!std::isfinite(p[i])) return name;
        }
    }
    return "";
}

}  // namespace normnet::cli
