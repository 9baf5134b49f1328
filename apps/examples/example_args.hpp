// The examples' command-line handling, kept out of their way: `--name value` options with
// defaults, strict numbers, and an error for anything unknown. Not part of normnet's API.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace examples {

class Args {
public:
    /// Reads argv as `--name value` pairs; `usage` lists the options and is printed for --help.
    Args(int argc, char** argv, std::string usage) : usage_(std::move(usage)) {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                std::printf("%s", usage_.c_str());
                std::exit(0);
            }
            if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("bad argument '" + a + "'\n" + usage_);
            values_[a.substr(2)] = argv[++i];
        }
    }
    /// The value of --name, or `fallback`.
    std::string str(const std::string& name, const std::string& fallback) { return take(name).value_or(fallback); }
    /// The value of --name as an integer (the whole text must be one), or `fallback`.
    int64_t num(const std::string& name, int64_t fallback) {
        return parse(name, fallback, "an integer", [](const std::string& v, size_t* used) { return std::stoll(v, used); });
    }
    /// The value of --name as a number, or `fallback`.
    double real(const std::string& name, double fallback) {
        return parse(name, fallback, "a number", [](const std::string& v, size_t* used) { return std::stod(v, used); });
    }
    /// Throws when an option was given that nobody asked for (a typo, say).
    void done() const {
        for (const auto& [name, value] : values_) {
            if (!used_.count(name)) throw std::invalid_argument("unknown option --" + name + "\n" + usage_);
        }
    }

private:
    // The value of --name converted by convert(text, &characters_used), which must use all of it.
    template <class T, class Convert>
    T parse(const std::string& name, T fallback, const char* kind, Convert convert) {
        const auto v = take(name);
        if (!v) return fallback;
        size_t used = 0;
        T value{};
        try {
            value = convert(*v, &used);
        } catch (const std::exception&) {
        }
        if (v->empty() || used != v->size()) throw std::invalid_argument("--" + name + ": not " + kind + ": '" + *v + "'");
        return value;
    }
    std::optional<std::string> take(const std::string& name) {
        used_.insert(name);
        const auto it = values_.find(name);
        if (it == values_.end()) return std::nullopt;
        return it->second;
    }
    std::string usage_;
    std::map<std::string, std::string> values_;
    std::set<std::string> used_;
};

}  // namespace examples
