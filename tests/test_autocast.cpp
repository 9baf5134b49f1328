// bfloat16 autocast (normnet/autocast.hpp): every product under the guard equals the float32
// product of its operands rounded to bfloat16 (so only the rounding of the operands differs from
// float32, never the sums), on odd shapes, transposes, row strides, alpha and beta, split
// between threads or not, with NaN; the guard restores; a CPU or build without bfloat16 is
// refused with its reason; a Linear layer's outputs and gradients stay within bfloat16's
// tolerance of float32's.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "normnet/autocast.hpp"
#include "normnet/normnet.hpp"
#include "ops/gemm.hpp"
#include "test_helpers.hpp"

using namespace normnet;

namespace {

// Round to nearest even, as oneDNN's and torch's float32 -> bfloat16 conversions do.
float to_bf16(float x) {
    if (std::isnan(x)) return x;
    uint32_t bits = 0;
    std::memcpy(&bits, &x, 4);
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&x, &bits, 4);
    return x;
}

// C = alpha * op(A) @ op(B) + beta * C in double, on the operands rounded to bfloat16.
void reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
               int64_t ldb, float beta, float* C, int64_t ldc) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double sum = 0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = ta ? A[k * lda + i] : A[i * lda + k], b = tb ? B[j * ldb + k] : B[k * ldb + j];
                sum += static_cast<double>(to_bf16(a)) * to_bf16(b);
            }
            float& c = C[i * ldc + j];
            c = static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : beta * static_cast<double>(c)));
        }
    }
}

#define REQUIRE_BF16()                                                          \
    do {                                                                        \
        if (const std::string why = bf16_unavailable_reason(); !why.empty()) { \
            NORMNET_SKIP(why);                                                  \
        }                                                                       \
    } while (false)

}  // namespace

TEST_CASE("autocast: a bf16 product is the float32 product of the operands rounded to bf16", "[autocast][gemm]") {
    REQUIRE_BF16();
    struct Case {
        int64_t M, N, K, pad;  // pad: extra row stride of every operand
        float alpha, beta;
        int threads;
    };
    const Case cases[] = {{1, 1, 1, 0, 1, 0, 1},       {7, 5, 13, 3, 0.5f, 1, 1},  {3, 1, 17, 0, 1, 0.5f, 1},
                          {1, 9, 2, 1, 2, 0, 1},        {128, 300, 784, 0, 1, 0, 2}, {300, 64, 100, 5, 1, 1, 2},
                          {40, 1000, 9, 0, 1, 1, 2}};
    const test::ThreadsGuard threads;
    Generator gen(11);
    for (const auto& c : cases) {
        set_num_threads(c.threads);
        for (int trans = 0; trans < 4; ++trans) {
            const bool ta = trans & 1, tb = trans & 2;
            const int64_t lda = (ta ? c.M : c.K) + c.pad, ldb = (tb ? c.K : c.N) + c.pad, ldc = c.N + c.pad;
            Tensor A = randn({ta ? c.K : c.M, lda}, gen), B = randn({tb ? c.N : c.K, ldb}, gen), C0 = randn({c.M, ldc}, gen);
            Tensor got = C0.clone(), want = C0.clone();
            {
                AutocastGuard bf16;
                detail::gemm(ta, tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, got.data(), ldc);
            }
            reference(ta, tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, want.data(), ldc);
            INFO("M=" << c.M << " N=" << c.N << " K=" << c.K << " transA=" << ta << " transB=" << tb << " pad=" << c.pad
                      << " alpha=" << c.alpha << " beta=" << c.beta << " threads=" << c.threads);
            // float32 sums of exact bf16 x bf16 products: only the summation rounds.
            test::require_close(got, want, 1e-5 * std::sqrt(static_cast<double>(c.K)));
        }
    }
}

TEST_CASE("autocast: NaN propagates, an empty sum gives beta * C, and the guard restores float32", "[autocast][gemm]") {
    REQUIRE_BF16();
    Tensor A = from_vector({1, NAN, 3, 4}, {2, 2}), B = from_vector({1, 0, 0, 1}, {2, 2}), C = zeros({2, 2});
    {
        AutocastGuard bf16;
        CHECK(matmul_precision() == MatmulPrecision::bfloat16);
        {
            AutocastGuard f32(MatmulPrecision::float32);
            CHECK(matmul_precision() == MatmulPrecision::float32);
        }
        CHECK(matmul_precision() == MatmulPrecision::bfloat16);
        detail::gemm(false, false, 2, 2, 2, 1.0f, A.data(), 2, B.data(), 2, 0.0f, C.data(), 2);
        Tensor D = full({2, 3}, 2.0f);
        detail::gemm(false, false, 2, 3, 0, 1.0f, A.data(), 2, B.data(), 3, 0.5f, D.data(), 3);
        CHECK(D.to_vector() == std::vector<float>(6, 1.0f));
    }
    CHECK(matmul_precision() == MatmulPrecision::float32);
    const std::vector<float> c = C.to_vector();
    CHECK(std::isnan(c[0]));
    CHECK(std::isnan(c[1]));
    CHECK(c[2] == 3.0f);
    CHECK(c[3] == 4.0f);
}

TEST_CASE("autocast: without AVX512_BF16 (or oneDNN) bf16 is refused with the reason", "[autocast]") {
    setenv("NORMNET_TEST_NO_BF16", "1", 1);
    const std::string why = bf16_unavailable_reason();
    CHECK_FALSE(why.empty());
    CHECK_THROWS_WITH(AutocastGuard(), Catch::Contains("bfloat16 matrix products: ") && Catch::Contains(why));
    CHECK(matmul_precision() == MatmulPrecision::float32);
    unsetenv("NORMNET_TEST_NO_BF16");
}

TEST_CASE("autocast: a Linear layer's output and gradients stay within bf16's tolerance of float32", "[autocast][nn]") {
    REQUIRE_BF16();
    Linear layer(256, 64);
    Generator gen(6);
    const Tensor x = randn({32, 256}, gen);
    const auto run = [&](MatmulPrecision p) {
        AutocastGuard guard(p);
        layer.zero_grad();
        Tensor input = x.clone().requires_grad_(true);
        Tensor y = layer.forward(input);
        y.square().sum().backward();
        return std::vector<Tensor>{y.detach(), input.grad(), layer.weight.grad().clone()};
    };
    const std::vector<Tensor> f32 = run(MatmulPrecision::float32), bf16 = run(MatmulPrecision::bfloat16);
    for (size_t i = 0; i < f32.size(); ++i) {
        INFO("output " << i << " (0: y, 1: dx, 2: dW)");
        // bf16 keeps 8 significant bits: each operand is off by up to 2^-9 of itself, so a sum
        // of K products by about 2^-8 of the sum of their magnitudes (the norms' scale here).
        const double scale = f32[i].abs().max().item();
        test::require_close(bf16[i], f32[i], 2e-2 * scale);
        CHECK_FALSE(test::bit_equal(bf16[i], f32[i]));  // the products really ran in bf16
    }
}

TEST_CASE("autocast: a seed-style MLP under bf16 agrees with torch.autocast's logits, loss and gradients",
          "[autocast][golden]") {
    REQUIRE_BF16();
    const SafetensorsData g = test::golden("autocast.safetensors");
    const auto at = [&](const std::string& name) { return g.at("mlp." + name); };
    std::vector<Tensor> w, b, gain, shift;
    for (int i = 0; i < 3; ++i) {
        w.push_back(at("w" + std::to_string(i)).clone().requires_grad_(true));
        b.push_back(at("b" + std::to_string(i)));
    }
    for (int i = 0; i < 2; ++i) {
        gain.push_back(at("g" + std::to_string(i)));
        shift.push_back(at("beta" + std::to_string(i)));
    }
    Tensor logits, loss;
    {
        AutocastGuard bf16;
        Tensor h = at("x");
        for (size_t i = 0; i < w.size(); ++i) {
            h = linear(h, w[i], b[i]);
            if (i < gain.size()) h = layer_norm(relu(h), {h.size(-1)}, gain[i], shift[i]);
        }
        logits = h;
        loss = cross_entropy(logits, at("y"));
        loss.backward();
    }
    // torch rounds every product's output to bfloat16 as well, normnet keeps it float32: the two
    // agree within bfloat16's precision, and each lies about as far from float32 as the other.
    const auto scale = [](const Tensor& t) { return static_cast<double>(t.abs().max().item()); };
    test::require_close(logits.detach(), at("logits"), 3e-2 * scale(at("logits")), "logits");
    test::require_close(loss.detach().reshape({1}), at("loss"), 1e-2, "loss");
    for (int i = 0; i < 3; ++i) {
        const Tensor torch_bf16 = at("dw" + std::to_string(i)), torch_f32 = at("f32_dw" + std::to_string(i));
        test::require_close(w[static_cast<size_t>(i)].grad(), torch_bf16, 5e-2 * scale(torch_bf16), "dw" + std::to_string(i));
        INFO("dw" << i);
        CHECK(test::worst_violation(w[static_cast<size_t>(i)].grad(), torch_f32, 5e-2 * scale(torch_f32)) == 0.0);
    }
}
