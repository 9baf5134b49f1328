// `normnet demo`: trains the seed model for a few steps on random data and prints the loss
// falling, a quick check that the build works without any dataset.
#include <cstdio>
#include <vector>

#include "commands.hpp"
#include "progress.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct DemoOptions {
    int steps = 20;
    int batch_size = 64;
    float lr = 0.01f;
    uint64_t seed = 0;
};

void run_demo(const DemoOptions& o) {
    manual_seed(o.seed);
    Sequential model{Linear(784, 300), ReLU(), LayerNorm({300}), Linear(300, 100), ReLU(), LayerNorm({100}),
                     Linear(100, 10)};
    std::printf("%s\n", model.to_string().c_str());
    Generator gen(o.seed + 1);
    const Tensor x = rand({o.batch_size, 784}, gen);
    std::vector<int64_t> classes(static_cast<size_t>(o.batch_size));
    for (auto& label : classes) label = static_cast<int64_t>(gen.below(10));
    const Tensor y = from_vector(classes, {o.batch_size});
    std::printf("training on one random batch of %s with SGD (lr %g):\n", plural(o.batch_size, "image").c_str(),
                static_cast<double>(o.lr));
    for (int step = 1; step <= o.steps; ++step) {
        model.zero_grad();
        const Tensor loss = cross_entropy(model(x), y);
        loss.backward();
        {
            NoGradGuard no_grad;
            for (auto& p : model.parameters()) p.add_(p.grad(), -o.lr);
        }
        if (step == 1 || step % 5 == 0 || step == o.steps) std::printf("step %3d  loss %.4f\n", step, static_cast<double>(loss.item()));
    }
}

}  // namespace

void add_demo_command(CLI::App& app) {
    auto options = std::make_shared<DemoOptions>();
    CLI::App* cmd = app.add_subcommand("demo", "Train the seed model for a few steps on random data");
    cmd->add_option("--steps", options->steps, "Training steps")->check(kSizeRange);
    cmd->add_option("--batch-size", options->batch_size, "Images in the random batch")->check(kSizeRange);
    cmd->add_option("--seed", options->seed, "Random seed")->check(kNonNegative);
    cmd->callback([options] { run_demo(*options); });
}

}  // namespace normnet::cli
