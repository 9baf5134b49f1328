// The examples' command-line handling, kept out of their way: `--name value` options with
// defaults, strict numbers, and an error for anything unknown. Not part of normnet's API.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
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
        const auto v = take(name);
        if (!v) return fallback;
        size_t used = 0;
        int64_t n = 0;
        try {
            n = std::stoll(*v, &used);
        } catch (const std::exception&) {
        }
        if (v->empty() || used != v->size()) throw std::invalid_argument("--" + name + ": not an integer: '" + *v + "'");
        return n;
    }
    /// The value of --name as a number, or `fallback`.
    double real(const std::string& name, double fallback) {
        const auto v = take(name);
        if (!v) return fallback;
        size_t used = 0;
        double x = 0;
        try {
            x = std::stod(*v, &used);
        } catch (const std::exception&) {
        }
        if (v->empty() || used != v->size()) throw std::invalid_argument("--" + name + ": not a number: '" + *v + "'");
        return x;
    }
    /// Throws when an option was given that nobody asked for (a typo, say).
    void done() const {
        for (const auto& [name, value] : values_) {
            if (!used_.count(name)) throw std::invalid_argument("unknown option --" + name + "\n" + usage_);
        }
    }

private:
    std::optional<std::string> take(const std::string& name) {
        used_[name] = true;
        const auto it = values_.find(name);
        if (it == values_.end()) return std::nullopt;
        return it->second;
    }
    std::string usage_;
    std::map<std::string, std::string> values_;
    std::map<std::string, bool> used_;
};

}  // namespace examples
