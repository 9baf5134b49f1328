// `normnet eval`: rebuilds the model from a checkpoint's metadata alone, and prints its test
// loss with accuracy and confusion matrix (classification) or RMSE, MAE and R^2 (regression), as
// text or as one JSON object.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "models.hpp"
#include "task.hpp"
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
    bool json = false;
};

// Rows: true class, columns: predicted class, each headed by its class name.
void print_confusion(const Evaluation& e, const std::vector<std::string>& names) {
    const size_t n = e.confusion.size();
    int label = 5, width = 6;  // the row labels' column, and each count's
    for (const std::string& name : names) {
        label = std::max(label, static_cast<int>(name.size()));
        width = std::max(width, static_cast<int>(name.size()) + 1);
    }
    std::printf("confusion matrix (rows: true class, columns: predicted class):\n%*s", label, "");
    for (size_t c = 0; c < n; ++c) std::printf("%*s", width, names[c].c_str());
    std::printf("\n");
    for (size_t r = 0; r < n; ++r) {
        std::printf("%*s", label, names[r].c_str());
        for (size_t c = 0; c < n; ++c) std::printf("%*lld", width, static_cast<long long>(e.confusion[r][c]));
        std::printf("\n");
    }
}

// eval --json: one object of the measures, NaN (no value) as null.
void print_json(const Evaluation& e, const std::vector<std::string>& names) {
    const auto number = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
    nlohmann::ordered_json j;
    j["count"] = e.count;
    j["loss"] = number(e.loss);
    if (!std::isnan(e.rmse)) {
        j["rmse"] = number(e.rmse);
        j["mae"] = number(e.mae);
        j["r2"] = number(e.r2);
    } else {
        j["accuracy"] = number(e.accuracy);
        j["correct"] = e.correct;
        j["classes"] = names;
        j["confusion"] = e.confusion;
    }
    std::printf("%s\n", j.dump().c_str());
}

// An image-folder run's images to measure: --data DIR's (a folder with train/ and test/, or one of
// class folders), else its run's own split, in the checkpoint's classes and image shape.
std::shared_ptr<const Dataset> image_folder_split(const EvalArgs& args, RunConfig config, const ImagesMetadata& images) {
    namespace fs = std::filesystem;
    if (!args.data_dir.empty()) config.data_dir = args.data_dir;
    config.image_size = str(images.height, "x", images.width);
    if (!config.is_image_folder()) {  // a folder of class folders: all of it is measured
        const data::ImageFolder folder = data::read_image_folder(
            config.data_dir, data::ImageFolderOptions{.height = images.height, .width = images.width,
                                                      .channels = static_cast<int>(images.channels), .classes = images.classes});
        auto d = std::make_shared<Dataset>(folder.dataset);
        if (config.limit > 0 && config.limit < d->size()) *d = take(*d, config.limit);
        return d;
    }
    const TaskData d = load_task_data(config);
    NORMNET_CHECK(d.classes == images.classes, "--data ", config.data_dir, ": its classes are not the checkpoint's (",
                  d.classes.size(), " against ", images.classes.size(), ")");
    NORMNET_CHECK(d.train->images.channels == images.channels, "--data ", config.data_dir, ": ", d.train->images.channels,
                  "-channel images, the model takes ", images.channels);
    return args.split == "train" ? d.train : d.test;
}

// A table run's rows to measure: --data's file whole, or the run's own held-out (or training) rows.
struct TableRows {
    data::EncodedTable rows;
    std::string what;  // "wine_test.csv: 45 rows"
};
TableRows table_rows(const EvalArgs& args, const RunConfig& config, const data::TableSchema& schema, const std::string& path) {
    TableRows t;
    if (!args.data_dir.empty()) {
        const data::Table table = data::read_csv(args.data_dir, data::CsvOptions().delimiter(config.delimiter.at(0)));
        t.rows = data::encode_table(schema, table);
        NORMNET_CHECK(t.rows.labels.defined() || t.rows.targets.defined(), "--data ", args.data_dir, ": no column \"",
                      schema.target, "\" (the target); normnet predict gives predictions for rows without it");
        t.what = args.data_dir;
    } else {
        const auto d = load_table(config);
        NORMNET_CHECK(d->schema.to_json() == schema.to_json(), "--checkpoint ", path, ": its run's data (", config.data_dir,
                      ") no longer gives the checkpoint's columns, classes or statistics; name the rows with --data");
        t.rows = args.split == "train" ? d->train : d->test;
        t.what = args.split == "train" ? config.data_dir + " (training rows)"
                 : config.test.empty() ? config.data_dir + " (held-out rows)"
                                       : config.test;
    }
    if (args.limit > 0 && args.limit < t.rows.inputs.size(0)) {
        const auto first = [&](const Tensor& x) { return x.defined() ? x.narrow(0, 0, args.limit) : x; };
        t.rows = {first(t.rows.inputs), first(t.rows.labels), first(t.rows.targets)};
    }
    return t;
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
    config.limit = args.limit;  // the whole split unless --limit says otherwise: the run's is not inherited
    config.threads = args.threads;
    config.threads = config.resolved_threads();
    set_num_threads(config.threads);
    Evaluation e;
    std::string what;                 // the data measured, for the text output
    std::vector<std::string> names;   // class names
    std::vector<int64_t> truth;       // true class of each row, for --predictions
    if (checkpoint.metadata.count(kTableMetadata)) {
        NORMNET_CHECK(args.dataset.empty(), "--dataset: ", path, " was trained on a table; give its rows with --data FILE.csv");
        const data::TableSchema schema = table_schema_of(checkpoint);
        const TableRows t = table_rows(args, config, schema, path);
        e = evaluate_table(*m.model, schema, t.rows, config.loss);
        what = str(t.what, ": ", e.count, " rows");
        names = schema.classes;
        if (t.rows.labels.defined()) truth.assign(t.rows.labels.data_ptr<int64_t>(), t.rows.labels.data_ptr<int64_t>() + e.count);
    } else if (const std::optional<ImagesMetadata> images = images_metadata_of(checkpoint)) {
        NORMNET_CHECK(args.dataset.empty(), "--dataset: ", path, " was trained on an image folder; give one with --data DIR");
        const std::shared_ptr<const Dataset> data = image_folder_split(args, config, *images);
        e = evaluate(*m.model, data, spec.classes);
        what = str(args.data_dir.empty() ? config.data_dir : args.data_dir, " ", args.split, ": ", e.count, " images");
        names = images->classes;
        truth.assign(data->labels.begin(), data->labels.end());
    } else {
        if (!args.dataset.empty()) {
            config.dataset = args.dataset;
            config.data_dir.clear();
        }
        if (!args.data_dir.empty()) config.data_dir = args.data_dir;
        const auto data = load_split(config, args.split);
        e = evaluate(*m.model, data, spec.classes);
        what = str(config.dataset, " ", args.split, ": ", e.count, " images");
        for (int64_t c = 0; c < spec.classes; ++c) names.push_back(std::to_string(c));
        truth.assign(data->labels.begin(), data->labels.end());
    }
    // The predictions file first: if it cannot be written, the error is all that is printed.
    if (!args.predictions.empty()) {
        NORMNET_CHECK(!names.empty() && !std::isnan(e.accuracy), "--predictions: ", path,
                      " is a regression model; normnet predict writes its values");
        std::string csv = "index,label,predicted\n";
        for (size_t i = 0; i < e.predictions.size(); ++i) {
            csv += std::to_string(i) + "," + data::csv_field(names[static_cast<size_t>(truth[i])]) + "," +
                   data::csv_field(names[static_cast<size_t>(e.predictions[i])]) + "\n";
        }
        write_file_atomic(args.predictions, csv);
    }
    if (args.json) return print_json(e, names);
    const auto epoch = checkpoint.metadata.find("normnet.epoch");
    const auto batch = checkpoint.metadata.find("normnet.batch");
    std::printf("checkpoint %s: %s, epoch %s%s\n", path.c_str(), spec.str().c_str(),
                epoch == checkpoint.metadata.end() ? "?" : epoch->second.c_str(),
                batch == checkpoint.metadata.end() ? "" : (" + " + batch->second + " batches").c_str());
    std::printf("%s\n", what.c_str());
    if (!std::isnan(e.rmse)) {
        std::printf("%s loss %.4f  rmse %.4g  mae %.4g  r2 %.4f\n", args.split.c_str(), e.loss, e.rmse, e.mae, e.r2);
    } else {
        std::printf("%s loss %.4f  accuracy %.2f%% (%lld/%lld)\n", args.split.c_str(), e.loss, 100.0 * e.accuracy,
                    static_cast<long long>(e.correct), static_cast<long long>(e.count));
        print_confusion(e, names);
    }
    if (!args.predictions.empty()) std::printf("predictions written to %s\n", args.predictions.c_str());
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto args = std::make_shared<EvalArgs>();
    CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: loss, accuracy and confusion matrix, or a regression's RMSE, MAE and R^2");
    cmd->add_option("--checkpoint", args->checkpoint, "A model.safetensors written by normnet train, or its run folder")
        ->required();
    cmd->add_option("--dataset", args->dataset, "mnist or fashion-mnist (default: the checkpoint's)")
        ->check(CLI::IsMember(dataset_names()));
    cmd->add_option("--data", args->data_dir, "Dataset folder, or for a table's model a CSV file of rows with the target "
                                              "(default: the run's held-out rows)");
    cmd->add_option("--split", args->split, "test or train")->check(CLI::IsMember({"test", "train"}))->capture_default_str();
    cmd->add_option("--predictions", args->predictions, "Also write index,label,predicted for every image or row to this CSV");
    cmd->add_flag("--json", args->json, "Print the measures as one JSON object (count, loss; accuracy, correct, classes, "
                                        "confusion, or rmse, mae, r2)");
    cmd->add_option("--limit", args->limit, "Evaluate only the first N images of the split (0: all)")
        ->check(kNonNegative);
    cmd->add_option("--threads", args->threads, "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use)")
        ->check(kThreadsRange);
    cmd->callback([args] { run_eval(*args); });
}

}  // namespace normnet::cli
