// Tensor: an n-dimensional array (float32, int64 or bool), row-major, with shared storage, views
// and autograd state. A Tensor is a handle (like torch::Tensor): copying it shares the data,
// clone() copies it.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/export.hpp"

namespace normnet {

/// Most dimensions a tensor can have; sizes live inline so shapes never touch the heap.
inline constexpr int kMaxDims = 8;

/// The sizes (or strides) of a tensor: up to kMaxDims int64 values, stored inline.
class NORMNET_API Shape {
public:
    /// The shape of a zero-dimensional tensor: [].
    Shape() = default;
    /// Shape{4, 2, 3}; throws normnet::Error beyond kMaxDims dimensions (as the other constructors).
    Shape(std::initializer_list<int64_t> dims);
    Shape(const std::vector<int64_t>& dims);  // NOLINT: implicit, as IntArrayRef is in PyTorch
    /// One size, as libtorch's IntArrayRef takes one: x.sum(1), x.mean(0), x.view(-1), zeros(5).
    template <std::integral I>
        requires(!std::same_as<I, bool>)
    Shape(I size) : Shape{static_cast<int64_t>(size)} {}  // NOLINT: implicit on purpose
    /// From any contiguous range of sizes.
    explicit Shape(std::span<const int64_t> dims);

    /// Number of dimensions.
    int size() const { return n_; }
    /// True for the shape [] of a scalar.
    bool empty() const { return n_ == 0; }
    int64_t operator[](int i) const { return d_[static_cast<size_t>(i)]; }
    int64_t& operator[](int i) { return d_[static_cast<size_t>(i)]; }
    const int64_t* begin() const { return d_.data(); }
    const int64_t* end() const { return d_.data() + n_; }
    int64_t back() const { return d_[static_cast<size_t>(n_ - 1)]; }
    /// Appends a dimension.
    void push_back(int64_t v);
    /// Product of all sizes (1 for a scalar shape []).
    int64_t numel() const {
        int64_t n = 1;
        for (int i = 0; i < n_; ++i) n *= d_[static_cast<size_t>(i)];
        return n;
    }
    /// The sizes as a vector.
    std::vector<int64_t> vec() const { return {begin(), end()}; }
    /// "[4, 2, 3]", as PyTorch prints sizes in its messages.
    std::string str() const;
    /// Same number of dimensions and the same sizes.
    friend bool operator==(const Shape& a, const Shape& b) {
        if (a.n_ != b.n_) return false;
        for (int i = 0; i < a.n_; ++i) {
            if (a[i] != b[i]) return false;
        }
        return true;
    }

private:
    std::array<int64_t, kMaxDims> d_{};
    int n_ = 0;
};

/// Prints s.str().
NORMNET_API std::ostream& operator<<(std::ostream& os, const Shape& s);

/// The element types (torch.float32, torch.int64, torch.bool, torch.int32). Only float32 tensors
/// take part in autograd; int64 holds labels and indices, bool holds masks. int32 is a storage
/// type: it converts (to()), is made by the factories and randint, read by item<int>(), takes part
/// in integer arithmetic, comparisons, sums and the shape ops, and is saved as safetensors I32;
/// ops that need indices want int64 (convert with to(kInt64)).
enum class Dtype : uint8_t { float32, int64, bool8, int32 };
inline constexpr Dtype kFloat32 = Dtype::float32;
inline constexpr Dtype kFloat = Dtype::float32;
inline constexpr Dtype kInt64 = Dtype::int64;
inline constexpr Dtype kLong = Dtype::int64;
inline constexpr Dtype kBool = Dtype::bool8;
inline constexpr Dtype kInt32 = Dtype::int32;
inline constexpr Dtype kInt = Dtype::int32;
/// "float32", "int64", "bool", "int32", as PyTorch names them (without "torch.").
NORMNET_API const char* dtype_name(Dtype dtype);
/// Bytes per element: 4, 8, 1, 4.
NORMNET_API int64_t element_size(Dtype dtype);
/// Prints dtype_name(dtype).
NORMNET_API std::ostream& operator<<(std::ostream& os, Dtype dtype);

/// The C++ type of each dtype's elements.
template <class T>
inline constexpr Dtype dtype_of = T::unsupported_element_type;
template <>
inline constexpr Dtype dtype_of<float> = kFloat32;
template <>
inline constexpr Dtype dtype_of<int64_t> = kInt64;
template <>
inline constexpr Dtype dtype_of<bool> = kBool;
template <>
inline constexpr Dtype dtype_of<int32_t> = kInt32;

class Node;
class Tensor;

namespace detail {
struct TensorImpl;  // storage, view, dtype and autograd state of a tensor (src/tensor_impl.hpp)
}  // namespace detail

/// A seeded random generator (xoshiro256**), reproducible across runs and machines given its seed.
class NORMNET_API Generator {
public:
    /// A generator seeded with `seed`.
    explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
    /// Restarts the sequence from `seed`.
    void manual_seed(uint64_t seed);
    /// The next 64 random bits.
    uint64_t next_u64();
    /// Uniform in [0, 1) with 24 random bits, like a float32 draw.
    float uniform();
    /// Standard normal (Box-Muller in double precision).
    double normal();
    /// An integer uniform in [0, n).
    uint64_t below(uint64_t n);
    /// The full state, to save in checkpoints and restore for an exact resume.
    std::array<uint64_t, 4> state() const { return s_; }
    /// Restores a state returned by state().
    void set_state(const std::array<uint64_t, 4>& s) { s_ = s; }

private:
    std::array<uint64_t, 4> s_{};
};

/// The process-wide generator used by layer initialisation (as torch's default generator).
NORMNET_API Generator& default_generator();
/// Seeds the default generator (torch.manual_seed).
NORMNET_API void manual_seed(uint64_t seed);

/// An n-dimensional array. Shape and dtype mistakes throw normnet::Error naming both.
class NORMNET_API Tensor {
public:
    /// An undefined tensor (defined() is false), as torch::Tensor().
    Tensor() = default;
    /// A handle on an existing implementation (used by the library; users call the factories).
    explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

    /// False for a default-constructed tensor (e.g. an absent bias).
    bool defined() const { return impl_ != nullptr; }
    /// The sizes; sizes() is the same, under torch's name.
    const Shape& shape() const;
    const Shape& sizes() const { return shape(); }
    /// Elements to skip per step along each dimension.
    const Shape& strides() const;
    /// Number of dimensions.
    int dim() const { return shape().size(); }
    /// Size of dimension d; negative d counts from the end.
    int64_t size(int d) const;
    int64_t numel() const { return shape().numel(); }
    /// The element type.
    Dtype dtype() const;
    /// True for float32 tensors.
    bool is_floating_point() const { return dtype() == kFloat32; }
    /// True when the elements lie row-major without gaps, so data() can be walked linearly.
    bool is_contiguous() const;

    /// Pointer to the first float32 element (respecting the view's offset); throws for other dtypes.
    float* data() const { return data_ptr<float>(); }
    /// Pointer to the first element as T, which must match dtype() (float, int64_t, bool or int32_t).
    template <class T>
    T* data_ptr() const {
        return static_cast<T*>(typed_data(dtype_of<T>));
    }
    /// The value of a one-element tensor, converted to float.
    float item() const { return item<float>(); }
    /// The value of a one-element tensor converted to T: float, double, int64_t, int (int32_t) or
    /// bool, e.g. item<int64_t>() of an index.
    template <class T>
    T item() const;
    /// The element at a full index, e.g. t.at({1, 2}), converted to float.
    float at(std::initializer_list<int64_t> index) const;
    /// The elements in row-major order, converted to T.
    template <class T = float>
    std::vector<T> to_vector() const;
    /// A copy with another element type (this tensor itself when it already has it), as
    /// torch's Tensor::to(dtype); float -> int64 truncates toward zero, nonzero -> true.
    Tensor to(Dtype dtype) const;

    // Views and copies.
    /// Same data, new shape; one size may be -1. Requires a contiguous tensor.
    Tensor view(const Shape& shape) const;
    /// As view(), but copies when the tensor is not contiguous.
    Tensor reshape(const Shape& shape) const;
    /// This tensor if contiguous, else a contiguous copy (differentiable).
    Tensor contiguous() const;
    /// Flattens dims [start, end] into one (torch.flatten).
    Tensor flatten(int start_dim = 0, int end_dim = -1) const;
    /// Swaps two dimensions without copying.
    Tensor transpose(int dim0, int dim1) const;
    /// transpose(0, 1) of a 2-D tensor.
    Tensor t() const;
    /// The slice [start, start + length) of dimension dim, without copying.
    Tensor narrow(int dim, int64_t start, int64_t length) const;
    /// The sub-tensor at index of dimension dim, without copying (removes that dim).
    Tensor select(int dim, int64_t index) const;
    Tensor operator[](int64_t index) const { return select(0, index); }
    // More views and copies (src/ops/shape.cpp; torch's methods of the same names).
    /// Splits dimension dim into `sizes` (one may be -1), without copying.
    Tensor unflatten(int64_t dim, const Shape& sizes) const;
    /// The dimensions reordered: result dim i is this tensor's dim dims[i].
    Tensor permute(const Shape& dims) const;
    /// A size-1 dimension inserted at dim (negative: counted from the end of the result).
    Tensor unsqueeze(int64_t dim) const;
    /// Every size-1 dimension removed.
    Tensor squeeze() const;
    /// Dimension dim removed when its size is 1 (unchanged otherwise, as torch).
    Tensor squeeze(int64_t dim) const;
    /// A view repeating size-1 dimensions (and new leading ones) to `sizes`; -1 keeps a size.
    Tensor expand(const Shape& sizes) const;
    /// expand(other.shape()).
    Tensor expand_as(const Tensor& other) const;
    /// Elements start, start + step, ... below end of dimension dim (Python's x[start:end:step]).
    Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
                 int64_t step = 1) const;
    /// Views of split_size elements along dim (the last may be shorter).
    std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
    /// Views of the given sizes along dim (they must add up to its size).
    std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
    /// `chunks` views of equal size along dim (ceil(size / chunks); fewer when that covers it, and
    /// `chunks` empty views of an empty dim, as torch).
    std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
    /// The slices select(dim, i) for every i.
    std::vector<Tensor> unbind(int64_t dim = 0) const;
    /// A copy tiled repeats[d] times along each dim (more repeats than dims add leading dims).
    Tensor repeat(const Shape& repeats) const;
    /// A copy with the order of the elements reversed along each of dims (normnet::flip).
    Tensor flip(const Shape& dims) const;
    /// A copy with the elements above (tril) or below (triu) a diagonal of the last two dims zeroed.
    Tensor tril(int64_t diagonal = 0) const;
    Tensor triu(int64_t diagonal = 0) const;
    /// The matrix product by PyTorch's rules (src/ops/linear.cpp; see normnet::matmul).
    Tensor matmul(const Tensor& other) const;
    // Reductions (src/ops/reduce.cpp, minmax.cpp, sort.cpp; the functions of include/normnet/ops.hpp).
    Tensor sum() const;
    Tensor sum(const Shape& dims, bool keepdim = false) const;
    Tensor mean() const;
    Tensor mean(const Shape& dims, bool keepdim = false) const;
    Tensor var(const Shape& dims = {}, double correction = 1.0, bool keepdim = false) const;
    Tensor std(const Shape& dims = {}, double correction = 1.0, bool keepdim = false) const;
    template <class B, class = std::enable_if_t<std::is_same_v<B, bool>>>
    Tensor var(B unbiased) const { return var({}, unbiased ? 1.0 : 0.0); }
    template <class B, class = std::enable_if_t<std::is_same_v<B, bool>>>
    Tensor var(const Shape& dims, B unbiased, bool keepdim = false) const { return var(dims, unbiased ? 1.0 : 0.0, keepdim); }
    template <class B, class = std::enable_if_t<std::is_same_v<B, bool>>>
    Tensor std(B unbiased) const { return std({}, unbiased ? 1.0 : 0.0); }
    template <class B, class = std::enable_if_t<std::is_same_v<B, bool>>>
    Tensor std(const Shape& dims, B unbiased, bool keepdim = false) const { return std(dims, unbiased ? 1.0 : 0.0, keepdim); }
    Tensor logsumexp(const Shape& dims, bool keepdim = false) const;
    Tensor norm(double p = 2.0, const Shape& dims = {}, bool keepdim = false) const;
    Tensor cumsum(int64_t dim) const;
    Tensor amax(const Shape& dims = {}, bool keepdim = false) const;
    Tensor amin(const Shape& dims = {}, bool keepdim = false) const;
    Tensor max() const;
    Tensor min() const;
    /// (values, int64 indices) along dim: `auto [values, indices] = x.max(1);`.
    std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
    std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
    Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
    Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
    std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
    /// (values, int64 indices) sorted along dim (normnet::sort); the indices alone (argsort).
    std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
    Tensor argsort(int64_t dim = -1, bool descending = false) const;
    Tensor prod() const;
    Tensor prod(int64_t dim, bool keepdim = false) const;
    Tensor cumprod(int64_t dim) const;
    /// Whether every (all) or some (any) element is nonzero, overall or along dim: bool tensors.
    Tensor all() const;
    Tensor all(int64_t dim, bool keepdim = false) const;
    Tensor any() const;
    Tensor any(int64_t dim, bool keepdim = false) const;

    // Indexing by int64 index tensors (src/ops/index.cpp).
    /// The entries index[i] of dimension dim.
    Tensor index_select(int64_t dim, const Tensor& index) const;
    /// out[i][j] = self[index[i][j]][j] for dim 0 (and likewise for other dims); out has index's shape.
    Tensor gather(int64_t dim, const Tensor& index) const;
    /// A copy with src added at the positions index gives along dim (self[index[i][j]][j] += src[i][j]).
    Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
    /// A new tensor with its own copy of the data (keeps the graph, like torch.clone).
    Tensor clone() const;
    /// Shares the data but not the graph: requires_grad false, no grad_fn.
    Tensor detach() const;
    /// True when both tensors view the same storage.
    bool shares_storage(const Tensor& other) const;

    // In-place updates, recorded by autograd as torch records them: in grad mode they refuse a
    // leaf that requires grad (use NoGradGuard or detach() for initialisation), and each bumps the
    // storage's version counter, so a backward that needs the old values fails loudly. fill_,
    // zero_, uniform_ and normal_ give the tensor's earlier history a zero gradient.
    Tensor& fill_(double value);
    /// fill_(0).
    Tensor& zero_() { return fill_(0.0); }
    /// Copies src's values into this tensor: src broadcast to its shape, any dtype (converted;
    /// float to int64 truncates, NaN gives INT64_MIN, as torch). src's gradient is this tensor's.
    Tensor& copy_(const Tensor& src);
    /// Fills with values uniform in [low, high).
    Tensor& uniform_(float low, float high, Generator& gen = default_generator());
    /// Fills with normal values of the given mean and standard deviation.
    Tensor& normal_(float mean, float std, Generator& gen = default_generator());
    /// Fills with 1 with probability p, else 0 (src/ops/random.cpp; torch's bernoulli_(p)).
    Tensor& bernoulli_(double p = 0.5, Generator& gen = default_generator());
    /// The storage's version counter: how many in-place updates its data has seen (views share it).
    uint32_t version() const;
    /// Records an in-place update of the data done through data() (bumps the version counter).
    void bump_version() const;

    // Elementwise math as methods, as torch::Tensor's (src/ops/elementwise.cpp, unary.cpp,
    // activation.cpp, compare.cpp; the functions of ops.hpp document them).
    // In-place arithmetic (other broadcast to this tensor's shape), recorded by autograd as torch
    // records it: this tensor's grad_fn becomes the op's node, its version counter is bumped. As
    // torch, a leaf that requires grad is refused in grad mode (NoGradGuard for updates); so is
    // (a normnet limit) a view of a tensor that requires grad, or a view updated with one.
    /// this += alpha * other.
    Tensor& add_(const Tensor& other, float alpha = 1.0f);
    /// this -= alpha * other.
    Tensor& sub_(const Tensor& other, float alpha = 1.0f);
    /// this *= other.
    Tensor& mul_(const Tensor& other);
    /// this /= other.
    Tensor& div_(const Tensor& other);
    /// this += alpha * other, this -= alpha * other, this *= factor, this /= divisor.
    Tensor& add_(float other, float alpha = 1.0f);
    Tensor& sub_(float other, float alpha = 1.0f);
    Tensor& mul_(float factor);
    Tensor& div_(float divisor);
    Tensor& operator+=(const Tensor& other);
    Tensor& operator-=(const Tensor& other);
    Tensor& operator*=(const Tensor& other);
    Tensor& operator/=(const Tensor& other);
    Tensor& operator+=(float other);
    Tensor& operator-=(float other);
    Tensor& operator*=(float other);
    Tensor& operator/=(float other);
    /// Sets the elements where mask (bool, broadcast to this shape) is true to value.
    Tensor& masked_fill_(const Tensor& mask, double value);
    Tensor add(const Tensor& other, float alpha = 1.0f) const;
    Tensor add(float other, float alpha = 1.0f) const;
    Tensor sub(const Tensor& other, float alpha = 1.0f) const;
    Tensor sub(float other, float alpha = 1.0f) const;
    Tensor mul(const Tensor& other) const;
    Tensor mul(float other) const;
    Tensor div(const Tensor& other) const;
    Tensor div(float other) const;
    Tensor pow(const Tensor& exponent) const;
    Tensor pow(float exponent) const;
    Tensor maximum(const Tensor& other) const;
    Tensor minimum(const Tensor& other) const;
    Tensor neg() const;
    Tensor exp() const;
    Tensor expm1() const;
    Tensor log() const;
    Tensor log1p() const;
    Tensor sqrt() const;
    Tensor rsqrt() const;
    Tensor reciprocal() const;
    Tensor abs() const;
    Tensor square() const;
    Tensor sign() const;
    Tensor erf() const;
    Tensor clamp(std::optional<float> min = std::nullopt, std::optional<float> max = std::nullopt) const;
    Tensor clamp_min(float min) const;
    Tensor clamp_max(float max) const;
    Tensor relu() const;
    Tensor tanh() const;
    Tensor sigmoid() const;
    Tensor softmax(int dim) const;
    Tensor log_softmax(int dim) const;
    // Comparisons and selection: bool masks.
    Tensor eq(const Tensor& other) const;
    Tensor ne(const Tensor& other) const;
    Tensor lt(const Tensor& other) const;
    Tensor le(const Tensor& other) const;
    Tensor gt(const Tensor& other) const;
    Tensor ge(const Tensor& other) const;
    Tensor eq(double other) const;
    Tensor ne(double other) const;
    Tensor lt(double other) const;
    Tensor le(double other) const;
    Tensor gt(double other) const;
    Tensor ge(double other) const;
    Tensor isnan() const;
    Tensor isinf() const;
    Tensor isfinite() const;
    Tensor logical_not() const;
    Tensor logical_and(const Tensor& other) const;
    Tensor logical_or(const Tensor& other) const;
    Tensor logical_xor(const Tensor& other) const;
    /// where(condition, *this, other).
    Tensor where(const Tensor& condition, const Tensor& other) const;
    Tensor masked_fill(const Tensor& mask, double value) const;

    // Autograd.
    bool requires_grad() const;
    /// Marks a leaf tensor as needing gradients (like torch's requires_grad_); float32 only.
    Tensor& requires_grad_(bool on = true);
    /// The gradient accumulated by backward(); undefined until the first backward.
    Tensor grad() const;
    /// Replaces the gradient (an undefined tensor clears it).
    void set_grad(const Tensor& g) const;
    /// The op node that produced this tensor, or null for leaves.
    std::shared_ptr<Node> grad_fn() const;
    /// True for tensors not produced by a recorded op (inputs, parameters).
    bool is_leaf() const;
    /// Back-propagates from a one-element tensor (its gradient is 1).
    void backward() const;
    /// Back-propagates with `gradient` as this tensor's gradient (same shape).
    void backward(const Tensor& gradient) const;

    /// PyTorch-style text: tensor([[-1.2758,  1.1659]], grad_fn=<...>).
    std::string str() const;

    /// The shared implementation (for the library's kernels); throws normnet::Error when undefined.
    detail::TensorImpl& impl() const;
    /// The shared implementation pointer (null when undefined).
    const std::shared_ptr<detail::TensorImpl>& impl_ptr() const { return impl_; }

private:
    void* typed_data(Dtype expected) const;
    std::shared_ptr<detail::TensorImpl> impl_;
};

extern template NORMNET_API float Tensor::item<float>() const;
extern template NORMNET_API int64_t Tensor::item<int64_t>() const;
extern template NORMNET_API bool Tensor::item<bool>() const;
extern template NORMNET_API double Tensor::item<double>() const;
extern template NORMNET_API int32_t Tensor::item<int32_t>() const;
extern template NORMNET_API std::vector<float> Tensor::to_vector<float>() const;
extern template NORMNET_API std::vector<int64_t> Tensor::to_vector<int64_t>() const;
extern template NORMNET_API std::vector<bool> Tensor::to_vector<bool>() const;
extern template NORMNET_API std::vector<double> Tensor::to_vector<double>() const;
extern template NORMNET_API std::vector<int32_t> Tensor::to_vector<int32_t>() const;

/// Prints t.str().
NORMNET_API std::ostream& operator<<(std::ostream& os, const Tensor& t);

/// One (name, tensor) entry of NamedTensors: a std::pair (.first, .second, structured bindings)
/// that also answers libtorch's OrderedDict item calls key() and value().
struct NamedTensor : std::pair<std::string, Tensor> {
    using std::pair<std::string, Tensor>::pair;
    const std::string& key() const { return first; }
    Tensor& value() { return second; }
    const Tensor& value() const { return second; }
};

/// An ordered list of (name, tensor) pairs, as PyTorch's OrderedDict of tensors (a state_dict,
/// named_parameters()): a std::vector of NamedTensor in order, plus libtorch's lookups by name,
/// e.g. model.named_parameters()["0.weight"].
class NORMNET_API NamedTensors : public std::vector<NamedTensor> {
public:
    using std::vector<NamedTensor>::vector;
    using std::vector<NamedTensor>::operator[];
    /// The tensor named `key`; throws normnet::Error naming it when there is none (as OrderedDict).
    Tensor& operator[](const std::string& key);
    const Tensor& operator[](const std::string& key) const;
    /// The tensor named `key`, or null when there is none.
    Tensor* find(const std::string& key);
    const Tensor* find(const std::string& key) const;
    bool contains(const std::string& key) const { return find(key) != nullptr; }
    /// The names, and the tensors, in order.
    std::vector<std::string> keys() const;
    std::vector<Tensor> values() const;
};

/// Returns the tensor called `name` in `list`, or an undefined tensor.
NORMNET_API Tensor find_tensor(const NamedTensors& list, const std::string& name);

// Factories. All return contiguous tensors that do not require grad; dtype defaults to float32.
/// Uninitialised values (the buffer may hold anything).
NORMNET_API Tensor empty(const Shape& shape, Dtype dtype = kFloat32);
/// All zeros.
NORMNET_API Tensor zeros(const Shape& shape, Dtype dtype = kFloat32);
/// All ones.
NORMNET_API Tensor ones(const Shape& shape, Dtype dtype = kFloat32);
/// Every element `value`.
NORMNET_API Tensor full(const Shape& shape, double value, Dtype dtype = kFloat32);
/// 0, 1, ..., end - 1 (float32 unless dtype says otherwise; torch gives int64 here).
NORMNET_API Tensor arange(int64_t end, Dtype dtype = kFloat32);
/// start, start + step, ... below end.
NORMNET_API Tensor arange(double start, double end, double step = 1.0, Dtype dtype = kFloat32);
/// `steps` values from start to end inclusive, evenly spaced (torch.linspace); src/ops/factory.cpp.
NORMNET_API Tensor linspace(double start, double end, int64_t steps, Dtype dtype = kFloat32);
/// int64 values uniform in [low, high), as torch.randint.
NORMNET_API Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen = default_generator());
/// int64 values uniform in [0, high).
NORMNET_API Tensor randint(int64_t high, const Shape& shape, Generator& gen = default_generator());
/// The same values as the overloads above, stored as `dtype` (torch.randint(..., dtype=...)):
/// randint(0, 10, {3}, kInt32). The draws do not depend on the dtype.
NORMNET_API Tensor randint(int64_t low, int64_t high, const Shape& shape, Dtype dtype,
                           Generator& gen = default_generator());
NORMNET_API Tensor randint(int64_t high, const Shape& shape, Dtype dtype, Generator& gen = default_generator());
/// A random permutation of 0, ..., n - 1 (int64), as torch.randperm.
NORMNET_API Tensor randperm(int64_t n, Generator& gen = default_generator());
/// A float32 tensor holding `values` with the given shape (their counts must agree).
NORMNET_API Tensor from_vector(const std::vector<float>& values, const Shape& shape);
/// An int64 tensor holding `values` (e.g. a std::vector<int64_t> of class labels) with the given shape.
NORMNET_API Tensor from_vector(std::span<const int64_t> values, const Shape& shape);
/// A 1-D tensor of the listed values, e.g. tensor({1, 2, 3}) or tensor({3, 1, 4}, kInt64).
NORMNET_API Tensor tensor(std::initializer_list<float> values, Dtype dtype = kFloat32);
/// A zero-dimensional float32 tensor holding one value.
NORMNET_API Tensor scalar_tensor(float value);
/// Uniform in [0, 1), as torch.rand.
NORMNET_API Tensor rand(const Shape& shape, Generator& gen = default_generator());
/// Standard normal, as torch.randn.
NORMNET_API Tensor randn(const Shape& shape, Generator& gen = default_generator());
/// zeros, ones or empty of t's shape and dtype.
NORMNET_API Tensor zeros_like(const Tensor& t);
NORMNET_API Tensor ones_like(const Tensor& t);
NORMNET_API Tensor empty_like(const Tensor& t);

/// True when a and b have the same shape and all |a - b| <= atol + rtol * |b| (torch.allclose).
NORMNET_API bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

/// Releases the blocks the caching allocator keeps for reuse (normnet keeps freed tensor
/// memory to make later allocations of the same size free, as PyTorch's caching allocators do).
NORMNET_API void empty_cache();

}  // namespace normnet
