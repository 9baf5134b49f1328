// The BLAS matrix product against the naive reference on odd shapes, with every transpose.
#include "ops/gemm.hpp"
#include "reference_kernels.hpp"
#include "test_helpers.hpp"

using namespace normnet;

TEST_CASE("gemm: OpenBLAS matches the naive reference", "[gemm]") {
    struct Case {
        int64_t M, N, K;
    };
    const Case cases[] = {{1, 1, 1}, {7, 5, 13}, {128, 300, 784}, {3, 1, 17}, {1, 9, 2}};
    Generator gen(3);
    for (const auto& c : cases) {
        for (int trans = 0; trans < 4; ++trans) {
            const bool ta = trans & 1, tb = trans & 2;
            Tensor A = randn(ta ? Shape{c.K, c.M} : Shape{c.M, c.K}, gen);
            Tensor B = randn(tb ? Shape{c.N, c.K} : Shape{c.K, c.N}, gen);
            Tensor C0 = randn({c.M, c.N}, gen);
            Tensor fast = C0.clone(), slow = C0.clone();
            const int64_t lda = ta ? c.M : c.K, ldb = tb ? c.K : c.N;
            detail::gemm(ta, tb, c.M, c.N, c.K, 0.5f, A.data(), lda, B.data(), ldb, 1.0f, fast.data(), c.N);
            detail::gemm_naive(ta, tb, c.M, c.N, c.K, 0.5f, A.data(), lda, B.data(), ldb, 1.0f, slow.data(), c.N);
            INFO("M=" << c.M << " N=" << c.N << " K=" << c.K << " transA=" << ta << " transB=" << tb);
            test::require_close(fast, slow, 1e-4);
        }
    }
}

TEST_CASE("gemm: matmul and linear use it with PyTorch's layouts", "[gemm]") {
    Tensor a = from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
    CHECK(matmul(a, b).to_vector() == std::vector<float>{4, 5, 10, 11});
    Tensor w = from_vector({1, 0, 0, 0, 1, 0}, {2, 3});  // [out=2, in=3]: picks features 0 and 1
    CHECK(linear(a, w, tensor({10, 20})).to_vector() == std::vector<float>{11, 22, 14, 25});
    CHECK_THROWS_WITH(linear(a, ones({2, 4})), Catch::Contains("[2, 3]") && Catch::Contains("[2, 4]"));
}
