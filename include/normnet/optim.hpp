// Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, NAdam, RAdam, Adamax) with parameter groups, learning-rate schedules
// and gradient clipping, with the semantics and defaults of PyTorch 1.13's torch.optim.
//
// Optimizers hold their parameters by name, so their state has stable names ("exp_avg.0.weight")
// and a checkpoint of it means the same thing after a restart. Parameters come in groups, each
// with its own options (torch's param_groups): the usual "no weight decay on biases and norm
// weights" is
//
//     auto [no_decay, decay] = split_parameters(model.named_parameters(), [](const std::string&, const Tensor& p) { return p.dim() <= 1; });
//     AdamW optimizer({{decay}, {no_decay, {.weight_decay = 0}}}, {.lr = 1e-3});
//
// As in PyTorch, each parameter counts its own steps (the steps in which it had a gradient),
// which Adam's bias corrections use. step() updates every parameter in one pass over its data
// and, after the first call has created the state, allocates nothing.
//
// The schedules come in two kinds: LRScheduler, normnet's closed-form schedule with warm-up that
// the `normnet` command steps once per batch, and PyTorch's own schedulers (StepLR, ...,
// OneCycleLR, ReduceLROnPlateau, SequentialLR, ChainedScheduler), which compute torch's lr
// sequences bit for bit; the caller steps them per batch or per epoch, whichever it wants.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

// ---------------------------------------------------------------------------------------------
// Options

/// Adam's and AdamW's (beta1, beta2).
using Betas = std::pair<double, double>;

/// Options of SGD, with torch.optim.SGD's defaults (torch requires lr; 0.01 is normnet's default).
struct SGDOptions {
    using Self = SGDOptions;
    NORMNET_ARG(double, lr) = 0.01;
    NORMNET_ARG(double, momentum) = 0;
    NORMNET_ARG(double, dampening) = 0;
    NORMNET_ARG(double, weight_decay) = 0;  ///< L2 penalty: weight_decay * p is added to the gradient.
    NORMNET_ARG(bool, nesterov) = false;
};

/// Options of Adam, with torch.optim.Adam's defaults.
struct AdamOptions {
    using Self = AdamOptions;
    NORMNET_ARG(double, lr) = 1e-3;
    NORMNET_ARG(Betas, betas) = {0.9, 0.999};
    NORMNET_ARG(double, eps) = 1e-8;
    NORMNET_ARG(double, weight_decay) = 0;  ///< L2 penalty: weight_decay * p is added to the gradient before the moments.
    NORMNET_ARG(bool, amsgrad) = false;     ///< Normalise by the largest second moment so far (state "max_exp_avg_sq").
};

/// Options of AdamW, with torch.optim.AdamW's defaults (note weight_decay 0.01).
struct AdamWOptions {
    using Self = AdamWOptions;
    NORMNET_ARG(double, lr) = 1e-3;
    NORMNET_ARG(Betas, betas) = {0.9, 0.999};
    NORMNET_ARG(double, eps) = 1e-8;
    NORMNET_ARG(double, weight_decay) = 0.01;  ///< Decoupled: p *= 1 - lr * weight_decay before the Adam update.
    NORMNET_ARG(bool, amsgrad) = false;        ///< As Adam's.
};

/// Options of RMSprop, with torch.optim.RMSprop's defaults.
struct RMSpropOptions {
    using Self = RMSpropOptions;
    NORMNET_ARG(double, lr) = 1e-2;
    NORMNET_ARG(double, alpha) = 0.99;      ///< Smoothing constant of the squared-gradient average.
    NORMNET_ARG(double, eps) = 1e-8;        ///< Added to the root of the average.
    NORMNET_ARG(double, weight_decay) = 0;  ///< L2 penalty, added to the gradient.
    NORMNET_ARG(double, momentum) = 0;      ///< > 0: a momentum buffer of the scaled steps.
    NORMNET_ARG(bool, centered) = false;    ///< Normalise by the estimated variance (subtracting the squared mean gradient).
};

/// Options of Adagrad, with torch.optim.Adagrad's defaults.
struct AdagradOptions {
    using Self = AdagradOptions;
    NORMNET_ARG(double, lr) = 1e-2;
    NORMNET_ARG(double, lr_decay) = 0;                   ///< Step t uses lr / (1 + (t - 1) * lr_decay).
    NORMNET_ARG(double, weight_decay) = 0;               ///< L2 penalty, added to the gradient.
    NORMNET_ARG(double, initial_accumulator_value) = 0;  ///< The starting value of the sum of squared gradients.
    NORMNET_ARG(double, eps) = 1e-10;                    ///< Added to the root of the sum.
};

/// Options of NAdam, with torch.optim.NAdam's defaults.
struct NAdamOptions {
    using Self = NAdamOptions;
    NORMNET_ARG(double, lr) = 2e-3;
    NORMNET_ARG(Betas, betas) = {0.9, 0.999};
    NORMNET_ARG(double, eps) = 1e-8;
    NORMNET_ARG(double, weight_decay) = 0;      ///< L2 penalty, added to the gradient.
    NORMNET_ARG(double, momentum_decay) = 4e-3;  ///< mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2)
};

/// Options of RAdam, with torch.optim.RAdam's defaults.
struct RAdamOptions {
    using Self = RAdamOptions;
    NORMNET_ARG(double, lr) = 1e-3;
    NORMNET_ARG(Betas, betas) = {0.9, 0.999};
    NORMNET_ARG(double, eps) = 1e-8;
    NORMNET_ARG(double, weight_decay) = 0;  ///< L2 penalty, added to the gradient.
};

/// Options of Adamax, with torch.optim.Adamax's defaults.
struct AdamaxOptions {
    using Self = AdamaxOptions;
    NORMNET_ARG(double, lr) = 2e-3;
    NORMNET_ARG(Betas, betas) = {0.9, 0.999};
    NORMNET_ARG(double, eps) = 1e-8;
    NORMNET_ARG(double, weight_decay) = 0;  ///< L2 penalty, added to the gradient.
};

// ---------------------------------------------------------------------------------------------
// Parameter groups

/// A parameter group's options, as torch's param_group dict: in a ParamGroup, the fields that
/// are set override the optimizer's options for that group (`{.weight_decay = 0}`); from
/// Optimizer::param_group_options, every option the optimizer has is set to the group's current
/// value. Setting an option the optimizer does not have (Adam's momentum) is an error.
/// Designated initializers must follow this order; betas take double braces: `.betas = {{0.9, 0.99}}`.
struct ParamGroupOptions {
    using Self = ParamGroupOptions;
    NORMNET_ARG(std::optional<double>, lr){};
    NORMNET_ARG(std::optional<double>, weight_decay){};
    NORMNET_ARG(std::optional<double>, momentum){};                    ///< SGD, RMSprop
    NORMNET_ARG(std::optional<double>, dampening){};                   ///< SGD
    NORMNET_ARG(std::optional<bool>, nesterov){};                      ///< SGD
    NORMNET_ARG(std::optional<Betas>, betas){};    ///< Adam, AdamW, NAdam, RAdam, Adamax
    NORMNET_ARG(std::optional<double>, eps){};                         ///< Adam, AdamW, RMSprop, Adagrad, NAdam, RAdam, Adamax
    NORMNET_ARG(std::optional<bool>, amsgrad){};                       ///< Adam, AdamW, NAdam, RAdam, Adamax
    NORMNET_ARG(std::optional<double>, alpha){};                       ///< RMSprop
    NORMNET_ARG(std::optional<bool>, centered){};                      ///< RMSprop
    NORMNET_ARG(std::optional<double>, lr_decay){};                    ///< Adagrad
    NORMNET_ARG(std::optional<double>, initial_accumulator_value){};   ///< Adagrad
    NORMNET_ARG(std::optional<double>, momentum_decay){};              ///< NAdam
};

/// A list of parameters with their own options (torch's param group, libtorch's
/// OptimizerParamGroup). Unnamed tensors are named by their position among all the optimizer's
/// parameters ("0", "1", ...), as torch numbers them in its state_dict.
struct NORMNET_API ParamGroup {
    /// Named parameters, e.g. from model.named_parameters() or split_parameters().
    ParamGroup(NamedTensors params, ParamGroupOptions options = {});  // NOLINT: implicit, for {{decay}, ...}
    /// Any list of tensors.
    ParamGroup(const std::vector<Tensor>& params, ParamGroupOptions options = {});  // NOLINT
    NamedTensors params;
    ParamGroupOptions options;
    bool named = true;  ///< false: the names are assigned by position when the optimizer is made
};

/// Splits `params` in two, keeping their order: those for which pred(name, tensor) holds, then
/// the others. E.g. by `p.dim() <= 1` for biases and normalisation weights.
NORMNET_API std::pair<NamedTensors, NamedTensors> split_parameters(
    const NamedTensors& params, const std::function<bool(const std::string&, const Tensor&)>& pred);

// ---------------------------------------------------------------------------------------------
// Optimizer

/// Who a message about options names: "AdamW", or "AdamW parameter group 1" for an optimizer
/// with several groups.
struct NORMNET_API GroupName {
    std::string optimizer;
    std::optional<size_t> group;
};
/// Prints a GroupName.
NORMNET_API std::ostream& operator<<(std::ostream& os, const GroupName& who);

class Optimizer;

/// One parameter group of an optimizer, as libtorch's OptimizerParamGroup (what param_groups()
/// lists): a handle on the group, valid while the optimizer lives. Changes go through the
/// optimizer's checks, so an invalid value throws and changes nothing.
class NORMNET_API OptimizerParamGroup {
public:
    /// The group's options, as libtorch's group.options(): get_lr() / set_lr(lr), and lr() /
    /// lr(value) for the learning rate; values() for every option; set(overrides) for the others.
    class NORMNET_API Options {
    public:
        double get_lr() const;
        void set_lr(double lr);
        double lr() const { return get_lr(); }
        Options& lr(double value) {
            set_lr(value);
            return *this;
        }
        /// Every option of the group, set to its current value.
        const ParamGroupOptions& values() const;
        /// Changes the options set in `overrides` (as Optimizer::set_param_group_options).
        void set(const ParamGroupOptions& overrides);

    private:
        friend class OptimizerParamGroup;
        Options(Optimizer* optimizer, size_t group) : optimizer_(optimizer), group_(group) {}
        Optimizer* optimizer_;
        size_t group_;
    };
    /// The group's parameters.
    std::vector<Tensor> params() const;
    /// Its options (a handle, as above).
    Options options() const { return Options(optimizer_, group_); }

private:
    friend class Optimizer;
    OptimizerParamGroup(Optimizer* optimizer, size_t group) : optimizer_(optimizer), group_(group) {}
    Optimizer* optimizer_;
    size_t group_;
};

/// The base of every optimizer: the named parameters in their groups, each group's options
/// (its learning rate included), the step counters and the per-parameter state, which it saves
/// and restores by name (never by address). Not copyable: copies would update the same
/// parameters with diverging state.
class NORMNET_API Optimizer {
public:
    /// Optimizes `params` (e.g. model.named_parameters()) as one group; names must be unique and
    /// non-empty, tensors contiguous leaves, each listed once.
    explicit Optimizer(NamedTensors params);
    /// Optimizes any list of tensors as one group; they are named "0", "1", ... in order.
    explicit Optimizer(const std::vector<Tensor>& params);
    /// Optimizes parameter groups (at least one parameter in all; a group may be empty), each
    /// starting from `defaults` (the optimizer's options, torch's optimizer.defaults) with its
    /// own overrides. Subclasses then call check_param_groups().
    Optimizer(std::vector<ParamGroup> groups, ParamGroupOptions defaults);
    /// Frees the state.
    virtual ~Optimizer();
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;
    Optimizer(Optimizer&&) = default;
    Optimizer& operator=(Optimizer&&) = default;

    /// Advances the step counter and updates every parameter whose grad is defined (parameters
    /// without a gradient are skipped and their state left untouched, as in PyTorch).
    virtual void step() = 0;
    /// Clears the parameters' gradients: drops them (set_to_none, PyTorch's default) or zero-fills them.
    void zero_grad(bool set_to_none = true);
    /// step() then zero_grad(/*set_to_none=*/false), with the same result. Adam and AdamW zero each
    /// gradient in the pass that reads it; the next backward then adds into the kept buffers instead
    /// of having OpenBLAS zero-fill fresh ones (about 5% of a batch-32 epoch of the seed MLP). A training
    /// loop calls zero_grad() once before its first step and this instead of step().
    virtual void step_and_zero_grad();

    /// The current learning rate of a parameter group (schedules change it; options().lr of a
    /// subclass gives the same).
    double lr(size_t group = 0) const;
    /// Sets the learning rate of every group for the next step(); it must be finite and >= 0.
    void set_lr(double lr);
    /// Sets one group's learning rate.
    void set_lr(size_t group, double lr);
    /// Number of step() calls so far (restored by load_state_dict).
    int64_t step_count() const { return step_count_; }
    /// Steps in which parameter i had a gradient (restored by load_state_dict), for optimizers
    /// that count them (Adam, AdamW, RMSprop, Adagrad, as torch's state['step']); 0 for SGD.
    int64_t param_step(size_t i) const { return param_steps_[i]; }
    /// The optimized parameters with their names, group after group.
    const NamedTensors& params() const { return params_; }
    /// For a data-parallel step with the update sharded over the ranks (dist::GradientAllReduce::
    /// reduce_shard): step() updates only the elements [begin, end) of the concatenation of params()
    /// (in order); the others and their state stay as they are (the other ranks update them). Step
    /// counts advance as without a shard. Supported by the elementwise optimizers (all of normnet's).
    void set_shard(int64_t begin, int64_t end);
    /// The shard set by set_shard, [0, INT64_MAX) by default (everything).
    std::pair<int64_t, int64_t> shard() const { return shard_; }

    /// Number of parameter groups (1 for the single-list constructors).
    size_t num_param_groups() const { return groups_.size(); }
    /// The groups, as libtorch's param_groups(): `optimizer.param_groups()[0].options().set_lr(0.01)`.
    std::vector<OptimizerParamGroup> param_groups();
    /// The parameters of group g (a range of params()).
    std::span<const NamedTensor> param_group_params(size_t group) const;
    /// The group that parameter i (of params()) belongs to.
    size_t param_group_of(size_t i) const { return param_group_[i]; }
    /// Every option of group g, set to its current value (lr included).
    const ParamGroupOptions& param_group_options(size_t group) const;
    /// Changes options of group g (the fields set in `overrides`), checked as at construction;
    /// an invalid value throws and changes nothing.
    void set_param_group_options(size_t group, const ParamGroupOptions& overrides);
    /// The options each group starts from (torch's optimizer.defaults).
    const ParamGroupOptions& defaults() const { return defaults_; }
    /// The lr a schedule starts from (torch's param_group['initial_lr']): set by the first
    /// scheduler made on this optimizer, unset before.
    std::optional<double> initial_lr(size_t group) const;
    /// Sets initial_lr (schedulers do; OneCycleLR sets max_lr / div_factor).
    void set_initial_lr(size_t group, double lr);

    /// A copy of all state, as tensors with stable names: "step" (int64) and "lr" (float32, group
    /// 0's lr), then per group g "param_groups.<g>.params" (int64: the indices in params() of its
    /// parameters), "param_groups.<g>.<option>" for each option of the optimizer and, once set,
    /// "param_groups.<g>.initial_lr", then per parameter "step.<param name>" (int64; optimizers
    /// that count steps, once the parameter has state) and "<state>.<param name>" (e.g.
    /// "momentum_buffer.0.weight", "exp_avg.0.weight", "exp_avg_sq.0.weight") for the state created
    /// so far. Real-valued options are stored exactly: an int64 scalar holding the IEEE-754 bits
    /// of the double (std::bit_cast<double>), betas as two of them; flags as bool scalars.
    virtual NamedTensors state_dict() const;
    /// Restores state saved by state_dict(), group options included (as torch replaces its
    /// param_groups' options), so a restored optimizer continues bit-identically. Every name, shape
    /// and option is checked before anything changes; a bad one throws normnet::Error naming the
    /// key. The groups must hold the same parameters as when the state was saved. Per-parameter
    /// state that is absent is reset (created again on the next step). A state written before
    /// groups existed (no "param_groups.*") loads into a one-group optimizer: its options stay,
    /// and lr is taken from the float32 "lr" unless the current (double) lr rounds to it; one
    /// written before per-parameter steps existed (no "step.<name>") gives every parameter with
    /// state the global step. Create schedulers before loading, then restore their position.
    virtual void load_state_dict(const NamedTensors& state);
    /// "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam" or "Adamax", as PyTorch's class names.
    virtual std::string name() const = 0;

protected:
    /// Checks every group's options: none the optimizer lacks (absent from defaults()), and
    /// check_options() on each. Subclass constructors call it once their options are set.
    void check_param_groups() const;
    /// Throws normnet::Error naming `who` and the option when `options` (all set) are invalid.
    /// The default accepts anything.
    virtual void check_options(const ParamGroupOptions& options, const GroupName& who) const;
    /// Registers a kind of per-parameter state (e.g. "exp_avg") and returns its index for state().
    /// Subclasses call it in their constructor; the first kind is the one every parameter with
    /// state has. `needed(options)` says whether a parameter of a group with those options has
    /// this kind too whenever it has the first (null: always); load_state_dict checks it. A
    /// `scalar` kind holds one value per parameter (shape [], as NAdam's mu_product), the others
    /// the parameter's shape.
    int add_state(const std::string& prefix, bool (*needed)(const ParamGroupOptions&) = nullptr, bool scalar = false);
    /// The state tensors of kind `index`, one per parameter in params() order; undefined until
    /// the subclass creates them (lazily, on the first step that has a gradient).
    std::vector<Tensor>& state(int index) { return states_[static_cast<size_t>(index)].tensors; }
    /// Increments the step counter and returns the new count (1 on the first step).
    int64_t advance_step() { return ++step_count_; }
    /// Increments parameter i's step count and returns it (1 on its first step). Optimizers that
    /// call it say so in their constructor with count_param_steps().
    int64_t advance_param_step(size_t i) { return ++param_steps_[i]; }
    /// Marks this optimizer as counting per-parameter steps (saved as "step.<name>").
    void count_param_steps() { counts_param_steps_ = true; }
    /// The gradient of parameter i, or null when it has none; throws when it is not contiguous.
    float* grad_data(size_t i) const;
    /// "Adam" for a one-group optimizer, else "Adam parameter group <g>": who the messages name.
    GroupName who(size_t group) const;

private:
    struct StateKind {
        std::string prefix;
        bool (*needed)(const ParamGroupOptions&);
        std::vector<Tensor> tensors;
        bool scalar = false;
    };
    struct Group {
        size_t begin = 0, end = 0;  // params_[begin, end)
        ParamGroupOptions options;
        std::optional<double> initial_lr;
    };
    NamedTensors params_;
    std::vector<size_t> param_group_;  // the group of each parameter
    std::vector<Group> groups_;
    ParamGroupOptions defaults_;
    std::vector<StateKind> states_;
    int64_t step_count_ = 0;
    std::vector<int64_t> param_steps_;
    bool counts_param_steps_ = false;
    std::pair<int64_t, int64_t> shard_{0, INT64_MAX};
};

/// Stochastic gradient descent with optional momentum, dampening, Nesterov and L2 weight decay
/// (torch.optim.SGD: the momentum buffer starts as the first gradient, without dampening).
class NORMNET_API SGD : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit SGD(NamedTensors params, SGDOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit SGD(const std::vector<Tensor>& params, SGDOptions options = {});
    /// Parameter groups with their own overrides of `options`.
    explicit SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
    /// The same, from a braced list: `SGD({{decay}, {no_decay, {.weight_decay = 0}}}, options)` (this overload
    /// also makes a one-group list `{{params}}` unambiguous).
    SGD(std::initializer_list<ParamGroup> groups, SGDOptions options = {});
    void step() override;
    std::string name() const override { return "SGD"; }
    /// A group's current options (lr included).
    SGDOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int momentum_buffer_ = 0;  // state index
};

/// Adam (torch.optim.Adam) with L2 weight decay added to the gradient, and amsgrad.
class NORMNET_API Adam : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit Adam(NamedTensors params, AdamOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit Adam(const std::vector<Tensor>& params, AdamOptions options = {});
    /// Parameter groups with their own overrides of `options`.
    explicit Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
    /// The same, from a braced list: `Adam({{decay}, {no_decay, {.weight_decay = 0}}}, options)` (this overload
    /// also makes a one-group list `{{params}}` unambiguous).
    Adam(std::initializer_list<ParamGroup> groups, AdamOptions options = {});
    void step() override;
    void step_and_zero_grad() override;
    std::string name() const override { return "Adam"; }
    /// A group's current options (lr included).
    AdamOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    void update(bool zero_grad);
    int exp_avg_ = 0, exp_avg_sq_ = 0, max_exp_avg_sq_ = 0;  // state indices
};

/// AdamW (torch.optim.AdamW): decoupled weight decay p *= 1 - lr * weight_decay, then the Adam
/// update without L2; amsgrad as Adam's.
class NORMNET_API AdamW : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit AdamW(NamedTensors params, AdamWOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit AdamW(const std::vector<Tensor>& params, AdamWOptions options = {});
    /// Parameter groups with their own overrides of `options`.
    explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
    /// The same, from a braced list: `AdamW({{decay}, {no_decay, {.weight_decay = 0}}}, options)` (this overload
    /// also makes a one-group list `{{params}}` unambiguous).
    AdamW(std::initializer_list<ParamGroup> groups, AdamWOptions options = {});
    void step() override;
    void step_and_zero_grad() override;
    std::string name() const override { return "AdamW"; }
    /// A group's current options (lr included).
    AdamWOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    void update(bool zero_grad);
    int exp_avg_ = 0, exp_avg_sq_ = 0, max_exp_avg_sq_ = 0;  // state indices
};

/// RMSprop (torch.optim.RMSprop): state "square_avg", plus "momentum_buffer" with momentum > 0
/// and "grad_avg" when centered.
class NORMNET_API RMSprop : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit RMSprop(NamedTensors params, RMSpropOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit RMSprop(const std::vector<Tensor>& params, RMSpropOptions options = {});
    /// Parameter groups with their own overrides of `options`.
    explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options = {});
    /// The same, from a braced list: `RMSprop({{decay}, {no_decay, {.weight_decay = 0}}}, options)` (this overload
    /// also makes a one-group list `{{params}}` unambiguous).
    RMSprop(std::initializer_list<ParamGroup> groups, RMSpropOptions options = {});
    void step() override;
    std::string name() const override { return "RMSprop"; }
    /// A group's current options (lr included).
    RMSpropOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int square_avg_ = 0, momentum_buffer_ = 0, grad_avg_ = 0;  // state indices
};

/// Adagrad (torch.optim.Adagrad): state "sum", created at construction filled with the
/// optimizer's initial_accumulator_value, as torch does; a parameter group may not set another
/// (torch would ignore it).
class NORMNET_API Adagrad : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit Adagrad(NamedTensors params, AdagradOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit Adagrad(const std::vector<Tensor>& params, AdagradOptions options = {});
    /// Parameter groups with their own overrides of `options`.
    explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions options = {});
    /// The same, from a braced list: `Adagrad({{decay}, {no_decay, {.weight_decay = 0}}}, options)` (this overload
    /// also makes a one-group list `{{params}}` unambiguous).
    Adagrad(std::initializer_list<ParamGroup> groups, AdagradOptions options = {});
    void step() override;
    std::string name() const override { return "Adagrad"; }
    /// A group's current options (lr included).
    AdagradOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int sum_ = 0;  // state index
};

/// NAdam (torch.optim.NAdam, Dozat 2016): Adam with Nesterov momentum, its momentum coefficient
/// warmed up by momentum_decay; L2 weight decay added to the gradient. State "exp_avg",
/// "exp_avg_sq" and "mu_product" (the product of the mu_t so far, one float32 value per
/// parameter, as torch's).
class NORMNET_API NAdam : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit NAdam(NamedTensors params, NAdamOptions options = {});
    explicit NAdam(const std::vector<Tensor>& params, NAdamOptions options = {});
    explicit NAdam(std::vector<ParamGroup> groups, NAdamOptions options = {});
    NAdam(std::initializer_list<ParamGroup> groups, NAdamOptions options = {});
    void step() override;
    std::string name() const override { return "NAdam"; }
    /// A group's current options (lr included).
    NAdamOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int exp_avg_ = 0, exp_avg_sq_ = 0, mu_product_ = 0;  // state indices
};

/// RAdam (torch.optim.RAdam, Liu et al. 2019): Adam whose adaptive step is rectified by the
/// variance of its second moment, and plain momentum SGD while that is undefined (rho_t <= 5,
/// the first steps). L2 weight decay added to the gradient. State "exp_avg", "exp_avg_sq".
class NORMNET_API RAdam : public Optimizer {
public:
    explicit RAdam(NamedTensors params, RAdamOptions options = {});
    explicit RAdam(const std::vector<Tensor>& params, RAdamOptions options = {});
    explicit RAdam(std::vector<ParamGroup> groups, RAdamOptions options = {});
    RAdam(std::initializer_list<ParamGroup> groups, RAdamOptions options = {});
    void step() override;
    std::string name() const override { return "RAdam"; }
    RAdamOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int exp_avg_ = 0, exp_avg_sq_ = 0;  // state indices
};

/// Adamax (torch.optim.Adamax): Adam with the infinity norm, exp_inf = max(beta2 exp_inf,
/// |g| + eps). L2 weight decay added to the gradient. State "exp_avg", "exp_inf".
class NORMNET_API Adamax : public Optimizer {
public:
    explicit Adamax(NamedTensors params, AdamaxOptions options = {});
    explicit Adamax(const std::vector<Tensor>& params, AdamaxOptions options = {});
    explicit Adamax(std::vector<ParamGroup> groups, AdamaxOptions options = {});
    Adamax(std::initializer_list<ParamGroup> groups, AdamaxOptions options = {});
    void step() override;
    std::string name() const override { return "Adamax"; }
    AdamaxOptions options(size_t group = 0) const;

protected:
    void check_options(const ParamGroupOptions& options, const GroupName& who) const override;

private:
    int exp_avg_ = 0, exp_inf_ = 0;  // state indices
};

// ---------------------------------------------------------------------------------------------
// LRScheduler: normnet's closed-form schedule (the `normnet` command's)

/// The shape of the learning rate after the warm-up.
enum class Schedule {
    constant,  ///< base
    step,      ///< base * gamma^floor(t / step_size) (torch StepLR)
    cosine,    ///< eta_min + (base - eta_min) * (1 + cos(pi * t / T)) / 2 (torch CosineAnnealingLR)
};

/// Options of LRScheduler. With warmup_steps w > 0, step t < w uses base * (t + 1) / w and the
/// schedule then runs at t - w over the horizon T = total_steps - w.
struct LRSchedulerOptions {
    using Self = LRSchedulerOptions;
    NORMNET_ARG(Schedule, schedule) = Schedule::constant;
    NORMNET_ARG(int64_t, total_steps) = 0;   ///< batches in the whole run, warm-up included (needed by cosine)
    NORMNET_ARG(int64_t, warmup_steps) = 0;  ///< linear warm-up ending at the base lr
    NORMNET_ARG(int64_t, step_size) = 1;     ///< Schedule::step: batches per decay
    NORMNET_ARG(double, gamma) = 0.1;        ///< Schedule::step: decay factor
    NORMNET_ARG(double, eta_min) = 0.0;      ///< Schedule::cosine: the final lr
};

/// A learning-rate schedule stepped once per batch, in closed form, so that a resumed run only
/// needs the position. It sets each group's lr from that group's base lr (its lr when the
/// scheduler is made); the optimizer must outlive it.
class NORMNET_API LRScheduler {
public:
    /// Takes the base lrs from the optimizer's groups and sets their lrs to lr_at(0).
    /// Throws normnet::Error naming the option when options are invalid.
    LRScheduler(Optimizer& optimizer, LRSchedulerOptions options);
    /// Moves to the next batch and sets the optimizer's lrs to that batch's.
    void step();
    /// The lr of group `group` in batch t (t = 0 is the first). After total_steps a cosine
    /// schedule stays at eta_min.
    double lr_at(int64_t t, size_t group = 0) const;
    /// The batch whose lr the optimizer holds now (0 after construction, +1 per step()).
    int64_t position() const { return position_; }
    /// Jumps to batch t and sets the optimizer's lrs, for an exact resume from a checkpoint.
    void set_position(int64_t t);
    /// The lr the schedule scales (group 0's).
    double base_lr() const { return base_lrs_[0]; }
    /// The options given at construction.
    const LRSchedulerOptions& options() const { return options_; }

private:
    Optimizer* optimizer_;
    LRSchedulerOptions options_;
    std::vector<double> base_lrs_;  // one per parameter group
    int64_t position_ = 0;
};

// ---------------------------------------------------------------------------------------------
// PyTorch's schedulers (torch.optim.lr_scheduler)

/// One value for every parameter group, or a list of one per group (torch's "float or list").
struct NORMNET_API PerGroup {
    PerGroup() = default;
    PerGroup(double value) : values{value} {}                                // NOLINT: implicit
    PerGroup(std::initializer_list<double> list) : values(list) {}           // NOLINT
    PerGroup(std::vector<double> list) : values(std::move(list)) {}          // NOLINT
    /// The value of group g of n groups; throws naming `who` and `what` when the list has neither
    /// one value nor n.
    double at(size_t g, size_t n, const std::string& who, const char* what) const;
    std::vector<double> values;
};

/// The base of PyTorch's schedulers (torch's _LRScheduler): every step() moves last_epoch on
/// by one and sets each parameter group's lr, in torch's chainable form (from the group's
/// current lr) where torch uses it, so schedulers stacked on one optimizer compose as in torch.
/// Its base_lrs are the groups' initial_lr (their lr when the first scheduler was made on the
/// optimizer), and its constructor takes the first step (to last_epoch 0), as torch's does. The
/// optimizer must outlive the scheduler; step() allocates nothing.
class NORMNET_API LRSchedulerBase {
public:
    virtual ~LRSchedulerBase();
    LRSchedulerBase(const LRSchedulerBase&) = delete;
    LRSchedulerBase& operator=(const LRSchedulerBase&) = delete;

    /// Moves on one epoch (or batch: whatever the caller steps it by) and sets the groups' lrs.
    virtual void step();
    /// torch's last_epoch: 0 after construction, + 1 per step().
    int64_t last_epoch() const { return last_epoch_; }
    /// The lr of each group as this scheduler last set it (torch's get_last_lr()).
    const std::vector<double>& get_last_lr() const { return last_lr_; }
    /// The lrs the schedule scales, one per group (torch's base_lrs).
    const std::vector<double>& base_lrs() const { return base_lrs_; }
    /// The optimizer whose lrs this scheduler sets.
    Optimizer& optimizer() const { return *optimizer_; }
    /// "StepLR", "OneCycleLR", ...: the class name, as in messages.
    virtual std::string name() const = 0;
    /// The scheduler's state, exactly ("last_epoch", "step_count" as int64; "base_lrs", "last_lr"
    /// as the int64 bits of their doubles, one per group); composites add their schedulers'
    /// under "schedulers.<i>.". Save it with the optimizer's state.
    virtual NamedTensors state_dict() const;
    /// Restores a state_dict() of a scheduler made alike (checked first; nothing changes on
    /// error). The optimizer's lrs are the optimizer state's business: load that too.
    virtual void load_state_dict(const NamedTensors& state);

protected:
    /// For schedulers of torch's _LRScheduler kind: sets each group's initial_lr unless a
    /// scheduler did already, takes the initial_lrs as base_lrs. The subclass constructor calls
    /// initial_step() once its own members are set.
    explicit LRSchedulerBase(Optimizer& optimizer);
    /// For schedulers of schedulers (SequentialLR, ChainedScheduler): no base_lrs, no initial step.
    struct Composite {};
    LRSchedulerBase(Optimizer& optimizer, Composite);
    /// torch's _initial_step(): step count 0, then step().
    void initial_step();
    /// Group g's lr for the current last_epoch, from the group's current lr where torch's formula
    /// is chainable (torch's get_lr()).
    virtual double get_lr(size_t group) = 0;
    /// Group g's lr at last_epoch in closed form (torch's _get_closed_form_lr()); by default,
    /// for schedulers without one, get_lr(group), as torch falls back to it.
    virtual double closed_form_lr(size_t group);
    /// torch's deprecated step(epoch): last_epoch = epoch, the closed form where there is one.
    /// SequentialLR's milestones use it (with 0).
    void step_to(int64_t epoch);
    /// torch's _step_count: step() calls since initial_step() began (CosineAnnealingLR reads it).
    int64_t step_count() const { return step_count_; }
    /// Checks a state_dict key and returns the entry (throws naming the scheduler and key).
    static const Tensor& entry(const NamedTensors& state, const std::string& key, const std::string& who);
    /// A composite's state: last_epoch and last_lr, then each scheduler's under "schedulers.<i>.".
    NamedTensors composite_state_dict(const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers) const;
    /// Restores a composite_state_dict(); a failure leaves every scheduler as it was.
    void load_composite_state_dict(const NamedTensors& state,
                                   const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers);

    Optimizer* optimizer_;
    std::vector<double> base_lrs_;
    std::vector<double> last_lr_;
    int64_t last_epoch_ = -1;
    int64_t step_count_ = 0;
    bool composite_ = false;

private:
    void set_lrs(bool closed_form);
    friend class SequentialLR;
};

/// torch's LambdaLR: lr = base_lr * lr_lambda(last_epoch), one function for every group or one
/// per group.
class NORMNET_API LambdaLR : public LRSchedulerBase {
public:
    LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);
    LambdaLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas);
    std::string name() const override { return "LambdaLR"; }

protected:
    double get_lr(size_t group) override;

private:
    std::vector<std::function<double(int64_t)>> lr_lambdas_;
};

/// Options of StepLR (torch requires step_size).
struct StepLROptions {
    using Self = StepLROptions;
    NORMNET_ARG(int64_t, step_size) = 0;  ///< epochs per decay, >= 1
    NORMNET_ARG(double, gamma) = 0.1;     ///< decay factor
};

/// torch's StepLR: the lr is multiplied by gamma every step_size epochs.
class NORMNET_API StepLR : public LRSchedulerBase {
public:
    StepLR(Optimizer& optimizer, StepLROptions options);
    std::string name() const override { return "StepLR"; }
    const StepLROptions& options() const { return options_; }

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    StepLROptions options_;
};

/// Options of MultiStepLR (torch requires milestones).
struct MultiStepLROptions {
    using Self = MultiStepLROptions;
    NORMNET_ARG(std::vector<int64_t>, milestones){};  ///< epochs at which the lr is multiplied by gamma (a repeated one: gamma^count)
    NORMNET_ARG(double, gamma) = 0.1;
};

/// torch's MultiStepLR.
class NORMNET_API MultiStepLR : public LRSchedulerBase {
public:
    MultiStepLR(Optimizer& optimizer, MultiStepLROptions options);
    std::string name() const override { return "MultiStepLR"; }
    const MultiStepLROptions& options() const { return options_; }

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    MultiStepLROptions options_;  // milestones sorted
};

/// Options of ExponentialLR (torch requires gamma).
struct ExponentialLROptions {
    using Self = ExponentialLROptions;
    NORMNET_ARG(double, gamma) = 0;  ///< the lr is multiplied by gamma every epoch; > 0 (required)
};

/// torch's ExponentialLR.
class NORMNET_API ExponentialLR : public LRSchedulerBase {
public:
    ExponentialLR(Optimizer& optimizer, ExponentialLROptions options);
    std::string name() const override { return "ExponentialLR"; }
    const ExponentialLROptions& options() const { return options_; }

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    ExponentialLROptions options_;
};

/// Options of CosineAnnealingLR (torch requires T_max).
struct CosineAnnealingLROptions {
    using Self = CosineAnnealingLROptions;
    NORMNET_ARG(int64_t, T_max) = 0;     ///< epochs of the half cosine, >= 1 (after it the lr rises again, as in torch)
    NORMNET_ARG(double, eta_min) = 0.0;  ///< the lowest lr
};

/// torch's CosineAnnealingLR, in its recursive form.
class NORMNET_API CosineAnnealingLR : public LRSchedulerBase {
public:
    CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options);
    std::string name() const override { return "CosineAnnealingLR"; }
    const CosineAnnealingLROptions& options() const { return options_; }

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    CosineAnnealingLROptions options_;
};

/// Options of LinearLR, with torch's defaults.
struct LinearLROptions {
    using Self = LinearLROptions;
    NORMNET_ARG(double, start_factor) = 1.0 / 3;  ///< in (0, 1]: the factor of the first epoch
    NORMNET_ARG(double, end_factor) = 1.0;        ///< in [0, 1]: the factor from total_iters on
    NORMNET_ARG(int64_t, total_iters) = 5;        ///< >= 1
};

/// torch's LinearLR: the factor moves linearly from start_factor to end_factor over total_iters
/// epochs (the usual warm-up, chained with SequentialLR).
class NORMNET_API LinearLR : public LRSchedulerBase {
public:
    LinearLR(Optimizer& optimizer, LinearLROptions options = {});
    std::string name() const override { return "LinearLR"; }
    const LinearLROptions& options() const { return options_; }

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    LinearLROptions options_;
};

/// Options of CosineAnnealingWarmRestarts (torch requires T_0).
struct CosineAnnealingWarmRestartsOptions {
    using Self = CosineAnnealingWarmRestartsOptions;
    NORMNET_ARG(int64_t, T_0) = 0;       ///< epochs of the first cosine, >= 1
    NORMNET_ARG(int64_t, T_mult) = 1;    ///< each restart's cosine is T_mult times longer than the previous, >= 1
    NORMNET_ARG(double, eta_min) = 0.0;  ///< the lowest lr
};

/// torch's CosineAnnealingWarmRestarts (SGDR, Loshchilov and Hutter 2016): a cosine from each
/// group's base lr down to eta_min over T_i epochs, then a restart at the base lr with T_i *=
/// T_mult. step() moves on one epoch; step(epoch) jumps to a (fractional) epoch, as torch's
/// step(epoch + batch / batches) for a restart schedule stepped per batch.
class NORMNET_API CosineAnnealingWarmRestarts : public LRSchedulerBase {
public:
    CosineAnnealingWarmRestarts(Optimizer& optimizer, CosineAnnealingWarmRestartsOptions options);
    void step() override;
    /// torch's step(epoch): the schedule at epoch (>= 0, fractional allowed); last_epoch becomes floor(epoch).
    void step(double epoch);
    std::string name() const override { return "CosineAnnealingWarmRestarts"; }
    /// Epochs since the last restart (torch's T_cur) and the current cosine's length (T_i).
    double T_cur() const { return T_cur_; }
    int64_t T_i() const { return T_i_; }
    const CosineAnnealingWarmRestartsOptions& options() const { return options_; }
    /// The base state plus "T_cur" (the int64 bits of its double) and "T_i".
    NamedTensors state_dict() const override;
    void load_state_dict(const NamedTensors& state) override;

protected:
    double get_lr(size_t group) override;
    double closed_form_lr(size_t group) override;

private:
    void set_epoch(double epoch);
    CosineAnnealingWarmRestartsOptions options_;
    double T_cur_ = -1.0;
    int64_t T_i_ = 0;
    double epoch_ = 0.0;  // the epoch step(epoch) was given (the closed form's, with its fraction)
};

/// CyclicLR's built-in amplitude scalings.
enum class CyclicMode {
    triangular,   ///< 1: every cycle from base_lr to max_lr and back
    triangular2,  ///< 1 / 2^(cycle - 1): the amplitude halves every cycle
    exp_range,    ///< gamma^iteration
};
/// Whether CyclicLR's scale function is given the cycle number or the iteration.
enum class CyclicScaleMode { cycle, iterations };

/// Options of CyclicLR, with torch's defaults (torch requires base_lr and max_lr). A plain
/// aggregate, without the builder form: its std::function member rules that out.
struct CyclicLROptions {
    PerGroup base_lr{};                 ///< the lower lr, one for all groups or one per group (required)
    PerGroup max_lr{};                  ///< the upper lr (required)
    int64_t step_size_up = 2000;        ///< iterations of the rising half of a cycle, >= 1
    std::optional<int64_t> step_size_down = std::nullopt;  ///< of the falling half; unset: step_size_up
    CyclicMode mode = CyclicMode::triangular;
    double gamma = 1.0;                 ///< exp_range's factor per iteration
    std::function<double(double)> scale_fn = nullptr;  ///< a custom scaling in [0, 1] (mode is then ignored)
    CyclicScaleMode scale_mode = CyclicScaleMode::cycle;  ///< what scale_fn is given (with scale_fn only)
    bool cycle_momentum = true;         ///< move the momentum (SGD, RMSprop) inversely to the lr
    PerGroup base_momentum = 0.8;
    PerGroup max_momentum = 0.9;
};

/// torch's CyclicLR (Smith 2017), stepped once per batch: each group's lr goes from base_lr up
/// to max_lr over step_size_up iterations and back over step_size_down, its amplitude scaled by
/// the mode; with cycle_momentum the momentum goes from max_momentum down and back. The
/// constructor sets the groups' lrs to base_lr and momenta to base_momentum, as torch's.
class NORMNET_API CyclicLR : public LRSchedulerBase {
public:
    CyclicLR(Optimizer& optimizer, CyclicLROptions options);
    std::string name() const override { return "CyclicLR"; }

protected:
    double get_lr(size_t group) override;

private:
    double scale(double x) const;
    CyclicLROptions options_;
    double total_size_ = 0.0, step_ratio_ = 0.0;
    std::vector<double> max_lrs_, base_momentums_, max_momentums_;
};

/// OneCycleLR's annealing curve.
enum class AnnealStrategy { cos, linear };

/// Options of OneCycleLR, with torch's defaults (torch requires max_lr and a length).
struct OneCycleLROptions {
    using Self = OneCycleLROptions;
    NORMNET_ARG(PerGroup, max_lr){};               ///< the peak lr, one for all groups or one per group (required)
    NORMNET_ARG(int64_t, total_steps) = 0;         ///< steps in the cycle; 0: epochs * steps_per_epoch
    NORMNET_ARG(int64_t, epochs) = 0;
    NORMNET_ARG(int64_t, steps_per_epoch) = 0;
    NORMNET_ARG(double, pct_start) = 0.3;          ///< the fraction of the cycle spent rising
    NORMNET_ARG(AnnealStrategy, anneal_strategy) = AnnealStrategy::cos;
    NORMNET_ARG(bool, cycle_momentum) = true;      ///< move momentum (SGD, RMSprop) or beta1 (Adam, AdamW) inversely to the lr
    NORMNET_ARG(PerGroup, base_momentum) = 0.85;
    NORMNET_ARG(PerGroup, max_momentum) = 0.95;
    NORMNET_ARG(double, div_factor) = 25.0;        ///< initial lr = max_lr / div_factor
    NORMNET_ARG(double, final_div_factor) = 1e4;   ///< final lr = initial lr / final_div_factor
    NORMNET_ARG(bool, three_phase) = false;        ///< rise, fall back to the initial lr, then anneal to the final lr
};

/// torch's OneCycleLR, stepped once per batch, total_steps times at most. It sets each group's
/// initial_lr to max_lr / div_factor and, with cycle_momentum, the group's momentum or beta1.
class NORMNET_API OneCycleLR : public LRSchedulerBase {
public:
    OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);
    std::string name() const override { return "OneCycleLR"; }
    /// Steps in the cycle.
    int64_t total_steps() const { return total_steps_; }

protected:
    double get_lr(size_t group) override;

private:
    struct GroupValues {  // torch keeps these in the param_group
        double initial_lr, max_lr, min_lr, max_momentum, base_momentum;
    };
    struct Phase {
        double end_step;
        double GroupValues::*start_lr;
        double GroupValues::*end_lr;
        double GroupValues::*start_momentum;
        double GroupValues::*end_momentum;
    };
    OneCycleLROptions options_;
    int64_t total_steps_ = 0;
    std::vector<Phase> phases_;
    std::vector<GroupValues> groups_;
    bool use_beta1_ = false;
};

/// Runs schedulers one after another: schedulers[i] from epoch milestones[i - 1] on (torch's
/// SequentialLR; at a milestone the next scheduler restarts from its epoch 0, in closed form).
/// E.g. a linear warm-up then a cosine:
///
///     LinearLR warmup(opt, {.start_factor = 0.1, .total_iters = 5});
///     CosineAnnealingLR cosine(opt, {.T_max = 95});
///     SequentialLR schedule(opt, {warmup, cosine}, {5});
///
/// The schedulers must outlive it and be stepped only through it.
class NORMNET_API SequentialLR : public LRSchedulerBase {
public:
    SequentialLR(Optimizer& optimizer, std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers,
                 std::vector<int64_t> milestones);
    void step() override;
    std::string name() const override { return "SequentialLR"; }
    NamedTensors state_dict() const override;
    void load_state_dict(const NamedTensors& state) override;

protected:
    double get_lr(size_t group) override;

private:
    std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers_;
    std::vector<int64_t> milestones_;
};

/// Steps several schedulers together, each scaling the lr the previous left (torch's
/// ChainedScheduler), e.g. a LinearLR warm-up with an ExponentialLR decay. The schedulers must
/// outlive it and be stepped only through it.
class NORMNET_API ChainedScheduler : public LRSchedulerBase {
public:
    explicit ChainedScheduler(std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers);
    void step() override;
    std::string name() const override { return "ChainedScheduler"; }
    NamedTensors state_dict() const override;
    void load_state_dict(const NamedTensors& state) override;

protected:
    double get_lr(size_t group) override;

private:
    std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers_;
};

/// ReduceLROnPlateau: what counts as an improvement of the metric.
enum class PlateauMode { min, max };
/// ReduceLROnPlateau: an improvement beyond best * (1 -/+ threshold) (rel) or best -/+ threshold (abs).
enum class ThresholdMode { rel, abs };

/// Options of ReduceLROnPlateau, with torch's defaults.
struct ReduceLROnPlateauOptions {
    using Self = ReduceLROnPlateauOptions;
    NORMNET_ARG(PlateauMode, mode) = PlateauMode::min;
    NORMNET_ARG(double, factor) = 0.1;  ///< new lr = lr * factor; < 1
    NORMNET_ARG(int64_t, patience) = 10;  ///< epochs without improvement tolerated before reducing
    NORMNET_ARG(double, threshold) = 1e-4;
    NORMNET_ARG(ThresholdMode, threshold_mode) = ThresholdMode::rel;
    NORMNET_ARG(int64_t, cooldown) = 0;  ///< epochs after a reduction during which bad epochs are not counted
    NORMNET_ARG(PerGroup, min_lr) = 0.0;  ///< lower bound of the lr, one for all groups or one per group
    NORMNET_ARG(double, eps) = 1e-8;      ///< reductions smaller than this are skipped
};

/// torch's ReduceLROnPlateau: step(metric) once per evaluation; the lr is multiplied by factor
/// when the metric has not improved for more than `patience` steps.
class NORMNET_API ReduceLROnPlateau {
public:
    ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
    ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
    ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;
    /// Records one value of the metric (a NaN never improves) and reduces the lrs when due.
    void step(double metric);
    /// Number of step() calls.
    int64_t last_epoch() const { return last_epoch_; }
    /// The groups' lrs after the last step (their current lrs before the first).
    const std::vector<double>& get_last_lr() const { return last_lr_; }
    /// The best metric so far (+inf in min mode, -inf in max mode before the first step).
    double best() const { return best_; }
    /// Steps without improvement counted now.
    int64_t num_bad_epochs() const { return num_bad_epochs_; }
    /// Whether the last reduction's cooldown is still running.
    bool in_cooldown() const { return cooldown_counter_ > 0; }
    const ReduceLROnPlateauOptions& options() const { return options_; }
    /// "last_epoch", "num_bad_epochs", "cooldown_counter" (int64), "best", "last_lr" (int64 bits of doubles).
    NamedTensors state_dict() const;
    void load_state_dict(const NamedTensors& state);

private:
    bool is_better(double a, double best) const;
    Optimizer* optimizer_;
    ReduceLROnPlateauOptions options_;
    std::vector<double> min_lrs_, last_lr_;
    double best_;
    int64_t last_epoch_ = 0, num_bad_epochs_ = 0, cooldown_counter_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Gradient clipping

/// Scales the gradients in place so that their global L2 norm is at most max_norm; returns the norm
/// before clipping (as torch.nn.utils.clip_grad_norm_, which divides by total_norm + 1e-6).
/// Tensors without a gradient are skipped; max_norm must be >= 0.
NORMNET_API double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
/// clip_grad_norm under torch's name.
NORMNET_API double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);
/// Clamps every gradient element to [-clip_value, clip_value] in place (torch.nn.utils.clip_grad_value_;
/// NaN stays NaN). Tensors without a gradient are skipped; clip_value must be >= 0.
NORMNET_API void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

/// torch::optim: the optimizers and schedulers under that name (optim::SGD, optim::StepLR, ...).
namespace optim = ::normnet;

}  // namespace normnet
