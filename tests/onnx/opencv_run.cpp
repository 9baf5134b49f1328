// Runs ONNX models in OpenCV's dnn module (Debian's libopencv-dnn-dev) for the tests, as
// ort_run.js runs them in ONNX Runtime: the same JSON manifest, inputs fed batch by batch, the
// outputs written as raw float32, one JSON line per job on stdout (with OpenCV's message when it
// cannot load or run a model). int64 token ids are given as float32 (OpenCV's blobs are float).
//
//   normnet_opencv_run manifest.json
#include <opencv2/dnn.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using Json = nlohmann::json;

namespace {

std::vector<char> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The job's input as float32 [count, per_sample].
std::vector<float> input_floats(const Json& job, size_t values) {
    const std::vector<char> bytes = read_file(job.at("input").get<std::string>());
    std::vector<float> x(values);
    if (job.at("dtype") == "int64") {
        if (bytes.size() < values * sizeof(int64_t)) throw std::runtime_error("input file too short");
        const auto* ids = reinterpret_cast<const int64_t*>(bytes.data());
        for (size_t i = 0; i < values; ++i) x[i] = static_cast<float>(ids[i]);
    } else {
        if (bytes.size() < values * sizeof(float)) throw std::runtime_error("input file too short");
        std::copy_n(reinterpret_cast<const float*>(bytes.data()), values, x.data());
    }
    return x;
}

void run(const Json& job) {
    const std::vector<int> shape = job.at("shape").get<std::vector<int>>();
    const int count = shape[0], batch = job.at("batch").get<int>();
    size_t per_sample = 1;
    for (size_t d = 1; d < shape.size(); ++d) per_sample *= static_cast<size_t>(shape[d]);
    const std::vector<float> x = input_floats(job, per_sample * static_cast<size_t>(count));
    cv::dnn::Net net = cv::dnn::readNetFromONNX(job.at("model").get<std::string>());
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    std::ofstream out(job.at("output").get<std::string>(), std::ios::binary);
    for (int first = 0; first < count; first += batch) {
        std::vector<int> sizes = shape;
        sizes[0] = std::min(batch, count - first);
        const cv::Mat blob(static_cast<int>(sizes.size()), sizes.data(), CV_32F,
                           const_cast<float*>(x.data() + static_cast<size_t>(first) * per_sample));
        net.setInput(blob);
        const cv::Mat y = net.forward();
        if (!y.isContinuous() || y.type() != CV_32F) throw std::runtime_error("output is not a contiguous float32 blob");
        out.write(reinterpret_cast<const char*>(y.ptr<float>()), static_cast<std::streamsize>(y.total() * sizeof(float)));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: normnet_opencv_run manifest.json\n");
        return 2;
    }
    cv::setNumThreads(1);
    std::ifstream in(argv[1]);
    const Json manifest = Json::parse(in);
    for (const Json& job : manifest.at("jobs")) {
        const auto start = std::chrono::steady_clock::now();
        Json line{{"model", job.at("model")}};
        try {
            run(job);
            line["ok"] = true;
            line["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        } catch (const std::exception& e) {
            std::string message = e.what();
            // OpenCV's messages span lines: "OpenCV(4.6.0) file:line: error: (-2:...) what in function ..."
            for (char& c : message) c = c == '\n' ? ' ' : c;
            line["ok"] = false;
            line["error"] = message;
        }
        std::cout << line.dump() << std::endl;
    }
    return 0;
}
