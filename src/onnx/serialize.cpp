// The built graph as ONNX's protobuf messages (onnx-ml.proto, through Debian's libonnx_proto):
// ModelProto with its opset, metadata, graph inputs and outputs, nodes, initializers (raw
// little-endian data) and the value_info of every node output, serialised to bytes.
#include "serialize.hpp"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>
#include <variant>

#include "normnet/error.hpp"

namespace normnet::onnx {
namespace {

int32_t element_type(Dtype dtype) {
    switch (dtype) {
        case kFloat32: return ::onnx::TensorProto::FLOAT;
        case kInt64: return ::onnx::TensorProto::INT64;
        case kInt32: return ::onnx::TensorProto::INT32;
        case kBool: return ::onnx::TensorProto::BOOL;
    }
    fail("ONNX export: unknown dtype");
}

// name, element type and shape (the batch dimension named "N").
void describe(::onnx::ValueInfoProto& info, const Value& v, const std::string& doc = "") {
    info.set_name(v.name);
    if (!doc.empty()) info.set_doc_string(doc);
    auto* tensor = info.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(element_type(v.dtype));
    auto* shape = tensor->mutable_shape();
    for (int64_t d : v.shape) {
        auto* dim = shape->add_dim();
        if (d == kBatch) dim->set_dim_param("N");
        else dim->set_dim_value(d);
    }
}

void set_attribute(::onnx::AttributeProto& a, const Attribute& attribute) {
    a.set_name(attribute.name);
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                a.set_type(::onnx::AttributeProto::INT);
                a.set_i(v);
            } else if constexpr (std::is_same_v<T, float>) {
                a.set_type(::onnx::AttributeProto::FLOAT);
                a.set_f(v);
            } else if constexpr (std::is_same_v<T, std::string>) {
                a.set_type(::onnx::AttributeProto::STRING);
                a.set_s(v);
            } else {
                a.set_type(::onnx::AttributeProto::INTS);
                for (int64_t i : v) a.add_ints(i);
            }
        },
        attribute.value);
}

void set_tensor(::onnx::TensorProto& t, const Initializer& init) {
    t.set_name(init.name);
    if (!init.doc.empty()) t.set_doc_string(init.doc);
    t.set_data_type(element_type(init.tensor.dtype()));
    for (int64_t d : init.tensor.shape()) t.add_dims(d);
    const auto bytes = static_cast<size_t>(init.tensor.numel() * element_size(init.tensor.dtype()));
    // x86-64 is little-endian, as raw_data is.
    const void* data = init.tensor.dtype() == kFloat32 ? static_cast<const void*>(init.tensor.data())
                                                       : static_cast<const void*>(init.tensor.data_ptr<int64_t>());
    t.set_raw_data(data, bytes);
}

}  // namespace

std::string serialize(const SerializedGraph& g) {
    ::onnx::ModelProto model;
    model.set_ir_version(8);  // ONNX 1.10-1.12; opsets 13-17 need at most this
    model.set_producer_name("normnet");
    model.set_producer_version(g.producer_version);
    if (!g.doc.empty()) model.set_doc_string(g.doc);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(g.state->opset);
    for (const auto& [key, value] : g.metadata) {
        auto* entry = model.add_metadata_props();
        entry->set_key(key);
        entry->set_value(value);
    }
    auto* graph = model.mutable_graph();
    graph->set_name(g.name);
    describe(*graph->add_input(), g.input, g.input_doc);
    describe(*graph->add_output(), g.output, g.output_doc);
    for (const NodeRecord& n : g.state->nodes) {
        auto* node = graph->add_node();
        node->set_op_type(n.op_type);
        node->set_name(n.name);
        for (const std::string& i : n.inputs) node->add_input(i);
        for (const std::string& o : n.outputs) node->add_output(o);
        for (const Attribute& a : n.attributes) set_attribute(*node->add_attribute(), a);
    }
    double total = 0;
    for (const Initializer& init : g.state->initializers) {
        set_tensor(*graph->add_initializer(), init);
        total += static_cast<double>(init.tensor.numel() * element_size(init.tensor.dtype()));
    }
    // protobuf refuses messages of 2 GiB or more; ONNX's external-data files are not written.
    NORMNET_CHECK(total < 2e9, "ONNX export: the model's tensors take ", total / 1e9,
                  " GB, more than the 2 GB an ONNX file holds (external data files are not written)");
    for (const Value& v : g.state->node_outputs) {
        if (v.name != g.output.name) describe(*graph->add_value_info(), v);
    }
    std::string bytes;
    NORMNET_CHECK(model.SerializeToString(&bytes), "ONNX export: protobuf could not serialise the model");
    return bytes;
}

}  // namespace normnet::onnx
