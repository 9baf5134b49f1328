// Tensor: a float32, row-major, n-dimensional array with shared storage, views and autograd state.
// A Tensor is a handle (like torch::Tensor): copying it shares the data, clone() copies it.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "normnet/error.hpp"

namespace normnet {

/// Most dimensions a tensor can have; sizes live inline so shapes never touch the heap.
inline constexpr int kMaxDims = 8;

/// The sizes (or strides) of a tensor: up to kMaxDims int64 values, stored inline.
class Shape {
public:
    /// The shape of a zero-dimensional tensor: [].
    Shape() = default;
    /// Shape{4, 2, 3}; throws normnet::Error beyond kMaxDims dimensions (as the other constructors).
    Shape(std::initializer_list<int64_t> dims);
    Shape(const std::vector<int64_t>& dims);  // NOLINT: implicit, as IntArrayRef is in PyTorch
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
    friend bool operator==(const Shape& a, const Shape& b);

private:
    std::array<int64_t, kMaxDims> d_{};
    int n_ = 0;
};

/// Prints s.str().
std::ostream& operator<<(std::ostream& os, const Shape& s);

struct Node;
class Tensor;

namespace detail {
/// A float buffer from the caching allocator; views share one Storage.
struct Storage {
    explicit Storage(int64_t numel);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    float* data = nullptr;
    int64_t numel = 0;
};

struct TensorImpl {
    std::shared_ptr<Storage> storage;
    int64_t offset = 0;
    Shape shape;
    Shape strides;
    bool requires_grad = false;
    std::shared_ptr<TensorImpl> grad;        // accumulated gradient (leaves)
    std::shared_ptr<Node> grad_fn;           // the op that made this tensor (non-leaves)
    std::shared_ptr<Node> grad_accumulator;  // leaves: the node that receives their gradient
};
}  // namespace detail

/// A seeded random generator (xoshiro256**), reproducible across runs and machines given its seed.
class Generator {
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
Generator& default_generator();
/// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

/// A float32 n-dimensional array. Shape mistakes throw normnet::Error naming both shapes.
class Tensor {
public:
    /// An undefined tensor (defined() is false), as torch::Tensor().
    Tensor() = default;
    /// A handle on an existing implementation (used by the library; users call the factories).
    explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

    /// False for a default-constructed tensor (e.g. an absent bias).
    bool defined() const { return impl_ != nullptr; }
    /// The sizes; sizes() is the same, under torch's name.
    const Shape& shape() const { return impl().shape; }
    const Shape& sizes() const { return impl().shape; }
    /// Elements to skip per step along each dimension.
    const Shape& strides() const { return impl().strides; }
    /// Number of dimensions.
    int dim() const { return impl().shape.size(); }
    /// Size of dimension d; negative d counts from the end.
    int64_t size(int d) const;
    int64_t numel() const { return impl().shape.numel(); }
    /// True when the elements lie row-major without gaps, so data() can be walked linearly.
    bool is_contiguous() const;

    /// Pointer to the first element (respecting the view's offset).
    float* data() const { return impl().storage->data + impl().offset; }
    /// The value of a one-element tensor.
    float item() const;
    /// The element at a full index, e.g. t.at({1, 2}).
    float at(std::initializer_list<int64_t> index) const;
    /// The elements in row-major order.
    std::vector<float> to_vector() const;

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
    /// A new tensor with its own copy of the data (keeps the graph, like torch.clone).
    Tensor clone() const;
    /// Shares the data but not the graph: requires_grad false, no grad_fn.
    Tensor detach() const;
    /// True when both tensors view the same storage.
    bool shares_storage(const Tensor& other) const;

    // In-place updates, not recorded by autograd (initialisation, optimizers).
    Tensor& fill_(float value);
    /// fill_(0).
    Tensor& zero_() { return fill_(0.0f); }
    /// Copies src's values (same number of elements) into this tensor.
    Tensor& copy_(const Tensor& src);
    /// this *= factor.
    Tensor& mul_(float factor);
    /// this += alpha * other (same number of elements).
    Tensor& add_(const Tensor& other, float alpha = 1.0f);
    /// Fills with values uniform in [low, high).
    Tensor& uniform_(float low, float high, Generator& gen = default_generator());
    /// Fills with normal values of the given mean and standard deviation.
    Tensor& normal_(float mean, float std, Generator& gen = default_generator());

    // Autograd.
    bool requires_grad() const { return defined() && impl().requires_grad; }
    /// Marks a leaf tensor as needing gradients (like torch's requires_grad_).
    Tensor& requires_grad_(bool on = true);
    /// The gradient accumulated by backward(); undefined until the first backward.
    Tensor grad() const;
    /// Replaces the gradient (an undefined tensor clears it).
    void set_grad(const Tensor& g) const;
    /// The op node that produced this tensor, or null for leaves.
    const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
    /// True for tensors not produced by a recorded op (inputs, parameters).
    bool is_leaf() const { return impl().grad_fn == nullptr; }
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
    std::shared_ptr<detail::TensorImpl> impl_;
};

/// Prints t.str().
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Factories. All return contiguous tensors that do not require grad.
/// Uninitialised values (the buffer may hold anything).
Tensor empty(const Shape& shape);
/// All zeros.
Tensor zeros(const Shape& shape);
/// All ones.
Tensor ones(const Shape& shape);
/// Every element `value`.
Tensor full(const Shape& shape, float value);
/// 0, 1, ..., end - 1 as floats.
Tensor arange(int64_t end);
/// start, start + step, ... below end.
Tensor arange(double start, double end, double step = 1.0);
/// A tensor holding `values` with the given shape (their counts must agree).
Tensor from_vector(const std::vector<float>& values, const Shape& shape);
/// A 1-D tensor of the listed values, e.g. tensor({1, 2, 3}).
Tensor tensor(std::initializer_list<float> values);
/// A zero-dimensional tensor holding one value.
Tensor scalar_tensor(float value);
/// Uniform in [0, 1), as torch.rand.
Tensor rand(const Shape& shape, Generator& gen = default_generator());
/// Standard normal, as torch.randn.
Tensor randn(const Shape& shape, Generator& gen = default_generator());
/// zeros, ones or empty of t's shape.
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);

/// True when a and b have the same shape and all |a - b| <= atol + rtol * |b| (torch.allclose).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

/// Releases the blocks the caching allocator keeps for reuse (normnet keeps freed tensor
/// memory to make later allocations of the same size free, as PyTorch's caching allocators do).
void empty_cache();

}  // namespace normnet
