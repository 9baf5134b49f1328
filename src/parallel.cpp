// The thread pool behind parallel_for: workers wait on a generation counter (spinning for a
// few microseconds, then sleeping in the kernel), take their chunk, and count down; the caller
// runs chunk 0 and spins until the others are done. No allocation per loop.
#include "parallel.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace normnet::detail {
namespace {

constexpr int kSpinRounds = 40000;  // a few hundred microseconds of pause instructions before a worker sleeps

thread_local bool t_in_parallel = false;

// Chunks of [0, n) for `threads` threads: one per thread, none shorter than grain.
int chunks_for(int64_t n, int64_t grain, int threads) {
    return static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, n / std::max<int64_t>(grain, 1))));
}

class Pool {
public:
    ~Pool() { resize(1); }

    int threads() const { return threads_.load(std::memory_order_relaxed); }

    void resize(int threads) {
        std::lock_guard lock(resize_mutex_);
        stop_workers();
        threads_ = threads;
        stop_ = false;
        // Workers start from the generation of now: a later increment (a task, or a stop
        // issued before a worker got to run) is then never missed.
        const uint32_t start = generation_.load(std::memory_order_acquire);
        for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, start] { work(i, start); });
    }

    int run(int64_t n, int64_t grain, int64_t align, ChunkFn fn, void* context) {
        std::lock_guard lock(run_mutex_);  // one parallel loop at a time (callers on other threads wait)
        chunks_ = chunks_for(n, grain, threads());
        n_ = n;
        align_ = std::max<int64_t>(align, 1);
        fn_ = fn;
        context_ = context;
        remaining_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        run_chunk(0);
        // Spin while the workers are running, but not for ever: on an oversubscribed machine a
        // worker may be off its core, and spinning through our time slice only delays it (a
        // compare grid under load 16 ran 130x slower at batch 2). Past the spin, give the core away.
        for (int spin = 0; remaining_.load(std::memory_order_acquire) != 0; ++spin) {
            if (spin < kSpinRounds) {
                _mm_pause();
            } else {
                std::this_thread::yield();
            }
        }
        return chunks_;
    }

private:
    // Chunk i of chunks_: boundaries rounded to multiples of align_.
    void run_chunk(int i) {
        if (i >= chunks_) return;
        const auto bound = [&](int k) {
            const int64_t raw = n_ * k / chunks_;
            return k == chunks_ ? n_ : std::min(n_, raw / align_ * align_);
        };
        const int64_t begin = bound(i), end = bound(i + 1);
        if (begin < end) {
            t_in_parallel = true;
            fn_(context_, i, begin, end);
            t_in_parallel = false;
        }
    }

    void work(int index, uint32_t seen) {
        for (;;) {
            uint32_t now = seen;
            for (int spin = 0; (now = generation_.load(std::memory_order_acquire)) == seen; ++spin) {
                if (spin < kSpinRounds) {
                    _mm_pause();
                } else {
                    generation_.wait(seen, std::memory_order_acquire);
                }
            }
            seen = now;
            if (stop_.load(std::memory_order_acquire)) return;
            run_chunk(index);
            remaining_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    void stop_workers() {
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        for (auto& w : workers_) w.join();
        workers_.clear();
    }

    std::mutex resize_mutex_, run_mutex_;
    std::vector<std::thread> workers_;
    std::atomic<int> threads_{1};
    std::atomic<uint32_t> generation_{0};
    std::atomic<int> remaining_{0};
    std::atomic<bool> stop_{false};
    int chunks_ = 1;
    int64_t n_ = 0, align_ = 1;
    ChunkFn fn_ = nullptr;
    void* context_ = nullptr;
};

Pool& pool() {
    // Created on first use with one thread per core; never destroyed (worker threads must not
    // be joined during static destruction).
    static Pool* p = [] {
        auto* created = new Pool();
        created->resize(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        return created;
    }();
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
