// `normnet eval`: rebuilds the model from a checkpoint's metadata alone, and prints its test
// loss, accuracy and confusion matrix.
#include <cstdio>

#include "commands.hpp"
#include "models.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct EvalArgs {
    std::string checkpoint;
    std::string dataset;
    std::string data_dir;
    std::string split = "test";
    std::string predictions;
    int64_t limit = 0;
    int threads = 0;
};

void print_confusion(const Evaluation& e) {
    const size_t n = e.confusion.size();
    std::printf("confusion matrix (rows: true class, columns: predicted class):\n     ");
    for (size_t c = 0; c < n; ++c) std::printf("%6zu", c);
    std::printf("\n");
    for (size_t r = 0; r < n; ++r) {
        std::printf("%5zu", r);
        for (size_t c = 0; c < n; ++c) std::printf("%6lld", static_cast<long long>(e.confusion[r][c]));
        std::printf("\n");
    }
}

void run_eval(const EvalArgs& args) {
    const std::string path = model_file_of(args.checkpoint);
    ModelFile m = load_model_file(path);
    NORMNET_CHECK(m.spec.kind().task == kClassification, "--checkpoint ", path,
                  ": a language model's checkpoint (its validation loss is in its run's metrics.csv; normnet lm sample "
                  "generates text from it)");
    RunConfig& config = m.config;
    const ModelSpec& spec = m.spec;
    const SafetensorsData& checkpoint = m.file;
    if (!args.dataset.empty()) {
        config.dataset = args.dataset;
        config.data_dir.clear();
    }
    if (!args.data_dir.empty()) config.data_dir = args.data_dir;
    // The whole split unless --limit says otherwise: the training run's --limit is not inherited.
    config.limit = args.limit;
    config.threads = args.threads;
    config.threads = config.resolved_threads();
    set_num_threads(config.threads);
    const auto data = load_split(config, args.split);
    const auto model = m.model;
    const Evaluation e = evaluate(*model, *data, spec.classes);
    // The predictions file first: if it cannot be written, the error is all that is printed.
    if (!args.predictions.empty()) {
        std::string csv = "index,label,predicted\n";
        for (size_t i = 0; i < e.predictions.size(); ++i) {
            csv += std::to_string(i) + "," + std::to_string(data->labels[i]) + "," + std::to_string(e.predictions[i]) + "\n";
        }
        write_file_atomic(args.predictions, csv);
    }
    const auto epoch = checkpoint.metadata.find("normnet.epoch");
    const auto batch = checkpoint.metadata.find("normnet.batch");
    std::printf("checkpoint %s: %s, epoch %s%s\n", path.c_str(), spec.str().c_str(),
                epoch == checkpoint.metadata.end() ? "?" : epoch->second.c_str(),
                batch == checkpoint.metadata.end() ? "" : (" + " + batch->second + " batches").c_str());
    std::printf("%s %s: %lld images\n", config.dataset.c_str(), args.split.c_str(), static_cast<long long>(e.count));
    std::printf("%s loss %.4f  accuracy %.2f%% (%lld/%lld)\n", args.split.c_str(), e.loss, 100.0 * e.accuracy,
                static_cast<long long>(e.correct), static_cast<long long>(e.count));
    print_confusion(e);
    if (!args.predictions.empty()) std::printf("predictions written to %s\n", args.predictions.c_str());
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto args = std::make_shared<EvalArgs>();
    CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: loss, accuracy and confusion matrix");
    cmd->add_option("--checkpoint", args->checkpoint, "A model.safetensors written by normnet train, or its run folder")
        ->required();
    cmd->add_option("--dataset", args->dataset, "mnist or fashion-mnist (default: the checkpoint's)")
        ->check(CLI::IsMember(dataset_names()));
    cmd->add_option("--data", args->data_dir, "Dataset folder");
    cmd->add_option("--split", args->split, "test or train")->check(CLI::IsMember({"test", "train"}))->capture_default_str();
    cmd->add_option("--predictions", args->predictions, "Also write index,label,predicted for every image to this CSV");
    cmd->add_option("--limit", args->limit, "Evaluate only the first N images of the split (0: all)")
        ->check(kNonNegative);
    cmd->add_option("--threads", args->threads, "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use)")
        ->check(kThreadsRange);
    cmd->callback([args] { run_eval(*args); });
}

}  // namespace normnet::cli
