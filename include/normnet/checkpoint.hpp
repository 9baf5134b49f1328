// Reading and writing state_dicts in the safetensors format (8-byte little-endian header
// length, a JSON header, raw little-endian data), the format PyTorch's ecosystem shares, and
// the atomic file write every output of normnet goes through.
#pragma once

#include "normnet/export.hpp"

#include <map>
#include <string>
#include <string_view>

#include "normnet/module.hpp"

namespace normnet {

/// The contents of a safetensors file: tensors by name (in file order; float32, or int64 and bool
/// for I64 and BOOL), their stored dtypes ("F32", "F64", "F16", "BF16", "I64", "BOOL") and the
/// string metadata of "__metadata__".
struct NORMNET_API SafetensorsData {
    NamedTensors tensors;
    std::map<std::string, std::string> dtypes;
    std::map<std::string, std::string> metadata;
    /// The tensor called `name`; throws normnet::Error naming the file when it is absent.
    Tensor at(const std::string& name) const;
    std::string path;
};

/// Writes `bytes` to `path` so that `path` is always either its old content or the new one,
/// whole: the bytes go to a temporary `path.tmp<PID>` in the same folder, are flushed to the
/// disk, then renamed over `path` (and the folder is synced). On failure (a full disk, say) the
/// temporary is removed, `path` is unchanged and normnet::Error names `path` and the cause.
NORMNET_API void write_file_atomic(const std::string& path, std::string_view bytes);

/// Removes the temporaries `*.tmp<PID>` that write_file_atomic calls in `dir` left behind when
/// their process died (killed in the middle of a write); those of live processes are kept.
/// Returns how many were removed.
NORMNET_API int remove_stale_temporaries(const std::string& dir);

/// Writes `tensors` and `metadata` to `path` atomically (write_file_atomic), so a crash never
/// leaves a torn file. Each tensor is stored with its dtype: F32, I64 (e.g. BatchNorm's
/// num_batches_tracked, as PyTorch) or BOOL.
NORMNET_API void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file, checking every size and offset against the file before
/// allocating. F64, F16 and BF16 values are converted to float32 (F16 and BF16 exactly); I64
/// and BOOL tensors keep their dtype.
/// Throws normnet::Error naming the file.
NORMNET_API SafetensorsData load_safetensors(const std::string& path);

/// Saves module.state_dict() (with metadata) to `path`, atomically.
NORMNET_API void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});
/// Loads a file written by save() (or by PyTorch's safetensors) into module (strict names and
/// shapes; as in PyTorch, a one-element [1] tensor loads into a 0-dim one).
NORMNET_API void load(Module& module, const std::string& path);
/// The same for tensors already read: every name and shape is checked before the first value
/// is copied, so on a mismatch the module is left unchanged.
NORMNET_API void load(Module& module, const SafetensorsData& data);

}  // namespace normnet
