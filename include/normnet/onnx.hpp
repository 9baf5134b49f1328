// ONNX export (normnet::onnx): a module's inference computation (eval mode) written as an ONNX
// model that ONNX Runtime, OpenCV's dnn module, TensorRT or a browser runs. The exporter walks the
// module tree: every normnet module emits the standard ONNX operators of what its forward
// computes (fused kernels as the operators they fuse), through Module::to_onnx; a custom module
// exports itself by overriding to_onnx with the GraphBuilder below. Guide: docs/onnx.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {
class Module;
}

namespace normnet::onnx {

namespace detail {
struct GraphState;  // the graph being built (src/onnx/graph.hpp)
}

/// The opsets the exporter writes: 13 (axes of Squeeze, Unsqueeze and Split as inputs) to 17
/// (LayerNormalization; the newest that ONNX 1.12, Debian 12's, checks). Below 17 LayerNorm is
/// written as the primitives it computes.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 17;

/// The batch dimension in a Value's shape: its size is chosen at run time (dimension "N" of the
/// graph's input and output).
inline constexpr int64_t kBatch = -1;

using Ints = std::vector<int64_t>;

/// A tensor of the graph being built: the graph's input, a stored tensor or a node's output.
struct Value {
    std::string name;
    Ints shape;  // kBatch where the batch size goes
    Dtype dtype = kFloat32;
    int64_t dim() const { return static_cast<int64_t>(shape.size()); }
    /// The size of dimension d (negative counts from the end): a number, or kBatch.
    NORMNET_API int64_t size(int64_t d) const;
};

/// A node attribute: an integer, a float, a string or a list of integers (ONNX's INT, FLOAT,
/// STRING and INTS), e.g. {"axis", 1}, {"epsilon", 1e-5}, {"perm", Ints{0, 2, 1}}.
struct Attribute {
    std::string name;
    std::variant<int64_t, float, std::string, Ints> value;
    Attribute(std::string n, int64_t v) : name(std::move(n)), value(v) {}
    Attribute(std::string n, int v) : name(std::move(n)), value(int64_t{v}) {}
    Attribute(std::string n, double v) : name(std::move(n)), value(static_cast<float>(v)) {}
    Attribute(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
    Attribute(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
    Attribute(std::string n, Ints v) : name(std::move(n)), value(std::move(v)) {}
};

/// What export_model hands to each module's to_onnx: it adds nodes and stored tensors to the
/// graph and keeps track of which module is being exported (for names and error messages).
/// Shapes are static except the batch dimension (kBatch). Every method that adds a node computes
/// its output's shape as ONNX defines it, and the file declares it (the ONNX checker compares).
class NORMNET_API GraphBuilder {
public:
    GraphBuilder(const GraphBuilder&) = delete;
    GraphBuilder& operator=(const GraphBuilder&) = delete;

    /// The opset being written (kMinOpset to kMaxOpset), which decides the operators there are.
    int64_t opset() const;
    /// The dotted path of the module being exported in the model, as in state_dict keys
    /// ("encoder.layers.0"; "" for the model itself).
    const std::string& path() const;
    /// Throws normnet::Error naming the module being exported, its path and `reason`; nothing is
    /// written. For a module that cannot express its current configuration in ONNX.
    [[noreturn]] void fail(const std::string& reason) const;

    /// child.to_onnx(*this, x), with child's path (names of its stored tensors and nodes, errors).
    Value call(const Module& child, const Value& x);
    /// emit() with child's path: a child exported with more than its input, e.g. a Transformer
    /// layer under a causal mask (its forward(x), and so its to_onnx, has none).
    Value call(const Module& child, const std::function<Value()>& emit);

    /// `t` (float32 or int64) stored in the file (an initializer) under "<path>.<name>", a
    /// parameter or buffer under its state_dict key; the same tensor given twice is stored once.
    Value tensor(const Tensor& t, const std::string& name);
    /// A constant stored in the file, named after the module being exported.
    Value constant(const Tensor& t);
    /// A float32 scalar constant (shape []).
    Value scalar(float v);
    /// An int64 1-D constant (axes, shapes, indices).
    Value ints(const Ints& v);

    /// A node of ONNX operator `op_type` (default domain) with one output of `shape` and `dtype`,
    /// which must be what ONNX computes.
    Value node(const std::string& op_type, const std::vector<Value>& inputs, const std::vector<Attribute>& attributes,
               Ints shape, Dtype dtype = kFloat32);
    /// A node with several outputs, of these shapes, all of `dtype`.
    std::vector<Value> node(const std::string& op_type, const std::vector<Value>& inputs,
                            const std::vector<Attribute>& attributes, const std::vector<Ints>& shapes,
                            Dtype dtype = kFloat32);

    // Common operators, their shapes computed here.
    /// Add, Sub, Mul, Div with numpy broadcasting.
    Value add(const Value& a, const Value& b);
    Value sub(const Value& a, const Value& b);
    Value mul(const Value& a, const Value& b);
    Value div(const Value& a, const Value& b);
    /// MatMul (numpy's matmul) of inputs with at least 2 dimensions each.
    Value matmul(const Value& a, const Value& b);
    /// An elementwise operator of one input (Relu, Tanh, Sigmoid, Erf, Sqrt, Exp...): x's shape.
    Value unary(const std::string& op_type, const Value& x, const std::vector<Attribute>& attributes = {});
    Value relu(const Value& x) { return unary("Relu", x); }
    /// Reshape to `shape`, whose kBatch entry stands for x's batch size.
    Value reshape(const Value& x, const Ints& shape);
    /// Transpose: output dimension i is x's dimension perm[i].
    Value transpose(const Value& x, const Ints& perm);
    /// Concat along `axis`.
    Value concat(const std::vector<Value>& xs, int64_t axis);
    /// The slice `index` of dimension `axis`, that dimension removed (Tensor::select).
    Value select(const Value& x, int64_t axis, int64_t index);
    /// Softmax over `axis`.
    Value softmax(const Value& x, int64_t axis);

private:
    friend struct detail::GraphState;
    explicit GraphBuilder(detail::GraphState& state) : state_(&state) {}
    detail::GraphState* state_;
};

/// Options of export_model. Names and doc strings describe the graph's input and output to the
/// people and tools that load the file; metadata travels in the file's metadata_props (ONNX
/// Runtime's custom metadata map), e.g. the class names or how pixels were scaled.
struct ExportOptions {
    int64_t opset = kMaxOpset;
    std::string input_name = "input";
    std::string output_name = "output";
    std::string input_doc;
    std::string output_doc;
    std::string graph_name = "normnet";
    std::string doc;  // the model's doc string
    /// Dimension 0 of the input and output is the batch, sized at run time ("N"); false keeps the
    /// example's batch size.
    bool dynamic_batch = true;
    /// The graph input's shape per sample when it is not the example's (the same number of values):
    /// the graph reshapes it to the example's first, e.g. images [N, 1, 28, 28] for a model that
    /// takes rows [N, 784].
    Ints input_shape;
    /// When defined, the graph first computes (input - input_mean) / input_std (both broadcast
    /// against one sample): standardisation whose statistics the training set gave.
    Tensor input_mean, input_std;
    std::vector<std::pair<std::string, std::string>> metadata;
};

/// What an export produced.
struct ExportInfo {
    int64_t nodes = 0;
    int64_t initializers = 0;
    int64_t bytes = 0;                 // of the serialised model
    std::vector<std::string> op_types;  // the operators used, sorted, each once
    Ints input_shape, output_shape;     // kBatch at the batch dimension
};

/// Writes `module` as an ONNX model to `path`: the graph computes module.forward in eval mode
/// (dropout off, BatchNorm with its running statistics) on inputs shaped like `example_input`
/// (float32, or int64 token ids), whose first dimension is the batch. The module is put in eval
/// mode for the export and given back its mode. A module that cannot be exported throws
/// normnet::Error naming it and its path, and nothing is written; the file is written atomically
/// (a temporary renamed over `path`).
NORMNET_API ExportInfo export_model(Module& module, const Tensor& example_input, const std::string& path,
                                    const ExportOptions& options = {});
/// The serialised ONNX model (what export_model writes), and what it holds in *info when given.
NORMNET_API std::string export_to_string(Module& module, const Tensor& example_input, const ExportOptions& options = {},
                                         ExportInfo* info = nullptr);

}  // namespace normnet::onnx
