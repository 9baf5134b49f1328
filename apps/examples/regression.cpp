// Regression from in-memory data, no files: a small MLP learns y = sin(3x) + x/2 on [-1, 1]
// from noisy samples, with MSE loss, a DataLoader over the (inputs, targets) tensors, Adam and a
// warm-up + cosine schedule. The training pieces are used on their own, without a trainer.
// Exits with status 1 if the test MSE does not get below --target.
//   regression [--steps 1500] [--samples 512] [--target 0.01]
#include <normnet/normnet.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "example_args.hpp"

using namespace normnet;

float truth(float x) { return std::sin(3.0f * x) + 0.5f * x; }

// n points x in [-1, 1] with targets truth(x) + noise: inputs [n, 1], targets [n, 1].
std::pair<Tensor, Tensor> make_data(int64_t n, float noise, Generator& gen) {
    Tensor x = empty({n, 1}), y = empty({n, 1});
    for (int64_t i = 0; i < n; ++i) {
        x.data()[i] = 2.0f * gen.uniform() - 1.0f;
        y.data()[i] = truth(x.data()[i]) + noise * static_cast<float>(gen.normal());
    }
    return {x, y};
}

int main(int argc, char** argv) try {
    examples::Args args(argc, argv, "usage: regression [--steps N] [--samples N] [--target MSE]\n");
    const int64_t steps = args.num("steps", 1500), samples = args.num("samples", 512);
    const double target = args.real("target", 0.01);
    args.done();

    manual_seed(0);
    Generator gen(7);
    auto [train_x, train_y] = make_data(samples, 0.05f, gen);
    auto [test_x, test_y] = make_data(256, 0.0f, gen);

    Sequential model{Linear(1, 64), ReLU(), Linear(64, 64), ReLU(), Linear(64, 1)};
    DataLoader loader(train_x, train_y, {.batch_size = 32, .shuffle = true, .drop_last = true});
    Adam optimizer(model.parameters(), {.lr = 3e-3});  // any list of tensors works, not only a Module's
    LRScheduler schedule(optimizer, {.schedule = Schedule::cosine, .total_steps = steps, .warmup_steps = 50});

    int64_t step = 0;
    while (step < steps) {  // epochs until `steps` batches; each epoch reshuffles
        for (const Batch& batch : loader) {
            Tensor loss = mse_loss(model(batch.inputs), batch.targets);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            schedule.step();
            if (++step % 250 == 0) std::printf("step %5lld  batch mse %.5f\n", static_cast<long long>(step), loss.item());
            if (step == steps) break;
        }
    }

    NoGradGuard no_grad;
    const double test_mse = mse_loss(model(test_x), test_y).item();
    std::printf("test mse %.5f (goal < %.5f)\n", test_mse, target);
    for (float x : {-0.75f, 0.0f, 0.5f}) {
        std::printf("  f(%+.2f) = %+.4f, learned %+.4f\n", x, truth(x), model(full({1, 1}, x)).item());
    }
    return test_mse < target ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "regression: error: %s\n", e.what());
    return 1;
}
