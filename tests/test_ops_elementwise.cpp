// Binary elementwise ops, their scalar forms and operators, the recorded in-place updates, and
// comparisons and selection: PyTorch goldens (tests/golden/gen_elementwise.py), gradcheck on
// broadcast, size-0 and non-contiguous operands, error messages, and the in-place rules
// (version counter, torch's leaf rule, bit-identical plain loops when nothing is recorded).
#include <cstring>
#include <functional>

#include "golden_cases.hpp"
#include "ops/loop.hpp"
#include "op_test_helpers.hpp"

using namespace normnet;
using Catch::Contains;
using nlohmann::json;
using test::arg;
using test::input;
using test::require_gradcheck;

namespace {

// An in-place op applied to a non-leaf copy of a, as a user writes it: h = a * 1; h.op_(b).
template <class F>
test::GoldenOp inplace(F f) {
    return [f](const std::vector<Tensor>& in, const json&) {
        Tensor h = in[0] * 1.0f;
        f(h, in);
        return h;
    };
}

// elementwise.safetensors: op names as gen_elementwise.py writes them.
std::map<std::string, test::GoldenOp> elementwise_ops() {
    const auto alpha = [](const json& a) { return a.contains("alpha") ? static_cast<float>(arg(a, "alpha")) : 1.0f; };
    const auto s = [](const json& a) { return static_cast<float>(arg(a, "s")); };
    return {
        {"add", [=](auto& in, auto& a) { return add(in[0], in[1], alpha(a)); }},
        {"sub", [=](auto& in, auto& a) { return sub(in[0], in[1], alpha(a)); }},
        {"mul", [](auto& in, auto&) { return mul(in[0], in[1]); }},
        {"div", [](auto& in, auto&) { return div(in[0], in[1]); }},
        {"pow", [](auto& in, auto&) { return pow(in[0], in[1]); }},
        {"maximum", [](auto& in, auto&) { return maximum(in[0], in[1]); }},
        {"minimum", [](auto& in, auto&) { return minimum(in[0], in[1]); }},
        {"add_scalar", [=](auto& in, auto& a) { return add(in[0], s(a), alpha(a)); }},
        {"sub_scalar", [=](auto& in, auto& a) { return sub(in[0], s(a), alpha(a)); }},
        {"rsub_scalar", [=](auto& in, auto& a) { return s(a) - in[0]; }},
        {"mul_scalar", [=](auto& in, auto& a) { return in[0] * s(a); }},
        {"div_scalar", [=](auto& in, auto& a) { return in[0] / s(a); }},
        {"rdiv_scalar", [=](auto& in, auto& a) { return s(a) / in[0]; }},
        {"pow_base", [=](auto& in, auto& a) { return pow(s(a), in[0]); }},
        {"add_", inplace([](Tensor& h, auto& in) { h += in[1]; })},
        {"add_alpha_", inplace([](Tensor& h, auto& in) { h.add_(in[1], -0.5f); })},
        {"sub_", inplace([](Tensor& h, auto& in) { h -= in[1]; })},
        {"mul_", inplace([](Tensor& h, auto& in) { h *= in[1]; })},
        {"div_", inplace([](Tensor& h, auto& in) { h /= in[1]; })},
        {"add_s_", inplace([](Tensor& h, auto&) { h.add_(2.0f, 1.5f); })},
        {"sub_s_", inplace([](Tensor& h, auto&) { h -= 2.0f; })},
        {"mul_s_", inplace([](Tensor& h, auto&) { h *= -1.5f; })},
        {"div_s_", inplace([](Tensor& h, auto&) { h /= 4.0f; })},
    };
}

// compare.safetensors
std::map<std::string, test::GoldenOp> compare_ops() {
    const auto s = [](const json& a) { return arg(a, "s"); };
    return {
        {"eq", [](auto& in, auto&) { return in[0] == in[1]; }},
        {"ne", [](auto& in, auto&) { return in[0] != in[1]; }},
        {"lt", [](auto& in, auto&) { return in[0] < in[1]; }},
        {"le", [](auto& in, auto&) { return in[0] <= in[1]; }},
        {"gt", [](auto& in, auto&) { return in[0] > in[1]; }},
        {"ge", [](auto& in, auto&) { return in[0] >= in[1]; }},
        {"eq_scalar", [=](auto& in, auto& a) { return eq(in[0], s(a)); }},
        {"ne_scalar", [=](auto& in, auto& a) { return ne(in[0], s(a)); }},
        {"lt_scalar", [=](auto& in, auto& a) { return lt(in[0], s(a)); }},
        {"le_scalar", [=](auto& in, auto& a) { return le(in[0], s(a)); }},
        {"gt_scalar", [=](auto& in, auto& a) { return gt(in[0], s(a)); }},
        {"ge_scalar", [=](auto& in, auto& a) { return ge(in[0], s(a)); }},
        {"isnan", [](auto& in, auto&) { return isnan(in[0]); }},
        {"isinf", [](auto& in, auto&) { return isinf(in[0]); }},
        {"isfinite", [](auto& in, auto&) { return isfinite(in[0]); }},
        {"logical_and", [](auto& in, auto&) { return logical_and(in[0], in[1]); }},
        {"logical_or", [](auto& in, auto&) { return logical_or(in[0], in[1]); }},
        {"logical_xor", [](auto& in, auto&) { return logical_xor(in[0], in[1]); }},
        {"logical_not", [](auto& in, auto&) { return logical_not(in[0]); }},
        {"where", [](auto& in, auto&) { return where(in[0], in[1], in[2]); }},
        {"where_scalar", [=](auto& in, auto& a) { return where(in[0], in[1], s(a)); }},
        {"masked_fill", [](auto& in, auto& a) { return masked_fill(in[0], in[1], arg(a, "value")); }},
        {"masked_fill_", [](auto& in, auto& a) {
             Tensor h = in[0] * 1.0f;
             h.masked_fill_(in[1], arg(a, "value"));
             return h;
         }},
    };
}

}  // namespace

TEST_CASE("elementwise: binary ops, scalar forms and in-place updates match PyTorch", "[ops][elementwise][golden]") {
    const int n = test::run_golden_cases("elementwise.safetensors", elementwise_ops());
    CHECK(std::to_string(n) == test::golden("elementwise.safetensors").metadata.at("cases"));
}

TEST_CASE("elementwise: comparisons, where and masked_fill match PyTorch", "[ops][elementwise][golden]") {
    const int n = test::run_golden_cases("compare.safetensors", compare_ops());
    CHECK(std::to_string(n) == test::golden("compare.safetensors").metadata.at("cases"));
}

TEST_CASE("elementwise: gradcheck of the binary ops over broadcast, size-1 and strided operands",
          "[ops][elementwise][gradcheck]") {
    using Binary = Tensor (*)(const Tensor&, const Tensor&);
    const std::vector<std::pair<const char*, Binary>> ops = {
        {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
        {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
        {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
        {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
        {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
        {"add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, -2.0f); }},
        {"sub alpha", [](const Tensor& a, const Tensor& b) { return sub(a, b, 0.5f); }},
    };
    // Positive operands (pow's base, div's divisor); maximum/minimum never tie on random values.
    const Tensor a = input({3, 4}, 1, 0.3f, 1.5f), row = input({4}, 2, 0.3f, 1.5f), col = input({3, 1}, 3, 0.3f, 1.5f);
    const Tensor at = input({4, 3}, 4, 0.3f, 1.5f);  // used as its transpose [3, 4]
    for (const auto& [name, op] : ops) {
        INFO(name);
        require_gradcheck(gradcheck([op = op](auto& in) { return op(in[0], in[1]); }, {a, row}));
        require_gradcheck(gradcheck([op = op](auto& in) { return op(in[0], in[1]); }, {col, a}));
        require_gradcheck(gradcheck([op = op](auto& in) { return op(in[0], in[1]); }, {col, row}));
        require_gradcheck(gradcheck([op = op](auto& in) { return op(in[0].t(), in[1]); }, {at, a}));
        require_gradcheck(gradcheck([op = op](auto& in) { return op(in[0].narrow(1, 1, 2), in[1]); }, {a, col}));
    }
}

TEST_CASE("elementwise: gradcheck of the scalar forms", "[ops][elementwise][gradcheck]") {
    const Tensor x = input({3, 4}, 5, 0.3f, 1.5f);
    const std::vector<std::function<Tensor(const Tensor&)>> fns = {
        [](const Tensor& t) { return 1.0f + t; },      [](const Tensor& t) { return 2.0f - t; },
        [](const Tensor& t) { return t - 2.0f; },      [](const Tensor& t) { return t / 2.0f; },
        [](const Tensor& t) { return 2.0f / t; },      [](const Tensor& t) { return 3.0f * t; },
        [](const Tensor& t) { return pow(2.0f, t); },  [](const Tensor& t) { return add(t, 2.0f, 3.0f); },
        [](const Tensor& t) { return sub(t, 2.0f, 0.5f); }, [](const Tensor& t) { return -t; },
    };
    for (size_t i = 0; i < fns.size(); ++i) {
        INFO("scalar form " << i);
        require_gradcheck(gradcheck([&](auto& in) { return fns[i](in[0]); }, {x}));
        require_gradcheck(gradcheck([&](auto& in) { return fns[i](in[0].t()); }, {x}));
    }
}

TEST_CASE("elementwise: gradcheck of the in-place updates, where and masked_fill", "[ops][elementwise][gradcheck]") {
    const Tensor a = input({2, 3, 4}, 6, 0.3f, 1.5f), b = input({3, 1}, 7, 0.3f, 1.5f);
    // The scalar forms use o only as a factor afterwards, so that every input gets a gradient.
    const std::vector<std::function<void(Tensor&, const Tensor&)>> updates = {
        [](Tensor& h, const Tensor& o) { h += o; },           [](Tensor& h, const Tensor& o) { h -= o; },
        [](Tensor& h, const Tensor& o) { h *= o; },           [](Tensor& h, const Tensor& o) { h /= o; },
        [](Tensor& h, const Tensor& o) { h.add_(o, -1.5f); }, [](Tensor& h, const Tensor& o) { h.sub_(o, 2.0f); },
        [](Tensor& h, const Tensor& o) { h *= 3.0f, h *= o; }, [](Tensor& h, const Tensor& o) { h /= -2.0f, h *= o; },
        [](Tensor& h, const Tensor& o) { h.add_(1.0f, 2.0f), h *= o; }, [](Tensor& h, const Tensor& o) { h -= 1.0f, h *= o; },
    };
    for (size_t i = 0; i < updates.size(); ++i) {
        INFO("in-place update " << i);
        require_gradcheck(gradcheck(
            [&](auto& in) {
                Tensor h = in[0] * 2.0f;
                updates[i](h, in[1]);
                return h * in[0];  // uses self's old history and the updated values
            },
            {a, b}));
    }
    Generator gen(8);
    const Tensor cond = lt(rand({3, 4}, gen), 0.5), x = input({3, 4}, 9), row = input({4}, 10), xt = input({4, 3}, 11);
    require_gradcheck(gradcheck([&](auto& in) { return where(cond, in[0], in[1]); }, {x, row}));
    require_gradcheck(gradcheck([&](auto& in) { return where(cond.narrow(1, 0, 1), in[1], in[0].t()); }, {xt, row}));
    require_gradcheck(gradcheck([&](auto& in) { return where(cond, in[0], 2.0); }, {x}));
    require_gradcheck(gradcheck([&](auto& in) { return masked_fill(in[0], cond, -3.0); }, {x}));
    require_gradcheck(gradcheck([&](auto& in) { return masked_fill(in[0].t(), cond.t(), 1.0); }, {x}));
    require_gradcheck(gradcheck(
        [&](auto& in) {
            Tensor h = in[0] * 1.0f;
            h.masked_fill_(cond.narrow(0, 0, 1), 0.5);
            return h;
        },
        {x}));
}

namespace {

// The naive reference of the broadcasting loop: out[i] = f(a[ia], b[ib]) with the indices
// unravelled one element at a time.
template <class F>
std::vector<float> naive_broadcast(const Tensor& a, const Tensor& b, F f) {
    const Shape out = detail::broadcast_shapes(a.shape(), b.shape(), "naive");
    const std::vector<float> av = a.to_vector(), bv = b.to_vector();
    std::vector<float> result(static_cast<size_t>(out.numel()));
    for (int64_t i = 0; i < out.numel(); ++i) {
        int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = out.size() - 1; d >= 0; --d) {
            const int64_t k = rest % out[d];
            rest /= out[d];
            const int da = d - (out.size() - a.dim()), db = d - (out.size() - b.dim());
            if (da >= 0) ia += (a.size(da) == 1 ? 0 : k) * sa, sa *= a.size(da);
            if (db >= 0) ib += (b.size(db) == 1 ? 0 : k) * sb, sb *= b.size(db);
        }
        result[static_cast<size_t>(i)] = f(av[static_cast<size_t>(ia)], bv[static_cast<size_t>(ib)]);
    }
    return result;
}

}  // namespace

TEST_CASE("elementwise: the broadcasting loops agree with a naive reference, rows short or long, any thread count",
          "[ops][elementwise]") {
    test::ThreadsGuard threads;
    Generator gen(13);
    // Short rows against a repeated row or a column, rows split between threads mid-row
    // (20001 * 3 elements cross several chunks of the split), and transposed operands.
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{20001, 3}, {3}}, {{3}, {20001, 3}}, {{20001, 3}, {20001, 1}}, {{5, 1, 7}, {4, 1}},
        {{2, 3, 1, 5}, {3, 4, 1}}, {{40000, 2}, {1, 2}}, {{63, 65}, {65}}, {{1, 1}, {7, 1, 3}}};
    for (const int nthreads : {1, 2}) {
        set_num_threads(nthreads);
        for (const auto& [sa, sb] : shapes) {
            INFO(sa << " with " << sb << ", " << nthreads << " threads");
            const Tensor a = randn(sa, gen), b = add(randn(sb, gen), 3.0f);
            CHECK(test::bit_equal(add(a, b), from_vector(naive_broadcast(a, b, std::plus<>()), add(a, b).shape())));
            CHECK(div(a, b).to_vector() == naive_broadcast(a, b, std::divides<>()));
            CHECK(maximum(b, a).to_vector() == naive_broadcast(b, a, [](float x, float y) { return x > y ? x : y; }));
            Tensor h = a.clone();
            if (detail::broadcast_shapes(sa, sb, "") == sa) {
                h *= b;
                CHECK(h.to_vector() == naive_broadcast(a, b, std::multiplies<>()));
            }
        }
        // Strided operands: a transposed view and a column of a wider tensor.
        const Tensor m = randn({3, 30000}, gen), c = randn({30000, 5}, gen);
        const Tensor col = c.narrow(1, 2, 1);  // [30000, 1], stride 5
        CHECK(sub(m.t(), col).to_vector() == naive_broadcast(m.t().contiguous(), col.contiguous(), std::minus<>()));
    }
}

TEST_CASE("elementwise: broadcasting and dtype errors name the op and the shapes", "[ops][elementwise]") {
    CHECK_THROWS_WITH(add(ones({2, 3}), ones({4})), Contains("add") && Contains("[2, 3]") && Contains("[4]"));
    CHECK_THROWS_WITH(div(ones({2, 3}), ones({2})), Contains("div") && Contains("[2, 3]") && Contains("[2]"));
    CHECK(maximum(ones({3}), ones({3}, kInt64)).dtype() == kFloat32);  // an integer tensor is promoted, as torch
    CHECK_THROWS_WITH(pow(ones({3}, kInt64), 2.0f), Contains("pow") && Contains("int64"));
    CHECK_THROWS_WITH(ones({3}) / ones({3}, kBool), Contains("div") && Contains("bool"));
    Tensor x = ones({3});
    CHECK_THROWS_WITH(x += ones({2, 3}), "add_: output with shape [3] doesn't match the broadcast shape [2, 3]");
    CHECK_THROWS_WITH(x *= ones({4}), Contains("mul_") && Contains("[3]") && Contains("[4]"));
    CHECK(x.to_vector() == std::vector<float>{1, 1, 1});  // nothing was written
    CHECK(x.version() == 0);
    CHECK_THROWS_WITH(where(ones({3}), ones({3}), zeros({3})), Contains("where") && Contains("boolean") &&
                                                                    Contains("float32"));
    CHECK_THROWS_WITH(where(ones({3}, kBool), ones({3}), zeros({3}, kInt64)), Contains("where") &&
                                                                                  Contains("int64"));
    CHECK_THROWS_WITH(where(ones({2}, kBool), ones({3}), zeros({3})), Contains("where") && Contains("[2]"));
    CHECK_THROWS_WITH(masked_fill(ones({3}), ones({2}, kBool), 0.0), Contains("masked_fill") && Contains("[2]") &&
                                                                         Contains("[3]"));
    CHECK_THROWS_WITH(ones({3}).masked_fill_(ones({2, 3}, kBool), 0.0), Contains("masked_fill_") &&
                                                                            Contains("[2, 3]") && Contains("[3]"));
    CHECK_THROWS_WITH(masked_fill(ones({3}), ones({3}), 0.0), Contains("masked_fill") && Contains("bool"));
    CHECK_THROWS_WITH(ones({3}) & ones({3}, kBool), Contains("operator&") && Contains("float32"));
    CHECK_THROWS_WITH(eq(ones({2}), ones({3})), Contains("eq") && Contains("[2]") && Contains("[3]"));
}

TEST_CASE("elementwise: in-place updates follow torch's autograd rules", "[ops][elementwise]") {
    // A leaf that requires grad is refused in grad mode, allowed under NoGradGuard.
    Tensor w = ones({3}).requires_grad_();
    CHECK_THROWS_WITH(w += 1.0f, Contains("add_") && Contains("a leaf Variable that requires grad"));
    CHECK_THROWS_WITH(w.div_(ones({3})), Contains("div_") && Contains("a leaf Variable that requires grad"));
    {
        NoGradGuard no_grad;
        w *= 2.0f;
        w.sub_(ones({3}), 0.5f);
    }
    CHECK(w.to_vector() == std::vector<float>{1.5f, 1.5f, 1.5f});
    CHECK(w.version() == 2);
    CHECK(w.is_leaf());

    // A tensor that does not require grad, updated with one that does, joins the graph (as torch).
    Tensor buf = zeros({3});
    buf += w;
    REQUIRE(buf.requires_grad());
    CHECK(std::string(buf.grad_fn()->name()) == "AddBackward0");
    sum(mul(buf, 3.0f)).backward();
    CHECK(w.grad().to_vector() == std::vector<float>{3, 3, 3});
    // ... except a view: its base would not see the new history.
    Tensor base = zeros({2, 3});
    CHECK_THROWS_WITH(base.select(0, 1).add_(w), Contains("add_") && Contains("view"));

    // Backward needs a tensor's old values: updating it afterwards is an error, as torch's.
    Tensor a = tensor({1, 2, 3}).requires_grad_();
    Tensor h = a * 2.0f;
    Tensor z = sum(mul(h, h));  // saves h
    h += 1.0f;
    CHECK_THROWS_WITH(z.backward(), Contains("modified by an inplace operation"));
    // Updates whose backward needs nothing old chain fine: d/da of ((a * 2) * a_detached + 1) / 2.
    Tensor g = a * 2.0f;
    g *= tensor({1, 2, 3});
    g += 1.0f;
    g /= 2.0f;
    CHECK(std::string(g.grad_fn()->name()) == "DivBackward1");
    sum(g).backward();
    CHECK(a.grad().to_vector() == std::vector<float>{1, 2, 3});
    // mul_ saves self's old values when the other operand needs them.
    Tensor p = tensor({1, 2}).requires_grad_(), q = tensor({3, 4}).requires_grad_();
    Tensor r = p * 1.0f;
    r *= q;
    r *= q;
    sum(r).backward();
    CHECK(p.grad().to_vector() == std::vector<float>{9, 16});
    CHECK(q.grad().to_vector() == std::vector<float>{6, 16});  // d(p q^2)/dq = 2 p q
}

TEST_CASE("elementwise: x += x and overlapping operands read the old values", "[ops][elementwise]") {
    Tensor x = tensor({1, 2, 3, 4});
    x += x;
    CHECK(x.to_vector() == std::vector<float>{2, 4, 6, 8});
    x.narrow(0, 1, 3).sub_(x.narrow(0, 0, 3));  // x[1:] -= x[:-1], all from the old x
    CHECK(x.to_vector() == std::vector<float>{2, 2, 2, 2});
    Tensor a = tensor({1, 2, 3}).requires_grad_();
    Tensor h = a * 1.0f;
    h *= h;  // h = a^2
    sum(h).backward();
    CHECK(a.grad().to_vector() == std::vector<float>{2, 4, 6});
}

TEST_CASE("elementwise: unrecorded in-place updates stay the plain loops, bit for bit", "[ops][elementwise]") {
    // What Tensor::add_ and mul_ computed before they were recorded ops: d[i] += alpha * o[i],
    // d[i] *= factor, in place, for contiguous and strided tensors, any thread count.
    test::ThreadsGuard threads;
    for (const int nthreads : {1, 2}) {
        set_num_threads(nthreads);
        Generator gen(12);
        const int64_t n = 3 * (1 << 15) + 7;  // several chunks of the thread split
        Tensor d = randn({n}, gen), o = randn({n}, gen);
        std::vector<float> want = d.to_vector();
        const std::vector<float> ov = o.to_vector();
        for (size_t i = 0; i < want.size(); ++i) want[i] += -0.37f * ov[i];
        d.add_(o, -0.37f);
        CHECK(std::memcmp(d.to_vector().data(), want.data(), want.size() * sizeof(float)) == 0);
        for (auto& v : want) v *= 1.7f;
        d.mul_(1.7f);
        CHECK(std::memcmp(d.to_vector().data(), want.data(), want.size() * sizeof(float)) == 0);
        // Strided: a transposed view updated by a transposed operand.
        Tensor m = randn({64, 48}, gen), k = randn({48, 64}, gen);
        const uint32_t version = m.version();
        std::vector<float> mv = m.to_vector();
        const std::vector<float> kv = k.to_vector();
        for (int64_t i = 0; i < 64; ++i) {
            for (int64_t j = 0; j < 48; ++j) mv[static_cast<size_t>(i * 48 + j)] += 2.5f * kv[static_cast<size_t>(j * 64 + i)];
        }
        m.t().add_(k, 2.5f);
        CHECK(std::memcmp(m.to_vector().data(), mv.data(), mv.size() * sizeof(float)) == 0);
        CHECK(m.version() == version + 1);
    }
}

TEST_CASE("elementwise: operators and methods are the functions", "[ops][elementwise]") {
    const Tensor a = tensor({1, 2, 4}), b = tensor({2, 2, 2});
    CHECK((a / b).to_vector() == std::vector<float>{0.5f, 1, 2});
    CHECK((1.0f + a).to_vector() == std::vector<float>{2, 3, 5});
    CHECK((2.0f - a).to_vector() == std::vector<float>{1, 0, -2});
    CHECK((a - 1.0f).to_vector() == std::vector<float>{0, 1, 3});
    CHECK((a / 2.0f).to_vector() == std::vector<float>{0.5f, 1, 2});
    CHECK((2.0f / a).to_vector() == std::vector<float>{2, 1, 0.5f});
    CHECK(pow(a, b).to_vector() == std::vector<float>{1, 4, 16});
    CHECK(pow(2.0f, a).to_vector() == std::vector<float>{2, 4, 16});
    CHECK(a.pow(b).to_vector() == a.pow(2.0f).to_vector());
    CHECK(a.add(b, 0.5f).to_vector() == std::vector<float>{2, 3, 5});
    CHECK(a.sub(1.0f).to_vector() == std::vector<float>{0, 1, 3});
    CHECK(a.maximum(b).to_vector() == std::vector<float>{2, 2, 4});
    CHECK(a.minimum(b).to_vector() == std::vector<float>{1, 2, 2});
    CHECK(a.div(b).mul(b).to_vector() == a.to_vector());
    // x / 3 is a true division (one rounding), not x * (1/3).
    const Tensor x = tensor({1, 7, 10});
    const std::vector<float> q = (x / 3.0f).to_vector();
    CHECK(q == std::vector<float>{1.0f / 3.0f, 7.0f / 3.0f, 10.0f / 3.0f});
    // The nodes carry torch's names.
    const Tensor l = ones({2}).requires_grad_();
    CHECK(std::string((l / 2.0f).grad_fn()->name()) == "DivBackward1");
    CHECK(std::string((2.0f - l).grad_fn()->name()) == "RsubBackward1");
    CHECK(std::string((l - 2.0f).grad_fn()->name()) == "SubBackward1");
    CHECK(std::string((-l).grad_fn()->name()) == "NegBackward0");
    CHECK(std::string(maximum(l, l).grad_fn()->name()) == "MaximumBackward0");
}

TEST_CASE("elementwise: masks are bool tensors that convert and select", "[ops][elementwise]") {
    const Tensor x = tensor({-1, 0, 2, 3});
    const Tensor m = x > 0.0;
    REQUIRE(m.dtype() == kBool);
    CHECK(m.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 1});
    CHECK(m.to(kFloat32).to_vector() == std::vector<float>{0, 0, 1, 1});
    CHECK(sum(m.to(kFloat32)).item() == 2.0f);
    CHECK(where(m, x, zeros({4})).to_vector() == std::vector<float>{0, 0, 2, 3});
    CHECK(where(x >= 0.0, x, -1.0).to_vector() == std::vector<float>{-1, 0, 2, 3});
    CHECK((0.0 < x).to_vector<int64_t>() == m.to_vector<int64_t>());
    CHECK((2.0 == x).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 0});
    CHECK(((x > -1.0) & (x < 3.0)).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 0});
    CHECK(((x < 0.0) | (x > 2.0)).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 1});
    // (Not std::vector<int64_t>{1, 1, 0, 0}: GCC 12.2 with -march=native on this AVX-512 machine
    // builds that constant as {1, 1, 1, 1}, a broadcast of its first element.)
    CHECK((~m).to_vector<bool>() == std::vector<bool>{true, true, false, false});
    CHECK(x.masked_fill(m, 9.0).to_vector() == std::vector<float>{-1, 0, 9, 9});
    CHECK(x.where(m, tensor({5, 6, 7, 8})).to_vector() == std::vector<float>{5, 6, 2, 3});
    CHECK(x.eq(tensor({-1, 1, 2, 1})).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1, 0});
    // Labels against predictions, both int64: compared exactly, as int64 (2^53 + 1 is not a float).
    const Tensor big = from_vector(std::vector<int64_t>{(int64_t{1} << 53) + 1, 3}, {2});
    const Tensor big2 = from_vector(std::vector<int64_t>{int64_t{1} << 53, 3}, {2});
    CHECK((big == big2).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK((big == 3.0).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
    CHECK((test::labels_of({1, 2}) < 1.5).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    // A mask never requires grad, also when computed from a tensor that does.
    CHECK_FALSE((ones({2}).requires_grad_() > 0.0).requires_grad());
    // Integer tensors fill too (labels to ignore_index, as torch users write it).
    Tensor labels = test::labels_of({1, 2, 3, 4});
    labels.masked_fill_(m, -100);
    CHECK(labels.to_vector<int64_t>() == std::vector<int64_t>{1, 2, -100, -100});
    CHECK(masked_fill(labels, ~m, 7).to_vector<int64_t>() == std::vector<int64_t>{7, 7, -100, -100});
    // In-place masked_fill_ records its node and bumps the version.
    Tensor s = tensor({1, 2, 3, 4}).requires_grad_();
    Tensor scores = s * 1.0f;
    scores.masked_fill_(m, -INFINITY);
    CHECK(scores.to_vector() == std::vector<float>{1, 2, -INFINITY, -INFINITY});
    CHECK(std::string(scores.grad_fn()->name()) == "MaskedFillBackward0");
    sum(mul(scores, tensor({1, 1, 0, 0}))).backward();
    CHECK(s.grad().to_vector() == std::vector<float>{1, 1, 0, 0});
}
