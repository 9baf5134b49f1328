// The seed model written out in C++: the counterpart of the seed's PyTorch example
//   model = nn.Sequential(nn.Linear(784, 300), nn.ReLU(), nn.LayerNorm(300),
//                         nn.Linear(300, 100), nn.ReLU(), nn.LayerNorm(100), nn.Linear(100, 10))
// trained on MNIST with Adam (lr 1e-3, batch 128), then evaluated and saved.
//   seed_mlp [--data data/mnist] [--epochs 3] [--limit N (first N images; 0: all)] [--save FILE]
#include <normnet/normnet.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

#include "example_args.hpp"

using namespace normnet;

int main(int argc, char** argv) try {
    examples::Args args(argc, argv, "usage: seed_mlp [--data DIR] [--epochs N] [--limit N] [--save FILE]\n");
    const std::string data = args.str("data", "data/mnist"), save_to = args.str("save", "");
    const int64_t epochs = args.num("epochs", 3), limit = args.num("limit", 0);
    args.done();

    manual_seed(0);
    Sequential model{Linear(784, 300), ReLU(), LayerNorm({300}),
                     Linear(300, 100), ReLU(), LayerNorm({100}),
                     Linear(100, 10)};
    std::cout << model.to_string() << "\n";

    auto train = std::make_shared<Dataset>(load_mnist_split(data, "train"));
    auto test = std::make_shared<Dataset>(load_mnist_split(data, "test"));
    if (limit > 0) *train = take(*train, limit), *test = take(*test, limit);
    DataLoader train_loader(train, {.batch_size = 128, .shuffle = true});
    DataLoader test_loader(test, {.batch_size = 1000, .shuffle = false});
    Adam optimizer(model.named_parameters(), {.lr = 1e-3});

    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
        model.train();
        double loss_sum = 0;
        for (const Batch& batch : train_loader) {
            Tensor loss = cross_entropy(model(batch.inputs.flatten(1)), batch.labels);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            loss_sum += loss.item() * static_cast<double>(batch.size());
        }
        model.eval();
        NoGradGuard no_grad;
        int64_t correct = 0;
        for (const Batch& batch : test_loader) correct += count_correct(model(batch.inputs.flatten(1)), batch.labels);
        std::printf("epoch %lld  train loss %.4f  test accuracy %.2f%%\n", static_cast<long long>(epoch),
                    loss_sum / static_cast<double>(train->size()),
                    100.0 * static_cast<double>(correct) / static_cast<double>(test->size()));
    }
    if (!save_to.empty()) save(model, save_to);  // safetensors: torch's load_file reads it
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "seed_mlp: error: %s\n", e.what());
    return 1;
}
