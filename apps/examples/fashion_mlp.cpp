// A typical PyTorch tutorial model ported line by line: an MLP with GELU and dropout on
// Fashion-MNIST, AdamW with two parameter groups (no weight decay on biases and LayerNorm
// weights) and a OneCycleLR schedule stepped per batch. Each block below carries the PyTorch
// lines it replaces as a comment.
//   fashion_mlp [--data /usr/share/datasets/fashion-mnist] [--epochs 3] [--limit N] [--seed S]
#include <normnet/normnet.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

#include "example_args.hpp"

using namespace normnet;

int main(int argc, char** argv) try {
    examples::Args args(argc, argv, "usage: fashion_mlp [--data DIR] [--epochs N] [--limit N] [--seed S]\n");
    const std::string data = args.str("data", "/usr/share/datasets/fashion-mnist");
    const int64_t epochs = args.num("epochs", 3), limit = args.num("limit", 0), seed = args.num("seed", 0);
    args.done();

    // torch.manual_seed(0)
    manual_seed(static_cast<uint64_t>(seed));

    // model = nn.Sequential(
    //     nn.Linear(784, 512), nn.GELU(), nn.Dropout(0.2), nn.LayerNorm(512),
    //     nn.Linear(512, 256), nn.GELU(), nn.Dropout(0.2), nn.LayerNorm(256),
    //     nn.Linear(256, 10))
    Sequential model{Linear(784, 512), GELU(), Dropout(0.2), LayerNorm({512}),
                     Linear(512, 256), GELU(), Dropout(0.2), LayerNorm({256}),
                     Linear(256, 10)};
    std::cout << model.to_string() << "\n";

    // train_loader = DataLoader(datasets.FashionMNIST(root, train=True, transform=ToTensor()),
    //                           batch_size=64, shuffle=True)
    // test_loader = DataLoader(datasets.FashionMNIST(root, train=False, transform=ToTensor()),
    //                          batch_size=1000)
    auto train = std::make_shared<Dataset>(load_mnist_split(data, "train"));
    auto test = std::make_shared<Dataset>(load_mnist_split(data, "test"));
    if (limit > 0) *train = take(*train, limit), *test = take(*test, limit);
    DataLoader train_loader(train, {.batch_size = 64, .shuffle = true});
    DataLoader test_loader(test, {.batch_size = 1000, .shuffle = false});

    // decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    // no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    // optimizer = torch.optim.AdamW([{"params": decay},
    //                                {"params": no_decay, "weight_decay": 0.0}],
    //                               lr=1e-3, weight_decay=0.05)
    auto [no_decay, decay] = split_parameters(model.named_parameters(),
                                              [](const std::string&, const Tensor& p) { return p.dim() <= 1; });
    AdamW optimizer({{decay}, {no_decay, {.weight_decay = 0.0}}}, {.lr = 1e-3, .weight_decay = 0.05});

    // scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3,
    //                                                 epochs=epochs, steps_per_epoch=len(train_loader))
    OneCycleLR scheduler(optimizer, {.max_lr = 3e-3, .epochs = epochs,
                                     .steps_per_epoch = train_loader.num_batches()});

    // loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    CrossEntropyLoss loss_fn(CrossEntropyLossOptions{.label_smoothing = 0.1});

    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
        // model.train()
        // for X, y in train_loader:
        //     loss = loss_fn(model(X.flatten(1)), y)
        //     optimizer.zero_grad(); loss.backward(); optimizer.step(); scheduler.step()
        model.train();
        double loss_sum = 0;
        for (const Batch& batch : train_loader) {
            Tensor loss = loss_fn(model(batch.inputs.flatten(1)), batch.labels);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            scheduler.step();
            loss_sum += loss.item() * static_cast<double>(batch.size());
        }
        // model.eval()
        // with torch.no_grad():
        //     correct = sum((model(X.flatten(1)).argmax(1) == y).sum().item() for X, y in test_loader)
        model.eval();
        NoGradGuard no_grad;
        int64_t correct = 0;
        for (const Batch& batch : test_loader) {
            correct += (argmax(model(batch.inputs.flatten(1)), 1) == batch.labels).sum().item<int64_t>();
        }
        std::printf("epoch %lld  lr %.2e  train loss %.4f  test accuracy %.2f%%\n", static_cast<long long>(epoch),
                    scheduler.get_last_lr()[0], loss_sum / static_cast<double>(train->size()),
                    100.0 * static_cast<double>(correct) / static_cast<double>(test->size()));
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mlp: error: %s\n", e.what());
    return 1;
}
