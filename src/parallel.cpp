// The thread pool behind parallel_for. A loop's chunks are claimed from one counter: the caller
// publishes the loop, wakes the workers and runs chunks itself until none is left unclaimed, so
// a worker that is slow to start (asleep, or off its core on a busy or oversubscribed machine)
// delays nothing: whoever gets to a chunk first runs it. The caller then waits only for chunks
// already running. A waiting thread spins for a few hundred microseconds (the next loop of a
// training step usually follows within microseconds), yielding its core now and then, and then
// sleeps in the kernel; with more threads than CPUs it does not spin at all, since the thread it
// waits for may need its core. A chunk's bounds depend only on n, grain, align and the pool's
// size, never on who runs it, so results do not depend on scheduling. No allocation per loop.
#include "parallel.hpp"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "normnet/threads.hpp"

namespace normnet::detail {
namespace {

constexpr int kSpinRounds = 40000;  // pause instructions before a waiting thread sleeps (a few hundred µs)
constexpr int kYieldEvery = 1024;   // while spinning, offer the core to another runnable thread this often

thread_local bool t_in_parallel = false;

// Chunks of [0, n) for `threads` threads: one per thread, none shorter than grain.
int chunks_for(int64_t n, int64_t grain, int threads) {
    return static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, n / std::max<int64_t>(grain, 1))));
}

// Waits until value != seen: spins `spin` rounds, then sleeps. Returns the new value.
template <class T>
T wait_for_change(const std::atomic<T>& value, T seen, int spin) {
    for (int i = 0; i < spin; ++i) {
        const T now = value.load(std::memory_order_acquire);
        if (now != seen) return now;
        _mm_pause();
        if (i % kYieldEvery == kYieldEvery - 1) sched_yield();
    }
    for (;;) {
        const T now = value.load(std::memory_order_acquire);
        if (now != seen) return now;
        value.wait(seen, std::memory_order_acquire);
    }
}

class Pool {
public:
    // The size is chosen on first use (default_num_threads, which may throw for a bad
    // NORMNET_NUM_THREADS) unless set_num_threads comes first.
    int threads() {
        const int t = threads_.load(std::memory_order_relaxed);
        return t > 0 ? t : size_by_default();
    }

    void resize(int threads) {
        const std::lock_guard run(run_mutex_);
        const std::lock_guard lock(resize_mutex_);
        resize_locked(threads);
    }

    int run(int64_t n, int64_t grain, int64_t align, ChunkFn fn, void* context) {
        const int threads = this->threads();
        const std::lock_guard lock(run_mutex_);  // one parallel loop at a time (callers on other threads wait)
        const int chunks = chunks_for(n, grain, threads);
        n_ = n;
        chunks_ = chunks;
        align_ = std::max<int64_t>(align, 1);
        fn_ = fn;
        context_ = context;
        error_ = nullptr;
        done_.store(0, std::memory_order_relaxed);
        // Chunk 0 is the caller's (its data is often in this core's cache); the rest are up for grabs.
        claim_.store(pack(chunks, 1), std::memory_order_release);
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        run_chunk(0, false);
        run_unclaimed(false);
        for (int d = done_.load(std::memory_order_acquire); d != chunks;) d = wait_for_change(done_, d, spin_);
        if (error_) std::rethrow_exception(error_);
        return chunks;
    }

private:
    static uint64_t pack(int chunks, int next) { return static_cast<uint64_t>(chunks) << 32 | static_cast<uint32_t>(next); }

    int size_by_default() {
        const int threads = default_num_threads();
        const std::lock_guard run(run_mutex_);
        const std::lock_guard lock(resize_mutex_);
        if (threads_.load() == 0) resize_locked(threads);
        return threads_.load();
    }

    void resize_locked(int threads) {
        stop_workers();
        threads_ = threads;
        // More threads than CPUs: a spinning thread would only hold a core another one needs.
        spin_ = threads <= available_cpus() ? kSpinRounds : 0;
        stop_ = false;
        // Workers start from the generation of now: a later increment (a loop, or a stop issued
        // before a worker got to run) is then never missed.
        const uint32_t start = generation_.load(std::memory_order_acquire);
        for (int i = 1; i < threads; ++i) workers_.emplace_back([this, start] { work(start); });
    }

    // Runs chunk i: [n * i / chunks, n * (i + 1) / chunks), the inner bounds rounded down to
    // multiples of align, and counts it done. A worker finishing the loop's last chunk wakes the
    // caller, which may be asleep (the notify costs nothing when nobody waits).
    void run_chunk(int i, bool worker) {
        const int chunks = chunks_;  // read before counting the chunk: the next loop may then overwrite it
        const auto bound = [&](int k) {
            const int64_t raw = n_ * k / chunks;
            return k == chunks ? n_ : std::min(n_, raw / align_ * align_);
        };
        const int64_t begin = bound(i), end = bound(i + 1);
        if (begin < end) {
            t_in_parallel = true;
            try {
                fn_(context_, i, begin, end);
            } catch (...) {
                const std::lock_guard lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
            }
            t_in_parallel = false;
        }
        if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks && worker) done_.notify_all();
    }

    // Runs chunks of the current loop until every one is claimed. A claim is one atomic
    // increment of the loop's packed (chunks, next) counter; an increment past the end (from a
    // worker that woke late) claims nothing, and one that lands after the next loop was
    // published claims that loop's chunk, which is just as good: the counter and the loop's
    // fields were published together.
    void run_unclaimed(bool worker) {
        for (;;) {
            const uint64_t state = claim_.fetch_add(1, std::memory_order_acq_rel);
            if (static_cast<uint32_t>(state) >= static_cast<uint32_t>(state >> 32)) return;
            run_chunk(static_cast<int>(static_cast<uint32_t>(state)), worker);
        }
    }

    void work(uint32_t seen) {
        for (;;) {
            seen = wait_for_change(generation_, seen, spin_);
            if (stop_.load(std::memory_order_acquire)) return;
            run_unclaimed(true);
        }
    }

    void stop_workers() {
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        for (auto& w : workers_) w.join();
        workers_.clear();
    }

    std::mutex resize_mutex_, run_mutex_, error_mutex_;
    std::vector<std::thread> workers_;
    std::atomic<int> threads_{0};  // 0 until sized
    int spin_ = kSpinRounds;
    std::atomic<uint32_t> generation_{0};  // bumped for every loop and for stopping: wakes the workers
    std::atomic<uint64_t> claim_{0};       // the current loop's chunk count << 32 | its next unclaimed chunk
    std::atomic<int> done_{0};             // chunks of the current loop finished
    std::atomic<bool> stop_{false};
    int chunks_ = 1;
    int64_t n_ = 0, align_ = 1;
    ChunkFn fn_ = nullptr;
    void* context_ = nullptr;
    std::exception_ptr error_;
};

Pool& pool() {
    // Never destroyed: worker threads must not be joined during static destruction.
    static Pool* p = new Pool();
    return *p;
}

}  // namespace

int pool_threads() { return t_in_parallel ? 1 : pool().threads(); }

void set_pool_threads(int threads) { pool().resize(std::max(1, threads)); }

int parallel_chunks(int64_t n, int64_t grain) {
    const int threads = pool_threads();
    return n <= grain || threads == 1 ? 1 : chunks_for(n, grain, threads);
}

int parallel_run(int64_t n, int64_t grain, int64_t align, ChunkFn fn, void* context) {
    return pool().run(n, grain, align, fn, context);
}

}  // namespace normnet::detail
