// Custom differentiable ops written by users, in the spirit of torch::autograd::Function:
// a class with a static forward(ctx, args...) and a static backward(ctx, grad_outputs), run by
// Function<Derived>::apply(args...), which records the autograd node. normnet's own ops are
// written with an internal recording helper (src/ops/op.hpp); this is the route for everyone else.
//
//   struct Square : normnet::Function<Square> {
//       static normnet::Tensor forward(normnet::AutogradContext* ctx, const normnet::Tensor& x) {
//           ctx->save_for_backward({x});
//           return x * x;
//       }
//       static normnet::tensor_list backward(normnet::AutogradContext* ctx, normnet::tensor_list grad_outputs) {
//           const normnet::Tensor x = ctx->get_saved_variables()[0];
//           return {grad_outputs[0] * x * 2.0f};
//       }
//   };
//   normnet::Tensor y = Square::apply(x);
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "normnet/autograd.hpp"
#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// A list of tensors, as torch::autograd::variable_list.
using tensor_list = std::vector<Tensor>;

/// Most Tensor arguments a Function's forward can take.
inline constexpr int kMaxFunctionInputs = 4;

/// A value in AutogradContext::saved_data, as libtorch's IValue: a double, an integer, a bool, a
/// string, a Tensor, or a list of integers (a Shape) or of doubles, read back with libtorch's
/// accessors (toDouble(), toInt(), ...; reading the wrong kind throws normnet::Error). It also
/// converts to double, as the plain doubles saved_data held before.
class IValue {
public:
    IValue() = default;
    template <class T>
        requires std::floating_point<T>
    IValue(T v) : value_(static_cast<double>(v)) {}  // NOLINT: implicit, as libtorch's
    template <class T>
        requires std::integral<T> && (!std::same_as<T, bool>)
    IValue(T v) : value_(static_cast<int64_t>(v)) {}  // NOLINT
    IValue(bool v) : value_(v) {}                                        // NOLINT
    IValue(std::string v) : value_(std::move(v)) {}                      // NOLINT
    IValue(const char* v) : value_(std::string(v)) {}                    // NOLINT
    IValue(Tensor v) : value_(std::move(v)) {}                           // NOLINT
    IValue(std::vector<int64_t> v) : value_(std::move(v)) {}             // NOLINT
    IValue(const Shape& v) : value_(v.vec()) {}                          // NOLINT
    IValue(std::vector<double> v) : value_(std::move(v)) {}              // NOLINT

    bool isNone() const { return value_.index() == 0; }
    bool isDouble() const { return std::holds_alternative<double>(value_); }
    bool isInt() const { return std::holds_alternative<int64_t>(value_); }
    bool isBool() const { return std::holds_alternative<bool>(value_); }
    bool isString() const { return std::holds_alternative<std::string>(value_); }
    bool isTensor() const { return std::holds_alternative<Tensor>(value_); }
    bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(value_); }
    bool isDoubleList() const { return std::holds_alternative<std::vector<double>>(value_); }

    /// A double (an integer converts, as Python's float() would).
    double toDouble() const { return isInt() ? static_cast<double>(std::get<int64_t>(value_)) : get<double>("a double"); }
    int64_t toInt() const { return get<int64_t>("an integer"); }
    bool toBool() const { return get<bool>("a bool"); }
    const std::string& toStringRef() const { return get<std::string>("a string"); }
    const Tensor& toTensor() const { return get<Tensor>("a Tensor"); }
    const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("a list of integers"); }
    const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>("a list of doubles"); }
    operator double() const { return toDouble(); }  // NOLINT: saved_data["beta"] read as a double

private:
    template <class T>
    const T& get(const char* wanted) const {
        static constexpr const char* kKinds[] = {"nothing", "a double", "an integer", "a bool", "a string",
                                                 "a Tensor", "a list of integers", "a list of doubles"};
        NORMNET_CHECK(std::holds_alternative<T>(value_), "saved_data: the value is ", kKinds[value_.index()], ", not ", wanted);
        return std::get<T>(value_);
    }
    std::variant<std::monostate, double, int64_t, bool, std::string, Tensor, std::vector<int64_t>, std::vector<double>> value_;
};

/// What a Function's forward hands to its backward (as torch::autograd::AutogradContext):
/// saved tensors, non-tensor values by name, and which inputs need a gradient.
class NORMNET_API AutogradContext {
public:
    /// Keeps tensors for backward (inputs, the output or intermediates). They are stored
    /// detached (their data is shared, not copied) and freed once backward has run.
    void save_for_backward(tensor_list tensors);
    /// The tensors given to save_for_backward, in the same order. Throws PyTorch's error when one
    /// was modified in place after it was saved.
    const tensor_list& get_saved_variables() const;
    /// True when forward argument `index` (0 = the first after ctx) is a tensor that needs a
    /// gradient; backward may skip computing the others (return an undefined Tensor for them).
    bool needs_input_grad(std::size_t index) const {
        return index < needs_input_grad_.size() && needs_input_grad_[index];
    }
    /// Values forward wants backward to see, e.g. ctx->saved_data["beta"] = beta; read back with
    /// ctx->saved_data["beta"].toDouble() (see IValue). A Tensor kept here is not checked for
    /// in-place changes: save tensors with save_for_backward.
    std::map<std::string, IValue> saved_data;
    /// Drops everything saved (called by the engine after backward).
    void release();
    /// Used by Function::apply: which forward arguments need a gradient.
    void set_needs_input_grad(std::vector<bool> flags) { needs_input_grad_ = std::move(flags); }

private:
    tensor_list saved_;
    std::vector<uint32_t> versions_;
    std::vector<bool> needs_input_grad_;
};

namespace autograd {

/// The backward of one application of a Function, as the engine calls it (made by Function::apply).
class NORMNET_API FunctionBackward {
public:
    virtual ~FunctionBackward();
    /// Derived::backward: one gradient per forward argument.
    virtual tensor_list backward(tensor_list grad_outputs) = 0;
    /// "SwishBackward" for struct Swish.
    virtual const char* name() const = 0;
    AutogradContext ctx;
    int num_args = 0;              // forward arguments after ctx
    std::vector<int> slot_of_arg;  // argument -> index among the Tensor inputs, or -1
};

/// Makes the result of a Function's forward (`out`, computed from `inputs`, its Tensor arguments
/// in order) an autograd output whose backward is fn. Returns a fresh handle on out's data.
NORMNET_API Tensor record_function(std::shared_ptr<FunctionBackward> fn, const Tensor& out,
                                   const tensor_list& inputs);

/// "Swish" for "normnet::demo::Swish" (namespaces stripped), from a typeid name.
NORMNET_API std::string function_name(const char* mangled);

}  // namespace autograd

/// Base of a user-defined differentiable op (CRTP, as torch::autograd::Function<T>). Derived
/// defines
///   static Tensor forward(AutogradContext* ctx, <args>...);
///   static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
/// forward may take Tensors (at most kMaxFunctionInputs; only arguments of type Tensor get
/// gradients) and any other values, and returns one Tensor. Its inputs may be views: call
/// contiguous() before walking data(). It runs with grad mode off, so normnet ops inside it
/// record nothing (nor do they in backward). backward receives grad_outputs[0], the gradient
/// of forward's output (contiguous, same shape; do not modify it), and returns one entry per
/// forward argument after ctx: the gradient of that argument (same shape), or an undefined
/// Tensor for non-tensor arguments and for inputs that need none. The engine writes the returned
/// gradients into the inputs' gradients (adding to what is already there).
template <class Derived>
struct Function {
    /// Runs Derived::forward on args and, when grad mode is on and a Tensor argument requires
    /// grad, records a node whose backward calls Derived::backward. Returns forward's result.
    template <class... Args>
    static Tensor apply(Args&&... args) {
        constexpr std::size_t num_tensors =
            (std::size_t{0} + ... + (std::is_same_v<std::remove_cvref_t<Args>, Tensor> ? 1 : 0));
        static_assert(num_tensors <= static_cast<std::size_t>(kMaxFunctionInputs),
                      "a Function takes at most kMaxFunctionInputs Tensor arguments");
        auto fn = std::make_shared<Backward>();
        // Copies of the Tensor arguments, taken before forward runs: forward may take its
        // Tensors by value and move from them.
        tensor_list inputs;
        std::vector<bool> needs;
        bool record = false;
        auto visit = [&](const auto& a) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Tensor>) {
                fn->slot_of_arg.push_back(static_cast<int>(inputs.size()));
                inputs.push_back(a);
                needs.push_back(grad_mode_enabled() && a.defined() && a.requires_grad());
                record = record || needs.back();
            } else {
                fn->slot_of_arg.push_back(-1);
                needs.push_back(false);
            }
        };
        (visit(args), ...);
        fn->num_args = static_cast<int>(sizeof...(Args));
        fn->ctx.set_needs_input_grad(std::move(needs));
        Tensor out;
        {
            NoGradGuard no_grad;
            out = Derived::forward(&fn->ctx, std::forward<Args>(args)...);
        }
        if (!record) return out;
        return autograd::record_function(std::move(fn), out, inputs);
    }

private:
    struct Backward final : autograd::FunctionBackward {
        tensor_list backward(tensor_list grad_outputs) override { return Derived::backward(&ctx, std::move(grad_outputs)); }
        const char* name() const override {
            static const std::string n = autograd::function_name(typeid(Derived).name()) + "Backward";
            return n.c_str();
        }
    };
};

}  // namespace normnet
