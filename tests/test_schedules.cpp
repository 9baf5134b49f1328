// PyTorch's schedulers against torch 1.13 (tests/golden/lr_scheduler.safetensors: the lr of two
// parameter groups, and OneCycleLR's momentum, before every step, compared bit for bit), plus
// what the goldens cannot show: exact resume from state_dict, last_epoch and get_last_lr,
// stepping per batch or per epoch, checked options, and LRScheduler with several groups.
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "test_helpers.hpp"

using namespace normnet;

namespace {

// An optimizer as the golden script makes it: two groups (lr 0.1 and 0.02) of one parameter each.
std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, const std::vector<Tensor>& ps) {
    std::vector<ParamGroup> groups{{std::vector<Tensor>{ps[0]}, {.lr = 0.1}}, {std::vector<Tensor>{ps[1]}, {.lr = 0.02}}};
    if (kind == "SGD") return std::make_unique<SGD>(groups, SGDOptions{.lr = 0.5, .momentum = 0.9});
    if (kind == "Adam") return std::make_unique<Adam>(groups, AdamOptions{.lr = 0.5, .betas = {0.9, 0.99}});
    REQUIRE(kind == "Adagrad");
    return std::make_unique<Adagrad>(groups, AdagradOptions{.lr = 0.5});
}

std::vector<int64_t> ints(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

PerGroup per_group(const nlohmann::json& d, const char* key, double fallback) {
    return d.contains(key) ? PerGroup(d.at(key).get<std::vector<double>>()) : PerGroup(fallback);
}

// The schedulers a golden case describes; the one to step is returned, its parts kept in `keep`.
LRSchedulerBase& build(const nlohmann::json& d, Optimizer& opt, std::vector<std::unique_ptr<LRSchedulerBase>>& keep) {
    const std::string type = d.at("type");
    std::unique_ptr<LRSchedulerBase> s;
    if (type == "StepLR") {
        s = std::make_unique<StepLR>(opt, StepLROptions{.step_size = d.at("step_size"), .gamma = d.at("gamma")});
    } else if (type == "MultiStepLR") {
        s = std::make_unique<MultiStepLR>(opt, MultiStepLROptions{.milestones = ints(d.at("milestones")), .gamma = d.at("gamma")});
    } else if (type == "ExponentialLR") {
        s = std::make_unique<ExponentialLR>(opt, ExponentialLROptions{.gamma = d.at("gamma")});
    } else if (type == "CosineAnnealingLR") {
        s = std::make_unique<CosineAnnealingLR>(opt, CosineAnnealingLROptions{.T_max = d.at("T_max"), .eta_min = d.at("eta_min")});
    } else if (type == "LinearLR") {
        LinearLROptions o;
        if (d.contains("start_factor")) o.start_factor = d.at("start_factor");
        if (d.contains("end_factor")) o.end_factor = d.at("end_factor");
        if (d.contains("total_iters")) o.total_iters = d.at("total_iters");
        s = std::make_unique<LinearLR>(opt, o);
    } else if (type == "LambdaLR") {
        REQUIRE(d.at("lambda") == "0.95 ** epoch");
        s = std::make_unique<LambdaLR>(opt, [](int64_t epoch) { return std::pow(0.95, static_cast<double>(epoch)); });
    } else if (type == "OneCycleLR") {
        OneCycleLROptions o{.max_lr = per_group(d, "max_lr", 0.0)};
        o.total_steps = d.value("total_steps", int64_t{0});
        o.epochs = d.value("epochs", int64_t{0});
        o.steps_per_epoch = d.value("steps_per_epoch", int64_t{0});
        o.pct_start = d.value("pct_start", 0.3);
        o.anneal_strategy = d.value("anneal_strategy", "cos") == "linear" ? AnnealStrategy::linear : AnnealStrategy::cos;
        o.cycle_momentum = d.value("cycle_momentum", true);
        o.base_momentum = per_group(d, "base_momentum", 0.85);
        o.max_momentum = per_group(d, "max_momentum", 0.95);
        o.div_factor = d.value("div_factor", 25.0);
        o.final_div_factor = d.value("final_div_factor", 1e4);
        o.three_phase = d.value("three_phase", false);
        s = std::make_unique<OneCycleLR>(opt, o);
    } else if (type == "CosineAnnealingWarmRestarts") {
        s = std::make_unique<CosineAnnealingWarmRestarts>(
            opt, CosineAnnealingWarmRestartsOptions{.T_0 = d.at("T_0"), .T_mult = d.value("T_mult", int64_t{1}),
                                                    .eta_min = d.value("eta_min", 0.0)});
    } else if (type == "CyclicLR") {
        CyclicLROptions o{.base_lr = per_group(d, "base_lr", 0.0), .max_lr = per_group(d, "max_lr", 0.0)};
        o.step_size_up = d.value("step_size_up", int64_t{2000});
        if (d.contains("step_size_down")) o.step_size_down = d.at("step_size_down").get<int64_t>();
        const std::string mode = d.value("mode", "triangular");
        o.mode = mode == "triangular2" ? CyclicMode::triangular2 : mode == "exp_range" ? CyclicMode::exp_range
                                                                                       : CyclicMode::triangular;
        o.gamma = d.value("gamma", 1.0);
        if (d.contains("scale_fn")) {
            REQUIRE(d.at("scale_fn") == "0.8 ** x");
            o.scale_fn = [](double x) { return std::pow(0.8, x); };
            o.scale_mode = d.value("scale_mode", "cycle") == "iterations" ? CyclicScaleMode::iterations
                                                                          : CyclicScaleMode::cycle;
        }
        o.cycle_momentum = d.value("cycle_momentum", true);
        o.base_momentum = per_group(d, "base_momentum", 0.8);
        o.max_momentum = per_group(d, "max_momentum", 0.9);
        s = std::make_unique<CyclicLR>(opt, o);
    } else if (type == "SequentialLR" || type == "ChainedScheduler") {
        std::vector<std::reference_wrapper<LRSchedulerBase>> parts;
        for (const auto& child : d.at("schedulers")) parts.emplace_back(build(child, opt, keep));
        if (type == "SequentialLR") {
            s = std::make_unique<SequentialLR>(opt, parts, ints(d.at("milestones")));
        } else {
            s = std::make_unique<ChainedScheduler>(parts);
        }
    } else {
        FAIL("unknown scheduler " << type);
    }
    keep.push_back(std::move(s));
    return *keep.back();
}

std::unique_ptr<ReduceLROnPlateau> build_plateau(const nlohmann::json& d, Optimizer& opt) {
    ReduceLROnPlateauOptions o;
    o.mode = d.value("mode", "min") == "max" ? PlateauMode::max : PlateauMode::min;
    o.threshold_mode = d.value("threshold_mode", "rel") == "abs" ? ThresholdMode::abs : ThresholdMode::rel;
    o.factor = d.value("factor", 0.1);
    o.patience = d.value("patience", int64_t{10});
    o.threshold = d.value("threshold", 1e-4);
    o.cooldown = d.value("cooldown", int64_t{0});
    o.min_lr = per_group(d, "min_lr", 0.0);
    o.eps = d.value("eps", 1e-8);
    return std::make_unique<ReduceLROnPlateau>(opt, o);
}

// One golden case built in normnet: optimizer, schedulers, and a step() that steps the right one.
struct Run {
    std::vector<Tensor> params{zeros({2}).requires_grad_(), zeros({3}).requires_grad_()};
    std::unique_ptr<Optimizer> opt;
    std::vector<std::unique_ptr<LRSchedulerBase>> keep;
    LRSchedulerBase* scheduler = nullptr;
    std::unique_ptr<ReduceLROnPlateau> plateau;
    int64_t batches_per_epoch = 0;  // > 0: a CosineAnnealingWarmRestarts stepped by fractional epochs

    Run(const std::string& kind, const nlohmann::json& d)
        : opt(make_optimizer(kind, params)), batches_per_epoch(d.value("batches_per_epoch", int64_t{0})) {
        if (d.at("type") == "ReduceLROnPlateau") {
            plateau = build_plateau(d, *opt);
        } else {
            scheduler = &build(d, *opt, keep);
        }
    }
    // The step after batch t (0 is the first).
    void step(double metric, int64_t t) {
        opt->step();  // no gradients: nothing moves, as in the script
        if (plateau) {
            plateau->step(metric);
        } else if (batches_per_epoch > 0) {
            dynamic_cast<CosineAnnealingWarmRestarts&>(*scheduler).step(static_cast<double>(t + 1) /
                                                                       static_cast<double>(batches_per_epoch));
        } else {
            scheduler->step();
        }
    }
    NamedTensors scheduler_state() const { return plateau ? plateau->state_dict() : scheduler->state_dict(); }
    void load_scheduler_state(const NamedTensors& s) { plateau ? plateau->load_state_dict(s) : scheduler->load_state_dict(s); }
    double momentum(size_t g) const {
        const ParamGroupOptions& o = opt->param_group_options(g);
        return o.betas ? o.betas->first : o.momentum.value_or(0.0);
    }
};

// Element (t, g) of a [steps, groups] tensor of double bits.
double bits_at(const Tensor& t, int64_t step, int64_t g) {
    return std::bit_cast<double>(t.data_ptr<int64_t>()[step * t.size(1) + g]);
}

const char* const kCases[] = {"step",     "multistep",  "exponential", "cosine",          "cosine_default",
                              "linear",   "linear_default", "linear_decay", "lambda",       "onecycle",
                              "onecycle_linear_3phase", "onecycle_no_momentum", "plateau", "plateau_max_abs",
                              "sequential", "sequential3", "chained", "linear_to_zero", "chained_cosine_to_zero",
                              "warm_restarts", "warm_restarts_default", "warm_restarts_fractional",
                              "warm_restarts_fractional_t1", "cyclic", "cyclic_triangular2", "cyclic_exp_range",
                              "cyclic_scale_fn"};

// A negative lr within this fraction of the group's base lr is rounding, which normnet sets to 0
// (kLrRounding in src/optim/lr_scheduler.cpp); torch keeps it.
constexpr double kLrRounding = 1e-12;

// Steps [from, to) of golden case c on `run`, checking every lr (and momentum) bit for bit.
void check_steps(const SafetensorsData& g, const std::string& c, Run& run, int64_t from, int64_t to) {
    const Tensor lrs = g.at(c + ".lr_bits");
    const Tensor momenta = find_tensor(g.tensors, c + ".momentum_bits");
    const auto metric = nlohmann::json::parse(g.metadata.at("plateau_metric")).get<std::vector<double>>();
    const auto base_lrs = nlohmann::json::parse(g.metadata.at("base_lrs")).get<std::vector<double>>();
    for (int64_t t = from; t < to; ++t) {
        for (int64_t grp = 0; grp < 2; ++grp) {
            const double want = bits_at(lrs, t, grp), tolerance = kLrRounding * base_lrs[static_cast<size_t>(grp)];
            INFO("step " << t << ", group " << grp << ": lr " << run.opt->lr(grp) << ", torch " << want);
            // Bit for bit until torch's lr is a rounding below 0: normnet's is 0 there, and the
            // schedule goes on from 0 rather than from torch's value.
            bool rounded = false;
            for (int64_t u = 0; u <= t; ++u) rounded = rounded || bits_at(lrs, u, grp) < 0.0;
            if (!rounded) {
                CHECK(run.opt->lr(grp) == want);
            } else {
                CHECK(want >= -tolerance);
                CHECK(run.opt->lr(grp) >= 0.0);
                CHECK(std::abs(run.opt->lr(grp) - want) <= tolerance);
                if (want < 0.0) CHECK(run.opt->lr(grp) == 0.0);
            }
            if (momenta.defined()) CHECK(run.momentum(grp) == bits_at(momenta, t, grp));
        }
        run.step(metric[static_cast<size_t>(t)], t);
        // get_last_lr() is what was just set.
        const std::vector<double>& last = run.plateau ? run.plateau->get_last_lr() : run.scheduler->get_last_lr();
        REQUIRE(last.size() == 2);
        CHECK(last[0] == run.opt->lr(0));
        CHECK(last[1] == run.opt->lr(1));
    }
}

}  // namespace

TEST_CASE("schedules: every lr_scheduler.safetensors sequence is torch's, bit for bit", "[optim][schedule][golden]") {
    const auto g = test::golden("lr_scheduler.safetensors");
    REQUIRE(g.metadata.at("base_lrs") == "[0.1, 0.02]");
    for (const std::string c : kCases) {
        INFO("case " << c << ": " << g.metadata.at(c + ".scheduler"));
        const auto d = nlohmann::json::parse(g.metadata.at(c + ".scheduler"));
        Run run(g.metadata.at(c + ".optimizer"), d);
        const int64_t steps = std::stoll(g.metadata.at(c + ".steps"));
        REQUIRE(g.at(c + ".lr_bits").shape() == Shape{steps, 2});
        check_steps(g, c, run, 0, steps);
        if (run.scheduler && run.batches_per_epoch == 0) CHECK(run.scheduler->last_epoch() == steps);
    }
}

TEST_CASE("schedules: state_dict of optimizer and scheduler resumes every sequence exactly", "[optim][schedule]") {
    const auto g = test::golden("lr_scheduler.safetensors");
    for (const std::string c : kCases) {
        INFO("case " << c);
        const auto d = nlohmann::json::parse(g.metadata.at(c + ".scheduler"));
        const std::string kind = g.metadata.at(c + ".optimizer");
        const int64_t steps = std::stoll(g.metadata.at(c + ".steps"));
        const int64_t half = steps / 2 + 1;
        Run first(kind, d);
        check_steps(g, c, first, 0, half);
        // A restarted program: everything made alike, then both states loaded.
        Run second(kind, d);
        second.opt->load_state_dict(first.opt->state_dict());
        second.load_scheduler_state(first.scheduler_state());
        check_steps(g, c, second, half, steps);
    }
}

TEST_CASE("schedules: an lr a rounding below 0 is 0, and a schedule that goes below 0 is an error", "[optim][schedule]") {
    const auto g = test::golden("lr_scheduler.safetensors");
    // Both rounding cases do reach torch's tiny negative values (else they would test nothing).
    for (const std::string c : {"linear_to_zero", "chained_cosine_to_zero"}) {
        const Tensor lrs = g.at(c + ".lr_bits");
        bool negative = false;
        for (int64_t t = 0; t < lrs.size(0); ++t) negative = negative || bits_at(lrs, t, 0) < 0.0;
        CHECK(negative);
    }
    // A cosine with eta_min chained with a decay overshoots below 0 by 4.5e-6 before torch's step
    // 16 (torch goes on, ascending the gradient): an error naming the scheduler, at that step.
    Tensor p = zeros({1}).requires_grad_();
    SGD sgd(std::vector<Tensor>{p}, {.lr = 0.1});
    CosineAnnealingLR cosine(sgd, {.T_max = 9, .eta_min = 0.001});
    ExponentialLR decay(sgd, {.gamma = 0.5});
    ChainedScheduler chained({cosine, decay});
    int64_t failed_at = -1;
    for (int64_t t = 0; t < 20 && failed_at < 0; ++t) {
        try {
            chained.step();
        } catch (const Error& e) {
            failed_at = t + 1;
            CHECK_THAT(e.what(), Catch::Contains("CosineAnnealingLR: the schedule gives parameter group 0 the learning rate -"));
        }
    }
    CHECK(failed_at == 16);
}

TEST_CASE("schedules: a loaded counter that a step would overflow is refused, and nothing changes", "[optim][schedule]") {
    // A state comes from a file: last_epoch near INT64_MAX passed the old >= -1 check, and the
    // next step() incremented it past INT64_MAX (undefined behaviour; UBSan reports it).
    const auto with_value = [](NamedTensors state, const std::string& key, int64_t v) {
        for (auto& [name, t] : state) {
            if (name == key) {
                t = t.clone();  // the entries share their storage with the scheduler's
                *t.data_ptr<int64_t>() = v;
            }
        }
        return state;
    };
    const int64_t huge = std::numeric_limits<int64_t>::max();
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 0.1});
    StepLR step(opt, {.step_size = 2});
    const NamedTensors before = step.state_dict();
    for (const char* key : {"last_epoch", "step_count"}) {
        INFO(key);
        CHECK_THROWS_WITH(step.load_state_dict(with_value(before, key, huge)),
                          Catch::Contains("StepLR") && Catch::Contains(key) && Catch::Contains("2^53"));
        CHECK(step.last_epoch() == 0);
    }
    LinearLR warmup(opt, {.total_iters = 2});
    StepLR decay(opt, {.step_size = 2});
    SequentialLR sequence(opt, {warmup, decay}, {2});
    CHECK_THROWS_WITH(sequence.load_state_dict(with_value(sequence.state_dict(), "last_epoch", huge)),
                      Catch::Contains("SequentialLR") && Catch::Contains("last_epoch"));
    CHECK_THROWS_WITH(sequence.load_state_dict(with_value(sequence.state_dict(), "schedulers.1.last_epoch", huge)),
                      Catch::Contains("StepLR") && Catch::Contains("last_epoch"));
    ReduceLROnPlateau plateau(opt);
    for (const char* key : {"last_epoch", "num_bad_epochs", "cooldown_counter"}) {
        INFO(key);
        CHECK_THROWS_WITH(plateau.load_state_dict(with_value(plateau.state_dict(), key, huge)), Catch::Contains(key));
    }
    // The largest accepted value still steps.
    step.load_state_dict(with_value(before, "last_epoch", int64_t{1} << 53));
    CHECK_NOTHROW(step.step());
}

TEST_CASE("schedules: last_epoch, base_lrs and initial_lr follow torch", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 0.1});
    LinearLR warmup(opt, {.start_factor = 0.25, .total_iters = 4});
    CHECK(warmup.last_epoch() == 0);
    CHECK(opt.lr() == 0.025);  // the constructor's step: epoch 0
    CHECK(warmup.get_last_lr() == std::vector<double>{0.025});
    CHECK(opt.initial_lr(0) == 0.1);
    // A second scheduler takes the initial lr the first recorded, not the lr the first set.
    ExponentialLR decay(opt, {.gamma = 0.5});
    CHECK(decay.base_lrs() == std::vector<double>{0.1});
    CHECK(decay.last_epoch() == 0);
    CHECK(opt.lr() == 0.025);  // its epoch 0 leaves the lr as it is
    warmup.step();
    CHECK(warmup.last_epoch() == 1);
    CHECK(decay.last_epoch() == 0);
    CHECK(warmup.name() == "LinearLR");
    // A scheduler state from another scheduler kind is refused, naming the key.
    NamedTensors state = warmup.state_dict();
    state.emplace_back("bogus", zeros({1}));
    CHECK_THROWS_WITH(decay.load_state_dict(state), Catch::Contains("ExponentialLR") && Catch::Contains("\"bogus\""));
    CHECK(decay.last_epoch() == 0);
}

TEST_CASE("schedules: stepped per batch or per epoch, as the caller chooses", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD opt({p}, {.lr = 1.0});
    CosineAnnealingLR per_epoch(opt, {.T_max = 4});
    std::vector<double> seen;
    for (int epoch = 0; epoch < 4; ++epoch) {
        for (int batch = 0; batch < 3; ++batch) {
            seen.push_back(opt.lr());
            opt.step();
        }
        per_epoch.step();
    }
    REQUIRE(seen.size() == 12);
    CHECK(seen[0] == seen[2]);  // constant within an epoch
    CHECK(seen[3] < seen[2]);
    CHECK(seen[3] == Approx((1 + std::cos(M_PI / 4)) / 2));

    // OneCycleLR runs per batch over epochs * steps_per_epoch steps, and no further.
    Tensor q = zeros({1}).requires_grad_();
    Adam adam({q}, {.lr = 1e-3});
    OneCycleLR cycle(adam, {.max_lr = 0.01, .epochs = 2, .steps_per_epoch = 3});
    CHECK(cycle.total_steps() == 6);
    CHECK(adam.lr() == Approx(0.01 / 25));
    CHECK(adam.options().betas.first == 0.95);  // max_momentum at the start
    for (int k = 0; k < 5; ++k) cycle.step();
    CHECK(adam.lr() == Approx(0.01 / 25 / 1e4));  // the last of the 6 steps
    CHECK(adam.options().betas.first == 0.95);
    // As torch, one step more is allowed (a loop steps the scheduler after its last batch); its
    // values stay within the last phase's range.
    cycle.step();
    CHECK(adam.lr() >= 0.01 / 25 / 1e4);
    CHECK(adam.lr() <= 0.01);
    CHECK_THROWS_WITH(cycle.step(), Catch::Contains("OneCycleLR") && Catch::Contains("tried to step 8 times") &&
                                        Catch::Contains("6"));
    // A linear anneal would overshoot there, below zero: the lr stays at the end of the phase.
    Tensor r = zeros({1}).requires_grad_();
    SGD sgd({r}, {.lr = 0.1, .momentum = 0.9});
    OneCycleLR linear(sgd, {.max_lr = 1.0, .total_steps = 4, .anneal_strategy = AnnealStrategy::linear});
    for (int k = 0; k < 4; ++k) linear.step();
    CHECK(sgd.lr() == 1.0 / 25 / 1e4);
    CHECK(sgd.options().momentum == 0.95);
}

TEST_CASE("schedules: bad options throw naming the scheduler and the option", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_(), q = zeros({1}).requires_grad_();
    SGD opt({{std::vector<Tensor>{p}}, {std::vector<Tensor>{q}, {.lr = 0.5}}}, {.lr = 0.1, .momentum = 0.9});
    using Catch::Contains;
    CHECK_THROWS_WITH(StepLR(opt, {}), Contains("StepLR") && Contains("step_size"));
    CHECK_THROWS_WITH(StepLR(opt, {.step_size = 2, .gamma = NAN}), Contains("gamma"));
    CHECK_THROWS_WITH(MultiStepLR(opt, {.milestones = {1}, .gamma = -1}), Contains("MultiStepLR") && Contains("gamma"));
    CHECK_THROWS_WITH(ExponentialLR(opt, {}), Contains("ExponentialLR") && Contains("gamma"));
    CHECK_THROWS_WITH(CosineAnnealingLR(opt, {}), Contains("CosineAnnealingLR") && Contains("T_max"));
    CHECK_THROWS_WITH(CosineAnnealingLR(opt, {.T_max = 3, .eta_min = -1}), Contains("eta_min"));
    CHECK_THROWS_WITH(LinearLR(opt, {.start_factor = 0}), Contains("LinearLR") && Contains("start_factor"));
    CHECK_THROWS_WITH(LinearLR(opt, {.end_factor = 1.5}), Contains("end_factor"));
    CHECK_THROWS_WITH(LinearLR(opt, {.total_iters = 0}), Contains("total_iters"));
    CHECK_THROWS_WITH(LambdaLR(opt, std::vector<std::function<double(int64_t)>>{[](int64_t) { return 1.0; }}),
                      Contains("LambdaLR") && Contains("expected 2 lr_lambdas"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {}), Contains("OneCycleLR") && Contains("total_steps"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {.total_steps = 10}), Contains("max_lr is required"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {.max_lr = {0.1, 0.2, 0.3}, .total_steps = 10}), Contains("expected 2 values for max_lr"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {.max_lr = 0.1, .total_steps = 10, .pct_start = 1.5}), Contains("pct_start"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {.max_lr = 0.1, .epochs = 2}), Contains("steps_per_epoch"));
    CHECK_THROWS_WITH(OneCycleLR(opt, {.max_lr = 0.1, .total_steps = 10, .div_factor = 0}), Contains("div_factor"));
    CHECK_THROWS_WITH(ReduceLROnPlateau(opt, {.factor = 1.0}), Contains("ReduceLROnPlateau") && Contains("factor"));
    CHECK_THROWS_WITH(ReduceLROnPlateau(opt, {.patience = -1}), Contains("patience"));
    CHECK_THROWS_WITH(ReduceLROnPlateau(opt, {.min_lr = {0.1, 0.2, 0.3}}), Contains("min_lr"));
    // A rejected scheduler changed nothing.
    CHECK(opt.lr(0) == 0.1);
    CHECK(opt.lr(1) == 0.5);
    CHECK_FALSE(opt.initial_lr(0).has_value());

    // Optimizers without momentum or betas can't cycle momentum.
    Adagrad adagrad({p});
    CHECK_THROWS_WITH(OneCycleLR(adagrad, {.max_lr = 0.1, .total_steps = 10}), Contains("cycle_momentum"));
    // A phase of no steps (torch divides by zero there).
    CHECK_THROWS_WITH(OneCycleLR(opt, {.max_lr = 0.1, .total_steps = 10, .pct_start = 0.1}), Contains("no steps"));

    // Composites: the same optimizer, one milestone fewer than schedulers.
    StepLR a(opt, {.step_size = 2});
    ExponentialLR b(opt, {.gamma = 0.9});
    CHECK_THROWS_WITH(SequentialLR(opt, {a, b}, {}), Contains("SequentialLR") && Contains("milestone"));
    StepLR c(opt, {.step_size = 3});
    CHECK_THROWS_WITH(SequentialLR(opt, {a, b, c}, {3, 1}), Contains("increasing"));
    SGD other({zeros({1}).requires_grad_()});
    StepLR elsewhere(other, {.step_size = 2});
    CHECK_THROWS_WITH(SequentialLR(opt, {a, elsewhere}, {2}), Contains("another optimizer"));
    CHECK_THROWS_WITH(ChainedScheduler({a, elsewhere}), Contains("ChainedScheduler") && Contains("same optimizer"));
    ChainedScheduler chain({a, b});
    CHECK_THROWS_WITH(SequentialLR(opt, {chain, b}, {2}), Contains("ChainedScheduler"));
}

TEST_CASE("schedules: LRScheduler scales each group from its own base lr", "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_(), q = zeros({1}).requires_grad_(), r = zeros({1}).requires_grad_();
    SGD grouped({{std::vector<Tensor>{p}}, {std::vector<Tensor>{q}, {.lr = 0.03}}}, {.lr = 0.1});
    SGD single({r}, {.lr = 0.1});
    const LRSchedulerOptions o{.schedule = Schedule::cosine, .total_steps = 12, .warmup_steps = 3, .eta_min = 0.001};
    LRScheduler a(grouped, o), b(single, o);
    for (int t = 0; t < 15; ++t) {
        INFO("t = " << t);
        CHECK(grouped.lr(0) == single.lr());  // group 0's sequence is the one-group sequence, bit for bit
        CHECK(grouped.lr(1) == a.lr_at(t, 1));
        a.step();
        b.step();
    }
    CHECK(a.lr_at(3, 1) == 0.03);  // the end of the warm-up is the group's base
    CHECK_THROWS_WITH(a.lr_at(0, 2), Catch::Contains("no parameter group 2"));
}

TEST_CASE("schedules: CosineAnnealingWarmRestarts and CyclicLR check their options and keep torch's state",
          "[optim][schedule]") {
    Tensor p = zeros({1}).requires_grad_();
    SGD sgd({p}, {.lr = 0.1, .momentum = 0.5});
    using Catch::Contains;
    CHECK_THROWS_WITH(CosineAnnealingWarmRestarts(sgd, {.T_0 = 0}), Contains("T_0 must be a positive integer"));
    CHECK_THROWS_WITH(CosineAnnealingWarmRestarts(sgd, {.T_0 = 2, .T_mult = 0}), Contains("T_mult must be an integer >= 1"));
    CHECK_THROWS_WITH(CyclicLR(sgd, {.base_lr = 0.01}), Contains("CyclicLR: base_lr and max_lr are required"));
    CHECK_THROWS_WITH(CyclicLR(sgd, {.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 0}), Contains("step_size_up"));
    Adam adam({p});
    CHECK_THROWS_WITH(CyclicLR(adam, {.base_lr = 0.01, .max_lr = 0.1}), Contains("Adam has no momentum"));
    CHECK_NOTHROW(CyclicLR(adam, {.base_lr = 0.01, .max_lr = 0.1, .cycle_momentum = false}));

    // T_cur and T_i as torch's after 7 epochs of T_0 = 2, T_mult = 2 (cycles of 2, 4, 8): 1 and 8.
    SGD opt({p}, {.lr = 0.1});
    CosineAnnealingWarmRestarts restarts(opt, {.T_0 = 2, .T_mult = 2});
    for (int k = 0; k < 7; ++k) restarts.step();
    CHECK(restarts.T_cur() == 1.0);
    CHECK(restarts.T_i() == 8);
    // step(epoch) places the epoch in its cycle, and the state round-trips.
    restarts.step(6.5);
    CHECK(restarts.T_cur() == 0.5);
    CHECK(restarts.T_i() == 8);
    CHECK(restarts.last_epoch() == 6);
    CHECK_THROWS_WITH(restarts.step(-1.0), Contains("non-negative epoch"));
    SGD other({zeros({1}).requires_grad_()}, {.lr = 0.1});
    CosineAnnealingWarmRestarts copy(other, {.T_0 = 2, .T_mult = 2});
    copy.load_state_dict(restarts.state_dict());
    CHECK(copy.T_cur() == 0.5);
    CHECK(copy.T_i() == 8);

    // CyclicLR starts at base_lr and max_momentum (the start of a cycle, as torch), then cycles both.
    SGD cycled({p}, {.lr = 0.5, .momentum = 0.1});
    CyclicLR cyclic(cycled, {.base_lr = 0.01, .max_lr = 0.11, .step_size_up = 2});
    CHECK(cycled.lr() == 0.01);
    CHECK(*cycled.param_group_options(0).momentum == 0.9);  // max_momentum at the cycle's start
    cyclic.step();
    cyclic.step();
    CHECK(cycled.lr() == Approx(0.11));
    CHECK(*cycled.param_group_options(0).momentum == Approx(0.8));
}
