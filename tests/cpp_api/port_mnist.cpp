// A libtorch program in the shape of pytorch/examples' cpp/mnist, ported by renaming torch:: to
// normnet:: and TORCH_MODULE to NORMNET_MODULE. Lines that needed more than the renaming are
// marked PORT: the data pipeline (torch::data's MNIST dataset, transforms and make_data_loader)
// becomes normnet's DataLoader over an IDX Dataset (here a synthetic one, so the test needs no
// files); Dropout2d, not yet in normnet, is a Dropout; there are no devices; nll_loss takes its
// reduction in its options. Built and run by ctest on a few hundred images for one epoch.
#include <normnet/normnet.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <vector>

// The batch size for training and testing, the epochs, and how often to log.
const int64_t kTrainBatchSize = 64;
const int64_t kTestBatchSize = 100;
const size_t kNumberOfEpochs = 1;
const size_t kLogInterval = 2;

struct NetImpl : normnet::nn::Module {
    NetImpl()
        : conv1(normnet::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
          conv2(normnet::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
          conv2_drop(0.5),  // PORT: a Dropout where cpp/mnist has a Dropout2d
          fc1(320, 50),
          fc2(50, 10) {
        register_module("conv1", conv1);
        register_module("conv2", conv2);
        register_module("conv2_drop", conv2_drop);
        register_module("fc1", fc1);
        register_module("fc2", fc2);
    }

    normnet::Tensor forward(const normnet::Tensor& input) override {
        normnet::Tensor x = normnet::relu(normnet::max_pool2d(conv1->forward(input), 2));
        x = normnet::relu(normnet::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
        x = x.view({-1, 320});
        x = normnet::relu(fc1->forward(x));
        x = normnet::dropout(x, /*p=*/0.5, /*training=*/is_training());
        x = fc2->forward(x);
        return normnet::log_softmax(x, /*dim=*/1);
    }

    normnet::nn::Conv2d conv1;
    normnet::nn::Conv2d conv2;
    normnet::nn::Dropout conv2_drop;
    normnet::nn::Linear fc1;
    normnet::nn::Linear fc2;
};
NORMNET_MODULE(Net);

template <typename DataLoader>
void train(size_t epoch, Net& model, DataLoader& data_loader, normnet::optim::Optimizer& optimizer, size_t dataset_size) {
    model->train();
    size_t batch_idx = 0;
    for (auto& batch : data_loader) {
        auto data = batch.inputs, targets = batch.labels;  // PORT: batch.data, batch.target
        optimizer.zero_grad();
        auto output = model->forward(data);
        auto loss = normnet::nll_loss(output, targets);
        if (std::isnan(loss.template item<float>())) throw normnet::Error("the loss is NaN");
        loss.backward();
        optimizer.step();

        if (batch_idx++ % kLogInterval == 0) {
            std::printf("\rTrain Epoch: %zu [%5zu/%5zu] Loss: %.4f", epoch, batch_idx * static_cast<size_t>(batch.size()),
                        dataset_size, static_cast<double>(loss.template item<float>()));
        }
    }
}

template <typename DataLoader>
double test(Net& model, DataLoader& data_loader, size_t dataset_size) {
    normnet::NoGradGuard no_grad;
    model->eval();
    double test_loss = 0;
    int32_t correct = 0;
    for (const auto& batch : data_loader) {
        auto data = batch.inputs, targets = batch.labels;  // PORT: batch.data, batch.target
        auto output = model->forward(data);
        // PORT: libtorch passes (weight, reduction) positionally: nll_loss(output, targets, {}, Reduction::Sum)
        test_loss += normnet::nll_loss(output, targets, {.reduction = normnet::kSum}).template item<float>();
        auto pred = output.argmax(1);
        correct += static_cast<int32_t>(pred.eq(targets).sum().template item<int64_t>());
    }

    test_loss /= static_cast<double>(dataset_size);
    std::printf("\nTest set: Average loss: %.4f | Accuracy: %.3f\n", test_loss,
                static_cast<double>(correct) / static_cast<double>(dataset_size));
    return test_loss;
}

// PORT: the data, MNIST-shaped: 28x28 images whose label is the row holding a bright bar.
std::shared_ptr<normnet::Dataset> synthetic_mnist(int64_t count, uint64_t seed) {
    auto data = std::make_shared<normnet::Dataset>();
    data->images = {.count = count, .rows = 28, .cols = 28, .pixels = std::vector<uint8_t>(static_cast<size_t>(count) * 784)};
    normnet::Generator gen(seed);
    for (int64_t i = 0; i < count; ++i) {
        const auto label = static_cast<uint8_t>(gen.below(10));
        data->labels.push_back(label);
        for (int64_t c = 0; c < 28; ++c) {
            data->images.pixels[static_cast<size_t>(i * 784 + (2 + 2 * label) * 28 + c)] = 255;
        }
    }
    return data;
}

int main() {
    normnet::manual_seed(1);
    Net model;

    // PORT: torch::data::datasets::MNIST(kDataRoot).map(Normalize(0.1307, 0.3081)).map(Stack<>())
    // and torch::data::make_data_loader(std::move(train_dataset), kTrainBatchSize).
    const auto train_dataset = synthetic_mnist(512, 1), test_dataset = synthetic_mnist(200, 2);
    const normnet::ImageTransform normalize{.mean = 0.1307f, .std = 0.3081f};
    normnet::DataLoader train_loader(train_dataset, normnet::DataLoaderOptions(kTrainBatchSize), normalize);
    normnet::DataLoader test_loader(test_dataset, normnet::DataLoaderOptions(kTestBatchSize), normalize);
    const auto train_dataset_size = static_cast<size_t>(train_dataset->size());
    const auto test_dataset_size = static_cast<size_t>(test_dataset->size());

    normnet::optim::SGD optimizer(model->parameters(), normnet::optim::SGDOptions(0.01).momentum(0.5));

    const double before = test(model, test_loader, test_dataset_size);
    double after = before;
    for (size_t epoch = 1; epoch <= kNumberOfEpochs; ++epoch) {
        train(epoch, model, train_loader, optimizer, train_dataset_size);
        after = test(model, test_loader, test_dataset_size);
    }
    // The test: it ran, and it learned.
    return after < before ? 0 : 1;
}
