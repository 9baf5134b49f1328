// Internal: one PNG or JPEG file decoded by Debian's libpng and libjpeg-turbo (told apart by their
// magic bytes, not the name), with its size read and checked before any pixel is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace normnet::detail {

/// An image's size and colour as its header declares them.
struct ImageHeader {
    int64_t height = 0, width = 0;
    bool grey = false;
};

/// Reads the header of a PNG or JPEG file; throws a normnet::Error naming the file if it is
/// neither, is corrupt, or is larger than kMaxImagePixels.
ImageHeader read_image_header(const std::string& path);

/// Decodes a PNG or JPEG file as `channels` (1: grey, 3: RGB; colour converted, alpha dropped)
/// 8-bit values interleaved [height][width][channels]. Throws a normnet::Error naming the file.
std::vector<uint8_t> decode_image(const std::string& path, int channels, ImageHeader& header);

/// The largest image read: 2^26 pixels (an 8192 x 8192 photo).
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 26;

}  // namespace normnet::detail
