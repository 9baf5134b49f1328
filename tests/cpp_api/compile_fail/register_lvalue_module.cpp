// Must not compile: register_module with a named module value, which the parent could not share
// (libtorch's register_module("fc", fc) takes a holder: nn::Linear fc, which works).
#include <normnet/normnet.hpp>

struct Net : normnet::Module {
    Net() { register_module("fc", fc); }
    normnet::Linear fc{3, 3};
};

int main() {
    Net net;
    return 0;
}
