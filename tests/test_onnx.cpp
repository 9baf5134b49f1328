// ONNX export from C++ (normnet/onnx.hpp): every built-in module, in several configurations,
// exported and then checked by python3-onnx's full checker and run in ONNX Runtime on inputs of
// another batch size than the example's, against normnet's own forward; the file's structure
// (names, doc strings, metadata, the dynamic batch); a custom module exporting itself; and the
// errors for what cannot be exported (naming the module and its path, writing nothing).
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>

#include "onnx_helpers.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using namespace normnet::test;
namespace oc = normnet::test::onnx_check;
namespace nnx = normnet::onnx;  // ::onnx is the ONNX project's protobuf messages

namespace {

// Random values everywhere a module has state, so that a weight read as a bias, or running
// statistics left out, shows: parameters in [-0.5, 0.5], running variances in [0.5, 2].
void randomize(Module& m, uint64_t seed) {
    Generator gen(seed);
    NoGradGuard no_grad;
    for (auto& [name, t] : m.named_parameters()) t.uniform_(-0.5f, 0.5f, gen);
    for (auto& [name, t] : m.named_buffers()) {
        if (t.dtype() != kFloat32) continue;
        if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0) t.uniform_(0.5f, 2.0f, gen);
        else t.uniform_(-0.5f, 0.5f, gen);
    }
}

struct ModuleCase {
    std::string name;
    std::function<std::shared_ptr<Module>()> make;
    std::function<Tensor(int64_t batch)> input;
    int64_t opset = nnx::kMaxOpset;
    bool dynamic_batch = true;  // false: dimension 0 is fixed (the LayerNorm LSTM's unrolled steps)
    bool independent_rows = true;  // false: dimension 0 is not a batch of independent samples
};

Tensor normal(std::initializer_list<int64_t> per_sample, int64_t batch, uint64_t seed = 3) {
    Shape s{batch};
    for (int64_t d : per_sample) s.push_back(d);
    Generator gen(seed + static_cast<uint64_t>(batch));
    return randn(s, gen);
}

template <class M, class... Args>
std::function<std::shared_ptr<Module>()> make(Args... args) {
    return [=] { return std::make_shared<M>(args...); };
}

std::vector<ModuleCase> module_cases() {
    using F = std::function<Tensor(int64_t)>;
    const auto rows = [](int64_t features) -> F { return [=](int64_t n) { return normal({features}, n); }; };
    const auto images = [](int64_t c, int64_t h, int64_t w) -> F { return [=](int64_t n) { return normal({c, h, w}, n); }; };
    const auto seqs = [](int64_t t, int64_t f) -> F { return [=](int64_t n) { return normal({t, f}, n); }; };
    const auto tokens = [](int64_t vocab, int64_t t) -> F {
        return [=](int64_t n) {
            Generator gen(7 + static_cast<uint64_t>(n));
            return randint(vocab, {n, t}, gen);
        };
    };
    std::vector<ModuleCase> c{
        {"Linear", make<Linear>(6, 4), rows(6)},
        {"Linear on [N, T, F]", make<Linear>(6, 4), seqs(3, 6)},
        {"Linear without bias", [] { return std::make_shared<Linear>(6, 4, false); }, rows(6)},
        {"Sequential MLP", [] { return std::make_shared<Sequential>(Sequential{Linear(6, 8), ReLU(), LayerNorm({8}), Linear(8, 3)}); }, rows(6)},
        {"Identity", make<Identity>(), rows(5)},
        {"Dropout (eval: nothing)", [] { return std::make_shared<Sequential>(Sequential{Linear(6, 4), Dropout(0.5)}); }, rows(6)},
        {"ReLU", make<ReLU>(), rows(7)},
        {"GELU", make<GELU>(), rows(7)},
        {"GELU tanh", [] { return std::make_shared<GELU>(GELUOptions{"tanh"}); }, rows(7)},
        {"Tanh", make<Tanh>(), rows(7)},
        {"Sigmoid", make<Sigmoid>(), rows(7)},
        {"SiLU", make<SiLU>(), rows(7)},
        {"LeakyReLU", [] { return std::make_shared<LeakyReLU>(LeakyReLUOptions{0.2}); }, rows(7)},
        {"ELU", [] { return std::make_shared<ELU>(ELUOptions{0.5}); }, rows(7)},
        {"Softplus", make<Softplus>(), rows(7)},
        {"Softplus beta 2 threshold 1", [] { return std::make_shared<Softplus>(SoftplusOptions{2.0, 1.0}); }, rows(7)},
        {"Softmax", [] { return std::make_shared<Softmax>(1); }, rows(7)},
        {"LogSoftmax", [] { return std::make_shared<LogSoftmax>(-1); }, seqs(3, 7)},
        {"Flatten", make<Flatten>(), images(2, 3, 4)},
        {"Flatten(2, 3)", [] { return std::make_shared<Flatten>(2, 3); }, images(2, 3, 4)},
        {"Unflatten", [] { return std::make_shared<Unflatten>(1, std::vector<int64_t>{2, -1}); }, rows(6)},
        {"LayerNorm", [] { return std::make_shared<LayerNorm>(std::vector<int64_t>{6}); }, seqs(3, 6)},
        {"LayerNorm opset 16 (primitives)", [] { return std::make_shared<LayerNorm>(std::vector<int64_t>{6}); }, seqs(3, 6), 16},
        {"LayerNorm over 2 dims, no affine",
         [] { return std::make_shared<LayerNorm>(LayerNormOptions{{3, 4}, 1e-3, false}); }, seqs(3, 4)},
        {"LayerNorm without bias", [] { return std::make_shared<LayerNorm>(LayerNormOptions{{6}, 1e-5, true, false}); }, rows(6)},
        {"BatchNorm1d", make<BatchNorm1d>(6), rows(6)},
        {"BatchNorm1d on [N, C, L]", make<BatchNorm1d>(4), seqs(4, 5)},
        {"BatchNorm1d no running stats",
         [] { return std::make_shared<BatchNorm1d>(BatchNorm1dOptions{.num_features = 6, .track_running_stats = false}); }, rows(6),
         nnx::kMaxOpset, true, false},
        {"BatchNorm2d", make<BatchNorm2d>(3), images(3, 4, 5)},
        {"BatchNorm2d no affine", [] { return std::make_shared<BatchNorm2d>(BatchNorm2dOptions{.num_features = 3, .affine = false}); },
         images(3, 4, 5)},
        {"SequenceBatchNorm", make<SequenceBatchNorm>(6), seqs(5, 6)},
        {"InstanceNorm2d affine",
         [] { return std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = 3, .affine = true}); }, images(3, 4, 5)},
        {"InstanceNorm2d", make<InstanceNorm2d>(3), images(3, 4, 5)},
        {"InstanceNorm2d running stats",
         [] { return std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = 3, .track_running_stats = true}); },
         images(3, 4, 5)},
        {"GroupNorm", make<GroupNorm>(2, 4), images(4, 3, 5)},
        {"GroupNorm on [N, C]", make<GroupNorm>(3, 6), rows(6)},
        {"GroupNorm no affine", [] { return std::make_shared<GroupNorm>(2, 4, 1e-3, false); }, images(4, 3, 5)},
        {"RMSNorm", [] { return std::make_shared<RMSNorm>(std::vector<int64_t>{6}); }, seqs(3, 6)},
        {"RMSNorm eps 1e-3, no affine",
         [] { return std::make_shared<RMSNorm>(RMSNormOptions{{3, 6}, 1e-3, false}); }, seqs(3, 6)},
        {"Conv2d", make<Conv2d>(2, 3, 3), images(2, 7, 6)},
        {"Conv2d stride 2 padding 1",
         [] { return std::make_shared<Conv2d>(Conv2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = 3, .stride = 2, .padding = 1}); },
         images(2, 7, 6)},
        {"Conv2d same, even kernel, dilation 2",
         [] { return std::make_shared<Conv2d>(Conv2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = {4, 2}, .padding = "same", .dilation = 2}); },
         images(2, 7, 6)},
        {"Conv2d groups 2, no bias",
         [] { return std::make_shared<Conv2d>(Conv2dOptions{.in_channels = 4, .out_channels = 6, .kernel_size = 3, .groups = 2, .bias = false}); },
         images(4, 5, 5)},
        {"MaxPool2d", make<MaxPool2d>(2), images(2, 6, 7)},
        {"MaxPool2d 3 stride 2 padding 1 ceil",
         [] { return std::make_shared<MaxPool2d>(MaxPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .ceil_mode = true}); },
         images(2, 6, 7)},
        {"MaxPool2d dilation 2",
         [] { return std::make_shared<MaxPool2d>(MaxPool2dOptions{.kernel_size = 2, .stride = 1, .dilation = 2}); }, images(2, 6, 7)},
        {"AvgPool2d", make<AvgPool2d>(2), images(2, 6, 7)},
        {"AvgPool2d padding, count_include_pad false",
         [] { return std::make_shared<AvgPool2d>(AvgPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .count_include_pad = false}); },
         images(2, 6, 7)},
        {"AvgPool2d padding 1",
         [] { return std::make_shared<AvgPool2d>(AvgPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1}); }, images(2, 7, 7)},
        {"AdaptiveAvgPool2d(1)", make<AdaptiveAvgPool2d>(1), images(3, 5, 4)},
        {"AdaptiveAvgPool2d(2, 3)", [] { return std::make_shared<AdaptiveAvgPool2d>(Size2{2, 3}); }, images(3, 4, 6)},
        {"Embedding", make<Embedding>(10, 4), tokens(10, 3)},
        {"MultiheadAttention batch_first",
         [] { return std::make_shared<MultiheadAttention>(MultiheadAttentionOptions{.embed_dim = 8, .num_heads = 2, .batch_first = true}); },
         seqs(5, 8)},
        {"MultiheadAttention [L, N, E] (dim 0 free)", make<MultiheadAttention>(8, 2), seqs(3, 8), nnx::kMaxOpset, true, false},
        {"TransformerEncoderLayer post-LN ReLU", [] { return std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions{
                                                       .d_model = 8, .nhead = 2, .dim_feedforward = 16, .batch_first = true}); },
         seqs(5, 8)},
        {"TransformerEncoderLayer pre-LN GELU RMSNorm [S, N, E]",
         [] {
             return std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions{
                 .d_model = 8, .nhead = 4, .dim_feedforward = 12, .activation = "gelu", .norm_first = true, .norm = "rms"});
         },
         seqs(3, 8), nnx::kMaxOpset, true, false},
        {"TransformerEncoder BatchNorm, final norm",
         [] {
             return std::make_shared<TransformerEncoder>(TransformerEncoderOptions{
                 {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .batch_first = true, .norm_first = true, .norm = "batch"}, 2, true});
         },
         seqs(5, 8)},
        {"LSTM 2 layers batch_first",
         [] { return std::make_shared<LSTM>(LSTMOptions{.input_size = 5, .hidden_size = 7, .num_layers = 2, .batch_first = true}); },
         seqs(6, 5)},
        {"LSTM [T, N, I] without bias",
         [] { return std::make_shared<LSTM>(LSTMOptions{.input_size = 5, .hidden_size = 4, .bias = false}); }, seqs(3, 5),
         nnx::kMaxOpset, true, false},
        {"GRU 2 layers batch_first",
         [] { return std::make_shared<GRU>(GRUOptions{.input_size = 5, .hidden_size = 7, .num_layers = 2, .batch_first = true}); },
         seqs(6, 5)},
        {"LayerNormLSTM 2 layers batch_first",
         [] {
             return std::make_shared<LayerNormLSTM>(
                 LayerNormLSTMOptions{.input_size = 5, .hidden_size = 7, .num_layers = 2, .batch_first = true});
         },
         seqs(6, 5)},
        {"LayerNormLSTM [T, N, I] without bias",
         [] { return std::make_shared<LayerNormLSTM>(LayerNormLSTMOptions{.input_size = 5, .hidden_size = 4, .bias = false}); },
         seqs(3, 5), nnx::kMaxOpset, false, false},
        {"VisionTransformer pre-LN RMSNorm",
         [] {
             return std::make_shared<models::VisionTransformer>(models::VisionTransformerOptions{
                 .image_size = 8, .patch_size = 4, .in_channels = 2, .num_classes = 3, .d_model = 8, .num_layers = 2,
                 .num_heads = 2, .dim_feedforward = 16, .norm = "rms"});
         },
         images(2, 8, 8)},
        {"VisionTransformer post-LN BatchNorm on rows",
         [] {
             return std::make_shared<models::VisionTransformer>(models::VisionTransformerOptions{
                 .image_size = 8, .patch_size = 2, .in_channels = 1, .num_classes = 4, .d_model = 8, .num_layers = 1,
                 .num_heads = 2, .dim_feedforward = 16, .norm = "batch", .norm_first = false});
         },
         rows(64)},
        {"VisionTransformer opset 13",
         [] {
             return std::make_shared<models::VisionTransformer>(models::VisionTransformerOptions{
                 .image_size = 8, .patch_size = 4, .in_channels = 1, .num_classes = 3, .d_model = 8, .num_layers = 1,
                 .num_heads = 2, .dim_feedforward = 16});
         },
         images(1, 8, 8), 13},
        {"RowLSTM LayerNorm",
         [] { return std::make_shared<models::RowLSTM>(models::RowLSTMOptions{.rows = 6, .row_size = 5, .hidden_size = 7, .num_classes = 3}); },
         seqs(6, 5)},
        {"RowLSTM plain on rows",
         [] {
             return std::make_shared<models::RowLSTM>(
                 models::RowLSTMOptions{.rows = 6, .row_size = 5, .hidden_size = 7, .num_layers = 2, .num_classes = 3, .norm = "none"});
         },
         rows(30)},
        {"CharTransformer pre-LN",
         [] {
             return std::make_shared<models::CharTransformer>(models::CharTransformerOptions{
                 .vocab_size = 11, .context = 8, .d_model = 8, .n_layers = 2, .n_heads = 2});
         },
         tokens(11, 8)},
        {"CharTransformer post-LN RMSNorm, shorter than the context",
         [] {
             return std::make_shared<models::CharTransformer>(models::CharTransformerOptions{
                 .vocab_size = 11, .context = 8, .d_model = 8, .n_layers = 1, .n_heads = 2, .norm = "rms", .norm_first = false});
         },
         tokens(11, 5)},
    };
    return c;
}

Tensor forward_eval(Module& m, const Tensor& x) {
    NoGradGuard no_grad;
    m.eval();
    return m.forward(x);
}

// A module the exporter cannot know: forward doubles, no to_onnx.
class Doubler : public Module {
public:
    Tensor forward(const Tensor& x) override { return x * 2.0f; }
    std::string type_name() const override { return "Doubler"; }
};

// The custom layer of docs/extending.md, with its ONNX form: y = x + fc(relu(norm(x))).
class ResidualBlock : public Module {
public:
    explicit ResidualBlock(int64_t features)
        : norm(register_module("norm", LayerNorm(LayerNormOptions{.normalized_shape = {features}, .eps = 1e-5}))),
          fc(register_module("fc", Linear(features, features))) {}
    Tensor forward(const Tensor& x) override { return x + (*fc)(relu((*norm)(x))); }
    nnx::Value to_onnx(nnx::GraphBuilder& g, const nnx::Value& x) const override {
        return g.add(x, g.call(*fc, g.relu(g.call(*norm, x))));
    }

    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<Linear> fc;
};

::onnx::ModelProto parse(const std::string& bytes) {
    ::onnx::ModelProto model;
    REQUIRE(model.ParseFromString(bytes));
    return model;
}

std::string dims(const ::onnx::ValueInfoProto& v) {
    std::string s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
        s += (s.empty() ? "" : ",") + (d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
    }
    return s;
}

}  // namespace

TEST_CASE("onnx: every built-in module passes the ONNX checker and runs in ONNX Runtime as in normnet", "[onnx][runtime]") {
    const std::string no_checker = oc::checker_missing(), no_runtime = oc::onnxruntime_missing();
    if (!no_checker.empty() && !no_runtime.empty()) NORMNET_SKIP(no_checker << "; " << no_runtime);
    ScratchDir dir("normnet_onnx_modules_");
    const std::vector<ModuleCase> cases = module_cases();
    std::vector<std::string> files;
    std::vector<oc::Job> jobs;
    std::vector<Tensor> expected;
    for (size_t i = 0; i < cases.size(); ++i) {
        const ModuleCase& c = cases[i];
        INFO(c.name);
        const auto m = c.make();
        randomize(*m, i);
        const std::string file = dir / ("m" + std::to_string(i) + ".onnx");
        nnx::ExportOptions options;
        options.opset = c.opset;
        options.dynamic_batch = c.dynamic_batch;
        nnx::export_model(*m, c.input(c.dynamic_batch ? 2 : 5), file, options);
        // Another batch size than the example's: the file holds none.
        const Tensor x = c.input(5);
        expected.push_back(forward_eval(*m, x));
        const std::string input = file + ".in";
        oc::write_raw(input, x);
        files.push_back(file);
        // Batches of 3 and 2 where the rows are independent samples, else all 5 at once.
        jobs.push_back({file, input, x.dtype(), x.shape(), c.independent_rows ? 3 : 5, expected.back().shape()});
    }
    if (no_checker.empty()) oc::check_with_onnx(files);
    if (!no_runtime.empty()) NORMNET_SKIP(no_runtime);
    const auto results = oc::run_models(oc::Runtime::onnxruntime, jobs, dir / "jobs.json");
    for (size_t i = 0; i < cases.size(); ++i) {
        INFO(cases[i].name << ": " << results[i].error);
        REQUIRE(results[i].ok);
        const oc::Agreement a = oc::compare(results[i].output, expected[i], 1e-4);
        INFO("largest |a - e| / (1 + |e|): " << a.max_rel);
        CHECK(a.max_rel <= 1e-4);
    }
    if (!no_checker.empty()) NORMNET_SKIP(no_checker);
}

TEST_CASE("onnx: the file names the graph's input and output, its stored tensors by their state_dict keys", "[onnx]") {
    Sequential net{Linear(6, 8), ReLU(), BatchNorm1d(8), Linear(8, 3)};
    nnx::ExportOptions options;
    options.input_name = "features";
    options.output_name = "scores";
    options.input_doc = "six features";
    options.output_doc = "three scores";
    options.doc = "a test model";
    options.metadata = {{"classes", "[\"a\", \"b\", \"c\"]"}};
    nnx::ExportInfo info;
    const auto model = parse(nnx::export_to_string(net, zeros({1, 6}), options, &info));
    CHECK(model.opset_import(0).version() == nnx::kMaxOpset);
    CHECK(model.producer_name() == "normnet");
    CHECK(model.doc_string() == "a test model");
    REQUIRE(model.metadata_props_size() == 1);
    CHECK(model.metadata_props(0).key() == "classes");
    const auto& g = model.graph();
    REQUIRE(g.input_size() == 1);
    CHECK(g.input(0).name() == "features");
    CHECK(g.input(0).doc_string() == "six features");
    CHECK(dims(g.input(0)) == "N,6");
    REQUIRE(g.output_size() == 1);
    CHECK(g.output(0).name() == "scores");
    CHECK(g.output(0).doc_string() == "three scores");
    CHECK(dims(g.output(0)) == "N,3");
    std::set<std::string> stored;
    for (const auto& t : g.initializer()) stored.insert(t.name());
    for (const auto& [key, t] : net.state_dict()) {
        if (key.find("num_batches_tracked") != std::string::npos) continue;  // not used in eval
        CHECK(stored.count(key) == 1);
    }
    CHECK(info.op_types == std::vector<std::string>{"BatchNormalization", "Gemm", "Relu"});
    CHECK(info.nodes == 4);
    CHECK(info.input_shape == nnx::Ints{nnx::kBatch, 6});
    CHECK(info.output_shape == nnx::Ints{nnx::kBatch, 3});
    CHECK(info.bytes > (6 * 8 + 8 * 3) * 4);
}

TEST_CASE("onnx: LayerNorm is LayerNormalization from opset 17, its primitives below, and RMSNorm is primitives", "[onnx]") {
    LayerNorm ln(std::vector<int64_t>{6});
    nnx::ExportInfo info;
    nnx::export_to_string(ln, zeros({1, 6}), {}, &info);
    CHECK(info.op_types == std::vector<std::string>{"LayerNormalization"});
    nnx::ExportOptions options;
    options.opset = 16;
    nnx::export_to_string(ln, zeros({1, 6}), options, &info);
    CHECK(info.op_types == std::vector<std::string>{"Add", "Div", "Mul", "ReduceMean", "Sqrt", "Sub"});
    RMSNorm rms(std::vector<int64_t>{6});
    nnx::export_to_string(rms, zeros({1, 6}), {}, &info);
    CHECK(info.op_types == std::vector<std::string>{"Add", "Div", "Mul", "ReduceMean", "Sqrt"});
}

TEST_CASE("onnx: a fixed batch, the input reshaped from another shape, standardised inputs", "[onnx][runtime]") {
    const std::string no_runtime = oc::onnxruntime_missing();
    Sequential net{Unflatten(1, {1, 4, 4}), Conv2d(1, 2, 3), Flatten(), Linear(8, 3)};
    randomize(net, 1);
    ScratchDir dir("normnet_onnx_options_");
    nnx::ExportOptions options;
    options.input_shape = {4, 4};  // the graph takes [N, 4, 4], the model rows of 16
    options.input_mean = full({16}, 0.5);
    options.input_std = full({16}, 2.0);
    nnx::ExportInfo info;
    info = nnx::export_model(net, zeros({2, 16}), dir / "a.onnx", options);
    CHECK(info.input_shape == nnx::Ints{nnx::kBatch, 4, 4});
    CHECK(info.output_shape == nnx::Ints{nnx::kBatch, 3});
    options.dynamic_batch = false;
    info = nnx::export_model(net, zeros({2, 16}), dir / "b.onnx", options);
    CHECK(info.input_shape == nnx::Ints{2, 4, 4});
    CHECK(info.output_shape == nnx::Ints{2, 3});
    if (oc::checker_missing().empty()) oc::check_with_onnx({dir / "a.onnx", dir / "b.onnx"});
    if (!no_runtime.empty()) NORMNET_SKIP(no_runtime);
    const Tensor x = normal({4, 4}, 2);
    const Tensor expected = forward_eval(net, ((x.reshape({2, 16}) - 0.5f) / 2.0f));
    oc::write_raw(dir / "x", x);
    for (const char* file : {"a.onnx", "b.onnx"}) {
        const auto r = oc::run_model(oc::Runtime::onnxruntime, {dir / file, dir / "x", kFloat32, x.shape(), 2, expected.shape()});
        INFO(file << ": " << r.error);
        REQUIRE(r.ok);
        CHECK(oc::compare(r.output, expected, 1e-4).max_rel <= 1e-4);
    }
    // The fixed batch is fixed: ONNX Runtime refuses another.
    const auto r = oc::run_model(oc::Runtime::onnxruntime, {dir / "b.onnx", dir / "x", kFloat32, x.shape(), 1, Shape{2, 3}});
    CHECK_FALSE(r.ok);
}

TEST_CASE("onnx: a custom module exports itself through to_onnx (the residual block of docs/extending.md)", "[onnx][runtime]") {
    Sequential net{Linear(6, 8), ResidualBlock(8), ResidualBlock(8), Linear(8, 3)};
    randomize(net, 2);
    ScratchDir dir("normnet_onnx_custom_");
    const std::string file = dir / "residual.onnx";
    nnx::ExportInfo info = nnx::export_model(net, zeros({1, 6}), file, {});
    CHECK(info.op_types == std::vector<std::string>{"Add", "Gemm", "LayerNormalization", "Relu"});
    // Its tensors under its children's paths, as in the state_dict.
    const std::string bytes = nnx::export_to_string(net, zeros({1, 6}));
    const ::onnx::ModelProto proto = parse(bytes);
    std::set<std::string> stored;
    for (const auto& t : proto.graph().initializer()) stored.insert(t.name());
    CHECK(stored.count("1.norm.weight") == 1);
    CHECK(stored.count("2.fc.bias") == 1);
    if (oc::checker_missing().empty()) oc::check_with_onnx({file});
    const std::string no_runtime = oc::onnxruntime_missing();
    if (!no_runtime.empty()) NORMNET_SKIP(no_runtime);
    const Tensor x = normal({6}, 4);
    oc::write_raw(dir / "x", x);
    const Tensor expected = forward_eval(net, x);
    const auto r = oc::run_model(oc::Runtime::onnxruntime, {file, dir / "x", kFloat32, x.shape(), 4, expected.shape()});
    INFO(r.error);
    REQUIRE(r.ok);
    CHECK(oc::compare(r.output, expected, 1e-4).max_rel <= 1e-4);
}

TEST_CASE("onnx: what cannot be exported is named with its path, and no file is written", "[onnx]") {
    ScratchDir dir("normnet_onnx_errors_");
    const std::string file = dir / "model.onnx";
    const auto refused = [&](Module& m, const Tensor& x, const std::string& message, nnx::ExportOptions options = {}) {
        try {
            nnx::export_model(m, x, file, options);
            FAIL("exported: " << message);
        } catch (const Error& e) {
            INFO(e.what());
            CHECK_THAT(e.what(), Catch::Contains(message));
        }
        CHECK_FALSE(std::filesystem::exists(file));
        CHECK(std::filesystem::is_empty(dir.path));  // no temporary left either
    };
    Sequential with_custom{Linear(4, 4), Doubler(), Linear(4, 2)};
    refused(with_custom, zeros({1, 4}), "ONNX export: cannot export Doubler at '1': it has no ONNX form");
    Sequential with_function{Linear(4, 4), Functional(relu)};
    refused(with_function, zeros({1, 4}), "cannot export Functional at '1'");
    Sequential pool{Unflatten(1, {1, 2, 2}), Sequential{AdaptiveAvgPool2d(Size2{3, 3})}};
    refused(pool, zeros({1, 4}), "cannot export AdaptiveAvgPool2d at '1.0': windows of unequal sizes");
    AvgPool2d divisor(AvgPool2dOptions{.kernel_size = 2, .divisor_override = 3});
    refused(divisor, zeros({1, 1, 4, 4}), "cannot export AvgPool2d (the model itself): divisor_override");
    Doubler alone;
    refused(alone, zeros({1, 4}), "cannot export Doubler (the model itself)");
    Linear linear(4, 2);
    nnx::ExportOptions old;
    old.opset = 12;
    refused(linear, zeros({1, 4}), "opset 12 is not written (opsets 13 to 17)", old);
    refused(linear, zeros({0, 4}), "the example input must have a batch dimension of at least one sample");
    refused(linear, zeros({1, 5}), "linear: input of shape [1, 5]");  // forward's own: the example does not fit
    LayerNormLSTM time_major(LayerNormLSTMOptions{.input_size = 3, .hidden_size = 2});
    refused(time_major, zeros({4, 1, 3}), "LayerNormLSTM (the model itself): its steps are unrolled");
    nnx::ExportOptions reshaped;
    reshaped.input_shape = {3, 2};
    refused(linear, zeros({1, 4}), "input_shape [3, 2] does not hold one sample", reshaped);
    nnx::ExportOptions same_names;
    same_names.output_name = "input";
    refused(linear, zeros({1, 4}), "two different, non-empty names", same_names);
    // A folder that does not exist: write_file_atomic's error names the file.
    CHECK_THROWS_WITH(nnx::export_model(linear, zeros({1, 4}), dir / "missing/model.onnx"), Catch::Contains("missing/model.onnx"));
}

TEST_CASE("onnx: export leaves the module's modes and state as they were", "[onnx]") {
    Sequential net{Linear(4, 4), BatchNorm1d(4), Dropout(0.5), Linear(4, 2)};
    net[1]->eval();  // a mixed tree: the BatchNorm in eval mode, the rest training
    const NamedTensors before = net.state_dict();
    std::vector<Tensor> copies;
    for (const auto& [name, t] : before) copies.push_back(t.clone());
    nnx::export_to_string(net, randn({3, 4}));
    CHECK(net.is_training());
    CHECK_FALSE(net[1]->is_training());
    CHECK(net[2]->is_training());
    const NamedTensors after = net.state_dict();
    for (size_t i = 0; i < after.size(); ++i) CHECK(bit_equal(after[i].second, copies[i]));
}

namespace {

// One row of docs/onnx.md's operator table: a module in one configuration.
struct OpsRow {
    std::string module, configuration;
    ModuleCase example;
};

std::vector<OpsRow> ops_rows() {
    const auto rows = [](int64_t f) { return [=](int64_t n) { return normal({f}, n); }; };
    const auto seqs = [](int64_t t, int64_t f) { return [=](int64_t n) { return normal({t, f}, n); }; };
    const auto images = [](int64_t c, int64_t h, int64_t w) { return [=](int64_t n) { return normal({c, h, w}, n); }; };
    const auto tokens = [](int64_t n) { return zeros({n, 4}, kInt64); };
    const auto layer = [](const std::string& norm, bool pre) {
        return [=] {
            return std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions{
                .d_model = 8, .nhead = 2, .dim_feedforward = 16, .activation = "gelu", .batch_first = true, .norm_first = pre, .norm = norm});
        };
    };
    return {
        {"Sequential", "", {"", [] { return std::make_shared<Sequential>(Sequential{Linear(4, 4), ReLU()}); }, rows(4)}},
        {"Linear", "on [N, F]", {"", make<Linear>(4, 3), rows(4)}},
        {"Linear", "on [N, T, F]", {"", make<Linear>(4, 3), seqs(2, 4)}},
        {"Identity, Dropout", "alone (in a model: no node)", {"", make<Identity>(), rows(4)}},
        {"Flatten", "from dimension 1", {"", make<Flatten>(), images(2, 3, 3)}},
        {"Flatten", "other dimensions", {"", [] { return std::make_shared<Flatten>(2, 3); }, images(2, 3, 3)}},
        {"Unflatten", "", {"", [] { return std::make_shared<Unflatten>(1, std::vector<int64_t>{2, 2}); }, rows(4)}},
        {"ReLU", "", {"", make<ReLU>(), rows(4)}},
        {"GELU", "exact", {"", make<GELU>(), rows(4)}},
        {"GELU", "tanh", {"", [] { return std::make_shared<GELU>(GELUOptions{"tanh"}); }, rows(4)}},
        {"Tanh", "", {"", make<Tanh>(), rows(4)}},
        {"Sigmoid", "", {"", make<Sigmoid>(), rows(4)}},
        {"SiLU", "", {"", make<SiLU>(), rows(4)}},
        {"LeakyReLU", "", {"", make<LeakyReLU>(), rows(4)}},
        {"ELU", "", {"", make<ELU>(), rows(4)}},
        {"Softplus", "beta 1, threshold >= 20", {"", make<Softplus>(), rows(4)}},
        {"Softplus", "other beta or threshold", {"", [] { return std::make_shared<Softplus>(SoftplusOptions{2.0, 10.0}); }, rows(4)}},
        {"Softmax", "", {"", [] { return std::make_shared<Softmax>(1); }, rows(4)}},
        {"LogSoftmax", "", {"", [] { return std::make_shared<LogSoftmax>(1); }, rows(4)}},
        {"LayerNorm", "opset 17", {"", [] { return std::make_shared<LayerNorm>(std::vector<int64_t>{4}); }, rows(4)}},
        {"LayerNorm", "opsets 13-16", {"", [] { return std::make_shared<LayerNorm>(std::vector<int64_t>{4}); }, rows(4), 16}},
        {"RMSNorm", "", {"", [] { return std::make_shared<RMSNorm>(std::vector<int64_t>{4}); }, rows(4)}},
        {"BatchNorm1d, BatchNorm2d", "running statistics", {"", make<BatchNorm2d>(2), images(2, 3, 3)}},
        {"BatchNorm1d, BatchNorm2d", "no running statistics (the batch's own)",
         {"", [] { return std::make_shared<BatchNorm1d>(BatchNorm1dOptions{.num_features = 4, .track_running_stats = false}); }, rows(4)}},
        {"SequenceBatchNorm", "on [N, T, C]", {"", make<SequenceBatchNorm>(4), seqs(2, 4)}},
        {"InstanceNorm2d", "", {"", [] { return std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = 2, .affine = true}); },
                                images(2, 3, 3)}},
        {"InstanceNorm2d", "running statistics",
         {"", [] { return std::make_shared<InstanceNorm2d>(InstanceNorm2dOptions{.num_features = 2, .track_running_stats = true}); },
          images(2, 3, 3)}},
        {"GroupNorm", "", {"", make<GroupNorm>(2, 4), images(4, 3, 3)}},
        {"Conv2d", "", {"", make<Conv2d>(2, 3, 3), images(2, 5, 5)}},
        {"MaxPool2d", "", {"", make<MaxPool2d>(2), images(2, 4, 4)}},
        {"AvgPool2d", "", {"", make<AvgPool2d>(2), images(2, 4, 4)}},
        {"AdaptiveAvgPool2d", "output 1x1", {"", make<AdaptiveAvgPool2d>(1), images(2, 4, 4)}},
        {"AdaptiveAvgPool2d", "equal windows", {"", make<AdaptiveAvgPool2d>(2), images(2, 4, 4)}},
        {"Embedding", "", {"", make<Embedding>(5, 3), tokens}},
        {"MultiheadAttention", "self-attention",
         {"", [] { return std::make_shared<MultiheadAttention>(MultiheadAttentionOptions{.embed_dim = 8, .num_heads = 2, .batch_first = true}); },
          seqs(3, 8)}},
        {"TransformerEncoderLayer", "pre-LN, GELU, LayerNorm", {"", layer("layer", true), seqs(3, 8)}},
        {"TransformerEncoderLayer", "post-LN, GELU, BatchNorm", {"", layer("batch", false), seqs(3, 8)}},
        {"LSTM", "", {"", [] { return std::make_shared<LSTM>(LSTMOptions{.input_size = 3, .hidden_size = 4, .batch_first = true}); }, seqs(2, 3)}},
        {"GRU", "", {"", [] { return std::make_shared<GRU>(GRUOptions{.input_size = 3, .hidden_size = 4, .batch_first = true}); }, seqs(2, 3)}},
        {"LayerNormLSTM", "unrolled over its steps",
         {"", [] { return std::make_shared<LayerNormLSTM>(LayerNormLSTMOptions{.input_size = 3, .hidden_size = 4, .batch_first = true}); },
          seqs(2, 3)}},
        {"models::VisionTransformer", "LayerNorm",
         {"", [] {
              return std::make_shared<models::VisionTransformer>(models::VisionTransformerOptions{
                  .image_size = 4, .patch_size = 2, .num_classes = 3, .d_model = 8, .num_layers = 1, .num_heads = 2, .dim_feedforward = 8});
          },
          images(1, 4, 4)}},
        {"models::RowLSTM", "LayerNorm LSTM",
         {"", [] { return std::make_shared<models::RowLSTM>(models::RowLSTMOptions{.rows = 2, .row_size = 3, .hidden_size = 4}); }, seqs(2, 3)}},
        {"models::CharTransformer", "LayerNorm",
         {"", [] {
              return std::make_shared<models::CharTransformer>(
                  models::CharTransformerOptions{.vocab_size = 5, .context = 4, .d_model = 8, .n_layers = 1, .n_heads = 2});
          },
          tokens}},
    };
}

std::string ops_table() {
    std::string table = "| Module | Case | ONNX operators |\n|---|---|---|\n";
    for (const OpsRow& r : ops_rows()) {
        const auto m = r.example.make();
        nnx::ExportOptions options;
        options.opset = r.example.opset;
        nnx::ExportInfo info;
        nnx::export_to_string(*m, r.example.input(2), options, &info);
        std::string ops;
        for (const auto& op : info.op_types) ops += (ops.empty() ? "" : ", ") + op;
        table += "| " + r.module + " | " + r.configuration + " | " + (ops.empty() ? "(none: its input)" : ops) + " |\n";
    }
    return table;
}

}  // namespace

// The table in docs/onnx.md is this program's output: regenerate it with NORMNET_UPDATE_DOCS=1.
TEST_CASE("onnx: docs/onnx.md's operator table is what the exporter writes", "[onnx][docs]") {
    const std::string path = std::string(NORMNET_SOURCE_DIR) + "/docs/onnx.md";
    const std::string begin = "<!-- onnx-ops-table: made by tests/test_onnx.cpp -->\n", end = "<!-- /onnx-ops-table -->";
    std::ifstream in(path);
    REQUIRE(in.good());
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const size_t from = text.find(begin), to = text.find(end);
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    const std::string table = ops_table();
    if (std::getenv("NORMNET_UPDATE_DOCS") != nullptr) {
        text.replace(from + begin.size(), to - from - begin.size(), table);
        std::ofstream(path) << text;
    }
    INFO("the table as the exporter writes it (NORMNET_UPDATE_DOCS=1 writes it into " << path << "):\n" << table);
    CHECK(text.substr(from + begin.size(), to - from - begin.size()) == table);
}
