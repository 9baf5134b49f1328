// How many CPUs this process may use: the affinity mask and the cgroup CPU quota (cpu_budget.hpp).
// The files read are the kernel's; anything unexpected in them means "no limit known", never an
// error, so a strange /proc never stops a program.
#include "cpu_budget.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace normnet::detail {

int affinity_cpus() {
    // A set sized for 4096 CPUs: sched_getaffinity fails with EINVAL when the kernel's mask is
    // larger than the buffer, and then the count is unknown.
    constexpr int kMaxCpus = 4096;
    cpu_set_t* set = CPU_ALLOC(kMaxCpus);
    if (set == nullptr) return 0;
    const size_t bytes = CPU_ALLOC_SIZE(kMaxCpus);
    CPU_ZERO_S(bytes, set);
    const int count = sched_getaffinity(0, bytes, set) == 0 ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    return count;
}

namespace {

constexpr size_t kMaxLines = 100000;  // mountinfo of a busy host has hundreds; stop reading well past that

std::vector<std::string> read_lines(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; lines.size() < kMaxLines && std::getline(in, line);) lines.push_back(std::move(line));
    return lines;
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t end = text.find(separator, start);
        parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (end == std::string_view::npos) return parts;
        start = end + 1;
    }
}

bool has_token(std::string_view list, std::string_view token) {
    for (const auto& t : split(list, ',')) {
        if (t == token) return true;
    }
    return false;
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo octal escapes.
std::string unescape(std::string_view s) {
    const auto octal = [](char c) { return c >= '0' && c <= '7'; };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::optional<int64_t> to_int(std::string_view s) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// The first whitespace-separated words of a small file (a cgroup's control file).
std::vector<std::string> words_of(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line)) return {};
    std::istringstream words(line);
    std::vector<std::string> out;
    for (std::string w; out.size() < 4 && words >> w;) out.push_back(w);
    return out;
}

// quota / period rounded up; 0 (no limit) unless both are positive.
int cpus_of(std::optional<int64_t> quota, std::optional<int64_t> period) {
    if (!quota || !period || *quota <= 0 || *period <= 0) return 0;
    const int64_t cpus = *quota / *period + (*quota % *period != 0 ? 1 : 0);
    return static_cast<int>(std::min<int64_t>(cpus, 1 << 20));
}

// The limit set in one cgroup directory: "max 100000" or "150000 100000" in cpu.max (v2);
// "-1" or a quota in cpu.cfs_quota_us with the period in cpu.cfs_period_us (v1).
int limit_in(const std::string& dir, bool v2) {
    if (v2) {
        const auto w = words_of(dir + "/cpu.max");
        if (w.size() < 2 || w[0] == "max") return 0;
        return cpus_of(to_int(w[0]), to_int(w[1]));
    }
    const auto q = words_of(dir + "/cpu.cfs_quota_us"), p = words_of(dir + "/cpu.cfs_period_us");
    if (q.empty() || p.empty()) return 0;
    return cpus_of(to_int(q[0]), to_int(p[0]));
}

// The smallest limit from `dir` up to `top` (the hierarchy's mount point), 0 for none.
int smallest_limit(std::string dir, const std::string& top, bool v2) {
    int smallest = 0;
    for (int depth = 0; depth < 64; ++depth) {
        const int limit = limit_in(dir, v2);
        if (limit > 0) smallest = smallest == 0 ? limit : std::min(smallest, limit);
        if (dir.size() <= top.size()) break;
        const size_t slash = dir.find_last_of('/');
        if (slash == std::string::npos || slash < top.size()) break;
        dir.resize(slash);
    }
    return smallest;
}

struct Mount {
    std::string root;   // the part of the hierarchy mounted (/ unless a container sees its own)
    std::string point;  // where it is mounted
    bool v2 = false;
};

// The cgroup hierarchies that control CPU time: every cgroup2 mount, and the v1 mounts of the cpu controller.
std::vector<Mount> cpu_mounts(const std::string& root) {
    std::vector<Mount> mounts;
    for (const auto& line : read_lines(root + "/proc/self/mountinfo")) {
        // id parent major:minor root mount-point options [optional fields] - type source super-options
        const auto f = split(line, ' ');
        const auto dash = std::find(f.begin(), f.end(), "-");
        if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
        const std::string& type = dash[1];
        const std::string& super_options = dash[3];
        if (type == "cgroup2") {
            mounts.push_back({unescape(f[3]), unescape(f[4]), true});
        } else if (type == "cgroup" && has_token(super_options, "cpu")) {
            mounts.push_back({unescape(f[3]), unescape(f[4]), false});
        }
    }
    return mounts;
}

}  // namespace

int cgroup_cpu_limit(const std::string& root) {
    // This process's cgroup in each hierarchy: "0::/path" (v2), "4:cpu,cpuacct:/path" (v1).
    std::optional<std::string> v2_path, v1_path;
    for (const auto& line : read_lines(root + "/proc/self/cgroup")) {
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string_view id = std::string_view(line).substr(0, a);
        const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
        const std::string path = line.substr(b + 1);
        if (id == "0" && controllers.empty()) v2_path = path;
        else if (has_token(controllers, "cpu")) v1_path = path;
    }
    int smallest = 0;
    for (const Mount& m : cpu_mounts(root)) {
        const auto& path = m.v2 ? v2_path : v1_path;
        if (!path) continue;
        // The cgroup's directory: its path below the part of the hierarchy that is mounted (a
        // container sees its own cgroup as "/" or as the mount's root).
        std::string below = *path;
        if (m.root != "/" && below.compare(0, m.root.size(), m.root) == 0) below = below.substr(m.root.size());
        else if (m.root != "/") below.clear();
        std::string top = root + m.point;
        while (top.size() > 1 && top.back() == '/') top.pop_back();
        while (below.size() > 1 && below.back() == '/') below.pop_back();
        const std::string dir = below.empty() || below == "/" ? top : top + below;
        const int limit = smallest_limit(dir, top, m.v2);
        if (limit > 0) smallest = smallest == 0 ? limit : std::min(smallest, limit);
    }
    return smallest;
}

}  // namespace normnet::detail
