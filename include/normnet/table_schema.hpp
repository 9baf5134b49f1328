// What a table becomes for a model, learned from the training rows and kept in the checkpoint so
// that evaluation and prediction prepare new rows the same way: the target column and the task,
// the class names, each numeric feature's standardisation and each text feature's categories
// (one-hot encoded).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/table.hpp"
#include "normnet/tensor.hpp"

namespace normnet::data {

enum class TableTask { classification, regression };

/// "classification" or "regression".
NORMNET_API std::string_view to_string(TableTask task);
/// The task named `name`; throws naming the accepted names.
NORMNET_API TableTask parse_table_task(std::string_view name);

/// One input column: standardised as (x - mean) / std, or one-hot over its categories.
struct TableFeature {
    std::string name;
    bool numeric = true;
    double mean = 0, std = 1;             ///< numeric (std 1 where the training rows are constant)
    std::vector<std::string> categories{};  ///< text
};

struct TableSchema {
    std::vector<TableFeature> features;
    std::string target;
    TableTask task = TableTask::classification;
    std::vector<std::string> classes;  ///< classification: the class names, in label order
    double target_mean = 0, target_std = 1;  ///< regression: the training targets' statistics
    std::string task_reason;  ///< why the task was chosen ("given", "the target holds text", ...)

    /// Model inputs per row: one per numeric feature plus one per category.
    int64_t num_inputs() const;
    /// Model outputs per row: the number of classes, or 1.
    int64_t num_outputs() const;
    /// The schema as a JSON object (for a checkpoint's metadata).
    std::string to_json() const;
    /// A schema from to_json's text; throws naming `where` if it is not one.
    static TableSchema from_json(std::string_view json, const std::string& where);
};

/// Learns a schema from training rows. `target` names the target column (by name or index,
/// Table::find_column; empty: the last column); every other column is a feature. Without a task,
/// a text target, or an integer target with at most 20 distinct values, is classification; any
/// other numeric target is regression. Classes of a numeric target are its values, sorted. A text
/// feature may have at most 1000 categories (an identifier column is an error, not 60,000 inputs).
NORMNET_API TableSchema fit_table_schema(const Table& train, const std::string& target = "",
                                         std::optional<TableTask> task = std::nullopt);

/// A table prepared for a model: inputs [rows, num_inputs] float32 and, when the table has the
/// target column, labels [rows] int64 (classification) or targets [rows, 1] float32 (regression,
/// in the target's own units).
struct EncodedTable {
    Tensor inputs;
    Tensor labels;
    Tensor targets;
};

/// Prepares rows by a schema: features are found by name (the order of columns may differ, other
/// columns are ignored); a category not seen in training encodes as all zeros. The target is
/// encoded when the table has it; a class not seen in training is an error naming its line.
NORMNET_API EncodedTable encode_table(const TableSchema& schema, const Table& table);

/// A seeded split of n rows into (kept, held out) index lists, held out ~ fraction of them; with
/// labels (one per row, each in [0, num_classes)) stratified: each class gives its share. Both lists
/// are sorted. A fraction in (0, 1) holds out at least one row when n >= 2.
NORMNET_API std::pair<std::vector<int64_t>, std::vector<int64_t>> holdout_split(
    int64_t n, double fraction, uint64_t seed, const std::vector<int64_t>& labels = {});

}  // namespace normnet::data
