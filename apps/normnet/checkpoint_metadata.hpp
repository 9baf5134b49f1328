// Reading and writing the values a checkpoint keeps in its safetensors metadata (strings):
// counts, RNG states, numbers that may be NaN, each checked before a resume uses it. Shared by
// `normnet train` and `normnet lm train`.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "normnet/checkpoint.hpp"
#include "normnet/tensor.hpp"

namespace normnet::cli {

/// data.metadata[key]; throws normnet::Error naming the file when it is absent.
std::string metadata_or_fail(const SafetensorsData& data, const std::string& key);

/// A decimal integer in [0, max], digits only (no sign, no spaces), from checkpoint metadata.
uint64_t parse_count(const std::string& text, uint64_t max, const std::string& where);

/// A generator's state as four decimal words, and back.
std::string rng_state_text(const Generator& gen);
std::array<uint64_t, 4> parse_rng_state(const std::string& text, const std::string& where);

/// JSON has no NaN or infinity: they are stored as null (a test loss can overflow).
nlohmann::json number(double v);
/// A number or null (NaN); throws normnet::Error otherwise.
double number_of(const nlohmann::json& v);
/// An unsigned JSON integer in [0, max]; throws normnet::Error otherwise.
int64_t count_of(const nlohmann::json& v, int64_t max);

/// The first float32 tensor of `state` holding a NaN or an infinity (its name), or "".
std::string first_non_finite(const NamedTensors& state);

}  // namespace normnet::cli
