// Reading and writing state_dicts in the safetensors format (8-byte little-endian header
// length, a JSON header, raw little-endian data), the format PyTorch's ecosystem shares.
#pragma once

#include "normnet/export.hpp"

#include <map>
#include <string>

#include "normnet/module.hpp"

namespace normnet {

/// The contents of a safetensors file: tensors by name (as float32, in file order), their
/// stored dtypes ("F32", "F64", "I64") and the string metadata of "__metadata__".
struct NORMNET_API SafetensorsData {
    NamedTensors tensors;
    std::map<std::string, std::string> dtypes;
    std::map<std::string, std::string> metadata;
    /// The tensor called `name`; throws normnet::Error naming the file when it is absent.
    Tensor at(const std::string& name) const;
    std::string path;
};

/// Writes `tensors` and `metadata` to `path` atomically: a temporary file in the same folder
/// is written, flushed and renamed, so a crash never leaves a torn file. Tensors are stored as
/// F32, except those named "...num_batches_tracked", stored as I64 as PyTorch does.
NORMNET_API void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file, checking every size and offset against the file before
/// allocating; F64 and I64 values are converted to float32. Throws normnet::Error naming the file.
NORMNET_API SafetensorsData load_safetensors(const std::string& path);

/// Saves module.state_dict() (with metadata) to `path`, atomically.
NORMNET_API void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});
/// Loads a file written by save() (or by PyTorch's safetensors) into module (strict names and shapes).
NORMNET_API void load(Module& module, const std::string& path);

}  // namespace normnet
