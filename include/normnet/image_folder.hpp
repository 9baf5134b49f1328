// Image datasets from folders, as torchvision's ImageFolder: ROOT/<class>/<image>.png|jpg, the
// classes sorted by folder name, every image decoded once (in parallel) into a Dataset of uint8
// pixels, [count][channels][height][width].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/idx.hpp"

namespace normnet::data {

struct ImageFolderOptions {
    using Self = ImageFolderOptions;
    /// The size every image is resized to (bilinear); 0 x 0: the images' own size, which must
    /// then be the same for all.
    NORMNET_ARG(int64_t, height) = 0;
    NORMNET_ARG(int64_t, width) = 0;
    /// 1 (grey) or 3 (RGB); 0: 1 when every image is grey, else 3.
    NORMNET_ARG(int, channels) = 0;
    /// The classes, in label order; empty: the folder's subfolders, sorted. Reading a test split
    /// with its training split's classes keeps the labels the same (a missing class folder is fine).
    NORMNET_ARG(std::vector<std::string>, classes){};
};

/// A labelled image dataset read from folders.
struct ImageFolder {
    Dataset dataset;
    std::vector<std::string> classes;  ///< the class names, in label order
    std::vector<std::string> files;    ///< each image's file, in dataset order
};

/// The image files (.png, .jpg, .jpeg, any case) under root/<class>/, by class then path; throws a
/// normnet::Error naming the folder when it has no class folders or no images.
NORMNET_API std::vector<std::pair<std::string, int64_t>> list_image_folder(const std::string& root,
                                                                          std::vector<std::string>& classes);

/// Reads root/<class>/<image> files as a dataset (see ImageFolderOptions). Every error names the file.
NORMNET_API ImageFolder read_image_folder(const std::string& root, const ImageFolderOptions& options = {});

/// Reads image files as an ImageSet of `channels` x height x width each (resized when their size
/// differs), e.g. the inputs of a prediction.
NORMNET_API ImageSet read_images(const std::vector<std::string>& files, int channels, int64_t height, int64_t width);

}  // namespace normnet::data
