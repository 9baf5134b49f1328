// Internal: the graph a GraphBuilder accumulates, in plain C++ (nodes, stored tensors, the value
// shapes it computed), which serialize.cpp writes as ONNX's protobuf messages, and the shape
// rules of the builder's operators.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "normnet/module.hpp"
#include "normnet/onnx.hpp"

namespace normnet::onnx {

struct NodeRecord {
    std::string op_type, name;
    std::vector<std::string> inputs, outputs;
    std::vector<Attribute> attributes;
};

struct Initializer {
    std::string name;
    Tensor tensor;  // contiguous
    std::string doc;
};

struct detail::GraphState {
    int64_t opset = kMaxOpset;
    std::vector<NodeRecord> nodes;
    std::vector<Initializer> initializers;
    std::vector<Value> node_outputs;                 // declared as value_info
    std::map<const Module*, std::string> paths;      // every module of the model
    std::vector<std::pair<const Module*, std::string>> stack;  // the modules being exported, innermost last
    std::set<std::string> names;                     // every value and node name taken
    // Tensors already stored, by implementation; the handle keeps the address from being reused.
    std::map<const void*, std::pair<Tensor, Value>> stored;
    std::map<std::string, Value> small_constants;    // scalar() and ints() values, by their bytes
    std::string unique(const std::string& base);
    /// The builder the modules' to_onnx add to.
    GraphBuilder builder() { return GraphBuilder(*this); }
};

/// "[N, 3, 28, 28]": a shape in messages, the batch dimension as N.
std::string shape_text(const Ints& shape);

/// Numpy broadcasting of two shapes (kBatch broadcasts as a size of its own); false when they do not.
bool broadcast_shapes(const Ints& a, const Ints& b, Ints& out);

}  // namespace normnet::onnx
