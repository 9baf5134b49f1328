// Tables read from CSV files (RFC 4180, raw or gzipped): the user's own data for the MLP. A
// column holds numbers or text; text columns keep their distinct values (categories) and a code
// per row, so a 60,000 x 785 table takes about the memory of its float32 matrix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"

namespace normnet::data {

/// How read_csv reads a file. The first record is always the header (the column names).
struct CsvOptions {
    using Self = CsvOptions;
    NORMNET_ARG(char, delimiter) = ',';
};

/// One column: numbers, or text as codes into its sorted distinct values.
struct TableColumn {
    std::string name;
    bool numeric = true;
    std::vector<float> values;            ///< numeric: one number per row
    std::vector<std::string> categories;  ///< text: the distinct values, sorted
    std::vector<int32_t> codes;           ///< text: each row's index into categories
};

/// A table of rows x columns, with the file line each row starts on (for messages).
struct Table {
    std::string source;  ///< the file it came from
    int64_t rows = 0;
    std::vector<TableColumn> columns;
    std::vector<int64_t> lines;  ///< [rows]: the line each row starts on (the header is line 1)

    /// The index of the column named `name_or_index`, else of the column with that 0-based index
    /// (negative counts from the end, -1 the last); throws naming the file and its columns.
    int64_t find_column(const std::string& name_or_index) const;
    /// Cell (row, column) as text: a text cell as written, a number as the shortest text that reads back.
    std::string cell_text(int64_t row, int64_t column) const;
};

/// Reads a CSV file: RFC 4180 (quoted fields with doubled quotes, delimiters and newlines inside
/// quotes, CRLF or LF line ends), a UTF-8 byte order mark, blank lines skipped, raw or gzipped. A
/// column is numeric when every cell is a finite number (surrounding spaces allowed); a column
/// most of whose cells are not numbers is text. Throws a normnet::Error naming the file, the line
/// and the column for an empty file, a header without names or with a name twice, a row with
/// more or fewer fields than the header, an empty cell, NaN or infinity, a number too large for
/// float32, a word in a numeric column, or a quote left open.
NORMNET_API Table read_csv(const std::string& path, const CsvOptions& options = {});

/// `text` as one CSV field (RFC 4180): quoted, with its quotes doubled, when it holds the
/// delimiter, a quote or a line end, or starts or ends with a space; otherwise as it is.
NORMNET_API std::string csv_field(std::string_view text, char delimiter = ',');

/// The rows of `table` at `indices`, in that order (each in [0, rows)).
NORMNET_API Table take_rows(const Table& table, const std::vector<int64_t>& indices);

}  // namespace normnet::data
