// Internal: the caching allocator for tensor data (see memory.cpp).
#pragma once

#include <cstdint>

namespace normnet::detail {

/// A 64-byte aligned buffer for `numel` floats, reused from the cache when one of its size class is free.
float* buffer_allocate(int64_t numel);
/// Returns a buffer obtained from buffer_allocate(numel) to the cache.
void buffer_deallocate(float* data, int64_t numel) noexcept;
/// Frees every cached tensor buffer (the small-object slabs stay).
void release_cached_memory() noexcept;

}  // namespace normnet::detail
