// Indexing by int64 index tensors: index_select, gather, scatter_add, embedding and one_hot.
// Indices are checked before any kernel runs (a bad one names the op, the index and the size),
// so kernels never see an index out of range. Backwards that add into positions several
// outputs share (gather's, index_select's) run on one thread per destination range: the order
// of the additions, and so the result, does not depend on the thread count.
#include <algorithm>

#include "../strided.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace {

using detail::GradOut;
using detail::OpNode;

int wrap_dim(int64_t d, int ndim, const char* op) {
    const int n = std::max(ndim, 1);
    NORMNET_CHECK(d >= -n && d < n, op, ": dimension ", d, " out of range (expected to be in range of [", -n, ", ",
                  n - 1, "])");
    return static_cast<int>(d < 0 ? d + n : d);
}

// A contiguous int64 index tensor whose values all lie in [0, size); else the op's error.
Tensor checked_indices(const Tensor& index, int64_t size, const char* op, const char* what) {
    NORMNET_CHECK(index.dtype() == kInt64, op, ": expected ", what, " of dtype int64, got ", index.dtype(), " (shape ",
                  index.shape(), ")");
    Tensor idx = index.contiguous();
    const int64_t* p = idx.data_ptr<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i) {
        NORMNET_CHECK(p[i] >= 0 && p[i] < size, op, ": index ", p[i], " is out of range (expected values in [0, ",
                      size, "))");
    }
    return idx;
}

// ---- index_select ----------------------------------------------------------------------------

// out: [outer, J, inner] = x: [outer, S, inner] at rows idx: [J] of the middle dimension
template <class T>
void index_select_forward(T* out, const T* x, const int64_t* idx, int64_t outer, int64_t S, int64_t J, int64_t inner) {
    detail::parallel_for(outer * J, detail::item_grain(inner),
                         [&](int64_t b, int64_t e) {
                             for (int64_t q = b; q < e; ++q) {
                                 const int64_t o = q / J, j = q % J;
                                 std::copy_n(x + (o * S + idx[j]) * inner, inner, out + q * inner);
                             }
                         });
}

// dx: [outer, S, inner] += dy: [outer, J, inner] added at rows idx of the middle dimension;
// threads split the columns, so each destination element is added to in one order.
void index_select_backward(float* dx, const float* dy, const int64_t* idx, int64_t outer, int64_t S, int64_t J,
                           int64_t inner) {
    detail::parallel_for(inner, detail::item_grain(outer * J, 16),
                         [&](int64_t b, int64_t e) {
                             for (int64_t o = 0; o < outer; ++o) {
                                 for (int64_t j = 0; j < J; ++j) {
                                     float* __restrict d = dx + (o * S + idx[j]) * inner;
                                     const float* __restrict g = dy + (o * J + j) * inner;
                                     for (int64_t i = b; i < e; ++i) d[i] += g[i];
                                 }
                             }
                         }, 16);
}

class IndexSelectBackward final : public OpNode {
public:
    int64_t outer = 0, S = 0, J = 0, inner = 0;
    const char* name() const override { return "IndexSelectBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor dx = grad_to_add(0);
        if (dx.defined()) index_select_backward(dx.data(), dy.data(), saved(0).data_ptr<int64_t>(), outer, S, J, inner);
    }
};

}  // namespace

Tensor index_select(const Tensor& x_in, int64_t dim, const Tensor& index) {
    const int d = wrap_dim(dim, x_in.dim(), "index_select");
    NORMNET_CHECK(index.dim() <= 1, "index_select: index should have 0 or 1 dimensions, got shape ", index.shape());
    NORMNET_CHECK(x_in.dim() > 0 || index.numel() == 1, "index_select: an index into a 0-dim tensor can have only 1 value, got ",
                  index.numel());
    const int64_t S = x_in.dim() == 0 ? 1 : x_in.shape()[d];
    const Tensor idx = checked_indices(index, S, "index_select", "an index");
    const Tensor x = x_in.contiguous();
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; ++k) outer *= x.shape()[k];
    for (int k = d + 1; k < x.dim(); ++k) inner *= x.shape()[k];
    Shape shape = x.shape();
    if (x.dim() > 0) shape[d] = idx.numel();
    Tensor out = empty(shape, x.dtype());
    detail::visit_dtype(x.dtype(), [&](auto type) {
        using T = decltype(type);
        index_select_forward(out.data_ptr<T>(), x.data_ptr<T>(), idx.data_ptr<int64_t>(), outer, S, idx.numel(), inner);
    });
    if (auto* node = detail::record<IndexSelectBackward>(out, {x}, {idx})) {
        node->outer = outer, node->S = S, node->J = idx.numel(), node->inner = inner;
    }
    return out;
}

// ---- gather and scatter_add ------------------------------------------------------------------

namespace {

// The strides of a tensor of `shape` (contiguous) with dimension dim's set to 0: the index value
// supplies that coordinate.
Shape strides_without(const Shape& strides, int dim) {
    Shape s = strides;
    if (s.size() > 0) s[dim] = 0;
    return s;
}

// Calls f(a, b, i) over the elements of index's shape (one thread: destinations may repeat), where
// a and b point at the element in two strided operands and i is the index value.
template <class A, class B, class F>
void walk_index(const Tensor& index, A* a, const Shape& sa, B* b, const Shape& sb, F&& f) {
    const detail::StridedLoop<3> loop(index.shape(), {sa, sb, index.strides()});
    if (loop.numel() == 0) return;  // an empty index: nothing to walk (and no size to divide by)
    loop.run_range(std::tuple<A*, B*, const int64_t*>{a, b, index.data_ptr<int64_t>()}, 0, loop.numel(),
                   [&](const std::tuple<A*, B*, const int64_t*>& p, const std::array<int64_t, 3>& s, int64_t n) {
                       const auto [pa, pb, pi] = p;
                       for (int64_t k = 0; k < n; ++k) f(pa + k * s[0], pb + k * s[1], pi[k * s[2]]);
                   });
}

// Checks index against x (gather) or x and src (scatter_add): same number of dimensions, sizes
// no larger (except along dim for x); values in [0, x.size(dim)).
void check_gather_index(const Tensor& x, int dim, const Tensor& index, const Tensor* src, const char* op) {
    NORMNET_CHECK(index.dtype() == kInt64, op, ": expected index of dtype int64, got ", index.dtype());
    NORMNET_CHECK(index.dim() == x.dim(), op, ": index tensor must have the same number of dimensions as input tensor "
                  "(shapes ", index.shape(), " and ", x.shape(), ")");
    for (int d = 0; d < x.dim(); ++d) {
        NORMNET_CHECK(d == dim || index.shape()[d] <= x.shape()[d], op, ": size does not match at dimension ", d,
                      " expected index ", index.shape(), " to be smaller than self ", x.shape(), " apart from dimension ",
                      dim);
        NORMNET_CHECK(!src || index.shape()[d] <= src->shape()[d], op, ": size does not match at dimension ", d,
                      " expected index ", index.shape(), " to be smaller than src ", src->shape());
    }
    checked_indices(index, x.dim() == 0 ? 1 : x.shape()[dim], op, "an index");
}

class GatherBackward final : public OpNode {
public:
    int dim = 0;
    Shape x_shape;
    const char* name() const override { return "GatherBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor dx = grad_to_add(0);
        if (!dx.defined()) return;
        const Shape dxs = detail::contiguous_strides(x_shape);
        const int64_t step = x_shape.size() > 0 ? dxs[dim] : 0;
        walk_index(saved(0), dy.data(), detail::contiguous_strides(dy.shape()), dx.data(), strides_without(dxs, dim),
                   [step](const float* g, float* d, int64_t i) { d[i * step] += *g; });
    }
};

class ScatterAddBackward final : public OpNode {
public:
    int dim = 0;
    Shape src_shape;
    const char* name() const override { return "ScatterAddBackward0"; }
    void backward(const Tensor& dy) override {
        if (const GradOut dx = grad_out(0)) dx.store(dy.data(), dy.numel());
        const GradOut dsrc = grad_out(1);
        if (!dsrc) return;
        // dsrc = dy gathered at the index, 0 where src was not used (the part beyond index's shape).
        if (dsrc.fresh) std::fill_n(dsrc.data, src_shape.numel(), 0.0f);
        const Shape dys = detail::contiguous_strides(dy.shape());
        const int64_t step = dy.dim() > 0 ? dys[dim] : 0;
        walk_index(saved(0), dsrc.data, detail::contiguous_strides(src_shape), dy.data(), strides_without(dys, dim),
                   [step](float* d, const float* g, int64_t i) { *d += g[i * step]; });
    }
};

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
    const int d = wrap_dim(dim, x.dim(), "gather");
    check_gather_index(x, d, index, nullptr, "gather");
    Tensor out = empty(index.shape(), x.dtype());
    const int64_t step = x.dim() > 0 ? x.strides()[d] : 0;
    detail::visit_dtype(x.dtype(), [&](auto type) {
        using T = decltype(type);
        const detail::StridedLoop<3> loop(index.shape(), {detail::contiguous_strides(index.shape()),
                                                          strides_without(x.strides(), d), index.strides()});
        loop.run(std::tuple<T*, const T*, const int64_t*>{out.data_ptr<T>(), x.data_ptr<T>(), index.data_ptr<int64_t>()},
                 [step](const std::tuple<T*, const T*, const int64_t*>& p, const std::array<int64_t, 3>& s, int64_t n) {
                     const auto [o, px, pi] = p;
                     for (int64_t k = 0; k < n; ++k) o[k * s[0]] = px[k * s[1] + pi[k * s[2]] * step];
                 });
    });
    if (auto* node = detail::record<GatherBackward>(out, {x}, {index})) node->dim = d, node->x_shape = x.shape();
    return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    const int d = wrap_dim(dim, x.dim(), "scatter_add");
    NORMNET_CHECK(src.dtype() == x.dtype(), "scatter_add: expected self and src of the same dtype, got ", x.dtype(),
                  " and ", src.dtype());
    NORMNET_CHECK(src.dim() == x.dim(), "scatter_add: index, self and src must have the same number of dimensions "
                  "(shapes ", index.shape(), ", ", x.shape(), " and ", src.shape(), ")");
    check_gather_index(x, d, index, &src, "scatter_add");
    Tensor out = x.detach().clone();
    const Shape os = out.strides();
    const int64_t step = x.dim() > 0 ? os[d] : 0;
    detail::visit_dtype(x.dtype(), [&](auto type) {
        using T = decltype(type);
        walk_index(index, out.data_ptr<T>(), strides_without(os, d), src.data_ptr<T>(), src.strides(),
                   [step](T* o, const T* s, int64_t i) { o[i * step] = T(o[i * step] + *s); });
    });
    if (auto* node = detail::record<ScatterAddBackward>(out, {x, src}, {index})) node->dim = d, node->src_shape = src.shape();
    return out;
}

// ---- embedding -------------------------------------------------------------------------------

namespace {

// out: [N, D] = weight: [V, D] at rows idx: [N]
void embedding_forward(float* out, const float* weight, const int64_t* idx, int64_t N, int64_t D) {
    detail::parallel_for(N, detail::item_grain(D), [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) std::copy_n(weight + idx[n] * D, D, out + n * D);
    });
}

// dweight: [V, D] += dy: [N, D] added at rows idx, except row padding_idx (< 0: none); threads
// split the columns.
void embedding_backward(float* dweight, const float* dy, const int64_t* idx, int64_t N, int64_t D, int64_t padding_idx) {
    detail::parallel_for(D, detail::item_grain(N, 16), [&](int64_t b, int64_t e) {
        for (int64_t n = 0; n < N; ++n) {
            if (idx[n] == padding_idx) continue;
            float* __restrict d = dweight + idx[n] * D;
            const float* __restrict g = dy + n * D;
            for (int64_t i = b; i < e; ++i) d[i] += g[i];
        }
    }, 16);
}

class EmbeddingBackward final : public OpNode {
public:
    int64_t N = 0, D = 0, padding_idx = -1;
    const char* name() const override { return "EmbeddingBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor dweight = grad_to_add(0);
        if (dweight.defined()) embedding_backward(dweight.data(), dy.data(), saved(0).data_ptr<int64_t>(), N, D, padding_idx);
    }
};

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight_in, std::optional<int64_t> padding_idx) {
    NORMNET_CHECK(weight_in.dtype() == kFloat32 && weight_in.dim() == 2,
                  "embedding: expected a float32 weight [num_embeddings, embedding_dim], got ", weight_in.dtype(), " ",
                  weight_in.shape());
    const int64_t V = weight_in.shape()[0], D = weight_in.shape()[1];
    int64_t pad = -1;
    if (padding_idx) {
        NORMNET_CHECK(*padding_idx >= -V && *padding_idx < V, "embedding: padding_idx ", *padding_idx,
                      " must be within num_embeddings (", V, ")");
        pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
    }
    NORMNET_CHECK(indices.dim() < kMaxDims, "embedding: indices of shape ", indices.shape(), " have too many dimensions");
    const Tensor idx = checked_indices(indices, V, "embedding", "indices");
    const Tensor weight = weight_in.contiguous();
    Shape shape = indices.shape();
    shape.push_back(D);
    Tensor out = empty(shape);
    embedding_forward(out.data(), weight.data(), idx.data_ptr<int64_t>(), idx.numel(), D);
    if (auto* node = detail::record<EmbeddingBackward>(out, {weight}, {idx})) {
        node->N = idx.numel(), node->D = D, node->padding_idx = pad;
    }
    return out;
}

// ---- one_hot ---------------------------------------------------------------------------------

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
    NORMNET_CHECK(indices.dtype() == kInt64, "one_hot is only applicable to index tensors of dtype int64, got ",
                  indices.dtype());
    NORMNET_CHECK(indices.dim() < kMaxDims, "one_hot: indices of shape ", indices.shape(), " have too many dimensions");
    const Tensor idx = indices.contiguous();
    const int64_t* p = idx.data_ptr<int64_t>();
    const int64_t n = idx.numel();
    if (num_classes == -1) {
        NORMNET_CHECK(n > 0, "one_hot: can not infer the total number of classes from an empty tensor");
        num_classes = *std::max_element(p, p + n) + 1;
    }
    NORMNET_CHECK(num_classes >= 0, "one_hot: num_classes must be -1 or non-negative, got ", num_classes);
    for (int64_t i = 0; i < n; ++i) {
        NORMNET_CHECK(p[i] >= 0, "one_hot: class values must be non-negative, got ", p[i]);
        NORMNET_CHECK(p[i] < num_classes, "one_hot: class values must be smaller than num_classes (", num_classes,
                      "), got ", p[i]);
    }
    Shape shape = indices.shape();
    shape.push_back(num_classes);
    Tensor out = zeros(shape, kInt64);
    int64_t* o = out.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) o[i * num_classes + p[i]] = 1;
    return out;
}

}  // namespace normnet

namespace normnet {

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return normnet::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return normnet::gather(*this, dim, index); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
    return normnet::scatter_add(*this, dim, index, src);
}

}  // namespace normnet
