// libFuzzer target: the command line's list options (--hidden and --batch-sizes through
// parse_size_list, --norms through parse_norm_list). Any text must give a list of values in range
// or a normnet::Error naming the option.
#include <algorithm>
#include <string>
#include <vector>

#include "model_spec.hpp"
#include "norms.hpp"
#include "normnet/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace normnet;
    using namespace normnet::cli;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        for (const int64_t v : parse_size_list(text, "--hidden")) {
            if (v < 1 || v > kMaxWidth) __builtin_trap();
        }
    } catch (const normnet::Error&) {
    }
    try {
        for (const NormSite site : {NormSite::features, NormSite::channels}) {
            const std::vector<std::string> known = norm_names(site);
            for (const std::string& norm : parse_norm_list(text, site, "fuzz")) {
                if (std::find(known.begin(), known.end(), norm) == known.end()) __builtin_trap();
            }
        }
    } catch (const normnet::Error&) {
    }
    return 0;
}
