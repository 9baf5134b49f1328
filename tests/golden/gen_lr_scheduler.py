"""Goldens of torch's learning-rate schedulers (lr_scheduler.safetensors): the lr of each of two
parameter groups, and for OneCycleLR the momentum or beta1, before every optimizer step.

Values are doubles in torch, so they are stored exactly: `<case>.lr_bits` is an I64 [steps,
groups] tensor holding the IEEE-754 bits of each float64 (numpy's .view(np.int64)), likewise
`<case>.momentum_bits`; ReduceLROnPlateau's metric is the JSON list `plateau_metric` (JSON numbers
round-trip doubles exactly). Imported by make_goldens.py (FILES); tests/test_schedules.cpp reads
the file.
"""

import json
import warnings

import numpy as np
import torch

from golden_io import Case

S = torch.optim.lr_scheduler
BASE_LRS = (0.1, 0.02)


def _optimizer(kind):
    """An optimizer with two groups of one parameter each, lrs BASE_LRS."""
    p0, p1 = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    groups = [{"params": [p0], "lr": BASE_LRS[0]}, {"params": [p1], "lr": BASE_LRS[1]}]
    if kind == "SGD":
        return torch.optim.SGD(groups, lr=0.5, momentum=0.9)
    if kind == "Adam":
        return torch.optim.Adam(groups, lr=0.5, betas=(0.9, 0.99))
    assert kind == "Adagrad"
    return torch.optim.Adagrad(groups, lr=0.5)


def _bits(values):
    return torch.from_numpy(np.asarray(values, dtype=np.float64).view(np.int64).copy())


# A metric for ReduceLROnPlateau: falls, stalls with noise, falls again, rises.
PLATEAU_METRIC = [1.0, 0.8, 0.7, 0.69, 0.695, 0.7, 0.69, 0.68, 0.6, 0.6, 0.6, 0.61, 0.62, 0.5, 0.4,
                  0.41, 0.42, 0.43, 0.44, 0.45, 0.39, 0.39, 0.39, 0.39, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]

# (case, optimizer kind, steps, description for the C++ test, factory). The descriptions are JSON
# the test turns into the same normnet schedulers.
CASES = [
    ("step", "SGD", 20, {"type": "StepLR", "step_size": 3, "gamma": 0.5},
     lambda o: [S.StepLR(o, step_size=3, gamma=0.5)]),
    ("multistep", "SGD", 14, {"type": "MultiStepLR", "milestones": [9, 2, 5, 5], "gamma": 0.3},
     lambda o: [S.MultiStepLR(o, milestones=[9, 2, 5, 5], gamma=0.3)]),
    ("exponential", "SGD", 15, {"type": "ExponentialLR", "gamma": 0.9},
     lambda o: [S.ExponentialLR(o, gamma=0.9)]),
    ("cosine", "SGD", 30, {"type": "CosineAnnealingLR", "T_max": 7, "eta_min": 0.001},
     lambda o: [S.CosineAnnealingLR(o, T_max=7, eta_min=0.001)]),
    ("cosine_default", "SGD", 25, {"type": "CosineAnnealingLR", "T_max": 10, "eta_min": 0.0},
     lambda o: [S.CosineAnnealingLR(o, T_max=10)]),
    ("linear", "SGD", 12, {"type": "LinearLR", "start_factor": 0.25, "end_factor": 1.0, "total_iters": 6},
     lambda o: [S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=6)]),
    ("linear_default", "SGD", 8, {"type": "LinearLR"}, lambda o: [S.LinearLR(o)]),
    ("linear_decay", "SGD", 12, {"type": "LinearLR", "start_factor": 1.0, "end_factor": 0.1, "total_iters": 8},
     lambda o: [S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=8)]),
    ("lambda", "SGD", 10, {"type": "LambdaLR", "lambda": "0.95 ** epoch"},
     lambda o: [S.LambdaLR(o, lambda epoch: 0.95 ** epoch)]),
    ("onecycle", "SGD", 25, {"type": "OneCycleLR", "max_lr": [0.5, 0.1], "total_steps": 25},
     lambda o: [S.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=25)]),
    ("onecycle_linear_3phase", "Adam", 20,
     {"type": "OneCycleLR", "max_lr": [0.3], "epochs": 4, "steps_per_epoch": 5, "pct_start": 0.25,
      "anneal_strategy": "linear", "three_phase": True, "div_factor": 10.0, "final_div_factor": 100.0,
      "base_momentum": [0.8, 0.7], "max_momentum": [0.9, 0.95]},
     lambda o: [S.OneCycleLR(o, max_lr=0.3, epochs=4, steps_per_epoch=5, pct_start=0.25, anneal_strategy="linear",
                             three_phase=True, div_factor=10.0, final_div_factor=100.0, base_momentum=[0.8, 0.7],
                             max_momentum=[0.9, 0.95])]),
    ("onecycle_no_momentum", "Adagrad", 16,
     {"type": "OneCycleLR", "max_lr": [0.2], "total_steps": 16, "pct_start": 0.5, "cycle_momentum": False},
     lambda o: [S.OneCycleLR(o, max_lr=0.2, total_steps=16, pct_start=0.5, cycle_momentum=False)]),
    ("plateau", "SGD", 30,
     {"type": "ReduceLROnPlateau", "factor": 0.5, "patience": 2, "threshold": 0.01, "cooldown": 1,
      "min_lr": [0.01, 0.004]},
     lambda o: [S.ReduceLROnPlateau(o, factor=0.5, patience=2, threshold=0.01, cooldown=1, min_lr=[0.01, 0.004])]),
    ("plateau_max_abs", "SGD", 30,
     {"type": "ReduceLROnPlateau", "mode": "max", "threshold_mode": "abs", "factor": 0.3, "patience": 1,
      "threshold": 0.05, "eps": 0.003, "min_lr": [0.0]},
     lambda o: [S.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", factor=0.3, patience=1, threshold=0.05,
                                    eps=0.003)]),
    ("sequential", "SGD", 20,
     {"type": "SequentialLR", "milestones": [4],
      "schedulers": [{"type": "LinearLR", "start_factor": 0.1, "total_iters": 4},
                     {"type": "CosineAnnealingLR", "T_max": 10, "eta_min": 0.0}]},
     lambda o: _sequential(o, [lambda: S.LinearLR(o, start_factor=0.1, total_iters=4),
                               lambda: S.CosineAnnealingLR(o, T_max=10)], [4])),
    ("sequential3", "SGD", 16,
     {"type": "SequentialLR", "milestones": [3, 8],
      "schedulers": [{"type": "ExponentialLR", "gamma": 0.9}, {"type": "StepLR", "step_size": 2, "gamma": 0.5},
                     {"type": "MultiStepLR", "milestones": [3], "gamma": 0.1}]},
     lambda o: _sequential(o, [lambda: S.ExponentialLR(o, gamma=0.9), lambda: S.StepLR(o, step_size=2, gamma=0.5),
                               lambda: S.MultiStepLR(o, milestones=[3], gamma=0.1)], [3, 8])),
    # Schedules that end at 0 by cancellation: torch's lr lands a rounding below it (-1.5e-18,
    # -2.8e-19), which normnet sets to 0 (tests/test_schedules.cpp).
    ("linear_to_zero", "SGD", 9, {"type": "LinearLR", "start_factor": 1 / 3, "end_factor": 0.0, "total_iters": 5},
     lambda o: [S.LinearLR(o, start_factor=1 / 3, end_factor=0.0, total_iters=5)]),
    ("chained_cosine_to_zero", "SGD", 20,
     {"type": "ChainedScheduler",
      "schedulers": [{"type": "CosineAnnealingLR", "T_max": 7, "eta_min": 0.0},
                     {"type": "LinearLR", "start_factor": 1 / 3, "end_factor": 0.0, "total_iters": 5}]},
     lambda o: _chained([S.CosineAnnealingLR(o, T_max=7), S.LinearLR(o, start_factor=1 / 3, end_factor=0.0,
                                                                     total_iters=5)])),
    ("warm_restarts", "SGD", 25, {"type": "CosineAnnealingWarmRestarts", "T_0": 3, "T_mult": 2, "eta_min": 0.001},
     lambda o: [S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)]),
    ("warm_restarts_default", "SGD", 15, {"type": "CosineAnnealingWarmRestarts", "T_0": 4},
     lambda o: [S.CosineAnnealingWarmRestarts(o, T_0=4)]),
    # Stepped per batch with fractional epochs, three batches per epoch: step(epoch + i / 3).
    ("warm_restarts_fractional", "SGD", 24,
     {"type": "CosineAnnealingWarmRestarts", "T_0": 2, "T_mult": 2, "eta_min": 0.0, "batches_per_epoch": 3},
     lambda o: [S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2)]),
    ("warm_restarts_fractional_t1", "SGD", 20,
     {"type": "CosineAnnealingWarmRestarts", "T_0": 2, "T_mult": 1, "eta_min": 0.01, "batches_per_epoch": 4},
     lambda o: [S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min=0.01)]),
    ("cyclic", "SGD", 30, {"type": "CyclicLR", "base_lr": [0.01, 0.001], "max_lr": [0.1], "step_size_up": 4},
     lambda o: [S.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=0.1, step_size_up=4)]),
    ("cyclic_triangular2", "SGD", 30,
     {"type": "CyclicLR", "base_lr": [0.01], "max_lr": [0.1, 0.05], "step_size_up": 3, "step_size_down": 5,
      "mode": "triangular2", "base_momentum": [0.85], "max_momentum": [0.95, 0.9]},
     lambda o: [S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=3, step_size_down=5, mode="triangular2",
                           base_momentum=0.85, max_momentum=[0.95, 0.9])]),
    ("cyclic_exp_range", "Adam", 25,
     {"type": "CyclicLR", "base_lr": [0.001], "max_lr": [0.01], "step_size_up": 2, "step_size_down": 3,
      "mode": "exp_range", "gamma": 0.9, "cycle_momentum": False},
     lambda o: [S.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=2, step_size_down=3, mode="exp_range", gamma=0.9,
                           cycle_momentum=False)]),
    ("cyclic_scale_fn", "SGD", 20,
     {"type": "CyclicLR", "base_lr": [0.02], "max_lr": [0.2], "step_size_up": 3, "scale_fn": "0.8 ** x",
      "scale_mode": "iterations"},
     lambda o: [S.CyclicLR(o, base_lr=0.02, max_lr=0.2, step_size_up=3, scale_fn=lambda x: 0.8 ** x,
                           scale_mode="iterations")]),
    ("chained", "SGD", 15,
     {"type": "ChainedScheduler",
      "schedulers": [{"type": "LinearLR", "start_factor": 0.2, "total_iters": 5}, {"type": "ExponentialLR", "gamma": 0.9}]},
     lambda o: _chained([S.LinearLR(o, start_factor=0.2, total_iters=5), S.ExponentialLR(o, gamma=0.9)])),
]


def _sequential(o, makers, milestones):
    schedulers = [make() for make in makers]
    return schedulers + [S.SequentialLR(o, schedulers, milestones)]


def _chained(schedulers):
    return schedulers + [S.ChainedScheduler(schedulers)]


def _momentum(group):
    return group["betas"][0] if "betas" in group else group.get("momentum", 0.0)


def make_lr_scheduler():
    tensors, metadata = {}, {}
    metadata["base_lrs"] = json.dumps(list(BASE_LRS))
    metadata["plateau_metric"] = json.dumps(PLATEAU_METRIC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SequentialLR's milestones call the deprecated step(0)
        for name, kind, steps, description, factory in CASES:
            c = Case(tensors, metadata, name)
            opt = _optimizer(kind)
            schedulers = factory(opt)
            scheduler = schedulers[-1]  # the one the loop steps
            c.meta("optimizer", kind)
            c.meta("scheduler", json.dumps(description))
            c.meta("steps", steps)
            lrs, momenta = [], []
            for t in range(steps):
                lrs.append([g["lr"] for g in opt.param_groups])
                momenta.append([_momentum(g) for g in opt.param_groups])
                opt.step()  # no gradients: nothing moves; it keeps torch's step-order check quiet
                if isinstance(scheduler, S.ReduceLROnPlateau):
                    scheduler.step(PLATEAU_METRIC[t])
                elif "batches_per_epoch" in description:
                    scheduler.step((t + 1) / description["batches_per_epoch"])
                else:
                    scheduler.step()
            c.put("lr_bits", _bits(lrs), "I64")
            if description["type"] == "OneCycleLR" or (description["type"] == "CyclicLR"
                                                        and description.get("cycle_momentum", True)):
                c.put("momentum_bits", _bits(momenta), "I64")
    return tensors, metadata


FILES = [("lr_scheduler.safetensors", make_lr_scheduler)]
