// libFuzzer target: the image decoders (PNG through libpng, JPEG through libjpeg-turbo), as an
// image folder's files and a prediction's inputs are read. Any input must give pixels or a
// normnet::Error; a crash, a sanitizer report, a leak or an allocation beyond libFuzzer's limit is a bug.
#include "fuzz_input.hpp"
#include "normnet/error.hpp"
#include "normnet/image_folder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = normnet::fuzz::as_file(data, size);
    for (int channels : {1, 3}) {
        try {
            const normnet::ImageSet images = normnet::data::read_images({path}, channels, 5, 7);
            if (images.pixels.size() != size_t(channels * 5 * 7)) __builtin_trap();
        } catch (const normnet::Error&) {
        }
    }
    return 0;
}
