// A fault injector for the crash tests, loaded into `normnet` with LD_PRELOAD:
// NORMNET_FAULT_RENAME=NAME:K makes the K-th rename() onto a file called NAME fail with ENOSPC,
// as a full disk fails a write, at one chosen point of a run (a tmpfs cannot pick the point).
#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int rename(const char* from, const char* to) {
    using Rename = int (*)(const char*, const char*);
    static const Rename real = reinterpret_cast<Rename>(::dlsym(RTLD_NEXT, "rename"));
    static int seen = 0;
    if (const char* spec = std::getenv("NORMNET_FAULT_RENAME")) {
        const char* colon = std::strchr(spec, ':');
        const std::string name(spec, colon ? static_cast<size_t>(colon - spec) : std::strlen(spec));
        const char* slash = std::strrchr(to, '/');
        if (name == (slash ? slash + 1 : to) && ++seen == (colon ? std::atoi(colon + 1) : 1)) {
            errno = ENOSPC;
            return -1;
        }
    }
    return real(from, to);
}
