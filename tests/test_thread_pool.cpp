// The thread pool's size and its behaviour on too few CPUs: the count taken from the affinity
// mask, the cgroup CPU quota and the environment (NORMNET_NUM_THREADS, OMP_NUM_THREADS) in the
// documented order, and a pool with more threads than CPUs that still finishes its loops
// promptly. (test_threads.cpp checks that results do not depend on the count.)
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <numeric>

#include "cli_helpers.hpp"
#include "cpu_budget.hpp"
#include "parallel.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using test::ThreadsGuard;

namespace {

// Confines the calling thread (and the threads it creates afterwards) to one CPU of its current
// mask; gives the old mask back at the end.
struct OneCpu {
    cpu_set_t saved{};
    bool ok = false;
    OneCpu() {
        if (sched_getaffinity(0, sizeof saved, &saved) != 0) return;
        int first = 0;
        while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) ++first;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        ok = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    ~OneCpu() {
        if (ok) sched_setaffinity(0, sizeof saved, &saved);
    }
};

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

// Runs this test program's hidden case "thread pool: child prints its thread count" in a fresh
// process (so nothing has sized the pool yet) under `prefix` (environment settings, taskset);
// returns what it printed.
test::RunResult run_child(const std::string& prefix) {
    const auto self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string command = "env -u NORMNET_NUM_THREADS -u OMP_NUM_THREADS " + prefix + " " + test::shell_quote(self) +
                          " " + test::shell_quote("thread pool: child prints its thread count") + " 2>&1";
    test::RunResult r;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (size_t got = 0; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, got);
    const int status = ::pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

bool have_taskset() { return std::system("taskset -c 0 true >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("thread pool: child prints its thread count", "[.child]") {
    // Run by run_child only: the first use of the pool sizes it.
    try {
        const int threads = get_num_threads();
        std::printf("threads=%d available=%d\n", threads, available_cpus());
    } catch (const Error& e) {
        std::printf("error: %s\n", e.what());
    }
}

TEST_CASE("thread pool: the count follows the affinity mask and the environment, in order", "[threads][pool]") {
    if (!have_taskset()) NORMNET_SKIP("taskset (util-linux) is not available");
    const int cpus = available_cpus();
    INFO("this process may use " << cpus << " CPUs");
    const auto threads_of = [](const std::string& prefix) {
        const auto r = run_child(prefix);
        INFO(prefix << " -> " << r.out);
        REQUIRE(r.status == 0);
        // The child's own line, without Catch's header and summary.
        for (const auto& line : test::lines_of(r.out)) {
            if (line.rfind("threads=", 0) == 0 || line.rfind("error: ", 0) == 0) return line + "\n";
        }
        FAIL("the child printed no thread count");
        return std::string();
    };
    // The default: the CPUs this process may use; under taskset, one.
    CHECK(threads_of("") == "threads=" + std::to_string(cpus) + " available=" + std::to_string(cpus) + "\n");
    CHECK(threads_of("taskset -c 0") == "threads=1 available=1\n");
    // The environment overrides the CPUs (more threads than CPUs is allowed) ...
    CHECK(threads_of("NORMNET_NUM_THREADS=3 taskset -c 0") == "threads=3 available=1\n");
    CHECK(threads_of("OMP_NUM_THREADS=2 taskset -c 0") == "threads=2 available=1\n");
    CHECK(threads_of("OMP_NUM_THREADS=3,1 taskset -c 0") == "threads=3 available=1\n");  // OpenMP's list: the first level
    // ... NORMNET_NUM_THREADS before OMP_NUM_THREADS ...
    CHECK(threads_of("NORMNET_NUM_THREADS=2 OMP_NUM_THREADS=3") == "threads=2 available=" + std::to_string(cpus) + "\n");
    // ... an OMP_NUM_THREADS that is no count is ignored, as the OpenMP runtime ignores it ...
    CHECK(threads_of("OMP_NUM_THREADS=many taskset -c 0") == "threads=1 available=1\n");
    // ... and a bad NORMNET_NUM_THREADS is an error naming it.
    const std::string bad = threads_of("NORMNET_NUM_THREADS=0");
    CHECK_THAT(bad, Catch::Contains("error: NORMNET_NUM_THREADS='0': expected a whole number of threads from 1 to 1024"));
}

TEST_CASE("thread pool: environment values are parsed by one documented rule", "[threads][pool]") {
    using detail::parse_thread_count;
    CHECK(parse_thread_count("4") == 4);
    CHECK(parse_thread_count(" 2\n") == 2);
    CHECK(parse_thread_count("1024") == 1024);
    for (const char* bad : {"", " ", "0", "-1", "+3", "1025", "99999", "4x", "2.5", "four", "0x10"}) {
        INFO("'" << bad << "'");
        CHECK_FALSE(parse_thread_count(bad).has_value());
    }
    using detail::thread_count_from;
    CHECK_FALSE(thread_count_from(nullptr, nullptr).has_value());
    CHECK(thread_count_from("3", "5") == 3);
    CHECK(thread_count_from("", "5") == 5);  // set but empty: as unset
    CHECK(thread_count_from(nullptr, "4,2") == 4);
    CHECK_FALSE(thread_count_from(nullptr, "abc").has_value());
    CHECK_FALSE(thread_count_from(nullptr, "0").has_value());
    CHECK_THROWS_WITH(thread_count_from("abc", "2"),
                      "NORMNET_NUM_THREADS='abc': expected a whole number of threads from 1 to 1024 (unset it to use "
                      "every available CPU)");
    CHECK_THROWS_WITH(set_num_threads(0), "set_num_threads: the thread count must be from 1 to 1024, got 0");
    CHECK_THROWS_WITH(set_num_threads(1025), "set_num_threads: the thread count must be from 1 to 1024, got 1025");
}

TEST_CASE("thread pool: the affinity mask of a confined thread counts one CPU", "[threads][pool]") {
    const OneCpu one;
    if (!one.ok) NORMNET_SKIP("sched_setaffinity is not permitted here");
    CHECK(detail::affinity_cpus() == 1);
    CHECK(available_cpus() == 1);
}

TEST_CASE("thread pool: the cgroup CPU quota is read from v2 and v1 hierarchies", "[threads][pool]") {
    test::ScratchDir root("normnet_cgroup_");
    const std::filesystem::path r = root.path;
    SECTION("no cgroup files: no limit") { CHECK(detail::cgroup_cpu_limit(r.string()) == 0); }
    SECTION("v2: the smallest limit on the way up, rounded up") {
        write_file(r / "proc/self/mountinfo",
                   "22 1 0:21 / /proc rw - proc proc rw\n"
                   "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n");
        write_file(r / "proc/self/cgroup", "0::/user.slice/app.scope\n");
        write_file(r / "sys/fs/cgroup/cpu.max", "max 100000\n");
        write_file(r / "sys/fs/cgroup/user.slice/cpu.max", "250000 100000\n");
        write_file(r / "sys/fs/cgroup/user.slice/app.scope/cpu.max", "max 100000\n");
        CHECK(detail::cgroup_cpu_limit(r.string()) == 3);  // 2.5 CPUs: 3 threads
        write_file(r / "sys/fs/cgroup/user.slice/app.scope/cpu.max", "50000 100000\n");
        CHECK(detail::cgroup_cpu_limit(r.string()) == 1);  // half a CPU: still one thread
        write_file(r / "sys/fs/cgroup/user.slice/app.scope/cpu.max", "garbage\n");
        write_file(r / "sys/fs/cgroup/user.slice/cpu.max", "-5 100000\n");
        CHECK(detail::cgroup_cpu_limit(r.string()) == 0);  // nothing readable: no limit
    }
    SECTION("v1: the cpu controller's quota and period; a container's own cgroup as the mount's root") {
        write_file(r / "proc/self/mountinfo",
                   "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                   "32 31 0:29 / /sys/fs/cgroup/cpu\\054cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                   "33 31 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
        write_file(r / "proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
        write_file(r / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        write_file(r / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        write_file(r / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
        write_file(r / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
        CHECK(detail::cgroup_cpu_limit(r.string()) == 3);
        // Inside the container the hierarchy's root is its own cgroup, mounted where the host's was.
        write_file(r / "proc/self/mountinfo",
                   "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpuacct,cpu\n");
        write_file(r / "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "150000\n");
        write_file(r / "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
        CHECK(detail::cgroup_cpu_limit(r.string()) == 2);
    }
}

TEST_CASE("thread pool: more threads than CPUs finish parallel loops promptly and correctly", "[threads][pool]") {
    ThreadsGuard guard;
    const OneCpu one;  // declared after the guard: the mask is given back before the pool is resized
    if (!one.ok) NORMNET_SKIP("sched_setaffinity is not permitted here");
    // Four threads on one CPU. A pool whose caller spins waiting for a worker that cannot run
    // (the LSTM: 141 s against 1.2 s on one thread) takes a time slice per loop.
    set_num_threads(4);
    constexpr int kLoops = 2000;
    constexpr int64_t kN = 4096;
    std::vector<int64_t> sums(4);
    int64_t total = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int loop = 0; loop < kLoops; ++loop) {
        std::fill(sums.begin(), sums.end(), 0);
        detail::parallel_for_chunks(kN, 1, [&](int chunk, int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) sums[static_cast<size_t>(chunk)] += i;
        });
        total += std::accumulate(sums.begin(), sums.end(), int64_t{0});
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(total == int64_t{kLoops} * (kN * (kN - 1) / 2));
    // About 20 µs a loop on an idle CPU; the bound leaves room for a machine busy with other work.
    INFO(kLoops << " loops took " << seconds << " s");
    CHECK(seconds < 2.0);
}

TEST_CASE("thread pool: an exception thrown in a chunk reaches the caller, and the pool goes on", "[threads][pool]") {
    ThreadsGuard guard;
    set_num_threads(3);
    for (int thrower : {0, 1, 2}) {
        INFO("chunk " << thrower << " throws");
        std::atomic<int> ran{0};
        CHECK_THROWS_WITH(detail::parallel_for_chunks(300, 1,
                                                      [&](int chunk, int64_t, int64_t) {
                                                          ++ran;
                                                          if (chunk == thrower) throw Error("chunk failed");
                                                      }),
                          "chunk failed");
        CHECK(ran == 3);  // the other chunks still ran: none is left half done behind the caller's back
    }
    std::atomic<int64_t> covered{0};
    detail::parallel_for(300, 1, [&](int64_t begin, int64_t end) { covered += end - begin; });
    CHECK(covered == 300);
}

TEST_CASE("thread pool: normnet train names a bad NORMNET_NUM_THREADS and writes nothing", "[threads][pool][cli]") {
    test::TempDir dir;
    const auto r = test::run_normnet({"train", "--epochs", "1", "--limit", "64", "--data", dir / "absent"}, dir.work(),
                                     "export NORMNET_NUM_THREADS=lots");
    CHECK(r.status != 0);
    CHECK_THAT(r.err, Catch::StartsWith("normnet: error: NORMNET_NUM_THREADS='lots': expected a whole number of threads"));
    CHECK(test::snapshot(dir.work()).empty());
}
