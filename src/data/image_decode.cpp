// PNG through libpng's simplified API; JPEG through libjpeg, whose errors longjmp: each libjpeg
// call runs in a small function that holds no C++ object, so a longjmp skips no destructor.
#include "image_decode.hpp"

#include <jpeglib.h>
#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "normnet/error.hpp"

namespace normnet::detail {
namespace {

enum class Format { png, jpeg };

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open(const std::string& path) {
    File f(std::fopen(path.c_str(), "rb"));
    if (!f) fail("cannot open ", path, ": ", std::strerror(errno));
    return f;
}

Format format_of(const std::string& path, std::FILE* f) {
    unsigned char magic[8] = {};
    const size_t got = std::fread(magic, 1, sizeof magic, f);
    std::rewind(f);
    if (got == 8 && png_sig_cmp(magic, 0, 8) == 0) return Format::png;
    if (got >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff) return Format::jpeg;
    fail(path, ": not a PNG or JPEG file");
}

void check_size(const std::string& path, int64_t height, int64_t width) {
    NORMNET_CHECK(height >= 1 && width >= 1, path, ": the image is empty (", height, " x ", width, ")");
    NORMNET_CHECK(height <= kMaxImagePixels / width, path, ": the image is ", height, " x ", width,
                  " pixels, more than the ", kMaxImagePixels, " an image may have");
}

// ---- PNG ----------------------------------------------------------------------------------------

struct PngImage {
    png_image image{};
    PngImage() { image.version = PNG_IMAGE_VERSION; }
    ~PngImage() { png_image_free(&image); }
};

void begin_png(const std::string& path, std::FILE* f, PngImage& png) {
    if (!png_image_begin_read_from_stdio(&png.image, f)) fail(path, ": corrupt PNG: ", png.image.message);
    check_size(path, png.image.height, png.image.width);
}

// ---- JPEG ---------------------------------------------------------------------------------------

struct JpegError {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

extern "C" void jpeg_fail(j_common_ptr cinfo) {
    auto* error = reinterpret_cast<JpegError*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, error->message);
    std::longjmp(error->jump, 1);
}
// libjpeg prints its warnings (premature end of data, corrupt markers); a library must not print,
// and a damaged image is an error here: the warning becomes one.
extern "C" void jpeg_warn(j_common_ptr cinfo, int level) {
    if (level < 0) jpeg_fail(cinfo);
}

struct Jpeg {
    jpeg_decompress_struct info{};
    JpegError error{};
    bool created = false;
    ~Jpeg() {
        if (created) jpeg_destroy_decompress(&info);
    }
};

// These hold no C++ objects: a longjmp out of libjpeg lands in their setjmp and returns false.
bool jpeg_header(Jpeg& j, std::FILE* f, int channels) {
    j.info.err = jpeg_std_error(&j.error.manager);
    j.error.manager.error_exit = jpeg_fail;
    j.error.manager.emit_message = jpeg_warn;
    if (setjmp(j.error.jump)) return false;
    jpeg_create_decompress(&j.info);
    j.created = true;
    jpeg_stdio_src(&j.info, f);
    jpeg_read_header(&j.info, TRUE);
    if (channels > 0) j.info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    return true;
}

bool jpeg_pixels(Jpeg& j, unsigned char* dst, size_t stride) {
    if (setjmp(j.error.jump)) return false;
    jpeg_start_decompress(&j.info);
    while (j.info.output_scanline < j.info.output_height) {
        JSAMPROW row = dst + size_t(j.info.output_scanline) * stride;
        jpeg_read_scanlines(&j.info, &row, 1);
    }
    jpeg_finish_decompress(&j.info);
    return true;
}

}  // namespace

ImageHeader read_image_header(const std::string& path) {
    File f = open(path);
    if (format_of(path, f.get()) == Format::png) {
        PngImage png;
        begin_png(path, f.get(), png);
        return {png.image.height, png.image.width, (png.image.format & PNG_FORMAT_FLAG_COLOR) == 0};
    }
    Jpeg j;
    if (!jpeg_header(j, f.get(), 0)) fail(path, ": corrupt JPEG: ", j.error.message);
    check_size(path, j.info.image_height, j.info.image_width);
    return {j.info.image_height, j.info.image_width, j.info.jpeg_color_space == JCS_GRAYSCALE};
}

std::vector<uint8_t> decode_image(const std::string& path, int channels, ImageHeader& header) {
    NORMNET_CHECK(channels == 1 || channels == 3, "decode_image: channels must be 1 or 3, got ", channels);
    File f = open(path);
    std::vector<uint8_t> pixels;
    if (format_of(path, f.get()) == Format::png) {
        PngImage png;
        begin_png(path, f.get(), png);
        header = {png.image.height, png.image.width, (png.image.format & PNG_FORMAT_FLAG_COLOR) == 0};
        png.image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
        pixels.resize(PNG_IMAGE_SIZE(png.image));
        if (!png_image_finish_read(&png.image, nullptr, pixels.data(), 0, nullptr))
            fail(path, ": corrupt PNG: ", png.image.message);
        return pixels;
    }
    Jpeg j;
    if (!jpeg_header(j, f.get(), channels)) fail(path, ": corrupt JPEG: ", j.error.message);
    check_size(path, j.info.image_height, j.info.image_width);
    header = {j.info.image_height, j.info.image_width, j.info.jpeg_color_space == JCS_GRAYSCALE};
    const size_t stride = size_t(j.info.image_width) * size_t(channels);
    pixels.resize(stride * j.info.image_height);
    if (!jpeg_pixels(j, pixels.data(), stride)) fail(path, ": corrupt JPEG: ", j.error.message);
    return pixels;
}

}  // namespace normnet::detail
