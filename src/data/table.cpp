// Table's accessors and row selection (the CSV reader is csv.cpp).
#include <charconv>

#include "normnet/error.hpp"
#include "normnet/table.hpp"

namespace normnet::data {

int64_t Table::find_column(const std::string& name_or_index) const {
    const int64_t n = int64_t(columns.size());
    for (int64_t c = 0; c < n; ++c)
        if (columns[size_t(c)].name == name_or_index) return c;
    int64_t index = 0;
    const char* end = name_or_index.data() + name_or_index.size();
    const auto [stop, ec] = std::from_chars(name_or_index.data(), end, index);
    if (ec == std::errc() && stop == end && !name_or_index.empty()) {
        NORMNET_CHECK(index >= -n && index < n, source, ": no column ", index, ": the file has ", n,
                      " columns (0 to ", n - 1, ", or -1 for the last)");
        return index < 0 ? index + n : index;
    }
    std::string names;
    for (const TableColumn& column : columns) names += (names.empty() ? "" : ", ") + column.name;
    fail(source, ": no column named \"", name_or_index, "\"; the columns are ", names);
}

std::string Table::cell_text(int64_t row, int64_t column) const {
    NORMNET_CHECK(row >= 0 && row < rows && column >= 0 && column < int64_t(columns.size()), source, ": no cell (",
                  row, ", ", column, ") in a table of ", rows, " x ", columns.size());
    const TableColumn& c = columns[size_t(column)];
    if (!c.numeric) return c.categories[size_t(c.codes[size_t(row)])];
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, c.values[size_t(row)]);
    return std::string(buffer, result.ptr);
}

Table take_rows(const Table& table, const std::vector<int64_t>& indices) {
    Table out;
    out.source = table.source;
    out.rows = int64_t(indices.size());
    for (int64_t i : indices)
        NORMNET_CHECK(i >= 0 && i < table.rows, "take_rows: row ", i, " is out of range for ", table.rows, " rows of ",
                      table.source);
    out.lines.reserve(indices.size());
    for (int64_t i : indices) out.lines.push_back(table.lines[size_t(i)]);
    out.columns.reserve(table.columns.size());
    for (const TableColumn& column : table.columns) {
        TableColumn& c = out.columns.emplace_back();
        c.name = column.name;
        c.numeric = column.numeric;
        c.categories = column.categories;
        if (column.numeric) {
            c.values.reserve(indices.size());
            for (int64_t i : indices) c.values.push_back(column.values[size_t(i)]);
        } else {
            c.codes.reserve(indices.size());
            for (int64_t i : indices) c.codes.push_back(column.codes[size_t(i)]);
        }
    }
    return out;
}

}  // namespace normnet::data
