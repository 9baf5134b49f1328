// The losses: every case of loss_options.safetensors (each loss with its options, reductions,
// [N, C, d...] and unbatched inputs, class-probability targets, logits of 1e4 against a float64
// reference) on contiguous and strided inputs; gradcheck of each loss and option; torch's edge
// cases (empty inputs, all targets ignored); the messages of bad calls; the loss modules.
#include <sstream>

#include "test_helpers.hpp"

using namespace normnet;

namespace {

// Every element within tol (absolute + relative) of the expected one, or equal to it (so
// matching infinities, as the target gradient of binary_cross_entropy at 0 and 1, pass).
void require_matches(const Tensor& actual, const Tensor& expected, const std::string& what, double tol = 1e-5) {
    INFO(what << ": shapes " << actual.shape() << " vs " << expected.shape());
    REQUIRE(actual.shape() == expected.shape());
    const auto a = actual.to_vector(), e = expected.to_vector();
    for (size_t i = 0; i < a.size(); ++i) {
        INFO(what << "[" << i << "]: " << a[i] << " vs " << e[i]);
        if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))) continue;
        REQUIRE(std::abs(static_cast<double>(a[i]) - e[i]) <= tol * (1.0 + std::abs(static_cast<double>(e[i]))));
    }
}

Reduction reduction_named(const std::string& name) {
    if (name == "none") return kNone;
    if (name == "sum") return kSum;
    REQUIRE(name == "mean");
    return kMean;
}

// The loss called by name with the options of a golden case.
struct LossCall {
    std::string fn;
    Reduction reduction = kMean;
    Tensor weight, pos_weight;
    int64_t ignore_index = -100;
    double label_smoothing = 0.0, beta = 1.0, delta = 1.0;

    Tensor operator()(const Tensor& x, const Tensor& t) const {
        if (fn == "nll_loss") return nll_loss(x, t, {.weight = weight, .ignore_index = ignore_index, .reduction = reduction});
        if (fn == "cross_entropy") {
            return cross_entropy(x, t, {.weight = weight, .ignore_index = ignore_index, .reduction = reduction,
                                        .label_smoothing = label_smoothing});
        }
        if (fn == "binary_cross_entropy") return binary_cross_entropy(x, t, {.weight = weight, .reduction = reduction});
        if (fn == "binary_cross_entropy_with_logits") {
            return binary_cross_entropy_with_logits(x, t, {.weight = weight, .reduction = reduction, .pos_weight = pos_weight});
        }
        if (fn == "l1_loss") return l1_loss(x, t, {.reduction = reduction});
        if (fn == "mse_loss") return mse_loss(x, t, {.reduction = reduction});
        if (fn == "smooth_l1_loss") return smooth_l1_loss(x, t, {.reduction = reduction, .beta = beta});
        if (fn == "huber_loss") return huber_loss(x, t, {.reduction = reduction, .delta = delta});
        FAIL("unknown loss " << fn);
        return {};
    }
};

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
}

// x's values seen through a non-contiguous view (every other element of a [*x.shape, 2] leaf),
// so an op that reads its input as contiguous fails.
struct StridedInput {
    Tensor leaf, view;
    StridedInput(const Tensor& x, bool requires_grad) {
        Shape s = x.shape();
        s.push_back(2);
        leaf = zeros(s, x.dtype());
        leaf.select(s.size() - 1, 0).copy_(x);
        if (requires_grad) leaf.requires_grad_();
        view = leaf.select(s.size() - 1, 0);
    }
    Tensor grad() const { return leaf.grad().select(leaf.dim() - 1, 0); }
};

Tensor input(const Shape& shape, uint64_t seed, float scale = 1.0f) {
    Generator gen(seed);
    return mul(randn(shape, gen), scale).detach().requires_grad_();
}

// Values in (0.05, 0.95): binary_cross_entropy's input, away from its clamps.
Tensor unit_input(const Shape& shape, uint64_t seed) {
    Generator gen(seed);
    return add(mul(rand(shape, gen), 0.9f), 0.05f).detach().requires_grad_();
}

void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

}  // namespace

TEST_CASE("losses: every option matches PyTorch on contiguous and strided inputs", "[ops][loss][golden]") {
    const auto g = test::golden("loss_options.safetensors");
    const auto cases = split(g.metadata.at("cases"));
    REQUIRE(cases.size() >= 50);
    for (const std::string& c : cases) {
        const auto meta = [&](const std::string& key) -> const std::string* {
            const auto it = g.metadata.find(c + "." + key);
            return it == g.metadata.end() ? nullptr : &it->second;
        };
        const auto tensor_or_none = [&](const std::string& name) { return find_tensor(g.tensors, c + "." + name); };
        LossCall call;
        call.fn = *meta("fn");
        call.reduction = reduction_named(*meta("reduction"));
        call.weight = tensor_or_none("weight");
        call.pos_weight = tensor_or_none("pos_weight");
        if (const auto* v = meta("ignore_index")) call.ignore_index = std::stoll(*v);
        if (const auto* v = meta("label_smoothing")) call.label_smoothing = std::stod(*v);
        if (const auto* v = meta("beta")) call.beta = std::stod(*v);
        if (const auto* v = meta("delta")) call.delta = std::stod(*v);
        const bool class_target = g.dtypes.at(c + ".target") == "I64";
        const Tensor x = g.at(c + ".input");
        const Tensor t = class_target ? test::to_indices(g.at(c + ".target")) : g.at(c + ".target");
        const Tensor dy = tensor_or_none("dy");
        for (const bool strided : {false, true}) {
            INFO("case " << c << (strided ? " (strided inputs)" : ""));
            const StridedInput sx(x, true), st(t, !class_target);
            const Tensor xs = strided ? sx.view : test::leaf(x);
            const Tensor ts = strided ? st.view : (class_target ? t : test::leaf(t));
            const Tensor loss = call(xs, ts);
            require_matches(loss, g.at(c + ".loss"), c + ".loss");
            if (dy.defined()) {
                loss.backward(dy);
            } else {
                loss.backward();
            }
            require_matches(strided ? sx.grad() : xs.grad(), g.at(c + ".dinput"), c + ".dinput");
            if (!class_target) require_matches(strided ? st.grad() : ts.grad(), g.at(c + ".dtarget"), c + ".dtarget");
        }
    }
}

TEST_CASE("losses: gradcheck of every loss and option", "[ops][loss][gradcheck]") {
    const Tensor w5 = tensor({0.5f, 1.0f, 2.0f, 0.3f, 1.5f});
    const Tensor labels = test::labels_of({0, 3, -100, 4});
    const Tensor labels_nd = from_vector(std::vector<int64_t>{1, 0, 4, 2, -100, 3}, {2, 3});
    for (const Reduction r : {kNone, kMean, kSum}) {
        INFO("reduction " << static_cast<int>(r));
        for (const double eps : {0.0, 0.2}) {
            INFO("label_smoothing " << eps);
            require_gradcheck(gradcheck(
                [&](auto& in) { return cross_entropy(in[0], labels, {.reduction = r, .label_smoothing = eps}); },
                {input({4, 5}, 1, 2.0f)}));
            require_gradcheck(gradcheck(
                [&](auto& in) {
                    return cross_entropy(in[0], labels_nd, {.weight = w5, .reduction = r, .label_smoothing = eps});
                },
                {input({2, 5, 3}, 2, 2.0f)}));
            // Class probabilities: the gradient reaches the target too.
            require_gradcheck(gradcheck(
                [&](auto& in) { return cross_entropy(in[0], in[1], {.weight = w5, .reduction = r, .label_smoothing = eps}); },
                {input({3, 5, 2}, 3, 2.0f), input({3, 5, 2}, 4)}));
        }
        require_gradcheck(gradcheck([&](auto& in) { return nll_loss(in[0], labels_nd, {.weight = w5, .reduction = r}); },
                                    {input({2, 5, 3}, 5)}));
        require_gradcheck(gradcheck([&](auto& in) { return nll_loss(in[0], test::labels_of({0, 3, 1, 4}), {.ignore_index = 3, .reduction = r}); },
                                    {input({4, 5}, 6)}));
        const Tensor w = tensor({0.5f, 2.0f, 1.0f});
        require_gradcheck(gradcheck(
            [&](auto& in) { return binary_cross_entropy(in[0], in[1], {.weight = w, .reduction = r}); },
            {unit_input({4, 3}, 7), unit_input({4, 3}, 8)}));
        require_gradcheck(gradcheck(
            [&](auto& in) {
                return binary_cross_entropy_with_logits(in[0], in[1], {.weight = w.view({3, 1}), .reduction = r,
                                                                       .pos_weight = tensor({3.0f, 0.5f, 1.0f, 2.0f})});
            },
            {input({3, 4}, 9, 2.0f), unit_input({3, 4}, 10)}));
        // Differences of order 1 away from 0, so no element sits on a kink of l1, smooth_l1 or huber.
        const std::vector<Tensor> pair{input({3, 4}, 11, 2.0f), input({3, 4}, 12, 2.0f)};
        require_gradcheck(gradcheck([&](auto& in) { return l1_loss(in[0], in[1], {.reduction = r}); }, pair));
        require_gradcheck(gradcheck([&](auto& in) { return mse_loss(in[0], in[1], {.reduction = r}); }, pair));
        for (const double beta : {0.0, 0.7, 1.0}) {
            require_gradcheck(
                gradcheck([&](auto& in) { return smooth_l1_loss(in[0], in[1], {.reduction = r, .beta = beta}); }, pair));
        }
        for (const double delta : {0.5, 1.0, 3.0}) {
            require_gradcheck(
                gradcheck([&](auto& in) { return huber_loss(in[0], in[1], {.reduction = r, .delta = delta}); }, pair));
        }
    }
}

TEST_CASE("losses: logits of 1e4 stay exact where softmax saturates", "[ops][loss][parity]") {
    // log(1 + e^-1e4) is 0 in float32: the loss of a confident right answer is 0, of a confident
    // wrong one exactly the logit gap, and nothing overflows.
    Tensor x = tensor({1e4f, -1e4f}).view({1, 2}).requires_grad_();
    const Tensor ce = cross_entropy(x, test::labels_of({1}));
    CHECK(ce.item() == 2e4f);
    ce.backward();
    CHECK(x.grad().to_vector() == std::vector<float>{1.0f, -1.0f});
    const Tensor logits = tensor({1e4f, -1e4f, 1e4f, -1e4f}).requires_grad_();
    const Tensor bce = binary_cross_entropy_with_logits(logits, tensor({1, 0, 0, 1}), {.reduction = kNone});
    CHECK(bce.to_vector() == std::vector<float>{0.0f, 0.0f, 1e4f, 1e4f});
    bce.backward(ones({4}));
    CHECK(logits.grad().to_vector() == std::vector<float>{0.0f, 0.0f, 1.0f, -1.0f});
}

TEST_CASE("losses: torch's edge cases: empty inputs, every target ignored, probability 0 and 1", "[ops][loss][parity]") {
    // Means over nothing are nan, sums 0, unreduced losses empty.
    CHECK(std::isnan(l1_loss(zeros({0, 3}), zeros({0, 3})).item()));
    CHECK(huber_loss(zeros({0, 3}), zeros({0, 3}), {.reduction = kSum}).item() == 0.0f);
    CHECK(smooth_l1_loss(zeros({0}), zeros({0}), {.reduction = kNone}).shape() == Shape{0});
    CHECK(std::isnan(cross_entropy(zeros({0, 3}), zeros({0, 3})).item()));
    CHECK(std::isnan(nll_loss(zeros({0, 3}), zeros({0}, kInt64)).item()));
    CHECK(cross_entropy(zeros({0, 3, 2}), zeros({0, 2}, kInt64), {.reduction = kNone}).shape() == Shape{0, 2});
    // Every target ignored: the mean is 0/0, the sum 0, and no gradient flows.
    const Tensor ignored = test::labels_of({-100, -100});
    CHECK(std::isnan(cross_entropy(randn({2, 3}), ignored).item()));
    CHECK(std::isnan(nll_loss(randn({2, 3}), ignored).item()));
    Tensor x = randn({2, 3}).requires_grad_();
    cross_entropy(x, ignored, {.reduction = kSum, .label_smoothing = 0.1}).backward();
    CHECK(x.grad().to_vector() == std::vector<float>(6, 0.0f));
    // binary_cross_entropy clamps its logs at -100, so 0 and 1 give finite losses.
    CHECK(binary_cross_entropy(tensor({0.0f, 1.0f}), tensor({1.0f, 0.0f}), {.reduction = kNone}).to_vector() ==
          std::vector<float>{100.0f, 100.0f});
}

TEST_CASE("losses: bad calls name the loss and the shapes or values", "[ops][loss]") {
    using Catch::Contains;
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0, 3})),
                      Contains("cross_entropy: target 3 at index 1 is out of bounds for 3 classes"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3, 4}), zeros({2, 3}, kInt64)),
                      Contains("target of shape [2, 3] does not match logits of shape [2, 3, 4] (expected [2, 4])"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), ones({2, 3}, kInt64)),
                      Contains("holds class probabilities and must be float32, got int64"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), zeros({2, 3}), {.ignore_index = 1}),
                      Contains("ignore_index is not supported for class-probability targets"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0, 1}), {.weight = ones({4})}),
                      Contains("weight tensor should be defined either for all 3 classes or no classes but got weight "
                               "tensor of shape: [4]"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0, 1}), {.label_smoothing = 1.5}),
                      Contains("label_smoothing must be between 0.0 and 1.0, got 1.5"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0, 1}), {.weight = ones({3}).requires_grad_()}),
                      Contains("the derivative for 'weight' is not implemented"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}, kInt64), test::labels_of({0, 1})),
                      Contains("cross_entropy: expected float32 logits, got int64"));
    CHECK_THROWS_WITH(cross_entropy(zeros(Shape{}), zeros(Shape{}, kInt64)), Contains("must be [N, C, ...] or [C], got []"));
    CHECK_THROWS_WITH(nll_loss(zeros({2, 3}), test::labels_of({0, -1})),
                      Contains("nll_loss: target -1 at index 1 is out of bounds for 3 classes"));
    CHECK_THROWS_WITH(nll_loss(zeros({2, 3}), zeros({2})), Contains("nll_loss: expected target of dtype int64"));
    CHECK_THROWS_WITH(mse_loss(zeros({2, 3}), zeros({3})),
                      Contains("mse_loss: input of shape [2, 3] and target of shape [3] differ"));
    CHECK_THROWS_WITH(l1_loss(zeros({2}), zeros({2}, kInt64)), Contains("l1_loss: expected float32 input and target"));
    CHECK_THROWS_WITH(binary_cross_entropy(tensor({0.5f, 1.5f}), tensor({0, 1})),
                      Contains("binary_cross_entropy: all elements of input should be between 0 and 1, got 1.5 at index 1"));
    CHECK_THROWS_WITH(binary_cross_entropy(zeros({2, 3}), zeros({2, 3}), {.weight = ones({2})}),
                      Contains("weight of shape [2] does not broadcast to the input's shape [2, 3]"));
    CHECK_THROWS_WITH(binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}), {.pos_weight = ones({1, 2, 3})}),
                      Contains("pos_weight of shape [1, 2, 3] does not broadcast to the input's shape [2, 3]"));
    CHECK_THROWS_WITH(smooth_l1_loss(zeros({2}), zeros({2}), {.beta = -1.0}),
                      Contains("smooth_l1_loss: beta must not be negative, got -1"));
    CHECK_THROWS_WITH(huber_loss(zeros({2}), zeros({2}), {.delta = 0.0}), Contains("huber_loss: delta must be positive"));
}

TEST_CASE("losses: cross_entropy(logits, targets, label_smoothing) and the defaults are torch's", "[ops][loss]") {
    Generator gen(3);
    const Tensor x = randn({4, 6}, gen);
    const Tensor t = test::labels_of({0, 5, 2, 2});
    CHECK(test::bit_equal(cross_entropy(x, t, 0.1f), cross_entropy(x, t, {.label_smoothing = 0.1f})));
    // nll_loss(log_softmax(x)) is cross_entropy(x).
    CHECK(std::abs(nll_loss(log_softmax(x), t).item() - cross_entropy(x, t).item()) <= 1e-6f);
    const CrossEntropyFuncOptions defaults;
    CHECK(defaults.ignore_index == -100);
    CHECK(defaults.reduction == kMean);
    CHECK(defaults.label_smoothing == 0.0);
    CHECK(SmoothL1LossFuncOptions{}.beta == 1.0);
    CHECK(HuberLossFuncOptions{}.delta == 1.0);
}

TEST_CASE("losses: the loss modules hold their options and weights as PyTorch's", "[ops][loss][modules]") {
    Generator gen(4);
    const Tensor x = randn({5, 3}, gen);
    const Tensor t = test::labels_of({0, 2, 1, 1, 0});
    const Tensor w = tensor({1.0f, 2.0f, 0.5f});
    CrossEntropyLoss ce({.weight = w, .label_smoothing = 0.1});
    CHECK(ce.to_string() == "CrossEntropyLoss()");
    CHECK(ce.state_dict().size() == 1);
    CHECK(ce.state_dict()[0].first == "weight");
    CHECK(ce(x, t).item() == cross_entropy(x, t, {.weight = w, .label_smoothing = 0.1}).item());
    // The weight is the module's own buffer: loading a state_dict changes what forward uses.
    ce.load_state_dict({{"weight", ones({3})}});
    CHECK(ce(x, t).item() == cross_entropy(x, t, {.label_smoothing = 0.1}).item());
    CHECK(w.to_vector() == std::vector<float>{1.0f, 2.0f, 0.5f});
    BCEWithLogitsLoss bce({.pos_weight = tensor({2.0f, 1.0f, 3.0f})});
    CHECK(bce.state_dict()[0].first == "pos_weight");
    CHECK(bce.to_string() == "BCEWithLogitsLoss()");
    const Tensor p = rand({5, 3}, gen);
    CHECK(bce(x, p).item() == binary_cross_entropy_with_logits(x, p, {.pos_weight = tensor({2.0f, 1.0f, 3.0f})}).item());
    CHECK(MSELoss({.reduction = kSum})(x, x * 2.0f).item() == mse_loss(x, x * 2.0f, {.reduction = kSum}).item());
    CHECK(L1Loss()(x, x).item() == 0.0f);
    CHECK(SmoothL1Loss({.beta = 0.5}).options().beta == 0.5);
    CHECK(HuberLoss().to_string() == "HuberLoss()");
    CHECK(NLLLoss()(log_softmax(x), t).item() == nll_loss(log_softmax(x), t).item());
    CHECK(BCELoss()(rand({2}, gen), rand({2}, gen)).dim() == 0);
    // clone() copies the weight buffer: changing the copy leaves the original alone.
    auto copy = std::dynamic_pointer_cast<CrossEntropyLoss>(ce.clone());
    REQUIRE(copy != nullptr);
    copy->load_state_dict({{"weight", zeros({3})}});
    CHECK(ce.state_dict()[0].second.to_vector() == std::vector<float>{1.0f, 1.0f, 1.0f});
}
