// libFuzzer target: the IDX reader (raw and gzipped image and label files). Any input must give
// a result or a normnet::Error; a crash, a sanitizer report, a leak or an allocation beyond
// libFuzzer's limit is a bug.
#include "fuzz_input.hpp"
#include "normnet/error.hpp"
#include "normnet/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = normnet::fuzz::as_file(data, size);
    try {
        const normnet::ImageSet images = normnet::read_idx_images(path);
        // What a Dataset computes from a header must not overflow either.
        if (static_cast<size_t>(images.count * images.rows * images.cols) != images.pixels.size()) __builtin_trap();
    } catch (const normnet::Error&) {
    }
    try {
        normnet::read_idx_labels(path);
    } catch (const normnet::Error&) {
    }
    return 0;
}
