// Internal: the caching allocator for tensor data (see memory.cpp).
#pragma once

#include <cstdint>

namespace normnet::detail {

/// A 64-byte aligned buffer of `bytes` bytes, reused from the cache when one of its size class is free.
void* buffer_allocate(int64_t bytes);
/// Returns a buffer obtained from buffer_allocate(bytes) to the cache.
void buffer_deallocate(void* data, int64_t bytes) noexcept;
/// Bytes of tensor buffers handed out and not yet returned (what live tensors hold), for tests
/// that check memory is given back.
int64_t buffer_bytes_in_use() noexcept;
/// The most buffer_bytes_in_use() has been since the last reset (or the start), for tests that
/// bound what a step needs at its peak.
int64_t peak_buffer_bytes_in_use() noexcept;
/// Starts the peak over from the bytes in use now.
void reset_peak_buffer_bytes_in_use() noexcept;
/// Frees every cached tensor buffer (the small-object slabs stay).
void release_cached_memory() noexcept;

}  // namespace normnet::detail
