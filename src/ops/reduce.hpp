// Internal: what the reductions share (reduce.cpp, minmax.cpp, sort.cpp) and sum_to, the
// backward of broadcasting used by every broadcasting op.
//
// A reduction sees its input as [outer, R, inner]: R elements reduce into each of the
// outer * inner outputs. group_dims() makes that layout (the reduced dims as one block), and
// reduce_lanes() runs a reduction over it in lanes of kLanes outputs or elements, which GCC
// vectorises, split between threads by outputs or, when there are few, by reduced elements.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "../parallel.hpp"
#include "loop.hpp"
#include "op.hpp"

namespace normnet::detail {

/// dst (written or added to, as dst.fresh says) = src summed down to `shape`, a shape src's
/// shape was broadcast from. src is contiguous float32.
void sum_to(const GradOut& dst, const Tensor& src, const Shape& shape);

/// Bit d set for each dimension in dims (negative counts from the end); all dimensions when dims
/// is empty (torch's dim=[]). A repeated or out-of-range dim throws, naming op.
uint32_t dim_mask(const Shape& dims, int ndim, const char* op);
/// The mask of one dimension (wrapped as dim_mask does).
uint32_t one_dim_mask(int64_t dim, int ndim, const char* op);
/// The result's shape: reduced dimensions kept as 1 (keepdim) or dropped.
Shape reduced_shape(const Shape& shape, uint32_t mask, bool keepdim);

/// An input seen as [outer, R, inner] for a reduction.
struct Grouped {
    Tensor x;  // contiguous, with the reduced dimensions as one block: x itself, or a (recorded) copy
    int64_t outer = 1, R = 1, inner = 1;
    Shape out_shape;  // the result's shape
};
/// x with its reduced dimensions (mask) as one block: x itself (made contiguous) when they are
/// already neighbours, size-1 dimensions aside; else permuted after the kept ones and copied.
Grouped group_dims(const Tensor& x, uint32_t mask, bool keepdim);

/// parallel_for_chunks that returns how many chunks ran (chunk indices are 0 .. that - 1).
template <class F>
int parallel_run_chunks(int64_t n, int64_t grain, F&& f) {
    if (n <= grain || pool_threads() == 1) {
        if (n > 0) f(0, int64_t{0}, n);
        return n > 0 ? 1 : 0;
    }
    using Fn = std::remove_reference_t<F>;
    return parallel_run(
        n, grain, 1, [](void* c, int chunk, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(chunk, b, e); },
        const_cast<void*>(static_cast<const void*>(&f)));
}

/// The node of a reduction: the [outer, R, inner] layout of its grouped input, for the backward.
class ReduceNode : public OpNode {
public:
    int64_t outer = 0, R = 0, inner = 0;
    void set_layout(const Grouped& g) { outer = g.outer, R = g.R, inner = g.inner; }
};

/// Lanes of one block: outputs (a column reduction) or elements of one output (a row).
inline constexpr int kLanes = 64;

/// One block of a reduction, handed to an Op: `rows` rows of n lanes, row r lane j at
/// x[r * stride + j], belonging to output out0 + j * out_step, at position idx0 + r * idx_row +
/// j * idx_lane along the reduced elements (what argmax reports).
struct Block {
    const float* x;
    int64_t rows, stride;
    int n;
    int64_t out0, out_step;
    int64_t idx0, idx_row, idx_lane;
};

/// Runs a reduction of x: [outer, R, inner] with an Op providing
///   struct Acc;                                   the state of kLanes lanes
///   void init(Acc&) const;
///   void step(Acc&, const Block&) const;         adds a block's elements to the lanes
///   void merge(Acc& a, int ja, const Acc& b, int jb) const;   lane jb of b into lane ja of a
///   void finish(const Acc&, int j, int64_t out) const;        writes output `out` from lane j
/// Rows (inner = 1) are cut into lanes that are merged into lane 0 at the end. Merges combine
/// partial results in a fixed order, so results depend on the thread count only through it.
template <class Op>
void reduce_lanes(const Op& op, const float* x, int64_t outer, int64_t R, int64_t inner) {
    using Acc = typename Op::Acc;
    constexpr int W = kLanes;
    constexpr int kMaxChunks = 64;
    const int64_t outputs = outer * inner;
    if (outputs == 0) return;
    const int threads = pool_threads();
    // The lanes of [r0, r1) of output o's row (inner == 1).
    const auto row_part = [&](Acc& acc, int64_t o, int64_t r0, int64_t r1) {
        const int64_t full = (r1 - r0) / W;
        const float* p = x + o * R + r0;
        if (full > 0) op.step(acc, {p, full, W, W, o, 0, r0, W, 1});
        const int tail = static_cast<int>(r1 - r0 - full * W);
        if (tail > 0) op.step(acc, {p + full * W, 1, 0, tail, o, 0, r0 + full * W, 0, 1});
    };
    // Rows [r0, r1) of the strip of outputs (o, i0 .. i0 + n) (inner > 1).
    const auto column_part = [&](Acc& acc, int64_t o, int64_t i0, int n, int64_t r0, int64_t r1) {
        op.step(acc, {x + (o * R + r0) * inner + i0, r1 - r0, inner, n, o * inner + i0, 1, r0, 1, 0});
    };
    const int64_t strips = inner == 1 ? 1 : (inner + W - 1) / W;
    const int64_t items = outer * strips;
    const int64_t work = outputs * std::max<int64_t>(R, 1);
    if (items >= 2 * threads || threads == 1 || work <= kElementGrain || R == 0) {
        // Enough outputs: threads split them.
        parallel_for(items, item_grain(R * std::min<int64_t>(inner, W)),
                     [&](int64_t b, int64_t e) {
                         for (int64_t item = b; item < e; ++item) {
                             Acc acc;
                             op.init(acc);
                             if (inner == 1) {
                                 row_part(acc, item, 0, R);
                                 for (int j = 1; j < W; ++j) op.merge(acc, 0, acc, j);
                                 op.finish(acc, 0, item);
                             } else {
                                 const int64_t o = item / strips, i0 = (item % strips) * W;
                                 const int n = static_cast<int>(std::min<int64_t>(W, inner - i0));
                                 column_part(acc, o, i0, n, 0, R);
                                 for (int j = 0; j < n; ++j) op.finish(acc, j, o * inner + i0 + j);
                             }
                         }
                     });
        return;
    }
    // Few outputs with many elements each: threads split the reduced elements of each item.
    for (int64_t item = 0; item < items; ++item) {
        std::array<Acc, kMaxChunks> acc;
        const int64_t o = inner == 1 ? item : item / strips, i0 = inner == 1 ? 0 : (item % strips) * W;
        const int n = inner == 1 ? W : static_cast<int>(std::min<int64_t>(W, inner - i0));
        const int64_t grain = inner == 1 ? kElementGrain : kElementGrain / n;  // in rows of the split
        const int chunks = parallel_run_chunks(R, std::max<int64_t>(grain, R / kMaxChunks + 1),
                                               [&](int c, int64_t r0, int64_t r1) {
                                                   Acc& a = acc[static_cast<size_t>(c)];
                                                   op.init(a);
                                                   if (inner == 1) {
                                                       row_part(a, o, r0, r1);
                                                   } else {
                                                       column_part(a, o, i0, n, r0, r1);
                                                   }
                                               });
        for (int c = 1; c < chunks; ++c) {
            for (int j = 0; j < n; ++j) op.merge(acc[0], j, acc[static_cast<size_t>(c)], j);
        }
        if (inner == 1) {
            for (int j = 1; j < W; ++j) op.merge(acc[0], 0, acc[0], j);
            op.finish(acc[0], 0, o);
        } else {
            for (int j = 0; j < n; ++j) op.finish(acc[0], j, o * inner + i0 + j);
        }
    }
}

/// A reduction summing f(x, c) in double, c the value of `center` at the element's output (0 when
/// center is null); fin(sum, out) writes output `out`.
template <class F, class Fin>
struct SumOp {
    F f;
    Fin fin;
    const float* center = nullptr;
    struct Acc {
        std::array<double, kLanes> s;
    };
    void init(Acc& a) const { a.s.fill(0.0); }
    void step(Acc& a, const Block& b) const {
        double* __restrict s = a.s.data();
        for (int64_t r = 0; r < b.rows; ++r) {
            const float* __restrict row = b.x + r * b.stride;
            if (b.out_step == 0 || !center) {  // one output (a row), or no center
                const float c = center ? center[b.out0] : 0.0f;
                for (int j = 0; j < b.n; ++j) s[j] += f(row[j], c);
            } else {
                const float* __restrict c = center + b.out0;
                for (int j = 0; j < b.n; ++j) s[j] += f(row[j], c[j]);
            }
        }
    }
    void merge(Acc& a, int ja, const Acc& b, int jb) const { a.s[static_cast<size_t>(ja)] += b.s[static_cast<size_t>(jb)]; }
    void finish(const Acc& a, int j, int64_t out) const { fin(a.s[static_cast<size_t>(j)], out); }
};
template <class F, class Fin>
SumOp(F, Fin, const float*) -> SumOp<F, Fin>;

/// A reduction to the largest (kMax) or smallest of f(x) (NaN wins, as torch); fin(value, out)
/// writes output `out`.
template <bool kMax, class F, class Fin>
struct ExtremeOp {
    F f;
    Fin fin;
    struct Acc {
        std::array<float, kLanes> v;
    };
    static bool better(float v, float a) { return (kMax ? v > a : v < a) || v != v; }
    void init(Acc& a) const { a.v.fill(kMax ? -INFINITY : INFINITY); }
    void step(Acc& a, const Block& b) const {
        float* __restrict v = a.v.data();
        for (int64_t r = 0; r < b.rows; ++r) {
            const float* __restrict row = b.x + r * b.stride;
            for (int j = 0; j < b.n; ++j) {
                const float x = f(row[j]);
                v[j] = better(x, v[j]) ? x : v[j];
            }
        }
    }
    void merge(Acc& a, int ja, const Acc& b, int jb) const {
        const float x = b.v[static_cast<size_t>(jb)];
        if (better(x, a.v[static_cast<size_t>(ja)])) a.v[static_cast<size_t>(ja)] = x;
    }
    void finish(const Acc& a, int j, int64_t out) const { fin(a.v[static_cast<size_t>(j)], out); }
};

/// ExtremeOp<kMax> of f and fin (lambdas).
template <bool kMax, class F, class Fin>
ExtremeOp<kMax, F, Fin> extreme_op(F f, Fin fin) {
    return {f, fin};
}

/// dx: [outer, R, inner] (Store) = f(x[o, r, i], o * inner + i, r): the elementwise backward of
/// a reduction, given each element, its output and its position along the reduced elements.
template <class Store, class F>
void map_reduced(float* dx, const float* x, int64_t outer, int64_t R, int64_t inner, F&& f) {
    if (outer * R * inner == 0) return;  // no elements (and inner or R may be 0, a divisor below)
    if (inner == 1) {
        parallel_for(outer * R, kElementGrain, [&](int64_t b, int64_t e) {
            for (int64_t q = b; q < e;) {  // runs along one output's row
                const int64_t o = q / R, r0 = q - o * R, n = std::min(e - q, R - r0);
                float* __restrict d = dx + q;
                const float* __restrict v = x + q;
                for (int64_t r = 0; r < n; ++r) Store::put(d[r], f(v[r], o, r0 + r));
                q += n;
            }
        });
        return;
    }
    parallel_for(outer * R, std::max<int64_t>(1, kElementGrain / inner), [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) {  // q: one (o, r) row of inner elements
            const int64_t o = q / R, r = q % R, out0 = o * inner;
            float* __restrict d = dx + q * inner;
            const float* __restrict v = x + q * inner;
            for (int64_t i = 0; i < inner; ++i) Store::put(d[i], f(v[i], out0 + i, r));
        }
    });
}

}  // namespace normnet::detail
