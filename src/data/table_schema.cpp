// Fitting a table schema on training rows, encoding rows by it, and the seeded hold-out split.
#include "normnet/table_schema.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "normnet/error.hpp"

namespace normnet::data {
namespace {

constexpr size_t kMaxIntegerClasses = 20;  // inferring the task: more distinct integers are a quantity
constexpr size_t kMaxClasses = 1 << 16;     // a classification target asked for explicitly
constexpr size_t kMaxCategories = 1000;     // a text feature, one-hot encoded

// The mean and the population standard deviation of values, in double; std 1 for constant columns,
// so that they encode as 0 rather than dividing by zero.
std::pair<double, double> mean_std(const std::vector<float>& values) {
    double sum = 0;
    for (float v : values) sum += v;
    const double mean = values.empty() ? 0 : sum / double(values.size());
    double squares = 0;
    for (float v : values) squares += (v - mean) * (v - mean);
    const double std = values.empty() ? 0 : std::sqrt(squares / double(values.size()));
    return {mean, std > 0 ? std : 1.0};
}

std::string number_text(double v) {
    std::ostringstream out;
    out.precision(17);
    out << v;
    return out.str();
}

}  // namespace

std::string_view to_string(TableTask task) {
    return task == TableTask::classification ? "classification" : "regression";
}

TableTask parse_table_task(std::string_view name) {
    if (name == "classification") return TableTask::classification;
    if (name == "regression") return TableTask::regression;
    fail("unknown task \"", name, "\": expected classification or regression");
}

int64_t TableSchema::num_inputs() const {
    int64_t n = 0;
    for (const TableFeature& f : features) n += f.numeric ? 1 : int64_t(f.categories.size());
    return n;
}

int64_t TableSchema::num_outputs() const {
    return task == TableTask::classification ? int64_t(classes.size()) : 1;
}

std::string TableSchema::to_json() const {
    nlohmann::json features_json = nlohmann::json::array();
    for (const TableFeature& f : features) {
        nlohmann::json j = {{"name", f.name}};
        if (f.numeric) {
            j["mean"] = f.mean;
            j["std"] = f.std;
        } else {
            j["categories"] = f.categories;
        }
        features_json.push_back(std::move(j));
    }
    nlohmann::json j = {{"target", target}, {"task", to_string(task)}, {"features", features_json}};
    if (task == TableTask::classification) j["classes"] = classes;
    else j["target_mean"] = target_mean, j["target_std"] = target_std;
    try {
        return j.dump();
    } catch (const nlohmann::json::exception& e) {  // a name or category that is not UTF-8 text
        fail("table schema: ", e.what());
    }
}

TableSchema TableSchema::from_json(std::string_view json, const std::string& where) {
    try {
        const nlohmann::json j = nlohmann::json::parse(json);
        TableSchema s;
        s.target = j.at("target").get<std::string>();
        s.task = parse_table_task(j.at("task").get<std::string>());
        for (const nlohmann::json& f : j.at("features")) {
            TableFeature feature{.name = f.at("name").get<std::string>()};
            feature.numeric = !f.contains("categories");
            if (feature.numeric) {
                feature.mean = f.at("mean").get<double>();
                feature.std = f.at("std").get<double>();
                NORMNET_CHECK(std::isfinite(feature.mean) && std::isfinite(feature.std) && feature.std > 0, where,
                              ": feature \"", feature.name, "\" has an unusable mean or std");
            } else {
                feature.categories = f.at("categories").get<std::vector<std::string>>();
            }
            s.features.push_back(std::move(feature));
        }
        if (s.task == TableTask::classification) {
            s.classes = j.at("classes").get<std::vector<std::string>>();
            NORMNET_CHECK(!s.classes.empty(), where, ": the table schema has no classes");
        } else {
            s.target_mean = j.at("target_mean").get<double>();
            s.target_std = j.at("target_std").get<double>();
            NORMNET_CHECK(std::isfinite(s.target_mean) && std::isfinite(s.target_std) && s.target_std > 0, where,
                          ": the table schema's target statistics are unusable");
        }
        return s;
    } catch (const nlohmann::json::exception& e) {
        fail(where, ": not a table schema: ", e.what());
    }
}

TableSchema fit_table_schema(const Table& train, const std::string& target, std::optional<TableTask> task) {
    NORMNET_CHECK(train.columns.size() >= 2, train.source, ": a table needs a target column and at least one feature, "
                  "but has ", train.columns.size(), " column", train.columns.size() == 1 ? "" : "s");
    const int64_t t = train.find_column(target.empty() ? "-1" : target);
    const TableColumn& y = train.columns[size_t(t)];
    TableSchema s;
    s.target = y.name;
    std::map<float, int64_t> integers;  // the distinct values of an integer target, if it is one
    bool integral = y.numeric;
    for (size_t r = 0; integral && r < y.values.size(); ++r) {
        const float v = y.values[r];
        integral = v == std::nearbyint(v) && integers.size() <= kMaxClasses;
        if (integral) integers.emplace(v, 0);
    }
    integral = integral && integers.size() <= kMaxClasses;
    const bool few = integral && integers.size() <= kMaxIntegerClasses;
    if (task) {
        s.task = *task;
        s.task_reason = "as asked";
    } else if (!y.numeric) {
        s.task = TableTask::classification;
        s.task_reason = "the target holds text";
    } else if (few) {
        s.task = TableTask::classification;
        s.task_reason = str("the target holds ", integers.size(), " distinct integers");
    } else {
        s.task = TableTask::regression;
        s.task_reason = "the target holds numbers that are not a few distinct integers";
    }
    if (s.task == TableTask::classification) {
        if (!y.numeric) {
            s.classes = y.categories;
        } else {
            NORMNET_CHECK(integral, train.source, ": column \"", y.name, "\" cannot be a classification target: it holds "
                          "numbers that are not integers, or more than ", kMaxClasses, " distinct ones");
            for (const auto& [value, _] : integers) s.classes.push_back(number_text(value));
        }
        NORMNET_CHECK(s.classes.size() >= 2, train.source, ": the target column \"", y.name, "\" has ", s.classes.size(),
                      " class", s.classes.size() == 1 ? "" : "es", " in the training rows: nothing to classify");
    } else {
        NORMNET_CHECK(y.numeric, train.source, ": column \"", y.name, "\" holds text: it cannot be a regression target");
        std::tie(s.target_mean, s.target_std) = mean_std(y.values);
    }
    for (size_t c = 0; c < train.columns.size(); ++c) {
        if (int64_t(c) == t) continue;
        const TableColumn& column = train.columns[c];
        TableFeature f{.name = column.name, .numeric = column.numeric};
        if (column.numeric) std::tie(f.mean, f.std) = mean_std(column.values);
        else f.categories = column.categories;
        NORMNET_CHECK(f.categories.size() <= kMaxCategories, train.source, ": column \"", f.name, "\" holds ",
                      f.categories.size(), " distinct texts: too many to one-hot encode (at most ", kMaxCategories,
                      "); an identifier or free text is no feature: drop the column");
        s.features.push_back(std::move(f));
    }
    return s;
}

EncodedTable encode_table(const TableSchema& schema, const Table& table) {
    const int64_t rows = table.rows, width = schema.num_inputs();
    EncodedTable out;
    out.inputs = zeros({rows, width});
    float* x = out.inputs.data_ptr<float>();
    int64_t offset = 0;
    for (const TableFeature& f : schema.features) {
        const auto found = std::find_if(table.columns.begin(), table.columns.end(),
                                        [&](const TableColumn& c) { return c.name == f.name; });
        NORMNET_CHECK(found != table.columns.end(), table.source, ": no column \"", f.name,
                      "\", a feature of the model (its features: ", schema.features.size(), " columns)");
        const TableColumn& column = *found;
        NORMNET_CHECK(column.numeric == f.numeric || !f.numeric, table.source, ": column \"", f.name,
                      "\" holds text, but the model was trained on numbers there");
        if (f.numeric) {
            for (int64_t r = 0; r < rows; ++r)
                x[r * width + offset] = float((column.values[size_t(r)] - f.mean) / f.std);
            offset += 1;
            continue;
        }
        // A text feature: the column's categories mapped onto the trained ones (numbers in a column the
        // model saw as text are looked up by their text).
        std::unordered_map<std::string_view, int64_t> index;
        for (size_t i = 0; i < f.categories.size(); ++i) index.emplace(f.categories[i], int64_t(i));
        const int64_t c = found - table.columns.begin();
        for (int64_t r = 0; r < rows; ++r) {
            const std::string text = table.cell_text(r, c);
            const auto it = index.find(text);
            if (it != index.end()) x[r * width + offset + it->second] = 1.0f;
        }
        offset += int64_t(f.categories.size());
    }
    const auto target = std::find_if(table.columns.begin(), table.columns.end(),
                                     [&](const TableColumn& c) { return c.name == schema.target; });
    if (target == table.columns.end()) return out;
    const int64_t t = target - table.columns.begin();
    if (schema.task == TableTask::regression) {
        NORMNET_CHECK(target->numeric, table.source, ": the target column \"", schema.target, "\" holds text");
        out.targets = empty({rows, 1});
        std::copy(target->values.begin(), target->values.end(), out.targets.data_ptr<float>());
        return out;
    }
    std::unordered_map<std::string_view, int64_t> class_index;
    for (size_t i = 0; i < schema.classes.size(); ++i) class_index.emplace(schema.classes[i], int64_t(i));
    out.labels = empty({rows}, kInt64);
    int64_t* labels = out.labels.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
        std::string text = table.cell_text(r, t);
        if (target->numeric) text = number_text(target->values[size_t(r)]);
        const auto it = class_index.find(text);
        NORMNET_CHECK(it != class_index.end(), table.source, ": line ", table.lines[size_t(r)], ": class \"", text,
                      "\" of column \"", schema.target, "\" is not one the model was trained on");
        labels[r] = it->second;
    }
    return out;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> holdout_split(int64_t n, double fraction, uint64_t seed,
                                                                   const std::vector<int64_t>& labels) {
    NORMNET_CHECK(n >= 0, "holdout_split: n must be >= 0, got ", n);
    NORMNET_CHECK(fraction >= 0 && fraction < 1, "holdout_split: the fraction must be in [0, 1), got ", fraction);
    NORMNET_CHECK(labels.empty() || int64_t(labels.size()) == n, "holdout_split: ", labels.size(), " labels for ", n,
                  " rows");
    // Rows grouped by class (one group without labels), each group shuffled by one generator.
    std::map<int64_t, std::vector<int64_t>> groups;
    for (int64_t i = 0; i < n; ++i) groups[labels.empty() ? 0 : labels[size_t(i)]].push_back(i);
    Generator gen(seed);
    std::vector<int64_t> kept, held;
    const int64_t want = fraction > 0 && n >= 2 ? std::clamp<int64_t>(std::llround(double(n) * fraction), 1, n - 1) : 0;
    for (auto& [_, rows] : groups) {
        for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[gen.below(i)]);
        // Each class holds out its share, rounded; leftovers are settled below.
        const auto share = int64_t(std::llround(double(rows.size()) * fraction));
        held.insert(held.end(), rows.begin(), rows.begin() + share);
        kept.insert(kept.end(), rows.begin() + share, rows.end());
    }
    // Rounding per class can miss the total by a few rows: move rows to reach it (from the end of the
    // shuffled lists, so it stays seeded).
    while (int64_t(held.size()) < want) held.push_back(kept.back()), kept.pop_back();
    while (int64_t(held.size()) > want) kept.push_back(held.back()), held.pop_back();
    std::sort(kept.begin(), kept.end());
    std::sort(held.begin(), held.end());
    return {kept, held};
}

}  // namespace normnet::data
