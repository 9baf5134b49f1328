// Helpers of the ONNX tests: the runtimes that check and run exported files (python3-onnx's
// checker, tests/onnx/check_onnx.py; ONNX Runtime from npm, tests/onnx/ort_run.js; OpenCV's dnn
// module, normnet_opencv_run), raw tensor files for them, and the comparison of their outputs
// with normnet's.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test::onnx_check {

namespace fs = std::filesystem;

struct CommandResult {
    int status = -1;
    std::string out;  // stdout and stderr
};

inline std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

inline CommandResult run_command(const std::string& command) {
    CommandResult r;
    std::FILE* pipe = ::popen((command + " 2>&1 </dev/null").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, got);
    const int status = ::pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

/// Why python3-onnx's checker cannot run here, or "".
inline std::string checker_missing() {
    if (std::string(NORMNET_PYTHON3).empty()) return "/usr/bin/python3 not found";
    if (run_command(quoted(NORMNET_PYTHON3) + " -c 'import onnx'").status != 0) {
        return "python3-onnx is not installed (apt-get install python3-onnx)";
    }
    return "";
}

/// Why ONNX Runtime cannot run here, or "".
inline std::string onnxruntime_missing() {
    if (std::string(NORMNET_NODE).empty()) return "node is not installed (apt-get install nodejs)";
    if (!fs::exists(fs::path(NORMNET_ONNXRUNTIME_DIR) / "node_modules" / "onnxruntime-node")) {
        return std::string("onnxruntime-node is not installed in ") + NORMNET_ONNXRUNTIME_DIR +
               " (run tests/onnx/fetch_onnxruntime.sh)";
    }
    return "";
}

/// Why OpenCV's dnn module cannot run here, or "".
inline std::string opencv_missing() {
    if (std::string(NORMNET_OPENCV_RUN).empty()) {
        return "normnet_opencv_run was not built (no libopencv-dnn-dev, or a sanitizer build)";
    }
    return "";
}

/// Runs check_onnx.py on the files: the checker's full check and strict shape inference. Returns
/// its report; a failure fails the test with it.
inline std::string check_with_onnx(const std::vector<std::string>& files) {
    std::string command = quoted(NORMNET_PYTHON3) + " " + quoted(std::string(NORMNET_ONNX_TOOLS) + "/check_onnx.py");
    for (const auto& f : files) command += " " + quoted(f);
    const CommandResult r = run_command(command);
    INFO(r.out);
    REQUIRE(r.status == 0);
    return r.out;
}

/// The bytes of a float32 or int64 tensor, row-major, as the runners read them.
inline void write_raw(const std::string& path, const Tensor& t) {
    const Tensor c = t.contiguous();
    std::ofstream out(path, std::ios::binary);
    const auto bytes = static_cast<std::streamsize>(c.numel() * element_size(c.dtype()));
    out.write(c.dtype() == kInt64 ? reinterpret_cast<const char*>(c.data_ptr<int64_t>()) : reinterpret_cast<const char*>(c.data()),
              bytes);
    REQUIRE(out.good());
}

/// A file of raw float32 values as a tensor of `shape` (undefined when the size differs).
inline Tensor read_raw(const std::string& path, const Shape& shape) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (static_cast<int64_t>(bytes.size()) != shape.numel() * 4) return {};
    Tensor t = empty(shape);
    std::memcpy(t.data(), bytes.data(), bytes.size());
    return t;
}

struct RuntimeResult {
    bool ok = false;
    std::string error;   // the runtime's message when it could not load or run the model
    double seconds = 0;  // loading and running
    Tensor output;
};

enum class Runtime { onnxruntime, opencv };

/// A model to run on a raw input file (`dtype` values of `input_shape`, fed in batches of
/// `batch`, the last one smaller), giving an output of `output_shape`.
struct Job {
    std::string model, input;
    Dtype dtype = kFloat32;
    Shape input_shape;
    int64_t batch = 0;
    Shape output_shape;
};

/// Runs the jobs in one process of the runtime and reads back their outputs.
inline std::vector<RuntimeResult> run_models(Runtime runtime, const std::vector<Job>& jobs, const std::string& manifest_path) {
    const char* suffix = runtime == Runtime::onnxruntime ? ".ort.out" : ".opencv.out";
    nlohmann::json list = nlohmann::json::array();
    for (const Job& j : jobs) {
        list.push_back({{"model", j.model},
                        {"input", j.input},
                        {"dtype", j.dtype == kInt64 ? "int64" : "float32"},
                        {"shape", j.input_shape.vec()},
                        {"batch", j.batch},
                        {"output", j.model + suffix}});
    }
    std::ofstream(manifest_path) << nlohmann::json{{"jobs", list}}.dump();
    const std::string command =
        runtime == Runtime::onnxruntime
            ? quoted(NORMNET_NODE) + " " + quoted(std::string(NORMNET_ONNX_TOOLS) + "/ort_run.js") + " " +
                  quoted(NORMNET_ONNXRUNTIME_DIR) + " " + quoted(manifest_path)
            : quoted(NORMNET_OPENCV_RUN) + " " + quoted(manifest_path);
    const CommandResult r = run_command(command);
    INFO(r.out);
    REQUIRE(r.status == 0);
    // One JSON line per job (a runtime may print warnings between them).
    std::vector<RuntimeResult> results;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.front() != '{') continue;
        const auto j = nlohmann::json::parse(line);
        RuntimeResult result;
        result.ok = j.at("ok").get<bool>();
        if (result.ok) result.seconds = j.at("seconds").get<double>();
        else result.error = j.at("error").get<std::string>();
        results.push_back(result);
    }
    REQUIRE(results.size() == jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (!results[i].ok) continue;
        const std::string output = jobs[i].model + suffix;
        results[i].output = read_raw(output, jobs[i].output_shape);
        if (!results[i].output.defined()) {
            results[i].ok = false;
            results[i].error = "an output of another size than " + jobs[i].output_shape.str();
        }
        std::error_code ec;
        fs::remove(output, ec);
    }
    return results;
}

/// One job alone.
inline RuntimeResult run_model(Runtime runtime, const Job& job) {
    return run_models(runtime, {job}, job.model + ".jobs.json").front();
}

/// How a runtime's output agrees with normnet's: the largest |a - e| / (1 + |e|) (relative, with
/// an absolute floor for values near 0) and the arg-max over the last dimension, row by row. A
/// differing arg-max counts as a near tie when normnet's two largest values of that row are within
/// the tolerance of each other.
struct Agreement {
    double max_abs = 0, max_rel = 0;
    int64_t rows = 0, same_argmax = 0, near_ties = 0;
    int64_t correct_expected = 0, correct_got = 0;  // against labels, when given
};

inline Agreement compare(const Tensor& got, const Tensor& expected, double tol, const std::vector<int64_t>& labels = {}) {
    REQUIRE(got.shape() == expected.shape());
    const Tensor a = got.contiguous(), e = expected.contiguous();
    const int64_t classes = e.size(-1), rows = e.numel() / classes;
    Agreement r;
    r.rows = rows;
    for (int64_t row = 0; row < rows; ++row) {
        const float* pa = a.data() + row * classes;
        const float* pe = e.data() + row * classes;
        int64_t ia = 0, ie = 0;
        for (int64_t c = 0; c < classes; ++c) {
            const double d = std::abs(static_cast<double>(pa[c]) - pe[c]);
            r.max_abs = std::max(r.max_abs, std::isnan(d) ? INFINITY : d);
            r.max_rel = std::max(r.max_rel, std::isnan(d) ? INFINITY : d / (1.0 + std::abs(static_cast<double>(pe[c]))));
            if (pa[c] > pa[ia]) ia = c;
            if (pe[c] > pe[ie]) ie = c;
        }
        if (ia == ie) {
            ++r.same_argmax;
        } else if (static_cast<double>(pe[ie]) - pe[ia] <= tol * (1.0 + std::abs(static_cast<double>(pe[ie])))) {
            ++r.near_ties;
        }
        if (!labels.empty()) {
            r.correct_expected += ie == labels[static_cast<size_t>(row)];
            r.correct_got += ia == labels[static_cast<size_t>(row)];
        }
    }
    return r;
}

}  // namespace normnet::test::onnx_check
