// safetensors reading and writing, and the atomic file write behind every file normnet writes.
// The writer goes through a temporary file and a rename so readers only ever see a complete
// file; the reader validates the header against the real file size before allocating, so a
// corrupt or hostile file is an error, never a huge allocation or undefined behaviour.
#include "normnet/checkpoint.hpp"

#include "tensor_impl.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "normnet/autograd.hpp"

namespace normnet {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit
constexpr std::string_view kTmpMarker = ".tmp";

// The safetensors dtype a tensor is stored as: its own.
const char* stored_dtype(const Tensor& t) {
    switch (t.dtype()) {
        case kInt64: return "I64";
        case kBool: return "BOOL";
        case kInt32: return "I32";
        case kFloat32: break;
    }
    return "F32";
}

size_t dtype_size(const std::string& dtype) {
    if (dtype == "F32" || dtype == "I32") return 4;
    if (dtype == "F64" || dtype == "I64") return 8;
    if (dtype == "F16" || dtype == "BF16") return 2;
    if (dtype == "BOOL") return 1;
    return 0;
}

// The dtype a stored tensor is read into: integers and booleans keep theirs, floating-point
// values (F32, F64, F16, BF16) become float32.
Dtype loaded_dtype(const std::string& dtype) {
    return dtype == "I64" ? kInt64 : dtype == "BOOL" ? kBool : dtype == "I32" ? kInt32 : kFloat32;
}

// IEEE binary16 to float32. Every half value is a float value, so this is exact; NaN payloads
// and the sign of zero are kept.
float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t{h} >> 15 << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    if (exponent == 0) {  // zero and subnormals: mantissa * 2^-24
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    // Normal numbers rebias the exponent (15 -> 127); infinities and NaNs keep an all-ones one.
    const uint32_t bits = sign | (exponent == 0x1f ? 0xffu : exponent + 112) << 23 | mantissa << 13;
    return std::bit_cast<float>(bits);
}

// bfloat16 is the top half of a float32.
float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

// Reads `numel` little-endian values of type T at `src` into float32 at `dst`.
template <class T, class Convert>
void convert(const char* src, uint64_t numel, float* dst, Convert to_float) {
    for (uint64_t i = 0; i < numel; ++i) {
        T v;
        std::memcpy(&v, src + i * sizeof(T), sizeof(T));
        dst[i] = to_float(v);
    }
}

// `numel` elements of `dtype` at `src` into t (of loaded_dtype(dtype)); `where` names the tensor.
void decode(const std::string& dtype, const char* src, uint64_t numel, const Tensor& t, const std::string& where) {
    if (numel == 0) return;  // an empty tensor's data pointer may be null
    if (dtype == "I64" || dtype == "F32" || dtype == "I32") std::memcpy(t.impl().bytes(), src, numel * dtype_size(dtype));
    if (dtype == "BOOL") {
        // Any byte but 0 and 1 would be an invalid bool.
        for (uint64_t i = 0; i < numel; ++i) NORMNET_CHECK(src[i] == 0 || src[i] == 1, where, " holds a BOOL byte other than 0 or 1");
        std::memcpy(t.impl().bytes(), src, numel);
    }
    if (dtype == "F64") convert<double>(src, numel, t.data(), [](double v) { return static_cast<float>(v); });
    if (dtype == "F16") convert<uint16_t>(src, numel, t.data(), half_to_float);
    if (dtype == "BF16") convert<uint16_t>(src, numel, t.data(), bfloat16_to_float);
}

// PyTorch's own files, which users give where safetensors is expected: a zip archive (torch.save
// since PyTorch 1.6, libtorch's torch::save, TorchScript) or a pickle (torch.save before 1.6).
// Their first bytes say which; the message says how to convert them.
void check_not_pytorch_file(const std::string& path, std::string_view first) {
    const bool zip = first.substr(0, 4) == std::string_view("PK\x03\x04", 4);
    const bool pickle = static_cast<unsigned char>(first[0]) == 0x80 && first[1] >= 2 && first[1] <= 5;
    if (!zip && !pickle) return;
    fail(path, ": a PyTorch file (", zip ? "a zip archive, as torch.save and libtorch's torch::save write"
                                         : "a pickle, as torch.save wrote before PyTorch 1.6",
         "), not safetensors; convert its state_dict in Python: import torch, safetensors.torch; "
         "safetensors.torch.save_file({k: v.contiguous() for k, v in torch.load(\"", path,
         "\").items()}, \"model.safetensors\") (from libtorch's torch::save: torch.jit.load(\"", path,
         "\").state_dict() instead of torch.load)");
}

// One tensor's header entry, checked: a known dtype, integer sizes, offsets inside the data.
struct Entry {
    std::string name, dtype;
    std::vector<int64_t> dims;
    uint64_t begin = 0, end = 0, numel = 0;
};

// The integers of a "shape" or "data_offsets" list. JSON floats (8.0, 1e300) are rejected, not
// truncated: converting one outside int64's range would be undefined behaviour.
std::vector<Json> integer_list(const Json& entry, const char* key, const std::string& where) {
    const Json& list = entry.at(key);
    NORMNET_CHECK(list.is_array(), where, " has a \"", key, "\" that is not a list");
    for (const Json& v : list) NORMNET_CHECK(v.is_number_integer(), where, " has a non-integer \"", key, "\" value ", v.dump());
    return list.get<std::vector<Json>>();
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& json, uint64_t data_size) {
    const std::string where = path + ": tensor '" + name + "'";
    NORMNET_CHECK(json.is_object(), where, " is not a JSON object");
    Entry e;
    e.name = name;
    e.dtype = json.at("dtype").get<std::string>();
    NORMNET_CHECK(dtype_size(e.dtype) != 0, where, " has unsupported dtype ", e.dtype, " (F32, F64, F16, BF16, I64, I32 and BOOL are read)");
    const std::vector<Json> dims = integer_list(json, "shape", where);
    NORMNET_CHECK(dims.size() <= static_cast<size_t>(kMaxDims), where, " has ", dims.size(), " dimensions (at most ", kMaxDims,
          " are supported)");
    // The product of the non-zero sizes must fit int64 (strides are computed from it), even
    // when a zero size makes the tensor empty.
    uint64_t product = 1;
    bool empty = false;
    for (const Json& d : dims) {
        NORMNET_CHECK(d.is_number_unsigned(), where, " has an impossible shape (negative size ", d.dump(), ")");
        const uint64_t size = d.get<uint64_t>();
        NORMNET_CHECK(size <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                  (size == 0 || product <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size),
              where, " has an impossible shape (its sizes multiply past 2^63)");
        if (size == 0) empty = true;
        else product *= size;
        e.dims.push_back(static_cast<int64_t>(size));
    }
    e.numel = empty ? 0 : product;
    const std::vector<Json> offsets = integer_list(json, "data_offsets", where);
    NORMNET_CHECK(offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(), where,
          " has data offsets outside the file");
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    NORMNET_CHECK(e.begin <= e.end && e.end <= data_size, where, " has data offsets outside the file");
    const uint64_t bytes = e.end - e.begin, elem = dtype_size(e.dtype);
    NORMNET_CHECK(e.numel <= bytes / elem && e.numel * elem == bytes, where, " of shape ", Shape(e.dims), " (", e.dtype,
          ") does not match its ", bytes, " bytes of data");
    return e;
}

// The pid in a name ending in ".tmp<digits>", or 0.
pid_t temporary_owner(const std::string& name) {
    const size_t at = name.rfind(kTmpMarker);
    if (at == std::string::npos || at + kTmpMarker.size() == name.size()) return 0;
    const std::string digits = name.substr(at + kTmpMarker.size());
    if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;
    return static_cast<pid_t>(std::stol(digits));
}

}  // namespace

Tensor SafetensorsData::at(const std::string& name) const {
    Tensor t = find_tensor(tensors, name);
    NORMNET_CHECK(t.defined(), path, ": no tensor named '", name, "'");
    return t;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
    fs::path tmp(path);
    tmp += std::string(kTmpMarker) + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    NORMNET_CHECK(fd >= 0, "cannot write ", path, ": ", std::strerror(errno));
    const auto give_up = [&](int error, bool open) {
        if (open) ::close(fd);
        ::unlink(tmp.c_str());
        fail("cannot write ", path, ": ", std::strerror(error));
    };
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) give_up(n < 0 ? errno : ENOSPC, true);
        done += static_cast<size_t>(n);
    }
    // On the disk before the rename makes it visible: after a crash the name holds either
    // file, whole.
    if (::fsync(fd) != 0) give_up(errno, true);
    if (::close(fd) != 0) give_up(errno, false);
    if (::rename(tmp.c_str(), path.c_str()) != 0) give_up(errno, false);
    // The rename itself is durable once the folder is synced (best effort: some file systems
    // cannot sync a folder).
    const fs::path parent = fs::path(path).parent_path();
    const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

int remove_stale_temporaries(const std::string& dir) {
    int removed = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const pid_t owner = temporary_owner(entry.path().filename().string());
        // kill(pid, 0) probes for a live process without signalling it.
        if (owner <= 0 || owner == ::getpid() || ::kill(owner, 0) == 0 || errno != ESRCH) continue;
        std::error_code ignored;
        if (fs::remove(entry.path(), ignored)) ++removed;
    }
    return removed;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    Json header;
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        NORMNET_CHECK(name != "__metadata__" && header.find(name) == header.end(), "save_safetensors: duplicate or reserved name '",
              name, "'");
        const uint64_t bytes = static_cast<uint64_t>(t.numel() * element_size(t.dtype()));
        header[name] = {{"dtype", stored_dtype(t)},
                        {"shape", t.shape().vec()},
                        {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

    std::string file(8, '\0');
    const uint64_t n = text.size();
    std::memcpy(file.data(), &n, 8);
    file.reserve(8 + text.size() + offset);
    file += text;
    for (const auto& [name, t] : tensors) {
        const Tensor c = t.contiguous();
        file.append(c.impl().bytes(), static_cast<size_t>(c.numel() * element_size(c.dtype())));
    }
    write_file_atomic(path, file);
}

SafetensorsData load_safetensors(const std::string& path) {
    std::error_code ec;
    NORMNET_CHECK(!fs::is_directory(path, ec), "cannot read ", path, ": it is a folder, not a safetensors file");
    std::ifstream in(path, std::ios::binary);
    NORMNET_CHECK(in.good(), "cannot open ", path, ": ", std::strerror(errno));
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    NORMNET_CHECK(in.good() && file_size != static_cast<uint64_t>(-1), "cannot read ", path, " (not a regular file)");
    NORMNET_CHECK(file_size >= 8, path, ": not a safetensors file (", file_size, " bytes, shorter than its 8-byte header length)");
    char first[8];
    in.read(first, 8);
    uint64_t header_size = 0;
    std::memcpy(&header_size, first, 8);
    // Only a file that is no safetensors file is looked at as PyTorch's: a safetensors header
    // length can begin with a pickle's bytes (0x80, 2: a length of 0x280 + 65536 k).
    if (header_size > kMaxHeaderBytes || header_size > file_size - 8) check_not_pytorch_file(path, std::string_view(first, 8));
    NORMNET_CHECK(header_size <= kMaxHeaderBytes && header_size <= file_size - 8, path, ": corrupt safetensors header length ",
          header_size, " (file has ", file_size, " bytes)");
    std::string text(header_size, '\0');
    in.read(text.data(), static_cast<std::streamsize>(header_size));
    NORMNET_CHECK(in.good(), path, ": cannot read the safetensors header");
    Json header;
    try {
        header = Json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        check_not_pytorch_file(path, std::string_view(first, 8));
        fail(path, ": corrupt safetensors header: ", e.what());
    }
    NORMNET_CHECK(header.is_object(), path, ": corrupt safetensors header: not a JSON object");

    SafetensorsData out;
    out.path = path;
    const uint64_t data_start = 8 + header_size;
    const uint64_t data_size = file_size - data_start;
    // Every entry is checked before any tensor is allocated or read.
    std::vector<Entry> entries;
    try {
        for (const auto& [name, entry] : header.items()) {
            if (name == "__metadata__") {
                NORMNET_CHECK(entry.is_object(), path, ": corrupt safetensors header: __metadata__ is not an object");
                for (const auto& [key, value] : entry.items()) out.metadata[key] = value.get<std::string>();
                continue;
            }
            entries.push_back(parse_entry(path, name, entry, data_size));
        }
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": corrupt safetensors header: ", e.what());
    }
    // As the format requires (and its reference reader checks): the tensors tile the data
    // without gaps or overlaps, so no byte is read twice or left unexplained. Empty tensors
    // ([2, 0] at [0, 0]) take no bytes and may sit anywhere.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const Entry& e : entries) {
        if (e.begin != e.end) ranges.emplace_back(e.begin, e.end);
    }
    std::sort(ranges.begin(), ranges.end());
    uint64_t covered = 0;
    for (const auto& [begin, end] : ranges) {
        NORMNET_CHECK(begin == covered, path, ": tensor data offsets overlap or leave a gap at byte ", std::min(begin, covered),
              " (corrupt file)");
        covered = end;
    }
    NORMNET_CHECK(covered == data_size, path, ": the tensors cover ", covered, " of the file's ", data_size,
          " data bytes (truncated or corrupt file)");

    std::vector<char> raw;
    for (const Entry& e : entries) {
        raw.resize(e.end - e.begin);
        in.seekg(static_cast<std::streamoff>(data_start + e.begin));
        in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
        NORMNET_CHECK(in.good(), path, ": cannot read tensor '", e.name, "'");
        Tensor t = empty(Shape(e.dims), loaded_dtype(e.dtype));
        decode(e.dtype, raw.data(), e.numel, t, path + ": tensor '" + e.name + "'");
        out.tensors.emplace_back(e.name, t);
        out.dtypes[e.name] = e.dtype;
    }
    return out;
}

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, module.state_dict(), metadata);
}

void load(Module& module, const SafetensorsData& data) {
    const NamedTensors mine = module.state_dict();
    NamedTensors state;
    for (const auto& [name, source] : data.tensors) {
        const Tensor target = find_tensor(mine, name);
        NORMNET_CHECK(target.defined(), data.path, ": unexpected key \"", name, "\" (the model has no such parameter or buffer)");
        // PyTorch's rule for 0-dim entries saved as one-element lists (num_batches_tracked of
        // shape [1], as older PyTorch wrote it).
        const bool scalar_from_list = target.dim() == 0 && source.shape() == Shape{1};
        NORMNET_CHECK(scalar_from_list || source.shape() == target.shape(), data.path, ": size mismatch for ", name,
              ": the file has shape ", source.shape(), ", the model ", target.shape());
        state.emplace_back(name, scalar_from_list ? source.reshape(Shape{}) : source);
    }
    for (const auto& [name, target] : mine) {
        NORMNET_CHECK(find_tensor(state, name).defined(), data.path, ": missing key \"", name, "\" (the file has no such tensor)");
    }
    module.load_state_dict(state);  // cannot fail now: names and shapes were checked above
}

void load(Module& module, const std::string& path) { load(module, load_safetensors(path)); }

}  // namespace normnet
