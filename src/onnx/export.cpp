// export_model: checks the options and the example, runs the module once in eval mode (for the
// output's shape, and to prove the example fits), walks the module tree through to_onnx, checks
// that the graph's output has the shape forward gave, and writes the file atomically. Also the
// default Module::to_onnx (an error naming the module) and Sequential's.
#include <algorithm>
#include <set>

#include "graph.hpp"
#include "normnet/autograd.hpp"
#include "normnet/checkpoint.hpp"
#include "normnet/nn/container.hpp"
#include "serialize.hpp"

namespace normnet {

onnx::Value Module::to_onnx(onnx::GraphBuilder& graph, const onnx::Value&) const {
    graph.fail("it has no ONNX form; a custom module exports itself by overriding Module::to_onnx (docs/onnx.md)");
}

onnx::Value Sequential::to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const {
    onnx::Value y = x;
    for (const auto& m : *this) y = graph.call(*m, y);
    return y;
}

namespace onnx {
namespace {

// Puts a module tree in eval mode and gives every module back its own mode afterwards (parents
// are listed before their children, so setting them in order restores mixed modes too).
class EvalModeGuard {
public:
    explicit EvalModeGuard(Module& module) {
        for (const auto& [name, m] : module.named_modules()) modes_.emplace_back(m.get(), m->is_training());
        module.eval();
    }
    ~EvalModeGuard() {
        for (const auto& [m, training] : modes_) m->train(training);
    }
    EvalModeGuard(const EvalModeGuard&) = delete;
    EvalModeGuard& operator=(const EvalModeGuard&) = delete;

private:
    std::vector<std::pair<Module*, bool>> modes_;
};

void check_options(const ExportOptions& o, const Tensor& example) {
    NORMNET_CHECK(o.opset >= kMinOpset && o.opset <= kMaxOpset, "ONNX export: opset ", o.opset, " is not written (opsets ",
                  kMinOpset, " to ", kMaxOpset, ")");
    NORMNET_CHECK(!o.input_name.empty() && !o.output_name.empty() && o.input_name != o.output_name,
                  "ONNX export: the input and output need two different, non-empty names (got '", o.input_name, "' and '",
                  o.output_name, "')");
    NORMNET_CHECK(example.defined() && example.dim() >= 1 && example.size(0) >= 1,
                  "ONNX export: the example input must have a batch dimension of at least one sample, got ",
                  example.defined() ? example.shape().str() : std::string("an undefined tensor"));
    NORMNET_CHECK(example.dtype() == kFloat32 || example.dtype() == kInt64, "ONNX export: the example input is ",
                  example.dtype(), " (float32 or int64 token ids are exported)");
    if (!o.input_shape.empty()) {
        int64_t n = 1;
        for (int64_t d : o.input_shape) n = d > 0 ? n * d : -1;
        NORMNET_CHECK(n == example.numel() / example.size(0), "ONNX export: input_shape ", shape_text(o.input_shape),
                      " does not hold one sample of the example ", example.shape());
    }
    NORMNET_CHECK(o.input_mean.defined() == o.input_std.defined(),
                  "ONNX export: input_mean and input_std are given together");
    NORMNET_CHECK(!o.input_mean.defined() || example.dtype() == kFloat32,
                  "ONNX export: input_mean and input_std standardise float32 inputs");
}

// The graph's output renamed to `name`: its producing node's output (and any use of it) when it
// has one, else an Identity node (a model that returns its input or a stored tensor).
Value name_output(detail::GraphState& state, GraphBuilder& g, const Value& y, const std::string& name) {
    for (NodeRecord& n : state.nodes) {
        for (std::string& o : n.outputs) {
            if (o != y.name) continue;
            o = name;
            for (NodeRecord& m : state.nodes) std::replace(m.inputs.begin(), m.inputs.end(), y.name, name);
            for (Value& v : state.node_outputs) if (v.name == y.name) v.name = name;
            return {name, y.shape, y.dtype};
        }
    }
    const Value copy = g.unary("Identity", y);
    return name_output(state, g, copy, name);
}

}  // namespace

std::string export_to_string(Module& module, const Tensor& example_input, const ExportOptions& options, ExportInfo* info) {
    check_options(options, example_input);
    const EvalModeGuard eval(module);
    const NoGradGuard no_grad;
    // The module's own forward: the output's shape to check the graph against, and an early,
    // clear error when the example is not something the module takes.
    const Tensor expected = module.forward(example_input);

    detail::GraphState state;
    state.opset = options.opset;
    for (const auto& [path, m] : module.named_modules()) state.paths.emplace(m.get(), path);
    state.stack.emplace_back(&module, "");
    state.names.insert(options.input_name);
    state.names.insert(options.output_name);
    GraphBuilder g = state.builder();

    const int64_t batch = example_input.size(0);
    const auto with_batch = [&](Ints per_sample) {
        per_sample.insert(per_sample.begin(), options.dynamic_batch ? kBatch : batch);
        return per_sample;
    };
    const Ints module_shape = with_batch(Ints(example_input.shape().begin() + 1, example_input.shape().end()));
    const Value input{options.input_name, options.input_shape.empty() ? module_shape : with_batch(options.input_shape),
                      example_input.dtype()};
    Value x = input;
    if (!options.input_shape.empty()) x = g.reshape(x, module_shape);
    if (options.input_mean.defined()) {
        x = g.div(g.sub(x, g.tensor(options.input_mean, "input_mean")), g.tensor(options.input_std, "input_std"));
    }
    Value y = module.to_onnx(g, x);

    // The graph must give what forward gave.
    bool same = y.dtype == expected.dtype() && y.dim() == expected.dim();
    for (int64_t d = 0; same && d < y.dim(); ++d) {
        same = expected.size(static_cast<int>(d)) == (y.size(d) == kBatch ? batch : y.size(d));
    }
    NORMNET_CHECK(same, "ONNX export: the graph of ", module.type_name(), " gives ", y.dtype, " ", shape_text(y.shape),
                  " where its forward gives ", expected.dtype(), " ", expected.shape(),
                  " (a to_onnx computes another shape than its module's forward)");
    NORMNET_CHECK(!options.dynamic_batch || (y.dim() >= 1 && y.size(0) == kBatch), "ONNX export: the output ",
                  shape_text(y.shape), " of ", module.type_name(), " does not start with the batch dimension");
    y = name_output(state, g, y, options.output_name);

    SerializedGraph graph{&state,          options.graph_name, options.doc, NORMNET_VERSION, input, y,
                          options.input_doc, options.output_doc, options.metadata};
    std::string bytes = serialize(graph);
    if (info != nullptr) {
        std::set<std::string> ops;
        for (const NodeRecord& n : state.nodes) ops.insert(n.op_type);
        *info = ExportInfo{static_cast<int64_t>(state.nodes.size()), static_cast<int64_t>(state.initializers.size()),
                           static_cast<int64_t>(bytes.size()), {ops.begin(), ops.end()}, input.shape, y.shape};
    }
    return bytes;
}

ExportInfo export_model(Module& module, const Tensor& example_input, const std::string& path, const ExportOptions& options) {
    ExportInfo info;
    const std::string bytes = export_to_string(module, example_input, options, &info);
    write_file_atomic(path, bytes);
    return info;
}

}  // namespace onnx
}  // namespace normnet
