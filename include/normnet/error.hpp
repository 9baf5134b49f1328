// normnet::Error, the one exception type of the library, and NORMNET_CHECK, which throws it
// with a message built only when the check fails.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "normnet/export.hpp"

namespace normnet {

/// The one exception type the library throws for bad input or misuse.
/// The message says what went wrong and where (shapes, file names, option names).
class NORMNET_API Error : public std::runtime_error {
public:
    /// An error with message `what`.
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// The parts streamed into one string, as c10::str: str("shape ", shape, " at ", i).
template <class... Parts>
std::string str(Parts&&... parts) {
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

/// Throws normnet::Error with the streamed parts as its message.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
    throw Error(str(std::forward<Parts>(parts)...));
}

}  // namespace normnet

/// NORMNET_CHECK(condition, parts...) throws normnet::Error with the streamed parts as its
/// message when condition is false (as TORCH_CHECK). The parts are evaluated only then, so a
/// passing check costs one branch and allocates nothing, whatever its message mentions.
#define NORMNET_CHECK(condition, ...)                         \
    do {                                                      \
        if (!(condition)) [[unlikely]] ::normnet::fail(__VA_ARGS__); \
    } while (false)
