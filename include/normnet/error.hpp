// normnet::Error and the small check helpers every public function uses to reject bad input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace normnet {

/// The one exception type the library throws for bad input or misuse.
/// The message says what went wrong and where (shapes, file names, option names).
class Error : public std::runtime_error {
public:
    /// An error with message `what`.
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Parts>
std::string concat(Parts&&... parts) {
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}
}  // namespace detail

/// Throws normnet::Error with the streamed parts as its message when `condition` is false.
template <class... Parts>
void check(bool condition, Parts&&... parts) {
    if (!condition) throw Error(detail::concat(std::forward<Parts>(parts)...));
}

/// Throws normnet::Error with the streamed parts as its message.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
    throw Error(detail::concat(std::forward<Parts>(parts)...));
}

}  // namespace normnet
