// What `normnet export` writes for a checkpoint: the model rebuilt from the file alone and the
// ONNX graph's input, names, doc strings and metadata (class names, pixel scaling, the
// vocabulary), for a run of `normnet train` or of `normnet lm train`.
#pragma once

#include <memory>
#include <string>

#include "normnet/module.hpp"
#include "normnet/onnx.hpp"

namespace normnet::cli {

struct ExportableModel {
    std::shared_ptr<Module> model;  // with the checkpoint's weights, in eval mode
    Tensor example;                 // one sample shaped (and typed) as the model takes it
    onnx::ExportOptions options;
    std::string description;        // the architecture, e.g. "784-300-100-10 layer"
};

/// The model of a model.safetensors (or its run folder) and how to export it; throws
/// normnet::Error naming the file when it is not a checkpoint of normnet.
ExportableModel exportable_model(const std::string& checkpoint);

}  // namespace normnet::cli
