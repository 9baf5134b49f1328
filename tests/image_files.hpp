// Image files written by the tests (libpng's simplified API, libjpeg), for the image-folder readers.
#pragma once

#include <cstdio>  // before jpeglib.h, which needs FILE and size_t

#include <jpeglib.h>
#include <png.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace normnet::test {

// A PNG of h x w pixels of `channels` (1 or 3) interleaved values.
inline void write_png(const std::filesystem::path& path, int64_t h, int64_t w, int channels, const std::vector<uint8_t>& pixels) {
    std::filesystem::create_directories(path.parent_path());
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = png_uint_32(w);
    image.height = png_uint_32(h);
    image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    REQUIRE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr) != 0);
}

// A JPEG of h x w grey pixels at the best quality (values come back within a few levels).
inline void write_jpeg(const std::filesystem::path& path, int64_t h, int64_t w, const std::vector<uint8_t>& pixels) {
    std::filesystem::create_directories(path.parent_path());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    jpeg_compress_struct info{};
    jpeg_error_mgr error{};
    info.err = jpeg_std_error(&error);
    jpeg_create_compress(&info);
    jpeg_stdio_dest(&info, f);
    info.image_width = JDIMENSION(w);
    info.image_height = JDIMENSION(h);
    info.input_components = 1;
    info.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, 100, TRUE);
    jpeg_start_compress(&info, TRUE);
    for (int64_t y = 0; y < h; ++y) {
        JSAMPROW row = const_cast<uint8_t*>(pixels.data() + y * w);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    std::fclose(f);
}

}  // namespace normnet::test
