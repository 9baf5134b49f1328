// Weight initialisation, as torch::nn::init: each function fills a tensor in place (also a
// parameter that requires grad: they run under no-grad, as torch's) and returns it. Fans, gains
// and bounds follow PyTorch's formulas; values come from normnet's seeded Generator
// (default_generator() unless one is given), so they are reproducible but not torch's numbers.
#pragma once

#include <cstdint>
#include <tuple>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// The nonlinearity a gain is computed for (torch::kReLU, ...).
enum class Nonlinearity : uint8_t {
    linear, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
    sigmoid, tanh, relu, leaky_relu, selu
};
inline constexpr Nonlinearity kLinear = Nonlinearity::linear;
inline constexpr Nonlinearity kConv1D = Nonlinearity::conv1d;
inline constexpr Nonlinearity kConv2D = Nonlinearity::conv2d;
inline constexpr Nonlinearity kConv3D = Nonlinearity::conv3d;
inline constexpr Nonlinearity kConvTranspose1D = Nonlinearity::conv_transpose1d;
inline constexpr Nonlinearity kConvTranspose2D = Nonlinearity::conv_transpose2d;
inline constexpr Nonlinearity kConvTranspose3D = Nonlinearity::conv_transpose3d;
inline constexpr Nonlinearity kSigmoid = Nonlinearity::sigmoid;
inline constexpr Nonlinearity kTanh = Nonlinearity::tanh;
inline constexpr Nonlinearity kReLU = Nonlinearity::relu;
inline constexpr Nonlinearity kLeakyReLU = Nonlinearity::leaky_relu;
inline constexpr Nonlinearity kSELU = Nonlinearity::selu;

/// Which fan the kaiming initialisations scale by (torch::kFanIn, torch::kFanOut): fan_in keeps
/// the variance of the forward activations, fan_out that of the backward gradients.
enum class FanMode : uint8_t { fan_in, fan_out };
inline constexpr FanMode kFanIn = FanMode::fan_in;
inline constexpr FanMode kFanOut = FanMode::fan_out;

namespace nn::init {

/// The recommended gain for a nonlinearity: 1 for linear, the convolutions and sigmoid; 5/3 for
/// tanh; sqrt(2) for relu; sqrt(2 / (1 + param^2)) for leaky_relu (param: its negative slope);
/// 3/4 for selu.
NORMNET_API double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
/// (fan_in, fan_out) of a weight of at least 2 dimensions [out, in, *receptive field]:
/// in * receptive field size and out * receptive field size.
NORMNET_API std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor);
/// fan_in or fan_out of tensor, as mode says.
NORMNET_API int64_t _calculate_correct_fan(const Tensor& tensor, FanMode mode);

/// Uniform in [low, high).
NORMNET_API Tensor uniform_(Tensor tensor, double low = 0.0, double high = 1.0, Generator& gen = default_generator());
/// Normal with the given mean and standard deviation.
NORMNET_API Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0, Generator& gen = default_generator());
/// Normal(mean, std) truncated to [a, b] (drawn by inverting the normal CDF, as PyTorch).
NORMNET_API Tensor trunc_normal_(Tensor tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                                 Generator& gen = default_generator());
/// Every element `value`.
NORMNET_API Tensor constant_(Tensor tensor, double value);
/// Every element 1.
NORMNET_API Tensor ones_(Tensor tensor);
/// Every element 0.
NORMNET_API Tensor zeros_(Tensor tensor);
/// The identity matrix (a 2-D tensor; ones on the diagonal of a non-square one).
NORMNET_API Tensor eye_(Tensor matrix);
/// Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
NORMNET_API Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, Generator& gen = default_generator());
/// Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
NORMNET_API Tensor xavier_normal_(Tensor tensor, double gain = 1.0, Generator& gen = default_generator());
/// He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
/// a). Linear's default is kaiming_uniform_(w, sqrt(5)), which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
NORMNET_API Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, FanMode mode = kFanIn,
                                    Nonlinearity nonlinearity = kLeakyReLU, Generator& gen = default_generator());
/// He normal: N(0, std^2) with std = gain / sqrt(fan).
NORMNET_API Tensor kaiming_normal_(Tensor tensor, double a = 0.0, FanMode mode = kFanIn,
                                   Nonlinearity nonlinearity = kLeakyReLU, Generator& gen = default_generator());
/// A (semi-)orthogonal matrix times gain: tensor seen as [size(0), numel / size(0)] gets the Q of
/// the QR decomposition of a standard normal matrix, signs fixed so R's diagonal is positive (so Q
/// is uniformly distributed), as PyTorch; at least 2 dimensions.
NORMNET_API Tensor orthogonal_(Tensor tensor, double gain = 1.0, Generator& gen = default_generator());

}  // namespace nn::init
}  // namespace normnet
