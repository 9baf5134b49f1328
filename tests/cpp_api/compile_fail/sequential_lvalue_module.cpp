// Must not compile: a named module value is neither copied silently nor shared (no shared_ptr
// holds it); std::move, a holder, a shared_ptr or clone() say which is meant.
#include <normnet/normnet.hpp>

int main() {
    normnet::Linear fc(3, 3);
    normnet::Sequential model{fc};
    return 0;
}
