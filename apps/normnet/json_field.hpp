// Reading one field of a JSON object into a typed C++ field, for the configs stored in
// config.json and checkpoint metadata (RunConfig, the model specs).
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>

#include "normnet/error.hpp"

namespace normnet::cli {

/// Reads j[key] into field when present, insisting on the field's JSON type: nlohmann's own
/// conversion of 1e300 to an integer is undefined behaviour, and of 2.5 a silent truncation.
template <class T>
void read_field(const nlohmann::json& j, const std::string& key, T& field) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j.at(key);
    if constexpr (std::is_same_v<T, std::string>) {
        NORMNET_CHECK(v.is_string(), "\"", key, "\" is not a string: ", v.dump());
        field = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
        NORMNET_CHECK(v.is_boolean(), "\"", key, "\" is not true or false: ", v.dump());
        field = v.get<bool>();
    } else if constexpr (std::is_floating_point_v<T>) {
        NORMNET_CHECK(v.is_number(), "\"", key, "\" is not a number: ", v.dump());
        field = v.get<T>();
    } else {
        // Integers: within T's range, compared without converting first.
        const bool fits = v.is_number_unsigned()  ? std::in_range<T>(v.get<uint64_t>())
                          : v.is_number_integer() ? std::in_range<T>(v.get<int64_t>())
                                                  : false;
        NORMNET_CHECK(fits, "\"", key, "\" is not an integer in [", std::numeric_limits<T>::min(), ", ",
                      std::numeric_limits<T>::max(), "]: ", v.dump());
        field = v.get<T>();
    }
}

}  // namespace normnet::cli
