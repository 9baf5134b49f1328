// The op table's rows (see op_table.hpp): for each op, its normnet call on a sample's inputs and
// arguments (named as gen_optable.py names them), its other public spellings, its settings and
// its known bugs. The samples, the PyTorch calls and torch's answers come from the golden files.
#include "op_table.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace normnet::test {
namespace {

using In = const std::vector<Tensor>&;
using A = const Args&;

// ---- what known bugs match --------------------------------------------------------------------------

bool has_nan(const Sample& s) {
    return s.inputs.at(0).dtype() == kFloat32 && sum(isnan(s.inputs[0])).item<int64_t>() > 0;
}

const KnownBug kVarScalar{
    .what = "var of a 0-d tensor with correction 1 has a NaN gradient, as var of a [1] tensor (torch 1.13: dy * inf "
            "for the 0-d one, NaN for the [1] one)",
    .matches = [](const Sample& s) {
        return s.torch_grads && s.shapes.at(0).size() == 0 && s.arg("correction").get<double>() == 1.0;
    },
    .gradients_only = true,
    .deliberate = true};
const KnownBug kNanMaxGrad{
    .what = "the gradient of a NaN maximum or minimum goes to the NaN elements (torch 1.13: NaN to every element "
            "of the reduced slice)",
    .matches = has_nan,
    .gradients_only = true,
    .deliberate = true};
const KnownBug kNormNanGrad{
    .what = "norm's gradient is 0 at zeros and, where the norm is inf or NaN, at finite elements (torch 1.13: NaN, "
            "from 0 * inf)",
    .matches = [](const Sample& s) { return s.kind == "special"; },
    .gradients_only = true,
    .deliberate = true};
const KnownBug kHardswishAt3{
    .what = "hardswish's gradient at exactly 3 is dy, as torch 1.13's vectorised kernel (its scalar one, which "
            "takes the tail and strided inputs, gives 3/2 dy)",
    .matches = [](const Sample& s) { return s.kind == "special" && sum(eq(s.inputs.at(0), 3.0)).item<int64_t>() > 0; },
    .gradients_only = true,
    .deliberate = true};
const KnownBug kCumprodInfGrad{
    .what = "cumprod's gradient at or before an infinite element is the sum of products of the others (torch 1.13 "
            "divides the products by the element: NaN from inf / inf)",
    .matches = [](const Sample& s) { return s.kind == "special" && sum(isinf(s.inputs.at(0))).item<int64_t>() > 0; },
    .gradients_only = true,
    .deliberate = true};
const KnownBug kInstanceNormEmpty{
    .what = "instance_norm refuses an empty batch with running statistics (torch 1.13 sets them to NaN, in eval too)",
    .matches = [](const Sample& s) { return s.shapes.at(0).numel() == 0 && s.arg("running").get<bool>(); },
    .deliberate = true};
const KnownBug kLossBroadcast{
    .what = "the elementwise losses refuse a target of another shape (torch broadcasts it, warning that the "
            "result is likely wrong)",
    .matches = [](const Sample& s) { return !(s.shapes.at(0) == s.shapes.at(1)); },
    .deliberate = true};

// ---- pointwise: elementwise.cpp, unary.cpp, activation.cpp, compare.cpp -------------------------

// A unary op and its method: f(x), x.m().
template <class F, class M>
OpRow unary(const std::string& name, F f, M m) {
    return {.name = name, .api = name, .call = call([f](In in, A) { return f(in[0]); }),
            .also = {{"Tensor::" + name, call([m](In in, A) { return m(in[0]); })}}};
}

// A comparison as a function, its operator and its method.
OpRow comparison(const std::string& name, const std::string& symbol, Tensor (*f)(const Tensor&, const Tensor&),
                 Tensor (*op)(const Tensor&, const Tensor&), Tensor (Tensor::*m)(const Tensor&) const) {
    return {.name = name, .api = name, .call = call([f](In in, A) { return f(in[0], in[1]); }),
            .also = {{"operator" + symbol, call([op](In in, A) { return op(in[0], in[1]); })},
                     {"Tensor::" + name, call([m](In in, A) { return (in[0].*m)(in[1]); })}},
            .gradcheck = false};
}
// With a number: x < s also as the mirrored operator s > x.
OpRow comparison_scalar(const std::string& name, const std::string& symbol, const std::string& mirror,
                        Tensor (*f)(const Tensor&, double), Tensor (*op)(const Tensor&, double),
                        Tensor (*mirrored)(double, const Tensor&), Tensor (Tensor::*m)(double) const) {
    return {.name = name + "_scalar", .api = name,
            .call = call([f](In in, A a) { return f(in[0], a.num("s")); }),
            .also = {{"operator" + symbol + "(Tensor, double)",
                      call([op](In in, A a) { return op(in[0], a.num("s")); })},
                     {"operator" + mirror + "(double, Tensor)",
                      call([mirrored](In in, A a) { return mirrored(a.num("s"), in[0]); })},
                     {"Tensor::" + name + "(double)", call([m](In in, A a) { return (in[0].*m)(a.num("s")); })}},
            .gradcheck = false};
}

// An in-place update of a copy of in[0], as a user writes it on a non-leaf.
template <class F>
Call on_copy(F f) {
    return call([f](In in, A a) {
        Tensor h = in[0].clone();
        f(h, in, a);
        return h;
    });
}

std::vector<OpRow> pointwise_rows() {
    std::vector<OpRow> rows = {
        {.name = "add", .api = "add", .call = call([](In in, A) { return add(in[0], in[1]); }),
         .also = {{"operator+", call([](In in, A) { return in[0] + in[1]; })},
                  {"Tensor::add", call([](In in, A) { return in[0].add(in[1]); })}}},
        {.name = "sub", .api = "sub", .call = call([](In in, A) { return sub(in[0], in[1]); }),
         .also = {{"operator-", call([](In in, A) { return in[0] - in[1]; })},
                  {"Tensor::sub", call([](In in, A) { return in[0].sub(in[1]); })}}},
        {.name = "mul", .api = "mul", .call = call([](In in, A) { return mul(in[0], in[1]); }),
         .also = {{"operator*", call([](In in, A) { return in[0] * in[1]; })},
                  {"Tensor::mul", call([](In in, A) { return in[0].mul(in[1]); })}}},
        {.name = "div", .api = "div", .call = call([](In in, A) { return div(in[0], in[1]); }),
         .also = {{"operator/", call([](In in, A) { return in[0] / in[1]; })},
                  {"Tensor::div", call([](In in, A) { return in[0].div(in[1]); })}}},
        {.name = "pow", .api = "pow", .call = call([](In in, A) { return pow(in[0], in[1]); }),
         .also = {{"Tensor::pow", call([](In in, A) { return in[0].pow(in[1]); })}}},
        {.name = "maximum", .api = "maximum", .call = call([](In in, A) { return maximum(in[0], in[1]); }),
         .also = {{"Tensor::maximum", call([](In in, A) { return in[0].maximum(in[1]); })}}},
        {.name = "minimum", .api = "minimum", .call = call([](In in, A) { return minimum(in[0], in[1]); }),
         .also = {{"Tensor::minimum", call([](In in, A) { return in[0].minimum(in[1]); })}}},
        // The remainders jump where a / b crosses an integer: a numeric gradient across a jump is not
        // the derivative, so their gradients are checked against torch's only.
        {.name = "remainder", .api = "remainder", .call = call([](In in, A) { return remainder(in[0], in[1]); }),
         .gradcheck = false},
        {.name = "fmod", .api = "fmod", .call = call([](In in, A) { return fmod(in[0], in[1]); }), .gradcheck = false},
        {.name = "add_alpha", .api = "add", .call = call([](In in, A a) { return add(in[0], in[1], a.f("alpha")); }),
         .also = {{"Tensor::add", call([](In in, A a) { return in[0].add(in[1], a.f("alpha")); })}}},
        {.name = "sub_alpha", .api = "sub", .call = call([](In in, A a) { return sub(in[0], in[1], a.f("alpha")); }),
         .also = {{"Tensor::sub", call([](In in, A a) { return in[0].sub(in[1], a.f("alpha")); })}}},
        // Scalar forms.
        {.name = "add_scalar", .api = "add",
         .call = call([](In in, A a) { return add(in[0], a.f("s"), a.f("alpha")); }),
         .also = {{"operator+(Tensor, float)",
                   call([](In in, A a) { return a.f("alpha") == 1.0f ? Outputs{in[0] + a.f("s")} : Outputs{}; })},
                  {"operator+(float, Tensor)",
                   call([](In in, A a) { return a.f("alpha") == 1.0f ? Outputs{a.f("s") + in[0]} : Outputs{}; })},
                  {"Tensor::add(float)", call([](In in, A a) { return in[0].add(a.f("s"), a.f("alpha")); })}}},
        {.name = "sub_scalar", .api = "sub",
         .call = call([](In in, A a) { return sub(in[0], a.f("s"), a.f("alpha")); }),
         .also = {{"operator-(Tensor, float)",
                   call([](In in, A a) { return a.f("alpha") == 1.0f ? Outputs{in[0] - a.f("s")} : Outputs{}; })},
                  {"Tensor::sub(float)", call([](In in, A a) { return in[0].sub(a.f("s"), a.f("alpha")); })}}},
        {.name = "rsub_scalar", .api = "rsub", .call = call([](In in, A a) { return rsub(in[0], a.f("s")); }),
         .also = {{"operator-(float, Tensor)", call([](In in, A a) { return a.f("s") - in[0]; })}}},
        {.name = "mul_scalar", .api = "mul", .call = call([](In in, A a) { return mul(in[0], a.f("s")); }),
         .also = {{"operator*(Tensor, float)", call([](In in, A a) { return in[0] * a.f("s"); })},
                  {"operator*(float, Tensor)", call([](In in, A a) { return a.f("s") * in[0]; })},
                  {"Tensor::mul(float)", call([](In in, A a) { return in[0].mul(a.f("s")); })}}},
        {.name = "div_scalar", .api = "div", .call = call([](In in, A a) { return div(in[0], a.f("s")); }),
         .also = {{"operator/(Tensor, float)", call([](In in, A a) { return in[0] / a.f("s"); })},
                  {"Tensor::div(float)", call([](In in, A a) { return in[0].div(a.f("s")); })}}},
        {.name = "rdiv_scalar", .api = "div", .call = call([](In in, A a) { return div(a.f("s"), in[0]); }),
         .also = {{"operator/(float, Tensor)", call([](In in, A a) { return a.f("s") / in[0]; })}}},
        {.name = "pow_base", .api = "pow", .call = call([](In in, A a) { return pow(a.f("s"), in[0]); })},
        {.name = "pow_base_zero", .api = "pow", .call = call([](In in, A a) { return pow(a.f("s"), in[0]); })},
        {.name = "pow_scalar", .api = "pow", .call = call([](In in, A a) { return pow(in[0], a.f("e")); }),
         .also = {{"Tensor::pow(float)", call([](In in, A a) { return in[0].pow(a.f("e")); })}}},
        {.name = "pow_scalar_signed", .api = "pow", .call = call([](In in, A a) { return pow(in[0], a.f("e")); })},
        // Unary math and activations.
        {.name = "neg", .api = "neg", .call = call([](In in, A) { return neg(in[0]); }),
         .also = {{"operator-(Tensor)", call([](In in, A) { return -in[0]; })},
                  {"Tensor::neg", call([](In in, A) { return in[0].neg(); })}}},
        unary("exp", [](const Tensor& x) { return exp(x); }, [](const Tensor& x) { return x.exp(); }),
        unary("expm1", [](const Tensor& x) { return expm1(x); }, [](const Tensor& x) { return x.expm1(); }),
        unary("log", [](const Tensor& x) { return log(x); }, [](const Tensor& x) { return x.log(); }),
        unary("log1p", [](const Tensor& x) { return log1p(x); }, [](const Tensor& x) { return x.log1p(); }),
        unary("sqrt", [](const Tensor& x) { return sqrt(x); }, [](const Tensor& x) { return x.sqrt(); }),
        unary("rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](const Tensor& x) { return x.rsqrt(); }),
        unary("reciprocal", [](const Tensor& x) { return reciprocal(x); },
              [](const Tensor& x) { return x.reciprocal(); }),
        unary("abs", [](const Tensor& x) { return abs(x); }, [](const Tensor& x) { return x.abs(); }),
        unary("square", [](const Tensor& x) { return square(x); }, [](const Tensor& x) { return x.square(); }),
        unary("sign", [](const Tensor& x) { return sign(x); }, [](const Tensor& x) { return x.sign(); }),
        unary("erf", [](const Tensor& x) { return erf(x); }, [](const Tensor& x) { return x.erf(); }),
        unary("relu", [](const Tensor& x) { return relu(x); }, [](const Tensor& x) { return x.relu(); }),
        unary("tanh", [](const Tensor& x) { return tanh(x); }, [](const Tensor& x) { return x.tanh(); }),
        unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](const Tensor& x) { return x.sigmoid(); }),
        {.name = "silu", .api = "silu", .call = call([](In in, A) { return silu(in[0]); })},
        {.name = "clamp", .api = "clamp",
         .call = call([](In in, A a) { return clamp(in[0], a.f("min"), a.f("max")); }),
         .also = {{"Tensor::clamp", call([](In in, A a) { return in[0].clamp(a.f("min"), a.f("max")); })}}},
        {.name = "clamp_min", .api = "clamp_min", .call = call([](In in, A a) { return clamp_min(in[0], a.f("min")); }),
         .also = {{"Tensor::clamp_min", call([](In in, A a) { return in[0].clamp_min(a.f("min")); })},
                  {"clamp(x, min)", call([](In in, A a) { return clamp(in[0], a.f("min")); })}}},
        {.name = "clamp_max", .api = "clamp_max", .call = call([](In in, A a) { return clamp_max(in[0], a.f("max")); }),
         .also = {{"Tensor::clamp_max", call([](In in, A a) { return in[0].clamp_max(a.f("max")); })},
                  {"clamp(x, none, max)", call([](In in, A a) { return clamp(in[0], std::nullopt, a.f("max")); })}}},
        {.name = "leaky_relu", .api = "leaky_relu",
         .call = call([](In in, A a) { return leaky_relu(in[0], a.f("slope")); })},
        {.name = "elu", .api = "elu", .call = call([](In in, A a) { return elu(in[0], a.f("alpha")); })},
        {.name = "gelu", .api = "gelu", .call = call([](In in, A a) { return gelu(in[0], a.s("approximate")); })},
        {.name = "softplus", .api = "softplus",
         .call = call([](In in, A a) { return softplus(in[0], a.f("beta"), a.f("threshold")); })},
        {.name = "softmax", .api = "softmax",
         .call = call([](In in, A a) { return softmax(in[0], static_cast<int>(a.i("dim"))); }),
         .also = {{"Tensor::softmax", call([](In in, A a) { return in[0].softmax(static_cast<int>(a.i("dim"))); })}}},
        {.name = "log_softmax", .api = "log_softmax",
         .call = call([](In in, A a) { return log_softmax(in[0], static_cast<int>(a.i("dim"))); }),
         .also = {{"Tensor::log_softmax",
                   call([](In in, A a) { return in[0].log_softmax(static_cast<int>(a.i("dim"))); })}}},
        {.name = "hardtanh", .api = "hardtanh",
         .call = call([](In in, A a) { return hardtanh(in[0], a.f("min_val"), a.f("max_val")); })},
        {.name = "relu6", .api = "relu6", .call = call([](In in, A) { return relu6(in[0]); })},
        {.name = "selu", .api = "selu", .call = call([](In in, A) { return selu(in[0]); })},
        {.name = "mish", .api = "mish", .call = call([](In in, A) { return mish(in[0]); })},
        {.name = "hardswish", .api = "hardswish", .call = call([](In in, A) { return hardswish(in[0]); }),
         .known_bugs = {kHardswishAt3}},
        {.name = "prelu", .api = "prelu", .call = call([](In in, A) { return prelu(in[0], in[1]); })},
        // Comparisons and selection.
        comparison("eq", "==", eq, operator==, &Tensor::eq),
        comparison("ne", "!=", ne, operator!=, &Tensor::ne),
        comparison("lt", "<", lt, operator<, &Tensor::lt),
        comparison("le", "<=", le, operator<=, &Tensor::le),
        comparison("gt", ">", gt, operator>, &Tensor::gt),
        comparison("ge", ">=", ge, operator>=, &Tensor::ge),
        comparison_scalar("eq", "==", "==", eq, operator==, operator==, &Tensor::eq),
        comparison_scalar("ne", "!=", "!=", ne, operator!=, operator!=, &Tensor::ne),
        comparison_scalar("lt", "<", ">", lt, operator<, operator>, &Tensor::lt),
        comparison_scalar("le", "<=", ">=", le, operator<=, operator>=, &Tensor::le),
        comparison_scalar("gt", ">", "<", gt, operator>, operator<, &Tensor::gt),
        comparison_scalar("ge", ">=", "<=", ge, operator>=, operator<=, &Tensor::ge),
        {.name = "isnan", .api = "isnan", .call = call([](In in, A) { return isnan(in[0]); }),
         .also = {{"Tensor::isnan", call([](In in, A) { return in[0].isnan(); })}}},
        {.name = "isinf", .api = "isinf", .call = call([](In in, A) { return isinf(in[0]); }),
         .also = {{"Tensor::isinf", call([](In in, A) { return in[0].isinf(); })}}},
        {.name = "isfinite", .api = "isfinite", .call = call([](In in, A) { return isfinite(in[0]); }),
         .also = {{"Tensor::isfinite", call([](In in, A) { return in[0].isfinite(); })}}},
        {.name = "logical_not", .api = "logical_not", .call = call([](In in, A) { return logical_not(in[0]); }),
         .also = {{"Tensor::logical_not", call([](In in, A) { return in[0].logical_not(); })}}},
        {.name = "logical_and", .api = "logical_and",
         .call = call([](In in, A) { return logical_and(in[0], in[1]); }),
         .also = {{"Tensor::logical_and", call([](In in, A) { return in[0].logical_and(in[1]); })}}},
        {.name = "logical_or", .api = "logical_or", .call = call([](In in, A) { return logical_or(in[0], in[1]); }),
         .also = {{"Tensor::logical_or", call([](In in, A) { return in[0].logical_or(in[1]); })}}},
        {.name = "logical_xor", .api = "logical_xor",
         .call = call([](In in, A) { return logical_xor(in[0], in[1]); }),
         .also = {{"Tensor::logical_xor", call([](In in, A) { return in[0].logical_xor(in[1]); })}}},
        {.name = "bitwise_not", .api = "operator~", .call = call([](In in, A) { return ~in[0]; })},
        {.name = "bitwise_and", .api = "operator&", .call = call([](In in, A) { return in[0] & in[1]; })},
        {.name = "bitwise_or", .api = "operator|", .call = call([](In in, A) { return in[0] | in[1]; })},
        {.name = "bitwise_xor", .api = "operator^", .call = call([](In in, A) { return in[0] ^ in[1]; })},
        {.name = "where", .api = "where", .call = call([](In in, A) { return where(in[0], in[1], in[2]); }),
         .also = {{"Tensor::where", call([](In in, A) { return in[1].where(in[0], in[2]); })}}},
        {.name = "where_scalar_b", .api = "where",
         .call = call([](In in, A a) { return where(in[0], in[1], a.num("s")); })},
        {.name = "where_scalar_a", .api = "where",
         .call = call([](In in, A a) { return where(in[0], a.num("s"), in[1]); })},
        {.name = "masked_fill", .api = "masked_fill",
         .call = call([](In in, A a) { return masked_fill(in[0], in[1], a.num("value")); }),
         .also = {{"Tensor::masked_fill", call([](In in, A a) { return in[0].masked_fill(in[1], a.num("value")); })}}},
        // In-place updates of a copy.
        {.name = "add_", .api = "Tensor::add_",
         .call = on_copy([](Tensor& h, In in, A a) { h.add_(in[1], a.f("alpha")); }),
         .also = {{"Tensor::operator+=", call([](In in, A a) {
                       if (a.f("alpha") != 1.0f) return Outputs{};
                       Tensor h = in[0].clone();
                       h += in[1];
                       return Outputs{h};
                   })}}},
        {.name = "sub_", .api = "Tensor::sub_",
         .call = on_copy([](Tensor& h, In in, A a) { h.sub_(in[1], a.f("alpha")); }),
         .also = {{"Tensor::operator-=", call([](In in, A a) {
                       if (a.f("alpha") != 1.0f) return Outputs{};
                       Tensor h = in[0].clone();
                       h -= in[1];
                       return Outputs{h};
                   })}}},
        {.name = "mul_", .api = "Tensor::mul_", .call = on_copy([](Tensor& h, In in, A) { h.mul_(in[1]); }),
         .also = {{"Tensor::operator*=", on_copy([](Tensor& h, In in, A) { h *= in[1]; })}}},
        {.name = "div_", .api = "Tensor::div_", .call = on_copy([](Tensor& h, In in, A) { h.div_(in[1]); }),
         .also = {{"Tensor::operator/=", on_copy([](Tensor& h, In in, A) { h /= in[1]; })}}},
        {.name = "add_scalar_", .api = "Tensor::add_",
         .call = on_copy([](Tensor& h, In, A a) { h.add_(a.f("s"), a.f("alpha")); }),
         .also = {{"Tensor::operator+=(float)", call([](In in, A a) {
                       if (a.f("alpha") != 1.0f) return Outputs{};
                       Tensor h = in[0].clone();
                       h += a.f("s");
                       return Outputs{h};
                   })}}},
        {.name = "sub_scalar_", .api = "Tensor::sub_",
         .call = on_copy([](Tensor& h, In, A a) { h.sub_(a.f("s"), a.f("alpha")); }),
         .also = {{"Tensor::operator-=(float)", on_copy([](Tensor& h, In, A a) { h -= a.f("s"); })}}},
        {.name = "mul_scalar_", .api = "Tensor::mul_", .call = on_copy([](Tensor& h, In, A a) { h.mul_(a.f("s")); }),
         .also = {{"Tensor::operator*=(float)", on_copy([](Tensor& h, In, A a) { h *= a.f("s"); })}}},
        {.name = "div_scalar_", .api = "Tensor::div_", .call = on_copy([](Tensor& h, In, A a) { h.div_(a.f("s")); }),
         .also = {{"Tensor::operator/=(float)", on_copy([](Tensor& h, In, A a) { h /= a.f("s"); })}}},
        {.name = "masked_fill_", .api = "Tensor::masked_fill_",
         .call = on_copy([](Tensor& h, In in, A a) { h.masked_fill_(in[1], a.num("value")); })},
        {.name = "fill_", .api = "Tensor::fill_", .call = on_copy([](Tensor& h, In, A a) { h.fill_(a.num("value")); })},
        {.name = "zero_", .api = "Tensor::zero_", .call = on_copy([](Tensor& h, In, A) { h.zero_(); })},
        {.name = "copy_", .api = "Tensor::copy_", .call = on_copy([](Tensor& h, In in, A) { h.copy_(in[1]); })},
    };
    return rows;
}

// ---- reduce: reduce.cpp, minmax.cpp, sort.cpp ---------------------------------------------------

// var and std's bool overloads (torch's unbiased) where the correction is 0 or 1.
template <class F>
Call unbiased_form(F f) {
    return call([f](In in, A a) {
        const double c = a.num("correction");
        if (c != 0.0 && c != 1.0) return Outputs{};
        return Outputs{f(in[0], a.dims(), c == 1.0, a.b("keepdim"))};
    });
}

std::vector<OpRow> reduce_rows() {
    return {
        {.name = "sum_all", .api = "sum", .call = call([](In in, A) { return sum(in[0]); }),
         .also = {{"Tensor::sum", call([](In in, A) { return in[0].sum(); })}}},
        {.name = "mean_all", .api = "mean", .call = call([](In in, A) { return mean(in[0]); }),
         .also = {{"Tensor::mean", call([](In in, A) { return in[0].mean(); })}}},
        {.name = "sum", .api = "sum", .call = call([](In in, A a) { return sum(in[0], a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::sum(dims)", call([](In in, A a) { return in[0].sum(a.dims(), a.b("keepdim")); })}}},
        {.name = "sum_int", .api = "sum", .call = call([](In in, A a) { return sum(in[0], a.dims(), a.b("keepdim")); })},
        {.name = "mean", .api = "mean", .call = call([](In in, A a) { return mean(in[0], a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::mean(dims)", call([](In in, A a) { return in[0].mean(a.dims(), a.b("keepdim")); })}}},
        {.name = "var", .api = "var",
         .call = call([](In in, A a) { return var(in[0], a.dims(), a.num("correction"), a.b("keepdim")); }),
         .also = {{"Tensor::var",
                   call([](In in, A a) { return in[0].var(a.dims(), a.num("correction"), a.b("keepdim")); })},
                  {"var(x, dims, unbiased)", unbiased_form([](const Tensor& x, const Shape& d, bool u, bool k) {
                       return var(x, d, u, k);
                   })},
                  {"Tensor::var(dims, unbiased)", unbiased_form([](const Tensor& x, const Shape& d, bool u, bool k) {
                       return x.var(d, u, k);
                   })}},
         .known_bugs = {kVarScalar}},
        {.name = "std", .api = "std",
         .call = call([](In in, A a) { return std(in[0], a.dims(), a.num("correction"), a.b("keepdim")); }),
         .also = {{"Tensor::std",
                   call([](In in, A a) { return in[0].std(a.dims(), a.num("correction"), a.b("keepdim")); })},
                  {"std(x, dims, unbiased)", unbiased_form([](const Tensor& x, const Shape& d, bool u, bool k) {
                       return std(x, d, u, k);
                   })}}},
        {.name = "logsumexp", .api = "logsumexp",
         .call = call([](In in, A a) { return logsumexp(in[0], a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::logsumexp", call([](In in, A a) { return in[0].logsumexp(a.dims(), a.b("keepdim")); })}}},
        {.name = "norm", .api = "norm",
         .call = call([](In in, A a) { return norm(in[0], a.num("p"), a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::norm", call([](In in, A a) { return in[0].norm(a.num("p"), a.dims(), a.b("keepdim")); })}},
         .known_bugs = {kNormNanGrad}},
        {.name = "norm_zero", .api = "norm",
         .call = call([](In in, A a) { return norm(in[0], a.num("p"), a.dims(), a.b("keepdim")); })},
        {.name = "norm_fro", .api = "norm",
         .call = call([](In in, A a) { return norm(in[0], "fro", a.dims(), a.b("keepdim")); })},
        {.name = "amax", .api = "amax", .call = call([](In in, A a) { return amax(in[0], a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::amax", call([](In in, A a) { return in[0].amax(a.dims(), a.b("keepdim")); })}},
         .known_bugs = {kNanMaxGrad}},
        {.name = "amin", .api = "amin", .call = call([](In in, A a) { return amin(in[0], a.dims(), a.b("keepdim")); }),
         .also = {{"Tensor::amin", call([](In in, A a) { return in[0].amin(a.dims(), a.b("keepdim")); })}},
         .known_bugs = {kNanMaxGrad}},
        {.name = "max_all", .api = "max", .call = call([](In in, A) { return max(in[0]); }),
         .also = {{"Tensor::max", call([](In in, A) { return in[0].max(); })}}},
        {.name = "min_all", .api = "min", .call = call([](In in, A) { return min(in[0]); }),
         .also = {{"Tensor::min", call([](In in, A) { return in[0].min(); })}}},
        {.name = "max_dim", .api = "max", .call = call([](In in, A a) { return max(in[0], a.i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::max(dim)", call([](In in, A a) { return in[0].max(a.i("dim"), a.b("keepdim")); })}}},
        {.name = "min_dim", .api = "min", .call = call([](In in, A a) { return min(in[0], a.i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::min(dim)", call([](In in, A a) { return in[0].min(a.i("dim"), a.b("keepdim")); })}}},
        {.name = "argmax", .api = "argmax",
         .call = call([](In in, A a) { return argmax(in[0], a.opt_i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::argmax", call([](In in, A a) { return in[0].argmax(a.opt_i("dim"), a.b("keepdim")); })}}},
        {.name = "argmin", .api = "argmin",
         .call = call([](In in, A a) { return argmin(in[0], a.opt_i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::argmin", call([](In in, A a) { return in[0].argmin(a.opt_i("dim"), a.b("keepdim")); })}}},
        {.name = "topk", .api = "topk",
         .call = call([](In in, A a) { return topk(in[0], a.i("k"), a.i("dim"), a.b("largest"), a.b("sorted")); }),
         .also = {{"Tensor::topk",
                   call([](In in, A a) { return in[0].topk(a.i("k"), a.i("dim"), a.b("largest"), a.b("sorted")); })}},
         .tie_indices = 1},
        {.name = "cumsum", .api = "cumsum", .call = call([](In in, A a) { return cumsum(in[0], a.i("dim")); }),
         .also = {{"Tensor::cumsum", call([](In in, A a) { return in[0].cumsum(a.i("dim")); })}}},
        {.name = "cumsum_int", .api = "cumsum", .call = call([](In in, A a) { return cumsum(in[0], a.i("dim")); })},
        {.name = "prod_all", .api = "prod", .call = call([](In in, A) { return prod(in[0]); }),
         .also = {{"Tensor::prod", call([](In in, A) { return in[0].prod(); })}}},
        {.name = "prod", .api = "prod", .call = call([](In in, A a) { return prod(in[0], a.i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::prod(dim)", call([](In in, A a) { return in[0].prod(a.i("dim"), a.b("keepdim")); })}}},
        {.name = "prod_zeros", .api = "prod",
         .call = call([](In in, A a) { return prod(in[0], a.i("dim"), a.b("keepdim")); })},
        {.name = "prod_int", .api = "prod", .call = call([](In in, A a) { return prod(in[0], a.i("dim")); })},
        {.name = "cumprod", .api = "cumprod", .call = call([](In in, A a) { return cumprod(in[0], a.i("dim")); }),
         .also = {{"Tensor::cumprod", call([](In in, A a) { return in[0].cumprod(a.i("dim")); })}},
         .known_bugs = {kCumprodInfGrad}},
        {.name = "cumprod_zeros", .api = "cumprod", .call = call([](In in, A a) { return cumprod(in[0], a.i("dim")); })},
        {.name = "cumprod_int", .api = "cumprod", .call = call([](In in, A a) { return cumprod(in[0], a.i("dim")); })},
        {.name = "sort", .api = "sort", .call = call([](In in, A a) { return sort(in[0], a.i("dim"), a.b("descending")); }),
         .also = {{"Tensor::sort", call([](In in, A a) { return in[0].sort(a.i("dim"), a.b("descending")); })}},
         .tie_indices = 1},
        {.name = "argsort", .api = "argsort",
         .call = call([](In in, A a) { return argsort(in[0], a.i("dim"), a.b("descending")); }),
         .also = {{"Tensor::argsort", call([](In in, A a) { return in[0].argsort(a.i("dim"), a.b("descending")); })}},
         .tie_indices = 0},
        {.name = "all_all", .api = "all", .call = call([](In in, A) { return all(in[0]); }),
         .also = {{"Tensor::all", call([](In in, A) { return in[0].all(); })}}},
        {.name = "all", .api = "all", .call = call([](In in, A a) { return all(in[0], a.i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::all(dim)", call([](In in, A a) { return in[0].all(a.i("dim"), a.b("keepdim")); })}}},
        {.name = "any_all", .api = "any", .call = call([](In in, A) { return any(in[0]); }),
         .also = {{"Tensor::any", call([](In in, A) { return in[0].any(); })}}},
        {.name = "any", .api = "any", .call = call([](In in, A a) { return any(in[0], a.i("dim"), a.b("keepdim")); }),
         .also = {{"Tensor::any(dim)", call([](In in, A a) { return in[0].any(a.i("dim"), a.b("keepdim")); })}}},
    };
}

// ---- shape: shape.cpp, index.cpp and the Tensor methods that view or copy -----------------------

Dtype dtype_named(const std::string& name) {
    return name == "float32" ? kFloat32 : name == "int64" ? kInt64 : kBool;
}

std::optional<int64_t> opt(A a, const char* name) { return a.opt_i(name); }

std::vector<OpRow> shape_rows() {
    const auto i = [](A a, const char* name) { return static_cast<int>(a.i(name)); };
    return {
        {.name = "reshape", .api = "reshape", .call = call([](In in, A a) { return reshape(in[0], a.dims("shape")); }),
         .also = {{"Tensor::reshape", call([](In in, A a) { return in[0].reshape(a.dims("shape")); })}}},
        {.name = "view", .api = "Tensor::view", .call = call([](In in, A a) { return in[0].view(a.dims("shape")); })},
        {.name = "flatten", .api = "flatten",
         .call = call([](In in, A a) { return flatten(in[0], a.i("start"), a.i("end")); }),
         .also = {{"Tensor::flatten", call([i](In in, A a) { return in[0].flatten(i(a, "start"), i(a, "end")); })}}},
        {.name = "unflatten", .api = "unflatten",
         .call = call([](In in, A a) { return unflatten(in[0], a.i("dim"), a.dims("sizes")); }),
         .also = {{"Tensor::unflatten", call([](In in, A a) { return in[0].unflatten(a.i("dim"), a.dims("sizes")); })}}},
        {.name = "transpose", .api = "transpose",
         .call = call([](In in, A a) { return transpose(in[0], a.i("dim0"), a.i("dim1")); }),
         .also = {{"Tensor::transpose", call([i](In in, A a) { return in[0].transpose(i(a, "dim0"), i(a, "dim1")); })}}},
        {.name = "t", .api = "Tensor::t", .call = call([](In in, A) { return in[0].t(); })},
        {.name = "permute", .api = "permute", .call = call([](In in, A a) { return permute(in[0], a.dims()); }),
         .also = {{"Tensor::permute", call([](In in, A a) { return in[0].permute(a.dims()); })}}},
        {.name = "unsqueeze", .api = "unsqueeze", .call = call([](In in, A a) { return unsqueeze(in[0], a.i("dim")); }),
         .also = {{"Tensor::unsqueeze", call([](In in, A a) { return in[0].unsqueeze(a.i("dim")); })}}},
        {.name = "squeeze_all", .api = "squeeze", .call = call([](In in, A) { return squeeze(in[0]); }),
         .also = {{"Tensor::squeeze", call([](In in, A) { return in[0].squeeze(); })}}},
        {.name = "squeeze", .api = "squeeze", .call = call([](In in, A a) { return squeeze(in[0], a.i("dim")); }),
         .also = {{"Tensor::squeeze(dim)", call([](In in, A a) { return in[0].squeeze(a.i("dim")); })}}},
        {.name = "narrow", .api = "narrow",
         .call = call([](In in, A a) { return narrow(in[0], a.i("dim"), a.i("start"), a.i("length")); }),
         .also = {{"Tensor::narrow",
                   call([i](In in, A a) { return in[0].narrow(i(a, "dim"), a.i("start"), a.i("length")); })}}},
        {.name = "select", .api = "select", .call = call([](In in, A a) { return select(in[0], a.i("dim"), a.i("index")); }),
         .also = {{"Tensor::select", call([i](In in, A a) { return in[0].select(i(a, "dim"), a.i("index")); })},
                  {"Tensor::operator[]",
                   call([](In in, A a) { return a.i("dim") == 0 ? Outputs{in[0][a.i("index")]} : Outputs{}; })}}},
        {.name = "slice", .api = "Tensor::slice",
         .call = call([](In in, A a) { return in[0].slice(a.i("dim"), opt(a, "start"), opt(a, "end"), a.i("step")); })},
        {.name = "expand", .api = "Tensor::expand", .call = call([](In in, A a) { return in[0].expand(a.dims("sizes")); })},
        {.name = "expand_as", .api = "Tensor::expand_as", .call = call([](In in, A) { return in[0].expand_as(in[1]); })},
        {.name = "split", .api = "split", .call = call([](In in, A a) { return split(in[0], a.i("size"), a.i("dim")); }),
         .also = {{"Tensor::split", call([](In in, A a) { return in[0].split(a.i("size"), a.i("dim")); })}}},
        {.name = "split_with_sizes", .api = "split_with_sizes",
         .call = call([](In in, A a) {
             return split_with_sizes(in[0], a.json().at("sizes").get<std::vector<int64_t>>(), a.i("dim"));
         }),
         .also = {{"Tensor::split_with_sizes", call([](In in, A a) {
                       return in[0].split_with_sizes(a.json().at("sizes").get<std::vector<int64_t>>(), a.i("dim"));
                   })}}},
        {.name = "chunk", .api = "chunk", .call = call([](In in, A a) { return chunk(in[0], a.i("chunks"), a.i("dim")); }),
         .also = {{"Tensor::chunk", call([](In in, A a) { return in[0].chunk(a.i("chunks"), a.i("dim")); })}}},
        {.name = "unbind", .api = "unbind", .call = call([](In in, A a) { return unbind(in[0], a.i("dim")); }),
         .also = {{"Tensor::unbind", call([](In in, A a) { return in[0].unbind(a.i("dim")); })}}},
        {.name = "repeat", .api = "Tensor::repeat", .call = call([](In in, A a) { return in[0].repeat(a.dims("repeats")); })},
        {.name = "cat", .api = "cat", .call = call([](In in, A a) { return cat(in, a.i("dim")); })},
        {.name = "stack", .api = "stack", .call = call([](In in, A a) { return stack(in, a.i("dim")); })},
        {.name = "contiguous", .api = "Tensor::contiguous", .call = call([](In in, A) { return in[0].contiguous(); })},
        {.name = "clone", .api = "Tensor::clone", .call = call([](In in, A) { return in[0].clone(); })},
        {.name = "detach", .api = "Tensor::detach", .call = call([](In in, A) { return in[0].detach(); })},
        {.name = "to", .api = "Tensor::to", .call = call([](In in, A a) { return in[0].to(dtype_named(a.s("dtype"))); })},
        {.name = "index_select", .api = "index_select",
         .call = call([](In in, A a) { return index_select(in[0], a.i("dim"), in[1]); }),
         .also = {{"Tensor::index_select", call([](In in, A a) { return in[0].index_select(a.i("dim"), in[1]); })}}},
        {.name = "gather", .api = "gather", .call = call([](In in, A a) { return gather(in[0], a.i("dim"), in[1]); }),
         .also = {{"Tensor::gather", call([](In in, A a) { return in[0].gather(a.i("dim"), in[1]); })}}},
        {.name = "scatter_add", .api = "scatter_add",
         .call = call([](In in, A a) { return scatter_add(in[0], a.i("dim"), in[1], in[2]); }),
         .also = {{"Tensor::scatter_add", call([](In in, A a) { return in[0].scatter_add(a.i("dim"), in[1], in[2]); })}}},
        {.name = "embedding", .api = "embedding",
         .call = call([](In in, A a) { return embedding(in[0], in[1], opt(a, "padding_idx")); }),
         .gradcheck_skips = [](const Sample& s) { return !s.arg("padding_idx").is_null(); }},  // its row: no gradient
        {.name = "one_hot", .api = "one_hot", .call = call([](In in, A a) { return one_hot(in[0], a.i("num_classes")); })},
        {.name = "flip", .api = "flip", .call = call([](In in, A a) { return flip(in[0], a.dims()); }),
         .also = {{"Tensor::flip", call([](In in, A a) { return in[0].flip(a.dims()); })}}},
        {.name = "tril", .api = "tril", .call = call([](In in, A a) { return tril(in[0], a.i("diagonal")); }),
         .also = {{"Tensor::tril", call([](In in, A a) { return in[0].tril(a.i("diagonal")); })}}},
        {.name = "triu", .api = "triu", .call = call([](In in, A a) { return triu(in[0], a.i("diagonal")); }),
         .also = {{"Tensor::triu", call([](In in, A a) { return in[0].triu(a.i("diagonal")); })}}},
        {.name = "pad", .api = "pad", .call = call([](In in, A a) {
             return pad(in[0], a.json().at("pad").get<std::vector<int64_t>>(), a.s("mode"), a.num("value"));
         }),
         .also = {{"pad(x, PadFuncOptions)", call([](In in, A a) {
             return pad(in[0], PadFuncOptions{.pad = a.json().at("pad").get<std::vector<int64_t>>(), .mode = a.s("mode"),
                                              .value = a.num("value")});
         })}}},
    };
}

// ---- linear: linear.cpp, feed_forward.cpp -------------------------------------------------------

std::vector<OpRow> linear_rows() {
    return {
        {.name = "matmul", .api = "matmul", .call = call([](In in, A) { return matmul(in[0], in[1]); }),
         .also = {{"Tensor::matmul", call([](In in, A) { return in[0].matmul(in[1]); })}}},
        {.name = "mm", .api = "mm", .call = call([](In in, A) { return mm(in[0], in[1]); })},
        {.name = "bmm", .api = "bmm", .call = call([](In in, A) { return bmm(in[0], in[1]); })},
        {.name = "linear", .api = "linear",
         .call = call([](In in, A) { return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor()); })},
        {.name = "feed_forward", .api = "feed_forward", .call = call([](In in, A a) {
             return feed_forward(in[0], in[1], in[2], in[3], in[4], a.s("activation"), a.b("recompute_hidden"));
         })},
        {.name = "einsum", .api = "einsum", .call = call([](In in, A a) { return einsum(a.s("equation"), in); })},
    };
}

// ---- nn: norm.cpp, conv.cpp, pooling.cpp, loss.cpp, attention.cpp, rnn.cpp, dropout.cpp ----------

// A size argument: one number, a pair, or null (not given).
Size2 size2(A a, const char* name) {
    const nlohmann::json& v = a.json().at(name);
    if (v.is_null()) return {};
    if (v.is_number()) return Size2(v.get<int64_t>());
    return Size2{v.at(0).get<int64_t>(), v.at(1).get<int64_t>()};
}

Conv2dPadding conv_padding(A a) {
    const nlohmann::json& v = a.json().at("padding");
    if (v.is_string()) return Conv2dPadding(v.get<std::string>());
    return Conv2dPadding(size2(a, "padding"));
}

Reduction reduction_of(const std::string& r) { return r == "mean" ? kMean : r == "sum" ? kSum : kNone; }
Reduction reduction(A a) { return reduction_of(a.s("reduction")); }

std::optional<double> opt_num(A a, const char* name) {
    return a.has(name) ? std::optional<double>(a.num(name)) : std::nullopt;
}

// The inputs after the required ones, taken in order as the args say they are present.
struct Rest {
    const std::vector<Tensor>& in;
    size_t next;
    Tensor take(bool present) { return present ? in.at(next++) : Tensor(); }
};

// batch_norm and its fused form: x, [running_mean, running_var], [weight, bias]. The running
// statistics are updated in place, on copies: they are outputs too.
template <class F>
Call batch_norm_call(F f) {
    return call([f](In in, A a) {
        Rest r{in, 1};
        Tensor rm = r.take(a.b("running")), rv = r.take(a.b("running"));
        if (rm.defined()) rm = rm.clone(), rv = rv.clone();
        const Tensor w = r.take(a.b("weight")), b = r.take(a.b("bias"));
        const std::optional<double> momentum = opt_num(a, "momentum");
        const Tensor y = f(in[0], rm, rv, w, b, a.b("training"), momentum, a.num("eps"), a.i("num_batches_tracked"));
        return rm.defined() ? Outputs{y, rm, rv} : Outputs{y};
    });
}

template <class F>
Call group_norm_call(F f) {
    return call([f](In in, A a) {
        Rest r{in, 1};
        const Tensor w = r.take(a.b("affine")), b = r.take(a.b("affine"));
        return f(in[0], a.i("num_groups"), w, b, a.num("eps"));
    });
}

template <class Options>
Options loss_options(In in, A a) {
    Options o;
    Rest r{in, 2};
    o.reduction = reduction(a);
    if constexpr (requires { o.weight; }) o.weight = r.take(a.has("weight") && a.b("weight"));
    if constexpr (requires { o.pos_weight; }) o.pos_weight = r.take(a.has("pos_weight") && a.b("pos_weight"));
    if constexpr (requires { o.ignore_index; }) o.ignore_index = a.i("ignore_index");
    if constexpr (requires { o.label_smoothing; }) o.label_smoothing = a.num("label_smoothing");
    if constexpr (requires { o.beta; }) o.beta = a.num("beta");
    if constexpr (requires { o.delta; }) o.delta = a.num("delta");
    return o;
}

std::vector<OpRow> nn_rows() {
    return {
        {.name = "layer_norm", .api = "layer_norm", .call = call([](In in, A a) {
             Rest r{in, 1};
             const Tensor w = r.take(a.b("weight")), b = r.take(a.b("bias"));
             return layer_norm(in[0], a.dims("normalized_shape"), w, b, a.num("eps"));
         })},
        {.name = "rms_norm", .api = "rms_norm", .call = call([](In in, A a) {
             Rest r{in, 1};
             return rms_norm(in[0], a.dims("normalized_shape"), r.take(a.b("weight")), opt_num(a, "eps"));
         })},
        {.name = "batch_norm", .api = "batch_norm",
         .call = batch_norm_call([](auto&&... args) { return batch_norm(args...); })},
        {.name = "batch_norm_max_pool2d_relu", .api = "batch_norm_max_pool2d_relu",
         .call = batch_norm_call([](auto&&... args) { return batch_norm_max_pool2d_relu(args...); })},
        {.name = "group_norm", .api = "group_norm",
         .call = group_norm_call([](auto&&... args) { return group_norm(args...); })},
        {.name = "group_norm_max_pool2d_relu", .api = "group_norm_max_pool2d_relu",
         .call = group_norm_call([](auto&&... args) { return group_norm_max_pool2d_relu(args...); })},
        {.name = "instance_norm", .api = "instance_norm", .call = call([](In in, A a) {
             Rest r{in, 1};
             Tensor rm = r.take(a.b("running")), rv = r.take(a.b("running"));
             if (rm.defined()) rm = rm.clone(), rv = rv.clone();
             const Tensor w = r.take(a.b("affine")), b = r.take(a.b("affine"));
             const Tensor y = instance_norm(in[0], rm, rv, w, b, a.b("use_input_stats"), a.num("momentum"), a.num("eps"));
             return rm.defined() ? Outputs{y, rm, rv} : Outputs{y};
         }),
         .known_bugs = {kInstanceNormEmpty}},
        {.name = "conv2d", .api = "conv2d", .call = call([](In in, A a) {
             return conv2d(in[0], in[1], a.b("bias") ? in[2] : Tensor(), size2(a, "stride"), conv_padding(a),
                           size2(a, "dilation"), a.i("groups"));
         })},
        {.name = "max_pool2d", .api = "max_pool2d", .call = call([](In in, A a) {
             return max_pool2d(in[0], size2(a, "kernel_size"), size2(a, "stride"), size2(a, "padding"),
                               size2(a, "dilation"), a.b("ceil_mode"));
         })},
        {.name = "max_pool2d_with_indices", .api = "max_pool2d_with_indices", .call = call([](In in, A a) {
             return max_pool2d_with_indices(in[0], size2(a, "kernel_size"), size2(a, "stride"), size2(a, "padding"),
                                            size2(a, "dilation"), a.b("ceil_mode"));
         })},
        {.name = "avg_pool2d", .api = "avg_pool2d", .call = call([](In in, A a) {
             return avg_pool2d(in[0], size2(a, "kernel_size"), size2(a, "stride"), size2(a, "padding"),
                               a.b("ceil_mode"), a.b("count_include_pad"), a.opt_i("divisor_override"));
         })},
        {.name = "adaptive_avg_pool2d", .api = "adaptive_avg_pool2d",
         .call = call([](In in, A a) { return adaptive_avg_pool2d(in[0], size2(a, "output_size")); })},
        {.name = "conv1d", .api = "conv1d", .call = call([](In in, A a) {
             const nlohmann::json& p = a.json().at("padding");
             const Conv1dPadding padding = p.is_string() ? Conv1dPadding(p.get<std::string>()) : Conv1dPadding(p.get<int64_t>());
             return conv1d(in[0], in[1], a.b("bias") ? in[2] : Tensor(), a.i("stride"), padding, a.i("dilation"),
                           a.i("groups"));
         })},
        {.name = "conv_transpose2d", .api = "conv_transpose2d", .call = call([](In in, A a) {
             return conv_transpose2d(in[0], in[1], a.b("bias") ? in[2] : Tensor(), size2(a, "stride"), size2(a, "padding"),
                                     size2(a, "output_padding"), a.i("groups"), size2(a, "dilation"));
         })},
        {.name = "max_pool1d", .api = "max_pool1d", .call = call([](In in, A a) {
             return max_pool1d(in[0], a.i("kernel_size"), a.opt_i("stride"), a.i("padding"), a.i("dilation"),
                               a.b("ceil_mode"));
         })},
        {.name = "max_pool1d_with_indices", .api = "max_pool1d_with_indices", .call = call([](In in, A a) {
             return max_pool1d_with_indices(in[0], a.i("kernel_size"), a.opt_i("stride"), a.i("padding"), a.i("dilation"),
                                            a.b("ceil_mode"));
         })},
        {.name = "avg_pool1d", .api = "avg_pool1d", .call = call([](In in, A a) {
             return avg_pool1d(in[0], a.i("kernel_size"), a.opt_i("stride"), a.i("padding"), a.b("ceil_mode"),
                               a.b("count_include_pad"));
         })},
        {.name = "adaptive_avg_pool1d", .api = "adaptive_avg_pool1d",
         .call = call([](In in, A a) { return adaptive_avg_pool1d(in[0], a.i("output_size")); })},
        {.name = "adaptive_max_pool1d", .api = "adaptive_max_pool1d",
         .call = call([](In in, A a) { return adaptive_max_pool1d(in[0], a.i("output_size")); })},
        {.name = "adaptive_max_pool2d", .api = "adaptive_max_pool2d",
         .call = call([](In in, A a) { return adaptive_max_pool2d(in[0], size2(a, "output_size")); })},
        {.name = "adaptive_max_pool2d_with_indices", .api = "adaptive_max_pool2d_with_indices",
         .call = call([](In in, A a) { return adaptive_max_pool2d_with_indices(in[0], size2(a, "output_size")); })},
        {.name = "interpolate", .api = "interpolate", .call = call([](In in, A a) {
             InterpolateFuncOptions o;
             const auto list = [&]<class T>(const char* name, std::optional<std::vector<T>>& to) {
                 const nlohmann::json& v = a.json().at(name);
                 if (v.is_number()) to = std::vector<T>{v.get<T>()};
                 if (v.is_array()) to = v.get<std::vector<T>>();
             };
             list.template operator()<int64_t>("size", o.size);
             list.template operator()<double>("scale_factor", o.scale_factor);
             o.mode = a.s("mode");
             if (a.has("align_corners")) o.align_corners = a.b("align_corners");
             if (a.has("recompute_scale_factor")) o.recompute_scale_factor = a.b("recompute_scale_factor");
             return interpolate(in[0], o);
         })},
        {.name = "kl_div", .api = "kl_div", .call = call([](In in, A a) {
             const std::string r = a.s("reduction");
             const KLDivReduction reduction = r == "batchmean" ? KLDivReduction(kBatchMean) : KLDivReduction(reduction_of(r));
             return kl_div(in[0], in[1], KLDivFuncOptions{.reduction = reduction, .log_target = a.b("log_target")});
         })},
        {.name = "nll_loss", .api = "nll_loss",
         .call = call([](In in, A a) { return nll_loss(in[0], in[1], loss_options<NLLLossOptions>(in, a)); })},
        {.name = "cross_entropy", .api = "cross_entropy",
         .call = call([](In in, A a) {
             return cross_entropy(in[0], in[1], loss_options<CrossEntropyLossOptions>(in, a));
         }),
         .also = {{"cross_entropy(input, target, label_smoothing)", call([](In in, A a) {
                       const bool plain = !a.b("weight") && a.i("ignore_index") == -100 && a.s("reduction") == "mean";
                       return plain ? Outputs{cross_entropy(in[0], in[1], a.f("label_smoothing"))} : Outputs{};
                   })}}},
        {.name = "binary_cross_entropy", .api = "binary_cross_entropy", .call = call([](In in, A a) {
             return binary_cross_entropy(in[0], in[1], loss_options<BCELossOptions>(in, a));
         })},
        {.name = "binary_cross_entropy_with_logits", .api = "binary_cross_entropy_with_logits",
         .call = call([](In in, A a) {
             return binary_cross_entropy_with_logits(in[0], in[1], loss_options<BCEWithLogitsLossOptions>(in, a));
         })},
        {.name = "l1_loss", .api = "l1_loss",
         .call = call([](In in, A a) { return l1_loss(in[0], in[1], loss_options<L1LossOptions>(in, a)); }),
         .known_bugs = {kLossBroadcast}},
        {.name = "mse_loss", .api = "mse_loss",
         .call = call([](In in, A a) { return mse_loss(in[0], in[1], loss_options<MSELossOptions>(in, a)); }),
         .known_bugs = {kLossBroadcast}},
        {.name = "smooth_l1_loss", .api = "smooth_l1_loss", .call = call([](In in, A a) {
             return smooth_l1_loss(in[0], in[1], loss_options<SmoothL1LossOptions>(in, a));
         }),
         .known_bugs = {kLossBroadcast}},
        {.name = "huber_loss", .api = "huber_loss",
         .call = call([](In in, A a) { return huber_loss(in[0], in[1], loss_options<HuberLossOptions>(in, a)); }),
         .known_bugs = {kLossBroadcast}},
        {.name = "count_correct", .api = "count_correct", .call = call([](In in, A) {
             const int64_t n = count_correct(in[0], in[1]);
             return from_vector(std::span<const int64_t>(&n, 1), {});
         })},
        {.name = "scaled_dot_product_attention", .api = "scaled_dot_product_attention", .call = call([](In in, A a) {
             return scaled_dot_product_attention(in[0], in[1], in[2], a.b("mask") ? in[3] : Tensor(), a.num("dropout_p"),
                                                 a.b("is_causal"), opt_num(a, "scale"));
         })},
        {.name = "lstm_layer", .api = "lstm_layer", .call = call([](In in, A a) {
             Rest r{in, 5};
             const Tensor b_ih = r.take(a.b("bias")), b_hh = r.take(a.b("bias")), lengths = r.take(a.b("lengths_given"));
             Tensor c_n;
             const Tensor y = lstm_layer(in[0], in[1], in[2], in[3], in[4], b_ih, b_hh, lengths, &c_n);
             return Outputs{y, c_n};
         })},
        {.name = "gru_layer", .api = "gru_layer", .call = call([](In in, A a) {
             Rest r{in, 4};
             const Tensor b_ih = r.take(a.b("bias")), b_hh = r.take(a.b("bias")), lengths = r.take(a.b("lengths_given"));
             return gru_layer(in[0], in[1], in[2], in[3], b_ih, b_hh, lengths);
         })},
        {.name = "layer_norm_lstm_layer", .api = "layer_norm_lstm_layer", .call = call([](In in, A a) {
             Rest r{in, 6};
             const bool bias = a.b("ln_bias");
             const Tensor ln_ih_b = r.take(bias), ln_hh_w = r.take(true), ln_c_w = r.take(true), ln_c_b = r.take(bias);
             const Tensor lengths = r.take(a.b("lengths_given"));
             Tensor c_n;
             const Tensor y = layer_norm_lstm_layer(in[0], in[1], in[2], in[3], in[4], in[5], ln_ih_b, ln_hh_w, ln_c_w,
                                                    ln_c_b, a.num("eps"), lengths, &c_n);
             return Outputs{y, c_n};
         })},
        {.name = "last_step", .api = "last_step", .call = call([](In in, A a) {
             return last_step(in[0], a.b("lengths_given") ? in[1] : Tensor());
         })},
        {.name = "feature_dropout", .api = "feature_dropout",
         .call = call([](In in, A a) { return feature_dropout(in[0], a.num("p"), a.b("training")); })},
        {.name = "dropout1d", .api = "dropout1d",
         .call = call([](In in, A a) { return dropout1d(in[0], a.num("p"), a.b("training")); })},
        {.name = "dropout2d", .api = "dropout2d",
         .call = call([](In in, A a) { return dropout2d(in[0], a.num("p"), a.b("training")); })},
        {.name = "dropout3d", .api = "dropout3d",
         .call = call([](In in, A a) { return dropout3d(in[0], a.num("p"), a.b("training")); })},
        {.name = "dropout", .api = "dropout",
         .call = call([](In in, A a) { return dropout(in[0], a.num("p"), a.b("training")); })},
    };
}

}  // namespace

bool Sample::any_empty() const {
    for (const Shape& s : shapes) {
        if (s.numel() == 0) return true;
    }
    return false;
}

double Args::num(const char* name) const {
    const nlohmann::json& v = j_.at(name);
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "nan") return NAN;
        return s == "inf" ? INFINITY : -INFINITY;
    }
    return v.get<double>();
}

const std::vector<std::string>& op_groups() {
    static const std::vector<std::string> groups = {"pointwise", "reduce", "shape", "linear", "nn"};
    return groups;
}

const std::vector<OpRow>& op_rows(const std::string& group) {
    static const std::map<std::string, std::vector<OpRow>> rows = {
        {"pointwise", pointwise_rows()},
        {"reduce", reduce_rows()},
        {"shape", shape_rows()},
        {"linear", linear_rows()},
        {"nn", nn_rows()},
    };
    return rows.at(group);
}

}  // namespace normnet::test
