// Optimizers, LR schedules and gradient clipping against PyTorch (tests/golden/optim, schedule and
// clip .safetensors), plus what the goldens cannot show: one step counter per optimizer, exact
// resume from state_dict, checked state and options, skipped parameters, kernels vs references.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "optim_test_helpers.hpp"
#include "reference_kernels.hpp"

using namespace normnet;
using test::bit_equal;
using test::keys;
using test::same_state;
using test::violation;

namespace {

void require_near(const Tensor& actual, const Tensor& expected, const std::string& what, double rtol = 1e-6,
                  double atol = 1e-7) {
    INFO(what << ": shapes " << actual.shape().str() << " vs " << expected.shape().str());
    REQUIRE(actual.shape() == expected.shape());
    INFO(what << ": largest error beyond rtol " << rtol << ", atol " << atol << ": " << violation(actual, expected, rtol, atol));
    REQUIRE(violation(actual, expected, rtol, atol) == 0.0);
}


// Builds the optimizer a golden case describes in its "hparams" metadata (PyTorch's param group).
std::unique_ptr<Optimizer> optimizer_from_hparams(const nlohmann::json& hp, const std::vector<Tensor>& params) {
    REQUIRE(hp.value("amsgrad", false) == false);
    REQUIRE(hp.value("maximize", false) == false);
    const std::string kind = hp.at("optimizer");
    if (kind == "SGD") {
        return std::make_unique<SGD>(params, SGDOptions{.lr = hp.at("lr"),
                                                        .momentum = hp.at("momentum"),
                                                        .dampening = hp.at("dampening"),
                                                        .weight_decay = hp.at("weight_decay"),
                                                        .nesterov = hp.at("nesterov")});
    }
    const std::pair<double, double> betas{hp.at("betas")[0], hp.at("betas")[1]};
    if (kind == "Adam") {
        return std::make_unique<Adam>(params, AdamOptions{.lr = hp.at("lr"), .betas = betas, .eps = hp.at("eps"),
                                                          .weight_decay = hp.at("weight_decay")});
    }
    REQUIRE(kind == "AdamW");
    return std::make_unique<AdamW>(params, AdamWOptions{.lr = hp.at("lr"), .betas = betas, .eps = hp.at("eps"),
                                                        .weight_decay = hp.at("weight_decay")});
}

// Deterministic pseudo-gradients for the resume tests: step k's gradient of each parameter.
void set_grads(const std::vector<Tensor>& params, int k) {
    for (size_t i = 0; i < params.size(); ++i) {
        Generator gen(1000 + 17 * static_cast<uint64_t>(k) + i);
        params[i].set_grad(randn(params[i].shape(), gen));
    }
}

// A few parameters with names as a model's (dots included) and some odd sizes.
NamedTensors make_named_params(uint64_t seed) {
    Generator gen(seed);
    return {{"0.weight", randn({7, 5}, gen).requires_grad_()},
            {"0.bias", randn({7}, gen).requires_grad_()},
            {"2.weight", randn({3, 7}, gen).requires_grad_()}};
}

std::vector<Tensor> values(const NamedTensors& named) {
    std::vector<Tensor> out;
    for (const auto& [name, t] : named) out.push_back(t);
    return out;
}

NamedTensors clone_params(const NamedTensors& named) {
    NamedTensors out;
    for (const auto& [name, t] : named) out.emplace_back(name, t.detach().clone().requires_grad_());
    return out;
}

// "step", "lr", then the group keys of a one-group optimizer with these options, then `rest`.
std::vector<std::string> state_keys(const std::vector<std::string>& options, const std::vector<std::string>& rest) {
    std::vector<std::string> out{"step", "lr", "param_groups.0.params"};
    for (const auto& o : options) out.push_back("param_groups.0." + o);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}
const std::vector<std::string> kSGDOptionKeys{"lr", "weight_decay", "momentum", "dampening", "nesterov"};
const std::vector<std::string> kAdamOptionKeys{"lr", "weight_decay", "betas", "eps", "amsgrad"};

// The optimizers with non-default options, each made by a factory so tests can build twins.
using Factory = std::function<std::unique_ptr<Optimizer>(NamedTensors)>;
std::vector<std::pair<std::string, Factory>> factories() {
    return {
        {"SGD", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<SGD>(std::move(p), SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3,
                                                                   .nesterov = true});
         }},
        {"Adam", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<Adam>(std::move(p), AdamOptions{.lr = 0.01, .weight_decay = 0.1});
         }},
        {"AdamW", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<AdamW>(std::move(p), AdamWOptions{.lr = 0.01, .weight_decay = 0.05});
         }},
        {"Adam amsgrad", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<Adam>(std::move(p), AdamOptions{.lr = 0.01, .amsgrad = true});
         }},
        {"RMSprop", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<RMSprop>(std::move(p), RMSpropOptions{.lr = 0.01, .weight_decay = 1e-3,
                                                                           .momentum = 0.5, .centered = true});
         }},
        {"Adagrad", [](NamedTensors p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<Adagrad>(std::move(p), AdagradOptions{.lr = 0.1, .lr_decay = 0.01,
                                                                           .initial_accumulator_value = 0.1});
         }},
    };
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PyTorch goldens

TEST_CASE("optim: every optim.safetensors case matches torch 1.13 over 5 steps", "[optim][golden]") {
    const double kRtol = test::kOptimRtol, kAtol = test::kOptimAtol;
    const auto g = test::golden("optim.safetensors");
    // The *_sparse cases give p1 a gradient only in steps 1 and 2 (none in the others): Adam's bias
    // corrections count each parameter's own steps, as torch's per-parameter state['step'].
    const char* cases[] = {"sgd",  "sgd_momentum", "sgd_dampening", "sgd_nesterov",        "sgd_wd",
                           "adam", "adam_wd",      "adam_betas",    "adamw",               "adamw_wd",
                           "adam_sparse", "adamw_sparse", "sgd_momentum_sparse"};
    for (const std::string c : cases) {
        INFO("case " << c << ": " << g.metadata.at(c + ".hparams"));
        const auto hp = nlohmann::json::parse(g.metadata.at(c + ".hparams"));
        Tensor p0 = test::leaf(g.at(c + ".init.p0"));
        Tensor p1 = test::leaf(g.at(c + ".init.p1"));
        auto opt = optimizer_from_hparams(hp, {p0, p1});
        CHECK(opt->name() == hp.at("optimizer").get<std::string>());
        bool exact = true;
        for (int k = 0; k < 5; ++k) {
            const std::string step = std::to_string(k);
            const Tensor g0 = g.at(c + ".grad" + step + ".p0"), g1 = find_tensor(g.tensors, c + ".grad" + step + ".p1");
            p0.set_grad(g0.clone());
            p1.set_grad(g1.defined() ? g1.clone() : Tensor());
            opt->step();
            require_near(p0, g.at(c + ".after" + step + ".p0"), c + ".after" + step + ".p0", kRtol, kAtol);
            require_near(p1, g.at(c + ".after" + step + ".p1"), c + ".after" + step + ".p1", kRtol, kAtol);
            exact = exact && bit_equal(p0, g.at(c + ".after" + step + ".p0")) &&
                    bit_equal(p1, g.at(c + ".after" + step + ".p1"));
            // Weight decay happens inside step(); the gradients themselves are left alone, as in torch.
            CHECK(bit_equal(p0.grad(), g0));
            if (g1.defined()) CHECK(bit_equal(p1.grad(), g1));
        }
        CHECK(opt->step_count() == 5);
        if (opt->name() != "SGD") {
            CHECK(opt->param_step(0) == 5);
            CHECK(opt->param_step(1) == (c.ends_with("_sparse") ? 2 : 5));
        }
#ifdef __FMA__
        // With hardware fma the kernels do torch's operations in torch's order: identical bits.
        CHECK(exact);
#endif
    }
}

TEST_CASE("optim: every schedule.safetensors sequence matches torch's schedulers", "[optim][golden][schedule]") {
    const auto g = test::golden("schedule.safetensors");
    REQUIRE(g.metadata.at("base_lr") == "0.1");
    REQUIRE(g.metadata.at("T") == "20");
    REQUIRE(g.metadata.at("warmup") == "5");
    const std::vector<std::pair<std::string, LRSchedulerOptions>> cases = {
        {"constant", {.schedule = Schedule::constant}},
        {"step", {.schedule = Schedule::step, .step_size = 6, .gamma = 0.5}},
        {"cosine", {.schedule = Schedule::cosine, .total_steps = 20}},
        {"cosine_min", {.schedule = Schedule::cosine, .total_steps = 20, .eta_min = 0.01}},
        {"warmup_cosine", {.schedule = Schedule::cosine, .total_steps = 20, .warmup_steps = 5}},
        {"warmup_step", {.schedule = Schedule::step, .total_steps = 20, .warmup_steps = 5, .step_size = 6, .gamma = 0.5}},
        {"warmup_constant", {.schedule = Schedule::constant, .total_steps = 20, .warmup_steps = 5}},
    };
    for (const auto& [c, options] : cases) {
        INFO("case " << c << ": " << g.metadata.at(c + ".definition"));
        REQUIRE(g.dtypes.at(c + ".lr") == "F64");
        const auto expected = g.at(c + ".lr").to_vector();  // F64 in the file, float32 once loaded
        REQUIRE(expected.size() == 20);
        Tensor p = zeros({1}).requires_grad_();
        SGD opt({p}, {.lr = 0.1});
        LRScheduler sched(opt, options);
        CHECK(sched.base_lr() == 0.1);
        for (int64_t t = 0; t < 20; ++t) {
            INFO("t = " << t << ": lr " << opt.lr() << ", torch " << expected[static_cast<size_t>(t)]);
            CHECK(sched.position() == t);
            const double e = expected[static_cast<size_t>(t)];
            CHECK(std::abs(opt.lr() - e) <= 1e-6 * std::abs(e));
            CHECK(sched.lr_at(t) == opt.lr());
            opt.step();  // no grad: nothing moves, as in the script
            sched.step();
        }
    }
}

TEST_CASE("optim: clip_grad_norm matches torch.nn.utils.clip_grad_norm_", "[optim][golden][clip]") {
    const auto g = test::golden("clip.safetensors");
    for (const std::string c : {"clip1", "clip100"}) {
        INFO("case " << c);
        REQUIRE(g.metadata.at(c + ".norm_type") == "2.0");
        const double max_norm = std::stod(g.metadata.at(c + ".max_norm"));
        Tensor p0 = zeros({3, 4}).requires_grad_(), p1 = zeros({5}).requires_grad_();
        p0.set_grad(g.at(c + ".g0").clone());
        p1.set_grad(g.at(c + ".g1").clone());
        const double total = clip_grad_norm({p0, p1}, max_norm);
        const double expected = g.at(c + ".total_norm").item();
        INFO("total norm " << total << ", torch " << expected);
        CHECK(std::abs(total - expected) <= 1e-6 * expected);
        require_near(p0.grad(), g.at(c + ".clipped.g0"), c + ".clipped.g0");
        require_near(p1.grad(), g.at(c + ".clipped.g1"), c + ".clipped.g1");
        // PyTorch's values (README): ~11.45 clipped to 1, ~9.68 left alone below 100.
        if (c == "clip100") {
            CHECK(bit_equal(p0.grad(), g.at(c + ".g0")));
            CHECK(bit_equal(p1.grad(), g.at(c + ".g1")));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Semantics the goldens do not cover

TEST_CASE("optim: clip_grad_norm skips missing grads, checks max_norm, and keeps small norms", "[optim][clip]") {
    Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_(), none = zeros({3}).requires_grad_();
    a.set_grad(tensor({3, 0}));
    b.set_grad(tensor({0, 4}));
    CHECK(clip_grad_norm({a, none, b}, 10.0) == Approx(5.0).epsilon(1e-7));
    CHECK(a.grad().to_vector() == std::vector<float>{3, 0});
    const double total = clip_grad_norm({a, none, b}, 1.0);
    CHECK(total == Approx(5.0).epsilon(1e-7));
    CHECK(a.grad().at({0}) == Approx(0.6).epsilon(1e-6));
    CHECK(b.grad().at({1}) == Approx(0.8).epsilon(1e-6));
    CHECK_FALSE(none.grad().defined());
    CHECK(clip_grad_norm({none}, 1.0) == 0.0);
    CHECK_THROWS_WITH(clip_grad_norm({a, b}, -1.0), Catch::Contains("max_norm") && Catch::Contains("-1"));
}

TEST_CASE("optim: options default to PyTorch's", "[optim]") {
    const SGDOptions sgd;
    CHECK(sgd.lr == 0.01);
    CHECK(sgd.momentum == 0.0);
    CHECK(sgd.dampening == 0.0);
    CHECK(sgd.weight_decay == 0.0);
    CHECK(sgd.nesterov == false);
    const AdamOptions adam;
    CHECK(adam.lr == 1e-3);
    CHECK(adam.betas == std::pair<double, double>{0.9, 0.999});
    CHECK(adam.eps == 1e-8);
    CHECK(adam.weight_decay == 0.0);
    const AdamWOptions adamw;
    CHECK(adamw.lr == 1e-3);
    CHECK(adamw.betas == std::pair<double, double>{0.9, 0.999});
    CHECK(adamw.eps == 1e-8);
    CHECK(adamw.weight_decay == 0.01);
    const LRSchedulerOptions sched;
    CHECK(sched.schedule == Schedule::constant);
    CHECK(sched.warmup_steps == 0);
    CHECK(sched.gamma == 0.1);  // StepLR's default
    CHECK(sched.eta_min == 0.0);

    Tensor p = zeros({2}).requires_grad_();
    AdamW opt({p});
    CHECK(opt.name() == "AdamW");
    CHECK(opt.lr() == 1e-3);
    CHECK(opt.options().weight_decay == 0.01);
    CHECK(opt.step_count() == 0);
    CHECK(keys(opt.params()) == std::vector<std::string>{"0"});
}

TEST_CASE("optim: bad options throw normnet::Error naming the option", "[optim]") {
    Tensor p = zeros({2}).requires_grad_();
    const std::vector<Tensor> ps{p};
    using Catch::Contains;
    CHECK_THROWS_WITH(SGD(ps, {.lr = -0.1}), Contains("SGD") && Contains("lr") && Contains("-0.1"));
    CHECK_THROWS_WITH(SGD(ps, {.lr = NAN}), Contains("lr"));
    CHECK_THROWS_WITH(SGD(ps, {.momentum = -0.5}), Contains("momentum") && Contains("-0.5"));
    CHECK_THROWS_WITH(SGD(ps, {.weight_decay = -1}), Contains("weight_decay"));
    CHECK_THROWS_WITH(SGD(ps, {.nesterov = true}), Contains("nesterov") && Contains("momentum"));
    CHECK_THROWS_WITH(SGD(ps, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                      Contains("nesterov") && Contains("dampening"));
    CHECK_NOTHROW(SGD(ps, {.momentum = 0.9, .nesterov = true}));
    CHECK_NOTHROW(SGD(ps, {.momentum = 0.9, .dampening = 0.5}));
    CHECK_NOTHROW(SGD(ps, {.lr = 0.0}));

    CHECK_THROWS_WITH(Adam(ps, {.lr = -1e-3}), Contains("Adam") && Contains("lr"));
    CHECK_THROWS_WITH(Adam(ps, {.betas = {1.0, 0.999}}), Contains("betas.first") && Contains("[0, 1)"));
    CHECK_THROWS_WITH(Adam(ps, {.betas = {-0.1, 0.999}}), Contains("betas.first"));
    CHECK_THROWS_WITH(Adam(ps, {.betas = {0.9, 1.5}}), Contains("betas.second") && Contains("1.5"));
    CHECK_THROWS_WITH(Adam(ps, {.eps = -1e-8}), Contains("eps"));
    CHECK_THROWS_WITH(Adam(ps, {.weight_decay = -0.1}), Contains("weight_decay"));
    CHECK_NOTHROW(Adam(ps, {.betas = {0.0, 0.0}}));
    CHECK_THROWS_WITH(AdamW(ps, {.lr = -1}), Contains("AdamW") && Contains("lr"));
    CHECK_THROWS_WITH(AdamW(ps, {.betas = {0.9, 1.0}}), Contains("AdamW") && Contains("betas.second"));
    CHECK_THROWS_WITH(AdamW(ps, {.weight_decay = -0.01}), Contains("AdamW") && Contains("weight_decay"));
    CHECK_THROWS_AS(AdamW(ps, {.eps = INFINITY}), Error);

    SGD opt(ps, {.lr = 0.1});
    CHECK_THROWS_WITH(opt.set_lr(-1.0), Contains("lr"));
    CHECK(opt.lr() == 0.1);  // unchanged

    // Bad parameter lists.
    CHECK_THROWS_WITH(SGD(std::vector<Tensor>{}), Contains("empty parameter list"));
    CHECK_THROWS_WITH(SGD(std::vector<Tensor>{p, p}), Contains("same tensor"));
    CHECK_THROWS_WITH(SGD(NamedTensors{{"w", p}, {"w", zeros({1})}}), Contains("\"w\"") && Contains("more than once"));
    CHECK_THROWS_WITH(SGD(std::vector<Tensor>{p, Tensor()}), Contains("\"1\"") && Contains("undefined"));
    CHECK_THROWS_WITH(SGD(std::vector<Tensor>{zeros({4, 4}).t()}), Contains("contiguous"));
    CHECK_THROWS_WITH(SGD(std::vector<Tensor>{p * 2.0f}), Contains("non-leaf"));
}

TEST_CASE("optim: one step counter per optimizer, not per tensor", "[optim]") {
    for (const auto& [name, make] : factories()) {
        INFO(name);
        const NamedTensors named = make_named_params(1);
        const std::vector<Tensor> ps = values(named);
        auto opt = make(named);
        for (int k = 0; k < 7; ++k) {
            set_grads(ps, k);
            if (k % 2 == 0) ps[1].set_grad(Tensor());  // one parameter gets a gradient only every other step
            opt->step();
        }
        CHECK(opt->step_count() == 7);
        const NamedTensors state = opt->state_dict();
        CHECK(find_tensor(state, "step").item() == 7.0f);
        CHECK(find_tensor(state, "step").numel() == 1);
    }
}

TEST_CASE("optim: parameters without a gradient are skipped and keep no state", "[optim]") {
    for (const auto& [name, make] : factories()) {
        INFO(name);
        const NamedTensors named = make_named_params(2);
        const std::vector<Tensor> ps = values(named);
        const Tensor before = ps[1].detach().clone();
        auto opt = make(named);
        set_grads(ps, 0);
        ps[1].set_grad(Tensor());
        opt->step();
        opt->step();
        CHECK(bit_equal(ps[1], before));  // not even AdamW's decay touches it
        CHECK_FALSE(bit_equal(ps[0], make_named_params(2)[0].second));
        for (const auto& key : keys(opt->state_dict())) {
            // Adagrad's sums exist from the start (as torch's): it has one, untouched, and step 0.
            if (name == "Adagrad" && key == "sum.0.bias") {
                CHECK(find_tensor(opt->state_dict(), key).to_vector() == std::vector<float>(7, 0.1f));
            } else if (name == "Adagrad" && key == "step.0.bias") {
                CHECK(find_tensor(opt->state_dict(), key).item<int64_t>() == 0);
            } else {
                CHECK(key.find("0.bias") == std::string::npos);
            }
        }
        CHECK(opt->step_count() == 2);
    }
}

TEST_CASE("optim: state_dict names are stable and follow the parameter names", "[optim]") {
    const NamedTensors named = make_named_params(3);
    const std::vector<Tensor> ps = values(named);
    SGD sgd(named, {.lr = 0.1, .momentum = 0.9});
    CHECK(keys(sgd.state_dict()) == state_keys(kSGDOptionKeys, {}));  // state is created on the first step
    set_grads(ps, 0);
    sgd.step();
    CHECK(keys(sgd.state_dict()) == state_keys(kSGDOptionKeys, {"momentum_buffer.0.weight", "momentum_buffer.0.bias",
                                                                "momentum_buffer.2.weight"}));
    // torch: the momentum buffer starts as the first gradient.
    CHECK(bit_equal(find_tensor(sgd.state_dict(), "momentum_buffer.0.bias"), ps[1].grad()));
    CHECK(find_tensor(sgd.state_dict(), "lr").item() == 0.1f);

    SGD plain(clone_params(named), {.lr = 0.1});
    set_grads(values(plain.params()), 0);
    plain.step();
    CHECK(keys(plain.state_dict()) == state_keys(kSGDOptionKeys, {}));  // no momentum, no buffers

    Adam adam(clone_params(named));
    set_grads(values(adam.params()), 0);
    adam.step();
    const NamedTensors state = adam.state_dict();
    CHECK(keys(state) == state_keys(kAdamOptionKeys, {"step.0.weight", "exp_avg.0.weight", "exp_avg_sq.0.weight",
                                                       "step.0.bias", "exp_avg.0.bias", "exp_avg_sq.0.bias",
                                                       "step.2.weight", "exp_avg.2.weight", "exp_avg_sq.2.weight"}));
    CHECK(find_tensor(state, "exp_avg.0.weight").shape() == Shape{7, 5});
    // A snapshot: stepping again does not change a state_dict already taken.
    const NamedTensors snapshot = adam.state_dict();
    adam.step();
    CHECK(same_state(snapshot, state));

    // A model's named_parameters() names the state.
    Linear linear(4, 3);
    Adam model_opt(linear.named_parameters());
    for (auto& p : linear.parameters()) p.set_grad(ones_like(p));
    model_opt.step();
    CHECK(keys(model_opt.state_dict()) == state_keys(kAdamOptionKeys, {"step.weight", "exp_avg.weight",
                                                                        "exp_avg_sq.weight", "step.bias",
                                                                        "exp_avg.bias", "exp_avg_sq.bias"}));
}

TEST_CASE("optim: load_state_dict resumes bit-identically", "[optim]") {
    for (const auto& [name, make] : factories()) {
        INFO(name);
        const NamedTensors named = make_named_params(4);
        auto a = make(named);
        LRScheduler sched_a(*a, {.schedule = Schedule::cosine, .total_steps = 12, .warmup_steps = 2});
        for (int k = 0; k < 5; ++k) {
            set_grads(values(a->params()), k);
            a->step();
            sched_a.step();
        }
        // The restarted run: fresh optimizer and scheduler built alike, then the saved state.
        const NamedTensors b_params = clone_params(named);
        for (size_t i = 0; i < named.size(); ++i) b_params[i].second.detach().copy_(named[i].second);
        auto b = make(b_params);
        LRScheduler sched_b(*b, {.schedule = Schedule::cosine, .total_steps = 12, .warmup_steps = 2});
        b->load_state_dict(a->state_dict());
        sched_b.set_position(sched_a.position());
        CHECK(b->step_count() == 5);
        CHECK(b->lr() == a->lr());
        CHECK(same_state(a->state_dict(), b->state_dict()));
        for (int k = 5; k < 12; ++k) {
            set_grads(values(a->params()), k);
            set_grads(values(b->params()), k);
            a->step();
            b->step();
            sched_a.step();
            sched_b.step();
        }
        for (size_t i = 0; i < named.size(); ++i) {
            INFO(named[i].first);
            CHECK(bit_equal(a->params()[i].second, b->params()[i].second));
        }
        CHECK(same_state(a->state_dict(), b->state_dict()));
        // Restored state is a copy: b's steps did not move a's buffers (same values, distinct storage).
        const NamedTensors sa = a->state_dict();
        a->load_state_dict(sa);
        CHECK(same_state(sa, a->state_dict()));
    }
}

TEST_CASE("optim: load_state_dict takes lr and step from the state", "[optim]") {
    Tensor p = zeros({3}).requires_grad_();
    Adam a({p}, {.lr = 0.25});
    p.set_grad(ones({3}));
    a.step();
    a.step();
    Tensor q = zeros({3}).requires_grad_();
    Adam b({q}, {.lr = 1e-3});
    b.load_state_dict(a.state_dict());
    CHECK(b.lr() == 0.25);  // differs from b's own lr: taken from the state
    CHECK(b.step_count() == 2);
    // Missing per-parameter state is reset: the next step starts that parameter afresh.
    NamedTensors only_scalars{{"step", scalar_tensor(3)}, {"lr", scalar_tensor(0.5f)}};
    b.load_state_dict(only_scalars);
    CHECK(keys(b.state_dict()) == state_keys(kAdamOptionKeys, {}));
    CHECK(b.step_count() == 3);
    CHECK(b.lr() == 0.5);
}

TEST_CASE("optim: load_state_dict keeps the exact lr when the stored float32 is its rounding", "[optim]") {
    // The top-level "lr" entry is float32; 0.002 is not a float, and reading the float back would
    // change every later update by an ulp (a resumed run would drift from a straight one). A state
    // with parameter groups carries each group's exact lr; one without (written before groups
    // existed, as older checkpoints are) has only the float32: both forms are loaded.
    const auto without_groups = [](NamedTensors state) {
        std::erase_if(state, [](const auto& entry) { return entry.first.rfind("param_groups.", 0) == 0; });
        return state;
    };
    for (const bool groups : {true, false}) {
        INFO((groups ? "with" : "without") << " param_groups entries");
        const auto saved = [&](const Adam& opt) { return groups ? opt.state_dict() : without_groups(opt.state_dict()); };
        Tensor p = zeros({3}).requires_grad_();
        Adam a({p}, {.lr = 0.002});
        a.load_state_dict(saved(a));
        CHECK(a.lr() == 0.002);
        // A state with another lr does set it.
        Adam b({zeros({3}).requires_grad_()}, {.lr = 0.002});
        b.load_state_dict(saved(Adam({zeros({3}).requires_grad_()}, {.lr = 0.5})));
        CHECK(b.lr() == 0.5);
    }
}

TEST_CASE("optim: load_state_dict rejects bad entries, naming the key, and changes nothing", "[optim]") {
    const NamedTensors named = make_named_params(5);
    Adam opt(named, {.lr = 0.01});
    set_grads(values(named), 0);
    opt.step();
    const NamedTensors good = opt.state_dict();
    const NamedTensors params_before = clone_params(named);

    auto with = [&](const std::string& key, const Tensor& value) { return test::with_entry(good, key, value); };
    auto without = [&](const std::string& key) { return test::without_entry(good, key); };
    using Catch::Contains;
    // Wrong shape: names the key and both shapes.
    CHECK_THROWS_WITH(opt.load_state_dict(with("exp_avg.0.bias", zeros({8}))),
                      Contains("\"exp_avg.0.bias\"") && Contains("[8]") && Contains("[7]"));
    // A parameter name that does not exist, and a kind of state Adam does not have.
    CHECK_THROWS_WITH(opt.load_state_dict(with("exp_avg.1.weight", zeros({7, 5}))), Contains("\"exp_avg.1.weight\""));
    CHECK_THROWS_WITH(opt.load_state_dict(with("momentum_buffer.0.bias", zeros({7}))),
                      Contains("\"momentum_buffer.0.bias\"") && Contains("unexpected"));
    CHECK_THROWS_WITH(opt.load_state_dict(with("bogus", zeros({1}))), Contains("\"bogus\""));
    // Missing scalars and half of a parameter's state.
    CHECK_THROWS_WITH(opt.load_state_dict(without("step")), Contains("\"step\"") && Contains("missing"));
    CHECK_THROWS_WITH(opt.load_state_dict(without("lr")), Contains("\"lr\"") && Contains("missing"));
    CHECK_THROWS_WITH(opt.load_state_dict(without("exp_avg_sq.2.weight")), Contains("\"exp_avg_sq.2.weight\""));
    // Bad values.
    CHECK_THROWS_WITH(opt.load_state_dict(with("step", scalar_tensor(1.5f))), Contains("\"step\""));
    CHECK_THROWS_WITH(opt.load_state_dict(with("step", zeros({2}))), Contains("\"step\""));
    CHECK_THROWS_WITH(opt.load_state_dict(with("lr", scalar_tensor(-1.0f))), Contains("\"lr\""));
    NamedTensors twice = good;
    twice.push_back(good.back());
    CHECK_THROWS_WITH(opt.load_state_dict(twice), Contains(good.back().first) && Contains("more than once"));

    // Every failure above left the optimizer and the parameters as they were.
    CHECK(same_state(opt.state_dict(), good));
    CHECK(opt.lr() == 0.01);
    for (size_t i = 0; i < named.size(); ++i) CHECK(bit_equal(named[i].second, params_before[i].second));
    // Loading the state into an optimizer of other parameter names fails on the first unknown key.
    SGD other(NamedTensors{{"w", zeros({7, 5}).requires_grad_()}}, {.momentum = 0.9});
    CHECK_THROWS_WITH(other.load_state_dict(good), Contains("step.0.weight") || Contains("exp_avg"));
}

TEST_CASE("optim: zero_grad drops or zero-fills gradients", "[optim]") {
    Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_();
    SGD opt({a, b});
    a.set_grad(ones({2}));
    b.set_grad(ones({2}));
    opt.zero_grad(false);
    CHECK(a.grad().to_vector() == std::vector<float>{0, 0});
    opt.zero_grad();
    CHECK_FALSE(a.grad().defined());
    CHECK_FALSE(b.grad().defined());
}

TEST_CASE("optim: optimizers train a Linear layer through autograd", "[optim]") {
    for (const auto& [name, make] : factories()) {
        INFO(name);
        manual_seed(7);
        Linear model(3, 1);
        auto opt = make(model.named_parameters());
        const Tensor x = from_vector({1, 2, 3, -1, 0, 1, 2, -2, 0, 0.5f, 0.5f, 0.5f}, {4, 3});
        const Tensor y = from_vector({1, -1, 2, 0.5f}, {4, 1});
        float first = 0, last = 0;
        for (int k = 0; k < 60; ++k) {
            opt->zero_grad();
            Tensor loss = mse_loss(model(x), y);
            loss.backward();
            opt->step();
            (k == 0 ? first : last) = loss.item();
        }
        INFO("loss " << first << " -> " << last);
        CHECK(last < 0.5f * first);
    }
}

TEST_CASE("optim: step_and_zero_grad equals step then zero_grad(false), bit for bit", "[optim]") {
    for (const auto& [name, make] : factories()) {
        INFO(name);
        std::vector<Tensor> results;
        for (const bool fused : {false, true}) {
            manual_seed(11);
            Sequential model{Linear(5, 40), ReLU(), Linear(40, 3)};  // 40 * 5 + 40: a partial SIMD vector
            auto opt = make(model.named_parameters());
            const Tensor x = randn({6, 5});
            const Tensor y = randn({6, 3});
            opt->zero_grad();
            for (int k = 0; k < 4; ++k) {
                mse_loss(model(x), y).backward();
                if (fused) {
                    opt->step_and_zero_grad();
                } else {
                    opt->step();
                    opt->zero_grad(false);
                }
                for (const auto& [pname, p] : model.named_parameters()) {
                    INFO(pname << " after step " << k);
                    REQUIRE(p.grad().defined());
                    for (float g : p.grad().to_vector()) CHECK(g == 0.0f);
                }
            }
            for (const auto& [pname, p] : model.named_parameters()) results.push_back(p.clone());
        }
        const size_t half = results.size() / 2;
        for (size_t i = 0; i < half; ++i) CHECK(bit_equal(results[i], results[half + i]));
    }
}

// ---------------------------------------------------------------------------------------------
// Schedules

TEST_CASE("optim: LRScheduler sets the lr on construction, on step() and on set_position()", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 0.2});
    LRScheduler sched(opt, {.schedule = Schedule::step, .warmup_steps = 4, .step_size = 3, .gamma = 0.5});
    CHECK(sched.base_lr() == 0.2);
    CHECK(opt.lr() == Approx(0.05));  // the first warm-up step: base * 1/4
    CHECK(sched.position() == 0);
    sched.step();
    CHECK(opt.lr() == Approx(0.1));
    sched.set_position(3);
    CHECK(opt.lr() == 0.2);  // the warm-up ends at the base lr
    sched.set_position(4 + 3);
    CHECK(opt.lr() == Approx(0.1));
    CHECK(sched.position() == 7);
    sched.step();
    CHECK(sched.position() == 8);
    CHECK(sched.lr_at(4 + 6) == Approx(0.05));
    CHECK_THROWS_WITH(sched.lr_at(-1), Catch::Contains("-1"));
    CHECK_THROWS_AS(sched.set_position(-1), Error);
    CHECK(sched.position() == 8);
}

TEST_CASE("optim: LRScheduler positions near INT64_MAX do not overflow", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 0.5});
    const int64_t last = std::numeric_limits<int64_t>::max();
    LRScheduler sched(opt, {.schedule = Schedule::cosine, .total_steps = last, .warmup_steps = last - 1});
    CHECK(sched.lr_at(last - 2) == Approx(0.5));  // (t + 1) / warmup without overflow
    sched.set_position(last);
    CHECK(opt.lr() == Approx(0.0).margin(1e-12));
    CHECK_THROWS_WITH(sched.step(), Catch::Contains("cannot step past"));
    CHECK(sched.position() == last);
}

TEST_CASE("optim: cosine reaches eta_min at total_steps and stays there", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 1.0});
    LRScheduler sched(opt, {.schedule = Schedule::cosine, .total_steps = 10, .warmup_steps = 2, .eta_min = 0.1});
    CHECK(sched.lr_at(2) == 1.0);
    CHECK(sched.lr_at(6) == Approx(0.55));  // halfway: (1 + 0.1) / 2
    CHECK(sched.lr_at(10) == Approx(0.1));
    CHECK(sched.lr_at(25) == Approx(0.1));
    CHECK(sched.lr_at(9) > 0.1);
}

TEST_CASE("optim: bad schedule options throw naming the option", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 0.1});
    using Catch::Contains;
    CHECK_THROWS_WITH(LRScheduler(opt, {.schedule = Schedule::cosine}), Contains("total_steps"));
    CHECK_THROWS_WITH(LRScheduler(opt, {.schedule = Schedule::cosine, .total_steps = 5, .warmup_steps = 5}),
                      Contains("total_steps") && Contains("warmup_steps"));
    CHECK_THROWS_WITH(LRScheduler(opt, {.schedule = Schedule::step, .step_size = 0}), Contains("step_size"));
    CHECK_THROWS_WITH(LRScheduler(opt, {.schedule = Schedule::step, .gamma = -0.5}), Contains("gamma"));
    CHECK_THROWS_WITH(LRScheduler(opt, {.warmup_steps = -1}), Contains("warmup_steps"));
    CHECK_THROWS_WITH(LRScheduler(opt, {.schedule = Schedule::cosine, .total_steps = 5, .eta_min = -1}),
                      Contains("eta_min"));
    CHECK(opt.lr() == 0.1);  // a rejected scheduler leaves the lr alone
}

// ---------------------------------------------------------------------------------------------
// Kernels against their op-by-op references

TEST_CASE("optim: SGD and Adam kernels equal their op-by-op references bit for bit", "[optim][kernel]") {
    // Sizes around the vector width, so the full vectors, the padded tail and tiny tensors all run.
    for (int64_t n : {1, 5, 15, 16, 17, 64, 1000 + 7}) {
        INFO("n = " << n);
        Generator gen(static_cast<uint64_t>(n));
        const Tensor p0 = randn({n}, gen), buf0 = randn({n}, gen), v0 = rand({n}, gen), g = randn({n}, gen);
        for (int flags = 0; flags < 16; ++flags) {
            const bool decay = flags & 1, momentum = flags & 2, nesterov = flags & 4, first = flags & 8;
            if (nesterov && !momentum) continue;
            SGDOptions o{.lr = 0.1, .momentum = momentum ? 0.9 : 0.0, .dampening = nesterov ? 0.0 : 0.3,
                         .weight_decay = decay ? 0.01 : 0.0, .nesterov = nesterov};
            const auto s = detail::sgd_scalars(o, 0.1, first);
            Tensor p1 = p0.clone(), b1 = buf0.clone(), p2 = p0.clone(), b2 = buf0.clone();
            detail::sgd_update(p1.data(), b1.data(), g.data(), n, s);
            detail::sgd_update_reference(p2.data(), b2.data(), g.data(), n, s);
            INFO("SGD flags " << flags);
            CHECK(bit_equal(p1, p2));
            CHECK(bit_equal(b1, b2));
        }
        for (int variant = 0; variant < 4; ++variant) {
            const double l2 = variant & 1 ? 0.1 : 0.0, decoupled = variant & 2 ? 0.05 : 0.0;
            const auto s = detail::adam_scalars(0.01, {0.8, 0.99}, 1e-6, l2, decoupled, 3);
            Tensor p1 = p0.clone(), m1 = buf0.clone(), v1 = v0.clone();
            Tensor p2 = p0.clone(), m2 = buf0.clone(), v2 = v0.clone();
            detail::adam_update(p1.data(), m1.data(), v1.data(), g.data(), n, s);
            detail::adam_update_reference(p2.data(), m2.data(), v2.data(), g.data(), n, s);
            INFO("Adam variant " << variant);
            CHECK(bit_equal(p1, p2));
            CHECK(bit_equal(m1, m2));
            CHECK(bit_equal(v1, v2));
        }
    }
}

TEST_CASE("optim: a state saved before per-parameter steps loads with the global step for each parameter",
          "[optim]") {
    const NamedTensors named = make_named_params(3);
    Adam a(named, {.lr = 0.01});
    for (int k = 0; k < 3; ++k) {
        set_grads(values(a.params()), k);
        a.step();
    }
    NamedTensors old_format;  // what training_state files held before: "step", "lr", the moments
    for (const auto& [key, t] : a.state_dict()) {
        if (key.rfind("step.", 0) != 0) old_format.emplace_back(key, key == "step" ? t.to(kFloat32) : t);  // "step" was float32
    }
    Adam b(clone_params(named), {.lr = 0.01});
    b.load_state_dict(old_format);
    for (size_t i = 0; i < named.size(); ++i) CHECK(b.param_step(i) == 3);
    CHECK(same_state(a.state_dict(), b.state_dict()));
    // SGD keeps no per-parameter steps and refuses them.
    SGD sgd(clone_params(named));
    CHECK_THROWS_WITH(sgd.load_state_dict(a.state_dict()), Catch::Contains("\"step.0.weight\""));
}

TEST_CASE("optim: a step over shards (set_shard) equals the whole step, bit for bit", "[optim][shard]") {
    // What the sharded data-parallel step relies on: each element's update depends on that element
    // alone, so two optimizers stepping [0, k) and [k, end) of the concatenation give the whole step.
    const auto make = [](uint64_t seed) {
        Generator gen(seed);
        return std::vector<Tensor>{randn({37, 5}, gen), randn({19}, gen), randn({3, 4}, gen)};
    };
    const auto with_grads = [&](std::vector<Tensor> ps, int step) {
        Generator gen(100 + static_cast<uint64_t>(step));
        for (Tensor& p : ps) p.set_grad(randn(p.shape(), gen));
        return ps;
    };
    const std::vector<Tensor> whole = make(1), low = make(1), high = make(1);
    Adam a(whole, {.lr = 0.01, .weight_decay = 0.1}), b(low, {.lr = 0.01, .weight_decay = 0.1}),
        c(high, {.lr = 0.01, .weight_decay = 0.1});
    const int64_t k = 16 * 12;  // past the first tensor (185 elements), inside the second
    b.set_shard(0, k);
    c.set_shard(k, INT64_MAX);
    REQUIRE(b.shard() == std::pair<int64_t, int64_t>{0, k});
    for (int step = 0; step < 3; ++step) {
        with_grads(whole, step), with_grads(low, step), with_grads(high, step);
        a.step(), b.step(), c.step();
        // As gather_parameters does: each optimizer's shard is the truth; copy it across.
        int64_t offset = 0;
        for (size_t i = 0; i < whole.size(); ++i) {
            float* l = low[i].data();
            float* h = high[i].data();
            for (int64_t j = 0; j < whole[i].numel(); ++j) {
                if (offset + j < k) {
                    h[j] = l[j];
                } else {
                    l[j] = h[j];
                }
            }
            offset += whole[i].numel();
        }
    }
    for (size_t i = 0; i < whole.size(); ++i) {
        REQUIRE(low[i].to_vector() == whole[i].to_vector());
        REQUIRE(high[i].to_vector() == whole[i].to_vector());
    }
    REQUIRE_THROWS_WITH(b.set_shard(5, 2), Catch::Contains("Optimizer::set_shard: expected 0 <= begin <= end"));
}
