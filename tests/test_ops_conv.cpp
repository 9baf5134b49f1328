// The convolutional op family against PyTorch and against naive references: conv2d (goldens over
// a grid of settings, the direct-loop reference on random shapes, gradcheck, error messages,
// views and empty sizes), max/avg/adaptive pooling, group_norm and instance_norm, and batch_norm
// on [N, C, H, W] input (its plane kernels: goldens, stability, thread independence).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/op.hpp"
#include "reference_kernels.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using test::leaf;
using test::require_close;

namespace {

// "h,w" (a golden's metadata) as a Size2; "" as not given.
Size2 size2_of(const std::string& s) {
    if (s.empty()) return {};
    const auto comma = s.find(',');
    return {std::stoll(s.substr(0, comma)), std::stoll(s.substr(comma + 1))};
}

Conv2dPadding padding_of(const std::string& s) {
    if (s == "same" || s == "valid") return Conv2dPadding(s);
    return size2_of(s);
}

// The case names of a golden file: the prefixes of the metadata keys ending in `.key`.
std::vector<std::string> cases_with(const SafetensorsData& g, const std::string& key) {
    std::vector<std::string> names;
    for (const auto& [k, v] : g.metadata) {
        if (k.size() > key.size() + 1 && k.ends_with("." + key)) names.push_back(k.substr(0, k.size() - key.size() - 1));
    }
    return names;
}

bool has(const SafetensorsData& g, const std::string& name) { return find_tensor(g.tensors, name).defined(); }

// Runs fn(x [, weight, bias]) on a golden case's leaves and compares y and every gradient.
void check_case(const SafetensorsData& g, const std::string& c,
                const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& fn) {
    INFO("case " << c);
    Tensor x = leaf(g.at(c + ".x"));
    Tensor w = has(g, c + ".weight") ? leaf(g.at(c + ".weight")) : Tensor();
    Tensor b = has(g, c + ".bias") ? leaf(g.at(c + ".bias")) : Tensor();
    Tensor y = fn(x, w, b);
    require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
    y.backward(g.at(c + ".dy"));
    require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
    if (w.defined()) require_close(w.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
    if (b.defined()) require_close(b.grad(), g.at(c + ".dbias"), 1e-5, c + ".dbias");
}

// A random tensor whose values are distinct and at least 0.05 apart (max pooling's gradient is
// then stable under gradcheck's finite differences).
Tensor spaced(const Shape& shape, uint64_t seed) {
    const int64_t n = shape.numel();
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.05f * static_cast<float>(i) - 0.025f * static_cast<float>(n);
    Generator gen(seed);
    for (int64_t i = n - 1; i > 0; --i) std::swap(v[static_cast<size_t>(i)], v[gen.below(static_cast<uint64_t>(i + 1))]);
    return from_vector(v, shape).requires_grad_();
}

void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

}  // namespace

// ---- conv2d ---------------------------------------------------------------------------------

TEST_CASE("golden: conv2d over strides, paddings, dilations, groups, bias and odd sizes", "[ops][conv][golden]") {
    const auto g = test::golden("conv.safetensors");
    const auto names = cases_with(g, "groups");
    REQUIRE(names.size() == 18);
    test::ThreadsGuard guard;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        INFO("threads " << threads);
        for (const auto& c : names) {
            const Size2 stride = size2_of(g.metadata.at(c + ".stride")), dilation = size2_of(g.metadata.at(c + ".dilation"));
            const Conv2dPadding padding = padding_of(g.metadata.at(c + ".padding"));
            const int64_t groups = std::stoll(g.metadata.at(c + ".groups"));
            CHECK(has(g, c + ".bias") == (g.metadata.at(c + ".bias") == "True"));
            check_case(g, c, [&](const Tensor& x, const Tensor& w, const Tensor& b) {
                return conv2d(x, w, b, stride, padding, dilation, groups);
            });
        }
    }
    check_case(g, "unbatched", [](const Tensor& x, const Tensor& w, const Tensor& b) { return conv2d(x, w, b, 1, 1); });
}

TEST_CASE("conv2d matches the direct-loop reference on random shapes, forward and backward", "[ops][conv]") {
    Generator gen(2024);
    test::ThreadsGuard guard;
    const auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(gen.below(static_cast<uint64_t>(hi - lo + 1))); };
    for (int trial = 0; trial < 80; ++trial) {
        detail::ConvNaiveSizes s{};
        s.groups = pick(1, 3);
        s.C = s.groups * pick(1, 3), s.OC = s.groups * pick(1, 3), s.N = pick(1, 4);
        s.KH = pick(1, 4), s.KW = pick(1, 4), s.dh = pick(1, 2), s.dw = pick(1, 2);
        const bool same = trial % 5 == 0;
        s.sh = same ? 1 : pick(1, 3), s.sw = same ? 1 : pick(1, 3);
        // Every fourth trial has large maps (one image per product), the others small ones
        // (several images per product).
        const int64_t big = trial % 4 == 1 ? 14 : 0;
        s.H = pick(1, 9) + big, s.W = pick(1, 9) + big;
        int64_t pad_h = 0, pad_w = 0;  // totals
        if (same) {
            pad_h = s.dh * (s.KH - 1), pad_w = s.dw * (s.KW - 1);
            s.ph = pad_h / 2, s.pw = pad_w / 2;
        } else {
            s.ph = pick(0, 2), s.pw = pick(0, 2);
            pad_h = 2 * s.ph, pad_w = 2 * s.pw;
        }
        s.H = std::max(s.H, s.dh * (s.KH - 1) + 1 - pad_h);
        s.W = std::max(s.W, s.dw * (s.KW - 1) + 1 - pad_w);
        s.OH = (s.H + pad_h - s.dh * (s.KH - 1) - 1) / s.sh + 1;
        s.OW = (s.W + pad_w - s.dw * (s.KW - 1) - 1) / s.sw + 1;
        const bool with_bias = trial % 3 != 2;
        INFO("trial " << trial << ": N " << s.N << " C " << s.C << " H " << s.H << " W " << s.W << " OC " << s.OC
                      << " k " << s.KH << "x" << s.KW << " stride " << s.sh << "x" << s.sw << " pad " << s.ph << "x"
                      << s.pw << (same ? " (same)" : "") << " dilation " << s.dh << "x" << s.dw << " groups "
                      << s.groups);
        Tensor x = randn({s.N, s.C, s.H, s.W}, gen).requires_grad_();
        Tensor w = randn({s.OC, s.C / s.groups, s.KH, s.KW}, gen).requires_grad_();
        Tensor b = with_bias ? randn({s.OC}, gen).requires_grad_() : Tensor();
        const Tensor dy = randn({s.N, s.OC, s.OH, s.OW}, gen);
        std::vector<double> y_ref(static_cast<size_t>(dy.numel())), dx_ref(static_cast<size_t>(x.numel())),
            dw_ref(static_cast<size_t>(w.numel())), db_ref(static_cast<size_t>(s.OC));
        detail::conv2d_naive(y_ref.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, s);
        detail::conv2d_naive_backward(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(), s);
        const auto as_tensor = [](const std::vector<double>& v, const Shape& shape) {
            return from_vector(std::vector<float>(v.begin(), v.end()), shape);
        };
        set_num_threads(trial % 2 == 0 ? 1 : 2);
        const Conv2dPadding padding = same ? Conv2dPadding("same") : Conv2dPadding({s.ph, s.pw});
        Tensor y = conv2d(x, w, b, {s.sh, s.sw}, padding, {s.dh, s.dw}, s.groups);
        // Float32 sums of up to a thousand products against exact ones: 1e-4 (absolute + relative).
        require_close(y, as_tensor(y_ref, y.shape()), 1e-4, "y");
        y.backward(dy);
        require_close(x.grad(), as_tensor(dx_ref, x.shape()), 1e-4, "dx");
        require_close(w.grad(), as_tensor(dw_ref, w.shape()), 1e-4, "dweight");
        if (with_bias) require_close(b.grad(), as_tensor(db_ref, b.shape()), 1e-4, "dbias");
    }
}

TEST_CASE("gradcheck: conv2d", "[ops][conv][gradcheck]") {
    Generator gen(7);
    struct Setting {
        Shape x, w;
        Size2 stride;
        Conv2dPadding padding;
        Size2 dilation;
        int64_t groups;
        bool bias;
    };
    const std::vector<Setting> settings = {
        {{2, 3, 5, 4}, {4, 3, 3, 3}, 1, 1, 1, 1, true},
        {{2, 4, 7, 6}, {4, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2, true},
        {{1, 2, 5, 6}, {3, 2, 4, 2}, 1, "same", 1, 1, false},
        {{2, 3, 4, 3}, {2, 3, 1, 1}, 1, 0, 1, 1, true},
        {{3, 2, 3, 3}, {3, 2, 3, 3}, 2, 2, 1, 1, true},
        {{2, 2, 8, 7}, {2, 2, 2, 2}, 1, 0, 1, 1, true},  // 42 output positions: one image per product
    };
    for (size_t i = 0; i < settings.size(); ++i) {
        const auto& st = settings[i];
        INFO("setting " << i);
        std::vector<Tensor> in{randn(st.x, gen).requires_grad_(), randn(st.w, gen).requires_grad_()};
        if (st.bias) in.push_back(randn({st.w[0]}, gen).requires_grad_());
        require_gradcheck(gradcheck(
            [&](const std::vector<Tensor>& t) {
                return conv2d(t[0], t[1], st.bias ? t[2] : Tensor(), st.stride, st.padding, st.dilation, st.groups);
            },
            in));
    }
}

TEST_CASE("conv2d: views, the first layer's input without grad, empty batches and zero channels", "[ops][conv]") {
    Generator gen(8);
    const Tensor x = randn({2, 3, 6, 5}, gen), w = randn({4, 3, 3, 3}, gen), b = randn({4}, gen);
    const Tensor want = conv2d(x, w, b, 1, 1);
    // A transposed view of the input and a narrowed weight give the same result.
    const Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);
    REQUIRE_FALSE(xt.is_contiguous());
    const Tensor wide = randn({6, 3, 3, 3}, gen);
    wide.narrow(0, 1, 4).copy_(w);
    require_close(conv2d(xt, wide.narrow(0, 1, 4), b, 1, 1), want, 1e-6, "views");
    // Only the weight needs a gradient (a network's first layer): the input gets none.
    Tensor wl = leaf(w), bl = leaf(b);
    sum(conv2d(x, wl, bl, 1, 1)).backward();
    CHECK_FALSE(x.grad().defined());
    CHECK(wl.grad().shape() == w.shape());
    // An empty batch: an empty output, zero parameter gradients (written into fresh buffers).
    Tensor w0 = leaf(w), b0 = leaf(b);
    Tensor y0 = conv2d(zeros({0, 3, 6, 5}), w0, b0, 1, 1);
    CHECK(y0.shape() == Shape{0, 4, 6, 5});
    {
        const detail::PoisonFreshGradients poison;
        sum(y0).backward();
    }
    CHECK(w0.grad().to_vector() == std::vector<float>(static_cast<size_t>(w.numel()), 0.0f));
    CHECK(b0.grad().to_vector() == std::vector<float>(4, 0.0f));
    // Zero input channels: the output is the bias.
    const Tensor yb = conv2d(zeros({1, 0, 3, 3}), zeros({2, 0, 3, 3}), tensor({1.5f, -2.0f}), 1, 1);
    CHECK(yb.shape() == Shape{1, 2, 3, 3});
    CHECK(yb.to_vector()[0] == 1.5f);
    CHECK(yb.to_vector()[17] == -2.0f);
}

TEST_CASE("conv2d: bad calls fail with torch's messages, naming the op", "[ops][conv]") {
    const auto g = test::golden("conv.safetensors");
    const auto msg = [&](const std::string& key) { return g.metadata.at("error." + key); };
    const Tensor x = rand({1, 3, 5, 5}), w = rand({4, 3, 3, 3});
    CHECK_THROWS_WITH(conv2d(x, rand({4, 2, 3, 3})), "conv2d: " + msg("channels"));
    CHECK_THROWS_WITH(conv2d(x, w, {}, 2, "same"), "conv2d: " + msg("same_strided"));
    CHECK_THROWS_WITH(conv2d(x, w, {}, 1, "foo"), msg("padding_string"));
    CHECK_THROWS_WITH(conv2d(rand({1, 3, 2, 2}), w), "conv2d: " + msg("kernel_too_big"));
    CHECK_THROWS_WITH(conv2d(rand({2, 1, 3, 5, 5}), w), "conv2d: " + msg("input_rank"));
    CHECK_THROWS_WITH(conv2d(x, w, rand({3})), "conv2d: " + msg("bias"));
    CHECK_THROWS_WITH(conv2d(x, w, {}, 0), "conv2d: " + msg("stride"));
    CHECK_THROWS_WITH(conv2d(x, w, {}, 1, -1), "conv2d: " + msg("padding"));
    // torch prints the weight's size in double brackets here; normnet in single ones.
    CHECK(msg("groups_weight") ==
          "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[3, 2, 3, 3]] instead");
    CHECK_THROWS_WITH(conv2d(rand({1, 4, 5, 5}), rand({3, 2, 3, 3}), {}, 1, 0, 1, 2),
                      "conv2d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of "
                      "size [3, 2, 3, 3] instead");
    CHECK_THROWS_WITH(conv2d(x, rand({4, 3, 3})), Catch::Contains("conv2d: expected weight of shape"));
    CHECK_THROWS_WITH(conv2d(x, w, {}, 1, 0, 1, 0), "conv2d: non-positive groups is not supported");
    CHECK_THROWS_WITH(conv2d(x.to(kInt64), w), "conv2d: expected float32 tensors, got int64");
    CHECK_THROWS_WITH(conv2d(x, w, {}, {1, 2, 3}), "expected one value or a (height, width) pair, got 3 values");
}

// ---- pooling --------------------------------------------------------------------------------

TEST_CASE("golden: max_pool2d with ceil_mode, padding, dilation and its indices", "[ops][pooling][golden]") {
    const auto g = test::golden("pooling.safetensors");
    int count = 0;
    for (const auto& c : cases_with(g, "ceil_mode")) {
        if (!c.starts_with("max")) continue;
        ++count;
        const Size2 k = size2_of(g.metadata.at(c + ".kernel_size")), s = size2_of(g.metadata.at(c + ".stride"));
        const Size2 p = size2_of(g.metadata.at(c + ".padding")), d = size2_of(g.metadata.at(c + ".dilation"));
        const bool ceil = g.metadata.at(c + ".ceil_mode") == "True";
        check_case(g, c, [&](const Tensor& x, const Tensor&, const Tensor&) { return max_pool2d(x, k, s, p, d, ceil); });
        const auto [y, indices] = max_pool2d_with_indices(g.at(c + ".x"), k, s, p, d, ceil);
        CHECK(indices.dtype() == kInt64);
        CHECK(indices.to_vector<int64_t>() == g.at(c + ".indices").to_vector<int64_t>());
        require_close(y, g.at(c + ".y"), 0.0, c + ".y with indices");
    }
    CHECK(count == 8);
}

TEST_CASE("golden: avg_pool2d with count_include_pad, ceil_mode and divisor_override", "[ops][pooling][golden]") {
    const auto g = test::golden("pooling.safetensors");
    const auto names = cases_with(g, "count_include_pad");
    CHECK(names.size() == 7);
    for (const auto& c : names) {
        const Size2 k = size2_of(g.metadata.at(c + ".kernel_size")), s = size2_of(g.metadata.at(c + ".stride"));
        const Size2 p = size2_of(g.metadata.at(c + ".padding"));
        const bool ceil = g.metadata.at(c + ".ceil_mode") == "True";
        const bool include = g.metadata.at(c + ".count_include_pad") == "True";
        const std::string divisor = g.metadata.at(c + ".divisor_override");
        const std::optional<int64_t> d = divisor.empty() ? std::nullopt : std::optional<int64_t>(std::stoll(divisor));
        check_case(g, c, [&](const Tensor& x, const Tensor&, const Tensor&) {
            return avg_pool2d(x, k, s, p, ceil, include, d);
        });
    }
}

TEST_CASE("golden: adaptive_avg_pool2d", "[ops][pooling][golden]") {
    const auto g = test::golden("pooling.safetensors");
    const auto names = cases_with(g, "output_size");
    CHECK(names.size() == 5);
    for (const auto& c : names) {
        const Size2 size = size2_of(g.metadata.at(c + ".output_size"));
        check_case(g, c, [&](const Tensor& x, const Tensor&, const Tensor&) { return adaptive_avg_pool2d(x, size); });
    }
}

TEST_CASE("max_pool2d: NaN propagates, -inf windows, ties go to the first maximum", "[ops][pooling]") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    Tensor x = from_vector({1, nan, 2, 3, -inf, -inf, 5, 5, 7, 7, 7, 7}, {1, 1, 3, 4}).requires_grad_();
    const auto [y, idx] = max_pool2d_with_indices(x, {1, 2});
    const auto v = y.to_vector();
    CHECK(std::isnan(v[0]));
    CHECK(v[1] == 3.0f);
    CHECK(v[2] == -inf);
    CHECK(v[3] == 5.0f);
    CHECK(idx.to_vector<int64_t>() == std::vector<int64_t>{1, 3, 4, 6, 8, 10});
    y.backward(ones(y.shape()));
    CHECK(x.grad().to_vector() == std::vector<float>{0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0});
}

TEST_CASE("max_pool2d's 2x2 vector kernels match torch's scan: ties, zeros, NaN, -inf, added gradients", "[ops][pooling]") {
    // Values from a small set, so windows tie often (as after a ReLU: all zeros), with NaN and
    // -inf sprinkled in; widths give rows of 3 (scalar), 5 and 7 (vectors of 4, the last one
    // overlapping), 8, 11 and 75 (vectors of 8) outputs, and odd sizes leave rows and columns
    // outside every window.
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    Generator gen(17);
    for (const Shape& shape : {Shape{2, 3, 6, 7}, Shape{1, 2, 5, 10}, Shape{2, 2, 9, 15}, Shape{1, 3, 4, 16},
                               Shape{1, 1, 7, 23}, Shape{1, 2, 4, 150}}) {
        INFO("shape " << shape);
        std::vector<float> v(static_cast<size_t>(shape.numel()));
        for (auto& e : v) {
            const uint64_t r = gen.below(40);
            e = r == 0 ? nan : r == 1 ? -inf : static_cast<float>(r % 3);
        }
        const int64_t H = shape[2], W = shape[3], OH = H / 2, OW = W / 2, planes = shape[0] * shape[1];
        // torch's scan, by hand: the output, and the gradient of sum(y * dy).
        const Tensor dy = randn({shape[0], shape[1], OH, OW}, gen);
        const auto dyv = dy.to_vector();
        std::vector<float> want_y(static_cast<size_t>(dy.numel())), want_dx(v.size(), 0.0f);
        for (int64_t p = 0; p < planes; ++p) {
            for (int64_t oh = 0; oh < OH; ++oh) {
                for (int64_t ow = 0; ow < OW; ++ow) {
                    float m = -inf;
                    int64_t at = p * H * W + 2 * oh * W + 2 * ow;
                    for (int64_t kh = 0; kh < 2; ++kh) {
                        for (int64_t kw = 0; kw < 2; ++kw) {
                            const int64_t i = p * H * W + (2 * oh + kh) * W + 2 * ow + kw;
                            const float e = v[static_cast<size_t>(i)];
                            if (e > m || std::isnan(e)) m = e, at = i;
                        }
                    }
                    const size_t o = static_cast<size_t>((p * OH + oh) * OW + ow);
                    want_y[o] = m;
                    want_dx[static_cast<size_t>(at)] += dyv[o];
                }
            }
        }
        Tensor x = from_vector(v, shape).requires_grad_();
        Tensor y = max_pool2d(x, 2);
        const auto yv = y.to_vector();
        for (size_t i = 0; i < yv.size(); ++i) {
            INFO("output " << i);
            CHECK((yv[i] == want_y[i] || (std::isnan(yv[i]) && std::isnan(want_y[i]))));
        }
        y.backward(dy);
        CHECK(x.grad().to_vector() == want_dx);
        // Into a gradient that already holds values (added, the overlapping vectors once).
        y = max_pool2d(x, 2);
        y.backward(dy);
        std::vector<float> twice(want_dx);
        for (auto& e : twice) e *= 2.0f;
        CHECK(x.grad().to_vector() == twice);
    }
}

TEST_CASE("gradcheck: max_pool2d, avg_pool2d, adaptive_avg_pool2d", "[ops][pooling][gradcheck]") {
    const auto check = [](const Shape& shape, uint64_t seed, const std::function<Tensor(const Tensor&)>& fn) {
        require_gradcheck(gradcheck([&](const std::vector<Tensor>& t) { return fn(t[0]); }, {spaced(shape, seed)}));
    };
    check({2, 2, 5, 6}, 1, [](const Tensor& x) { return max_pool2d(x, 2); });
    check({1, 2, 4, 13}, 9, [](const Tensor& x) { return max_pool2d(x, 2); });   // vectors of 4
    check({1, 1, 4, 19}, 10, [](const Tensor& x) { return max_pool2d(x, 2); });  // vectors of 8
    check({1, 2, 7, 6}, 2, [](const Tensor& x) { return max_pool2d(x, 3, 2, 1, 1, true); });
    check({1, 1, 7, 7}, 3, [](const Tensor& x) { return max_pool2d(x, {3, 2}, 1, {1, 0}, 2); });
    check({2, 2, 5, 6}, 4, [](const Tensor& x) { return avg_pool2d(x, 2); });
    check({1, 2, 7, 6}, 5, [](const Tensor& x) { return avg_pool2d(x, 3, 2, 1, true, false); });
    check({1, 2, 6, 5}, 6, [](const Tensor& x) { return avg_pool2d(x, {3, 2}, {2, 1}, {1, 0}, true, true, 5); });
    check({2, 2, 7, 5}, 7, [](const Tensor& x) { return adaptive_avg_pool2d(x, {3, 2}); });
    check({1, 2, 3, 4}, 8, [](const Tensor& x) { return adaptive_avg_pool2d(x, {4, 7}); });
}

TEST_CASE("pooling: bad calls fail with torch's messages, naming the op", "[ops][pooling]") {
    const auto g = test::golden("pooling.safetensors");
    CHECK(g.metadata.at("error.pad_half") == "pad should be at most half of kernel size, but got pad=2 and kernel_size=2");
    CHECK_THROWS_WITH(max_pool2d(rand({1, 3, 5, 5}), 2, {}, 2),
                      "max_pool2d: pad should be at most half of kernel size, but got pad=(2, 2) and kernel_size=(2, 2)");
    CHECK_THROWS_WITH(max_pool2d(rand({1, 3, 1, 1}), 2), "max_pool2d: " + g.metadata.at("error.too_small"));
    CHECK_THROWS_WITH(avg_pool2d(rand({1, 3, 1, 1}), 2), "avg_pool2d: " + g.metadata.at("error.too_small"));
    CHECK_THROWS_WITH(max_pool2d(rand({1, 3, 0, 5}), 2), "max_pool2d: " + g.metadata.at("error.empty_plane"));
    CHECK_THROWS_WITH(avg_pool2d(rand({1, 3, 4, 5}), 2, {}, 0, false, true, 0),
                      "avg_pool2d: " + g.metadata.at("error.divisor"));
    CHECK_THROWS_WITH(max_pool2d(rand({1, 3, 4, 5}), 0), Catch::Contains("max_pool2d: kernel size should be greater than zero"));
    CHECK_THROWS_WITH(max_pool2d(rand({1, 3, 4, 5}), 2, 1, 0, 0), Catch::Contains("max_pool2d: dilation should be greater than zero"));
    CHECK_THROWS_WITH(max_pool2d(rand({3, 5}), 2), Catch::Contains("max_pool2d: Expected 3D or 4D"));
    CHECK_THROWS_WITH(adaptive_avg_pool2d(rand({1, 3, 0, 4}), 2),
                      "adaptive_avg_pool2d: Expected input to have non-zero size for non-batch dimensions, but input "
                      "has sizes [1, 3, 0, 4] with dimension 2 being empty");
    // An empty batch pools to an empty batch, as torch.
    CHECK(max_pool2d(zeros({0, 3, 4, 5}), 2).shape() == Shape{0, 3, 2, 2});
}

// ---- group_norm, instance_norm, batch_norm on images ----------------------------------------

TEST_CASE("golden: group_norm with 1, 2 and C groups, with and without affine", "[ops][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    const auto names = cases_with(g, "num_groups");
    CHECK(names.size() == 7);
    for (const auto& c : names) {
        const int64_t groups = std::stoll(g.metadata.at(c + ".num_groups"));
        check_case(g, c, [&](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm(x, groups, w, b); });
    }
}

namespace {

// A functional normalisation with running statistics owned by the caller:
// norm(x, running_mean, running_var, weight, bias, training, momentum, batches counted).
using NormCall = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                                      std::optional<double>, int64_t)>;

// One BatchNorm2d / InstanceNorm2d golden case through the functional op: every training step
// (output, gradients, running statistics), then eval (running statistics when tracked).
void check_functional_steps(const SafetensorsData& g, const std::string& c, const NormCall& norm) {
    INFO("case " << c);
    const bool affine = g.metadata.at(c + ".affine") == "True";
    const bool stats = g.metadata.at(c + ".track_running_stats") == "True";
    const std::string m = g.metadata.at(c + ".momentum");
    const std::optional<double> momentum = m == "None" ? std::nullopt : std::optional<double>(std::stod(m));
    const int steps = std::stoi(g.metadata.at(c + ".steps"));
    Tensor w = affine ? leaf(g.at(c + ".weight")) : Tensor(), b = affine ? leaf(g.at(c + ".bias")) : Tensor();
    const int64_t C = g.at(c + ".x0").size(1);
    Tensor rm = stats ? zeros({C}) : Tensor(), rv = stats ? ones({C}) : Tensor();
    for (int k = 0; k < steps; ++k) {
        const std::string s = std::to_string(k);
        if (w.defined()) w.set_grad({}), b.set_grad({});
        Tensor x = leaf(g.at(c + ".x" + s));
        Tensor y = norm(x, rm, rv, w, b, true, momentum, k + 1);
        require_close(y, g.at(c + ".y" + s), 1e-5, c + ".y" + s);
        y.backward(g.at(c + ".dy" + s));
        require_close(x.grad(), g.at(c + ".dx" + s), 1e-5, c + ".dx" + s);
        if (affine) {
            require_close(w.grad(), g.at(c + ".dweight" + s), 1e-5, c + ".dweight" + s);
            require_close(b.grad(), g.at(c + ".dbias" + s), 1e-5, c + ".dbias" + s);
        }
        if (stats) {
            require_close(rm, g.at(c + ".running_mean" + s), 1e-5, c + ".running_mean" + s);
            require_close(rv, g.at(c + ".running_var" + s), 1e-5, c + ".running_var" + s);
        }
    }
    NoGradGuard no_grad;
    require_close(norm(g.at(c + ".x_eval"), rm, rv, w, b, !stats, momentum, steps), g.at(c + ".y_eval"), 1e-5,
                  c + ".y_eval");
}

}  // namespace

TEST_CASE("golden: instance_norm, functional, with running statistics over steps", "[ops][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    for (const std::string c : {"in2d", "in2d_affine", "in2d_stats", "in2d_stats_noaffine"}) {
        check_functional_steps(g, c, [](const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w,
                                        const Tensor& b, bool input_stats, std::optional<double> momentum, int64_t) {
            return instance_norm(x, rm, rv, w, b, input_stats, *momentum);
        });
    }
    CHECK_THROWS_WITH(instance_norm(rand({2, 3, 1, 1})),
                      "Expected more than 1 spatial element when training, got input size [2, 3, 1, 1]");
    CHECK_THROWS_WITH(instance_norm(rand({2, 3, 4}), {}, {}, {}, {}, false), Catch::Contains("use_input_stats is false"));
}

TEST_CASE("golden: batch_norm on [N, C, H, W], every step through the functional op", "[ops][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    for (const std::string c : {"bn2d", "bn2d_cma", "bn2d_noaffine", "bn2d_nostats", "bn2d_batch1"}) {
        check_functional_steps(g, c, [](const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w,
                                        const Tensor& b, bool training, std::optional<double> momentum,
                                        int64_t batches) {
            return batch_norm(x, rm, rv, w, b, training, momentum, 1e-5, batches);
        });
    }
}

TEST_CASE("group_norm is LayerNorm over [C, H, W] with 1 group and InstanceNorm with C groups", "[ops][norm]") {
    Generator gen(31);
    const Tensor x = add(mul(randn({3, 4, 5, 6}, gen), 2.0f), 1.0f);
    require_close(group_norm(x, 1), layer_norm(x, {4, 5, 6}), 1e-5, "G = 1");
    require_close(group_norm(x, 4), instance_norm(x), 0.0, "G = C");
    // Per-channel affine: weight[c] scales channel c.
    const Tensor w = randn({4}, gen), b = randn({4}, gen);
    const Tensor want = add(mul(layer_norm(x, {4, 5, 6}), w.view({4, 1, 1})), b.view({4, 1, 1}));
    require_close(group_norm(x, 1, w, b), want, 1e-5, "G = 1, affine");
}

TEST_CASE("group_norm and batch_norm on images are stable for 1e4 + noise (float64 reference)", "[ops][norm]") {
    // A large common offset with a spread of about 0.29: rounding the mean before subtracting
    // it would cost ~1e-3. References in double on exactly the float32 inputs.
    Generator gen(41);
    const int64_t N = 4, C = 6, L = 35;
    const Tensor x = add(rand({N, C, 5, 7}, gen), 1e4f);
    const auto xv = x.to_vector();
    const auto normalise = [&](int64_t groups, bool per_channel_batch) {
        std::vector<float> y(xv.size());
        const int64_t Cg = per_channel_batch ? 1 : C / groups;
        const auto index = [&](int64_t n, int64_t c, int64_t l) { return static_cast<size_t>((n * C + c) * L + l); };
        const auto members = [&](int64_t a, int64_t bgroup, auto&& visit) {
            if (per_channel_batch) {
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t l = 0; l < L; ++l) visit(index(n, bgroup, l));
            } else {
                for (int64_t c = bgroup * Cg; c < (bgroup + 1) * Cg; ++c)
                    for (int64_t l = 0; l < L; ++l) visit(index(a, c, l));
            }
        };
        for (int64_t a = 0; a < (per_channel_batch ? 1 : N); ++a) {
            for (int64_t grp = 0; grp < (per_channel_batch ? C : groups); ++grp) {
                double sum = 0.0, count = 0.0, sq = 0.0;
                members(a, grp, [&](size_t i) { sum += xv[i], count += 1.0; });
                const double m = sum / count;
                members(a, grp, [&](size_t i) { sq += (xv[i] - m) * (xv[i] - m); });
                const double s = 1.0 / std::sqrt(sq / count + 1e-5);
                members(a, grp, [&](size_t i) { y[i] = static_cast<float>((xv[i] - m) * s); });
            }
        }
        return from_vector(y, x.shape());
    };
    for (int64_t groups : {1, 2, 6}) {
        INFO("groups " << groups);
        CHECK(test::worst_violation(group_norm(x, groups), normalise(groups, false), 1e-4) == 0.0);
    }
    CHECK(test::worst_violation(batch_norm(x, {}, {}, {}, {}, true), normalise(C, true), 1e-4) == 0.0);
}

namespace {

// The values of the tensors `run` returns, concatenated, on 1 thread and then on 2.
std::vector<std::vector<float>> on_one_and_two_threads(const std::function<std::vector<Tensor>()>& run) {
    test::ThreadsGuard guard;
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        std::vector<float> all;
        for (const Tensor& t : run()) {
            const auto v = t.to_vector();
            all.insert(all.end(), v.begin(), v.end());
        }
        results.push_back(all);
    }
    return results;
}

}  // namespace

TEST_CASE("batch_norm and group_norm on images: results independent of the thread count", "[ops][norm]") {
    // Each channel's (or group's) statistics and gradient sums are added in one order, whatever
    // the split, so the results are bitwise equal on any number of threads. 40 samples and
    // 16 x 16 planes: two chunks of samples for batch_norm, fused with max-pool and ReLU or not.
    Generator gen(51);
    const Tensor x = randn({40, 5, 16, 16}, gen), dy = randn({40, 5, 16, 16}, gen);
    const Tensor dpool = randn({40, 5, 8, 8}, gen);
    const Tensor w = randn({5}, gen), b = randn({5}, gen);
    const auto results = on_one_and_two_threads([&] {
        Tensor xl = leaf(x), wl = leaf(w), bl = leaf(b);
        Tensor y = batch_norm(xl, {}, {}, wl, bl, true);
        y.backward(dy);
        Tensor xg = leaf(x);
        Tensor yg = group_norm(xg, 5, w, b);
        yg.backward(dy);
        Tensor xp = leaf(x), wp = leaf(w), bp = leaf(b);
        Tensor yp = batch_norm_max_pool2d_relu(xp, {}, {}, wp, bp, true);
        yp.backward(dpool);
        return std::vector<Tensor>{y, xl.grad(), wl.grad(), bl.grad(), yg, xg.grad(), yp, xp.grad(), wp.grad(), bp.grad()};
    });
    CHECK(results[0] == results[1]);
}

TEST_CASE("batch_norm on [N, C]: results independent of the thread count", "[ops][norm]") {
    // Rows go by fixed blocks whose sums are merged in block order: 1000 rows are 16 blocks,
    // which two threads split.
    Generator gen(52);
    const Tensor x = randn({1000, 24}, gen), dy = randn({1000, 24}, gen);
    const Tensor w = randn({24}, gen), b = randn({24}, gen);
    const auto results = on_one_and_two_threads([&] {
        Tensor xl = leaf(x), wl = leaf(w), bl = leaf(b);
        Tensor y = batch_norm(xl, {}, {}, wl, bl, true);
        y.backward(dy);
        return std::vector<Tensor>{y, xl.grad(), wl.grad(), bl.grad()};
    });
    CHECK(results[0] == results[1]);
}

TEST_CASE("gradcheck: group_norm, instance_norm, batch_norm on [N, C, H, W]", "[ops][norm][gradcheck]") {
    Generator gen(61);
    const auto in = [&](std::initializer_list<Shape> shapes) {
        std::vector<Tensor> v;
        for (const Shape& s : shapes) v.push_back(randn(s, gen).requires_grad_());
        return v;
    };
    for (int64_t groups : {1, 2, 4}) {
        INFO("groups " << groups);
        require_gradcheck(gradcheck([&](const std::vector<Tensor>& t) { return group_norm(t[0], groups, t[1], t[2]); },
                                    in({{2, 4, 3, 3}, {4}, {4}})));
    }
    require_gradcheck(gradcheck([](const std::vector<Tensor>& t) { return group_norm(t[0], 2); }, in({{3, 4, 5}})));
    require_gradcheck(gradcheck([](const std::vector<Tensor>& t) { return instance_norm(t[0], {}, {}, t[1], t[2]); },
                                in({{2, 3, 3, 4}, {3}, {3}})));
    require_gradcheck(gradcheck([](const std::vector<Tensor>& t) { return batch_norm(t[0], {}, {}, t[1], t[2], true); },
                                in({{3, 2, 3, 4}, {2}, {2}})));
    const Tensor rm = randn({2}, gen), rv = add(rand({2}, gen), 0.5f);
    require_gradcheck(gradcheck([&](const std::vector<Tensor>& t) { return batch_norm(t[0], rm, rv, t[1], t[2], false); },
                                in({{3, 2, 3, 4}, {2}, {2}})));
}

TEST_CASE("group_norm: bad calls fail with torch's messages, naming the op", "[ops][norm]") {
    const auto g = test::golden("conv_norm.safetensors");
    CHECK_THROWS_WITH(group_norm(rand({2, 6, 3}), 4), "group_norm: " + g.metadata.at("error.gn_groups"));
    CHECK_THROWS_WITH(group_norm(rand({2, 6, 3}), 3, rand({5})), "group_norm: " + g.metadata.at("error.gn_weight"));
    CHECK_THROWS_WITH(group_norm(rand({6}), 3), Catch::Contains("group_norm: expected an input of at least 2 dimensions"));
    CHECK_THROWS_WITH(group_norm(rand({2, 6}).to(kInt64), 3), "group_norm: expected float32 tensors, got int64");
}
