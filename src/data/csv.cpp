// The CSV reader. Two passes over the file, each streaming it through one record buffer: the first
// learns the row count and each column's kind (and finds every error), the second fills columns
// allocated once at their final size. So the peak is the table itself, never the file's text or a
// string per cell, and nothing is allocated for rows the file does not have.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "file_stream.hpp"
#include "normnet/error.hpp"
#include "normnet/table.hpp"

namespace normnet::data {
namespace {

constexpr size_t kChunk = size_t{1} << 20;

// Splits a CSV file into records of fields, tracking the line each record starts on.
class CsvTokenizer {
public:
    CsvTokenizer(const std::string& path, char delimiter) : path_(path), in_(path), delimiter_(delimiter) {
        chunk_.resize(kChunk);
    }

    /// The next non-blank record's fields (views into a buffer reused by the next call); false at the end.
    bool next(std::vector<std::string_view>& fields) {
        text_.clear();
        ends_.clear();
        int c = get();
        while (c == '\n' || c == '\r') {  // blank lines
            end_line(c);
            c = get();
        }
        if (c == -1) return false;
        record_line_ = line_;
        for (;;) {
            if (c == '"') {
                c = quoted_field();
            } else {
                while (c != delimiter_ && c != '\n' && c != '\r' && c != -1) {
                    text_ += char(c);
                    c = get();
                }
            }
            ends_.push_back(text_.size());
            if (c != delimiter_) break;
            c = get();
        }
        if (c != -1) end_line(c);
        fields.clear();
        size_t begin = 0;
        for (size_t end : ends_) {
            fields.emplace_back(text_.data() + begin, end - begin);
            begin = end;
        }
        return true;
    }

    /// The line the last record starts on (1 for the header).
    int64_t line() const { return record_line_; }

private:
    int get() {
        if (pos_ == end_) {
            if (eof_) return -1;
            end_ = in_.read(chunk_.data(), chunk_.size());
            pos_ = 0;
            if (in_.truncated()) fail(path_, ": truncated: the gzip stream ends before its trailer");
            if (end_ == 0) {
                eof_ = true;
                return -1;
            }
            if (first_chunk_) {
                first_chunk_ = false;
                if (end_ >= 3 && chunk_[0] == 0xef && chunk_[1] == 0xbb && chunk_[2] == 0xbf) pos_ = 3;  // UTF-8 BOM
                if (pos_ == end_) return get();
            }
        }
        return chunk_[pos_++];
    }
    int peek() {
        const int c = get();
        if (c != -1) --pos_;
        return c;
    }
    // Consumes the rest of a line end that starts with c ('\n', '\r' or "\r\n").
    void end_line(int c) {
        if (c == '\r' && peek() == '\n') get();
        ++line_;
    }
    // Reads a quoted field after its opening quote; returns the byte after the closing quote.
    int quoted_field() {
        for (;;) {
            int c = get();
            if (c == -1) fail(path_, ": line ", record_line_, ": a quoted field is not closed before the end of the file");
            if (c == '"') {
                if (peek() != '"') break;
                get();
            } else if (c == '\n') {
                ++line_;
            }
            text_ += char(c);
        }
        const int after = get();
        if (after != delimiter_ && after != '\n' && after != '\r' && after != -1)
            fail(path_, ": line ", line_, ": text after the closing quote of a field (a quote inside a quoted field is "
                 "written twice: \"\")");
        return after;
    }

    std::string path_;
    detail::FileStream in_;
    char delimiter_;
    std::vector<uint8_t> chunk_;
    size_t pos_ = 0, end_ = 0;
    bool eof_ = false, first_chunk_ = true;
    std::string text_;         // the current record's fields, end to end
    std::vector<size_t> ends_;  // where each field ends in text_
    int64_t line_ = 1, record_line_ = 0;
};

enum class Cell { number, empty, not_finite, too_large, text };

// A cell read as a number: surrounding spaces and tabs allowed, as is a leading '+'.
Cell parse_number(std::string_view s, float& out) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    if (s.empty()) return Cell::empty;
    if (s.front() == '+' && s.size() > 1 && s[1] != '-') s.remove_prefix(1);
    double value = 0;  // parsed as double, so that a value beyond float32 is told from a word
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (end != s.data() + s.size() || ec == std::errc::invalid_argument) return Cell::text;
    if (ec == std::errc::result_out_of_range) return Cell::too_large;  // underflow included: rare, and suspicious
    if (!std::isfinite(value)) return Cell::not_finite;
    if (std::fabs(value) > std::numeric_limits<float>::max()) return Cell::too_large;
    out = float(value);
    return Cell::number;
}

// True when s is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF):
// text cells end up in checkpoint metadata as JSON, which holds only Unicode text.
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? b : b & (0x7f >> n);
        for (size_t k = 1; k < n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c >> 6) != 0x2) return false;
            cp = cp << 6 | (c & 0x3f);
        }
        constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n;
    }
    return true;
}

// What the first pass learns about one column.
struct ColumnScan {
    int64_t numbers = 0, texts = 0;
    int64_t first_text_line = 0;  // 0: none
    std::string first_text;
};

std::string column_label(const std::vector<std::string>& names, size_t c) {
    return str("column ", c + 1, " (\"", names[c], "\")");
}

}  // namespace

Table read_csv(const std::string& path, const CsvOptions& options) {
    const char delimiter = options.delimiter;
    NORMNET_CHECK(delimiter != '"' && delimiter != '\n' && delimiter != '\r',
                  "read_csv: the delimiter cannot be a quote or a line end");
    std::vector<std::string_view> fields;

    // Pass 1: the header, the row count, each column's kind, and every error.
    CsvTokenizer scan(path, delimiter);
    NORMNET_CHECK(scan.next(fields), path, ": the file is empty (a CSV file starts with a header of column names)");
    std::vector<std::string> names(fields.begin(), fields.end());
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t c = 0; c < names.size(); ++c) {
        NORMNET_CHECK(!names[c].empty(), path, ": line 1: column ", c + 1, " has no name in the header");
        NORMNET_CHECK(valid_utf8(names[c]), path, ": line 1: the name of column ", c + 1,
                      " is not UTF-8 text (save the file as UTF-8)");
        const auto [it, fresh] = seen.emplace(names[c], c);
        NORMNET_CHECK(fresh, path, ": line 1: the name \"", names[c], "\" is given to columns ", it->second + 1, " and ",
                      c + 1);
    }
    std::vector<ColumnScan> scans(names.size());
    int64_t rows = 0;
    float number = 0;
    while (scan.next(fields)) {
        NORMNET_CHECK(fields.size() == names.size(), path, ": line ", scan.line(), ": ", fields.size(), " field",
                      fields.size() == 1 ? "" : "s", ", but the header has ", names.size());
        for (size_t c = 0; c < fields.size(); ++c) {
            ColumnScan& s = scans[c];
            switch (parse_number(fields[c], number)) {
                case Cell::number: ++s.numbers; break;
                case Cell::empty:
                    fail(path, ": line ", scan.line(), ", ", column_label(names, c),
                         ": empty cell (missing values are not supported: fill or drop them)");
                case Cell::not_finite:
                    fail(path, ": line ", scan.line(), ", ", column_label(names, c), ": \"", fields[c],
                         "\" is not a finite number (missing values are not supported: fill or drop them)");
                case Cell::too_large:
                    fail(path, ": line ", scan.line(), ", ", column_label(names, c), ": ", fields[c],
                         " is beyond float32's range");
                case Cell::text:
                    NORMNET_CHECK(valid_utf8(fields[c]), path, ": line ", scan.line(), ", ", column_label(names, c),
                                  ": not UTF-8 text (save the file as UTF-8)");
                    if (s.texts++ == 0) {
                        s.first_text_line = scan.line();
                        s.first_text = std::string(fields[c]);
                    }
                    break;
            }
        }
        ++rows;
    }
    NORMNET_CHECK(rows > 0, path, ": no rows after the header");
    for (size_t c = 0; c < names.size(); ++c) {
        const ColumnScan& s = scans[c];
        NORMNET_CHECK(s.texts == 0 || s.texts >= s.numbers, path, ": line ", s.first_text_line, ", ",
                      column_label(names, c), ": \"", s.first_text, "\" is not a number (", s.numbers, " of the column's ",
                      rows, " cells are numbers)");
    }

    // Pass 2: the cells, into columns allocated once.
    Table table;
    table.source = path;
    table.rows = rows;
    table.lines.reserve(size_t(rows));
    table.columns.resize(names.size());
    std::vector<std::unordered_map<std::string, int32_t>> codes(names.size());
    for (size_t c = 0; c < names.size(); ++c) {
        TableColumn& column = table.columns[c];
        column.name = names[c];
        column.numeric = scans[c].texts == 0;
        if (column.numeric) column.values.reserve(size_t(rows));
        else column.codes.reserve(size_t(rows));
    }
    CsvTokenizer fill(path, delimiter);
    fill.next(fields);  // the header
    for (int64_t r = 0; r < rows; ++r) {
        NORMNET_CHECK(fill.next(fields) && fields.size() == names.size(), path, ": the file changed while it was read");
        table.lines.push_back(fill.line());
        for (size_t c = 0; c < fields.size(); ++c) {
            TableColumn& column = table.columns[c];
            if (column.numeric) {
                parse_number(fields[c], number);
                column.values.push_back(number);
            } else {
                const auto [it, fresh] = codes[c].try_emplace(std::string(fields[c]), int32_t(codes[c].size()));
                if (fresh) column.categories.push_back(it->first);
                column.codes.push_back(it->second);
            }
        }
    }
    // Categories sorted, so that their order (and the one-hot layout) does not depend on row order.
    for (TableColumn& column : table.columns) {
        if (column.numeric) continue;
        std::vector<int32_t> order(column.categories.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
        std::sort(order.begin(), order.end(),
                  [&](int32_t a, int32_t b) { return column.categories[size_t(a)] < column.categories[size_t(b)]; });
        std::vector<int32_t> rank(order.size());
        std::vector<std::string> sorted(order.size());
        for (size_t i = 0; i < order.size(); ++i) {
            rank[size_t(order[i])] = int32_t(i);
            sorted[i] = std::move(column.categories[size_t(order[i])]);
        }
        column.categories = std::move(sorted);
        for (int32_t& code : column.codes) code = rank[size_t(code)];
    }
    return table;
}

std::string csv_field(std::string_view text, char delimiter) {
    const bool quote = text.find_first_of(std::string{delimiter, '"', '\n', '\r'}) != std::string_view::npos ||
                       (!text.empty() && (text.front() == ' ' || text.back() == ' '));
    if (!quote) return std::string(text);
    std::string out = "\"";
    for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace normnet::data
