// Must not compile: an int is not a module (cpp_api.compile_fail.* checks the static_assert text).
#include <normnet/normnet.hpp>

int main() {
    normnet::Sequential model{normnet::Linear(2, 2), 3};
    return 0;
}
