// einsum: Einstein summation as a composition of sum, permute, reshape and matmul (no backward of
// its own). The equation's operands are contracted left to right, two at a time, as torch does
// without opt_einsum: each pair is permuted to [batch, own, contracted] and [batch, contracted,
// own], multiplied as one batched matmul and reshaped back. A subscript that no later operand
// and not the output needs is summed out first. Subscripts are letters; "..." stands for the
// dims no letter names (broadcast across operands, right-aligned, as numpy); a subscript of size
// 1 broadcasts against the same subscript elsewhere. Not supported: a subscript repeated within
// one operand (diagonals, "ii->i").
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/ops.hpp"

namespace normnet {
namespace {

// Subscripts as numbers: 'A'-'Z' are 0-25, 'a'-'z' 26-51 (torch's order for the implicit
// output), the ellipsis dims 52 + k.
constexpr int kEllipsis = 52;

int label_of(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char letter_of(int l) { return static_cast<char>(l < 26 ? 'A' + l : 'a' + l - 26); }
// Labels, with room for the ellipsis dims.
constexpr size_t kLabels = kEllipsis + 64;

// One operand's subscripts as written: letters, with the ellipsis (if any) before position `at`.
struct Term {
    std::string_view text;
    std::vector<int> labels;
    int ellipsis_at = -1;
};

Term parse_term(std::string_view t, std::string_view equation) {
    Term term;
    term.text = t;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t.substr(i, 3) == "...") {
            NORMNET_CHECK(term.ellipsis_at < 0, "einsum: more than one ellipsis in '", t, "' of '", equation, "'");
            term.ellipsis_at = static_cast<int>(term.labels.size());
            i += 2;
            continue;
        }
        const char c = t[i];
        NORMNET_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), "einsum: invalid subscript '", c, "' in '",
                      equation, "' (subscripts are letters and '...')");
        term.labels.push_back(label_of(c));
    }
    return term;
}

// A tensor with a subscript per dim.
struct Labelled {
    Tensor t;
    std::vector<int> labels;
};

int position(const std::vector<int>& labels, int l) {
    const auto it = std::find(labels.begin(), labels.end(), l);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
}
bool contains(const std::vector<int>& labels, int l) { return position(labels, l) >= 0; }

// x with the dims whose labels `keep` says no removed by summing over them.
Labelled sum_out(Labelled x, const std::vector<bool>& keep) {
    Dims dims;
    std::vector<int> rest;
    for (size_t d = 0; d < x.labels.size(); ++d) {
        if (keep[static_cast<size_t>(x.labels[d])]) {
            rest.push_back(x.labels[d]);
        } else {
            dims.push_back(static_cast<int64_t>(d));
        }
    }
    if (dims.size() == 0) return x;
    return {sum(x.t, dims), rest};
}

// x permuted to the label order `order` (a permutation of its labels) and expanded to `sizes`.
Tensor arrange(const Labelled& x, const std::vector<int>& order, const std::vector<int64_t>& size) {
    Dims perm;
    Shape shape;
    for (const int l : order) {
        perm.push_back(position(x.labels, l));
        shape.push_back(size[static_cast<size_t>(l)]);
    }
    return x.t.permute(perm).expand(shape);
}

int64_t product(const std::vector<int>& labels, const std::vector<int64_t>& size) {
    int64_t p = 1;
    for (const int l : labels) p *= size[static_cast<size_t>(l)];
    return p;
}

// a and b contracted over their shared labels that `keep` does not need: [batch, a's, b's].
Labelled contract(const Labelled& a, const Labelled& b, const std::vector<bool>& keep, const std::vector<int64_t>& size) {
    std::vector<int> batch, contracted, a_own, b_own;
    for (const int l : a.labels) {
        if (!contains(b.labels, l)) {
            a_own.push_back(l);
        } else {
            (keep[static_cast<size_t>(l)] ? batch : contracted).push_back(l);
        }
    }
    for (const int l : b.labels) {
        if (!contains(a.labels, l)) b_own.push_back(l);
    }
    const auto cat_labels = [](std::initializer_list<const std::vector<int>*> parts) {
        std::vector<int> all;
        for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
        return all;
    };
    const int64_t B = product(batch, size), M = product(a_own, size), K = product(contracted, size),
                  N = product(b_own, size);
    const Tensor am = arrange(a, cat_labels({&batch, &a_own, &contracted}), size).reshape({B, M, K});
    const Tensor bm = arrange(b, cat_labels({&batch, &contracted, &b_own}), size).reshape({B, K, N});
    const std::vector<int> labels = cat_labels({&batch, &a_own, &b_own});
    Shape shape;
    for (const int l : labels) shape.push_back(size[static_cast<size_t>(l)]);
    return {matmul(am, bm).reshape(shape), labels};
}

}  // namespace

Tensor einsum(std::string_view equation, TensorList operands) {
    std::string eq;
    for (const char c : equation) {
        if (c != ' ') eq.push_back(c);
    }
    const size_t arrow = eq.find("->");
    const std::string_view lhs = std::string_view(eq).substr(0, arrow);
    std::vector<Term> terms;
    for (size_t start = 0;;) {
        const size_t comma = lhs.find(',', start);
        terms.push_back(parse_term(lhs.substr(start, comma - start), equation));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    NORMNET_CHECK(terms.size() == operands.size(), "einsum: '", equation, "' has ", terms.size(),
                  " operand(s), but ", operands.size(), " tensor(s) were given");
    NORMNET_CHECK(!operands.empty(), "einsum: must provide at least one operand");

    // Each operand's labels, the ellipsis dims numbered from the right; every label's size.
    std::vector<int64_t> size(kLabels, -1);
    std::vector<Labelled> ops;
    int ellipsis_dims = 0;
    for (size_t k = 0; k < terms.size(); ++k) {
        const Term& term = terms[k];
        const Tensor& x = operands[k];
        NORMNET_CHECK(x.dtype() == kFloat32, "einsum: expected float32 operands, got ", x.dtype(), " for operand ", k);
        const int named = static_cast<int>(term.labels.size());
        const int dots = x.dim() - named;
        NORMNET_CHECK(term.ellipsis_at >= 0 ? dots >= 0 : dots == 0, "einsum: the subscripts '", term.text,
                      "' of operand ", k, " name ", named, " dim(s), but it has shape ", x.shape());
        Labelled op{x, {}};
        for (int i = 0; i < named; ++i) {
            if (i == term.ellipsis_at) {
                for (int e = 0; e < dots; ++e) op.labels.push_back(kEllipsis + dots - 1 - e);
            }
            const int l = term.labels[static_cast<size_t>(i)];
            NORMNET_CHECK(!contains(op.labels, l), "einsum: subscript '", letter_of(l), "' repeats within operand ",
                          k, " of '", equation, "': diagonals are not supported");
            op.labels.push_back(l);
        }
        if (term.ellipsis_at == named) {
            for (int e = 0; e < dots; ++e) op.labels.push_back(kEllipsis + dots - 1 - e);
        }
        ellipsis_dims = std::max(ellipsis_dims, std::max(dots, 0));
        for (size_t d = 0; d < op.labels.size(); ++d) {
            int64_t& s = size[static_cast<size_t>(op.labels[d])];
            const int64_t n = x.size(static_cast<int>(d));
            NORMNET_CHECK(s < 0 || s == n || s == 1 || n == 1, "einsum: operand ", k, " has size ", n, " in dim ", d,
                          " where another operand has ", s, " for the same subscript ('", equation, "')");
            s = s < 0 || s == 1 ? n : s;
        }
        ops.push_back(std::move(op));
    }

    // The output's labels: as written, or the ellipsis dims then the labels used once, in order.
    std::vector<int> out;
    if (arrow != std::string::npos) {
        const Term t = parse_term(std::string_view(eq).substr(arrow + 2), equation);
        for (size_t i = 0; i <= t.labels.size(); ++i) {
            if (static_cast<int>(i) == t.ellipsis_at) {
                for (int e = ellipsis_dims - 1; e >= 0; --e) out.push_back(kEllipsis + e);
            }
            if (i == t.labels.size()) break;
            const int l = t.labels[i];
            NORMNET_CHECK(!contains(out, l), "einsum: output subscript '", letter_of(l), "' repeats in '", equation, "'");
            NORMNET_CHECK(size[static_cast<size_t>(l)] >= 0, "einsum: output subscript '", letter_of(l), "' of '",
                          equation, "' does not appear in the inputs");
            out.push_back(l);
        }
    } else {
        for (int e = ellipsis_dims - 1; e >= 0; --e) out.push_back(kEllipsis + e);
        for (int l = 0; l < kEllipsis; ++l) {
            int uses = 0;
            for (const Labelled& op : ops) uses += contains(op.labels, l);
            if (uses == 1) out.push_back(l);
        }
    }

    // Contract left to right; before each step, labels nothing later needs are summed out.
    const auto needed_after = [&](size_t k) {  // labels of the output and of operands after k
        std::vector<bool> keep(size.size(), false);
        for (const int l : out) keep[static_cast<size_t>(l)] = true;
        for (size_t j = k + 1; j < ops.size(); ++j) {
            for (const int l : ops[j].labels) keep[static_cast<size_t>(l)] = true;
        }
        return keep;
    };
    const auto with = [](std::vector<bool> keep, const std::vector<int>& labels) {
        for (const int l : labels) keep[static_cast<size_t>(l)] = true;
        return keep;
    };
    Labelled acc = sum_out(ops[0], with(needed_after(0), ops.size() > 1 ? ops[1].labels : std::vector<int>{}));
    for (size_t k = 1; k < ops.size(); ++k) {
        const std::vector<bool> keep = needed_after(k);
        const Labelled b = sum_out(ops[k], with(keep, acc.labels));
        acc = sum_out(acc, with(keep, b.labels));
        acc = contract(acc, b, keep, size);
    }
    acc = sum_out(acc, needed_after(ops.size() - 1));
    return arrange(acc, out, size).contiguous();
}

}  // namespace normnet
