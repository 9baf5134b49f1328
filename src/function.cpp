// The engine side of normnet::Function (function.hpp): the node a Function records, which calls
// the user's backward and writes the returned gradients by the engine's one rule (a new buffer
// is written, an existing one added to), checking their number and shapes.
#include "normnet/function.hpp"

#include <cxxabi.h>

#include <cstdlib>

#include "ops/loop.hpp"
#include "ops/op.hpp"

namespace normnet {

void AutogradContext::save_for_backward(tensor_list tensors) {
    saved_.clear();
    versions_.clear();
    for (const Tensor& t : tensors) {
        saved_.push_back(t.defined() ? t.detach() : Tensor());
        versions_.push_back(t.defined() ? t.version() : 0);
    }
}

const tensor_list& AutogradContext::get_saved_variables() const {
    for (size_t i = 0; i < saved_.size(); ++i) {
        NORMNET_CHECK(!saved_[i].defined() || saved_[i].version() == versions_[i],
                      "one of the variables needed for gradient computation has been modified by an inplace "
                      "operation: saved tensor ", i, " of shape ", saved_[i].shape(), " is at version ",
                      saved_[i].version(), "; expected version ", versions_[i], " instead");
    }
    return saved_;
}

void AutogradContext::release() {
    saved_.clear();
    saved_.shrink_to_fit();
    versions_.clear();
    saved_data.clear();
}

namespace autograd {

FunctionBackward::~FunctionBackward() = default;

std::string function_name(const char* mangled) {
    std::string s = mangled;
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    if (status == 0 && demangled) s = demangled;
    std::free(demangled);
    const auto colon = s.rfind("::");
    return colon == std::string::npos ? s : s.substr(colon + 2);
}

namespace {

class FunctionNode final : public detail::OpNode {
public:
    std::shared_ptr<FunctionBackward> fn;
    std::array<Shape, kMaxFunctionInputs> input_shapes{};
    const char* name() const override { return fn->name(); }
    void backward(const Tensor& dout) override {
        const tensor_list grads = fn->backward(tensor_list{dout});
        const int num_args = fn->num_args;
        NORMNET_CHECK(static_cast<int>(grads.size()) == num_args, name(), ": backward returned ", grads.size(),
                      " gradients, expected ", num_args,
                      " (one per forward argument after ctx; an undefined Tensor for arguments without one)");
        for (int a = 0; a < num_args; ++a) {
            const Tensor& g = grads[static_cast<size_t>(a)];
            const int slot = fn->slot_of_arg[static_cast<size_t>(a)];
            if (slot < 0) {
                NORMNET_CHECK(!g.defined(), name(), ": backward returned a gradient for argument ", a,
                              ", which is not a Tensor; return an undefined Tensor there");
                continue;
            }
            if (!g.defined() || !needs_grad(slot)) continue;
            const Shape& expected = input_shapes[static_cast<size_t>(slot)];
            NORMNET_CHECK(g.shape() == expected && g.dtype() == kFloat32, name(),
                          ": backward returned a gradient of shape ", g.shape(), " and dtype ", g.dtype(),
                          " for argument ", a, " of shape ", expected);
            const detail::GradOut dx = grad_out(slot);
            dx.write([&]<class Store>(float* d) { detail::copy_strided<Store>(d, g); });
        }
        fn->ctx.release();
    }
};

}  // namespace

Tensor record_function(std::shared_ptr<FunctionBackward> fn, const Tensor& out_in, const tensor_list& inputs) {
    NORMNET_CHECK(out_in.defined(), fn->name(), ": forward returned an undefined Tensor");
    NORMNET_CHECK(inputs.size() <= static_cast<size_t>(kMaxFunctionInputs), fn->name(), ": at most ",
                  kMaxFunctionInputs, " Tensor arguments");
    // A fresh handle on the same data: forward may have returned an input or a tensor the caller
    // keeps, whose own autograd state must not change.
    Tensor out = out_in.detach();
    auto node = std::allocate_shared<FunctionNode>(detail::PoolAllocator<FunctionNode>{});
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].defined()) node->input_shapes[i] = inputs[i].shape();
    }
    node->fn = std::move(fn);
    detail::attach(node, out, std::span<const Tensor>(inputs), {});
    return out;
}

}  // namespace autograd
}  // namespace normnet
