// The op table's generic tests (op_table.hpp): every row over every sample of its golden file.
//   - PyTorch: where torch raised, normnet throws normnet::Error (never crashes, never returns);
//     where torch worked, normnet works and matches its outputs and input gradients to the row's
//     tolerance (NaN where torch has NaN, the same infinities; where torch's float32 answer is
//     itself off, float64 is the arbiter), and every other spelling of the op gives the same
//     outputs bit for bit.
//   - gradcheck: normnet's gradient checker (gradients pre-filled with garbage) on every smooth
//     sample (kinds normal and distinct).
// Known bugs are reported by name; an entry none of whose samples fails any more fails the test.
// NORMNET_OPTABLE_DIR reads the golden files from another folder (tests/op_table_seeds.py writes
// tables of other seeds there); NORMNET_OPTABLE_OP=name runs one row only; NORMNET_OPTABLE_TRACE=1
// prints each sample before it runs (to find one that crashes); NORMNET_OPTABLE_SKIP=group:index,...
// skips samples (to get past one that crashes before its known-bug entry is written).
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "golden_cases.hpp"
#include "op_table.hpp"

using namespace normnet;
using nlohmann::json;
using test::Args;
using test::OpRow;
using test::Outputs;

namespace {

// ---- the golden file of a group -----------------------------------------------------------------

struct Table {
    SafetensorsData data;
    json cases, ops;
    const float* f32 = nullptr;
    const int64_t* i64 = nullptr;
    const bool* b8 = nullptr;
};

std::string table_dir() {
    const char* dir = std::getenv("NORMNET_OPTABLE_DIR");
    return dir && *dir ? std::string(dir) : std::string(NORMNET_TEST_DIR) + "/golden";
}

const Table& table(const std::string& group) {
    static std::map<std::string, Table> tables;
    auto it = tables.find(group);
    if (it != tables.end()) return it->second;
    Table t;
    t.data = load_safetensors(table_dir() + "/optable_" + group + ".safetensors");
    t.cases = json::parse(t.data.metadata.at("cases"));
    t.ops = json::parse(t.data.metadata.at("ops"));
    Table& stored = tables[group] = std::move(t);
    stored.f32 = stored.data.at("f32").data();
    stored.i64 = stored.data.at("i64").data_ptr<int64_t>();
    stored.b8 = stored.data.at("bool").data_ptr<bool>();
    return stored;
}

// A stored tensor: `kind` f32, i64 or bool, `shape`, from offset `at` of that kind's array.
Tensor stored(const Table& t, const std::string& kind, const Shape& shape, int64_t at) {
    const auto n = static_cast<size_t>(shape.numel());
    if (kind == "f32") return from_vector(std::vector<float>(t.f32 + at, t.f32 + at + n), shape);
    if (kind == "i64") return from_vector(std::span<const int64_t>(t.i64 + at, n), shape);
    std::vector<int64_t> v(t.b8 + at, t.b8 + at + n);
    return from_vector(std::span<const int64_t>(v), shape).to(kBool);
}

Shape shape_of(const json& j) { return Shape(j.get<std::vector<int64_t>>()); }

// ---- one sample -----------------------------------------------------------------------------------

// A sample's inputs: the leaves (fresh contiguous copies of the stored bases, requiring grad as
// torch's did) and the views the op sees.
struct Inputs {
    std::vector<Tensor> leaves, views;
};

Inputs make_inputs(const Table& t, const json& c) {
    Inputs in;
    for (const json& i : c.at("in")) {
        Tensor leaf = stored(t, i.at(0), shape_of(i.at(1)), i.at(2));
        if (i.at(4).get<int>() == 1) leaf.requires_grad_();
        in.views.push_back(test::apply_view(leaf, i.at(3)));
        in.leaves.push_back(leaf);
    }
    return in;
}

test::Sample describe(const Table& t, const json& c) {
    test::Sample s;
    s.op = c.at("op");
    s.kind = c.at("kind");
    s.args = &c.at("args");
    s.torch_raises = c.contains("err");
    s.torch_grads = c.contains("d");
    const Inputs in = make_inputs(t, c);
    for (size_t k = 0; k < in.views.size(); ++k) {
        s.shapes.push_back(in.views[k].shape());
        s.dtypes.push_back(in.views[k].dtype());
        s.viewed.push_back(!c.at("in")[k].at(3).empty());
        s.inputs.push_back(in.views[k].detach());
    }
    return s;
}

// What a failure message says about the sample.
std::string what_sample(const Table& t, const json& c, size_t index) {
    std::ostringstream out;
    const std::string op = c.at("op");
    out << op << " (" << t.ops.value(op, "?") << ") sample " << index << " [" << c.at("kind").get<std::string>()
        << "]: inputs";
    for (const json& i : c.at("in")) {
        out << " " << i.at(0).get<std::string>() << shape_of(i.at(1));
        if (!i.at(3).empty()) out << " viewed " << i.at(3).dump();
    }
    out << ", args " << c.at("args").dump();
    return out.str();
}

std::string fmt(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// Whether `a` passes against torch's float32 answer r32 and, where stored, the float64 one r64:
// NaN for NaN, the same infinity, or within tol * (1 + |r|); against r64, also no farther from
// it than torch's float32 answer is.
bool close_to(double a, double r, double tol) {
    if (std::isnan(r)) return std::isnan(a);
    if (std::isinf(r)) return a == r;
    return std::abs(a - r) <= tol * (1.0 + std::abs(r));
}
bool passes(double a, double r32, const double* r64, double tol) {
    if (close_to(a, r32, tol)) return true;
    if (r64 == nullptr) return false;
    return close_to(a, *r64, tol) || (std::isfinite(a) && std::abs(a - *r64) <= std::abs(r32 - *r64));
}

// "" when `actual` matches the stored answer (shape, dtype, values), else what differs.
std::string compare(const Table& t, const Tensor& actual, const std::string& kind, const Shape& shape, int64_t at,
                    int64_t at64, double tol, const std::string& what) {
    if (!actual.defined()) return what + ": normnet gives an undefined tensor";
    if (!(actual.shape() == shape)) return what + ": normnet's shape " + actual.shape().str() + ", torch's " + shape.str();
    const Dtype want = kind == "f32" ? kFloat32 : kind == "i64" ? kInt64 : kBool;
    if (actual.dtype() != want) {
        return what + ": normnet's dtype " + dtype_name(actual.dtype()) + ", torch's " + dtype_name(want);
    }
    const auto a = actual.to_vector<double>();
    const auto r = stored(t, kind, shape, at).to_vector<double>();
    std::vector<double> r64;
    if (at64 >= 0) r64 = stored(t, kind, shape, at64).to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) {
        const bool ok = kind == "f32" ? passes(a[k], r[k], r64.empty() ? nullptr : &r64[k], tol) : a[k] == r[k];
        if (!ok) {
            std::string msg = what + " element " + std::to_string(k) + ": normnet " + fmt(a[k]) + ", torch " + fmt(r[k]);
            if (!r64.empty()) msg += " (float64: " + fmt(r64[k]) + ")";
            return msg;
        }
    }
    return "";
}

std::string describe_outputs(const Outputs& y) {
    std::string s;
    for (const Tensor& t : y) s += (s.empty() ? "" : ", ") + (t.defined() ? t.shape().str() : std::string("undefined"));
    return "[" + s + "]";
}

// Runs `f`, turning a normnet::Error into its message in `error` and any other exception into a
// failure message in `other`.
template <class F>
void guarded(F f, std::string& error, std::string& other) {
    try {
        f();
    } catch (const Error& e) {
        error = e.what();
    } catch (const std::exception& e) {
        other = std::string("a std::exception that is not normnet::Error: ") + e.what();
    }
}

// The PyTorch check of one sample: "" when it passes, else what failed.
std::string check_torch(const OpRow& row, const Table& t, const json& c) {
    const Args args(c.at("args"));
    if (c.contains("err")) {
        const auto expect_error = [&](const test::Call& f, const std::string& name) -> std::string {
            Inputs in = make_inputs(t, c);
            std::string error, other;
            Outputs y;
            guarded([&] { y = f(in.views, args); }, error, other);
            if (!other.empty()) return name + " throws " + other;
            if (error.empty() && !y.empty()) {
                return name + " returns " + describe_outputs(y) + " where torch raises " + c.at("err").get<std::string>();
            }
            return "";
        };
        if (std::string e = expect_error(row.call, row.api); !e.empty()) return e;
        for (const test::Alias& alias : row.also) {
            if (std::string e = expect_error(alias.call, alias.api); !e.empty()) return e;
        }
        return "";
    }
    Inputs in = make_inputs(t, c);
    Outputs y;
    std::string error, other;
    guarded([&] { y = row.call(in.views, args); }, error, other);
    if (!other.empty() || !error.empty()) return "normnet throws " + other + error + " where torch works";
    const json& outs = c.at("out");
    if (y.size() != outs.size()) {
        return "normnet returns " + std::to_string(y.size()) + " outputs, torch " + std::to_string(outs.size());
    }
    bool ties_reordered = false;  // then the gradients go to other tied elements than torch's
    for (size_t k = 0; k < y.size(); ++k) {
        const json& o = outs[k];
        std::string e = compare(t, y[k], o.at(0), shape_of(o.at(1)), o.at(2), o.at(3), row.tol,
                                "output " + std::to_string(k));
        if (!e.empty() && static_cast<int>(k) == row.tie_indices && y[k].shape() == shape_of(o.at(1))) {
            // Ties in another order: the same values picked is as good.
            const Tensor x = in.views[0].detach();
            const int64_t dim = args.i("dim");
            const Tensor want = stored(t, "i64", shape_of(o.at(1)), o.at(2));
            if (test::bit_equal(x.gather(dim, y[k]).contiguous(), x.gather(dim, want).contiguous())) {
                e.clear();
                ties_reordered = true;
            }
        }
        if (!e.empty()) return e;
    }
    // The other spellings: the same outputs, bit for bit.
    for (const test::Alias& alias : row.also) {
        Inputs again = make_inputs(t, c);
        Outputs z;
        guarded([&] { z = alias.call(again.views, args); }, error, other);
        if (!other.empty() || !error.empty()) return alias.api + " throws " + other + error + " where " + row.api + " works";
        if (z.empty()) continue;  // does not apply to these arguments
        if (z.size() != y.size()) return alias.api + " returns " + std::to_string(z.size()) + " outputs";
        for (size_t k = 0; k < y.size(); ++k) {
            if (!test::bit_equal(z[k].detach().contiguous(), y[k].detach().contiguous())) {
                return alias.api + "'s output " + std::to_string(k) + " differs from " + row.api + "'s";
            }
        }
    }
    if (ties_reordered) return "";
    if (c.contains("bwd_err") || !c.contains("d")) {
        // torch's backward raised (or torch took none): normnet's may work or throw, not crash.
        if (!c.contains("bwd_err")) return "";
        for (size_t k = 0; k < y.size(); ++k) {
            if (y[k].requires_grad()) {
                guarded([&] { y[k].backward(zeros_like(y[k].detach())); }, error, other);
                if (!other.empty()) return "backward throws " + other;
            }
        }
        return "";
    }
    // Gradients: sum over the float outputs of sum(y * dy), as torch.autograd.backward(ys, dys).
    std::vector<std::pair<Tensor, Tensor>> pairs;
    for (size_t k = 0; k < y.size(); ++k) {
        const json& o = outs[k];
        if (o.at(4).get<int64_t>() < 0) continue;
        if (!y[k].requires_grad()) return "output " + std::to_string(k) + " does not require grad; torch's does";
        pairs.emplace_back(y[k], stored(t, "f32", shape_of(o.at(1)), o.at(4)));
    }
    guarded(
        [&] {
            if (pairs.size() == 1) {
                pairs[0].first.backward(pairs[0].second);
                return;
            }
            Tensor total;
            for (const auto& [out, dy] : pairs) {
                const Tensor term = sum(mul(out, dy));
                total = total.defined() ? add(total, term) : term;
            }
            total.backward();
        },
        error, other);
    if (!other.empty() || !error.empty()) return "backward throws " + other + error + " where torch's works";
    const json& d = c.at("d");
    for (size_t k = 0; k < in.leaves.size(); ++k) {
        if (d[k].is_null()) continue;
        const Shape shape = in.leaves[k].shape();
        const Tensor g = in.leaves[k].grad();
        if (std::string e = compare(t, g.defined() ? g : zeros(shape), "f32", shape, d[k].at(0), d[k].at(1), row.tol,
                                    "gradient of input " + std::to_string(k));
            !e.empty()) {
            return e;
        }
    }
    return "";
}

// The gradcheck of one sample ("" when it passes or does not apply).
std::string check_gradients(const OpRow& row, const Table& t, const json& c) {
    const Args args(c.at("args"));
    Inputs in = make_inputs(t, c);
    const json& steps = c.at("in");
    const auto views_of = [&](const std::vector<Tensor>& leaves) {
        std::vector<Tensor> views;
        for (size_t k = 0; k < leaves.size(); ++k) views.push_back(test::apply_view(leaves[k], steps[k].at(3)));
        return views;
    };
    // The outputs that take part in autograd (not indices, nor running statistics updated on the
    // side), found once in grad mode: gradcheck's numeric pass runs without it.
    std::vector<bool> differentiable;
    std::string error, other;
    guarded([&] { for (const Tensor& y : row.call(views_of(in.leaves), args)) differentiable.push_back(y.requires_grad()); },
            error, other);
    if (!other.empty() || !error.empty()) return "the call throws " + other + error;
    const auto fn = [&](const std::vector<Tensor>& leaves) {
        std::vector<Tensor> flat;
        const Outputs y = row.call(views_of(leaves), args);
        for (size_t k = 0; k < y.size(); ++k) {
            if (differentiable.at(k)) flat.push_back(y[k].reshape({-1}));
        }
        NORMNET_CHECK(!flat.empty(), "no output requires grad");
        return flat.size() == 1 ? flat[0] : cat(flat);
    };
    GradcheckResult r;
    guarded([&] { r = gradcheck(fn, in.leaves, row.grad_options); }, error, other);
    if (!other.empty() || !error.empty()) return "gradcheck throws " + other + error;
    return r.ok ? "" : r.message;
}

// Whether gradcheck applies to a sample: smooth values, torch took gradients, few elements.
bool gradcheck_applies(const OpRow& row, const Table& t, const json& c) {
    if (!row.gradcheck || !c.contains("d") || c.contains("err")) return false;
    if (row.gradcheck_skips && row.gradcheck_skips(describe(t, c))) return false;
    const std::string kind = c.at("kind");
    if (kind != "normal" && kind != "distinct") return false;
    int64_t n = 0;
    for (const json& i : c.at("in")) {
        if (i.at(4).get<int>() == 1) n += shape_of(i.at(1)).numel();
    }
    return n <= 256;
}

// ---- a group's run ------------------------------------------------------------------------------

const OpRow* find_row(const std::string& group, const std::string& op) {
    for (const OpRow& r : test::op_rows(group)) {
        if (r.name == op) return &r;
    }
    return nullptr;
}

void run_group(const std::string& group) {
    const Table& t = table(group);
    const char* only = std::getenv("NORMNET_OPTABLE_OP");
    const bool trace = std::getenv("NORMNET_OPTABLE_TRACE") != nullptr;
    struct BugCount {
        int matched = 0, failed = 0, skipped = 0;
    };
    std::map<const test::KnownBug*, BugCount> bugs;
    std::set<std::string> seen;
    int run = 0, failures = 0;
    for (size_t index = 0; index < t.cases.size(); ++index) {
        const json& c = t.cases[index];
        const std::string op = c.at("op");
        seen.insert(op);
        if (only && op != only) continue;
        const OpRow* row = find_row(group, op);
        if (row == nullptr) {
            FAIL_CHECK("optable_" << group << ".safetensors has samples of " << op << ", which has no row in "
                                  "tests/op_table_rows.cpp");
            continue;
        }
        if (const char* skip = std::getenv("NORMNET_OPTABLE_SKIP");
            skip && ("," + std::string(skip) + ",").find("," + group + ":" + std::to_string(index) + ",") !=
                        std::string::npos) {
            continue;
        }
        std::vector<const test::KnownBug*> known;
        bool unsafe = false;
        if (!row->known_bugs.empty()) {
            const test::Sample s = describe(t, c);
            for (const test::KnownBug& b : row->known_bugs) {
                if (b.matches(s)) {
                    known.push_back(&b);
                    unsafe = unsafe || b.unsafe;
                }
            }
        }
        if (unsafe) {
            for (const auto* b : known) ++bugs[b].skipped;
            continue;
        }
        ++run;
        if (trace) std::fprintf(stderr, "%s\n", what_sample(t, c, index).c_str());
        std::string failure;
        try {
            failure = check_torch(*row, t, c);
            if (failure.empty() && gradcheck_applies(*row, t, c)) failure = check_gradients(*row, t, c);
        } catch (const std::exception& e) {
            failure = std::string("the check itself threw: ") + e.what();
        }
        // A known bug excuses the failure (a gradients_only one, a wrong gradient only).
        const bool wrong_gradient = failure.rfind("gradient of input", 0) == 0;
        bool excused = false;
        for (const auto* b : known) {
            if (b->gradients_only && !failure.empty() && !wrong_gradient) continue;
            ++bugs[b].matched;
            if (!failure.empty()) ++bugs[b].failed, excused = true;
        }
        if (excused) continue;
        if (!failure.empty() && ++failures <= 4000) FAIL_CHECK(what_sample(t, c, index) << "\n  " << failure);
    }
    if (failures > 40) FAIL_CHECK(failures << " samples of " << group << " fail; the first 40 are shown above");
    // Stale entries fail with the committed table only: another seed's samples may miss them.
    const bool committed = std::getenv("NORMNET_OPTABLE_DIR") == nullptr && !only;
    for (const OpRow& row : test::op_rows(group)) {
        if (!only && !seen.count(row.name)) {
            FAIL_CHECK("row " << row.name << " has no sample in optable_" << group
                              << ".safetensors: add its samples to tests/golden/gen_optable.py");
        }
        for (const test::KnownBug& b : row.known_bugs) {
            const BugCount n = bugs[&b];
            if (b.deliberate) {
                if (n.failed > 0) {
                    WARN("DIFFERS FROM TORCH, deliberately: " << row.name << ": " << b.what << " (" << n.failed
                                                              << " of " << n.matched << " samples)");
                }
            } else if (b.unsafe) {
                if (n.skipped > 0) {
                    WARN("KNOWN BUG, not run (it would crash or read uninitialised memory): "
                         << row.name << ": " << b.what << " (" << n.skipped << " samples)");
                } else if (committed) {
                    FAIL_CHECK("known bug of " << row.name << " matches no sample: remove its entry: " << b.what);
                }
            } else if (n.failed > 0) {
                WARN("KNOWN BUG: " << row.name << ": " << b.what << " (" << n.failed << " of " << n.matched
                                   << " samples fail)");
            } else if (committed && n.skipped == 0) {
                FAIL_CHECK("known bug of " << row.name << " no longer fails on any of its " << n.matched
                                           << " samples: remove its entry: " << b.what);
            }
        }
    }
    INFO(group << ": " << run << " samples checked");
    CHECK(run > 0);
}

}  // namespace

// One test case per group (golden file): every sample's PyTorch check, then its gradcheck.
TEST_CASE("op table: pointwise ops match torch and pass gradcheck on every sample", "[optable][pointwise]") {
    run_group("pointwise");
}
TEST_CASE("op table: reductions match torch and pass gradcheck on every sample", "[optable][reduce]") {
    run_group("reduce");
}
TEST_CASE("op table: shape and index ops match torch and pass gradcheck on every sample", "[optable][shape]") {
    run_group("shape");
}
TEST_CASE("op table: matrix products match torch and pass gradcheck on every sample", "[optable][linear]") {
    run_group("linear");
}
TEST_CASE("op table: the layers' functions match torch and pass gradcheck on every sample", "[optable][nn]") {
    run_group("nn");
}

namespace {

// The public names an op-table row exercises: its call's and its other spellings' ("operator+",
// "Tensor::add"), without the overload notes in parentheses.
std::string name_of(const std::string& api) {
    // "operator-(float, Tensor)" -> "operator-" (the symbol's first character may not end it)
    const size_t op = api.find("operator");
    return api.substr(0, api.find('(', op == std::string::npos ? 0 : op + 9));
}

std::set<std::string> covered_names() {
    std::set<std::string> names;
    for (const std::string& group : test::op_groups()) {
        for (const OpRow& row : test::op_rows(group)) {
            names.insert(name_of(row.api));
            for (const test::Alias& alias : row.also) names.insert(name_of(alias.api));
        }
    }
    return names;
}

// The functions declared NORMNET_API in ops.hpp, and the methods of class Tensor in tensor.hpp.
std::set<std::string> public_names() {
    std::set<std::string> names;
    const std::regex declared(R"(([A-Za-z_][A-Za-z_0-9]*|operator[^\s(]+)\()");
    std::istringstream ops(test::read_file(std::string(NORMNET_SOURCE_DIR) + "/include/normnet/ops.hpp"));
    for (std::string line; std::getline(ops, line);) {
        std::smatch m;
        if (line.rfind("NORMNET_API ", 0) == 0 && std::regex_search(line, m, declared)) names.insert(m[1]);
    }
    std::istringstream tensor(test::read_file(std::string(NORMNET_SOURCE_DIR) + "/include/normnet/tensor.hpp"));
    bool in_class = false;
    const std::regex method(R"(^    [A-Za-z].*?\b([A-Za-z_][A-Za-z_0-9]*|operator[^\s(]+)\()");
    for (std::string line; std::getline(tensor, line);) {
        if (line.rfind("class NORMNET_API Tensor {", 0) == 0) in_class = true;
        else if (in_class && line.rfind("};", 0) == 0) in_class = false;
        std::smatch m;
        if (in_class && line.rfind("    //", 0) != 0 && std::regex_search(line, m, method)) names.insert("Tensor::" + std::string(m[1]));
    }
    return names;
}

}  // namespace

TEST_CASE("op table: every public op of ops.hpp and tensor.hpp has a row", "[optable]") {
    // What is not an op, and the ops deliberately out of the table, with the reason.
    const std::map<std::string, std::string> out = {
        {"Size2", "the pair type of conv2d and the pools"},
        {"Conv2dPadding", "conv2d's padding type"},
        {"Tensor::Tensor", "constructor"},
        {"Tensor::defined", "accessor"}, {"Tensor::shape", "accessor"}, {"Tensor::sizes", "accessor"},
        {"Tensor::strides", "accessor"}, {"Tensor::dim", "accessor"}, {"Tensor::size", "accessor"},
        {"Tensor::numel", "accessor"}, {"Tensor::dtype", "accessor"}, {"Tensor::is_floating_point", "accessor"},
        {"Tensor::is_contiguous", "accessor"}, {"Tensor::data", "accessor"}, {"Tensor::data_ptr", "accessor"},
        {"Tensor::item", "accessor"}, {"Tensor::at", "accessor"}, {"Tensor::to_vector", "accessor"},
        {"Tensor::shares_storage", "accessor"}, {"Tensor::version", "autograd bookkeeping"},
        {"Tensor::bump_version", "autograd bookkeeping"}, {"Tensor::requires_grad", "autograd bookkeeping"},
        {"Tensor::requires_grad_", "autograd bookkeeping"}, {"Tensor::grad", "autograd bookkeeping"},
        {"Tensor::set_grad", "autograd bookkeeping"}, {"Tensor::grad_fn", "autograd bookkeeping"},
        {"Tensor::is_leaf", "autograd bookkeeping"}, {"Tensor::backward", "autograd bookkeeping"},
        {"Tensor::str", "printing"}, {"Tensor::impl", "internal handle"}, {"Tensor::impl_ptr", "internal handle"},
        {"Tensor::typed_data", "private"},
        {"Tensor::uniform_", "random: normnet's generator is not torch's (tested by its own statistics tests)"},
        {"Tensor::normal_", "random: normnet's generator is not torch's (tested by its own statistics tests)"},
        {"Tensor::bernoulli_", "random: normnet's generator is not torch's (tested by its own statistics tests)"},
        {"bernoulli", "random: normnet's generator is not torch's (tested by its own statistics tests)"},
        {"equal", "returns a bool, not a tensor (tested in test_idioms.cpp)"},
    };
    const std::set<std::string> covered = covered_names();
    std::vector<std::string> missing;
    for (const std::string& name : public_names()) {
        if (!covered.count(name) && !out.count(name)) missing.push_back(name);
    }
    std::string names;  // one INFO: an INFO inside a loop ends with its iteration
    for (const std::string& name : missing) names += " " + name;
    INFO("public ops without a row in tests/op_table_rows.cpp (add one, or say in this test why not):" << names);
    CHECK(missing.empty());
    for (const auto& [name, why] : out) {
        INFO(name << " is listed as out of the table but is covered by a row");
        CHECK(!covered.count(name));
    }
}
