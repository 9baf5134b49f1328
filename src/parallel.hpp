// Internal: normnet's thread pool. parallel_for splits [0, n) into one contiguous chunk per
// thread; the calling thread runs the first chunk. Workers spin briefly between tasks (the
// next parallel loop of a training step usually follows within microseconds), then sleep.
#pragma once

#include <cstdint>
#include <type_traits>

namespace normnet::detail {

/// Threads used by parallel_for and the split matrix products (set_num_threads).
int pool_threads();
/// Resizes the pool (threads >= 1).
void set_pool_threads(int threads);

/// The chunks parallel_for_chunks(n, grain, ...) splits [0, n) into: as many threads as there
/// are, but no chunk shorter than grain; 1 where the loop runs inline. Callers that keep per-chunk
/// scratch size it with this.
int parallel_chunks(int64_t n, int64_t grain);

using ChunkFn = void (*)(void* context, int chunk, int64_t begin, int64_t end);
/// Runs fn over chunks of [0, n), each at least `grain` long and starting at a multiple of
/// `align`; returns the number of chunks (at most pool_threads()).
int parallel_run(int64_t n, int64_t grain, int64_t align, ChunkFn fn, void* context);

/// Calls f(chunk, begin, end) on disjoint chunks covering [0, n) (chunk < pool_threads(), so
/// per-chunk partial results can live in slots indexed by it), in parallel when n > grain and
/// the pool has more than one thread; inline as one chunk otherwise, and inside another loop.
template <class F>
void parallel_for_chunks(int64_t n, int64_t grain, F&& f, int64_t align = 1) {
    if (n <= grain || pool_threads() == 1) {
        if (n > 0) f(0, int64_t{0}, n);
        return;
    }
    using Fn = std::remove_reference_t<F>;
    parallel_run(
        n, grain, align, [](void* c, int chunk, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(chunk, b, e); },
        const_cast<void*>(static_cast<const void*>(&f)));
}

/// Calls f(begin, end) on disjoint chunks covering [0, n), as parallel_for_chunks.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f, int64_t align = 1) {
    parallel_for_chunks(n, grain, [&f](int, int64_t b, int64_t e) { f(b, e); }, align);
}

}  // namespace normnet::detail
