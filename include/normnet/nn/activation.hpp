// Activation layers (torch.nn.ReLU, GELU, Tanh, Sigmoid, SiLU, LeakyReLU, ELU, Softplus, Softmax,
// LogSoftmax, Hardtanh, ReLU6, SELU, Mish, Hardswish, PReLU): modules that apply one of the functional activations of ops.hpp, with options
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

/// Options of Hardtanh (torch.nn.Hardtanh).
struct HardtanhOptions {
    using Self = HardtanhOptions;
    NORMNET_ARG(double, min_val) = -1.0;
    NORMNET_ARG(double, max_val) = 1.0;
};

/// hardtanh(x, min_val, max_val), printed Hardtanh(min_val=-1.0, max_val=1.0).
class NORMNET_API Hardtanh : public Cloneable<Hardtanh> {
public:
    explicit Hardtanh(const HardtanhOptions& options = {});
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Hardtanh"; }
    std::string extra_repr() const override;
    const HardtanhOptions& options() const { return options_; }

private:
    HardtanhOptions options_;
};

/// relu6(x) = min(max(x, 0), 6).
class NORMNET_API ReLU6 : public Cloneable<ReLU6> {
public:
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "ReLU6"; }
};

/// selu(x): self-normalising ELU (Klambauer et al., 2017).
class NORMNET_API SELU : public Cloneable<SELU> {
public:
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "SELU"; }
};

/// mish(x) = x tanh(softplus(x)).
class NORMNET_API Mish : public Cloneable<Mish> {
public:
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Mish"; }
};

/// hardswish(x) = x relu6(x + 3) / 6.
class NORMNET_API Hardswish : public Cloneable<Hardswish> {
public:
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Hardswish"; }
};

/// Options of PReLU (torch.nn.PReLU): one learnt slope, or one per channel (num_parameters = C).
struct PReLUOptions {
    using Self = PReLUOptions;
    NORMNET_ARG(int64_t, num_parameters) = 1;
    NORMNET_ARG(double, init) = 0.25;  // the slopes' initial value
};

/// prelu(x, weight) with the learnt slopes `weight` [num_parameters], printed
/// PReLU(num_parameters=1).
class NORMNET_API PReLU : public Cloneable<PReLU> {
public:
    explicit PReLU(const PReLUOptions& options = {});
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "PReLU"; }
    std::string extra_repr() const override;
    /// Sets every slope to options().init.
    void reset_parameters();
    const PReLUOptions& options() const { return options_; }

    Tensor weight;

private:
    PReLUOptions options_;
};

}  // namespace normnet
