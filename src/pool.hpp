// Internal: the small-object pool behind tensors' and nodes' bookkeeping: freed blocks are kept in
// per-size free lists and reused, so a training step allocates nothing once warmed up.
#pragma once

#include <cstddef>

namespace normnet::detail {

/// A block of at least `bytes` bytes, aligned for any scalar type.
void* pool_allocate(std::size_t bytes);
/// Returns a block obtained from pool_allocate with the same `bytes`.
void pool_deallocate(void* block, std::size_t bytes) noexcept;

/// Standard allocator over the pool, for std::allocate_shared.
template <class T>
struct PoolAllocator {
    using value_type = T;
    PoolAllocator() = default;
    template <class U>
    PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: rebinding must be implicit
    T* allocate(std::size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

}  // namespace normnet::detail
