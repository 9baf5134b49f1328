// Weight initialisation (torch.nn.init): PyTorch's fans, gains and bounds; draws from normnet's
// Generator. Every function writes under NoGradGuard, so it also initialises parameters.
#include "normnet/nn/init.hpp"

#include <cmath>
#include <numbers>
#include <vector>

#include "normnet/autograd.hpp"

namespace normnet::nn::init {

namespace {

void check_float(const Tensor& tensor, const char* op) {
    NORMNET_CHECK(tensor.dtype() == kFloat32, op, ": expected a float32 tensor, got ", tensor.dtype());
}

// Uniform in [0, 1) with 53 random bits.
double uniform01(Generator& gen) { return static_cast<double>(gen.next_u64() >> 11) * 0x1.0p-53; }

double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)); }

// The inverse of erf on (-1, 1): Giles' approximation ("Approximating the erfinv function", 2010),
// refined by two Newton steps to double precision.
double erfinv(double y) {
    if (y <= -1.0) return -INFINITY;
    if (y >= 1.0) return INFINITY;
    double w = -std::log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08;
        for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                         -0.00417768164, 0.246640727, 1.50140941}) {
            x = c + x * w;
        }
    } else {
        w = std::sqrt(w) - 3.0;
        x = -0.000200214257;
        for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                         1.00167406, 2.83297682}) {
            x = c + x * w;
        }
    }
    x *= y;
    for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
    return x;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
    switch (nonlinearity) {
        case Nonlinearity::tanh: return 5.0 / 3.0;
        case Nonlinearity::relu: return std::sqrt(2.0);
        case Nonlinearity::leaky_relu: return std::sqrt(2.0 / (1.0 + param * param));
        case Nonlinearity::selu: return 3.0 / 4.0;
        default: return 1.0;  // linear, the convolutions, sigmoid
    }
}

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
    NORMNET_CHECK(tensor.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got ",
                  tensor.shape(), ")");
    int64_t receptive_field = 1;
    for (int d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
    return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

int64_t _calculate_correct_fan(const Tensor& tensor, FanMode mode) {
    const auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
    return mode == FanMode::fan_in ? fan_in : fan_out;
}

Tensor uniform_(Tensor tensor, double low, double high, Generator& gen) {
    check_float(tensor, "uniform_");
    NoGradGuard no_grad;
    tensor.uniform_(static_cast<float>(low), static_cast<float>(high), gen);
    return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std, Generator& gen) {
    check_float(tensor, "normal_");
    NoGradGuard no_grad;
    tensor.normal_(static_cast<float>(mean), static_cast<float>(std), gen);
    return tensor;
}

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b, Generator& gen) {
    check_float(tensor, "trunc_normal_");
    NORMNET_CHECK(std > 0.0 && a < b, "trunc_normal_: expected std > 0 and a < b, got std ", std, ", a ", a, ", b ", b);
    // PyTorch's method: uniform between the CDF values of a and b, mapped back through the
    // inverse CDF (erfinv), then clamped against rounding at the ends.
    const double lo = 2.0 * normal_cdf((a - mean) / std) - 1.0, hi = 2.0 * normal_cdf((b - mean) / std) - 1.0;
    Tensor values = empty(tensor.shape());
    float* v = values.data();
    for (int64_t i = 0; i < values.numel(); ++i) {
        const double x = mean + std * std::numbers::sqrt2 * erfinv(lo + (hi - lo) * uniform01(gen));
        v[i] = static_cast<float>(std::min(std::max(x, a), b));
    }
    NoGradGuard no_grad;
    tensor.copy_(values);
    return tensor;
}

Tensor constant_(Tensor tensor, double value) {
    NoGradGuard no_grad;
    tensor.fill_(value);
    return tensor;
}

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1.0); }
Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0.0); }

Tensor eye_(Tensor matrix) {
    NORMNET_CHECK(matrix.dim() == 2, "eye_: only 2-D tensors are supported, got ", matrix.shape());
    Tensor values = zeros(matrix.shape(), matrix.dtype());
    const int64_t rows = matrix.size(0), cols = matrix.size(1);
    for (int64_t i = 0; i < std::min(rows, cols); ++i) {
        if (values.dtype() == kFloat32) {
            values.data()[i * cols + i] = 1.0f;
        } else {
            values.select(0, i).select(0, i).fill_(1.0);
        }
    }
    NoGradGuard no_grad;
    matrix.copy_(values);
    return matrix;
}

Tensor xavier_uniform_(Tensor tensor, double gain, Generator& gen) {
    const auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    const double bound = std::sqrt(3.0) * std;
    return uniform_(std::move(tensor), -bound, bound, gen);
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator& gen) {
    const auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    return normal_(std::move(tensor), 0.0, std, gen);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator& gen) {
    if (tensor.numel() == 0) return tensor;  // as PyTorch: a no-op on zero-element tensors
    const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(_calculate_correct_fan(tensor, mode)));
    const double bound = std::sqrt(3.0) * std;
    return uniform_(std::move(tensor), -bound, bound, gen);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator& gen) {
    if (tensor.numel() == 0) return tensor;
    const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(_calculate_correct_fan(tensor, mode)));
    return normal_(std::move(tensor), 0.0, std, gen);
}

Tensor orthogonal_(Tensor tensor, double gain, Generator& gen) {
    check_float(tensor, "orthogonal_");
    NORMNET_CHECK(tensor.dim() >= 2, "orthogonal_: only tensors with 2 or more dimensions are supported, got ",
                  tensor.shape());
    if (tensor.numel() == 0) return tensor;
    const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
    // The n = min(rows, cols) columns, each of length m = max(rows, cols), of the matrix to
    // decompose: the normal matrix [rows, cols], transposed when it is wide (as PyTorch).
    const int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    std::vector<double> normal(static_cast<size_t>(rows * cols));
    for (double& v : normal) v = gen.normal();
    std::vector<double> q(static_cast<size_t>(m * n));  // column j at q[j * m]
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
            q[static_cast<size_t>(j * m + i)] = rows >= cols ? normal[static_cast<size_t>(i * cols + j)]
                                                             : normal[static_cast<size_t>(j * cols + i)];
        }
    }
    // Modified Gram-Schmidt, each column orthogonalised twice ("twice is enough") in double: Q
    // of A = QR with R's diagonal positive, the sign convention PyTorch imposes after its QR.
    for (int64_t j = 0; j < n; ++j) {
        double* v = q.data() + j * m;
        for (int pass = 0; pass < 2; ++pass) {
            for (int64_t k = 0; k < j; ++k) {
                const double* u = q.data() + k * m;
                double r = 0.0;
                for (int64_t i = 0; i < m; ++i) r += u[i] * v[i];
                for (int64_t i = 0; i < m; ++i) v[i] -= r * u[i];
            }
        }
        double norm = 0.0;
        for (int64_t i = 0; i < m; ++i) norm += v[i] * v[i];
        norm = std::sqrt(norm);
        for (int64_t i = 0; i < m; ++i) v[i] /= norm;
    }
    Tensor values = empty({rows, cols});
    float* out = values.data();
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            const double e = rows >= cols ? q[static_cast<size_t>(c * m + r)] : q[static_cast<size_t>(r * m + c)];
            out[r * cols + c] = static_cast<float>(gain * e);
        }
    }
    NoGradGuard no_grad;
    tensor.copy_(values.view(tensor.shape()));  // [rows, cols] is the tensor flattened after dim 0
    return tensor;
}

}  // namespace normnet::nn::init
