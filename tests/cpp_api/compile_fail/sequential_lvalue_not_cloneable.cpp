// Must not compile: a named module is copied with clone(), and Block is not Cloneable.
#include <normnet/normnet.hpp>

struct Block : normnet::Module {};

int main() {
    Block block;
    normnet::Sequential model{block};
    return 0;
}
