// Tensor basics: shapes, dtypes, storage, the random generator, factories, in-place updates
// and PyTorch-style printing. Views (view, transpose, narrow, ...) live in ops/shape.cpp because
// they are differentiable.
#include "normnet/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <numbers>
#include <ostream>
#include <sstream>

#include "memory.hpp"
#include "ops/op.hpp"
#include "ops/reduce.hpp"
#include "strided.hpp"
#include "tensor_impl.hpp"

namespace normnet {

// ---------------------------------------------------------------- Shape

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}
Shape::Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
Shape::Shape(std::span<const int64_t> dims) {
    NORMNET_CHECK(dims.size() <= static_cast<size_t>(kMaxDims), "a tensor has at most ", kMaxDims,
                  " dimensions, got ", dims.size());
    for (int64_t v : dims) push_back(v);
}

void Shape::push_back(int64_t v) {
    NORMNET_CHECK(n_ < kMaxDims, "a tensor has at most ", kMaxDims, " dimensions");
    d_[static_cast<size_t>(n_++)] = v;
}

std::string Shape::str() const {
    std::string s = "[";
    for (int i = 0; i < n_; ++i) {
        if (i) s += ", ";
        s += std::to_string(d_[static_cast<size_t>(i)]);
    }
    return s + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

// ---------------------------------------------------------------- Dtype

const char* dtype_name(Dtype dtype) {
    switch (dtype) {
        case Dtype::int64: return "int64";
        case Dtype::bool8: return "bool";
        case Dtype::int32: return "int32";
        case Dtype::float32: break;
    }
    return "float32";
}

int64_t element_size(Dtype dtype) {
    return detail::visit_dtype(dtype, [](auto v) { return static_cast<int64_t>(sizeof(v)); });
}

std::ostream& operator<<(std::ostream& os, Dtype dtype) { return os << dtype_name(dtype); }

// ---------------------------------------------------------------- Storage

namespace detail {
Storage::Storage(int64_t n) : data(buffer_allocate(n)), bytes(n) {}
Storage::~Storage() { buffer_deallocate(data, bytes); }

std::shared_ptr<TensorImpl> new_impl() { return std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>{}); }
}  // namespace detail

// ---------------------------------------------------------------- Generator

namespace {
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
}  // namespace

void Generator::manual_seed(uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
}

uint64_t Generator::next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

float Generator::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

double Generator::normal() {
    const double u1 = 1.0 - static_cast<double>(next_u64() >> 11) * 0x1.0p-53;  // in (0, 1]
    const double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t Generator::below(uint64_t n) {
    NORMNET_CHECK(n > 0, "Generator::below: n must be positive");
    const uint64_t threshold = (0 - n) % n;  // rejecting these values removes modulo bias
    for (;;) {
        const uint64_t r = next_u64();
        if (r >= threshold) return r % n;
    }
}

Generator& default_generator() {
    static Generator gen(0);
    return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

// ---------------------------------------------------------------- Tensor accessors

detail::TensorImpl& Tensor::impl() const {
    NORMNET_CHECK(impl_ != nullptr, "use of an undefined tensor");
    return *impl_;
}

const Shape& Tensor::shape() const { return impl().shape; }
const Shape& Tensor::strides() const { return impl().strides; }
Dtype Tensor::dtype() const { return impl().dtype; }

int64_t Tensor::size(int d) const {
    const int n = dim();
    NORMNET_CHECK(d >= -n && d < n, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
                  "], but got ", d, ")");
    return shape()[d < 0 ? d + n : d];
}

bool Tensor::is_contiguous() const {
    // Sizes of 1 may carry any stride (as in PyTorch), and an empty tensor is contiguous.
    const detail::TensorImpl& t = impl();
    int64_t expected = 1;
    for (int d = t.shape.size() - 1; d >= 0; --d) {
        if (t.shape[d] == 0) return true;
        if (t.shape[d] != 1 && t.strides[d] != expected) return false;
        expected *= t.shape[d];
    }
    return true;
}

void* Tensor::typed_data(Dtype expected) const {
    const detail::TensorImpl& t = impl();
    NORMNET_CHECK(t.dtype == expected, "expected a tensor of dtype ", expected, " but got ", t.dtype, " (shape ",
                  t.shape, ")");
    return t.bytes();
}

namespace {
// Element `offset` (in elements, from the storage's start) of t, converted to T.
template <class T>
T element(const detail::TensorImpl& t, int64_t offset) {
    return detail::visit_dtype(t.dtype, [&](auto v) {
        using S = decltype(v);
        return detail::convert<T>(static_cast<const S*>(t.storage->data)[offset]);
    });
}
}  // namespace

template <class T>
T Tensor::item() const {
    NORMNET_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to a scalar (shape ",
                  shape(), ")");
    return element<T>(impl(), impl().offset);
}
template float Tensor::item<float>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;
template double Tensor::item<double>() const;
template int32_t Tensor::item<int32_t>() const;

float Tensor::at(std::initializer_list<int64_t> index) const {
    NORMNET_CHECK(static_cast<int>(index.size()) == dim(), "at: index of ", index.size(),
                  " values for a tensor of shape ", shape());
    int64_t offset = impl().offset;
    int d = 0;
    for (int64_t i : index) {
        NORMNET_CHECK(i >= 0 && i < shape()[d], "at: index ", i, " is out of bounds for dimension ", d,
                      " with size ", shape()[d]);
        offset += i * strides()[d];
        ++d;
    }
    return element<float>(impl(), offset);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
    std::vector<T> out;
    out.reserve(static_cast<size_t>(numel()));
    const detail::TensorImpl& t = impl();
    detail::for_each_offset(shape(), strides(), t.offset, [&](int64_t o) { out.push_back(element<T>(t, o)); });
    return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;

Tensor Tensor::to(Dtype dtype) const {
    if (dtype == this->dtype()) return *this;
    NORMNET_CHECK(!requires_grad() || !grad_mode_enabled() || dtype == kFloat32, "to(", dtype,
                  "): the conversion is not differentiable; detach() the tensor first");
    Tensor out = empty(shape(), dtype);
    NoGradGuard no_grad;
    out.copy_(*this);
    return out;
}

bool Tensor::shares_storage(const Tensor& other) const {
    return defined() && other.defined() && impl().storage == other.impl().storage;
}

Tensor Tensor::detach() const {
    auto impl = detail::new_impl();
    const detail::TensorImpl& src = this->impl();
    impl->storage = src.storage;
    impl->offset = src.offset;
    impl->shape = src.shape;
    impl->strides = src.strides;
    impl->dtype = src.dtype;
    return Tensor(std::move(impl));
}

uint32_t Tensor::version() const { return impl().storage->version; }
void Tensor::bump_version() const { ++impl().storage->version; }

// ---------------------------------------------------------------- in-place updates

namespace {
// fill_, uniform_ and normal_ recorded as torch records them: the values before are gone, so the
// tensor's earlier history gets a zero gradient. (The arithmetic ones, add_ and the like, are in
// ops/elementwise.cpp.)
class OverwriteBackward final : public detail::OpNode {
public:
    const char* name_ = "FillBackward0";
    const char* name() const override { return name_; }
    void backward(const Tensor&) override { grad_to_add(0); }  // zero-filled when new
};

// copy_(src): the earlier history gets a zero gradient, src the gradient summed down to its shape.
class CopyBackward final : public detail::OpNode {
public:
    Shape src_shape;
    const char* name() const override { return "CopyBackwards"; }
    void backward(const Tensor& dout) override {
        grad_to_add(0);
        if (const detail::GradOut dsrc = grad_out(1)) detail::sum_to(dsrc, dout, src_shape);
    }
};

// Records the overwrite of t by `op` (and bumps its version): fill_, uniform_, normal_.
void record_overwrite(Tensor& t, const char* op) {
    if (auto* node = detail::record_inplace<OverwriteBackward>(t, {})) node->name_ = op;
}

// Calls f(element&) for every element of t, of type T.
template <class T, class F>
void for_each_element(const Tensor& t, F&& f) {
    T* base = static_cast<T*>(t.impl().storage->data);
    detail::for_each_offset(t.shape(), t.strides(), t.impl().offset, [&](int64_t o) { f(base[o]); });
}
}  // namespace

Tensor& Tensor::fill_(double value) {
    detail::check_inplace(*this, "fill_");
    detail::visit_dtype(dtype(), [&](auto v) {
        using T = decltype(v);
        const T x = detail::convert<T>(value);
        if (is_contiguous()) {
            std::fill_n(data_ptr<T>(), numel(), x);
        } else {
            for_each_element<T>(*this, [x](T& e) { e = x; });
        }
    });
    record_overwrite(*this, "FillBackward0");
    return *this;
}

Tensor& Tensor::copy_(const Tensor& src_in) {
    detail::check_inplace(*this, "copy_");
    NORMNET_CHECK(detail::broadcast_shapes(shape(), src_in.shape(), "copy_") == shape(), "copy_: output with shape ",
                  shape(), " doesn't match the broadcast shape ", detail::broadcast_shapes(shape(), src_in.shape(), "copy_"));
    NORMNET_CHECK(!(grad_mode_enabled() && src_in.requires_grad() && impl().is_view), "copy_: in-place updates of "
                  "a view with a tensor that requires grad are not supported (update a contiguous copy, or the tensor "
                  "itself)");
    // src broadcast to this tensor's shape (as torch); a source that overlaps it is read from a copy.
    Tensor src = src_in.shares_storage(*this) ? src_in.detach().clone() : src_in.detach();
    if (!(src.shape() == shape())) src = src.expand(shape());
    if (dtype() == src.dtype() && is_contiguous() && src.is_contiguous()) {
        std::memcpy(impl().bytes(), src.impl().bytes(), static_cast<size_t>(numel() * element_size(dtype())));
    } else {
        const detail::TensorImpl& s = src.impl();
        detail::TensorImpl& d = impl();
        detail::visit_dtype(d.dtype, [&](auto v) {
            using D = decltype(v);
            D* dst = static_cast<D*>(d.storage->data);
            detail::for_each_offset2(shape(), d.strides, d.offset, s.strides, s.offset,
                                     [&](int64_t a, int64_t b) { dst[a] = element<D>(s, b); });
        });
    }
    // Only float to float carries a gradient (an int64 or bool tensor never requires grad).
    const Tensor& differentiable = dtype() == kFloat32 && src_in.dtype() == kFloat32 ? src_in : Tensor();
    if (auto* node = detail::record_inplace<CopyBackward>(*this, {differentiable})) node->src_shape = src_in.shape();
    return *this;
}

Tensor& Tensor::uniform_(float low, float high, Generator& gen) {
    detail::check_inplace(*this, "uniform_");
    for_each_element<float>(*this, [&](float& e) { e = low + (high - low) * gen.uniform(); });
    record_overwrite(*this, "UniformBackward0");
    return *this;
}

Tensor& Tensor::normal_(float mean, float std, Generator& gen) {
    detail::check_inplace(*this, "normal_");
    for_each_element<float>(*this, [&](float& e) { e = static_cast<float>(mean + std * gen.normal()); });
    record_overwrite(*this, "NormalBackward0");
    return *this;
}

// ---------------------------------------------------------------- autograd accessors

bool Tensor::requires_grad() const { return defined() && impl().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
    NORMNET_CHECK(is_leaf() || on, "you can only change requires_grad flags of leaf variables");
    NORMNET_CHECK(!on || dtype() == kFloat32, "only Tensors of floating point dtype can require gradients (got ",
                  dtype(), ")");
    impl().requires_grad = on;
    return *this;
}

Tensor Tensor::grad() const { return Tensor(impl().grad); }

void Tensor::set_grad(const Tensor& g) const {
    if (g.defined()) {
        NORMNET_CHECK(g.shape() == shape() && g.dtype() == kFloat32, "assigned grad has shape ", g.shape(),
                      " and dtype ", g.dtype(), " but the tensor has shape ", shape());
    }
    impl().grad = g.impl_ptr();
}

std::shared_ptr<Node> Tensor::grad_fn() const { return impl().grad_fn; }
bool Tensor::is_leaf() const { return impl().grad_fn == nullptr; }

void Tensor::backward() const {
    NORMNET_CHECK(defined() && requires_grad(),
                  "element 0 of tensors does not require grad and does not have a grad_fn");
    NORMNET_CHECK(numel() == 1, "grad can be implicitly created only for scalar outputs (backward() of a tensor of "
                  "shape ", shape(), ")");
    detail::run_backward(*this, ones(shape()));
}

void Tensor::backward(const Tensor& gradient) const { detail::run_backward(*this, gradient); }

// ---------------------------------------------------------------- factories

Tensor empty(const Shape& shape, Dtype dtype) {
    int64_t numel = 1;
    for (int64_t s : shape) {
        NORMNET_CHECK(s >= 0, "negative dimension in shape ", shape);
        NORMNET_CHECK(s == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / s, "shape ", shape,
                      " is too large");
        numel *= s;
    }
    auto impl = detail::new_impl();
    impl->storage =
        std::allocate_shared<detail::Storage>(detail::PoolAllocator<detail::Storage>{}, numel * element_size(dtype));
    impl->shape = shape;
    impl->strides = detail::contiguous_strides(shape);
    impl->dtype = dtype;
    return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, double value, Dtype dtype) {
    Tensor t = empty(shape, dtype);
    detail::visit_dtype(dtype, [&](auto v) {
        using T = decltype(v);
        std::fill_n(t.data_ptr<T>(), t.numel(), detail::convert<T>(value));
    });
    return t;
}
Tensor zeros(const Shape& shape, Dtype dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, Dtype dtype) { return full(shape, 1.0, dtype); }

Tensor arange(int64_t end, Dtype dtype) { return arange(0.0, static_cast<double>(end), 1.0, dtype); }

Tensor arange(double start, double end, double step, Dtype dtype) {
    NORMNET_CHECK(step != 0.0, "arange: step must be nonzero");
    NORMNET_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), "arange: unsupported range: ",
                  start, " -> ", end, " (step ", step, ")");
    const double count = std::ceil((end - start) / step);
    NORMNET_CHECK(count < 9.0e15, "arange: ", count, " elements are too many");
    Tensor t = empty({count > 0 ? static_cast<int64_t>(count) : 0}, dtype);
    detail::visit_dtype(dtype, [&](auto v) {
        using T = decltype(v);
        T* p = t.data_ptr<T>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
    });
    return t;
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape) {
    NORMNET_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
                  " values do not fill shape ", shape, " (", shape.numel(), " elements)");
    Tensor t = empty(shape);
    std::copy(values.begin(), values.end(), t.data());
    return t;
}

Tensor from_vector(std::span<const int64_t> values, const Shape& shape) {
    NORMNET_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
                  " values do not fill shape ", shape, " (", shape.numel(), " elements)");
    Tensor t = empty(shape, kInt64);
    std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
    return t;
}

Tensor tensor(std::initializer_list<float> values, Dtype dtype) {
    return from_vector(std::vector<float>(values), {static_cast<int64_t>(values.size())}).to(dtype);
}

Tensor scalar_tensor(float value) { return full(Shape{}, value); }

Tensor rand(const Shape& shape, Generator& gen) { return empty(shape).uniform_(0.0f, 1.0f, gen); }
Tensor randn(const Shape& shape, Generator& gen) { return empty(shape).normal_(0.0f, 1.0f, gen); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype()); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    if (!(a.shape() == b.shape())) return false;
    const auto va = a.to_vector<double>();
    const auto vb = b.to_vector<double>();
    for (size_t i = 0; i < va.size(); ++i) {
        const double x = va[i], y = vb[i];
        if (std::isnan(x) || std::isnan(y) || std::abs(x - y) > atol + rtol * std::abs(y)) return false;
    }
    return true;
}

// ---------------------------------------------------------------- printing

namespace {

// Chooses one format for all printed values, as PyTorch's _Formatter does: integers print as
// "3.", moderate values with 4 decimals, and a wide range or tiny/huge values in scientific form.
// int64 tensors print their integers ("3"), bool tensors True/False.
struct Formatter {
    enum class Mode { integer, fixed, scientific, int64, boolean } mode = Mode::fixed;
    int width = 1;

    Formatter(const std::vector<double>& values, Dtype dtype) {
        if (dtype != kFloat32) {
            mode = dtype == kBool ? Mode::boolean : Mode::int64;
            for (double v : values) width = std::max(width, static_cast<int>(format(v).size()));
            return;
        }
        bool all_int = true;
        double max_abs = 0.0, min_abs = std::numeric_limits<double>::infinity();
        bool any_finite = false;
        for (double v : values) {
            if (!std::isfinite(v)) continue;
            any_finite = true;
            if (v != std::nearbyint(v)) all_int = false;
            const double a = std::abs(v);
            max_abs = std::max(max_abs, a);
            if (a > 0) min_abs = std::min(min_abs, a);
        }
        if (!any_finite) {
            mode = Mode::fixed;
        } else if (all_int) {
            mode = max_abs > 1e8 ? Mode::scientific : Mode::integer;
        } else if (min_abs < std::numeric_limits<double>::infinity() &&
                   (max_abs / min_abs > 1000.0 || max_abs > 1e8 || min_abs < 1e-4)) {
            mode = Mode::scientific;
        }
        for (double v : values) width = std::max(width, static_cast<int>(format(v).size()));
    }

    std::string format(double v) const {
        if (mode == Mode::boolean) return v != 0.0 ? "True" : "False";
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        char buf[64];
        switch (mode) {
            case Mode::integer: std::snprintf(buf, sizeof buf, "%.0f.", v); break;
            case Mode::fixed: std::snprintf(buf, sizeof buf, "%.4f", v); break;
            case Mode::scientific: std::snprintf(buf, sizeof buf, "%.4e", v); break;
            case Mode::int64: std::snprintf(buf, sizeof buf, "%.0f", v); break;
            case Mode::boolean: break;
        }
        return buf;
    }

    std::string padded(double v) const {
        std::string s = format(v);
        return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), ' ') + s;
    }
};

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

// Indices of dimension d that are printed: all, or the first and last kEdgeItems.
std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
    std::vector<int64_t> idx;
    if (summarize && size > 2 * kEdgeItems) {
        for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
        idx.push_back(-1);  // the "..." marker
        for (int64_t i = size - kEdgeItems; i < size; ++i) idx.push_back(i);
    } else {
        for (int64_t i = 0; i < size; ++i) idx.push_back(i);
    }
    return idx;
}

void collect_shown(const Tensor& t, bool summarize, std::vector<double>& out) {
    if (t.dim() == 0) {
        out.push_back(t.item<double>());
        return;
    }
    for (int64_t i : shown_indices(t.size(0), summarize)) {
        if (i >= 0) collect_shown(t.select(0, i), summarize, out);
    }
}

std::string tensor_body(const Tensor& t, const Formatter& f, int indent, bool summarize) {
    if (t.dim() == 1) {
        const int per_line = std::max(1, (kLineWidth - indent) / (f.width + 2));
        std::string s = "[";
        int on_line = 0;
        bool first = true;
        for (int64_t i : shown_indices(t.size(0), summarize)) {
            if (!first) {
                s += ",";
                if (on_line == per_line) {
                    s += "\n" + std::string(static_cast<size_t>(indent + 1), ' ');
                    on_line = 0;
                } else {
                    s += " ";
                }
            }
            first = false;
            s += i >= 0 ? f.padded(t.select(0, i).item<double>()) : std::string(" ...");
            ++on_line;
        }
        return s + "]";
    }
    const std::string sep = "," + std::string(static_cast<size_t>(t.dim() - 1), '\n') +
                            std::string(static_cast<size_t>(indent + 1), ' ');
    std::string s = "[";
    bool first = true;
    for (int64_t i : shown_indices(t.size(0), summarize)) {
        if (!first) s += sep;
        first = false;
        s += i >= 0 ? tensor_body(t.select(0, i), f, indent + 1, summarize) : std::string("...");
    }
    return s + "]";
}

}  // namespace

std::string Tensor::str() const {
    if (!defined()) return "tensor(undefined)";
    NoGradGuard no_grad;  // printing uses select(), which must not record anything
    const bool summarize = numel() > kSummarizeThreshold;
    std::string body;
    if (numel() == 0) {
        body = "[]";
    } else {
        std::vector<double> shown;
        collect_shown(*this, summarize, shown);
        Formatter f(shown, dtype());
        body = dim() == 0 ? f.format(item<double>()) : tensor_body(*this, f, 7, summarize);
    }
    std::string s = "tensor(" + body;
    if (numel() == 0 && dim() != 1) {
        const std::string dims = shape().str();
        s += ", size=(" + dims.substr(1, dims.size() - 2) + ")";
    }
    if (dtype() == kInt32) s += ", dtype=torch.int32";  // torch names every dtype but its defaults
    if (grad_fn()) {
        s += std::string(", grad_fn=<") + grad_fn()->name() + ">";
    } else if (requires_grad()) {
        s += ", requires_grad=True";
    }
    return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace normnet
