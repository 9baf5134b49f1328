// GraphBuilder: nodes, stored tensors and constants added to the graph, named after the module
// being exported, with the output shapes of the common operators computed as ONNX defines them.
#include <algorithm>

#include "graph.hpp"
#include "normnet/error.hpp"

namespace normnet::onnx {

int64_t Value::size(int64_t d) const {
    const int64_t n = dim();
    NORMNET_CHECK(d >= -n && d < n, "onnx::Value ", name, ": dimension ", d, " out of range for ", n, " dimensions");
    return shape[static_cast<size_t>(d < 0 ? d + n : d)];
}

std::string detail::GraphState::unique(const std::string& base) {
    std::string name = base;
    for (int i = 1; names.count(name) > 0; ++i) name = base + "_" + std::to_string(i);
    names.insert(name);
    return name;
}

bool broadcast_shapes(const Ints& a, const Ints& b, Ints& out) {
    const size_t n = std::max(a.size(), b.size());
    out.assign(n, 1);
    for (size_t i = 0; i < n; ++i) {
        const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
        if (x == y || y == 1) out[i] = x;
        else if (x == 1) out[i] = y;
        else return false;
    }
    return true;
}

std::string shape_text(const Ints& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + (shape[i] == kBatch ? std::string("N") : std::to_string(shape[i]));
    return s + "]";
}


int64_t GraphBuilder::opset() const { return state_->opset; }

const std::string& GraphBuilder::path() const { return state_->stack.back().second; }

void GraphBuilder::fail(const std::string& reason) const {
    const auto& [module, path] = state_->stack.back();
    normnet::fail("ONNX export: cannot export ", module->type_name(),
                  path.empty() ? std::string(" (the model itself)") : " at '" + path + "'", ": ", reason);
}

Value GraphBuilder::call(const Module& child, const Value& x) {
    return call(child, [&] { return child.to_onnx(*this, x); });
}

Value GraphBuilder::call(const Module& child, const std::function<Value()>& emit) {
    const auto it = state_->paths.find(&child);
    // A module outside the model's tree (made inside a to_onnx) is named under its caller.
    const std::string path = it != state_->paths.end() ? it->second
                             : this->path().empty()     ? child.type_name()
                                                        : this->path() + "." + child.type_name();
    state_->stack.emplace_back(&child, path);
    Value y = emit();
    state_->stack.pop_back();
    return y;
}

Value GraphBuilder::tensor(const Tensor& t, const std::string& name) {
    if (!t.defined()) fail("its tensor '" + name + "' is undefined");
    if (t.dtype() != kFloat32 && t.dtype() != kInt64) fail("its tensor '" + name + "' is " + dtype_name(t.dtype()) + " (float32 or int64 are stored)");
    const void* key = &t.impl();
    if (const auto it = state_->stored.find(key); it != state_->stored.end() && it->second.second.shape == t.shape().vec()) {
        return it->second.second;
    }
    Value v{state_->unique(path().empty() ? name : path() + "." + name), t.shape().vec(), t.dtype()};
    state_->initializers.push_back({v.name, t.detach().contiguous().clone(), ""});
    state_->stored[key] = {t, v};
    return v;
}

Value GraphBuilder::constant(const Tensor& t) {
    Value v{state_->unique(path().empty() ? "const" : path() + "/const"), t.shape().vec(), t.dtype()};
    state_->initializers.push_back({v.name, t.detach().contiguous().clone(), ""});
    return v;
}

// Small constants (scales, axes, shapes) are stored once per value.
Value GraphBuilder::scalar(float v) {
    std::string key = "f";
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
    const auto it = state_->small_constants.find(key);
    if (it != state_->small_constants.end()) return it->second;
    return state_->small_constants[key] = constant(scalar_tensor(v));
}

Value GraphBuilder::ints(const Ints& v) {
    std::string key = "i";
    key.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
    const auto it = state_->small_constants.find(key);
    if (it != state_->small_constants.end()) return it->second;
    return state_->small_constants[key] = constant(from_vector(std::span<const int64_t>(v), Shape{static_cast<int64_t>(v.size())}));
}

std::vector<Value> GraphBuilder::node(const std::string& op_type, const std::vector<Value>& inputs,
                                      const std::vector<Attribute>& attributes, const std::vector<Ints>& shapes,
                                      Dtype dtype) {
    NodeRecord n{op_type, state_->unique(path().empty() ? op_type : path() + "/" + op_type), {}, {}, attributes};
    for (const Value& v : inputs) n.inputs.push_back(v.name);  // "" for an optional input left out
    std::vector<Value> outputs;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const std::string name = shapes.size() == 1 ? n.name : state_->unique(n.name + ":" + std::to_string(i));
        n.outputs.push_back(name);
        outputs.push_back({name, shapes[i], dtype});
        state_->node_outputs.push_back(outputs.back());
    }
    state_->nodes.push_back(std::move(n));
    return outputs;
}

Value GraphBuilder::node(const std::string& op_type, const std::vector<Value>& inputs,
                         const std::vector<Attribute>& attributes, Ints shape, Dtype dtype) {
    return node(op_type, inputs, attributes, std::vector<Ints>{std::move(shape)}, dtype).front();
}

namespace {

Value binary(GraphBuilder& g, const char* op, const Value& a, const Value& b) {
    Ints shape;
    if (!broadcast_shapes(a.shape, b.shape, shape)) {
        g.fail(std::string(op) + " of " + shape_text(a.shape) + " and " + shape_text(b.shape) + ": the shapes do not broadcast");
    }
    return g.node(op, {a, b}, {}, shape, a.dtype);
}

}  // namespace

Value GraphBuilder::add(const Value& a, const Value& b) { return binary(*this, "Add", a, b); }
Value GraphBuilder::sub(const Value& a, const Value& b) { return binary(*this, "Sub", a, b); }
Value GraphBuilder::mul(const Value& a, const Value& b) { return binary(*this, "Mul", a, b); }
Value GraphBuilder::div(const Value& a, const Value& b) { return binary(*this, "Div", a, b); }

Value GraphBuilder::matmul(const Value& a, const Value& b) {
    if (a.dim() < 2 || b.dim() < 2 || a.size(-1) != b.size(-2)) {
        fail("MatMul of " + shape_text(a.shape) + " and " + shape_text(b.shape) + ": the inner sizes differ");
    }
    Ints batch;
    if (!broadcast_shapes(Ints(a.shape.begin(), a.shape.end() - 2), Ints(b.shape.begin(), b.shape.end() - 2), batch)) {
        fail("MatMul of " + shape_text(a.shape) + " and " + shape_text(b.shape) + ": the batch dimensions do not broadcast");
    }
    batch.push_back(a.size(-2));
    batch.push_back(b.size(-1));
    return node("MatMul", {a, b}, {}, batch);
}

Value GraphBuilder::unary(const std::string& op_type, const Value& x, const std::vector<Attribute>& attributes) {
    return node(op_type, {x}, attributes, x.shape, x.dtype);
}

Value GraphBuilder::reshape(const Value& x, const Ints& shape) {
    // The batch dimension is copied from x where it stays in place (0), else inferred (-1): the
    // file holds no batch size.
    Ints target = shape;
    int64_t count = 1, batch_dims = 0;
    for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] == kBatch) {
            ++batch_dims;
            target[i] = i < x.shape.size() && x.shape[i] == kBatch ? 0 : -1;
        } else {
            count *= target[i];
        }
    }
    int64_t x_count = 1, x_batch = 0;
    for (int64_t d : x.shape) (d == kBatch ? ++x_batch : x_count *= d);
    if (batch_dims != x_batch || count != x_count) {
        fail("Reshape of " + shape_text(x.shape) + " to " + shape_text(shape) + ": the sizes differ");
    }
    return node("Reshape", {x, ints(target)}, {}, shape, x.dtype);
}

Value GraphBuilder::transpose(const Value& x, const Ints& perm) {
    if (static_cast<int64_t>(perm.size()) != x.dim()) {
        fail("Transpose of " + shape_text(x.shape) + " by " + std::to_string(perm.size()) + " dimensions");
    }
    Ints shape;
    for (int64_t p : perm) shape.push_back(x.size(p));
    return node("Transpose", {x}, {{"perm", perm}}, shape, x.dtype);
}

Value GraphBuilder::concat(const std::vector<Value>& xs, int64_t axis) {
    if (xs.empty()) fail("Concat of nothing");
    Ints shape = xs.front().shape;
    const int64_t a = axis < 0 ? axis + xs.front().dim() : axis;
    shape[static_cast<size_t>(a)] = 0;
    for (const Value& x : xs) {
        if (x.dim() != xs.front().dim()) fail("Concat of " + shape_text(xs.front().shape) + " and " + shape_text(x.shape));
        shape[static_cast<size_t>(a)] += x.size(a);
    }
    return node("Concat", xs, {{"axis", a}}, shape, xs.front().dtype);
}

Value GraphBuilder::select(const Value& x, int64_t axis, int64_t index) {
    const int64_t a = axis < 0 ? axis + x.dim() : axis;
    const int64_t size = x.size(a);
    if (size == kBatch || index < -size || index >= size) fail("select(" + std::to_string(axis) + ", " + std::to_string(index) + ") of " + shape_text(x.shape));
    if (index < 0) index += size;
    Ints shape = x.shape;
    shape.erase(shape.begin() + a);
    // A scalar index removes the dimension (Gather's output rank is data rank + index rank - 1).
    const Value i = constant(from_vector(std::span<const int64_t>(&index, 1), Shape{}));
    return node("Gather", {x, i}, {{"axis", a}}, shape, x.dtype);
}

Value GraphBuilder::softmax(const Value& x, int64_t axis) { return node("Softmax", {x}, {{"axis", axis}}, x.shape); }

}  // namespace normnet::onnx
