// Activation layers (torch.nn.ReLU, GELU, Tanh, Sigmoid, SiLU, LeakyReLU, ELU, Softplus, Softmax,
// LogSoftmax): modules that apply one of the functional activations of ops.hpp, with options
// structs holding PyTorch's defaults and PyTorch's printed form. (torch's `inplace` flags are left
// out: normnet's activations always return a new tensor.)
#pragma once

#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// max(x, 0) elementwise.
class NORMNET_API ReLU : public Cloneable<ReLU> {
public:
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "ReLU"; }
};

/// Options of GELU: approximate "none" (x Phi(x)) or "tanh" (the tanh approximation).
struct GELUOptions {
    using Self = GELUOptions;
    NORMNET_ARG(std::string, approximate) = "none";
};

/// gelu(x, approximate), printed GELU(approximate='none').
class NORMNET_API GELU : public Module {
public:
    explicit GELU(GELUOptions options = {});
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "GELU"; }
    std::string extra_repr() const override;
    const GELUOptions& options() const { return options_; }

private:
    GELUOptions options_;
};

/// tanh(x).
class NORMNET_API Tanh : public Module {
public:
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Tanh"; }
};

/// sigmoid(x).
class NORMNET_API Sigmoid : public Module {
public:
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Sigmoid"; }
};

/// silu(x) = x sigmoid(x).
class NORMNET_API SiLU : public Module {
public:
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "SiLU"; }
};

/// Options of LeakyReLU.
struct LeakyReLUOptions {
    using Self = LeakyReLUOptions;
    NORMNET_ARG(double, negative_slope) = 0.01;
};

/// leaky_relu(x, negative_slope), printed LeakyReLU(negative_slope=0.01).
class NORMNET_API LeakyReLU : public Module {
public:
    explicit LeakyReLU(LeakyReLUOptions options = {});
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "LeakyReLU"; }
    std::string extra_repr() const override;
    const LeakyReLUOptions& options() const { return options_; }

private:
    LeakyReLUOptions options_;
};

/// Options of ELU.
struct ELUOptions {
    using Self = ELUOptions;
    NORMNET_ARG(double, alpha) = 1.0;
};

/// elu(x, alpha), printed ELU(alpha=1.0).
class NORMNET_API ELU : public Module {
public:
    explicit ELU(ELUOptions options = {});
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "ELU"; }
    std::string extra_repr() const override;
    const ELUOptions& options() const { return options_; }

private:
    ELUOptions options_;
};

/// Options of Softplus.
struct SoftplusOptions {
    using Self = SoftplusOptions;
    NORMNET_ARG(double, beta) = 1.0;
    NORMNET_ARG(double, threshold) = 20.0;
};

/// softplus(x, beta, threshold), printed Softplus(beta=1, threshold=20) (PyTorch's defaults are
/// the ints 1 and 20; whole numbers print without ".0", as there).
class NORMNET_API Softplus : public Module {
public:
    explicit Softplus(SoftplusOptions options = {});
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Softplus"; }
    std::string extra_repr() const override;
    const SoftplusOptions& options() const { return options_; }

private:
    SoftplusOptions options_;
};

/// Options of Softmax and LogSoftmax: the dimension (required, as torch::nn::SoftmaxOptions).
struct SoftmaxOptions {
    using Self = SoftmaxOptions;
    NORMNET_ARG(int, dim) = -1;
};

/// softmax(x, dim), printed Softmax(dim=1).
class NORMNET_API Softmax : public Module {
public:
    explicit Softmax(SoftmaxOptions options);
    explicit Softmax(int dim) : Softmax(SoftmaxOptions{dim}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Softmax"; }
    std::string extra_repr() const override;
    const SoftmaxOptions& options() const { return options_; }

private:
    SoftmaxOptions options_;
};

/// log_softmax(x, dim), printed LogSoftmax(dim=1).
class NORMNET_API LogSoftmax : public Module {
public:
    explicit LogSoftmax(SoftmaxOptions options);
    explicit LogSoftmax(int dim) : LogSoftmax(SoftmaxOptions{dim}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "LogSoftmax"; }
    std::string extra_repr() const override;
    const SoftmaxOptions& options() const { return options_; }

private:
    SoftmaxOptions options_;
};

}  // namespace normnet
