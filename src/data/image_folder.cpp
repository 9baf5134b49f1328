// Image folders: the files listed by class, their headers read first (the channels, the size, and
// every file's size checked before the dataset is allocated), then every image decoded in
// parallel into its slot, resized bilinearly where asked.
#include "normnet/image_folder.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>

#include "../parallel.hpp"
#include "image_decode.hpp"
#include "normnet/error.hpp"

namespace normnet::data {
namespace {

namespace fs = std::filesystem;

bool is_image(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// Bilinear resize of interleaved [h][w][c] bytes, as torch's interpolate(align_corners=False):
// each output pixel samples the input at ((x + 0.5) * in / out - 0.5), clamped to the edges.
void resize(const uint8_t* src, int64_t h, int64_t w, int64_t c, uint8_t* dst, int64_t oh, int64_t ow) {
    auto axis = [](int64_t out, int64_t in, int64_t i, int64_t& i0, int64_t& i1, float& t) {
        const float x = std::max(0.0f, (float(i) + 0.5f) * float(in) / float(out) - 0.5f);
        i0 = std::min<int64_t>(int64_t(x), in - 1);
        i1 = std::min<int64_t>(i0 + 1, in - 1);
        t = x - float(i0);
    };
    for (int64_t y = 0; y < oh; ++y) {
        int64_t y0, y1;
        float ty;
        axis(oh, h, y, y0, y1, ty);
        for (int64_t x = 0; x < ow; ++x) {
            int64_t x0, x1;
            float tx;
            axis(ow, w, x, x0, x1, tx);
            for (int64_t k = 0; k < c; ++k) {
                auto at = [&](int64_t yy, int64_t xx) { return float(src[(yy * w + xx) * c + k]); };
                const float top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * tx;
                const float bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * tx;
                dst[(y * ow + x) * c + k] = uint8_t(std::lround(std::clamp(top + (bottom - top) * ty, 0.0f, 255.0f)));
            }
        }
    }
}

// Decodes files[i] into images.pixels' slot i ([channels][rows][cols]), in parallel; the first
// file (in order) that fails is the error.
void decode_all(const std::vector<std::string>& files, ImageSet& images) {
    const int64_t n = int64_t(files.size()), c = images.channels, h = images.rows, w = images.cols;
    std::vector<std::string> errors(files.size());
    detail::parallel_for(n, 1, [&](int64_t first, int64_t last) {
        std::vector<uint8_t> resized;
        for (int64_t i = first; i < last; ++i) {
            try {
                detail::ImageHeader header;
                const std::vector<uint8_t> pixels = detail::decode_image(files[size_t(i)], int(c), header);
                const uint8_t* src = pixels.data();
                if (header.height != h || header.width != w) {
                    resized.resize(size_t(h * w * c));
                    resize(src, header.height, header.width, c, resized.data(), h, w);
                    src = resized.data();
                }
                uint8_t* dst = images.pixels.data() + i * c * h * w;
                for (int64_t p = 0; p < h * w; ++p)  // interleaved -> planar
                    for (int64_t k = 0; k < c; ++k) dst[k * h * w + p] = src[p * c + k];
            } catch (const std::exception& e) {
                errors[size_t(i)] = e.what();
            }
        }
    });
    for (const std::string& e : errors)
        if (!e.empty()) throw Error(e);
}

ImageSet allocate(int64_t count, int channels, int64_t height, int64_t width) {
    NORMNET_CHECK(height >= 1 && width >= 1 && height <= detail::kMaxImagePixels / width,
                  "images of ", height, " x ", width, " pixels: each side must be >= 1 and the image at most ",
                  detail::kMaxImagePixels, " pixels");
    const int64_t per_image = channels * height * width;
    NORMNET_CHECK(count <= std::numeric_limits<int64_t>::max() / per_image, "too many images: ", count, " of ",
                  per_image, " bytes");
    ImageSet images;
    images.count = count, images.rows = height, images.cols = width, images.channels = channels;
    images.pixels.resize(size_t(count * per_image));
    return images;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> list_image_folder(const std::string& root,
                                                              std::vector<std::string>& classes) {
    std::error_code ec;
    NORMNET_CHECK(fs::is_directory(root, ec), "no image folder ", root,
                  " (expected one folder per class: ", root, "/<class>/<image>.png or .jpg)");
    const bool given = !classes.empty();
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(root, ec))
        if (e.is_directory() && !e.path().filename().string().starts_with(".")) found.push_back(e.path().filename());
    NORMNET_CHECK(!ec, "cannot read ", root, ": ", ec.message());
    std::sort(found.begin(), found.end());
    if (!given) classes = found;
    NORMNET_CHECK(!classes.empty(), root, ": no class folders (expected ", root, "/<class>/<image>.png or .jpg)");
    NORMNET_CHECK(classes.size() <= 256, root, ": ", classes.size(), " class folders; at most 256 classes are supported");
    for (const std::string& f : found)
        NORMNET_CHECK(std::find(classes.begin(), classes.end(), f) != classes.end(), root, ": class folder \"", f,
                      "\" is not one of the model's classes");
    std::vector<std::pair<std::string, int64_t>> files;
    for (size_t label = 0; label < classes.size(); ++label) {
        const fs::path dir = fs::path(root) / classes[label];
        if (!fs::is_directory(dir, ec)) continue;  // a split may lack a class
        std::vector<std::string> in_class;
        for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
            if (it->is_regular_file() && is_image(it->path())) in_class.push_back(it->path().string());
        NORMNET_CHECK(!ec, "cannot read ", dir.string(), ": ", ec.message());
        std::sort(in_class.begin(), in_class.end());
        for (std::string& f : in_class) files.emplace_back(std::move(f), int64_t(label));
    }
    NORMNET_CHECK(!files.empty(), root, ": no .png or .jpg images in its class folders");
    return files;
}

ImageFolder read_image_folder(const std::string& root, const ImageFolderOptions& options) {
    const int channels_asked = options.channels;
    NORMNET_CHECK(channels_asked == 0 || channels_asked == 1 || channels_asked == 3,
                  "read_image_folder: channels must be 0, 1 or 3, got ", channels_asked);
    NORMNET_CHECK((options.height == 0) == (options.width == 0) && options.height >= 0 && options.width >= 0,
                  "read_image_folder: height and width are both 0 (the images' size) or both >= 1");
    ImageFolder out;
    out.classes = options.classes;
    const auto listed = list_image_folder(root, out.classes);
    for (const auto& [file, label] : listed) out.files.push_back(file);

    // Headers first: the channels and the size, every file checked before the pixels are allocated.
    std::vector<detail::ImageHeader> headers(listed.size());
    std::vector<std::string> errors(listed.size());
    detail::parallel_for(int64_t(listed.size()), 16, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) {
            try {
                headers[size_t(i)] = detail::read_image_header(out.files[size_t(i)]);
            } catch (const std::exception& e) {
                errors[size_t(i)] = e.what();
            }
        }
    });
    for (const std::string& e : errors)
        if (!e.empty()) throw Error(e);
    int channels = channels_asked;
    if (channels == 0)
        channels = std::all_of(headers.begin(), headers.end(), [](const auto& h) { return h.grey; }) ? 1 : 3;
    int64_t height = options.height, width = options.width;
    if (height == 0) {
        height = headers[0].height, width = headers[0].width;
        for (size_t i = 1; i < headers.size(); ++i)
            NORMNET_CHECK(headers[i].height == height && headers[i].width == width, out.files[i], ": ",
                          headers[i].height, " x ", headers[i].width, " pixels, but ", out.files[0], " is ", height,
                          " x ", width, "; give one size for all (--image-size HxW resizes them)");
    }

    out.dataset.images = allocate(int64_t(listed.size()), channels, height, width);
    decode_all(out.files, out.dataset.images);
    out.dataset.labels.reserve(listed.size());
    for (const auto& [file, label] : listed) out.dataset.labels.push_back(uint8_t(label));
    out.dataset.num_classes = int64_t(out.classes.size());
    fs::path folder = fs::path(root).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();  // "data/train/" -> "train"
    out.dataset.name = folder.filename().string();
    return out;
}

ImageSet read_images(const std::vector<std::string>& files, int channels, int64_t height, int64_t width) {
    NORMNET_CHECK(channels == 1 || channels == 3, "read_images: channels must be 1 or 3, got ", channels);
    ImageSet images = allocate(int64_t(files.size()), channels, height, width);
    decode_all(files, images);
    return images;
}

}  // namespace normnet::data
