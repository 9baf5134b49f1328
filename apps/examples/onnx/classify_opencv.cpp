// Classifies the test images of an MNIST-layout dataset with a model that `normnet export`
// wrote, in OpenCV's dnn module, one image at a time as an OpenCV program reads them (a 28x28
// cv::Mat of bytes), and prints the accuracy. For the image models whose graph takes
// [N, 1, 28, 28] (the CNN; the ViT with BatchNorm or no norm: OpenCV 4.6 has no LayerNorm).
//
//   classify_opencv model.onnx /usr/share/datasets/fashion-mnist
#include <zlib.h>

#include <opencv2/dnn.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

// An IDX file (raw, or gzip-compressed as .gz): its dimensions and its bytes.
bool read_idx(const std::string& dir, const std::string& name, std::vector<int>& dims, std::vector<unsigned char>& data) {
    gzFile f = gzopen((dir + "/" + name).c_str(), "rb");  // zlib reads raw files too
    if (f == nullptr) f = gzopen((dir + "/" + name + ".gz").c_str(), "rb");
    if (f == nullptr) return false;
    std::vector<unsigned char> bytes;
    unsigned char buffer[65536];
    int got = 0;
    while ((got = gzread(f, buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + got);
    gzclose(f);
    if (bytes.size() < 4) return false;
    const size_t header = 4 + 4 * static_cast<size_t>(bytes[3]);
    if (bytes.size() < header) return false;
    dims.clear();
    for (size_t i = 4; i < header; i += 4) dims.push_back(bytes[i] << 24 | bytes[i + 1] << 16 | bytes[i + 2] << 8 | bytes[i + 3]);
    data.assign(bytes.begin() + static_cast<long>(header), bytes.end());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: classify_opencv model.onnx MNIST_DIR\n");
        return 2;
    }
    std::vector<int> image_dims, label_dims;
    std::vector<unsigned char> images, labels;
    if (!read_idx(argv[2], "t10k-images-idx3-ubyte", image_dims, images) ||
        !read_idx(argv[2], "t10k-labels-idx1-ubyte", label_dims, labels) || image_dims.size() != 3) {
        std::fprintf(stderr, "classify_opencv: no MNIST-layout test set in %s\n", argv[2]);
        return 1;
    }
    cv::dnn::Net net = cv::dnn::readNetFromONNX(argv[1]);
    const int count = image_dims[0], rows = image_dims[1], cols = image_dims[2];
    int correct = 0;
    for (int i = 0; i < count; ++i) {
        const cv::Mat image(rows, cols, CV_8U, images.data() + static_cast<size_t>(i) * rows * cols);
        // [1, 1, rows, cols] float32, each pixel / 255 as in training.
        net.setInput(cv::dnn::blobFromImage(image, 1.0 / 255));
        const cv::Mat logits = net.forward();
        cv::Point best;
        cv::minMaxLoc(logits.reshape(1, 1), nullptr, nullptr, nullptr, &best);
        correct += best.x == labels[static_cast<size_t>(i)];
    }
    std::printf("OpenCV: accuracy %.2f%% (%d/%d)\n", 100.0 * correct / count, correct, count);
    return 0;
}
