// Caching allocators. Training repeats the same allocations every step (activations, gradients,
// graph nodes); keeping freed blocks in free lists by size class makes every step after the
// first free of heap traffic, as PyTorch's caching allocators do. Builds with sanitizers
// (NORMNET_NO_POOL) go straight to the heap so use-after-free is still caught.
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <new>

#include "memory.hpp"
#include "pool.hpp"
#include "normnet/tensor.hpp"

namespace normnet::detail {
namespace {

struct FreeBlock {
    FreeBlock* next;
};

// Small objects (tensor handles, graph nodes): classes of 16 bytes up to 1 KiB.
constexpr std::size_t kSmallGranule = 16;
constexpr std::size_t kSmallMax = 1024;
constexpr std::size_t kSlabBlocks = 256;
// Float buffers: four classes per power of two, so at most 25% is wasted.
constexpr std::size_t kBufferAlign = 64;
constexpr int kBufferClasses = 256;
constexpr std::size_t kSlabBufferMax = 4096;  // buffers up to this size come from slabs, kept for good

struct Lists {
    std::mutex mutex;
    std::array<FreeBlock*, kSmallMax / kSmallGranule + 1> small{};
    std::array<FreeBlock*, kBufferClasses> buffers{};
};

Lists& lists() {
    static Lists* l = new Lists();  // never destroyed: tensors may die after static destructors run
    return *l;
}

std::size_t small_class(std::size_t bytes) { return (bytes + kSmallGranule - 1) / kSmallGranule; }

// Returns the class index and the rounded byte size of a buffer of `bytes`.
std::pair<int, std::size_t> buffer_class(std::size_t bytes) {
    if (bytes <= kBufferAlign) return {0, kBufferAlign};
    const int k = std::bit_width(bytes - 1) - 1;  // 2^k < bytes <= 2^(k+1), k >= 6
    const std::size_t quarter = std::size_t{1} << (k - 2);
    const std::size_t steps = (bytes - (std::size_t{1} << k) + quarter - 1) / quarter;  // 1..4
    return {1 + (k - 6) * 4 + static_cast<int>(steps) - 1, (std::size_t{1} << k) + steps * quarter};
}

// Cuts a slab of kSlabBlocks blocks of `block` bytes into blocks pushed onto the free list `head`.
void push_slab(FreeBlock*& head, void* slab, std::size_t block) {
    auto* bytes = static_cast<char*>(slab);
    for (std::size_t i = 0; i < kSlabBlocks; ++i) {
        auto* b = reinterpret_cast<FreeBlock*>(bytes + i * block);
        b->next = head;
        head = b;
    }
}

// The largest buffer class served from slabs.
const std::size_t kLastSlabClass = static_cast<std::size_t>(buffer_class(kSlabBufferMax).first);

}  // namespace

void* pool_allocate(std::size_t bytes) {
#ifndef NORMNET_NO_POOL
    if (bytes <= kSmallMax) {
        const std::size_t c = small_class(bytes);
        Lists& l = lists();
        std::lock_guard lock(l.mutex);
        if (l.small[c] == nullptr) {
            // Refill with a slab of blocks: fewer heap calls, and room for the objects a later
            // step keeps alive (e.g. an optimizer's state, created during the first step).
            push_slab(l.small[c], ::operator new(c * kSmallGranule * kSlabBlocks), c * kSmallGranule);
        }
        FreeBlock* b = l.small[c];
        l.small[c] = b->next;
        return b;
    }
#endif
    return ::operator new(bytes);
}

void pool_deallocate(void* block, std::size_t bytes) noexcept {
#ifndef NORMNET_NO_POOL
    if (bytes <= kSmallMax) {
        const std::size_t c = small_class(bytes);
        Lists& l = lists();
        std::lock_guard lock(l.mutex);
        auto* b = static_cast<FreeBlock*>(block);
        b->next = l.small[c];
        l.small[c] = b;
        return;
    }
#endif
    ::operator delete(block);
}

namespace {
std::atomic<int64_t> g_bytes_in_use{0};
std::atomic<int64_t> g_peak_bytes_in_use{0};
std::size_t buffer_bytes(int64_t bytes) { return static_cast<std::size_t>(bytes > 0 ? bytes : 1); }
}  // namespace

int64_t buffer_bytes_in_use() noexcept { return g_bytes_in_use.load(std::memory_order_relaxed); }
int64_t peak_buffer_bytes_in_use() noexcept { return g_peak_bytes_in_use.load(std::memory_order_relaxed); }
void reset_peak_buffer_bytes_in_use() noexcept { g_peak_bytes_in_use.store(buffer_bytes_in_use(), std::memory_order_relaxed); }

void* buffer_allocate(int64_t requested) {
    const std::size_t bytes = buffer_bytes(requested);
    const auto [c, rounded] = buffer_class(bytes);
    const int64_t now = g_bytes_in_use.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                        static_cast<int64_t>(bytes);
    int64_t peak = g_peak_bytes_in_use.load(std::memory_order_relaxed);
    while (now > peak && !g_peak_bytes_in_use.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
#ifndef NORMNET_NO_POOL
    Lists& l = lists();
    std::lock_guard lock(l.mutex);
    FreeBlock*& head = l.buffers[static_cast<std::size_t>(c)];
    if (head == nullptr && rounded <= kSlabBufferMax) {
        // Small buffers (per-row statistics, biases, scalars) come in slabs, as small objects do.
        push_slab(head, ::operator new(rounded * kSlabBlocks, std::align_val_t(kBufferAlign)), rounded);
    }
    if (FreeBlock* b = head) {
        head = b->next;
        return b;
    }
#endif
    return ::operator new(rounded, std::align_val_t(kBufferAlign));
}

void buffer_deallocate(void* data, int64_t requested) noexcept {
    const std::size_t bytes = buffer_bytes(requested);
    g_bytes_in_use.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
#ifndef NORMNET_NO_POOL
    const int c = buffer_class(bytes).first;
    Lists& l = lists();
    std::lock_guard lock(l.mutex);
    auto* b = reinterpret_cast<FreeBlock*>(data);
    b->next = l.buffers[static_cast<std::size_t>(c)];
    l.buffers[static_cast<std::size_t>(c)] = b;
#else
    ::operator delete(data, std::align_val_t(kBufferAlign));
#endif
}

void release_cached_memory() noexcept {
    Lists& l = lists();
    std::lock_guard lock(l.mutex);
    // Small blocks live in slabs that are kept for the life of the process (a few kilobytes).
    for (std::size_t c = 0; c < l.buffers.size(); ++c) {
        if (c <= kLastSlabClass) continue;  // slab blocks are not separate allocations
        FreeBlock*& head = l.buffers[c];
        while (head) {
            FreeBlock* next = head->next;
            ::operator delete(head, std::align_val_t(kBufferAlign));
            head = next;
        }
    }
}

}  // namespace normnet::detail

namespace normnet {
void empty_cache() { detail::release_cached_memory(); }
}  // namespace normnet
