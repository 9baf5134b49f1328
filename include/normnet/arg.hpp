// Options fields that read as both C++20 aggregates and libtorch's builders. A field declared
// NORMNET_ARG(T, name) = default; inside an options struct (which names itself `Self`) is a public
// member, so designated initialisers (`SGDOptions{.lr = 0.1, .momentum = 0.9}`), assignment
// (`o.momentum = 0.9`) and reading it as a T (`double m = o.momentum;`) work as on a plain field;
// and it is also libtorch's getter `o.momentum()` and chaining setter `o.momentum(0.9)`, which
// returns the struct, so `SGDOptions(0.1).momentum(0.9).nesterov(true)` reads as in libtorch.
//
// A field of class type (a Tensor, a std::string, a Shape) derives from it, so its members and
// operators apply to the field directly (`o.weight.defined()`, `o.activation == "gelu"`). A field
// that is itself an options struct stays a plain member, so that nested designated initialisers
// (`.encoder_layer = {.d_model = 8}`) keep working: an Arg is not an aggregate.
// Positional construction `SGDOptions(0.1)` is C++20's parenthesised aggregate initialisation
// (GCC 10, clang 16); with older compilers write `SGDOptions{0.1}`.
#pragma once

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace normnet::detail {

/// The stored value of an option: a wrapper converting to T& for scalars and enums.
template <class T>
class ArgStorage {
public:
    ArgStorage() = default;
    ArgStorage(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as a plain field
    operator T&() & { return value_; }                  // NOLINT
    operator const T&() const& { return value_; }      // NOLINT
    operator T() && { return value_; }                  // NOLINT
    T& value() { return value_; }
    const T& value() const { return value_; }

private:
    T value_{};
};

/// For class types: the value itself, as a base.
template <class T>
    requires std::is_class_v<T>
class ArgStorage<T> : public T {
public:
    using T::T;
    ArgStorage() = default;
    ArgStorage(const T& value) : T(value) {}        // NOLINT
    ArgStorage(T&& value) : T(std::move(value)) {}  // NOLINT
    T& value() { return *this; }
    const T& value() const { return *this; }
};

/// A field of options struct Owner; Locate::offset() is its offset in Owner.
template <class Owner, class T, class Locate>
class Arg : public ArgStorage<T> {
public:
    using ArgStorage<T>::ArgStorage;
    Arg() = default;
    Arg(const Arg&) = default;
    Arg(Arg&&) = default;
    Arg& operator=(const Arg&) = default;
    Arg& operator=(Arg&&) = default;
    /// From another options struct's field (LSTMOptions{.input_size = o.row_size}).
    template <class OtherOwner, class U, class OtherLocate>
        requires std::constructible_from<T, const U&>
    Arg(const Arg<OtherOwner, U, OtherLocate>& other) : ArgStorage<T>(T(other.value())) {}  // NOLINT
    template <class V>
        requires std::assignable_from<T&, V&&>
    Arg& operator=(V&& v) {
        this->value() = std::forward<V>(v);
        return *this;
    }
    /// libtorch's getter: o.name().
    const T& operator()() const { return this->value(); }
    T& operator()() { return this->value(); }
    /// libtorch's setter: o.name(v) sets the field and returns the options, to chain the next one.
    template <class V>
        requires std::assignable_from<T&, V&&>
    Owner& operator()(V&& v) {
        this->value() = std::forward<V>(v);
        static_assert(std::is_standard_layout_v<Owner>, "NORMNET_ARG fields need a standard-layout options struct");
        return *reinterpret_cast<Owner*>(reinterpret_cast<char*>(this) - Locate::offset());
    }
};

}  // namespace normnet::detail

/// Declares option `name` of type T in an options struct that declares `using Self = TheStruct;`.
/// A type with a comma in it needs an alias first (using Betas = std::pair<double, double>;).
#define NORMNET_ARG(T, name)                                                          \
    struct name##_field_ {                                                            \
        static constexpr std::size_t offset() { return offsetof(Self, name); }        \
    };                                                                                \
    ::normnet::detail::Arg<Self, T, name##_field_> name
