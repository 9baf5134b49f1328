// NORMNET_API marks the public API: libnormnet is built with hidden visibility, so only what
// carries this mark is exported from the shared library (kernels and engine internals are not).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define NORMNET_API __attribute__((visibility("default")))
#else
#define NORMNET_API
#endif
