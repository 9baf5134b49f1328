// Python's repr of floats and tuples, for PyTorch-identical module printing.
#include "repr.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace normnet::detail {

std::string py_tuple(const std::vector<int64_t>& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(v[i]);
    }
    return s + (v.size() == 1 ? ",)" : ")");
}

std::string py_int_or_pair(int64_t h, int64_t w, bool single) {
    return single ? std::to_string(h) : py_tuple({h, w});
}

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);  // shortest round-trip
    std::string sci(buf, res.ptr);
    const auto e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    const int exponent = std::atoi(sci.c_str() + e + 1);
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa) {
        if (c != '.') digits += c;
    }
    std::string out;
    if (exponent >= -4 && exponent < 16) {
        // Fixed notation, always with a fractional part ("1.0", "0.001").
        if (exponent < 0) {
            out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exponent + 1) {
            out = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." + digits.substr(static_cast<size_t>(exponent + 1));
        }
    } else {
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out = mantissa + exp_buf;
    }
    return negative ? "-" + out : out;
}

}  // namespace normnet::detail
