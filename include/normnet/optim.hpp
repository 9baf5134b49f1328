// Optimizers (SGD, Adam, AdamW), learning-rate schedules and gradient clipping, with the
// semantics and defaults of PyTorch 1.13's torch.optim (one parameter group).
//
// Optimizers hold their parameters by name, so their state has stable names ("exp_avg.0.weight")
// and a checkpoint of it means the same thing after a restart. As in PyTorch, each parameter
// counts its own steps (the steps in which it had a gradient), which Adam's bias corrections
// use. step() updates every parameter in one pass over its data and, after the first call has
// created the state, allocates nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// Options of SGD, with torch.optim.SGD's defaults (torch requires lr; 0.01 is normnet's default).
struct SGDOptions {
    double lr = 0.01;
    double momentum = 0;
    double dampening = 0;
    double weight_decay = 0;  ///< L2 penalty: weight_decay * p is added to the gradient.
    bool nesterov = false;
};

/// Options of Adam, with torch.optim.Adam's defaults.
struct AdamOptions {
    double lr = 1e-3;
    std::pair<double, double> betas = {0.9, 0.999};
    double eps = 1e-8;
    double weight_decay = 0;  ///< L2 penalty: weight_decay * p is added to the gradient before the moments.
};

/// Options of AdamW, with torch.optim.AdamW's defaults (note weight_decay 0.01).
struct AdamWOptions {
    double lr = 1e-3;
    std::pair<double, double> betas = {0.9, 0.999};
    double eps = 1e-8;
    double weight_decay = 0.01;  ///< Decoupled: p *= 1 - lr * weight_decay before the Adam update.
};

/// The base of every optimizer: the named parameters, the learning rate, the step counter and
/// the per-parameter state, which it saves and restores by name (never by address).
/// Not copyable: copies would update the same parameters with diverging state.
class NORMNET_API Optimizer {
public:
    /// Optimizes `params` (e.g. model.named_parameters()); names must be unique and non-empty,
    /// tensors contiguous leaves, each listed once.
    explicit Optimizer(NamedTensors params);
    /// Optimizes any list of tensors; they are named "0", "1", ... in order.
    explicit Optimizer(const std::vector<Tensor>& params);
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

    /// The current learning rate (schedules change it; options().lr keeps the one given at construction).
    double lr() const { return lr_; }
    /// Sets the learning rate used by the next step(); it must be finite and >= 0.
    void set_lr(double lr);
    /// Number of step() calls so far (restored by load_state_dict).
    int64_t step_count() const { return step_count_; }
    /// Steps in which parameter i had a gradient (restored by load_state_dict), for optimizers
    /// that count them (Adam, AdamW: their bias corrections use it, as torch's state['step']); 0 for SGD.
    int64_t param_step(size_t i) const { return param_steps_[i]; }
    /// The optimized parameters with their names.
    const NamedTensors& params() const { return params_; }

    /// A copy of all state, as tensors with stable names: "step" (int64) and "lr" (float32), then
    /// per parameter "step.<param name>" (int64; Adam and AdamW, once it has stepped) and "<state>.<param name>"
    /// (e.g. "momentum_buffer.0.weight", "exp_avg.0.weight", "exp_avg_sq.0.weight") for the state
    /// created so far.
    virtual NamedTensors state_dict() const;
    /// Restores state saved by state_dict(). Every name and shape is checked before anything
    /// changes; a bad one throws normnet::Error naming the key. Per-parameter state that is absent
    /// is reset (created again on the next step); a state written before per-parameter steps existed
    /// (no "step.<name>") gives every parameter with state the global step. The stored lr is float32: when the current lr
    /// rounds to it, the current (double) lr is kept, so a resumed run continues bit-identically.
    /// Create an LRScheduler before loading (its base lr is the lr at its construction) and then
    /// call its set_position().
    virtual void load_state_dict(const NamedTensors& state);
    /// "SGD", "Adam" or "AdamW", as PyTorch's class names.
    virtual std::string name() const = 0;

protected:
    /// Registers a kind of per-parameter state (e.g. "exp_avg") and returns its index for state().
    /// Subclasses call it in their constructor.
    int add_state(const std::string& prefix);
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

private:
    struct StateKind {
        std::string prefix;
        std::vector<Tensor> tensors;
    };
    NamedTensors params_;
    std::vector<StateKind> states_;
    double lr_ = 0.0;
    int64_t step_count_ = 0;
    std::vector<int64_t> param_steps_;
    bool counts_param_steps_ = false;
};

/// Stochastic gradient descent with optional momentum, dampening, Nesterov and L2 weight decay
/// (torch.optim.SGD: the momentum buffer starts as the first gradient, without dampening).
class NORMNET_API SGD : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit SGD(NamedTensors params, SGDOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit SGD(const std::vector<Tensor>& params, SGDOptions options = {});
    void step() override;
    std::string name() const override { return "SGD"; }
    /// The options given at construction.
    const SGDOptions& options() const { return options_; }

private:
    SGDOptions options_;
    int momentum_buffer_ = 0;  // state index
};

/// Adam (torch.optim.Adam, amsgrad off) with L2 weight decay added to the gradient.
class NORMNET_API Adam : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit Adam(NamedTensors params, AdamOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit Adam(const std::vector<Tensor>& params, AdamOptions options = {});
    void step() override;
    void step_and_zero_grad() override;
    std::string name() const override { return "Adam"; }
    /// The options given at construction.
    const AdamOptions& options() const { return options_; }

private:
    void update(bool zero_grad);
    AdamOptions options_;
    int exp_avg_ = 0, exp_avg_sq_ = 0;  // state indices
};

/// AdamW (torch.optim.AdamW, amsgrad off): decoupled weight decay p *= 1 - lr * weight_decay,
/// then the Adam update without L2.
class NORMNET_API AdamW : public Optimizer {
public:
    /// Throws normnet::Error naming the option when options are invalid (PyTorch's rules).
    explicit AdamW(NamedTensors params, AdamWOptions options = {});
    /// Optimizes any list of tensors, named "0", "1", ... in its state_dict.
    explicit AdamW(const std::vector<Tensor>& params, AdamWOptions options = {});
    void step() override;
    void step_and_zero_grad() override;
    std::string name() const override { return "AdamW"; }
    /// The options given at construction.
    const AdamWOptions& options() const { return options_; }

private:
    void update(bool zero_grad);
    AdamWOptions options_;
    int exp_avg_ = 0, exp_avg_sq_ = 0;  // state indices
};

/// The shape of the learning rate after the warm-up.
enum class Schedule {
    constant,  ///< base
    step,      ///< base * gamma^floor(t / step_size) (torch StepLR)
    cosine,    ///< eta_min + (base - eta_min) * (1 + cos(pi * t / T)) / 2 (torch CosineAnnealingLR)
};

/// Options of LRScheduler. With warmup_steps w > 0, step t < w uses base * (t + 1) / w and the
/// schedule then runs at t - w over the horizon T = total_steps - w.
struct LRSchedulerOptions {
    Schedule schedule = Schedule::constant;
    int64_t total_steps = 0;   ///< batches in the whole run, warm-up included (needed by cosine)
    int64_t warmup_steps = 0;  ///< linear warm-up ending at the base lr
    int64_t step_size = 1;     ///< Schedule::step: batches per decay
    double gamma = 0.1;        ///< Schedule::step: decay factor
    double eta_min = 0.0;      ///< Schedule::cosine: the final lr
};

/// A learning-rate schedule stepped once per batch. It sets the optimizer's lr from the base
/// lr (the optimizer's lr when the scheduler is made); the optimizer must outlive it.
class NORMNET_API LRScheduler {
public:
    /// Takes the base lr from optimizer.lr() and sets the optimizer's lr to lr_at(0).
    /// Throws normnet::Error naming the option when options are invalid.
    LRScheduler(Optimizer& optimizer, LRSchedulerOptions options);
    /// Moves to the next batch and sets the optimizer's lr to that batch's lr.
    void step();
    /// The lr of batch t (t = 0 is the first). After total_steps a cosine schedule stays at eta_min.
    double lr_at(int64_t t) const;
    /// The batch whose lr the optimizer holds now (0 after construction, +1 per step()).
    int64_t position() const { return position_; }
    /// Jumps to batch t and sets the optimizer's lr, for an exact resume from a checkpoint.
    void set_position(int64_t t);
    /// The lr the schedule scales.
    double base_lr() const { return base_lr_; }
    /// The options given at construction.
    const LRSchedulerOptions& options() const { return options_; }

private:
    Optimizer* optimizer_;
    LRSchedulerOptions options_;
    double base_lr_;
    int64_t position_ = 0;
};

/// Scales the gradients in place so that their global L2 norm is at most max_norm; returns the norm
/// before clipping (as torch.nn.utils.clip_grad_norm_, which divides by total_norm + 1e-6).
/// Tensors without a gradient are skipped; max_norm must be >= 0.
NORMNET_API double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);


}  // namespace normnet
