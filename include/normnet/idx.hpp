// Reading IDX files (the format MNIST and Fashion-MNIST ship in), raw or gzipped, into uint8
// image datasets. Every malformed file is rejected with a normnet::Error naming the file.
#pragma once

#include "normnet/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace normnet {

/// `count` images of channels x rows x cols bytes (IDX files: greyscale, one channel).
struct ImageSet {
    int64_t count = 0, rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  ///< [count, channels, rows, cols], row-major
    int64_t channels = 1;
};

/// Reads an IDX image file (magic 2051: unsigned bytes, 3 dims), raw or gzip-compressed; keeps
/// only the first `max_count` images when it is > 0 (the whole file is still checked).
NORMNET_API ImageSet read_idx_images(const std::string& path, int64_t max_count = 0);

/// Reads an IDX label file (magic 2049: unsigned bytes, 1 dim), raw or gzip-compressed; keeps
/// only the first `max_count` labels when it is > 0.
NORMNET_API std::vector<uint8_t> read_idx_labels(const std::string& path, int64_t max_count = 0);

/// A labelled image dataset kept as uint8 in memory (MNIST train: 47 MB).
struct Dataset {
    ImageSet images;
    std::vector<uint8_t> labels;  ///< [size()], each < num_classes
    int64_t num_classes = 10;
    std::string name;             ///< where it came from, for logs and messages ("mnist/train")

    /// Number of examples.
    int64_t size() const { return images.count; }
    /// Values per example: channels * rows * cols.
    int64_t features() const { return images.channels * images.rows * images.cols; }
};

/// Reads an image file and its label file; checks that the counts agree and every (kept) label <
/// num_classes. `max_count` > 0 keeps only the first max_count examples.
NORMNET_API Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                         int num_classes = 10, int64_t max_count = 0);

/// Loads split "train" or "test" of an MNIST-layout dir, finding either the raw file
/// (train-images-idx3-ubyte) or its .gz; works for MNIST and Fashion-MNIST alike.
NORMNET_API Dataset load_mnist_split(const std::string& dir, const std::string& split, int64_t max_count = 0);

}  // namespace normnet
