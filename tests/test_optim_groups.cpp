// Parameter groups, RMSprop, Adagrad, NAdam, RAdam, Adamax and amsgrad against PyTorch
// (tests/golden/optim_groups.safetensors: 20 steps, three groups with their own options, one parameter missing some
// gradients), plus what the goldens cannot show: exact resume with group options, the "no weight
// decay on biases and norms" recipe, per-group options and their checks, kernels vs references.
#include <cmath>
#include <functional>
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

// The overrides of one group, from the golden's JSON (torch's param_group keys).
ParamGroupOptions overrides_from(const nlohmann::json& j) {
    ParamGroupOptions o;
    for (const auto& [key, v] : j.items()) {
        if (key == "lr") o.lr = v.get<double>();
        else if (key == "weight_decay") o.weight_decay = v.get<double>();
        else if (key == "momentum") o.momentum = v.get<double>();
        else if (key == "dampening") o.dampening = v.get<double>();
        else if (key == "nesterov") o.nesterov = v.get<bool>();
        else if (key == "betas") o.betas = std::pair{v[0].get<double>(), v[1].get<double>()};
        else if (key == "eps") o.eps = v.get<double>();
        else if (key == "amsgrad") o.amsgrad = v.get<bool>();
        else if (key == "alpha") o.alpha = v.get<double>();
        else if (key == "centered") o.centered = v.get<bool>();
        else if (key == "lr_decay") o.lr_decay = v.get<double>();
        else if (key == "initial_accumulator_value") o.initial_accumulator_value = v.get<double>();
        else if (key == "momentum_decay") o.momentum_decay = v.get<double>();
        else FAIL("unknown option " << key);
    }
    return o;
}

// The optimizer a golden case describes: its class, defaults and one group of overrides per parameter.
std::unique_ptr<Optimizer> optimizer_from(const nlohmann::json& hp, const std::vector<Tensor>& params) {
    std::vector<ParamGroup> groups;
    for (size_t j = 0; j < params.size(); ++j) groups.emplace_back(std::vector<Tensor>{params[j]}, overrides_from(hp.at("overrides")[j]));
    const auto& d = hp.at("defaults");
    const std::string kind = hp.at("optimizer");
    if (kind == "SGD") {
        return std::make_unique<SGD>(groups, SGDOptions{.lr = d.at("lr"), .momentum = d.at("momentum"),
                                                        .dampening = d.at("dampening"),
                                                        .weight_decay = d.at("weight_decay"), .nesterov = d.at("nesterov")});
    }
    if (kind == "Adam" || kind == "AdamW") {
        const std::pair<double, double> betas{d.at("betas")[0], d.at("betas")[1]};
        if (kind == "Adam") {
            return std::make_unique<Adam>(groups, AdamOptions{.lr = d.at("lr"), .betas = betas, .eps = d.at("eps"),
                                                              .weight_decay = d.at("weight_decay"), .amsgrad = d.at("amsgrad")});
        }
        return std::make_unique<AdamW>(groups, AdamWOptions{.lr = d.at("lr"), .betas = betas, .eps = d.at("eps"),
                                                            .weight_decay = d.at("weight_decay"), .amsgrad = d.at("amsgrad")});
    }
    if (kind == "RMSprop") {
        return std::make_unique<RMSprop>(groups, RMSpropOptions{.lr = d.at("lr"), .alpha = d.at("alpha"), .eps = d.at("eps"),
                                                                .weight_decay = d.at("weight_decay"),
                                                                .momentum = d.at("momentum"), .centered = d.at("centered")});
    }
    if (kind == "NAdam" || kind == "RAdam" || kind == "Adamax") {
        const std::pair<double, double> betas{d.at("betas")[0], d.at("betas")[1]};
        if (kind == "NAdam") {
            return std::make_unique<NAdam>(groups, NAdamOptions{.lr = d.at("lr"), .betas = betas, .eps = d.at("eps"),
                                                                .weight_decay = d.at("weight_decay"),
                                                                .momentum_decay = d.at("momentum_decay")});
        }
        if (kind == "RAdam") {
            return std::make_unique<RAdam>(groups, RAdamOptions{.lr = d.at("lr"), .betas = betas, .eps = d.at("eps"),
                                                                .weight_decay = d.at("weight_decay")});
        }
        return std::make_unique<Adamax>(groups, AdamaxOptions{.lr = d.at("lr"), .betas = betas, .eps = d.at("eps"),
                                                              .weight_decay = d.at("weight_decay")});
    }
    REQUIRE(kind == "Adagrad");
    return std::make_unique<Adagrad>(groups, AdagradOptions{.lr = d.at("lr"), .lr_decay = d.at("lr_decay"),
                                                            .weight_decay = d.at("weight_decay"),
                                                            .initial_accumulator_value = d.at("initial_accumulator_value"),
                                                            .eps = d.at("eps")});
}

const char* const kCases[] = {"sgd",      "sgd_dampening", "adam",  "adam_amsgrad", "adamw",  "rmsprop",
                              "rmsprop_all", "adagrad",   "adagrad_init", "nadam", "nadam_wd", "radam",
                              "radam_wd", "adamax",      "adamax_wd"};

// Runs golden case c from step `from` to `to` (exclusive) on params, feeding torch's gradients.
void run_steps(const SafetensorsData& g, const std::string& c, Optimizer& opt, const std::vector<Tensor>& params, int from,
               int to) {
    for (int k = from; k < to; ++k) {
        for (size_t j = 0; j < params.size(); ++j) {
            const Tensor grad = find_tensor(g.tensors, c + ".grad" + std::to_string(k) + ".p" + std::to_string(j));
            params[j].set_grad(grad.defined() ? grad.clone() : Tensor());
        }
        opt.step();
    }
}

std::vector<Tensor> initial_params(const SafetensorsData& g, const std::string& c) {
    return {test::leaf(g.at(c + ".init.p0")), test::leaf(g.at(c + ".init.p1")), test::leaf(g.at(c + ".init.p2"))};
}

// Deterministic pseudo-gradients: step k's gradient of each parameter.
void set_grads(const std::vector<Tensor>& params, int k) {
    for (size_t i = 0; i < params.size(); ++i) {
        Generator gen(2000 + 31 * static_cast<uint64_t>(k) + i);
        params[i].set_grad(randn(params[i].shape(), gen));
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PyTorch goldens

TEST_CASE("optim groups: every optim_groups.safetensors case matches torch 1.13 over 20 steps", "[optim][groups][golden]") {
    const double kRtol = test::kOptimRtol, kAtol = test::kOptimAtol;
    const auto g = test::golden("optim_groups.safetensors");
    REQUIRE(g.metadata.at("problem.steps") == "20");
    for (const std::string c : kCases) {
        INFO("case " << c << ": " << g.metadata.at(c + ".hparams"));
        const auto hp = nlohmann::json::parse(g.metadata.at(c + ".hparams"));
        const std::vector<Tensor> params = initial_params(g, c);
        auto opt = optimizer_from(hp, params);
        CHECK(opt->name() == hp.at("optimizer").get<std::string>());
        REQUIRE(opt->num_param_groups() == 3);
        // The groups' effective options are torch's.
        for (size_t j = 0; j < 3; ++j) {
            const auto& torch_group = hp.at("groups")[j];
            const ParamGroupOptions& o = opt->param_group_options(j);
            CHECK(*o.lr == torch_group.at("lr").get<double>());
            CHECK(*o.weight_decay == torch_group.at("weight_decay").get<double>());
            if (o.momentum) CHECK(*o.momentum == torch_group.at("momentum").get<double>());
            if (o.amsgrad) CHECK(*o.amsgrad == torch_group.at("amsgrad").get<bool>());
            if (o.centered) CHECK(*o.centered == torch_group.at("centered").get<bool>());
            if (o.betas) CHECK(o.betas->first == torch_group.at("betas")[0].get<double>());
        }
        bool exact = true;
        for (int k = 0; k < 20; ++k) {
            run_steps(g, c, *opt, params, k, k + 1);
            for (size_t j = 0; j < 3; ++j) {
                const std::string key = c + ".after" + std::to_string(k) + ".p" + std::to_string(j);
                INFO(key << ": largest error " << violation(params[j], g.at(key), kRtol, kAtol));
                REQUIRE(violation(params[j], g.at(key), kRtol, kAtol) == 0.0);
                exact = exact && bit_equal(params[j], g.at(key));
            }
        }
        CHECK(opt->step_count() == 20);
        // torch's state, under normnet's names: "<state>.<index>" and "step.<index>".
        const NamedTensors state = opt->state_dict();
        for (const auto& [key, expected] : g.tensors) {
            const std::string prefix = c + ".final.";
            if (key.rfind(prefix, 0) != 0) continue;
            const std::string rest = key.substr(prefix.size());  // e.g. "exp_avg.p1"
            const std::string ours = rest.substr(0, rest.rfind(".p")) + "." + rest.substr(rest.rfind(".p") + 2);
            INFO(key << " -> " << ours);
            const Tensor mine = find_tensor(state, ours);
            REQUIRE(mine.defined());
            if (expected.dtype() == kInt64) {
                CHECK(mine.item<int64_t>() == expected.item<int64_t>());
            } else {
                CHECK(violation(mine, expected, kRtol, kAtol) == 0.0);
            }
        }
        for (const auto& [key, t] : state) {  // and no state torch does not have
            if (key.rfind("step.", 0) == 0 || key.find('.') == std::string::npos || key.rfind("param_groups.", 0) == 0) {
                continue;
            }
            const std::string kind = key.substr(0, key.find('.')), index = key.substr(key.find('.') + 1);
            INFO(key);
            CHECK(find_tensor(g.tensors, c + ".final." + kind + ".p" + index).defined());
        }
#ifdef __FMA__
        // With hardware fma the kernels do torch's operations in torch's order: identical bits.
        CHECK(exact);
#endif
    }
}

TEST_CASE("optim groups: a state_dict restores groups and state, and the run continues bit-identically",
          "[optim][groups]") {
    const auto g = test::golden("optim_groups.safetensors");
    for (const std::string c : kCases) {
        INFO("case " << c);
        const auto hp = nlohmann::json::parse(g.metadata.at(c + ".hparams"));
        const std::vector<Tensor> a_params = initial_params(g, c);
        auto a = optimizer_from(hp, a_params);
        run_steps(g, c, *a, a_params, 0, 10);
        // A scheduler-like change of a group's options must be restored too.
        a->set_lr(1, a->lr(1) * 0.7);
        const NamedTensors saved = a->state_dict();

        std::vector<Tensor> b_params;
        for (const Tensor& p : a_params) b_params.push_back(test::leaf(p));
        auto b = optimizer_from(hp, b_params);  // as a restarted program makes it
        b->load_state_dict(saved);
        CHECK(b->lr(1) == a->lr(1));
        CHECK(same_state(b->state_dict(), saved));
        run_steps(g, c, *a, a_params, 10, 20);
        run_steps(g, c, *b, b_params, 10, 20);
        for (size_t j = 0; j < 3; ++j) CHECK(bit_equal(a_params[j], b_params[j]));
        CHECK(same_state(a->state_dict(), b->state_dict()));
    }
}

// ---------------------------------------------------------------------------------------------
// The recipe and the group API

TEST_CASE("optim groups: no weight decay on biases and norm weights, in two lines", "[optim][groups]") {
    manual_seed(3);
    Sequential model{Linear(6, 8), LayerNorm(std::vector<int64_t>{8}), ReLU(), Linear(8, 2)};
    auto [no_decay, decay] = split_parameters(model.named_parameters(), [](const std::string&, const Tensor& p) { return p.dim() <= 1; });
    AdamW optimizer({{decay}, {no_decay, {.weight_decay = 0}}}, {.lr = 1e-2, .weight_decay = 0.1});

    CHECK(keys(decay) == std::vector<std::string>{"0.weight", "3.weight"});
    CHECK(keys(no_decay) == std::vector<std::string>{"0.bias", "1.weight", "1.bias", "3.bias"});
    REQUIRE(optimizer.num_param_groups() == 2);
    CHECK(optimizer.options(0).weight_decay == 0.1);
    CHECK(optimizer.options(1).weight_decay == 0.0);
    CHECK(optimizer.options(1).lr == 1e-2);  // the rest from the defaults
    CHECK(optimizer.param_group_params(1).size() == 4);
    CHECK(optimizer.param_group_of(0) == 0);
    CHECK(optimizer.param_group_of(1) == 0);
    CHECK(optimizer.param_group_of(2) == 1);  // params() is group after group: 0.weight, 3.weight, then the rest
    CHECK(keys(optimizer.params()) == std::vector<std::string>{"0.weight", "3.weight", "0.bias", "1.weight", "1.bias", "3.bias"});

    // The same as two optimizers, one per group, bit for bit.
    std::vector<Tensor> twins;
    NamedTensors twin_decay, twin_no_decay;
    for (const auto& [name, p] : decay) twin_decay.emplace_back(name, test::leaf(p));
    for (const auto& [name, p] : no_decay) twin_no_decay.emplace_back(name, test::leaf(p));
    AdamW with_decay(twin_decay, {.lr = 1e-2, .weight_decay = 0.1});
    AdamW without(twin_no_decay, {.lr = 1e-2, .weight_decay = 0.0});
    for (int k = 0; k < 4; ++k) {
        std::vector<Tensor> all, twin_all;
        for (const auto& [n, p] : optimizer.params()) all.push_back(p);
        for (const auto& [n, p] : twin_decay) twin_all.push_back(p);
        for (const auto& [n, p] : twin_no_decay) twin_all.push_back(p);
        set_grads(all, k);
        set_grads(twin_all, k);
        optimizer.step();
        with_decay.step();
        without.step();
    }
    for (size_t i = 0; i < decay.size(); ++i) CHECK(bit_equal(decay[i].second, twin_decay[i].second));
    for (size_t i = 0; i < no_decay.size(); ++i) CHECK(bit_equal(no_decay[i].second, twin_no_decay[i].second));
}

TEST_CASE("optim groups: lr and options per group, set and checked", "[optim][groups]") {
    Tensor a = zeros({2}).requires_grad_(), b = zeros({3}).requires_grad_(), c = zeros({1}).requires_grad_();
    SGD opt({{std::vector<Tensor>{a, b}}, {std::vector<Tensor>{c}, {.lr = 0.5, .momentum = 0.9}}}, {.lr = 0.1});
    // Unnamed tensors are numbered across groups, as torch's state_dict numbers them.
    CHECK(keys(opt.params()) == std::vector<std::string>{"0", "1", "2"});
    CHECK(opt.lr() == 0.1);
    CHECK(opt.lr(1) == 0.5);
    CHECK(opt.options(1).momentum == 0.9);
    CHECK(opt.options(0).momentum == 0.0);
    CHECK(*opt.defaults().lr == 0.1);
    opt.set_lr(1, 0.25);
    CHECK(opt.lr(1) == 0.25);
    CHECK(opt.lr(0) == 0.1);
    opt.set_lr(0.05);  // every group
    CHECK(opt.lr(0) == 0.05);
    CHECK(opt.lr(1) == 0.05);
    opt.set_param_group_options(0, {.weight_decay = 0.01, .momentum = 0.5});
    CHECK(opt.options(0).weight_decay == 0.01);
    CHECK(opt.options(0).momentum == 0.5);

    using Catch::Contains;
    // A bad value names the group and the option, and changes nothing.
    CHECK_THROWS_WITH(opt.set_param_group_options(1, {.momentum = -1}),
                      Contains("SGD parameter group 1") && Contains("momentum") && Contains("-1"));
    CHECK(opt.options(1).momentum == 0.9);
    CHECK_THROWS_WITH(opt.set_param_group_options(1, {.nesterov = true, .amsgrad = true}), Contains("no option amsgrad"));
    CHECK(opt.options(1).nesterov == false);
    CHECK_THROWS_WITH(opt.set_lr(1, -0.1), Contains("parameter group 1") && Contains("lr"));
    CHECK_THROWS_WITH(opt.set_lr(2, 0.1), Contains("no parameter group 2"));
    CHECK_THROWS_WITH(opt.lr(5), Contains("no parameter group 5"));
    CHECK_FALSE(opt.initial_lr(0).has_value());

    // At construction: options a group must not have, bad values, parameters in two groups.
    CHECK_THROWS_WITH(Adam({{std::vector<Tensor>{a}, {.momentum = 0.9}}}), Contains("Adam has no option momentum"));
    CHECK_THROWS_WITH(RMSprop({{std::vector<Tensor>{a}}, {std::vector<Tensor>{b}, {.alpha = -0.5}}}),
                      Contains("RMSprop parameter group 1") && Contains("alpha") && Contains("-0.5"));
    CHECK_THROWS_WITH(SGD({{std::vector<Tensor>{a}}, {std::vector<Tensor>{b}, {.nesterov = true}}}),
                      Contains("parameter group 1") && Contains("nesterov"));
    CHECK_THROWS_WITH(SGD({{std::vector<Tensor>{a, b}}, {std::vector<Tensor>{b}}}), Contains("same tensor"));
    CHECK_THROWS_WITH(AdamW(std::vector<ParamGroup>{}), Contains("empty list of parameter groups"));
    CHECK_THROWS_WITH(AdamW({{NamedTensors{}}}), Contains("empty parameter list"));
    // An empty group is fine (a model without biases still splits in two).
    AdamW with_empty({{std::vector<Tensor>{a}}, {NamedTensors{}, {.weight_decay = 0}}});
    a.set_grad(ones({2}));
    with_empty.step();
    CHECK(with_empty.param_group_params(1).empty());
    // A split by an empty predicate.
    CHECK_THROWS_WITH(split_parameters(NamedTensors{{"w", a}}, nullptr), Contains("split_parameters"));
}

TEST_CASE("optim groups: load_state_dict checks the groups, naming the key, and changes nothing", "[optim][groups]") {
    const auto make = [](const std::vector<Tensor>& ps) {
        return Adam({{std::vector<Tensor>{ps[0]}}, {std::vector<Tensor>{ps[1], ps[2]}, {.lr = 0.5, .amsgrad = true}}},
                    {.lr = 0.01});
    };
    std::vector<Tensor> ps{randn({3}).requires_grad_(), randn({2, 2}).requires_grad_(), randn({4}).requires_grad_()};
    Adam opt = make(ps);
    set_grads(ps, 0);
    opt.step();
    const NamedTensors good = opt.state_dict();
    CHECK(find_tensor(good, "param_groups.1.amsgrad").item<bool>());
    CHECK(find_tensor(good, "param_groups.1.params").to_vector<int64_t>() == std::vector<int64_t>{1, 2});
    CHECK(find_tensor(good, "max_exp_avg_sq.2").defined());
    CHECK_FALSE(find_tensor(good, "max_exp_avg_sq.0").defined());  // group 0 has no amsgrad

    auto with = [&](const std::string& key, const Tensor& value) { return test::with_entry(good, key, value); };
    auto without = [&](const std::string& key) { return test::without_entry(good, key); };
    const auto bits = [](double v) {
        Tensor t = empty(Shape{}, kInt64);
        *t.data_ptr<int64_t>() = std::bit_cast<int64_t>(v);
        return t;
    };
    using Catch::Contains;
    CHECK_THROWS_WITH(opt.load_state_dict(with("param_groups.1.lr", bits(-1.0))),
                      Contains("Adam parameter group 1") && Contains("lr") && Contains("-1"));
    CHECK_THROWS_WITH(opt.load_state_dict(with("param_groups.1.lr", scalar_tensor(0.5f))),
                      Contains("\"param_groups.1.lr\"") && Contains("int64"));
    CHECK_THROWS_WITH(opt.load_state_dict(with("param_groups.0.momentum", bits(0.9))),
                      Contains("unexpected key \"param_groups.0.momentum\""));
    CHECK_THROWS_WITH(opt.load_state_dict(without("param_groups.0.eps")), Contains("missing key \"param_groups.0.eps\""));
    CHECK_THROWS_WITH(opt.load_state_dict(with("param_groups.1.params", from_vector(std::vector<int64_t>{1}, {1}))),
                      Contains("\"param_groups.1.params\"") && Contains("other parameters"));
    CHECK_THROWS_WITH(opt.load_state_dict(without("param_groups.1.params")), Contains("2 parameter groups") || Contains("1 parameter groups"));
    CHECK_THROWS_WITH(opt.load_state_dict(with("param_groups.2.params", from_vector(std::vector<int64_t>{}, {0}))),
                      Contains("3 parameter groups"));
    // amsgrad's state is part of a group-1 parameter's state.
    CHECK_THROWS_WITH(opt.load_state_dict(without("max_exp_avg_sq.2")), Contains("\"max_exp_avg_sq.2\""));
    // A state from before groups existed holds one group.
    NamedTensors old_format;
    for (const auto& [k, v] : good) {
        if (k.rfind("param_groups.", 0) != 0) old_format.emplace_back(k, v);
    }
    CHECK_THROWS_WITH(opt.load_state_dict(old_format), Contains("2 parameter groups"));
    // Nothing changed.
    CHECK(same_state(opt.state_dict(), good));
    // And a good state loads into an optimizer made alike.
    std::vector<Tensor> qs;
    for (const Tensor& p : ps) qs.push_back(test::leaf(p));
    Adam twin = make(qs);
    twin.load_state_dict(good);
    CHECK(same_state(twin.state_dict(), good));
}

TEST_CASE("optim groups: RMSprop and Adagrad options default to PyTorch's and are checked", "[optim][groups]") {
    const RMSpropOptions r;
    CHECK(r.lr == 1e-2);
    CHECK(r.alpha == 0.99);
    CHECK(r.eps == 1e-8);
    CHECK(r.weight_decay == 0.0);
    CHECK(r.momentum == 0.0);
    CHECK(r.centered == false);
    const AdagradOptions a;
    CHECK(a.lr == 1e-2);
    CHECK(a.lr_decay == 0.0);
    CHECK(a.weight_decay == 0.0);
    CHECK(a.initial_accumulator_value == 0.0);
    CHECK(a.eps == 1e-10);
    CHECK(AdamOptions{}.amsgrad == false);
    CHECK(AdamWOptions{}.amsgrad == false);

    Tensor p = zeros({2}).requires_grad_();
    const std::vector<Tensor> ps{p};
    using Catch::Contains;
    CHECK_THROWS_WITH(RMSprop(ps, {.lr = -1}), Contains("RMSprop") && Contains("lr"));
    CHECK_THROWS_WITH(RMSprop(ps, {.alpha = -0.1}), Contains("alpha"));
    CHECK_THROWS_WITH(RMSprop(ps, {.eps = -1}), Contains("eps"));
    CHECK_THROWS_WITH(RMSprop(ps, {.momentum = -0.9}), Contains("momentum"));
    CHECK_THROWS_WITH(RMSprop(ps, {.weight_decay = NAN}), Contains("weight_decay"));
    CHECK_THROWS_WITH(Adagrad(ps, {.lr_decay = -1}), Contains("Adagrad") && Contains("lr_decay"));
    CHECK_THROWS_WITH(Adagrad(ps, {.initial_accumulator_value = -1}), Contains("initial_accumulator_value"));
    CHECK_THROWS_WITH(Adagrad(ps, {.eps = INFINITY}), Contains("eps"));
    CHECK(RMSprop(ps).name() == "RMSprop");
    CHECK(Adagrad(ps).name() == "Adagrad");
    // Adagrad's sums exist from the start (torch makes them in its constructor), with step 0.
    Adagrad adagrad(NamedTensors{{"w", p}}, {.initial_accumulator_value = 0.5});
    const NamedTensors s = adagrad.state_dict();
    CHECK(find_tensor(s, "sum.w").to_vector() == std::vector<float>{0.5f, 0.5f});
    CHECK(find_tensor(s, "step.w").item<int64_t>() == 0);
}

TEST_CASE("optim groups: NAdam, RAdam and Adamax options default to PyTorch's and are checked", "[optim][groups]") {
    const NAdamOptions n;
    CHECK(n.lr == 2e-3);
    CHECK(n.betas == std::pair{0.9, 0.999});
    CHECK(n.eps == 1e-8);
    CHECK(n.weight_decay == 0.0);
    CHECK(n.momentum_decay == 4e-3);
    const RAdamOptions r;
    CHECK(r.lr == 1e-3);
    CHECK(r.betas == std::pair{0.9, 0.999});
    CHECK(r.eps == 1e-8);
    CHECK(r.weight_decay == 0.0);
    const AdamaxOptions a;
    CHECK(a.lr == 2e-3);
    CHECK(a.betas == std::pair{0.9, 0.999});
    CHECK(a.eps == 1e-8);
    CHECK(a.weight_decay == 0.0);

    Tensor p = zeros({2}).requires_grad_();
    const std::vector<Tensor> ps{p};
    using Catch::Contains;
    CHECK_THROWS_WITH(NAdam(ps, {.lr = -1}), Contains("NAdam") && Contains("lr"));
    CHECK_THROWS_WITH(NAdam(ps, {.momentum_decay = -0.1}), Contains("momentum_decay"));
    CHECK_THROWS_WITH(RAdam(ps, {.betas = {1.0, 0.999}}), Contains("RAdam") && Contains("beta1"));
    CHECK_THROWS_WITH(RAdam(ps, {.eps = NAN}), Contains("eps"));
    CHECK_THROWS_WITH(Adamax(ps, {.betas = {0.9, -0.5}}), Contains("Adamax") && Contains("beta2"));
    CHECK_THROWS_WITH(Adamax(ps, {.weight_decay = -1}), Contains("weight_decay"));
    // momentum_decay belongs to NAdam only.
    CHECK_THROWS_WITH(Adam({ParamGroup(ps, {.momentum_decay = 0.1})}), Contains("momentum_decay"));
    CHECK(NAdam(ps).name() == "NAdam");
    CHECK(RAdam(ps).name() == "RAdam");
    CHECK(Adamax(ps).name() == "Adamax");
    // State names: NAdam's mu_product is one float32 value per parameter, as torch's.
    NAdam nadam(NamedTensors{{"w", p}});
    p.set_grad(ones({2}));
    nadam.step();
    const NamedTensors s = nadam.state_dict();
    CHECK(find_tensor(s, "mu_product.w").shape() == Shape{});
    CHECK(find_tensor(s, "exp_avg.w").shape() == Shape{2});
    CHECK(find_tensor(s, "step.w").item<int64_t>() == 1);
    Adamax adamax(NamedTensors{{"w", p}});
    adamax.step();
    CHECK(find_tensor(adamax.state_dict(), "exp_inf.w").defined());
}

// ---------------------------------------------------------------------------------------------
// Kernels against their op-by-op references

TEST_CASE("optim groups: amsgrad, RMSprop and Adagrad kernels equal their op-by-op references bit for bit",
          "[optim][groups][kernel]") {
    for (int64_t n : {1, 5, 15, 16, 17, 64, 1000 + 7}) {
        INFO("n = " << n);
        Generator gen(static_cast<uint64_t>(n) + 100);
        const Tensor p0 = randn({n}, gen), m0 = randn({n}, gen), v0 = rand({n}, gen), x0 = rand({n}, gen), g = randn({n}, gen);
        for (int variant = 0; variant < 4; ++variant) {
            const double l2 = variant & 1 ? 0.1 : 0.0, decoupled = variant & 2 ? 0.05 : 0.0;
            const auto s = detail::adam_scalars(0.01, {0.8, 0.99}, 1e-6, l2, decoupled, 3);
            Tensor p1 = p0.clone(), m1 = m0.clone(), v1 = v0.clone(), x1 = x0.clone();
            Tensor p2 = p0.clone(), m2 = m0.clone(), v2 = v0.clone(), x2 = x0.clone();
            detail::adam_amsgrad_update(p1.data(), m1.data(), v1.data(), x1.data(), g.data(), n, s);
            detail::adam_amsgrad_update_reference(p2.data(), m2.data(), v2.data(), x2.data(), g.data(), n, s);
            INFO("amsgrad variant " << variant);
            CHECK(bit_equal(p1, p2));
            CHECK(bit_equal(m1, m2));
            CHECK(bit_equal(v1, v2));
            CHECK(bit_equal(x1, x2));
        }
        for (int flags = 0; flags < 8; ++flags) {
            const RMSpropOptions o{.lr = 0.01, .alpha = 0.9, .eps = 1e-6, .weight_decay = flags & 1 ? 0.1 : 0.0,
                                   .momentum = flags & 2 ? 0.5 : 0.0, .centered = (flags & 4) != 0};
            const auto s = detail::rmsprop_scalars(o);
            Tensor p1 = p0.clone(), sa1 = v0.clone(), ga1 = m0.clone() * 0.1f, b1 = m0.clone();
            Tensor p2 = p0.clone(), sa2 = v0.clone(), ga2 = m0.clone() * 0.1f, b2 = m0.clone();
            detail::rmsprop_update(p1.data(), sa1.data(), ga1.data(), b1.data(), g.data(), n, s);
            detail::rmsprop_update_reference(p2.data(), sa2.data(), ga2.data(), b2.data(), g.data(), n, s);
            INFO("RMSprop flags " << flags);
            CHECK(bit_equal(p1, p2));
            CHECK(bit_equal(sa1, sa2));
            CHECK(bit_equal(ga1, ga2));
            CHECK(bit_equal(b1, b2));
        }
        for (const double wd : {0.0, 0.1}) {
            const auto s = detail::adagrad_scalars({.lr = 0.1, .lr_decay = 0.01, .weight_decay = wd}, 4);
            Tensor p1 = p0.clone(), s1 = v0.clone(), p2 = p0.clone(), s2 = v0.clone();
            detail::adagrad_update(p1.data(), s1.data(), g.data(), n, s);
            detail::adagrad_update_reference(p2.data(), s2.data(), g.data(), n, s);
            INFO("Adagrad weight_decay " << wd);
            CHECK(bit_equal(p1, p2));
            CHECK(bit_equal(s1, s2));
        }
    }
    // torch.maximum propagates NaN into the running maximum.
    float p = 1, m = 0, v = 0, vmax = NAN, grad = 1;
    detail::adam_amsgrad_update(&p, &m, &v, &vmax, &grad, 1, detail::adam_scalars(0.1, {0.9, 0.999}, 1e-8, 0, 0, 1));
    CHECK(std::isnan(vmax));
}

// ---------------------------------------------------------------------------------------------
// Gradient clipping by value

TEST_CASE("optim: clip_grad_value_ clamps every gradient element as torch", "[optim][clip]") {
    Tensor a = zeros({4}).requires_grad_(), none = zeros({2}).requires_grad_();
    a.set_grad(tensor({-3.0f, 0.25f, 2.0f, NAN}));
    clip_grad_value_({a, none}, 0.5);
    const auto g = a.grad().to_vector();
    CHECK(g[0] == -0.5f);
    CHECK(g[1] == 0.25f);
    CHECK(g[2] == 0.5f);
    CHECK(std::isnan(g[3]));  // torch.clamp keeps NaN
    CHECK_FALSE(none.grad().defined());
    CHECK_THROWS_WITH(clip_grad_value_({a}, -1.0), Catch::Contains("clip_value") && Catch::Contains("-1"));
    Tensor b = zeros({2}).requires_grad_();
    b.set_grad(tensor({3.0f, 4.0f}));
    CHECK(clip_grad_norm_({b}, 1.0) == Approx(5.0));
}
