// Tensor basics: shapes, storage, the random generator, factories, in-place updates and
// PyTorch-style printing. Views (view, transpose, narrow, ...) live in ops/shape.cpp because
// they are differentiable.
#include "normnet/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <ostream>
#include <sstream>

#include "memory.hpp"
#include "normnet/autograd.hpp"
#include "strided.hpp"

namespace normnet {

// ---------------------------------------------------------------- Shape

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}
Shape::Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
Shape::Shape(std::span<const int64_t> dims) {
    check(dims.size() <= static_cast<size_t>(kMaxDims), "a tensor has at most ", kMaxDims, " dimensions, got ",
          dims.size());
    for (int64_t v : dims) push_back(v);
}

void Shape::push_back(int64_t v) {
    check(n_ < kMaxDims, "a tensor has at most ", kMaxDims, " dimensions");
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

bool operator==(const Shape& a, const Shape& b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

// ---------------------------------------------------------------- Storage

namespace detail {
Storage::Storage(int64_t n) : data(buffer_allocate(n)), numel(n) {}
Storage::~Storage() { buffer_deallocate(data, numel); }

namespace {
std::shared_ptr<TensorImpl> new_impl() { return std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>{}); }
}  // namespace
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
    check(n > 0, "Generator::below: n must be positive");
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
    check(impl_ != nullptr, "use of an undefined tensor");
    return *impl_;
}

int64_t Tensor::size(int d) const {
    const int n = dim();
    check(d >= -n && d < n, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1, "], but got ",
          d, ")");
    return shape()[d < 0 ? d + n : d];
}

bool Tensor::is_contiguous() const { return impl().strides == detail::contiguous_strides(shape()); }

float Tensor::item() const {
    check(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to a scalar (shape ",
          shape(), ")");
    return *data();
}

float Tensor::at(std::initializer_list<int64_t> index) const {
    check(static_cast<int>(index.size()) == dim(), "at: index of ", index.size(), " values for a tensor of shape ",
          shape());
    int64_t offset = impl().offset;
    int d = 0;
    for (int64_t i : index) {
        check(i >= 0 && i < shape()[d], "at: index ", i, " is out of bounds for dimension ", d, " with size ",
              shape()[d]);
        offset += i * strides()[d];
        ++d;
    }
    return impl().storage->data[offset];
}

std::vector<float> Tensor::to_vector() const {
    std::vector<float> out;
    out.reserve(static_cast<size_t>(numel()));
    const float* base = impl().storage->data;
    detail::for_each_offset(shape(), strides(), impl().offset, [&](int64_t o) { out.push_back(base[o]); });
    return out;
}

bool Tensor::shares_storage(const Tensor& other) const {
    return defined() && other.defined() && impl().storage == other.impl().storage;
}

Tensor Tensor::detach() const {
    auto impl = detail::new_impl();
    impl->storage = this->impl().storage;
    impl->offset = this->impl().offset;
    impl->shape = shape();
    impl->strides = strides();
    return Tensor(std::move(impl));
}

// ---------------------------------------------------------------- in-place updates

Tensor& Tensor::fill_(float value) {
    if (is_contiguous()) {
        std::fill_n(data(), numel(), value);
    } else {
        float* base = impl().storage->data;
        detail::for_each_offset(shape(), strides(), impl().offset, [&](int64_t o) { base[o] = value; });
    }
    return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
    check(src.numel() == numel(), "copy_: source of shape ", src.shape(), " does not fit a tensor of shape ",
          shape());
    if (is_contiguous() && src.is_contiguous()) {
        std::memmove(data(), src.data(), static_cast<size_t>(numel()) * sizeof(float));
        return *this;
    }
    check(src.shape() == shape(), "copy_: shapes ", src.shape(), " and ", shape(), " differ");
    float* dst = impl().storage->data;
    const float* s = src.impl().storage->data;
    detail::for_each_offset2(shape(), strides(), impl().offset, src.strides(), src.impl().offset,
                             [&](int64_t a, int64_t b) { dst[a] = s[b]; });
    return *this;
}

Tensor& Tensor::mul_(float factor) {
    float* base = impl().storage->data;
    detail::for_each_offset(shape(), strides(), impl().offset, [&](int64_t o) { base[o] *= factor; });
    return *this;
}

Tensor& Tensor::add_(const Tensor& other, float alpha) {
    check(other.numel() == numel(), "add_: a tensor of shape ", other.shape(),
          " cannot be added to one of shape ", shape());
    if (is_contiguous() && other.is_contiguous()) {
        float* d = data();
        const float* o = other.data();
        const int64_t n = numel();
        for (int64_t i = 0; i < n; ++i) d[i] += alpha * o[i];
        return *this;
    }
    check(other.shape() == shape(), "add_: shapes ", other.shape(), " and ", shape(), " differ");
    float* dst = impl().storage->data;
    const float* s = other.impl().storage->data;
    detail::for_each_offset2(shape(), strides(), impl().offset, other.strides(), other.impl().offset,
                             [&](int64_t a, int64_t b) { dst[a] += alpha * s[b]; });
    return *this;
}

Tensor& Tensor::uniform_(float low, float high, Generator& gen) {
    float* base = impl().storage->data;
    detail::for_each_offset(shape(), strides(), impl().offset,
                            [&](int64_t o) { base[o] = low + (high - low) * gen.uniform(); });
    return *this;
}

Tensor& Tensor::normal_(float mean, float std, Generator& gen) {
    float* base = impl().storage->data;
    detail::for_each_offset(shape(), strides(), impl().offset,
                            [&](int64_t o) { base[o] = static_cast<float>(mean + std * gen.normal()); });
    return *this;
}

// ---------------------------------------------------------------- autograd accessors

Tensor& Tensor::requires_grad_(bool on) {
    check(is_leaf() || on, "you can only change requires_grad flags of leaf variables");
    impl().requires_grad = on;
    return *this;
}

Tensor Tensor::grad() const { return Tensor(impl().grad); }

void Tensor::set_grad(const Tensor& g) const {
    if (g.defined()) {
        check(g.shape() == shape(), "assigned grad has shape ", g.shape(), " but the tensor has shape ",
              shape());
    }
    impl().grad = g.impl_ptr();
}

void Tensor::backward() const {
    check(defined() && requires_grad(),
          "backward: element 0 of tensors does not require grad and does not have a grad_fn");
    check(numel() == 1, "backward: grad can be implicitly created only for scalar outputs, got shape ",
          shape());
    autograd::run_backward(*this, ones(shape()));
}

void Tensor::backward(const Tensor& gradient) const { autograd::run_backward(*this, gradient); }

// ---------------------------------------------------------------- factories

Tensor empty(const Shape& shape) {
    for (int64_t s : shape) check(s >= 0, "negative dimension in shape ", shape);
    auto impl = detail::new_impl();
    impl->storage = std::allocate_shared<detail::Storage>(detail::PoolAllocator<detail::Storage>{}, shape.numel());
    impl->shape = shape;
    impl->strides = detail::contiguous_strides(shape);
    return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, float value) { return empty(shape).fill_(value); }
Tensor zeros(const Shape& shape) { return full(shape, 0.0f); }
Tensor ones(const Shape& shape) { return full(shape, 1.0f); }

Tensor arange(int64_t end) { return arange(0.0, static_cast<double>(end), 1.0); }

Tensor arange(double start, double end, double step) {
    check(step != 0.0, "arange: step must be nonzero");
    const double count = std::ceil((end - start) / step);
    Tensor t = empty({count > 0 ? static_cast<int64_t>(count) : 0});
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(start + static_cast<double>(i) * step);
    return t;
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape) {
    check(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
          " values do not fill shape ", shape.str(), " (", shape.numel(), " elements)");
    Tensor t = empty(shape);
    std::copy(values.begin(), values.end(), t.data());
    return t;
}

Tensor tensor(std::initializer_list<float> values) {
    return from_vector(std::vector<float>(values), {static_cast<int64_t>(values.size())});
}

Tensor scalar_tensor(float value) { return full(Shape{}, value); }

Tensor rand(const Shape& shape, Generator& gen) { return empty(shape).uniform_(0.0f, 1.0f, gen); }
Tensor randn(const Shape& shape, Generator& gen) { return empty(shape).normal_(0.0f, 1.0f, gen); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape()); }
Tensor empty_like(const Tensor& t) { return empty(t.shape()); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    if (!(a.shape() == b.shape())) return false;
    const auto va = a.to_vector();
    const auto vb = b.to_vector();
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
struct Formatter {
    enum class Mode { integer, fixed, scientific } mode = Mode::fixed;
    int width = 1;

    explicit Formatter(const std::vector<float>& values) {
        bool all_int = true;
        double max_abs = 0.0, min_abs = std::numeric_limits<double>::infinity();
        bool any_finite = false;
        for (float v : values) {
            if (!std::isfinite(v)) continue;
            any_finite = true;
            if (v != std::nearbyint(v)) all_int = false;
            const double a = std::abs(static_cast<double>(v));
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
        for (float v : values) width = std::max(width, static_cast<int>(format(v).size()));
    }

    std::string format(float v) const {
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        char buf[64];
        switch (mode) {
            case Mode::integer: std::snprintf(buf, sizeof buf, "%.0f.", static_cast<double>(v)); break;
            case Mode::fixed: std::snprintf(buf, sizeof buf, "%.4f", static_cast<double>(v)); break;
            case Mode::scientific: std::snprintf(buf, sizeof buf, "%.4e", static_cast<double>(v)); break;
        }
        return buf;
    }

    std::string padded(float v) const {
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

void collect_shown(const Tensor& t, bool summarize, std::vector<float>& out) {
    if (t.dim() == 0) {
        out.push_back(t.item());
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
            s += i >= 0 ? f.padded(t.at({i})) : std::string(" ...");
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
        std::vector<float> shown;
        collect_shown(*this, summarize, shown);
        Formatter f(shown);
        body = dim() == 0 ? f.format(item()) : tensor_body(*this, f, 7, summarize);
    }
    std::string s = "tensor(" + body;
    if (numel() == 0 && dim() != 1) {
        const std::string dims = shape().str();
        s += ", size=(" + dims.substr(1, dims.size() - 2) + ")";
    }
    if (grad_fn()) {
        s += std::string(", grad_fn=<") + grad_fn()->name() + ">";
    } else if (requires_grad()) {
        s += ", requires_grad=True";
    }
    return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace normnet
