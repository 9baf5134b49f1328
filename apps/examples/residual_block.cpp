// A custom layer: a pre-norm residual block y = x + gamma * Linear(ReLU(LayerNorm(x))), written
// as a Module subclass that registers its own children, a parameter and a buffer, and nothing
// else: printing, state_dict, checkpoints, optimizers, train()/eval() and gradcheck then work
// on it as on any built-in layer. A model of two blocks is trained on MNIST with AdamW, a cosine
// schedule and gradient clipping, saved, loaded back into a fresh model, and exported as ONNX
// (the block writes its own ONNX form, to_onnx).
//   residual_block [--data data/mnist] [--epochs 2] [--limit N (first N images; 0: all)]
//                  [--hidden 128] [--save residual_block.safetensors]
#include <normnet/normnet.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

#include "example_args.hpp"

using namespace normnet;

/// y = x + gamma * fc(relu(norm(x))) over the last dimension `features`. gamma, a learnable
/// per-feature scale of the branch (init 0.1, "LayerScale"), keeps the block close to the
/// identity at the start. The buffer `batches_seen` counts training batches: it is saved in
/// checkpoints but not trained.
class ResidualBlock : public Module {
public:
    explicit ResidualBlock(int64_t features)
        : norm(register_module("norm", LayerNorm({features}))),
          fc(register_module("fc", Linear(features, features))),
          gamma(register_parameter("gamma", full({features}, 0.1f))),
          batches_seen(register_buffer("batches_seen", zeros({1}))),
          features_(features) {}

    Tensor forward(const Tensor& x) override {
        if (is_training()) batches_seen.data()[0] += 1;
        return x + gamma * (*fc)(relu((*norm)(x)));
    }
    std::string extra_repr() const override { return "features=" + std::to_string(features_); }
    // Its ONNX form (docs/onnx.md): the children through their own, gamma stored under its name.
    onnx::Value to_onnx(onnx::GraphBuilder& g, const onnx::Value& x) const override {
        return g.add(x, g.mul(g.tensor(gamma, "gamma"), g.call(*fc, g.relu(g.call(*norm, x)))));
    }

    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<Linear> fc;
    Tensor gamma;
    Tensor batches_seen;

private:
    int64_t features_;
};

Sequential make_model(int64_t hidden) {
    return Sequential{Linear(784, hidden), ResidualBlock(hidden), ResidualBlock(hidden), LayerNorm({hidden}),
                      ReLU(), Linear(hidden, 10)};
}

double accuracy(Sequential& model, DataLoader& loader) {
    model.eval();
    NoGradGuard no_grad;
    int64_t correct = 0;
    for (const Batch& batch : loader) correct += count_correct(model(batch.inputs.flatten(1)), batch.labels);
    return 100.0 * static_cast<double>(correct) / static_cast<double>(loader.dataset_size());
}

int main(int argc, char** argv) try {
    examples::Args args(argc, argv,
                        "usage: residual_block [--data DIR] [--epochs N] [--limit N] [--hidden H] [--save FILE]\n");
    const std::string data = args.str("data", "data/mnist");
    const std::string save_to = args.str("save", "residual_block.safetensors");
    const int64_t epochs = args.num("epochs", 2), limit = args.num("limit", 0), hidden = args.num("hidden", 128);
    args.done();

    // The block's gradients, by central differences (a small block in double-checked float32).
    ResidualBlock probe(6);
    Tensor x = randn({4, 6}).requires_grad_();
    const GradcheckResult check = gradcheck(probe, x);
    std::printf("gradcheck ResidualBlock: %s (%lld values)\n", check.ok ? "ok" : check.message.c_str(),
                static_cast<long long>(check.checked));
    if (!check.ok) return 1;

    manual_seed(0);
    Sequential model = make_model(hidden);
    std::cout << model.to_string() << "\n";
    for (const auto& [name, t] : model.state_dict()) std::printf("  %-22s %s\n", name.c_str(), t.shape().str().c_str());

    auto train = std::make_shared<Dataset>(load_mnist_split(data, "train"));
    auto test = std::make_shared<Dataset>(load_mnist_split(data, "test"));
    if (limit > 0) *train = take(*train, limit), *test = take(*test, limit);
    const ImageTransform standardise{.mean = 0.1307f, .std = 0.3081f};
    DataLoader train_loader(train, {.batch_size = 128, .shuffle = true, .seed = 1}, standardise);
    DataLoader test_loader(test, {.batch_size = 1000, .shuffle = false}, standardise);

    AdamW optimizer(model.named_parameters(), {.lr = 2e-3, .weight_decay = 0.05});
    LRScheduler schedule(optimizer, {.schedule = Schedule::cosine, .total_steps = epochs * train_loader.num_batches()});
    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
        model.train();
        for (const Batch& batch : train_loader) {
            Tensor loss = cross_entropy(model(batch.inputs.flatten(1)), batch.labels);
            optimizer.zero_grad();
            loss.backward();
            clip_grad_norm(model.parameters(), 1.0);
            optimizer.step();
            schedule.step();
        }
        std::printf("epoch %lld  lr %.2e  test accuracy %.2f%%\n", static_cast<long long>(epoch), optimizer.lr(),
                    accuracy(model, test_loader));
    }

    // A checkpoint holds every registered tensor, the custom ones included.
    save(model, save_to, {{"model", "residual_block"}});
    manual_seed(123);
    Sequential restored = make_model(hidden);
    load(restored, save_to);
    const double again = accuracy(restored, test_loader);
    const auto block = restored.at<ResidualBlock>(1);
    std::printf("reloaded from %s: test accuracy %.2f%%, block 1 saw %.0f batches\n", save_to.c_str(), again,
                block->batches_seen.item());
    // The same model as ONNX for other runtimes: it takes pixels / 255 and standardises them itself.
    onnx::ExportOptions onnx_options;
    onnx_options.input_mean = full({784}, 0.1307f);
    onnx_options.input_std = full({784}, 0.3081f);
    const std::string onnx_file = save_to.substr(0, save_to.rfind('.')) + ".onnx";
    const onnx::ExportInfo info = onnx::export_model(model, zeros({1, 784}), onnx_file, onnx_options);
    std::printf("exported to %s: %lld nodes, %lld bytes\n", onnx_file.c_str(), static_cast<long long>(info.nodes),
                static_cast<long long>(info.bytes));
    return again == accuracy(model, test_loader) ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "residual_block: error: %s\n", e.what());
    return 1;
}
