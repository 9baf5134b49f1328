// Views and copies of a tensor's layout. Views (view/reshape/flatten/unflatten, transpose/permute,
// squeeze/unsqueeze, expand, narrow/slice/select, split/chunk/unbind) share their input's storage:
// one ViewArgs describes each, apply_view() computes the new layout, and the one ViewBackward
// applies the same view to the layout of the input's contiguous gradient and writes the output
// gradient through it. Copies: cat, stack, repeat, contiguous and clone.
#include <algorithm>
#include <optional>
#include <type_traits>

#include "../strided.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace {

using detail::Accumulate;
using detail::GradOut;
using detail::OpNode;
using detail::Overwrite;

int wrap_dim(int64_t d, int ndim, const char* op) {
    const int n = std::max(ndim, 1);  // a scalar accepts dim 0 and -1, as torch
    NORMNET_CHECK(d >= -n && d < n, op, ": dimension ", d, " out of range (expected to be in range of [", -n, ", ",
                  n - 1, "])");
    return static_cast<int>(d < 0 ? d + n : d);
}

// ---- Strided copies --------------------------------------------------------------------------

// dst (Store) = src over `shape`, both strided (in elements of T); threads split the runs.
template <class Store, class T>
void copy_layout(T* dst, const Shape& dst_strides, const T* src, const Shape& src_strides, const Shape& shape) {
    const detail::StridedLoop<2> loop(shape, {dst_strides, src_strides});
    loop.run(std::tuple<T*, const T*>{dst, src},
             [](const std::tuple<T*, const T*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                 const auto [d, x] = p;
                 constexpr bool kAdd = std::is_same_v<Store, Accumulate>;
                 if (s[0] == 1 && s[1] == 1) {
                     for (int64_t i = 0; i < n; ++i) d[i] = kAdd ? T(d[i] + x[i]) : x[i];
                 } else {
                     for (int64_t i = 0; i < n; ++i) d[i * s[0]] = kAdd ? T(d[i * s[0]] + x[i * s[1]]) : x[i * s[1]];
                 }
             });
}

// ---- Views -----------------------------------------------------------------------------------

enum class ViewKind { view, transpose, permute, unsqueeze, squeeze, unflatten, expand, slice, select };

struct ViewArgs {
    ViewKind kind = ViewKind::view;
    Shape shape;             // view, expand: the new sizes; permute: the order; unflatten: the sizes of dim0
    int dim0 = 0, dim1 = 0;  // transpose; slice, select, unsqueeze, unflatten use dim0; squeeze: -1 for all
    int64_t start = 0, length = 0, step = 1;  // slice: elements start + step * [0, length); select: start
};

// Where a view's elements lie: sizes, strides and offset (in elements).
struct Layout {
    Shape shape, strides;
    int64_t offset = 0;
};

// The strides under which a tensor of `shape` and `strides` reads as `to` without a copy, as
// torch's view: walking both shapes from the last dim, each run of dims that lies contiguously in
// memory (stride[d - 1] == size[d] * stride[d]) is refilled by dims of `to` of the same element
// count. Nothing when a dim of `to` would span two such runs.
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& to) {
    Shape out;
    for (int d = 0; d < to.size(); ++d) out.push_back(0);
    if (shape.empty()) {  // a scalar: any shape of one element
        for (int d = 0; d < to.size(); ++d) out[d] = 1;
        return out;
    }
    if (shape.numel() == 0) {
        if (shape == to) return strides;
        return detail::contiguous_strides(to);
    }
    int v = to.size() - 1;
    int64_t base = strides.back(), run = 1, filled = 1;
    for (int d = shape.size() - 1; d >= 0; --d) {
        run *= shape[d];
        const bool run_ends = d == 0 || (shape[d - 1] != 1 && strides[d - 1] != run * base);
        if (!run_ends) continue;
        while (v >= 0 && (filled < run || to[v] == 1)) {
            out[v] = filled * base;
            filled *= to[v];
            --v;
        }
        if (filled != run) return std::nullopt;
        if (d > 0) base = strides[d - 1], run = 1, filled = 1;
    }
    if (v != -1) return std::nullopt;
    return out;
}

// The layout of the view `a` of a tensor laid out as `in`.
Layout apply_view(const Layout& in, const ViewArgs& a) {
    Layout out;
    out.offset = in.offset;
    const int nd = in.shape.size();
    switch (a.kind) {
        case ViewKind::view:  // Tensor::view has checked that the strides allow it
            out.shape = a.shape;
            out.strides = *view_strides(in.shape, in.strides, a.shape);
            break;
        case ViewKind::transpose:
            out.shape = in.shape, out.strides = in.strides;
            std::swap(out.shape[a.dim0], out.shape[a.dim1]);
            std::swap(out.strides[a.dim0], out.strides[a.dim1]);
            break;
        case ViewKind::permute:
            for (int d = 0; d < nd; ++d) {
                out.shape.push_back(in.shape[static_cast<int>(a.shape[d])]);
                out.strides.push_back(in.strides[static_cast<int>(a.shape[d])]);
            }
            break;
        case ViewKind::unsqueeze:
            for (int d = 0; d <= nd; ++d) {
                if (d == a.dim0) {
                    out.shape.push_back(1);
                    out.strides.push_back(d < nd ? in.shape[d] * in.strides[d] : 1);
                }
                if (d < nd) out.shape.push_back(in.shape[d]), out.strides.push_back(in.strides[d]);
            }
            break;
        case ViewKind::squeeze:
            for (int d = 0; d < nd; ++d) {
                if (in.shape[d] == 1 && (a.dim0 < 0 || a.dim0 == d)) continue;
                out.shape.push_back(in.shape[d]);
                out.strides.push_back(in.strides[d]);
            }
            break;
        case ViewKind::unflatten:
            for (int d = 0; d < nd; ++d) {
                if (d != a.dim0) {
                    out.shape.push_back(in.shape[d]), out.strides.push_back(in.strides[d]);
                    continue;
                }
                int64_t stride = in.strides[d] * a.shape.numel();
                for (int64_t size : a.shape) {
                    stride /= std::max<int64_t>(size, 1);
                    out.shape.push_back(size);
                    out.strides.push_back(stride);
                }
            }
            break;
        case ViewKind::expand: {
            const int lead = a.shape.size() - nd;
            out.shape = a.shape;
            for (int d = 0; d < a.shape.size(); ++d) {
                const int s = d - lead;
                out.strides.push_back(s < 0 || (in.shape[s] == 1 && a.shape[d] != 1) ? 0 : in.strides[s]);
            }
            break;
        }
        case ViewKind::slice:
            out.shape = in.shape, out.strides = in.strides;
            out.offset += a.start * in.strides[a.dim0];
            out.shape[a.dim0] = a.length;
            out.strides[a.dim0] *= a.step;
            break;
        case ViewKind::select:
            out.offset += a.start * in.strides[a.dim0];
            for (int d = 0; d < nd; ++d) {
                if (d != a.dim0) out.shape.push_back(in.shape[d]), out.strides.push_back(in.strides[d]);
            }
            break;
    }
    return out;
}

class ViewBackward final : public OpNode {
public:
    ViewArgs args;
    Shape in_shape;
    const char* name() const override {
        switch (args.kind) {
            case ViewKind::transpose: return "TransposeBackward0";
            case ViewKind::permute: return "PermuteBackward0";
            case ViewKind::unsqueeze: return "UnsqueezeBackward0";
            case ViewKind::squeeze: return args.dim0 < 0 ? "SqueezeBackward0" : "SqueezeBackward1";
            case ViewKind::expand: return "ExpandBackward0";
            case ViewKind::slice: return "SliceBackward0";
            case ViewKind::select: return "SelectBackward0";
            default: return "ViewBackward0";
        }
    }
    void backward(const Tensor& dout) override {
        if (args.kind == ViewKind::expand) {
            // Every input element was read by several outputs: their gradients are summed.
            if (const GradOut dx = grad_out(0)) detail::sum_to(dx, dout, in_shape);
            return;
        }
        // The view's elements, seen in the input's contiguous gradient.
        const Layout v = apply_view({in_shape, detail::contiguous_strides(in_shape), 0}, args);
        const Shape dout_strides = detail::contiguous_strides(v.shape);
        if (args.kind == ViewKind::slice || args.kind == ViewKind::select) {
            // The view covers part of the input: add into that part of a zeroed gradient.
            const Tensor dx = grad_to_add(0);
            if (dx.defined()) copy_layout<Accumulate>(dx.data() + v.offset, v.strides, dout.data(), dout_strides, v.shape);
            return;
        }
        // The other views cover every input element once: the gradient is written in one pass.
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) { copy_layout<Store>(d + v.offset, v.strides, dout.data(), dout_strides, v.shape); });
        }
    }
};

// The view `a` of x, sharing its storage, recorded for autograd.
Tensor make_view(const Tensor& x, const ViewArgs& a) {
    auto& src = x.impl();
    const Layout v = apply_view({src.shape, src.strides, src.offset}, a);
    Tensor out = x.detach();
    out.impl().shape = v.shape;
    out.impl().strides = v.strides;
    out.impl().offset = v.offset;
    out.impl().is_view = true;
    if (auto* node = detail::record<ViewBackward>(out, {x})) node->args = a, node->in_shape = x.shape();
    return out;
}

// Resolves a -1 in `shape` and checks the element count against numel.
Shape infer_shape(const Shape& shape, int64_t numel, const Shape& from) {
    Shape out = shape;
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1) {
            NORMNET_CHECK(infer < 0, "only one dimension can be inferred in shape ", shape);
            infer = d;
        } else {
            NORMNET_CHECK(shape[d] >= 0, "invalid shape dimension ", shape[d], " in ", shape);
            known *= shape[d];
        }
    }
    if (infer >= 0) {
        NORMNET_CHECK(known != 0 && numel % known == 0, "shape '", shape, "' is invalid for input of size ", numel,
              " (shape ", from.str(), ")");
        out[infer] = numel / known;
    }
    NORMNET_CHECK(out.numel() == numel, "shape '", shape, "' is invalid for input of size ", numel, " (shape ",
          from.str(), ")");
    return out;
}

ViewArgs slice_args(int d, int64_t start, int64_t length, int64_t step) {
    ViewArgs a;
    a.kind = ViewKind::slice;
    a.dim0 = d, a.start = start, a.length = length, a.step = step;
    return a;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
    ViewArgs a;
    a.shape = infer_shape(shape, numel(), this->shape());
    NORMNET_CHECK(view_strides(this->shape(), strides(), a.shape), "view: view size is not compatible with input "
                  "tensor's size and stride (at least one dimension spans across two contiguous subspaces); use "
                  "reshape() (shape ", this->shape(), ", strides ", strides(), ", view ", a.shape, ")");
    return make_view(*this, a);
}

Tensor Tensor::reshape(const Shape& shape) const { return contiguous().view(shape); }

Tensor Tensor::flatten(int start_dim, int end_dim) const {
    if (dim() == 0) return reshape({1});
    const int s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
    NORMNET_CHECK(s <= e, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
    Shape out;
    for (int d = 0; d < s; ++d) out.push_back(shape()[d]);
    int64_t merged = 1;
    for (int d = s; d <= e; ++d) merged *= shape()[d];
    out.push_back(merged);
    for (int d = e + 1; d < dim(); ++d) out.push_back(shape()[d]);
    return reshape(out);
}

Tensor Tensor::unflatten(int64_t d, const Shape& sizes) const {
    ViewArgs a;
    a.kind = ViewKind::unflatten;
    a.dim0 = wrap_dim(d, dim(), "unflatten");
    NORMNET_CHECK(dim() > 0 && !sizes.empty(), "unflatten: sizes must be non-empty (got ", sizes, " for a tensor of shape ",
                  shape(), ")");
    NORMNET_CHECK(dim() - 1 + sizes.size() <= kMaxDims, "unflatten: ", shape(), " with ", sizes, " would have more than ",
                  kMaxDims, " dimensions");
    a.shape = infer_shape(sizes, shape()[a.dim0], shape());
    return make_view(*this, a);
}

Tensor Tensor::transpose(int dim0, int dim1) const {
    ViewArgs a;
    a.kind = ViewKind::transpose;
    a.dim0 = wrap_dim(dim0, dim(), "transpose");
    a.dim1 = wrap_dim(dim1, dim(), "transpose");
    if (dim() == 0) return make_view(*this, ViewArgs{});  // a scalar is its own transpose
    return make_view(*this, a);
}

Tensor Tensor::t() const {
    NORMNET_CHECK(dim() <= 2, "t() expects a tensor with <= 2 dimensions, got shape ", shape());
    return dim() == 2 ? transpose(0, 1) : transpose(0, 0);  // 0-D and 1-D: itself, as torch
}

Tensor Tensor::permute(const Dims& dims) const {
    NORMNET_CHECK(dims.size() == dim(), "permute: number of dims don't match (got ", dims, " for a tensor of shape ",
                  shape(), ")");
    ViewArgs a;
    a.kind = ViewKind::permute;
    uint32_t seen = 0;
    for (int64_t d : dims) {
        const int w = wrap_dim(d, dim(), "permute");
        NORMNET_CHECK(!((seen >> w) & 1u), "permute: repeated dim ", w, " in ", dims);
        seen |= 1u << w;
        a.shape.push_back(w);
    }
    if (dim() == 0) return make_view(*this, ViewArgs{});
    return make_view(*this, a);
}

Tensor Tensor::unsqueeze(int64_t d) const {
    NORMNET_CHECK(dim() < kMaxDims, "unsqueeze: a tensor of shape ", shape(), " already has ", kMaxDims, " dimensions");
    ViewArgs a;
    a.kind = ViewKind::unsqueeze;
    a.dim0 = wrap_dim(d, dim() + 1, "unsqueeze");
    return make_view(*this, a);
}

Tensor Tensor::squeeze() const {
    ViewArgs a;
    a.kind = ViewKind::squeeze;
    a.dim0 = -1;
    return make_view(*this, a);
}

Tensor Tensor::squeeze(int64_t d) const {
    ViewArgs a;
    a.kind = ViewKind::squeeze;
    a.dim0 = dim() == 0 ? (wrap_dim(d, 0, "squeeze"), -2) : wrap_dim(d, dim(), "squeeze");  // -2: nothing to drop
    return make_view(*this, a);
}

Tensor Tensor::expand(const Shape& sizes) const {
    NORMNET_CHECK(sizes.size() >= dim(), "expand: the number of sizes provided (", sizes.size(),
                  ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
    ViewArgs a;
    a.kind = ViewKind::expand;
    const int lead = sizes.size() - dim();
    for (int d = 0; d < sizes.size(); ++d) {
        const int s = d - lead;
        int64_t size = sizes[d];
        NORMNET_CHECK(size >= -1, "expand: invalid size ", size, " in ", sizes, " (shape ", shape(), ")");
        if (s < 0) {
            NORMNET_CHECK(size >= 0, "expand: the expanded size of the tensor (", size,
                          ") isn't allowed in a leading, non-existing dimension ", d);
        } else {
            if (size == -1) size = shape()[s];
            NORMNET_CHECK(size == shape()[s] || shape()[s] == 1, "expand: the expanded size of the tensor (", size,
                          ") must match the existing size (", shape()[s], ") at non-singleton dimension ", d,
                          ".  Target sizes: ", sizes, ".  Tensor sizes: ", shape());
        }
        a.shape.push_back(size);
    }
    return make_view(*this, a);
}

Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.shape()); }

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
    const int w = wrap_dim(d, dim(), "narrow");
    const int64_t size = shape()[w];
    if (start < 0 && start >= -size) start += size;  // torch accepts a negative start
    NORMNET_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: [", start, ", ", start + length,
          ") is out of range for dimension ", w, " of size ", size, " (shape ", shape(), ")");
    return make_view(*this, slice_args(w, start, length, 1));
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
    const int w = wrap_dim(d, dim(), "slice");
    NORMNET_CHECK(step > 0, "slice: step must be positive, got ", step);
    const int64_t size = shape()[w];
    // Python's rules: negative bounds count from the end, then both are clamped to [0, size].
    const auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    const int64_t b = clamp(start.value_or(0)), e = std::max(b, clamp(end.value_or(size)));
    return make_view(*this, slice_args(w, b, (e - b + step - 1) / step, step));
}

Tensor Tensor::select(int d, int64_t index) const {
    ViewArgs a;
    a.kind = ViewKind::select;
    a.dim0 = wrap_dim(d, dim(), "select");
    NORMNET_CHECK(dim() > 0, "select() cannot be applied to a 0-dim tensor");
    const int64_t size = shape()[a.dim0];
    NORMNET_CHECK(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
                  shape(), " at dimension ", a.dim0);
    a.start = index < 0 ? index + size : index;
    return make_view(*this, a);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
    const int w = wrap_dim(d, dim(), "split");
    NORMNET_CHECK(dim() > 0, "split expects at least a 1-dimensional tensor");
    const int64_t size = shape()[w];
    NORMNET_CHECK(split_size > 0 || (split_size == 0 && size == 0), "split: split_size must be positive, got ",
                  split_size, " (dimension ", w, " of size ", size, ")");
    std::vector<Tensor> parts;
    if (size == 0) return {make_view(*this, slice_args(w, 0, 0, 1))};  // torch: one empty piece
    for (int64_t b = 0; b < size; b += split_size) parts.push_back(narrow(w, b, std::min(split_size, size - b)));
    return parts;
}

std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& sizes, int64_t d) const {
    const int w = wrap_dim(d, dim(), "split_with_sizes");
    int64_t total = 0;
    for (int64_t s : sizes) {
        NORMNET_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got ", s);
        total += s;
    }
    NORMNET_CHECK(dim() > 0 && total == shape()[w], "split_with_sizes expects split_sizes to sum exactly to ",
                  dim() > 0 ? shape()[w] : 0, " (input tensor's size at dimension ", w, "), but got sizes summing to ",
                  total);
    std::vector<Tensor> parts;
    int64_t b = 0;
    for (int64_t s : sizes) parts.push_back(narrow(w, b, s)), b += s;
    return parts;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
    NORMNET_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
    const int w = wrap_dim(d, dim(), "chunk");
    NORMNET_CHECK(dim() > 0, "chunk expects at least a 1-dimensional tensor");
    const int64_t size = shape()[w];
    // As torch: an empty dim gives `chunks` empty views; otherwise possibly fewer than `chunks`.
    if (size == 0) return split_with_sizes(std::vector<int64_t>(static_cast<size_t>(chunks), 0), w);
    return split((size + chunks - 1) / chunks, w);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
    const int w = wrap_dim(d, dim(), "unbind");
    NORMNET_CHECK(dim() > 0, "unbind: dimension specified as ", d, " but tensor has no dimensions");
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < shape()[w]; ++i) parts.push_back(select(w, i));
    return parts;
}

// ---- cat and stack ---------------------------------------------------------------------------

namespace {

// torch.cat still skips 1-D empty tensors of any other shape (its legacy rule).
bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// The layout of input i's place in the output of cat (a slice of `dim`) or stack (a select).
Layout place_in(const Tensor& out, int dim, bool stack, int64_t offset, int64_t size) {
    ViewArgs a = slice_args(dim, offset, size, 1);
    if (stack) a.kind = ViewKind::select;
    return apply_view({out.shape(), out.strides(), 0}, a);
}

class CatBackward final : public OpNode {
public:
    Tensor sizes;  // int64 [inputs]: each input's size along dim (pooled: recording allocates nothing)
    int dim = 0;
    bool stack = false;
    const char* name() const override { return stack ? "StackBackward0" : "CatBackward0"; }
    void backward(const Tensor& dout) override {
        const int64_t* size = sizes.data_ptr<int64_t>();
        int64_t offset = 0;
        for (int i = 0; i < static_cast<int>(sizes.numel()); ++i) {
            if (const GradOut dx = grad_out(i)) {
                const Layout v = place_in(dout, dim, stack, offset, size[i]);
                dx.write([&]<class Store>(float* d) {
                    copy_layout<Store>(d, detail::contiguous_strides(v.shape), dout.data() + v.offset, v.strides, v.shape);
                });
            }
            offset += stack ? 1 : size[i];
        }
    }
};

// The dtype tensors of dtypes a and b are promoted to, as torch: bool < int64 < float32.
Dtype promoted(Dtype a, Dtype b) {
    if (a == kFloat32 || b == kFloat32) return kFloat32;
    return a == kInt64 || b == kInt64 ? kInt64 : kBool;
}

Tensor cat_or_stack(TensorList tensors, int64_t dim_in, bool stack) {
    const char* op = stack ? "stack" : "cat";
    NORMNET_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
    Dtype dtype = tensors[0].dtype();
    for (const Tensor& t : tensors) dtype = promoted(dtype, t.dtype());
    if (std::any_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.dtype() != dtype; })) {
        std::vector<Tensor> same;  // mixed dtypes: each converted to the promoted one first
        for (const Tensor& t : tensors) same.push_back(t.to(dtype));
        return cat_or_stack(same, dim_in, stack);
    }
    const Tensor* ref = &tensors[0];
    for (const Tensor& t : tensors) {
        if (stack || !skipped_by_cat(t)) {
            ref = &t;
            break;
        }
    }
    const int dim = wrap_dim(dim_in, ref->dim() + (stack ? 1 : 0), op);
    NORMNET_CHECK(stack || ref->dim() > 0, "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
    Tensor sizes = empty({static_cast<int64_t>(tensors.size())}, kInt64);
    int64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        int64_t size = 0;
        if (stack) {
            NORMNET_CHECK(t.shape() == ref->shape(), "stack expects each tensor to be equal size, but got ",
                          ref->shape(), " at entry 0 and ", t.shape(), " at entry ", i);
            size = 1;
        } else if (!skipped_by_cat(t)) {
            NORMNET_CHECK(t.dim() == ref->dim(), "cat: tensors must have same number of dimensions: got ", ref->dim(),
                          " and ", t.dim(), " (shapes ", ref->shape(), " and ", t.shape(), ")");
            for (int d = 0; d < t.dim(); ++d) {
                NORMNET_CHECK(d == dim || t.shape()[d] == ref->shape()[d], "cat: sizes of tensors must match except in "
                              "dimension ", dim, ". Expected size ", ref->shape()[d], " but got size ", t.shape()[d],
                              " for tensor number ", i, " in the list (shapes ", ref->shape(), " and ", t.shape(), ")");
            }
            size = t.shape()[dim];
        }
        sizes.data_ptr<int64_t>()[i] = size;
        total += size;
    }
    Shape shape;
    for (int d = 0; d < ref->dim() + (stack ? 1 : 0); ++d) {
        if (d == dim) {
            shape.push_back(total);
        } else {
            shape.push_back(ref->shape()[stack && d > dim ? d - 1 : d]);
        }
    }
    if (!stack && ref->dim() == 1 && ref->numel() == 0) shape = Shape{0};
    Tensor out = empty(shape, ref->dtype());
    int64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        const int64_t size = sizes.data_ptr<int64_t>()[i];
        if (size > 0 || stack) {
            const Layout v = place_in(out, dim, stack, offset, size);
            detail::visit_dtype(t.dtype(), [&](auto type) {
                using T = decltype(type);
                copy_layout<Overwrite>(out.data_ptr<T>() + v.offset, v.strides, t.data_ptr<T>(), t.strides(), v.shape);
            });
        }
        offset += stack ? 1 : size;
    }
    if (auto* node = detail::record<CatBackward>(out, tensors.span())) {
        node->sizes = sizes, node->dim = dim, node->stack = stack;
    }
    return out;
}

}  // namespace

Tensor cat(TensorList tensors, int64_t dim) { return cat_or_stack(tensors, dim, false); }
Tensor stack(TensorList tensors, int64_t dim) { return cat_or_stack(tensors, dim, true); }

// ---- repeat ----------------------------------------------------------------------------------

namespace {

// The input's shape and strides with leading 1s up to `nd` dimensions (repeat's padding).
Layout padded(const Tensor& x, int nd) {
    Layout l;
    for (int d = 0; d < nd - x.dim(); ++d) l.shape.push_back(1), l.strides.push_back(0);
    for (int d = 0; d < x.dim(); ++d) l.shape.push_back(x.shape()[d]), l.strides.push_back(x.strides()[d]);
    return l;
}

// Calls f(row, offset) for the rows [b, e) of a contiguous tensor of `shape` (rows run along the
// last dimension), with offset = sum over the other dims d of (index_d % mod[d]) * strides[d].
template <class F>
void for_rows(const Shape& shape, const Shape& mod, const Shape& strides, int64_t b, int64_t e, F&& f) {
    const int lead = shape.size() - 1;
    std::array<int64_t, kMaxDims> index{};
    int64_t rest = b;
    for (int d = lead - 1; d >= 0; --d) index[static_cast<size_t>(d)] = rest % shape[d], rest /= shape[d];
    for (int64_t row = b; row < e; ++row) {
        int64_t offset = 0;
        for (int d = 0; d < lead; ++d) offset += (index[static_cast<size_t>(d)] % mod[d]) * strides[d];
        f(row, offset);
        for (int d = lead - 1; d >= 0 && ++index[static_cast<size_t>(d)] == shape[d]; --d) index[static_cast<size_t>(d)] = 0;
    }
}

class RepeatBackward final : public OpNode {
public:
    Shape repeats, in_shape;  // in_shape padded with leading 1s to repeats' length
    const char* name() const override { return "RepeatBackward0"; }
    void backward(const Tensor& dout) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        if (dout.numel() == 0) {
            if (dx.fresh) std::fill_n(dx.data, in_shape.numel(), 0.0f);  // a zero repeat: no gradient
            return;
        }
        // Each element of dx sums the copies of it in dout: walk dout's rows, adding each into
        // the dx row it came from. Rows of dx are visited by several dout rows, so one thread.
        const int last = in_shape.size() - 1;
        const int64_t s = in_shape[last], r = repeats[last];
        const Shape dx_strides = detail::contiguous_strides(in_shape);
        const Shape& shape = dout.shape();
        float* d = dx.data;
        if (dx.fresh) std::fill_n(d, in_shape.numel(), 0.0f);
        for_rows(shape, in_shape, dx_strides, 0, shape.numel() / shape[last], [&](int64_t row, int64_t offset) {
            const float* g = dout.data() + row * s * r;
            for (int64_t t = 0; t < r; ++t) {
                for (int64_t i = 0; i < s; ++i) d[offset + i] += g[t * s + i];
            }
        });
    }
};

}  // namespace

Tensor Tensor::repeat(const Shape& repeats) const {
    NORMNET_CHECK(repeats.size() >= dim(), "repeat: number of dimensions of repeat dims (", repeats,
                  ") can not be smaller than number of dimensions of tensor (", shape(), ")");
    if (repeats.empty()) return clone();  // a scalar repeated along no dims
    const Layout in = padded(*this, repeats.size());
    Shape shape;
    for (int d = 0; d < repeats.size(); ++d) {
        NORMNET_CHECK(repeats[d] >= 0, "repeat: repeats can not be negative (got ", repeats, ")");
        shape.push_back(in.shape[d] * repeats[d]);
    }
    Tensor out = empty(shape, dtype());
    if (out.numel() > 0) {
        // Each output row (along the last dim) is r copies of one input row.
        const int last = shape.size() - 1;
        const int64_t s = in.shape[last], r = repeats[last], stride = in.strides[last];
        detail::visit_dtype(dtype(), [&](auto type) {
            using T = decltype(type);
            T* o = out.data_ptr<T>();
            const T* x = data_ptr<T>();
            detail::parallel_for(out.numel() / shape[last], std::max<int64_t>(1, detail::kElementGrain / shape[last]),
                                 [&](int64_t b, int64_t e) {
                                     for_rows(shape, in.shape, in.strides, b, e, [&](int64_t row, int64_t offset) {
                                         T* dst = o + row * s * r;
                                         for (int64_t i = 0; i < s; ++i) dst[i] = x[offset + i * stride];
                                         for (int64_t t = 1; t < r; ++t) std::copy_n(dst, s, dst + t * s);
                                     });
                                 });
        });
    }
    if (auto* node = detail::record<RepeatBackward>(out, {*this})) node->repeats = repeats, node->in_shape = in.shape;
    return out;
}

// ---- Copies ----------------------------------------------------------------------------------

namespace {

class CloneBackward final : public OpNode {
public:
    const char* name() const override { return "CloneBackward0"; }
    void backward(const Tensor& dout) override {
        if (const GradOut dx = grad_out(0)) dx.write([&]<class Store>(float* d) { detail::copy_strided<Store>(d, dout); });
    }
};

}  // namespace

Tensor Tensor::clone() const {
    Tensor out = empty(shape(), dtype());
    detail::visit_dtype(dtype(), [&](auto type) {
        using T = decltype(type);
        copy_layout<Overwrite>(out.data_ptr<T>(), detail::contiguous_strides(shape()), data_ptr<T>(), strides(), shape());
    });
    detail::record<CloneBackward>(out, {*this});
    return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

// ---- tril, triu -------------------------------------------------------------------------------
// Compositions: where(mask, x, 0) over the last two dims, the [R, C] mask made here (where keeps
// NaN and inf out of the zeroed part, which x * mask would not, and carries the gradient).

namespace {

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
    NORMNET_CHECK(x.dim() >= 2, op, ": input tensor must have at least 2 dimensions, got ", x.shape());
    const int64_t R = x.size(-2), C = x.size(-1);
    Tensor mask = empty({R, C}, kBool);
    bool* m = mask.data_ptr<bool>();
    for (int64_t i = 0; i < R; ++i) {
        for (int64_t j = 0; j < C; ++j) m[i * C + j] = lower ? j - i <= diagonal : j - i >= diagonal;
    }
    return where(mask, x, 0.0);
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }
Tensor Tensor::tril(int64_t diagonal) const { return normnet::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return normnet::triu(*this, diagonal); }

// ---- Functional forms ------------------------------------------------------------------------

Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
    return x.flatten(static_cast<int>(start_dim), static_cast<int>(end_dim));
}
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) { return x.unflatten(dim, sizes); }
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
    return x.transpose(static_cast<int>(dim0), static_cast<int>(dim1));
}
Tensor permute(const Tensor& x, const Dims& dims) { return x.permute(dims); }
Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }
Tensor squeeze(const Tensor& x) { return x.squeeze(); }
Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
    return x.narrow(static_cast<int>(dim), start, length);
}
Tensor select(const Tensor& x, int64_t dim, int64_t index) { return x.select(static_cast<int>(dim), index); }
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) { return x.split(split_size, dim); }
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
    return x.split_with_sizes(sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) { return x.chunk(chunks, dim); }
std::vector<Tensor> unbind(const Tensor& x, int64_t dim) { return x.unbind(dim); }

}  // namespace normnet
