// Internal: the text of modules' extra_repr(), as PyTorch prints it (Python's repr of floats,
// bools and tuples), so printed models read the same in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace normnet::detail {

/// Formats a double as Python's repr does (1e-05, 0.1, 1.0).
std::string python_float_repr(double value);
/// "True" or "False".
inline const char* py_bool(bool b) { return b ? "True" : "False"; }
/// "(300,)" or "(2, 3)", as Python prints a tuple of ints.
std::string py_tuple(const std::vector<int64_t>& v);
/// A (height, width) setting as Python holds it: "2" when given as one int, else "(2, 3)".
std::string py_int_or_pair(int64_t h, int64_t w, bool single);

}  // namespace normnet::detail
