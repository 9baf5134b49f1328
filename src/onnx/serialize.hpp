// Internal: a finished graph and what the file says around it, serialised as an ONNX ModelProto
// (the only place that sees protobuf).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph.hpp"

namespace normnet::onnx {

struct SerializedGraph {
    const detail::GraphState* state = nullptr;
    std::string name, doc, producer_version;
    Value input, output;
    std::string input_doc, output_doc;
    std::vector<std::pair<std::string, std::string>> metadata;
};

/// The ModelProto's bytes; throws normnet::Error when the tensors exceed protobuf's 2 GB.
std::string serialize(const SerializedGraph& graph);

}  // namespace normnet::onnx
