// safetensors reading and writing. The writer goes through a temporary file and a rename so
// readers only ever see a complete file; the reader validates the header against the real file
// size before allocating, so a corrupt or hostile file is an error, never a huge allocation.
#include "normnet/checkpoint.hpp"

#include "tensor_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "normnet/autograd.hpp"

namespace normnet {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit

// The safetensors dtype a tensor is stored as: its own.
const char* stored_dtype(const Tensor& t) {
    switch (t.dtype()) {
        case kInt64: return "I64";
        case kBool: return "BOOL";
        case kFloat32: break;
    }
    return "F32";
}

size_t dtype_size(const std::string& dtype) {
    if (dtype == "F32") return 4;
    if (dtype == "F64" || dtype == "I64") return 8;
    if (dtype == "BOOL") return 1;
    return 0;
}

// Writes everything or throws; `what` names the file in messages.
void write_all(std::FILE* f, const void* data, size_t bytes, const std::string& what) {
    if (bytes && std::fwrite(data, 1, bytes, f) != bytes) fail("cannot write ", what, ": ", std::strerror(errno));
}

}  // namespace

Tensor SafetensorsData::at(const std::string& name) const {
    Tensor t = find_tensor(tensors, name);
    NORMNET_CHECK(t.defined(), path, ": no tensor named '", name, "'");
    return t;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header;
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

    namespace fs = std::filesystem;
    const fs::path target(path);
    fs::path tmp = target;
    tmp += ".tmp" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    NORMNET_CHECK(f != nullptr, "cannot write ", path, ": ", std::strerror(errno));
    try {
        const uint64_t n = text.size();
        write_all(f, &n, 8, path);
        write_all(f, text.data(), text.size(), path);
        for (const auto& [name, t] : tensors) {
            const Tensor c = t.contiguous();
            write_all(f, c.impl().bytes(), static_cast<size_t>(c.numel() * element_size(c.dtype())), path);
        }
        if (std::fflush(f) != 0 || ::fsync(fileno(f)) != 0) fail("cannot write ", path, ": ", std::strerror(errno));
    } catch (...) {
        std::fclose(f);
        std::remove(tmp.c_str());
        throw;
    }
    if (std::fclose(f) != 0) {
        std::remove(tmp.c_str());
        fail("cannot write ", path, ": ", std::strerror(errno));
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) {
        std::remove(tmp.c_str());
        fail("cannot write ", path, ": ", ec.message());
    }
}

SafetensorsData load_safetensors(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    NORMNET_CHECK(in.good(), "cannot open ", path, ": ", std::strerror(errno));
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    NORMNET_CHECK(file_size >= 8, path, ": not a safetensors file (", file_size, " bytes, shorter than its 8-byte header length)");
    uint64_t header_size = 0;
    in.read(reinterpret_cast<char*>(&header_size), 8);
    NORMNET_CHECK(header_size <= kMaxHeaderBytes && header_size <= file_size - 8, path, ": corrupt safetensors header length ",
          header_size, " (file has ", file_size, " bytes)");
    std::string text(header_size, '\0');
    in.read(text.data(), static_cast<std::streamsize>(header_size));
    NORMNET_CHECK(in.good(), path, ": cannot read the safetensors header");
    nlohmann::ordered_json header;
    try {
        header = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": corrupt safetensors header: ", e.what());
    }
    NORMNET_CHECK(header.is_object(), path, ": corrupt safetensors header: not a JSON object");

    SafetensorsData out;
    out.path = path;
    const uint64_t data_start = 8 + header_size;
    const uint64_t data_size = file_size - data_start;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // data_offsets of every tensor
    std::vector<char> raw;
    try {
        for (const auto& [name, entry] : header.items()) {
            if (name == "__metadata__") {
                for (const auto& [key, value] : entry.items()) out.metadata[key] = value.get<std::string>();
                continue;
            }
            const std::string dtype = entry.at("dtype").get<std::string>();
            const size_t elem = dtype_size(dtype);
            NORMNET_CHECK(elem != 0, path, ": tensor '", name, "' has unsupported dtype ", dtype, " (F32, F64 and I64 are read)");
            const auto dims = entry.at("shape").get<std::vector<int64_t>>();
            NORMNET_CHECK(dims.size() <= static_cast<size_t>(kMaxDims), path, ": tensor '", name, "' has ", dims.size(),
                  " dimensions (at most ", kMaxDims, " are supported)");
            const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
            NORMNET_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1] && offsets[1] <= data_size, path, ": tensor '", name,
                  "' has data offsets outside the file");
            // Element count from the byte range (bounded by the file), then compared with the shape.
            uint64_t numel = 1;
            for (int64_t d : dims) {
                NORMNET_CHECK(d >= 0 && (d == 0 || numel <= data_size / static_cast<uint64_t>(d)), path, ": tensor '", name,
                      "' has an impossible shape");
                numel *= static_cast<uint64_t>(d);
            }
            NORMNET_CHECK(numel * elem == offsets[1] - offsets[0], path, ": tensor '", name, "' of shape ", Shape(dims),
                  " does not match its ", offsets[1] - offsets[0], " bytes of data");
            ranges.emplace_back(offsets[0], offsets[1]);
            raw.resize(offsets[1] - offsets[0]);
            in.seekg(static_cast<std::streamoff>(data_start + offsets[0]));
            in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
            NORMNET_CHECK(in.good(), path, ": cannot read tensor '", name, "'");
            // Integers and booleans keep their dtype; floating-point values become float32.
            Tensor t = empty(Shape(dims), dtype == "I64" ? kInt64 : dtype == "BOOL" ? kBool : kFloat32);
            if (dtype == "F64") {
                float* dst = t.data();
                for (uint64_t i = 0; i < numel; ++i) {
                    double v;
                    std::memcpy(&v, raw.data() + i * elem, 8);
                    dst[i] = static_cast<float>(v);
                }
            } else if (numel > 0) {
                if (dtype == "BOOL") {
                    for (char byte : raw) {
                        NORMNET_CHECK(byte == 0 || byte == 1, path, ": tensor '", name, "' holds a BOOL byte other than 0 or 1");
                    }
                }
                std::memcpy(t.impl().bytes(), raw.data(), numel * elem);
            }
            out.tensors.emplace_back(name, t);
            out.dtypes[name] = dtype;
        }
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": corrupt safetensors header: ", e.what());
    }
    // As the format requires (and its reference reader checks): the tensors tile the data
    // without gaps or overlaps, so no byte is read twice or left unexplained.
    std::sort(ranges.begin(), ranges.end());
    uint64_t covered = 0;
    for (const auto& [begin, end] : ranges) {
        NORMNET_CHECK(begin == covered, path, ": tensor data offsets overlap or leave a gap at byte ", std::min(begin, covered),
              " (corrupt file)");
        covered = end;
    }
    NORMNET_CHECK(covered == data_size, path, ": the tensors cover ", covered, " of the file's ", data_size,
          " data bytes (truncated or corrupt file)");
    return out;
}

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, module.state_dict(), metadata);
}

void load(Module& module, const std::string& path) { module.load_state_dict(load_safetensors(path).tensors); }

}  // namespace normnet
