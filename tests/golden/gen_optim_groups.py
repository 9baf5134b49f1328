"""Goldens of the optimizers with parameter groups (optim_groups.safetensors): SGD, Adam, AdamW
(amsgrad included), RMSprop, Adagrad, NAdam, RAdam and Adamax, each over 20 steps of a small problem whose three
parameters sit in groups with their own options, one of them missing its gradient in some steps.

Imported by make_goldens.py (FILES); tests/test_optim_groups.cpp reads the file.
"""

import json

import torch

from golden_io import Case

STEPS = 20
# p1 has a gradient only in these steps (its .grad is None in the others).
P1_STEPS = (0, 1, 2, 5, 6, 11, 12, 13, 17)

# (case, optimizer class, defaults, per-group overrides for groups [p0], [p1], [p2])
CASES = [
    ("sgd", torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01),
     [{}, dict(lr=0.05, momentum=0.0, weight_decay=0.0), dict(momentum=0.8, nesterov=True)]),
    ("sgd_dampening", torch.optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3),
     [{}, dict(weight_decay=0.1), dict(dampening=0.0, nesterov=True)]),
    ("adam", torch.optim.Adam, dict(lr=0.01, weight_decay=0.1),
     [{}, dict(weight_decay=0.0, amsgrad=True), dict(betas=(0.8, 0.99), eps=1e-6, lr=0.02)]),
    ("adam_amsgrad", torch.optim.Adam, dict(lr=0.02, amsgrad=True),
     [{}, dict(amsgrad=False), dict(betas=(0.5, 0.9))]),
    ("adamw", torch.optim.AdamW, dict(lr=0.01, weight_decay=0.05, amsgrad=True),
     [{}, dict(weight_decay=0.0), dict(amsgrad=False, lr=0.003)]),
    ("rmsprop", torch.optim.RMSprop, dict(lr=0.01),
     [{}, dict(centered=True), dict(momentum=0.9, weight_decay=0.01)]),
    ("rmsprop_all", torch.optim.RMSprop,
     dict(lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.5, centered=True),
     [{}, dict(momentum=0.0), dict(centered=False, alpha=0.95)]),
    ("adagrad", torch.optim.Adagrad, dict(lr=0.1),
     [{}, dict(lr_decay=0.01), dict(weight_decay=0.1, eps=1e-6)]),
    # torch 1.13 fills every sum with the constructor's initial_accumulator_value, whatever a group
    # says, so only the default is set here.
    ("adagrad_init", torch.optim.Adagrad, dict(lr=0.05, initial_accumulator_value=0.1, lr_decay=0.001),
     [{}, dict(lr=0.2), {}]),
    ("nadam", torch.optim.NAdam, dict(lr=0.01),
     [{}, dict(weight_decay=0.1, momentum_decay=0.01), dict(betas=(0.8, 0.99), eps=1e-6, lr=0.02)]),
    ("nadam_wd", torch.optim.NAdam, dict(lr=0.005, weight_decay=0.05, momentum_decay=0.0),
     [{}, dict(weight_decay=0.0), dict(momentum_decay=0.1)]),
    # RAdam's first steps (rho_t <= 5) are plain momentum; from step 6 on (beta2 0.999) rectified.
    ("radam", torch.optim.RAdam, dict(lr=0.01),
     [{}, dict(weight_decay=0.1), dict(betas=(0.8, 0.9), eps=1e-6, lr=0.02)]),
    ("radam_wd", torch.optim.RAdam, dict(lr=0.003, weight_decay=0.05, betas=(0.5, 0.7)),
     [{}, dict(weight_decay=0.0), dict(betas=(0.9, 0.99))]),
    ("adamax", torch.optim.Adamax, dict(lr=0.01),
     [{}, dict(weight_decay=0.1), dict(betas=(0.8, 0.99), eps=1e-3, lr=0.02)]),
    ("adamax_wd", torch.optim.Adamax, dict(lr=0.002, weight_decay=0.05),
     [{}, dict(weight_decay=0.0, betas=(0.5, 0.9)), {}]),
]
# The options that define each optimizer's update (torch's implementation switches left out).
OPTION_KEYS = {
    "SGD": ["lr", "momentum", "dampening", "weight_decay", "nesterov"],
    "Adam": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
    "AdamW": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
    "RMSprop": ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"],
    "Adagrad": ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"],
    "NAdam": ["lr", "betas", "eps", "weight_decay", "momentum_decay"],
    "RAdam": ["lr", "betas", "eps", "weight_decay"],
    "Adamax": ["lr", "betas", "eps", "weight_decay"],
}


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


def make_optim_groups():
    tensors, metadata = {}, {}
    torch.manual_seed(50)
    A = torch.randn(4, 2)
    B = torch.randn(3, 2)
    cvec = torch.randn(5)
    D = torch.randn(6, 7)
    inits = [torch.randn(3, 4), torch.randn(5), torch.randn(6, 7)]
    c = Case(tensors, metadata, "problem")
    c.put("A", A)
    c.put("B", B)
    c.put("c", cvec)
    c.put("D", D)
    c.meta("loss", "sum((p0 @ A - B)^2) + sum(sin(p1) * c) + sum(tanh(p2) * D) + 0.1 * sum(p2^2)")
    c.meta("p1_steps", list(P1_STEPS))
    c.meta("steps", STEPS)

    for name, cls, defaults, overrides in CASES:
        torch.manual_seed(51)  # nothing random below; seeded anyway so a change stays reproducible
        c = Case(tensors, metadata, name)
        ps = [p.clone().requires_grad_() for p in inits]
        groups = [dict(params=[p], **o) for p, o in zip(ps, overrides)]
        opt = cls(groups, **defaults)
        keys = OPTION_KEYS[cls.__name__]
        hp = {
            "optimizer": cls.__name__,
            "defaults": {k: _plain(opt.defaults[k]) for k in keys},
            "overrides": [{k: _plain(v) for k, v in o.items()} for o in overrides],
            # The effective options of each group, as torch resolved them.
            "groups": [{k: _plain(g[k]) for k in keys} for g in opt.param_groups],
        }
        c.meta("hparams", json.dumps(hp))
        for j, p in enumerate(ps):
            c.put(f"init.p{j}", p)
        for k in range(STEPS):
            opt.zero_grad(set_to_none=True)
            loss = ((ps[0] @ A - B) ** 2).sum() + (torch.tanh(ps[2]) * D).sum() + 0.1 * (ps[2] ** 2).sum()
            if k in P1_STEPS:
                loss = loss + (torch.sin(ps[1]) * cvec).sum()
            loss.backward()
            for j, p in enumerate(ps):
                if p.grad is not None:
                    c.put(f"grad{k}.p{j}", p.grad)
            opt.step()
            for j, p in enumerate(ps):
                c.put(f"after{k}.p{j}", p)
        # The state after the last step, under the names normnet's state_dict uses.
        for j, p in enumerate(ps):
            for key, value in opt.state[p].items():
                if value is None:  # SGD keeps momentum_buffer None without momentum
                    continue
                if key == "step":
                    c.put(f"final.step.p{j}", torch.tensor(int(value)), "I64")
                else:
                    c.put(f"final.{key}.p{j}", value)
    return tensors, metadata


FILES = [("optim_groups.safetensors", make_optim_groups)]
