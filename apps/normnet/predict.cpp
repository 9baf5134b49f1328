// `normnet predict`: a trained model applied to new inputs, with the preprocessing its checkpoint
// keeps: the rows of a CSV file (a table run's schema: columns by name, the target column may be
// there or not) or image files (resized to the model's image shape: an image folder's, or MNIST's
// 28 x 28 grey). It
// writes one CSV row per input: its row number or file name, the prediction (the class name, or
// the regression's value), and a probability column per class.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "models.hpp"
#include "task.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

struct PredictArgs {
    std::string checkpoint;
    std::string input;
    std::string out;
    int threads = 0;
};

// What the model said of each input, before it is written.
struct Predictions {
    std::string key;                 // the first column: "row" (0-based, of the data rows) or "file"
    std::vector<std::string> names;  // each input's row number or file name
    Tensor outputs;                  // class probabilities [n, classes], or values [n, 1]
};

Predictions predict_rows(const ModelFile& m, const std::string& input) {
    const data::TableSchema schema = table_schema_of(m.file);
    const data::Table table = data::read_csv(input, data::CsvOptions().delimiter(m.config.delimiter.at(0)));
    const data::EncodedTable rows = data::encode_table(schema, table);
    Predictions p;
    p.key = "row";
    for (int64_t r = 0; r < table.rows; ++r) p.names.push_back(std::to_string(r));
    p.outputs = predict_table(*m.model, schema, rows.inputs);
    return p;
}

bool is_image_file(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

Predictions predict_images(const ModelFile& m, const std::string& input) {
    // An image-folder run's shape, or MNIST's layout: 1 x 28 x 28; pixels scaled to [0, 1].
    const ImagesMetadata shape = images_metadata_of(m.file).value_or(ImagesMetadata{});
    NORMNET_CHECK(m.spec.inputs == shape.channels * shape.height * shape.width, "--checkpoint ", m.file.path, ": a model of ",
                  m.spec.inputs, " inputs, not of ", shape.channels, " x ", shape.height, " x ", shape.width, " images");
    std::vector<std::string> files;
    Predictions p;
    p.key = "file";
    if (fs::is_directory(input)) {
        for (const auto& entry : fs::recursive_directory_iterator(input)) {
            if (entry.is_regular_file() && is_image_file(entry.path())) files.push_back(entry.path().string());
        }
        std::sort(files.begin(), files.end());
        NORMNET_CHECK(!files.empty(), "--input ", input, ": no .png or .jpg files in the folder");
        for (const std::string& f : files) p.names.push_back(fs::relative(f, input).string());
    } else {
        files.push_back(input);
        p.names.push_back(input);
    }
    const ImageSet images = data::read_images(files, static_cast<int>(shape.channels), shape.height, shape.width);
    Tensor x = zeros({images.count, m.spec.inputs});
    for (size_t i = 0; i < images.pixels.size(); ++i) x.data()[i] = static_cast<float>(images.pixels[i]) / 255.0f;
    NoGradGuard no_grad;
    m.model->eval();
    p.outputs = softmax(m.model->forward(x), 1).contiguous();
    return p;
}

std::string predictions_csv(const Predictions& p, const std::vector<std::string>& classes) {
    std::string csv = p.key + ",prediction";
    for (const std::string& c : classes) csv += "," + data::csv_field("p_" + c);
    csv += "\n";
    const int64_t C = p.outputs.size(1);
    for (size_t i = 0; i < p.names.size(); ++i) {
        const float* row = p.outputs.data() + static_cast<int64_t>(i) * C;
        csv += data::csv_field(p.names[i]) + ",";
        char cell[32];
        if (classes.empty()) {  // a regression's value
            std::snprintf(cell, sizeof cell, "%.7g", row[0]);
            csv += cell;
        } else {
            csv += data::csv_field(classes[static_cast<size_t>(std::max_element(row, row + C) - row)]);
            for (int64_t c = 0; c < C; ++c) {
                std::snprintf(cell, sizeof cell, ",%.6f", row[c]);
                csv += cell;
            }
        }
        csv += "\n";
    }
    return csv;
}

void run_predict(const PredictArgs& args) {
    const std::string path = model_file_of(args.checkpoint);
    const ModelFile m = load_model_file(path);
    NORMNET_CHECK(m.spec.kind().task == kClassification, "--checkpoint ", path,
                  ": a language model's checkpoint (normnet lm sample generates text from it)");
    NORMNET_CHECK(fs::exists(args.input), "--input ", args.input, ": no such file or folder");
    RunConfig threads;
    threads.threads = args.threads;
    set_num_threads(threads.resolved_threads());
    const bool table = m.file.metadata.count(kTableMetadata) > 0;
    std::vector<std::string> classes;
    if (table) {
        classes = table_schema_of(m.file).classes;  // empty for a regression
    } else if (const auto images = images_metadata_of(m.file)) {
        classes = images->classes;
    } else {
        for (int64_t c = 0; c < m.spec.classes; ++c) classes.push_back(std::to_string(c));
    }
    NORMNET_CHECK(table || fs::is_directory(args.input) || is_image_file(args.input), "--input ", args.input, ": ", path,
                  " is an image model; give a .png or .jpg file or a folder of them");
    const Predictions p = table ? predict_rows(m, args.input) : predict_images(m, args.input);
    const std::string csv = predictions_csv(p, classes);
    if (args.out.empty()) {
        std::fwrite(csv.data(), 1, csv.size(), stdout);
        return;
    }
    write_file_atomic(args.out, csv);
    std::printf("%zu predictions written to %s\n", p.names.size(), args.out.c_str());
}

}  // namespace

void add_predict_command(CLI::App& app) {
    auto args = std::make_shared<PredictArgs>();
    CLI::App* cmd = app.add_subcommand("predict", "Predict with a trained model: the rows of a CSV file (a table's model) "
                                                  "or images (an image model), as CSV");
    cmd->add_option("--checkpoint", args->checkpoint, "A model.safetensors written by normnet train, or its run folder")
        ->required();
    cmd->add_option("--input", args->input, "A CSV file of rows (the target column may be absent), or a .png/.jpg image "
                                            "or a folder of them")
        ->required();
    cmd->add_option("--out", args->out, "Write the predictions to this CSV file (default: print them)");
    cmd->add_option("--threads", args->threads, "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use)")
        ->check(kThreadsRange);
    cmd->callback([args] { run_predict(*args); });
}

}  // namespace normnet::cli
