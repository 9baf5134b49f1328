// Random draws shaped by a tensor: bernoulli (torch.bernoulli, Tensor::bernoulli_). One uniform
// float draw per element from the given generator, in row-major order, so the values depend only
// on the generator's state, never on the thread count. Not differentiable (as torch's).
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace {

void check_probability(double p, const char* op) {
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, op, ": expected 0 <= p <= 1, got ", p);
}

}  // namespace

Tensor bernoulli(const Tensor& probabilities, Generator& gen) {
    NORMNET_CHECK(probabilities.dtype() == kFloat32, "bernoulli: expected float32 probabilities, got ",
                  probabilities.dtype());
    const auto p = probabilities.to_vector();
    for (float v : p) check_probability(v, "bernoulli");
    Tensor out = empty(probabilities.shape());
    float* o = out.data();
    for (size_t i = 0; i < p.size(); ++i) o[i] = gen.uniform() < p[i] ? 1.0f : 0.0f;
    return out;
}

Tensor bernoulli(const Tensor& x, double p, Generator& gen) {
    check_probability(p, "bernoulli");
    return empty(x.shape()).bernoulli_(p, gen);
}

Tensor& Tensor::bernoulli_(double p, Generator& gen) {
    check_probability(p, "bernoulli_");
    detail::check_inplace(*this, "bernoulli_");
    Tensor draws = empty(shape());
    float* d = draws.data();
    for (int64_t i = 0; i < numel(); ++i) d[i] = gen.uniform() < p ? 1.0f : 0.0f;
    NoGradGuard no_grad;
    copy_(draws);  // converts to this tensor's dtype and bumps its version
    return *this;
}

}  // namespace normnet
