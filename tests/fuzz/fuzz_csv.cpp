// libFuzzer target: the CSV reader (raw and gzipped), and the schema and encoding built on what it
// reads. Any input must give a table or a normnet::Error; a crash, a sanitizer report, a leak or an
// allocation beyond libFuzzer's limit is a bug.
#include "fuzz_input.hpp"
#include "normnet/error.hpp"
#include "normnet/table.hpp"
#include "normnet/table_schema.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = normnet::fuzz::as_file(data, size);
    // The first byte picks the delimiter, so that ';' and tab files are explored too.
    const char delimiter = size > 0 && data[0] % 3 == 1 ? ';' : size > 0 && data[0] % 3 == 2 ? '\t' : ',';
    try {
        const normnet::data::Table table = normnet::data::read_csv(path, normnet::data::CsvOptions().delimiter(delimiter));
        for (const auto& column : table.columns) {
            const size_t cells = column.numeric ? column.values.size() : column.codes.size();
            if (cells != size_t(table.rows)) __builtin_trap();
        }
        const normnet::data::TableSchema schema = normnet::data::fit_table_schema(table);
        const auto back = normnet::data::TableSchema::from_json(schema.to_json(), "fuzz");
        normnet::data::encode_table(back, table);
        normnet::data::holdout_split(table.rows, 0.2, 1);
    } catch (const normnet::Error&) {
    }
    return 0;
}
