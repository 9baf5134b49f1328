// matmul by PyTorch's rules (1-D, 2-D, batched and broadcast operands; transposed and narrowed
// views read in place) against PyTorch (tests/golden/gen_matmul.py) and against the naive
// reference of tests/reference_kernels.hpp; gradcheck; mm, bmm; the error messages.
#include "op_test_helpers.hpp"
#include "reference_kernels.hpp"

using namespace normnet;
using test::Inputs;
using test::input;
using test::require_gradcheck;
using test::require_close;

TEST_CASE("matmul matches PyTorch for 1-D, 2-D, batched and broadcast operands", "[ops][matmul]") {
    const SafetensorsData g = test::golden("matmul.safetensors");
    for (const char* name : {"dot", "mv", "vm", "mm", "mm_tt", "mm_narrow", "mv_t", "bmm", "bmm_t", "batched_mat",
                             "batched_mat_t", "mat_batched", "vec_batched", "batched_vec", "broadcast", "broadcast_both",
                             "empty_rows", "empty_k", "empty_batch", "empty_broadcast", "bigger"}) {
        test::run_golden_case(g, name, {"a", "b"}, [](Inputs& in) { return matmul(in["a"], in["b"]); });
    }
    test::run_golden_case(g, "mm", {"a", "b"}, [](Inputs& in) { return mm(in["a"], in["b"]); });
    test::run_golden_case(g, "bmm_t", {"a", "b"}, [](Inputs& in) { return bmm(in["a"], in["b"]); });
    test::run_golden_case(g, "batched_vec", {"a", "b"}, [](Inputs& in) { return in["a"].matmul(in["b"]); });
}

TEST_CASE("matmul agrees with the naive reference on every layout, threads 1 and 2", "[ops][matmul]") {
    const test::ThreadsGuard threads;
    for (int t : {1, 2}) {
        set_num_threads(t);
        // Many small products (split between threads), a few large ones (each split by sgemm).
        for (const auto& [B, M, K, N] : {std::array<int64_t, 4>{64, 5, 7, 3}, {3, 70, 90, 80}, {1, 129, 3, 2}}) {
            INFO("B " << B << " M " << M << " K " << K << " N " << N << " threads " << t);
            const Tensor a = randn({B, M, K}), b = randn({B, K, N});
            const Tensor bt = b.transpose(1, 2).contiguous().transpose(1, 2);  // the same values, column-major
            const Tensor y = matmul(a, bt);
            for (int64_t i = 0; i < B; ++i) {
                const Tensor ai = a.select(0, i).contiguous(), bi = b.select(0, i).contiguous();
                std::vector<float> ref(static_cast<size_t>(M * N));
                detail::gemm_naive(false, false, M, N, K, 1.0f, ai.data(), K, bi.data(), N, 0.0f, ref.data(), N);
                require_close(y.select(0, i).contiguous(), from_vector(ref, {M, N}), 1e-5, "batch element");
            }
        }
    }
}

TEST_CASE("matmul passes gradcheck, broadcast batch dims included", "[ops][matmul][gradcheck]") {
    require_gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {input({2, 1, 3, 4}, 1), input({3, 4, 2}, 2)});
    require_gradcheck([](auto& in) { return matmul(in[0].transpose(1, 2), in[1]); }, {input({2, 4, 3}, 3), input({4, 5}, 4)});
    require_gradcheck([](auto& in) { return matmul(in[0], in[1].t()); }, {input({4}, 5), input({3, 4}, 6)});
    require_gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {input({4}, 7), input({4}, 8)});
    require_gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {input({2, 3, 4}, 9), input({4, 2}, 10)});
    require_gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {input({3, 4}, 11), input({2, 4, 2}, 12)});
}

TEST_CASE("matmul reads transposed views in place and records torch's node names", "[ops][matmul]") {
    const Tensor w = randn({5, 4}).requires_grad_();
    const Tensor x = randn({3, 4}).requires_grad_();
    // x @ w.t() reads w column-major: the only node is the product itself, behind the transpose.
    const Tensor y = matmul(x, w.t());
    CHECK(std::string(y.grad_fn()->name()) == "MmBackward0");
    CHECK(std::string(matmul(x.select(0, 0), w.t()).grad_fn()->name()) == "MatmulBackward0");
    CHECK(std::string(matmul(w, x.select(0, 1)).grad_fn()->name()) == "MvBackward0");
    CHECK(std::string(matmul(x.select(0, 0), x.select(0, 1)).grad_fn()->name()) == "DotBackward0");
    CHECK(std::string(bmm(x.unsqueeze(0), w.t().unsqueeze(0)).grad_fn()->name()) == "BmmBackward0");
}

TEST_CASE("matmul, mm and bmm reject bad shapes with clear messages", "[ops][matmul]") {
    CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                      Catch::Contains("matmul: shapes [2, 3] and [4, 5] cannot be multiplied (2x3 and 4x5)"));
    CHECK_THROWS_WITH(matmul(zeros({3}), zeros({4})), Catch::Contains("matmul: shapes [3] and [4] cannot be multiplied"));
    CHECK_THROWS_WITH(matmul(scalar_tensor(1), zeros({4})),
                      Catch::Contains("matmul: both arguments need to be at least 1D, but they are 0D and 1D"));
    CHECK_THROWS_WITH(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})), Catch::Contains("matmul: the size of tensor a (2) must "
                                                                                  "match the size of tensor b (3)"));
    CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({3}, kInt64)), Catch::Contains("matmul: expected other of dtype float32"));
    CHECK_THROWS_WITH(mm(zeros({2, 3, 4}), zeros({4, 5})), Catch::Contains("mm: expected 2-D tensors"));
    CHECK_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})), Catch::Contains("bmm: batch sizes differ"));
}
