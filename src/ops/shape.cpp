// Views and copies: view/reshape/flatten, transpose, narrow, select, contiguous, clone.
// A view shares its input's storage; its backward applies the same view to the input's
// gradient buffer and writes the output gradient through it.
#include <algorithm>

#include "../strided.hpp"
#include "loop.hpp"
#include "op.hpp"

namespace normnet {
namespace {

using detail::GradOut;
using detail::OpNode;

int wrap_dim(int d, int ndim, const char* op) {
    NORMNET_CHECK(d >= -ndim && d < ndim, op, ": dimension ", d, " out of range for a tensor of ", ndim,
                  " dimensions");
    return d < 0 ? d + ndim : d;
}

enum class ViewKind { view, transpose, narrow, select };

struct ViewArgs {
    ViewKind kind = ViewKind::view;
    Shape shape;          // view
    int dim0 = 0, dim1 = 0;  // transpose; narrow/select use dim0
    int64_t start = 0, length = 0;
};

Tensor make_view(const Tensor& x, const ViewArgs& a);

class ViewBackward final : public OpNode {
public:
    ViewArgs args;
    Shape in_shape, in_strides;
    const char* name() const override {
        switch (args.kind) {
            case ViewKind::transpose: return "TransposeBackward0";
            case ViewKind::narrow: return "SliceBackward0";
            case ViewKind::select: return "SelectBackward0";
            default: return "ViewBackward0";
        }
    }
    void backward(const Tensor& dout) override {
        if (args.kind == ViewKind::narrow || args.kind == ViewKind::select) {
            // The view covers part of the input: add into that part of a zeroed gradient.
            const Tensor dx = grad_to_add(0);
            if (dx.defined()) make_view(dx, args).add_(dout);
            return;
        }
        // view and transpose cover all of the input: its gradient is dout seen through the
        // inverse view, written in one pass.
        const GradOut dx = grad_out(0);
        if (!dx) return;
        Tensor back = dout;
        if (args.kind == ViewKind::transpose) {
            ViewArgs inverse = args;
            back = make_view(dout, inverse);
        } else {
            back = dout.detach();
            back.impl().shape = in_shape;
            back.impl().strides = detail::contiguous_strides(in_shape);
        }
        dx.write([&]<class Store>(float* d) { detail::copy_strided<Store>(d, back); });
    }
};

class CloneBackward final : public OpNode {
public:
    const char* name() const override { return "CloneBackward0"; }
    void backward(const Tensor& dout) override {
        if (const GradOut dx = grad_out(0)) dx.write([&]<class Store>(float* d) { detail::copy_strided<Store>(d, dout); });
    }
};

// Builds the view described by `a` on x's storage (no autograd).
Tensor make_view(const Tensor& x, const ViewArgs& a) {
    auto& src = x.impl();
    Shape shape = src.shape, strides = src.strides;
    int64_t offset = src.offset;
    switch (a.kind) {
        case ViewKind::view:
            shape = a.shape;
            strides = detail::contiguous_strides(a.shape);
            break;
        case ViewKind::transpose:
            std::swap(shape[a.dim0], shape[a.dim1]);
            std::swap(strides[a.dim0], strides[a.dim1]);
            break;
        case ViewKind::narrow:
            offset += a.start * strides[a.dim0];
            shape[a.dim0] = a.length;
            break;
        case ViewKind::select: {
            offset += a.start * strides[a.dim0];
            Shape s, st;
            for (int d = 0; d < shape.size(); ++d) {
                if (d == a.dim0) continue;
                s.push_back(shape[d]);
                st.push_back(strides[d]);
            }
            shape = s;
            strides = st;
            break;
        }
    }
    Tensor out = x.detach();
    out.impl().shape = shape;
    out.impl().strides = strides;
    out.impl().offset = offset;
    out.impl().is_view = true;
    return out;
}

Tensor record_view(const Tensor& x, const ViewArgs& a) {
    Tensor out = make_view(x, a);
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

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
    NORMNET_CHECK(is_contiguous(), "view: the tensor of shape ", this->shape(), " is not contiguous; use reshape()");
    ViewArgs a;
    a.shape = infer_shape(shape, numel(), this->shape());
    return record_view(*this, a);
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

Tensor Tensor::transpose(int dim0, int dim1) const {
    ViewArgs a;
    a.kind = ViewKind::transpose;
    a.dim0 = wrap_dim(dim0, dim(), "transpose");
    a.dim1 = wrap_dim(dim1, dim(), "transpose");
    return record_view(*this, a);
}

Tensor Tensor::t() const {
    NORMNET_CHECK(dim() == 2, "t() expects a 2-D tensor, got shape ", shape());
    return transpose(0, 1);
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
    ViewArgs a;
    a.kind = ViewKind::narrow;
    a.dim0 = wrap_dim(d, dim(), "narrow");
    NORMNET_CHECK(start >= 0 && length >= 0 && start + length <= shape()[a.dim0], "narrow: [", start, ", ", start + length,
          ") is out of range for dimension ", a.dim0, " of size ", shape()[a.dim0], " (shape ", shape(), ")");
    a.start = start;
    a.length = length;
    return record_view(*this, a);
}

Tensor Tensor::select(int d, int64_t index) const {
    ViewArgs a;
    a.kind = ViewKind::select;
    a.dim0 = wrap_dim(d, dim(), "select");
    const int64_t size = shape()[a.dim0];
    NORMNET_CHECK(index >= -size && index < size, "index ", index, " is out of bounds for dimension ", a.dim0,
          " with size ", size);
    a.start = index < 0 ? index + size : index;
    return record_view(*this, a);
}

Tensor Tensor::clone() const {
    Tensor out = empty(shape(), dtype());
    {
        NoGradGuard no_grad;  // the copy itself is recorded as one CloneBackward below
        out.copy_(*this);
    }
    detail::record<CloneBackward>(out, {*this});
    return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

}  // namespace normnet
